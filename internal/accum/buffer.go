package accum

import (
	"bytes"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"
	"weak"
)

// minLimit is the smallest bound a Buffer accepts: any one rune fits in it,
// so a non-empty text never bounds to nothing.
const minLimit = utf8.UTFMax

// minOverlap is the shortest overlap between what a Buffer holds and a
// Window that is trusted on its length alone. A shorter overlap is trusted
// only when it spans everything the Buffer ever saw or the whole Window;
// otherwise (an "\n" that happens to end one text and start the next, say)
// the Window replaces.
const minOverlap = 16

// Buffer holds one bounded text stream of one tool call.
//
// It folds Text observations of every kind into one logical text: the whole
// output of the stream as far as the observations tell it. It keeps only the
// most recent tail of that text, at most limit bytes cut on a rune boundary,
// plus the length of the whole. Take reports what changed since the previous
// Take as a Chunk that a client applies to its own copy.
//
// Rules, by kind:
//
//   - Delta appends.
//   - Snapshot and Final state the whole output. When one extends the logical
//     text (its bytes at the place of the held tail equal the held tail), only
//     its new suffix is appended; otherwise it replaces. Only the held tail
//     is compared: a head already dropped is taken to match. An empty one
//     replaces a non-empty text with "".
//   - Window is the most recent tail of the whole output. It is aligned with
//     the held text by overlap (see applyWindow) and only the part after the
//     overlap is appended; with no meaningful overlap it replaces. An empty
//     Window says nothing new.
//
// Text is made valid UTF-8 before it is used: every byte that does not start
// a valid encoding becomes one U+FFFD, exactly as a Go range loop over the
// string decodes it. Byte Deltas (Text.Bytes != nil) are decoded as one
// byte stream: an incomplete sequence at the end of one is held back (at most
// three bytes) until the next byte Delta completes it, or until Flush, a
// string Delta, or any other kind ends the byte run. Flush and a string Delta
// turn the held-back bytes into U+FFFD; Snapshot, Window and Final drop them,
// since they restate the output.
//
// A replace makes the observed text the whole logical text, so TotalBytes
// becomes its length (and may fall); otherwise TotalBytes grows by exactly
// what is appended. A producer's statement of the real size
// (Text.TotalBytes) raises TotalBytes to at least that and marks the text
// truncated while less is known.
//
// Truncation: Chunk.Truncated is true when the logical text is longer than
// what is kept, or when the producer said it dropped output. The producer's
// flag is sticky across Deltas and overlapping Windows. Snapshot and Final
// describe the whole output, so they set it to their own flag (an untruncated
// Snapshot that fits clears it). A Window that replaces sets it to its own
// flag; a Window that overlaps leaves it alone, since the overlap shows that
// the part the producer dropped is already held.
//
// Cost: an observation is read once to check that it is valid UTF-8 (a
// linear scan that copies nothing when it is), unless its producer says
// it checked that already (Text.Valid); beyond that the work is
// O(len(new text) + limit), never O(history), and only the held tail is
// compared with a Snapshot; not even that when the Snapshot starts in the
// memory of the last one applied (a reader that hands out each snapshot
// of a cumulative output as the previous one's bytes and new ones), since
// a string's bytes never change. Memory is the held text in a backing
// array of at most 1.5×limit bytes; aligning a Window usually needs no
// memory (see alignWindow), else a table of at most limit int32s,
// recycled through a pool.
//
// The zero Buffer is not usable; call NewBuffer. A Buffer is not safe for
// concurrent use.
type Buffer struct {
	limit int

	// data[off:] is the held text: valid UTF-8, at most limit bytes, the
	// bounded tail of the logical text. cap(data) never exceeds maxCap().
	data []byte
	off  int
	// total is the length of the logical text in bytes.
	total int64
	// carry holds the incomplete UTF-8 sequence that ended the last byte
	// Delta.
	carry  [utf8.UTFMax - 1]byte
	ncarry int

	producerTrunc bool
	seen          bool
	// rollFrom is where, in the logical text, the text of a rolling
	// producer (Text.Rolling) began: its text is the logical text from
	// there on. A replace resets it to 0.
	rollFrom int64
	// claimed is the size the producer said the whole output has
	// (Text.TotalBytes); TotalBytes reports at least that.
	claimed int64

	// Take bookkeeping: what the client has not been told yet.
	reported       bool  // some chunk was taken since the Buffer was made
	reportedTrunc  bool  // the Truncated value of the last chunk taken
	pendingReplace bool  // the held text was replaced since the last chunk
	pendingAppend  int64 // bytes appended since the last chunk

	// Sync bookkeeping (see Call.TakeSync): what the stored copy of the
	// held text has not been told yet, and how long that copy is.
	syncReplace bool  // the held text was replaced since the last Sync
	syncAppend  int64 // bytes appended since the last Sync
	stored      int64 // length of the stored stream

	// whole is where the last Snapshot or Final that was applied starts
	// in memory, and wholeLen its length, while the logical text is that
	// text (nothing was appended or replaced since); wholeLen is 0
	// otherwise. See applyWhole. A weak pointer: it keeps no text alive.
	whole    weak.Pointer[byte]
	wholeLen int
}

