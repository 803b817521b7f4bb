package accum

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// step is one move of a table test: apply an observation (or flush), then
// Take, and compare what Take returned.
type step struct {
	obs   Text
	flush bool // call Flush instead of Apply
	ok    bool // what Take must report
	want  Chunk
}

func delta(s string) Text  { return Text{Kind: Delta, Text: s} }
func snap(s string) Text   { return Text{Kind: Snapshot, Text: s} }
func window(s string) Text { return Text{Kind: Window, Text: s} }
func final(s string) Text  { return Text{Kind: Final, Text: s} }
func bdelta(s string) Text { return Text{Kind: Delta, Bytes: []byte(s)} }
func truncd(t Text) Text   { t.Truncated = true; return t }
func trimmed(t Text) Text  { t.TrimmedEnd = true; return t }
func roll(s string, lines, bytes int) Text {
	return Text{Kind: Delta, Text: s, Rolling: Rolling{Lines: lines, Bytes: bytes}}
}
func app(s string, total int64) Chunk {
	return Chunk{Text: s, TotalBytes: total}
}
func repl(s string, total int64) Chunk {
	return Chunk{Text: s, Replace: true, TotalBytes: total}
}
func trunc(c Chunk) Chunk { c.Truncated = true; return c }

var none = Chunk{}

// lines returns "line01\nline02\n..." for lines from..to-1.
func lines(from, to int) string {
	var sb strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&sb, "line%02d\n", i)
	}
	return sb.String()
}

// client is what a consumer of chunks holds.
type client struct{ text string }

func (c *client) apply(ch Chunk) {
	if ch.Replace {
		c.text = ch.Text
	} else {
		c.text += ch.Text
	}
}

// checkClient checks the invariant that ties a client to its Buffer: the
// client's bounded tail is the held text, and with no head ever dropped the
// client holds exactly the held text.
func checkClient(t *testing.T, b *Buffer, c *client) {
	t.Helper()
	held := string(b.held())
	if got := boundTail(c.text, b.limit); got != held {
		t.Fatalf("client tail %q, buffer holds %q", got, held)
	}
	if b.total == int64(len(held)) && c.text != held {
		t.Fatalf("nothing dropped, but client holds %q and buffer %q", c.text, held)
	}
	if !utf8.ValidString(held) || len(held) > b.limit {
		t.Fatalf("held text %q: valid %v, %d bytes over limit %d", held, utf8.ValidString(held), len(held), b.limit)
	}
}

func runSteps(t *testing.T, limit int, steps []step) *Buffer {
	t.Helper()
	b := NewBuffer(limit)
	var c client
	for i, s := range steps {
		if s.flush {
			b.Flush()
		} else {
			b.Apply(s.obs)
		}
		got, ok := b.Take()
		if ok != s.ok || got != s.want {
			t.Fatalf("step %d (%+v): Take() = %+v, %v; want %+v, %v", i, s.obs, got, ok, s.want, s.ok)
		}
		if ok {
			c.apply(got)
		}
		checkClient(t, b, &c)
	}
	return b
}

// ruleText is 70 bytes, 7 per line.
var ruleText = lines(0, 10)

