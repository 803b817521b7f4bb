package accum

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// growing hands out a text as a cumulative reader does (jsonlit's memo):
// each snapshot is the previous one's bytes, in the same memory, followed
// by new ones; a change starts a new array.
type growing struct{ buf []byte }

func (g *growing) add(s string) string {
	if cap(g.buf)-len(g.buf) < len(s) {
		g.buf = append(make([]byte, 0, 2*(len(g.buf)+len(s))), g.buf...)
	}
	g.buf = append(g.buf, s...)
	return unsafe.String(unsafe.SliceData(g.buf), len(g.buf))
}

func (g *growing) change(s string) string {
	g.buf = nil
	return g.add(s)
}

// TestWholeInSameMemory: a Snapshot or Final that starts in the memory of
// the last whole text (which applyWhole then does not compare again) folds
// exactly as the same text in memory of its own, whatever comes between:
// deltas, windows, cut-short or trimmed restatements, a prefix of the last
// text, a text that changed.
func TestWholeInSameMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	skipped := 0 // snapshots applyWhole may take without comparing
	piece := func() string {
		return strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(3000)) + "\n"
	}
	for run := range 40 {
		limit := []int{64 << 10, 40 << 10, 100 << 10}[run%3]
		same, own := NewBuffer(limit), NewBuffer(limit)
		var g growing
		last := ""
		for i := range 300 {
			var tx Text
			switch r := rng.IntN(20); {
			case r < 12:
				last = g.add(piece())
				tx = Text{Kind: Snapshot, Text: last}
			case r == 12:
				tx = Text{Kind: Final, Text: last, Truncated: rng.IntN(2) == 0}
			case r == 13:
				tx = Text{Kind: Snapshot, Text: last[:rng.IntN(len(last)+1)], Truncated: rng.IntN(2) == 0}
			case r == 14:
				tx = Text{Kind: Delta, Text: piece()}
			case r == 15:
				tx = Text{Kind: Window, Text: last[len(last)-min(len(last), 1+rng.IntN(50<<10)):]}
			case r == 16:
				last = g.change(last[:rng.IntN(len(last)+1)] + piece())
				tx = Text{Kind: Snapshot, Text: last}
			case r == 17:
				tx = Text{Kind: Snapshot, Text: last, TrimmedEnd: true}
			case r == 18:
				tx = Text{Kind: Snapshot, Text: last, Valid: true}
			default:
				tx = Text{Kind: Final, Text: last + piece()}
			}
			if tx.Kind == Snapshot && same.wholeLen > 0 && int64(same.wholeLen) == same.total && len(tx.Text) > 0 && unsafe.StringData(tx.Text) == unsafe.SliceData(g.buf) {
				skipped++
			}
			same.Apply(tx)
			tx.Text = strings.Clone(tx.Text)
			own.Apply(tx)
			gc, gok := same.Take()
			wc, wok := own.Take()
			require.Equal(t, wok, gok, "run %d step %d", run, i)
			require.Equal(t, wc, gc, "run %d step %d", run, i)
			require.Equal(t, own.Whole(), same.Whole(), "run %d step %d", run, i)
		}
	}
	require.Greater(t, skipped, 3000, "snapshots in the same memory")
}

// TestChunkSharesAWholeText: the chunk of a big Snapshot or Final that is
// held whole, with nothing appended since, is that string (no copy),
// whether it is the first text or replaces one; once text is appended,
// when only the text's tail is held, or when the chunk is under half of
// the string, the chunk is a copy of the held text, as before.
func TestChunkSharesAWholeText(t *testing.T) {
	big := strings.Repeat("0123456789abcde\n", 4<<10) // 64 KiB, over sameMemoryMin
	other := strings.Repeat("edcba9876543210\n", 4<<10)
	// in says whether c's text is in s's memory.
	in := func(c Chunk, s string) bool {
		p, lo := uintptr(unsafe.Pointer(unsafe.StringData(c.Text))), uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return p >= lo && p < lo+uintptr(len(s))
	}

	b := NewBuffer(1 << 20)
	b.Apply(Text{Kind: Final, Text: big})
	c, ok := b.Take()
	require.True(t, ok && c.Text == big && !c.Replace && !c.Truncated && c.TotalBytes == int64(len(big)), "Take() of the first text")
	require.True(t, in(c, big), "the chunk of a whole text held whole is that text")
	require.True(t, in(b.Whole(), big), "Whole() of a whole text held whole is that text")

	b.Apply(Text{Kind: Snapshot, Text: other})
	c, ok = b.Take()
	require.True(t, ok && c.Text == other && c.Replace, "Take() of a replacing text")
	require.True(t, in(c, other), "the chunk of a replacing text held whole is that text")

	grown := other + "tail\n" // in memory of its own: compared, then appended
	b.Apply(Text{Kind: Snapshot, Text: grown})
	c, ok = b.Take()
	require.True(t, ok && c.Text == "tail\n" && !c.Replace, "Take() of a grown snapshot")
	require.False(t, in(c, grown), "a chunk under half of its string: a copy")

	b.Apply(Text{Kind: Delta, Text: "more\n"})
	w := b.Whole()
	require.True(t, w.Text == grown+"more\n", "Whole() after a Delta")
	require.False(t, in(w, grown), "text appended: a copy")

	small := NewBuffer(48 << 10) // holds only the text's tail
	small.Apply(Text{Kind: Snapshot, Text: big})
	w = small.Whole()
	require.True(t, len(w.Text) < len(big) && strings.HasSuffix(big, w.Text) && w.Truncated, "Whole() of a tail")
	require.False(t, in(w, big), "a tail held: a copy")
}