// Chunk is what a Buffer reports to its client.
type Chunk struct {
	// Text is valid UTF-8: the text appended since the previous chunk, or,
	// when Replace is true, the whole bounded text.
	Text string
	// Replace says Text replaces what the client holds instead of extending
	// it.
	Replace bool
	// Truncated is true when the logical text is longer than what is kept,
	// or when the producer said it dropped output.
	Truncated bool
	// TotalBytes is the length in UTF-8 bytes of the logical text, before
	// bounding.
	TotalBytes int64
}

// NewBuffer returns a Buffer keeping at most limit bytes of the most recent
// text. A limit below 4 is raised to 4, so that any single rune fits.
func NewBuffer(limit int) *Buffer {
	return &Buffer{limit: max(limit, minLimit)}
}

// Apply folds one observation into the Buffer: t.Kind, t.Text or t.Bytes and
// t.Truncated are used; t.Stream is ignored. An observation of an unknown
// kind is taken as a Delta. See Buffer for the rules.
func (b *Buffer) Apply(t Text) { b.apply(t, false) }

// apply is Apply; with addOnly, t may only add to what is held: a
// Snapshot or a Final that does not start with the whole logical text,
// and a Window (or a rolling producer's new text) that overlaps nothing
// held, are ignored instead of replacing it (see Call.Apply).
func (b *Buffer) apply(t Text, addOnly bool) {
	b.seen = true
	b.claimed = max(b.claimed, t.TotalBytes)
	if t.Bytes != nil && (t.Kind == Delta || !knownKind(t.Kind)) {
		b.applyDeltaBytes(t.Bytes)
		b.producerTrunc = b.producerTrunc || t.Truncated
		return
	}
	var s string
	switch {
	case t.Bytes != nil:
		s = validBytes(t.Bytes)
	case t.Valid:
		s = t.Text // checked by its producer: a snapshot is not read twice
	default:
		s = validString(t.Text)
	}
	switch t.Kind {
	case Snapshot, Final:
		b.ncarry = 0
		if t.TrimmedEnd {
			s = b.restoreEnd(s)
		}
		if addOnly && !b.extendedBy(s) {
			return
		}
		b.applyWhole(s, t.Truncated, t.Head)
	case Window:
		b.ncarry = 0
		b.applyWindow(s, t.Truncated, addOnly)
	default: // Delta, or a kind this package does not know
		b.Flush()
		if t.Rolling != (Rolling{}) && b.restarts(s, t.Rolling) {
			// The producer's whole new text: a tail of the output that
			// no longer extends what it sent before.
			if b.applyWindow(s, true, addOnly) {
				b.rollFrom = b.total - int64(len(s))
			}
			return
		}
		b.appendText(s)
		b.total += max(t.Unheld, 0)
		b.producerTrunc = b.producerTrunc || t.Truncated
	}
}

// restarts says whether s, a Delta from a rolling producer with bounds r,
// is its whole new text rather than a continuation: appended, the
// producer's text (the logical text since rollFrom) would be longer than
// r allows, which it never is. An empty or first text is a continuation.
// Only the held text can be counted: a producer text longer than what is
// held is measured in bytes exactly and in lines by what is held.
func (b *Buffer) restarts(s string, r Rolling) bool {
	p := b.total - b.rollFrom
	if p <= 0 || s == "" {
		return false
	}
	if r.Bytes > 0 && p+int64(len(s)) > int64(r.Bytes) {
		return true
	}
	if r.Lines <= 0 {
		return false
	}
	held := b.held()
	prev := held[len(held)-int(min(p, int64(len(held)))):]
	lines := bytes.Count(prev, nl) + strings.Count(s, "\n")
	if s[len(s)-1] != '\n' {
		lines++
	}
	return lines > r.Lines
}

