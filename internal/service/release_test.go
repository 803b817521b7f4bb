package service

import (
	"fmt"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// fakeRelease replaces a releaser's clock, timer and release with ones
// the test runs by hand.
type fakeRelease struct {
	now    time.Time
	waits  []time.Duration
	queued []func()
	freed  int
}

func (f *fakeRelease) install(r *releaser) {
	r.now = func() time.Time { return f.now }
	r.after = func(d time.Duration, fn func()) { f.waits = append(f.waits, d); f.queued = append(f.queued, fn) }
	r.free = func() { f.freed++ }
}

// fire runs the releases scheduled so far.
func (f *fakeRelease) fire() {
	q := f.queued
	f.queued = nil
	for _, fn := range q {
		fn()
	}
}

func (d *direct) closeSession(sid string) {
	d.seq++
	d.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid, Sequence: d.seq}}})
}

// openWithOutput opens n calls in session sid, each with bytes of output.
func (d *direct) openWithOutput(sid string, n, bytes int) {
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		d.exec(sid, openCall(id, "cat"))
		if bytes > 0 {
			d.exec(sid, delta(id, strings.Repeat("x", bytes)))
		}
	}
}

// Closing sessions that held a lot of text hands the memory back once,
// after a delay for the rest of the close; the next large release waits
// for the gap after the previous one; small ups and downs release nothing.
func TestMemoryHandedBackAfterMassClose(t *testing.T) {
	d := newDirect(t, DefaultConfig())
	f := &fakeRelease{now: time.Unix(5000, 0)}
	rel := d.ss.rel
	f.install(rel)
	rel.bytes, rel.calls = 20000, 1<<40

	d.openWithOutput("small", 1, 1000)
	small := d.ss.n.Stats().HeldBytes
	for i := range 5 { // ups and downs below the threshold
		sid := fmt.Sprintf("churn%d", i)
		d.openWithOutput(sid, 3, 1000)
		d.closeSession(sid)
	}
	if len(f.waits) != 0 {
		t.Fatalf("releases scheduled for drops below the threshold: %v", f.waits)
	}

	d.openWithOutput("a", 3, 5000)
	d.openWithOutput("b", 3, 5000)
	d.closeSession("a")
	d.closeSession("b")
	if len(f.waits) != 1 || f.waits[0] != rel.delay || f.freed != 0 {
		t.Fatalf("after closing 6 calls of 5000 bytes: waits %v, freed %d; want one release scheduled after %v", f.waits, f.freed, rel.delay)
	}
	f.fire()
	if f.freed != 1 {
		t.Fatalf("freed %d times, want 1", f.freed)
	}
	if held := d.ss.n.Stats().HeldBytes; held != small {
		t.Fatalf("held %d after the close, want the small session's %d", held, small)
	}

	// Another large release 3 s later waits for the gap.
	f.now = f.now.Add(3 * time.Second)
	d.openWithOutput("c", 6, 5000)
	d.closeSession("c")
	if len(f.waits) != 2 || f.waits[1] != rel.gap-3*time.Second {
		t.Fatalf("second release waits %v, want %v", f.waits, rel.gap-3*time.Second)
	}
	f.fire()
	if f.freed != 2 {
		t.Fatalf("freed %d times, want 2", f.freed)
	}
}

// Many calls released at once count as a large release even with little
// text.
func TestMemoryHandedBackAfterManyCallsClose(t *testing.T) {
	d := newDirect(t, DefaultConfig())
	f := &fakeRelease{now: time.Unix(5000, 0)}
	f.install(d.ss.rel)
	d.ss.rel.bytes, d.ss.rel.calls = 1<<40, 20
	d.openWithOutput("a", 19, 0)
	d.closeSession("a")
	if len(f.waits) != 0 {
		t.Fatalf("19 calls released, below the threshold of 20: %v", f.waits)
	}
	d.openWithOutput("b", 20, 0)
	d.closeSession("b")
	f.fire()
	if len(f.waits) != 1 || f.freed != 1 {
		t.Fatalf("20 calls released: waits %v, freed %d; want one release", f.waits, f.freed)
	}
}
