package service

import (
	"runtime/debug"
	"sync"
	"time"
)

// releaser hands the memory freed by a large release of state (a mass
// SessionClosed, a TTL sweep of many sessions) back to the operating
// system soon after, instead of when the runtime's periodic GC and
// scavenger get to it, minutes later on an idle server: once the text all
// calls hold, or the number of calls, has dropped by a threshold from its
// highest since the last release, it waits delay for the rest of the
// release to land and runs debug.FreeOSMemory (a GC, then the freed pages
// handed back). Releases are at least gap apart, so a server under load
// pays for one at most every gap. It learns the totals from the
// Normalizer's hooks.
type releaser struct {
	bytes int64         // a drop in held text this large is a large release
	calls int64         // and so is a drop in calls this large
	delay time.Duration // wait before releasing, for the rest of a mass close
	gap   time.Duration // at least this long between two releases
	now   func() time.Time
	after func(time.Duration, func())
	free  func()

	mu             sync.Mutex
	held, heldPeak int64
	open, openPeak int64
	pending        bool
	last           time.Time
}

func newReleaser() *releaser {
	return &releaser{
		bytes: 32 << 20, calls: 4096, delay: time.Second, gap: 10 * time.Second,
		now:   time.Now,
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		free:  debug.FreeOSMemory,
	}
}

// heldBytes is the Normalizer's HeldBytes hook.
func (r *releaser) heldBytes(total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = total
	r.heldPeak = max(r.heldPeak, total)
	r.check()
}

// callsOpened is the Normalizer's CallsOpened hook.
func (r *releaser) callsOpened(delta int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open += int64(delta)
	r.openPeak = max(r.openPeak, r.open)
	r.check()
}

// check schedules a release when state dropped by a threshold; r.mu is
// held.
func (r *releaser) check() {
	if r.pending || (r.heldPeak-r.held < r.bytes && r.openPeak-r.open < r.calls) {
		return
	}
	r.pending = true
	wait := r.delay
	if !r.last.IsZero() {
		wait = max(wait, r.last.Add(r.gap).Sub(r.now()))
	}
	r.after(wait, r.release)
}

// release measures the next drop from what is held now and hands the
// freed memory back.
func (r *releaser) release() {
	r.mu.Lock()
	r.pending = false
	r.last = r.now()
	r.heldPeak, r.openPeak = r.held, r.open
	r.mu.Unlock()
	r.free()
}