var nl = []byte{'\n'}

// restoreEnd gives s, a restatement that may have lost the whitespace
// that ended the output (Text.TrimmedEnd), the trailing whitespace of the
// held text when s, trimmed, ends with the held text, trimmed.
func (b *Buffer) restoreEnd(s string) string {
	held := b.held()
	core := bytes.TrimRight(held, trailingSpace)
	if len(core) == 0 || len(core) == len(held) {
		return s
	}
	trimmed := strings.TrimRight(s, trailingSpace)
	if !strings.HasSuffix(trimmed, string(core)) {
		return s
	}
	return trimmed + string(held[len(core):])
}

// trailingSpace is the whitespace a producer may trim from the end of an
// output.
const trailingSpace = " \t\r\n"

// Take returns what changed since the previous Take or Whole: the appended
// text (Replace false), or the whole bounded text (Replace true) when the
// held text was replaced or when more was appended than is kept. ok is false
// when nothing changed: no new text, no replacement, no change of Truncated,
// and the stream was already reported once since it was first seen (the
// first Take after the first observation is ok even when the text is empty).
//
// A client that starts empty and applies every chunk in order holds a text
// whose bounded tail equals Whole().Text; when no head was ever dropped
// (TotalBytes equals the length of the kept text) it holds exactly that text.
func (b *Buffer) Take() (c Chunk, ok bool) {
	if !b.seen {
		return Chunk{}, false
	}
	held := b.held()
	trunc := b.truncated()
	if b.reported && !b.pendingReplace && b.pendingAppend == 0 && trunc == b.reportedTrunc {
		return Chunk{}, false
	}
	if b.pendingReplace || b.pendingAppend > int64(len(held)) {
		return b.Whole(), true
	}
	c = Chunk{
		Text:       b.heldText(len(held) - int(b.pendingAppend)),
		Truncated:  trunc,
		TotalBytes: b.totalBytes(),
	}
	b.markTaken(trunc)
	return c, true
}

// Whole returns the whole bounded text with Replace set, and marks
// everything as taken.
func (b *Buffer) Whole() Chunk {
	trunc := b.truncated()
	c := Chunk{
		Text:       b.heldText(0),
		Replace:    true,
		Truncated:  trunc,
		TotalBytes: b.totalBytes(),
	}
	b.markTaken(trunc)
	return c
}

// heldText returns the held text from byte from on as a string. When the
// held text is the whole of the Snapshot or Final applied last (nothing
// appended or dropped since) and that string is still in memory, it is
// that string's, whose bytes never change (see applyWhole): a big output
// that comes whole is then not copied once more for its chunk. Such a
// chunk keeps the string's memory alive while it is held (the service
// marshals and drops it at once), so it shares it only when it is at least
// half of the string.
func (b *Buffer) heldText(from int) string {
	held := b.held()
	if n := b.wholeLen; n > 0 && n == len(held) && int64(n) == b.total && 2*(n-from) >= n {
		if p := b.whole.Value(); p != nil {
			return unsafe.String(p, n)[from:]
		}
	}
	return string(held[from:])
}

// totalBytes is the size of the logical text, or the size the producer
// said the whole output has when that is more.
func (b *Buffer) totalBytes() int64 { return max(b.total, b.claimed) }

// Flush ends byte input: the bytes of a UTF-8 sequence left incomplete by
// the last byte Delta become U+FFFD, one per byte, and are appended.
func (b *Buffer) Flush() {
	if b.ncarry == 0 {
		return
	}
	s := validBytes(b.carry[:b.ncarry])
	b.ncarry = 0
	b.appendText(s)
}

func knownKind(k TextKind) bool { return k >= Delta && k <= Final }

// held is the kept tail of the logical text. It aliases the Buffer.
func (b *Buffer) held() []byte { return b.data[b.off:] }

