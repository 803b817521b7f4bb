package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name             string
		live, floor      int64
		base, wantResult int
	}{
		{"small heap: the goal is the floor", 4 * mib, 64 * mib, 100, 1500},
		{"rounded up, never under the floor", 3 * mib, 64 * mib, 100, 2034},
		{"half the floor: the base goal reaches it", 32 * mib, 64 * mib, 100, 100},
		{"a big heap keeps the base", 500 * mib, 64 * mib, 100, 100},
		{"a larger base is kept when it reaches the floor", 20 * mib, 64 * mib, 300, 300},
		{"a smaller base is raised only to the floor", 20 * mib, 64 * mib, 50, 220},
		{"GOGC=off stays off", 4 * mib, 64 * mib, -1, -1},
		{"no floor", 4 * mib, 0, 100, 100},
		{"live heap not known", 0, 64 * mib, 100, 100},
		{"a tiny heap is bounded", 10, 64 * mib, 100, maxPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Percent(tc.live, tc.floor, tc.base)
			require.Equal(t, tc.wantResult, got)
			if got != tc.base && got != maxPercent {
				require.GreaterOrEqual(t, tc.live*int64(100+got)/100, tc.floor, "the goal reaches the floor")
				require.Less(t, tc.live*int64(100+got-1)/100, tc.floor, "and no further")
			}
		})
	}
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
