package accum

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// alignBoth checks that alignWindow gives what the Knuth-Morris-Pratt
// alignment gives, for a Buffer holding held (of a logical text of total
// bytes) and the window w.
func alignBoth(t *testing.T, limit int, text, w string) {
	t.Helper()
	b := NewBuffer(limit)
	if w == "" {
		return // alignWindow answers that before either search
	}
	b.Apply(Text{Kind: Delta, Text: text})
	d1, ok1 := b.alignWindow(w)
	d2, ok2 := b.alignKMP(w)
	if d1 != d2 || ok1 != ok2 {
		t.Fatalf("held %q (total %d), window %q: anchored (%d, %v), KMP (%d, %v)", b.held(), b.total, w, d1, ok1, d2, ok2)
	}
}

func TestAlignWindowMatchesKMP(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func(n int, alphabet string) string {
		var sb strings.Builder
		for range n {
			sb.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return sb.String()
	}
	for i := range 3000 {
		// Small alphabets make the anchor recur; long texts pass the
		// limit so that the held tail is not the whole text.
		alphabet := []string{"a", "ab", "abc", "abcdefghij\n"}[i%4]
		limit := []int{64, 100, 300, 1000}[r.IntN(4)]
		full := gen(r.IntN(1500)+1, alphabet)
		cut := r.IntN(len(full) + 1)
		text := full[:cut]
		if text == "" {
			text = "x"
		}
		// A window of the output so far, ending at or after the text,
		// sometimes with a foreign tail or head.
		end := cut + r.IntN(len(full)-cut+1)
		start := max(0, end-(r.IntN(400)+1))
		w := full[start:end]
		switch r.IntN(5) {
		case 0:
			w = gen(r.IntN(200), alphabet)
		case 1:
			w = gen(r.IntN(50), alphabet) + w
		}
		alignBoth(t, limit, text, w)
	}
	// Periodic text where the anchor recurs more often than it is tried.
	period := strings.Repeat("0123456789", 100)
	alignBoth(t, 300, period, period[5:])
	alignBoth(t, 300, period+"x", period[5:]+"x"+period[:200])
	alignBoth(t, 2000, period, period+period)
	alignBoth(t, 2000, "X"+period[:300], period[:600])  // the whole held tail in w: tries run out
	alignBoth(t, 2000, period, "Y"+period[:200])        // w starts inside it: tries run out
	alignBoth(t, 2000, period, period[:200]+"Z"+period) // the last try checks out
}
