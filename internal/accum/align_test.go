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

// randomText is n bytes drawn from alphabet.
func randomText(r *rand.Rand, n int, alphabet string) string {
	var sb strings.Builder
	for range n {
		sb.WriteByte(alphabet[r.IntN(len(alphabet))])
	}
	return sb.String()
}

func TestAlignWindowMatchesKMP(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func(n int, alphabet string) string { return randomText(r, n, alphabet) }
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
	// Windows longer than lastIndex's tail (OpenCode's are 30,000 bytes),
	// so that its forward search is used: slid, not overlapping, and
	// of text whose lines begin alike.
	for i := range 200 {
		alphabet := []string{"ab", "abcdefghij\n", "0123456789\n"}[i%3]
		full := gen(20000+r.IntN(20000), alphabet)
		cut := len(full)/2 + r.IntN(len(full)/2)
		end := cut + r.IntN(len(full)-cut+1)
		w := full[max(0, end-(lastTail+r.IntN(3*lastTail))):end]
		if i%4 == 0 {
			w = gen(len(w), alphabet)
		}
		alignBoth(t, []int{lastTail, 3 * lastTail, 30000}[r.IntN(3)], full[:cut], w)
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

// TestLastIndexIsStrings holds lastIndex to strings.LastIndex: anchors
// found only in the tail it searches from the end, only before it, across
// the line between the two, many times over (past maxForward), and not
// at all, in texts shorter and longer than the tail.
func TestLastIndexIsStrings(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gen := func(n int, alphabet string) string { return randomText(r, n, alphabet) }
	anchor := gen(anchorLen, "abcdefghij")
	check := func(s string) {
		t.Helper()
		if got, want := lastIndex(s, anchor), strings.LastIndex(s, anchor); got != want {
			t.Fatalf("lastIndex of %d bytes = %d, strings.LastIndex %d", len(s), got, want)
		}
	}
	for _, n := range []int{0, anchorLen, lastTail, lastTail + anchorLen - 1, lastTail + anchorLen, lastTail + anchorLen + 1, 3 * lastTail, 30000} {
		text := gen(n, "xyz")
		check(text)
		// One match at every kind of place: the start, just before the
		// tail, across its line, inside it, at the end.
		for _, at := range []int{0, n - lastTail - anchorLen, n - lastTail - anchorLen/2, n - lastTail, n - anchorLen, n / 2} {
			if at < 0 || at+anchorLen > n {
				continue
			}
			s := text[:at] + anchor + text[at+anchorLen:]
			check(s)
			// A second, earlier match.
			if at >= 2*anchorLen {
				check(anchor + s[anchorLen:])
			}
		}
		// The anchor over and over before the tail: past maxForward.
		if n >= lastTail+anchorLen {
			rep := strings.Repeat(anchor, (n-lastTail)/anchorLen)
			check(rep + text[len(rep):])
			check(text[:1] + rep[:len(rep)-1] + text[len(rep):])
		}
	}
	// Candidates that begin as the anchor does but are not it: a few
	// (checked whole) and more than maxForward (left to LastIndex), with
	// the match before, among and after them, and with none.
	near := anchor[:probeLen] + strings.Repeat("~", anchorLen-probeLen)
	for _, count := range []int{1, maxForward - 1, maxForward, maxForward + 1, 40} {
		decoys := strings.Repeat(near, count)
		pad := gen(2*lastTail, "xyz")
		for _, s := range []string{
			decoys + pad,
			anchor + decoys + pad,
			decoys + anchor + pad,
			decoys[:len(decoys)/2] + anchor + decoys[len(decoys)/2:] + pad,
			decoys + anchor[:anchorLen-1] + pad,
		} {
			check(s)
		}
	}
	// The anchor's first bytes at the start of the tail, and at the end
	// of what the forward search reads, with no match anywhere.
	for _, n := range []int{lastTail + anchorLen + 1, 2 * lastTail} {
		for _, at := range []int{n - lastTail - 1, n - lastTail, n - lastTail + 1, n - lastTail + anchorLen - probeLen} {
			text := []byte(gen(n, "xyz"))
			copy(text[at:], anchor[:probeLen])
			check(string(text))
		}
	}
	// A periodic anchor that matches at every period, and twice a
	// period apart (overlapping matches, fewer than maxForward).
	period := strings.Repeat("ab", anchorLen/2)
	for _, long := range []string{
		strings.Repeat("ab", 3*lastTail) + "c" + strings.Repeat("x", lastTail),
		strings.Repeat("x", 100) + period + "ab" + strings.Repeat("x", 2*lastTail),
	} {
		if got, want := lastIndex(long, period), strings.LastIndex(long, period); got != want {
			t.Fatalf("periodic: lastIndex %d, strings.LastIndex %d", got, want)
		}
	}
}