func (b *Buffer) truncated() bool {
	return b.producerTrunc || b.claimed > b.total || b.total > int64(len(b.data)-b.off)
}

func (b *Buffer) markTaken(trunc bool) {
	b.reported = true
	b.reportedTrunc = trunc
	b.pendingReplace = false
	b.pendingAppend = 0
}

// applyDeltaBytes decodes p as the continuation of the byte stream, holding
// back an incomplete sequence at its end.
func (b *Buffer) applyDeltaBytes(p []byte) {
	if b.ncarry > 0 {
		joined := make([]byte, 0, b.ncarry+len(p))
		joined = append(joined, b.carry[:b.ncarry]...)
		p = append(joined, p...)
		b.ncarry = 0
	}
	cut := incompleteTail(p)
	b.appendText(validBytes(p[:cut]))
	b.ncarry = copy(b.carry[:], p[cut:])
}

// incompleteTail returns where a UTF-8 sequence that p ends in the middle
// of starts, or len(p) when p ends on a complete rune or on bytes that can
// never become one. Such a sequence is at most three bytes long.
func incompleteTail(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return i
			}
			break
		}
	}
	return len(p)
}

// applyWhole folds a Snapshot or a Final. s extends the logical text when
// it is at least as long and holds the kept tail at the same place; only the
// kept tail is compared, so a head that was dropped is assumed to match.
//
// A restatement the producer itself cut short (trunc) that is shorter than
// the logical text, and that the held text already holds (its beginning,
// when no head was dropped, or its end), or that is a Head, never replaces
// more text (a later frame never makes what is known worse). A cut-short
// text with anything new in it replaces as before.
func (b *Buffer) applyWhole(s string, trunc, head bool) {
	held := b.held()
	var at weak.Pointer[byte]
	if len(held) >= sameMemoryMin && s != "" {
		at = weak.Make(unsafe.StringData(s))
		if b.wholeLen > 0 && int64(b.wholeLen) == b.total && len(s) >= b.wholeLen && at == b.whole {
			// s starts with the very bytes of the last whole text (the
			// same memory, and a string's bytes never change), which is
			// the logical text: it extends it, as the comparison below
			// would find, without reading the held tail again.
			b.appendText(s[b.wholeLen:])
			b.producerTrunc = trunc
			b.whole, b.wholeLen = at, len(s)
			return
		}
	}
	if trunc && int64(len(s)) < b.total {
		// Compared in place: string(held[...]) == s copies nothing.
		h, n := len(held), len(s)
		whole := int64(h) == b.total
		if head || n <= h && (string(held[h-n:]) == s || whole && string(held[:n]) == s) {
			return
		}
	}
	tot := int(b.total)
	if len(s) >= tot && s[tot-len(held):tot] == string(held) {
		b.appendText(s[tot:])
	} else {
		b.replace(s)
	}
	b.producerTrunc = trunc
	if len(b.held()) >= sameMemoryMin {
		if at == (weak.Pointer[byte]{}) {
			at = weak.Make(unsafe.StringData(s))
		}
		b.whole, b.wholeLen = at, len(s)
	}
}

// sameMemoryMin is the least held text for which applyWhole looks at
// where a whole text is in memory: a cumulative output's reader hands
// each snapshot out as the previous one's bytes followed by new ones
// (jsonlit's memo), and for those the held tail need not be compared
// again. Below it the comparison costs less than making the weak pointer.
const sameMemoryMin = 32 << 10

// applyWindow folds a Window w: the most recent tail of the whole output.
//
// Picture w laid over the logical text L so that L ends at offset d of w;
// then w[d:] is new. An alignment is valid when w and the held tail agree
// where they overlap, and when w does not start before L does (d <= total).
// Of the valid alignments the one with the longest overlap is chosen, and of
// those the one with the largest d (the least new text, so nothing is
// appended twice). Two shapes occur:
//
//   - d >= len(held): the whole held tail occurs in w, ending at d (the
//     producer keeps more than this Buffer does);
//   - d < len(held): the held tail ends with w[:d] (w starts inside what is
//     held; d == len(w) means w is already at the end of what is held).
//
// The overlap must be meaningful: as long as everything seen (the Window
// extends the whole logical text), as long as w, or at least minOverlap
// bytes. Otherwise, or with no valid alignment, w replaces. Both searches
// are Knuth-Morris-Pratt scans, O(len(w) + limit).
// With addOnly, a w that overlaps nothing is ignored; applied is false
// then.
func (b *Buffer) applyWindow(w string, trunc, addOnly bool) (applied bool) {
	if b.total == 0 {
		b.appendText(w)
		b.producerTrunc = b.producerTrunc || trunc
		return true
	}
	if d, ok := b.alignWindow(w); ok {
		b.appendText(w[d:])
		return true
	}
	if addOnly {
		return false
	}
	b.replace(w)
	b.producerTrunc = trunc
	return true
}