// bufferRuleTests are observation sequences and what Take reports after
// each (also replayed by the state tests).
var bufferRuleTests = []struct {
	name  string
	limit int
	steps []step
}{
	{"deltas append", 100, []step{
		{obs: delta("ab"), ok: true, want: app("ab", 2)},
		{obs: delta("cd"), ok: true, want: app("cd", 4)},
		{obs: delta(""), ok: false, want: none},
	}},
	{"delta then equal final", 100, []step{
		{obs: delta("ab"), ok: true, want: app("ab", 2)},
		{obs: delta("cd"), ok: true, want: app("cd", 4)},
		{obs: final("abcd"), ok: false, want: none},
	}},
	{"delta then extending final", 100, []step{
		{obs: delta("ab"), ok: true, want: app("ab", 2)},
		{obs: final("abcdef"), ok: true, want: app("cdef", 6)},
	}},
	{"delta then different final", 100, []step{
		{obs: delta("ab"), ok: true, want: app("ab", 2)},
		{obs: delta("cd"), ok: true, want: app("cd", 4)},
		{obs: final("xyz"), ok: true, want: repl("xyz", 3)},
	}},
	{"cumulative snapshots then final", 100, []step{
		{obs: snap("a"), ok: true, want: app("a", 1)},
		{obs: snap("ab"), ok: true, want: app("b", 2)},
		{obs: snap("ab"), ok: false, want: none},
		{obs: snap("abc"), ok: true, want: app("c", 3)},
		{obs: final("abc"), ok: false, want: none},
		{obs: final("abcd"), ok: true, want: app("d", 4)},
	}},
	{"shorter snapshot replaces", 100, []step{
		{obs: snap("abc"), ok: true, want: app("abc", 3)},
		{obs: snap("ab"), ok: true, want: repl("ab", 2)},
	}},
	{"rewritten snapshot replaces", 100, []step{
		{obs: snap("abc"), ok: true, want: app("abc", 3)},
		{obs: snap("xbcd"), ok: true, want: repl("xbcd", 4)},
	}},
	{"empty snapshot clears", 100, []step{
		{obs: snap("abc"), ok: true, want: app("abc", 3)},
		{obs: snap(""), ok: true, want: repl("", 0)},
		{obs: snap(""), ok: false, want: none},
		{obs: delta("x"), ok: true, want: app("x", 1)},
	}},
	{"empty first observation is reported once", 100, []step{
		{obs: snap(""), ok: true, want: app("", 0)},
		{obs: delta(""), ok: false, want: none},
		{obs: window(""), ok: false, want: none},
	}},
	{"windows slide then final", 100, []step{
		{obs: window(ruleText[:35]), ok: true, want: app(ruleText[:35], 35)},
		{obs: window(ruleText[14:49]), ok: true, want: app(ruleText[35:49], 49)},
		{obs: window(ruleText[21:49]), ok: false, want: none}, // already at the end
		{obs: window(ruleText[28:63]), ok: true, want: app(ruleText[49:63], 63)},
		{obs: final(ruleText), ok: true, want: app(ruleText[63:], 70)},
		{obs: final(ruleText), ok: false, want: none},
	}},
	{"window then longer final", 100, []step{
		{obs: window(ruleText[:35]), ok: true, want: app(ruleText[:35], 35)},
		{obs: window(ruleText[14:49]), ok: true, want: app(ruleText[35:49], 49)},
		{obs: final(ruleText), ok: true, want: app(ruleText[49:], 70)},
	}},
	{"window extending all that was seen", 100, []step{
		{obs: delta("ab"), ok: true, want: app("ab", 2)},
		{obs: window("abcd"), ok: true, want: app("cd", 4)},
	}},
	{"window with no overlap replaces", 100, []step{
		{obs: window(ruleText[:21]), ok: true, want: app(ruleText[:21], 21)},
		{obs: truncd(window(ruleText[42:63])), ok: true, want: trunc(repl(ruleText[42:63], 21))},
	}},
	{"short false overlap replaces", 100, []step{
		{obs: delta("0123456789abc\n"), ok: true, want: app("0123456789abc\n", 14)},
		{obs: window("\nxyz"), ok: true, want: repl("\nxyz", 4)},
	}},
	{"window longer than the limit contains the held tail", 20, []step{
		{obs: window(ruleText[:35]), ok: true, want: trunc(repl(ruleText[15:35], 35))},
		{obs: window(ruleText[7:42]), ok: true, want: trunc(app(ruleText[35:42], 42))},
		{obs: window(ruleText[14:56]), ok: true, want: trunc(app(ruleText[42:56], 56))},
		{obs: window(ruleText[21:56]), ok: false, want: none},
	}},
	{"window matching a repeated tail appends the least", 100, []step{
		{obs: delta(strings.Repeat("ab", 20)), ok: true, want: app(strings.Repeat("ab", 20), 40)},
		{obs: window(strings.Repeat("ab", 10) + "X"), ok: true, want: app("X", 41)},
	}},
	{"window containing a repeated held tail appends the least", 20, []step{
		{obs: delta(strings.Repeat("ab", 30)), ok: true, want: trunc(repl(strings.Repeat("ab", 10), 60))},
		{obs: window(strings.Repeat("ab", 15) + "X"), ok: true, want: trunc(app("X", 61))},
	}},
	{"window cannot start before the text does", 100, []step{
		{obs: delta(strings.Repeat("ab", 10)), ok: true, want: app(strings.Repeat("ab", 10), 20)},
		{obs: window(strings.Repeat("ab", 12) + "X"), ok: true, want: app("ababX", 25)},
	}},
	{"overlapping window keeps producer truncation", 100, []step{
		{obs: truncd(window(ruleText[14:49])), ok: true, want: trunc(app(ruleText[14:49], 35))},
		{obs: window(ruleText[21:56]), ok: true, want: trunc(app(ruleText[49:56], 42))},
		{obs: snap(ruleText[14:56]), ok: true, want: app("", 42)}, // an untruncated snapshot clears it
	}},
	{"producer truncation alone is a change", 100, []step{
		{obs: delta("ab"), ok: true, want: app("ab", 2)},
		{obs: truncd(delta("")), ok: true, want: trunc(app("", 2))},
		{obs: delta("c"), ok: true, want: trunc(app("c", 3))},
		{obs: truncd(snap("abc")), ok: false, want: none},
		{obs: snap("abc"), ok: true, want: app("", 3)},
	}},
	{"split multibyte across byte deltas, then invalid", 100, []step{
		{obs: bdelta("a\xe2"), ok: true, want: app("a", 1)},
		{obs: bdelta("\x82"), ok: false, want: none},
		{obs: bdelta("\xacb"), ok: true, want: app("€b", 5)},
		{obs: bdelta("\xf0\x9f"), ok: false, want: none},
		{obs: bdelta("\x98\x80\xff"), ok: true, want: app("😀\uFFFD", 12)},
		{obs: bdelta("c\xe2\x82"), ok: true, want: app("c", 13)},
		{flush: true, ok: true, want: app("\uFFFD\uFFFD", 19)},
		{flush: true, ok: false, want: none},
	}},
	{"incomplete sequence broken by the next delta", 100, []step{
		{obs: bdelta("\xe2"), ok: true, want: app("", 0)},
		{obs: bdelta("x"), ok: true, want: app("\uFFFDx", 4)},
	}},
	{"string delta flushes held-back bytes", 100, []step{
		{obs: bdelta("\xe2\x82"), ok: true, want: app("", 0)},
		{obs: delta("€"), ok: true, want: app("\uFFFD\uFFFD€", 9)},
	}},
	{"snapshot drops held-back bytes", 100, []step{
		{obs: bdelta("a\xe2\x82"), ok: true, want: app("a", 1)},
		{obs: snap("a€"), ok: true, want: app("€", 4)},
		{obs: bdelta("b"), ok: true, want: app("b", 5)},
	}},
	{"byte snapshot decoded whole", 100, []step{
		{obs: Text{Kind: Snapshot, Bytes: []byte("a\xe2\x82\xac\xe2")}, ok: true, want: app("a€\uFFFD", 7)},
	}},
	{"invalid string becomes one U+FFFD per byte", 100, []step{
		{obs: delta("a\xe2\x82b\xff"), ok: true, want: app("a\uFFFD\uFFFDb\uFFFD", 11)},
	}},
	{"bound crossed mid-rune", 5, []step{
		{obs: delta("a"), ok: true, want: app("a", 1)},
		{obs: delta("é"), ok: true, want: app("é", 3)},
		{obs: delta("€"), ok: true, want: trunc(app("€", 6))},    // keeps "é€"
		{obs: delta("😀"), ok: true, want: trunc(app("😀", 10))},   // "€😀" is 7 bytes: keeps "😀"
		{obs: delta("a"), ok: true, want: trunc(app("a", 11))},   // keeps "😀a"
		{obs: delta("bc"), ok: true, want: trunc(app("bc", 13))}, // drops the 4-byte rune whole: "abc"
	}},
	{"one delta over the bound", 5, []step{
		{obs: delta("aé€😀"), ok: true, want: trunc(repl("😀", 10))},
		{obs: delta("é€"), ok: true, want: trunc(app("é€", 15))},
	}},
	{"appended more than kept between takes", 6, []step{
		{obs: delta("abc"), ok: true, want: app("abc", 3)},
		{obs: snap("abcdefghij"), ok: true, want: trunc(repl("efghij", 10))},
	}},
	{"snapshot after head dropped", 8, []step{
		{obs: snap("0123456789"), ok: true, want: trunc(repl("23456789", 10))},
		{obs: snap("0123456789AB"), ok: true, want: trunc(app("AB", 12))},
		// Only the held tail is compared: a head that was dropped is
		// taken to match.
		{obs: snap("xxxx456789ABC"), ok: true, want: trunc(app("C", 13))},
		{obs: snap("0123456789ABX"), ok: true, want: trunc(repl("56789ABX", 13))},
		{obs: snap("0123456789ABX"), ok: false, want: none},
		{obs: snap("56789ABX"), ok: true, want: repl("56789ABX", 8)},
	}},
	{"unknown kind is a delta", 100, []step{
		{obs: Text{Text: "ab"}, ok: true, want: app("ab", 2)},
		{obs: Text{Kind: 99, Text: "c"}, ok: true, want: app("c", 3)},
	}},
	// A rolling producer of at most 3 lines: a delta that would make its
	// text longer is its whole new text, a tail window.
	{"rolling deltas continue within the bounds", 100, []step{
		{obs: roll("a\n", 3, 0), ok: true, want: app("a\n", 2)},
		{obs: roll("b\nc\n", 3, 0), ok: true, want: app("b\nc\n", 6)},
	}},
	{"rolling restart that overlaps appends only the new lines", 100, []step{
		{obs: roll(lines(1, 5), 4, 0), ok: true, want: app(lines(1, 5), 28)},
		{obs: roll(lines(2, 6), 4, 0), ok: true, want: app("line05\n", 35)},
		// Its text is now lines 2 to 5: one more line is a restart again.
		{obs: roll(lines(3, 7), 4, 0), ok: true, want: app("line06\n", 42)},
	}},
	{"rolling restart past what is held replaces, truncated", 100, []step{
		{obs: roll("line1\nline2\n", 3, 0), ok: true, want: app("line1\nline2\n", 12)},
		{obs: roll("line7\nline8\nline9\n", 3, 0), ok: true, want: trunc(repl("line7\nline8\nline9\n", 18))},
		// A continuation of the restarted text is a delta again.
		{obs: roll("", 3, 0), ok: false, want: none},
	}},
	{"rolling restart by bytes", 100, []step{
		{obs: roll("abcdefghijklmnop", 0, 20), ok: true, want: app("abcdefghijklmnop", 16)},
		{obs: roll("qrst", 0, 20), ok: true, want: app("qrst", 20)},
		{obs: roll("bcdefghijklmnopqrstu", 0, 20), ok: true, want: app("u", 21)},
		{obs: roll("XYZ", 0, 20), ok: true, want: trunc(repl("XYZ", 3))},
	}},
	{"rolling first text is appended whatever its size", 100, []step{
		{obs: roll("a\nb\nc\nd\n", 3, 0), ok: true, want: app("a\nb\nc\nd\n", 8)},
	}},
	{"trimmed restatement keeps the held final newline", 100, []step{
		{obs: snap("after\n"), ok: true, want: app("after\n", 6)},
		{obs: trimmed(final("after")), ok: false, want: none},
	}},
	{"trimmed restatement that adds text gets the held ending", 100, []step{
		{obs: snap("ab\n"), ok: true, want: app("ab\n", 3)},
		{obs: trimmed(final("xab")), ok: true, want: repl("xab\n", 4)},
	}},
	{"trimmed restatement of other text replaces as it is", 100, []step{
		{obs: snap("ab\n"), ok: true, want: app("ab\n", 3)},
		{obs: trimmed(final("cd")), ok: true, want: repl("cd", 2)},
	}},
	{"limit clamped to one rune", 0, []step{
		{obs: delta("😀"), ok: true, want: app("😀", 4)},
		{obs: delta("é"), ok: true, want: trunc(app("é", 6))},
	}},
}

