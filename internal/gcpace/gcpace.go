// Package gcpace gives the garbage collector a heap floor: while the live
// heap is small, the next collection waits until the heap reaches the
// floor, instead of running every time the heap doubles.
//
// acpnormd allocates for every frame it reads and every answer it sends,
// and keeps little: at 8 streams of recorded traffic the live heap is 5 to
// 20 MiB (GODEBUG=gctrace=1), so with Go's default pacing (GOGC=100:
// collect when the heap is twice the live heap) the collector ran 270
// times in 4 s of load, each cycle paying its fixed costs (stopping and
// scanning every goroutine's stack, which is also where many of the
// profile's asyncPreempt samples come from). With a floor of 64 MiB it ran
// 40 times, and the server spent 15% (Claude recordings) and 9% (Codex)
// less CPU per frame (BENCHMARKS.md). Once GOGC's own goal reaches the
// floor (a live heap of half the floor, with the default GOGC=100), the
// runtime's own pacing is unchanged, so a server holding many calls (the
// memory goal's 10,000 open calls) collects as before; a memory limit
// (GOMEMLIMIT) still applies on top.
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// maxPercent bounds the GC percent set: with a live heap of a few KiB the
// floor alone would ask for more than the runtime needs to hear.
const maxPercent = 100_000

// Percent returns the GC percent (GOGC) that makes the next collection run
// when the heap reaches floor bytes, given live bytes of live heap and the
// percent base the process runs with: base when base's own goal,
// live*(1+base/100), already reaches the floor (or live is not known, or
// the collector is off: base < 0), else the larger percent that puts the
// goal at the floor.
func Percent(live, floor int64, base int) int {
	if base < 0 || floor <= 0 || live <= 0 {
		return base
	}
	if live+live*int64(base)/100 >= floor {
		return base
	}
	// The smallest p with live*(100+p)/100 >= floor.
	p := (floor*100+live-1)/live - 100
	return int(min(p, maxPercent))
}

// Pacer keeps the floor until Stop.
type Pacer struct {
	floor   int64
	base    int
	stopped atomic.Bool
	sample  []metrics.Sample
	mu      sync.Mutex // guards sample and the percent set
	set     int
}

// DefaultFloor is acpnormd's default floor (--gc-floor): the benchmarks
// that run the engine as acpnormd does start a Pacer with it.
const DefaultFloor = 64 << 20

// Start gives the collector a floor of floor bytes (0 or less: it does
// nothing, and Stop does nothing). The percent the process was started
// with (GOGC, 100 by default) is the base it returns to when the live heap
// grows; with GOGC=off, Start does nothing.
func Start(floor int64) *Pacer {
	p := &Pacer{floor: floor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	p.base = debug.SetGCPercent(100)
	debug.SetGCPercent(p.base)
	p.set = p.base
	if floor <= 0 || p.base < 0 {
		p.stopped.Store(true)
		return p
	}
	p.adjust()
	p.arm()
	return p
}

// Stop ends the pacing and gives the collector back its base percent.
func (p *Pacer) Stop() {
	if p == nil || p.stopped.Swap(true) {
		return
	}
	p.mu.Lock()
	debug.SetGCPercent(p.base)
	p.set = p.base
	p.mu.Unlock()
}

// sentinel is garbage as soon as it is made: its finalizer runs after the
// next collection, adjusts the percent and makes the next sentinel.
type sentinel struct{ _ [16]byte }

func (p *Pacer) arm() {
	s := &sentinel{}
	runtime.SetFinalizer(s, func(*sentinel) {
		if p.stopped.Load() {
			return
		}
		p.adjust()
		p.arm()
	})
}

// adjust sets the percent from the live heap the last collection marked.
func (p *Pacer) adjust() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped.Load() {
		return
	}
	metrics.Read(p.sample)
	var live int64
	if p.sample[0].Value.Kind() == metrics.KindUint64 {
		live = int64(p.sample[0].Value.Uint64())
	}
	want := Percent(live, p.floor, p.base)
	// Small moves are not worth telling the runtime.
	if want == p.set || want != p.base && p.set != p.base && abs(want-p.set) < p.set/8 {
		return
	}
	debug.SetGCPercent(want)
	p.set = want
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
