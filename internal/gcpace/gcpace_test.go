package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name               string
		live, roots, floor int64
		base, wantResult   int
	}{
		{"small heap: the goal is the floor", 4 * mib, 0, 64 * mib, 100, 1500},
		{"rounded up, never under the floor", 7 * mib, 0, 64 * mib, 100, 815},
		{"a small heap and roots: the runtime's 4 MiB minimum, scaled, reaches the floor", 1 * mib, 1 * mib, 64 * mib, 100, 1600},
		{"roots count as heap to grow by", 1 * mib, 3 * mib, 64 * mib, 100, 1575},
		{"half the floor: the base goal reaches it", 32 * mib, 0, 64 * mib, 100, 100},
		{"with roots, a little under half the floor does", 31 * mib, 2 * mib, 64 * mib, 100, 100},
		{"a big heap keeps the base", 500 * mib, 4 * mib, 64 * mib, 100, 100},
		{"a larger base is kept when it reaches the floor", 20 * mib, 0, 64 * mib, 300, 300},
		{"a smaller base is raised only to the floor", 20 * mib, 0, 64 * mib, 50, 220},
		{"GOGC=off stays off", 4 * mib, 1 * mib, 64 * mib, -1, -1},
		{"no floor", 4 * mib, 1 * mib, 0, 100, 100},
		{"live heap not known", 0, 1 * mib, 64 * mib, 100, 100},
		{"a tiny heap under a huge floor is bounded", 10, 0, 8192 * mib, 100, maxPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Percent(tc.live, tc.roots, tc.floor, tc.base)
			require.Equal(t, tc.wantResult, got)
			if got != tc.base && got != maxPercent {
				require.GreaterOrEqual(t, goal(tc.live, tc.roots, got), tc.floor, "the goal reaches the floor")
				require.Less(t, goal(tc.live, tc.roots, got-1), tc.floor, "and no further")
			}
		})
	}
}

// TestGoalAtFloor asks the runtime for the heap goal the pacer set: the
// floor, not the floor times (1 + roots/live). A test binary's live heap
// is small beside its globals, as acpnormd's is when it starts.
func TestGoalAtFloor(t *testing.T) {
	if gcPercent() < 0 {
		t.Skip("GOGC=off")
	}
	const floor = 64 << 20
	runtime.GC()
	p := Start(floor)
	defer p.Stop()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	metrics.Read(s)
	goal := int64(s[0].Value.Uint64())
	require.GreaterOrEqual(t, goal, int64(floor), "live %d B, globals %d B", s[1].Value.Uint64(), s[2].Value.Uint64())
	require.Less(t, goal, int64(floor)*21/20, "live %d B, globals %d B: the goal is within 5%% of the floor", s[1].Value.Uint64(), s[2].Value.Uint64())
}

// gcPercent reads the percent the runtime collects at.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestPacer runs the pacer in this process: it raises the percent while
// the live heap is small, gives the base back when the live heap grows
// past half the floor (after the collection that sees it), and on Stop.
func TestPacer(t *testing.T) {
	base := gcPercent()
	if base < 0 {
		t.Skip("GOGC=off")
	}
	const floor = 256 << 20
	runtime.GC() // the live heap is known after a first collection
	p := Start(floor)
	defer p.Stop()
	require.Greater(t, gcPercent(), base, "a test binary's live heap is far under 256 MiB")

	// A live heap over half the floor: after a collection, the base.
	keep := make([]byte, floor/2+(8<<20))
	for i := range keep {
		keep[i] = 1
	}
	deadline := time.Now().Add(5 * time.Second)
	for gcPercent() != base && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, base, gcPercent(), "with %d MiB live", len(keep)>>20)
	runtime.KeepAlive(keep)

	keep = nil
	deadline = time.Now().Add(5 * time.Second)
	for gcPercent() == base && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.Greater(t, gcPercent(), base, "the heap is small again")

	p.Stop()
	require.Equal(t, base, gcPercent())
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, base, gcPercent(), "a stopped pacer sets nothing after a collection")
}

func TestStartWithoutFloor(t *testing.T) {
	base := gcPercent()
	p := Start(0)
	require.Equal(t, base, gcPercent())
	p.Stop()
	require.Equal(t, base, gcPercent())
}