func TestBufferRules(t *testing.T) {
	for _, tt := range bufferRuleTests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.limit, tt.steps) })
	}
}

func TestBufferFinalWithoutOutputKeepsText(t *testing.T) {
	b := NewBuffer(100)
	b.Apply(delta("hello\n"))
	b.Take()
	// The final frame carried no output, so nothing is applied; the text
	// the deltas built stays and Whole reports it.
	if c, ok := b.Take(); ok {
		t.Fatalf("Take() = %+v, want nothing", c)
	}
	want := Chunk{Text: "hello\n", Replace: true, TotalBytes: 6}
	if got := b.Whole(); got != want {
		t.Fatalf("Whole() = %+v, want %+v", got, want)
	}
	if c, ok := b.Take(); ok {
		t.Fatalf("Take() after Whole = %+v, want nothing", c)
	}
}

func TestBufferSeen(t *testing.T) {
	b := NewBuffer(10)
	if b.seen {
		t.Fatal("new Buffer is Seen")
	}
	if c, ok := b.Take(); ok {
		t.Fatalf("Take() on a new Buffer = %+v", c)
	}
	b.Apply(delta(""))
	if !b.seen {
		t.Fatal("Buffer is not Seen after an empty Apply")
	}
}

func TestBufferWholeMarksTaken(t *testing.T) {
	b := NewBuffer(100)
	b.Apply(delta("ab"))
	if got, want := b.Whole(), (Chunk{Text: "ab", Replace: true, TotalBytes: 2}); got != want {
		t.Fatalf("Whole() = %+v, want %+v", got, want)
	}
	if c, ok := b.Take(); ok {
		t.Fatalf("Take() after Whole = %+v", c)
	}
	b.Apply(delta("c"))
	if got, ok := b.Take(); !ok || got != app("c", 3) {
		t.Fatalf("Take() = %+v, %v", got, ok)
	}
}

