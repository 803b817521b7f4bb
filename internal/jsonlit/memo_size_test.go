package jsonlit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

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
