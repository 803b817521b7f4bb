package proxy

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// How long the agent's stdout (or a copied stderr) may stay open and empty
// after the agent exited (a child of it holds it); then the proxy stops
// reading.
const stdoutGrace = 2 * time.Second

// writeStep is the most the relay hands its consumer in one write after
// reading from a drain: each step done is progress, which a write of a
// whole 1 MiB read would hide from the stall bound for as long as a slow
// consumer takes to read it all.
const writeStep = 64 << 10

// drain ends the relay of one of the agent's pipes (its stdout, or its
// stderr when that is copied) after the agent exited:
//
//   - once the pipe stayed empty for stdoutGrace: from the exit on, each
//     read of it may wait that long for bytes. A read is bounded, not the
//     relay: however long a slow consumer takes to be written what was
//     read, what is left in the pipe is still read and relayed;
//   - once what the agent had left in the pipe when it exited was read and
//     the drain limit after the exit has passed: what comes after the exit
//     is a child's of the agent (it holds the pipe and writes on), and is
//     read that long at most;
//   - once a write to the consumer made no progress for the stall bound
//     (Run watches stalled and gives the relay up).
type drain struct {
	f  *os.File
	on atomic.Bool // the agent exited

	owed    atomic.Int64 // bytes the agent left in the pipe, not read yet
	until   time.Time    // the drain limit; set before on
	limited atomic.Bool  // the last read was bounded by until
	wasCut  atomic.Bool  // a read ended at until

	inWrite  atomic.Bool  // a write to the consumer is in progress
	progress atomic.Int64 // when a write last made progress (UnixNano)
	giveUp   chan struct{}
	gaveUp   sync.Once
}

func newDrain(f *os.File) *drain { return &drain{f: f, giveUp: make(chan struct{})} }

// start bounds the reads from now on, the one waiting included: the agent
// exited at exit, and what comes into the pipe after what it left there
// is read until exit+limit at most. An error says the pipe takes no
// deadline (the caller bounds the relay instead).
func (d *drain) start(exit time.Time, limit time.Duration) error {
	d.owed.Store(queued(d.f))
	d.until = exit.Add(limit)
	d.on.Store(true)
	return d.bound()
}

func (d *drain) bound() error {
	dl := time.Now().Add(stdoutGrace)
	lim := d.owed.Load() <= 0 && d.until.Before(dl)
	if lim {
		dl = d.until
	}
	d.limited.Store(lim)
	return d.f.SetReadDeadline(dl)
}

// arm bounds the next read, once the agent exited, and says whether it
// had: only the bytes of a read that began after the exit are counted
// off what the agent left (took).
func (d *drain) arm() bool {
	if d != nil && d.on.Load() {
		_ = d.bound()
		return true
	}
	return false
}

// took counts n bytes read off the pipe by a read that began after the
// agent exited (armed, arm's answer). A read that began before may have
// taken its bytes before start measured what the agent left, and counted
// off, they would make the drain limit cut what the agent wrote; counted
// or not, they were in the pipe, so leaving them is at worst reading a
// child's output a little longer.
func (d *drain) took(n int, armed bool) {
	if armed && n > 0 {
		d.owed.Add(-int64(n))
	}
}

// ended notes how a read of the pipe ended: at the drain limit with the
// pipe still held by a child of the agent (bytes in it, or a writer left),
// the relay cut the child's output. (A deadline that has passed fails a
// read before the pipe is looked at, so the pipe is asked.)
func (d *drain) ended(err error) {
	if d != nil && errors.Is(err, os.ErrDeadlineExceeded) && d.limited.Load() && held(d.f) {
		d.wasCut.Store(true)
	}
}

// Read is the copying relay's read of the pipe.
func (d *drain) Read(p []byte) (int, error) {
	armed := d.arm()
	n, err := d.f.Read(p)
	d.took(n, armed)
	d.ended(err)
	return n, err
}

// write writes p to dst in steps, each one progress.
func (d *drain) write(dst io.Writer, p []byte) error {
	if d == nil {
		_, err := dst.Write(p)
		return err
	}
	d.writing(true)
	defer d.writing(false)
	for len(p) > 0 {
		n, err := dst.Write(p[:min(len(p), writeStep)])
		if n > 0 {
			d.progressed()
		}
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

func (d *drain) writing(on bool) {
	if d != nil {
		d.inWrite.Store(on)
	}
}

func (d *drain) progressed() {
	if d != nil {
		d.progress.Store(time.Now().UnixNano())
	}
}

// given is closed when the relay is given up (nil for no drain).
func (d *drain) given() <-chan struct{} {
	if d == nil {
		return nil
	}
	return d.giveUp
}

// stalled says whether a write is in progress that made no progress for
// bound, counted from the agent's exit at the earliest.
func (d *drain) stalled(now, exit time.Time, bound time.Duration) bool {
	if !d.inWrite.Load() {
		return false
	}
	last := time.Unix(0, d.progress.Load())
	if last.Before(exit) {
		last = exit
	}
	return now.Sub(last) >= bound
}

// cut says whether the relay ended at the drain limit with the pipe still
// held by a child of the agent.
func (d *drain) cut() bool { return d.wasCut.Load() }

// abandon gives the relay up: a wait for a blocking consumer ends (within
// 100 ms), and so does one for a consumer that is an *os.File in Go's
// poller (its write deadline is set now, for good); the pipe is closed. A
// write blocked in a blocking file, or in any other writer, stays blocked
// until the consumer takes it or the process exits; nothing waits for it.
func (d *drain) abandon(dst io.Writer) {
	d.gaveUp.Do(func() { close(d.giveUp) })
	if f, ok := dst.(*os.File); ok {
		_ = f.SetWriteDeadline(time.Now())
	}
	d.f.Close()
}