// TestBufferMemoryBounded feeds far more than the limit in many shapes and
// checks that the backing array never outgrows its cap.
func TestBufferMemoryBounded(t *testing.T) {
	for _, limit := range []int{4, 5, 64, 1000} {
		b := NewBuffer(limit)
		var whole strings.Builder
		for i := range 5000 {
			s := strings.Repeat("é", i%7) + strings.Repeat("x", i%(limit+3))
			whole.WriteString(s)
			b.Apply(delta(s))
			if i%3 == 0 {
				b.Take()
			}
			if cap(b.data) > b.maxCap() || len(b.held()) > limit {
				t.Fatalf("limit %d: cap %d > %d or held %d bytes", limit, cap(b.data), b.maxCap(), len(b.held()))
			}
		}
		if got, want := string(b.held()), boundTail(whole.String(), limit); got != want {
			t.Fatalf("limit %d: held %q, want %q", limit, got, want)
		}
	}
}

// TestBufferCumulativeEmitsDeltas checks the cost promise: 1 MiB delivered
// as 1,000 cumulative snapshots is emitted as about 1 MiB of chunks.
func TestBufferCumulativeEmitsDeltas(t *testing.T) {
	const total = 1 << 20
	out := benchText(total)
	b := NewBuffer(256 << 10)
	var emitted int
	for i := 1; i <= 1000; i++ {
		b.Apply(snap(out[:total*i/1000]))
		c, ok := b.Take()
		if !ok || c.Replace {
			t.Fatalf("snapshot %d: Take() = replace %v, ok %v", i, c.Replace, ok)
		}
		emitted += len(c.Text)
	}
	if emitted != total {
		t.Fatalf("emitted %d bytes for %d bytes of output", emitted, total)
	}
}