// extendedBy says whether the whole text s starts with the logical text,
// as far as it is held: applyWhole would only append to it.
func (b *Buffer) extendedBy(s string) bool {
	held, tot := b.held(), int(b.total)
	return len(s) >= tot && s[tot-len(held):tot] == string(held)
}

// alignWindow returns where the logical text ends in w (see applyWindow).
// It must not be called on an empty Buffer.
//
// A producer that slides its window over a growing output sends windows
// that overlap what is held in all but their last few bytes, so the
// alignment is nearly always found by looking for the last bytes of the
// held text near the end of w and comparing once (alignAnchored). Only when
// that is not conclusive (periodic text, where the anchor recurs many
// times) do the Knuth-Morris-Pratt scans run (alignKMP). Both give the same
// alignment.
func (b *Buffer) alignWindow(w string) (d int, ok bool) {
	if w == "" {
		return 0, true
	}
	if d, ok, sure := b.alignAnchored(w); sure {
		return d, ok
	}
	return b.alignKMP(w)
}

// meaningful says whether an overlap of k bytes with a window of n bytes
// is long enough to trust (see applyWindow).
func (b *Buffer) meaningful(k, n int) bool {
	return int64(k) == b.total || k == n || k >= minOverlap
}

// anchorLen is the length of the held tail that alignAnchored looks for in
// a window, and maxAnchorTries the number of its occurrences it checks
// before it leaves the search to alignKMP.
const (
	anchorLen      = 64
	maxAnchorTries = 4
)

// alignAnchored finds the alignment that alignKMP finds, without tables,
// when it can: sure is false when it could not decide.
//
// Every alignment of either shape ends with the last anchorLen held bytes
// (the anchor) at some offset of w, when the overlap is at least that
// long. Occurrences of the anchor are tried from the right, so the first
// that checks out is the one alignKMP picks: the last occurrence of the
// whole held tail, or the longest prefix of w that the held tail ends with.
func (b *Buffer) alignAnchored(w string) (d int, ok, sure bool) {
	held := b.held()
	h := len(held)
	if h < anchorLen || len(w) < anchorLen {
		return 0, false, false
	}
	anchor := string(held[h-anchorLen:])
	// nowhere says the first shape's search found no occurrence of the
	// anchor in w[:min(len(w), total)], which holds w[:m] of the second
	// shape's (h <= total): that one is then not searched again, so a
	// window that does not overlap what is held is searched once.
	nowhere := false
	if len(w) >= h {
		// The held tail occurs in w, ending at d <= total.
		hi := min(int64(len(w)), b.total)
		none := false
		for try := range maxAnchorTries {
			i := lastIndex(w[:hi], anchor)
			if i < 0 {
				none = true // no occurrence: try the other shape
				nowhere = try == 0
				break
			}
			if end := i + anchorLen; end >= h && w[end-h:end] == string(held) {
				return end, b.meaningful(h, len(w)), true
			}
			hi = int64(i + anchorLen - 1)
		}
		if !none {
			return 0, false, false
		}
	}
	// The held tail ends with w[:k], k <= m.
	m := min(len(w), h)
	hi := m
	for range maxAnchorTries {
		i := -1
		if !nowhere {
			i = lastIndex(w[:hi], anchor)
		}
		if i < 0 {
			// No overlap of anchorLen bytes or more; a shorter one is
			// checked directly, longest first.
			for k := min(anchorLen-1, m); k > 0; k-- {
				if w[:k] == string(held[h-k:]) {
					return k, b.meaningful(k, len(w)), true
				}
			}
			return 0, false, true
		}
		if k := i + anchorLen; w[:k] == string(held[h-k:]) {
			return k, b.meaningful(k, len(w)), true
		}
		hi = i + anchorLen - 1
	}
	return 0, false, false
}

