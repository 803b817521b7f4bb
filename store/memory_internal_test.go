package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newFake() (*fakeClock, *memory) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	return c, newMemory(c.now)
}
func change(ttl time.Duration) *Change       { return &Change{Header: []byte("h"), TTL: ttl} }
func version(t *testing.T, m *memory) uint64 { t.Helper(); return mustLoad(t, m, "a").Version }

func mustLoad(t *testing.T, m *memory, session string) *Snapshot {
	t.Helper()
	s, err := m.Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A commit extends the expiry of the whole session, also of the streams
// and records an earlier commit wrote; the expiry is exact.
func TestMemoryExpiryRefresh(t *testing.T) {
	ctx := context.Background()
	clk, m := newFake()
	v, err := m.Commit(ctx, "a", 0, &Change{Records: map[string][]byte{"r": []byte("1")}, Streams: []StreamOp{{Name: "s", Data: []byte("x"), Append: true}}, TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	clk.add(8 * time.Second)
	if v, err = m.Commit(ctx, "a", v, change(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	clk.add(8 * time.Second) // 16 s after the first commit, 8 s after the second
	snap := mustLoad(t, m, "a")
	if snap.Version != v || string(snap.Records["r"]) != "1" || string(snap.Streams["s"]) != "x" {
		t.Fatalf("8 s after a commit with a 10 s TTL: %+v; want the whole session at version %d", snap, v)
	}
	clk.add(2*time.Second - time.Nanosecond)
	if got := version(t, m); got != v {
		t.Fatalf("1 ns before expiry: version %d; want %d", got, v)
	}
	clk.add(time.Nanosecond)
	if got := version(t, m); got != 0 {
		t.Fatalf("at expiry: version %d; want 0 (gone)", got)
	}
	if _, err := m.Commit(ctx, "a", v, change(time.Second)); !errors.Is(err, ErrConflict) {
		t.Fatalf("commit at the expired session's version: %v; want ErrConflict", err)
	}
	if err := m.Delete(ctx, "a", v); !errors.Is(err, ErrConflict) {
		t.Fatalf("delete at the expired session's version: %v; want ErrConflict", err)
	}
}

// Expired sessions nobody comes back to are swept by later writes, so the
// memory store does not grow with abandoned sessions.
func TestMemorySweepsExpired(t *testing.T) {
	ctx := context.Background()
	clk, m := newFake()
	for i := range 1000 {
		if _, err := m.Commit(ctx, fmt.Sprint("old", i), 0, change(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	clk.add(time.Hour)
	for i := range 2000 {
		if _, err := m.Commit(ctx, fmt.Sprint("new", i%10), uint64(i/10), change(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	m.mu.Lock()
	n := len(m.sessions)
	m.mu.Unlock()
	if n != 10 {
		t.Fatalf("%d sessions held after the 1000 expired ones were abandoned; want 10", n)
	}
}

func TestMemoryClosed(t *testing.T) {
	m := NewMemory()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := m.Load(ctx, "a"); err == nil {
		t.Error("Load after Close: no error")
	}
	if _, err := m.Commit(ctx, "a", 0, change(time.Second)); err == nil {
		t.Error("Commit after Close: no error")
	}
	if err := m.Delete(ctx, "a", 0); err == nil {
		t.Error("Delete after Close: no error")
	}
}