func TestIncompleteTail(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"a\xe2", 1},
		{"a\xe2\x82", 1},
		{"a\xe2\x82\xac", 4},
		{"\xf0\x9f\x98", 0},
		{"\xf0\x9f\x98\x80", 4},
		{"a\xff", 2},     // never valid: decoded now
		{"a\x82", 2},     // a stray continuation byte
		{"\xed\xa0", 2},  // a surrogate prefix can never complete
		{"\xe2\x82x", 3}, // broken already
	}
	for _, tt := range tests {
		if got := incompleteTail([]byte(tt.in)); got != tt.want {
			t.Errorf("incompleteTail(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestBoundTail(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 5, "bcdef"},
		{"aé€😀", 5, "😀"},
		{"aé€😀", 7, "€😀"},
		{"aé€", 5, "é€"},
		{"😀😀", 7, "😀"},
	}
	for _, tt := range tests {
		if got := boundTail(tt.in, tt.limit); got != tt.want {
			t.Errorf("boundTail(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
}

// TestBufferCutShortRestatement: a restatement the producer cut short
// never replaces more text that already holds it (its beginning, its end,
// or a Head preview); one with anything new in it replaces.
func TestBufferCutShortRestatement(t *testing.T) {
	for _, tc := range []struct {
		name string
		next Text
		want string
	}{
		{"head preview of what is held", Text{Kind: Final, Text: "abc", Truncated: true}, "abcdef"},
		{"tail already held", Text{Kind: Snapshot, Text: "def", Truncated: true}, "abcdef"},
		{"marked head, not comparable", Text{Kind: Final, Text: "xyz", Truncated: true, Head: true}, "abcdef"},
		{"cut short but new", Text{Kind: Snapshot, Text: "efg", Truncated: true}, "efg"},
		{"not cut short: replaces", Text{Kind: Snapshot, Text: "abc"}, "abc"},
	} {
		b := NewBuffer(1024)
		b.Apply(Text{Kind: Snapshot, Text: "abcdef"})
		b.Apply(tc.next)
		if got := b.Whole().Text; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestBufferValidTextNotChanged: a text its producer checked (Valid) is
// held as it is, and folds as the same text unchecked does.
func TestBufferValidTextNotChanged(t *testing.T) {
	for _, k := range []TextKind{Delta, Snapshot, Window, Final} {
		checked, unchecked := NewBuffer(64), NewBuffer(64)
		for _, s := range []string{"a\u00e9\u4e16\U0001F600\n", "a\u00e9\u4e16\U0001F600\nmore \u00e9"} {
			checked.Apply(Text{Kind: k, Text: s, Valid: true})
			unchecked.Apply(Text{Kind: k, Text: s})
		}
		if c, u := checked.Whole(), unchecked.Whole(); c != u {
			t.Errorf("kind %d: checked %+v, unchecked %+v", k, c, u)
		}
	}
}