// lastIndex is strings.LastIndex(s, anchor) for an anchor of anchorLen
// bytes. The overlap of a window that slid a little ends near its end, so
// the last lastTail bytes are searched from the end, as LastIndex does (a
// rolling hash, a byte at a time). Where the anchor is not there (a window
// that does not overlap the held text at all: OpenCode's final text after
// its live window), the rest is searched forwards for the anchor's first
// probeLen bytes, which strings.Index finds many bytes at a time (it does
// not for a needle of 64 bytes), each candidate checked whole and the last
// match kept; after maxForward candidates (a text that repeats them over
// and over) the rest is left to LastIndex.
func lastIndex(s, anchor string) int {
	if len(s) <= lastTail+len(anchor) {
		return strings.LastIndex(s, anchor)
	}
	cut := len(s) - lastTail
	if i := strings.LastIndex(s[cut:], anchor); i >= 0 {
		return cut + i
	}
	// Every match left starts before cut, so it ends in head; a candidate
	// is looked for only where a whole anchor fits after it.
	head := s[:cut+len(anchor)-1]
	probe, room := anchor[:probeLen], len(head)-len(anchor)+probeLen
	last := -1
	for from, n := 0, 0; from < room; n++ {
		if n == maxForward {
			if k := strings.LastIndex(head[from:], anchor); k >= 0 {
				return from + k
			}
			return last
		}
		j := strings.Index(head[from:room], probe)
		if j < 0 {
			break
		}
		k := from + j
		if head[k:k+len(anchor)] == anchor {
			last = k
		}
		from = k + 1
	}
	return last
}

// lastTail, probeLen and maxForward tune lastIndex.
const (
	lastTail   = 4 << 10
	probeLen   = 16
	maxForward = 8
)

// The probe is the anchor's first bytes: this does not compile unless
// probeLen <= anchorLen.
var _ [anchorLen - probeLen]struct{}

// alignKMP is alignWindow by Knuth-Morris-Pratt scans, O(len(w) + limit)
// whatever the text.
func (b *Buffer) alignKMP(w string) (d int, ok bool) {
	held := b.held()
	h := len(held)
	meaningful := func(k int) bool { return b.meaningful(k, len(w)) }
	table := kmpTables.Get().(*[]int32)
	defer kmpTables.Put(table)
	if len(w) >= h {
		// The held tail occurs in w, ending at d <= total.
		fail := tableOf(table, h)
		kmpTable(held, fail)
		end := min(int64(len(w)), b.total)
		if _, last := kmpScan(held, fail, w[:end]); last >= 0 {
			return last, meaningful(h)
		}
	}
	// The held tail ends with a prefix of w.
	m := min(len(w), h)
	fail := tableOf(table, m)
	kmpTable(w[:m], fail)
	k, _ := kmpScan(w[:m], fail, held[h-m:])
	if k == 0 {
		return 0, false
	}
	return k, meaningful(k)
}

// kmpTables recycles the tables of alignWindow, which are up to limit
// int32s each, so that a stream of Windows does not allocate them anew.
var kmpTables = sync.Pool{New: func() any { return new([]int32) }}

// tableOf returns *t resized to n, reallocated when it is too small.
func tableOf(t *[]int32, n int) []int32 {
	if cap(*t) < n {
		*t = make([]int32, n)
	}
	*t = (*t)[:n]
	return *t
}

// kmpTable fills fail[i] with the length of the longest proper prefix of
// p[:i+1] that is also its suffix. len(fail) must be len(p).
func kmpTable[S ~string | ~[]byte](p S, fail []int32) {
	if len(p) == 0 {
		return
	}
	fail[0] = 0
	k := int32(0)
	for i := 1; i < len(p); i++ {
		for k > 0 && p[i] != p[k] {
			k = fail[k-1]
		}
		if p[i] == p[k] {
			k++
		}
		fail[i] = k
	}
}

