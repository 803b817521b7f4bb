package service

import (
	"sync"
	"sync/atomic"
	"time"
)

// waitClock calls fire, once, when one wait (from begin to end) lasts d:
// a stream's wait for its client's next request (see idleStream), or for
// its client to take a response (see sendLoop).
//
// A wait costs a clock read and two atomic operations: no timer is reset
// for each one (two operations on the runtime's timer heap per request,
// Reset and Stop, were 1.5% of the server's CPU at c=8 on two of
// bench/load's recording scenarios). The timer runs on its own, once
// every d or less, and looks at the wait in progress when it fires: it
// fires once that wait has lasted d, or sets itself for the moment it
// will have.
type waitClock struct {
	d    time.Duration
	base time.Time // the monotonic clock's origin for from
	// from is when the wait in progress began (time since base, plus one
	// so that a wait never reads as none), 0 between waits, or waitFired.
	from atomic.Int64
	fire func()

	mu      sync.Mutex // holds off stop while the timer is set again
	stopped bool
	timer   *time.Timer
}

// waitFired is from's value once the wait in progress made the clock fire.
const waitFired = -1

func newWaitClock(d time.Duration, fire func()) *waitClock {
	w := &waitClock{d: d, base: time.Now(), fire: fire}
	w.mu.Lock() // check waits for w.timer
	w.timer = time.AfterFunc(d, w.check)
	w.mu.Unlock()
	return w
}

// begin marks the start of a wait.
func (w *waitClock) begin() { w.from.Store(int64(time.Since(w.base)) + 1) }

// end marks the end of the wait begun last, and says whether it lasted d
// and fired the clock; either the clock fires or end says it did not.
func (w *waitClock) end() bool { return w.from.Swap(0) == waitFired }

// check runs when the timer fires: it fires the clock when the wait in
// progress has lasted d, and otherwise sets the timer for when it will
// have (d from now when there is none: a wait that begins later lasts d
// no sooner).
func (w *waitClock) check() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	next := w.d
	if from := w.from.Load(); from > 0 {
		waited := time.Since(w.base) - time.Duration(from-1)
		if waited >= w.d && w.from.CompareAndSwap(from, waitFired) {
			w.stopped = true
			w.mu.Unlock()
			w.fire()
			return
		}
		next = max(w.d-waited, 0) // the wait ended meanwhile: look again
	}
	w.timer.Reset(next)
	w.mu.Unlock()
}

// stop stops the clock for good: once it returns, fire is not called
// unless a wait had already lasted d.
func (w *waitClock) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.timer.Stop()
}
