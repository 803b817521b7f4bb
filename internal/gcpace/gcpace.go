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

// heapMinimum is the runtime's smallest heap goal at GOGC=100 (4 MiB,
// defaultHeapMinimum in runtime/mgcpacer.go); at percent p the smallest
// goal is heapMinimum*p/100.
const heapMinimum = 4 << 20

// Percent returns the GC percent (GOGC) that makes the next collection run
// when the heap reaches floor bytes, given live bytes of live heap, roots
// bytes of stacks and globals the last collection scanned, and the percent
// base the process runs with. The runtime's goal for a percent p is
// live + (live+roots)*p/100 (the roots count as heap to grow by), and at
// least heapMinimum*p/100, so a percent figured from the live heap alone
// overshoots the floor by a factor of 1+roots/live or 4 MiB/live,
// whichever is larger: acpnormd marks about 1.5 MiB live at start, the
// percent for a 64 MiB floor was then 4,166 and the goal 4 MiB x 41.66 =
// 167 MiB (GODEBUG=gctrace=1), the memory goal's open calls were first
// collected at 165-174 MiB of heap and its RSS peaked at 200-220 MiB.
// Percent returns base when base's
// own goal already reaches the floor (or live is not known, or the
// collector is off: base < 0), else the smallest percent whose goal
// reaches the floor.
func Percent(live, roots, floor int64, base int) int {
	if base < 0 || floor <= 0 || live <= 0 {
		return base
	}
	roots = max(roots, 0)
	if goal(live, roots, base) >= floor {
		return base
	}
	// The smallest p with live + (live+roots)*p/100 >= floor, or with
	// heapMinimum*p/100 >= floor.
	p := min(((floor-live)*100+live+roots-1)/(live+roots), (floor*100+heapMinimum-1)/heapMinimum)
	return int(min(p, maxPercent))
}

// goal is the runtime's heap goal for percent p (runtime/mgcpacer.go).
func goal(live, roots int64, p int) int64 {
	return max(live+(live+roots)*int64(p)/100, heapMinimum*int64(p)/100)
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
// that run the engine as acpnormd does start a Pacer with it. 96 MiB, not
// the 64 MiB first chosen: once the floor was the goal the runtime really
// set (it had been up to 2.6 times it at start), 96 MiB took 3-7% less
// CPU per frame at 8 streams than 64 MiB, and the memory goal's 10,000
// open calls peaked at 143-152 MiB of RSS against 140-152 (BENCHMARKS.md,
// lane P29d). At 128 MiB they peaked at 163-168 MiB.
const DefaultFloor = 96 << 20

// Start gives the collector a floor of floor bytes (0 or less: it does
// nothing, and Stop does nothing). The percent the process was started
// with (GOGC, 100 by default) is the base it returns to when the live heap
// grows; with GOGC=off, Start does nothing.
func Start(floor int64) *Pacer {
	p := &Pacer{floor: floor, sample: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
	}}
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

// adjust sets the percent from the live heap the last collection marked
// and the roots it scanned.
func (p *Pacer) adjust() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped.Load() {
		return
	}
	metrics.Read(p.sample)
	var b [3]int64 // live, stacks, globals
	for i, s := range p.sample {
		if s.Value.Kind() == metrics.KindUint64 {
			b[i] = int64(s.Value.Uint64())
		}
	}
	want := Percent(b[0], b[1]+b[2], p.floor, p.base)
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
