package service

import (
	"sync"
	"sync/atomic"
	"time"
)

// waitClock calls fire, once, when one wait (from begin to end) has lasted
// d: a stream's wait for its client's next request (see idleStream), or
// for its client to take a response (see sendLoop). It fires no sooner
// than d after the wait began, and at most d/waitSteps later (plus the
// timer's own lateness).
//
// A wait costs two atomic operations and no clock read: no timer is reset
// for each one (two operations on the runtime's timer heap per request,
// Reset and Stop, were 1.5% of the server's CPU at c=8 on two of
// bench/load's recording scenarios), and begin numbers the wait instead of
// reading the clock (a read at each begin, one for each request and one
// for each response, was 0.5-0.8% of it). The timer runs on its own, every
// d/waitSteps, and looks at the wait in progress: the first look that sees
// a wait notes the time, which is no earlier than the wait began, and the
// clock fires once the same wait is still in progress d after that look.
type waitClock struct {
	d    time.Duration
	step time.Duration // d/waitSteps: how often the timer looks
	// now is the number of the wait in progress (odd, counting from 1), 0
	// between waits, or waitFired.
	now  atomic.Int64
	last int64 // the number of the last wait begun; begin's alone
	fire func()

	mu      sync.Mutex // holds off stop while the timer is set again
	stopped bool
	timer   *time.Timer
	// seen is the wait the timer saw in progress when it last looked (0:
	// none), first seen at seenAt.
	seen   int64
	seenAt time.Time
}

// waitSteps is how many times in d the timer looks at the wait in
// progress: a wait fires the clock at most d/waitSteps after it has lasted
// d.
const waitSteps = 8

// waitFired is now's value once the wait in progress made the clock fire.
const waitFired = -1

func newWaitClock(d time.Duration, fire func()) *waitClock {
	w := &waitClock{d: d, step: max(d/waitSteps, 1), fire: fire}
	w.mu.Lock() // check waits for w.timer
	w.timer = time.AfterFunc(w.step, w.check)
	w.mu.Unlock()
	return w
}

// begin marks the start of a wait. Only one goroutine begins and ends the
// waits of a clock.
func (w *waitClock) begin() {
	w.last += 2
	w.now.Store(w.last - 1)
}

// end marks the end of the wait begun last, and says whether it lasted d
// and fired the clock; either the clock fires or end says it did not.
func (w *waitClock) end() bool { return w.now.Swap(0) == waitFired }

// check runs when the timer fires: it fires the clock when the wait in
// progress was in progress d ago already, and otherwise sets the timer to
// look again.
func (w *waitClock) check() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	next := w.step
	cur := w.now.Load()
	switch {
	case cur <= 0: // no wait in progress
		w.seen = 0
	case cur != w.seen: // a wait begun since the last look, which it lasted since
		w.seen, w.seenAt = cur, time.Now()
		next = min(next, w.d)
	default:
		waited := time.Since(w.seenAt)
		if waited >= w.d && w.now.CompareAndSwap(cur, waitFired) {
			w.stopped = true
			w.mu.Unlock()
			w.fire()
			return
		}
		// The wait ended meanwhile, or will have lasted d at seenAt+d.
		next = max(min(next, w.d-waited), 0)
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
