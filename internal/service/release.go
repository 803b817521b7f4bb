package service

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
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

	// The totals and their highest since the last release, kept with
	// atomics: the hooks run on every frame of every stream.
	held, heldPeak atomic.Int64
	open, openPeak atomic.Int64
	pending        atomic.Bool

	mu   sync.Mutex
	last time.Time // of the last release
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
	r.held.Store(total)
	raise(&r.heldPeak, total)
	r.check()
}

// callsOpened is the Normalizer's CallsOpened hook.
func (r *releaser) callsOpened(delta int) {
	raise(&r.openPeak, r.open.Add(int64(delta)))
	r.check()
}

// raise sets a to v when v is higher.
func raise(a *atomic.Int64, v int64) {
	for {
		p := a.Load()
		if v <= p || a.CompareAndSwap(p, v) {
			return
		}
	}
}

// check schedules a release when state dropped by a threshold.
func (r *releaser) check() {
	if r.heldPeak.Load()-r.held.Load() < r.bytes && r.openPeak.Load()-r.open.Load() < r.calls {
		return
	}
	if !r.pending.CompareAndSwap(false, true) {
		return
	}
	wait := r.delay
	r.mu.Lock()
	if !r.last.IsZero() {
		wait = max(wait, r.last.Add(r.gap).Sub(r.now()))
	}
	r.mu.Unlock()
	r.after(wait, r.release)
}

// release measures the next drop from what is held now and hands the
// freed memory back.
func (r *releaser) release() {
	r.mu.Lock()
	r.last = r.now()
	r.mu.Unlock()
	r.heldPeak.Store(r.held.Load())
	r.openPeak.Store(r.open.Load())
	r.pending.Store(false)
	r.free()
}