// kmpScan runs the pattern p (with its table fail) over text. It returns
// the length of the longest prefix of p that is a suffix of text, and the
// end offset in text of the last whole occurrence of p, or -1. p must not be
// empty.
func kmpScan[P, T ~string | ~[]byte](p P, fail []int32, text T) (state int, lastEnd int) {
	n := int32(len(p))
	k := int32(0)
	lastEnd = -1
	for i := 0; i < len(text); i++ {
		for k > 0 && text[i] != p[k] {
			k = fail[k-1]
		}
		if text[i] == p[k] {
			k++
		}
		if k == n {
			lastEnd = i + 1
			if i+1 == len(text) {
				return int(n), lastEnd
			}
			k = fail[k-1]
		}
	}
	return int(k), lastEnd
}

// appendText appends valid UTF-8 to the logical text and bounds what is
// kept.
func (b *Buffer) appendText(s string) {
	if s == "" {
		return
	}
	b.wholeLen = 0
	b.total += int64(len(s))
	b.pendingAppend += int64(len(s))
	b.syncAppend += int64(len(s))
	if len(s) >= b.limit {
		b.setHeld(s)
		return
	}
	if over := len(b.data) - b.off + len(s) - b.limit; over > 0 {
		b.off += over
		for b.off < len(b.data) && !utf8.RuneStart(b.data[b.off]) {
			b.off++
		}
	}
	b.push(s)
}

// replace makes s the whole logical text.
func (b *Buffer) replace(s string) {
	b.total = int64(len(s))
	b.rollFrom = 0
	b.setHeld(s)
	b.pendingReplace = true
	b.pendingAppend = 0
	b.syncReplace = true
	b.syncAppend = 0
}

// setHeld makes the bounded tail of s the held text.
func (b *Buffer) setHeld(s string) {
	b.wholeLen = 0
	s = boundTail(s, b.limit)
	b.data = b.data[:0]
	b.off = 0
	b.push(s)
}

// maxCap is the largest backing array a Buffer keeps: the held text plus
// room for half a limit of dropped head, so that compaction is amortized.
func (b *Buffer) maxCap() int { return b.limit + b.limit/2 }

// push appends s to the array, which it first makes room in without
// growing past maxCap. The held text plus s must fit in limit. When the
// array is full the held text is moved to its front; at maxCap that
// happens only after more than limit/2 bytes were dropped, so each
// appended byte is copied at most twice more.
func (b *Buffer) push(s string) {
	n := len(s)
	if len(b.data)+n <= cap(b.data) {
		b.data = append(b.data, s...)
		return
	}
	hlen := len(b.data) - b.off
	if hlen+n <= cap(b.data) && (b.off >= hlen || cap(b.data) >= b.maxCap()) {
		copy(b.data, b.data[b.off:])
		b.data = append(b.data[:hlen], s...)
		b.off = 0
		return
	}
	// An empty Buffer (new, or replaced) gets what it asks for: a text
	// that comes whole (a Snapshot, a Final, a first Delta) often gets
	// nothing appended, and doubling it would allocate and clear twice
	// its size. Its array is a copy of s that is not cleared first (make
	// clears an array, and the copy then writes every byte again). Appends
	// then grow the array by doubling.
	if hlen == 0 && n >= 64 {
		b.data, b.off = []byte(s)[:n:n], 0 // the capacity make would give
		return
	}
	c := max(n, 64)
	if hlen > 0 {
		c = max(2*(hlen+n), 2*cap(b.data), 64)
	}
	c = max(min(c, b.maxCap()), hlen+n)
	data := make([]byte, hlen, c)
	copy(data, b.data[b.off:])
	b.data = append(data, s...)
	b.off = 0
}

// boundTail returns the longest suffix of the valid UTF-8 s that is at most
// limit bytes long and starts on a rune boundary.
func boundTail(s string, limit int) string {
	i := len(s) - limit
	if i <= 0 {
		return s
	}
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// validString returns s with every byte that does not start a valid UTF-8
// encoding replaced by U+FFFD, as a range loop decodes it. Valid input is
// returned as is.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s) + len(s)/2)
	for _, r := range s {
		sb.WriteRune(r)
	}
	return sb.String()
}

// validBytes is validString for bytes.
func validBytes(p []byte) string {
	if utf8.Valid(p) {
		return string(p)
	}
	var sb strings.Builder
	sb.Grow(len(p) + len(p)/2)
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		sb.WriteRune(r)
		p = p[n:]
	}
	return sb.String()
}
