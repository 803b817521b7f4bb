package jsonlit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/benchcpu"

	"github.com/stretchr/testify/require"
)

// growingLiteral is the JSON literal of n bytes of lines made by line
// (which writes no backslash), and the offsets in it (before the closing
// quote) of its first steps-1 snapshots, each ending a line: the literal
// of such a snapshot is a prefix of it, just past a \n escape, and a
// quote.
func growingLiteral(t *testing.T, n, steps int, line func(i int) string) (lit []byte, cuts []int) {
	var sb strings.Builder
	for i := 1; sb.Len() < n; i++ {
		sb.WriteString(line(i))
	}
	lit, err := json.Marshal(sb.String()[:n])
	require.NoError(t, err)
	for k := 1; k < steps; k++ {
		at := bytes.LastIndex(lit[:len(lit)*k/steps], []byte(`\n`))
		require.Positive(t, at)
		cuts = append(cuts, at+2)
	}
	return lit, cuts
}

// TestMemoKeepsAGrowingOutput: an output re-sent whole on every update
// is decoded from scratch once, however big it grows within what the
// memo keeps (an entry of at most half its budget), and each later
// snapshot only from where the previous one ended: the entry holds the
// literal and its text with little room over, so that it does not outgrow
// its bound long before the text does.
func TestMemoKeepsAGrowingOutput(t *testing.T) {
	memoSmall(t, memoBudget)
	for _, tc := range []struct {
		name string
		size int
		line func(i int) string
	}{
		{"build log, 4 MiB", 4 << 20, func(i int) string {
			return fmt.Sprintf("step %05d: compiled package/%03d in %d ms\n", i, i%997, (i*37)%1000)
		}},
		{"coloured log, 4 MiB", 4 << 20, func(i int) string {
			return fmt.Sprintf("\x1b[32mok\x1b[0m\t\"pkg/%03d\"\t%d.%03ds\n", i%997, i%10, (i*37)%1000)
		}},
		{"build log, 6 MiB", 6 << 20, func(i int) string {
			return fmt.Sprintf("step %05d: compiled package/%03d in %d ms\n", i, i%997, (i*37)%1000)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lit, cuts := growingLiteral(t, tc.size, 400, tc.line)
			key := callKey(tc.name)
			snap := make([]byte, 0, len(lit))
			for k, cut := range cuts {
				snap = append(append(snap[:0], lit[:cut]...), '"')
				_, n, ok := memoDecode(key, snap)
				require.True(t, ok)
				require.Equal(t, len(snap), n)
				e := memoLookup(key, false)
				require.NotNil(t, e, "snapshot %d of %d (%d bytes): the memo dropped the entry", k+1, len(cuts), len(snap))
				held := len(e.raw) + len(e.text)
				require.LessOrEqual(t, e.size, held+held/4+64<<10, "snapshot %d: an entry of %d bytes holds %d", k+1, e.size, held)
			}
		})
	}
}

// BenchmarkMemoExtend measures what a memo hit costs: a snapshot of a
// build log that repeats the kept literal and adds 2.6 KiB (4 MiB in 1,600
// updates), read through the memo, for kept literals of 256 KiB, 1 MiB and
// 4 MiB. Nearly all of it is comparing the snapshot with the kept bytes:
// GB/s is the snapshot's bytes over the CPU time of the read. The snapshot
// is written before each read, as a frame arrives, so it is in the cache
// as much as a new frame would be.
//
//	go test ./internal/jsonlit -run '^$' -bench BenchmarkMemoExtend -benchtime 200x
func BenchmarkMemoExtend(b *testing.B) {
	for _, size := range []int{256 << 10, 1 << 20, 4 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			memoSmall(b, memoBudget)
			var sb strings.Builder
			for i := 1; sb.Len() < size+(64<<10); i++ {
				fmt.Fprintf(&sb, "step %05d: compiled package/%03d in %d ms\n", i, i%997, (i*37)%1000)
			}
			lit, err := json.Marshal(sb.String())
			require.NoError(b, err)
			const step = 2621
			key := callKey("bench")
			// snapshot writes the literal of about the first n bytes
			// (ending before a backslash, so that it is a valid
			// literal) into snap, as a frame arrives.
			var snap []byte
			snapshot := func(n int) []byte {
				for lit[n-1] == '\\' {
					n--
				}
				snap = append(append(snap[:0], lit[:n]...), '"')
				return snap
			}
			restart := func() {
				memoSmall(b, memoBudget)
				_, _, ok := memoDecode(key, snapshot(size))
				require.True(b, ok)
			}
			restart()
			grow := size
			var took time.Duration
			for b.Loop() {
				// Every 16 reads the text starts over at size bytes.
				if grow += step; grow > size+16*step {
					grow = size
					restart()
				}
				snapshot(grow)
				start := benchcpu.Now()
				if _, _, ok := memoDecode(key, snap); !ok {
					b.Fatal("refused")
				}
				took += benchcpu.Now() - start
			}
			b.ReportMetric(float64(took.Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(size)*float64(b.N)/took.Seconds()/1e9, "GB/s")
		})
	}
}

// TestEqualFromEnd: comparing blocks from the end is bytes.Equal, for
// lengths around the block size and a difference anywhere.
func TestEqualFromEnd(t *testing.T) {
	for _, n := range []int{0, 1, 63 << 10, 64 << 10, 64<<10 + 1, 200 << 10} {
		a := bytes.Repeat([]byte("x"), n)
		require.True(t, equalFromEnd(a, bytes.Clone(a)), "n %d", n)
		require.False(t, equalFromEnd(a, append(bytes.Clone(a), 'x')), "n %d, one longer", n)
		for _, at := range []int{0, n / 2, n - 1, n - 64<<10, 64 << 10} {
			if at < 0 || at >= n {
				continue
			}
			b := bytes.Clone(a)
			b[at] = 'y'
			require.False(t, equalFromEnd(a, b), "n %d, differs at %d", n, at)
		}
	}
}
