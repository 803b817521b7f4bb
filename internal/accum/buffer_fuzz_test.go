package accum

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// model is the reference for Buffer: the same rules applied naively to an
// unbounded string, re-decoding a whole byte run on every step and searching
// windows by brute force. Buffer must hold exactly boundTail(model.live()).
type model struct {
	limit int
	text  string // the logical text, without the current byte run
	raw   []byte // the current run of byte Deltas, undecoded
	trunc bool   // the producer's truncation flag
}

// decodeRange decodes p as a Go range loop does: one U+FFFD per byte that
// does not start a valid encoding.
func decodeRange(p string) string {
	var sb strings.Builder
	for _, r := range p {
		sb.WriteRune(r)
	}
	return sb.String()
}

// completable reports whether p is a proper prefix of the encoding of one
// rune, by trying continuation bytes that cover every valid range.
func completable(p []byte) bool {
	conts := []byte{0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf}
	var try func(q []byte, more int) bool
	try = func(q []byte, more int) bool {
		if more == 0 {
			r, n := utf8.DecodeRune(q)
			return r != utf8.RuneError && n == len(q)
		}
		for _, c := range conts {
			if try(append(q[:len(q):len(q)], c), more-1) {
				return true
			}
		}
		return false
	}
	for more := 1; more+len(p) <= utf8.UTFMax; more++ {
		if try(p, more) {
			return true
		}
	}
	return false
}

// live is the logical text: the byte run decoded whole, less a sequence
// that later bytes could still complete.
func (m *model) live() string {
	cut := len(m.raw)
	for j := min(3, len(m.raw)); j >= 1; j-- {
		if completable(m.raw[len(m.raw)-j:]) {
			cut = len(m.raw) - j
			break
		}
	}
	return m.text + decodeRange(string(m.raw[:cut]))
}

func (m *model) flush() {
	m.text += decodeRange(string(m.raw))
	m.raw = nil
}

// restate ends a byte run the way Snapshot, Window and Final do: an
// incomplete sequence is dropped.
func (m *model) restate() {
	m.text = m.live()
	m.raw = nil
}

func (m *model) apply(t Text) {
	if t.Bytes != nil && t.Kind == Delta {
		m.raw = append(m.raw, t.Bytes...)
		m.trunc = m.trunc || t.Truncated
		return
	}
	s := decodeRange(t.Text)
	if t.Bytes != nil {
		s = decodeRange(string(t.Bytes))
	}
	switch t.Kind {
	case Delta:
		m.flush()
		m.text += s
		m.trunc = m.trunc || t.Truncated
	case Snapshot, Final:
		m.restate()
		held := boundTail(m.text, m.limit)
		tot := len(m.text)
		if t.Truncated && len(s) < tot && (t.Head || strings.HasSuffix(held, s) || held == m.text && strings.HasPrefix(held, s)) {
			return // a cut-short restatement of what is held
		}
		if len(s) >= tot && s[tot-len(held):tot] == held {
			m.text += s[tot:]
		} else {
			m.text = s
		}
		m.trunc = t.Truncated
	case Window:
		m.restate()
		m.window(s, t.Truncated)
	}
}

func (m *model) window(w string, trunc bool) {
	if m.text == "" {
		m.text = w
		m.trunc = m.trunc || trunc
		return
	}
	if w == "" {
		return
	}
	held := boundTail(m.text, m.limit)
	h, tot := len(held), len(m.text)
	// The first valid alignment from the right has the longest overlap.
	for d := min(len(w), tot); d >= 1; d-- {
		var match bool
		if d >= h {
			match = w[d-h:d] == held
		} else {
			match = strings.HasSuffix(held, w[:d])
		}
		if !match {
			continue
		}
		if k := min(d, h); k == tot || k == len(w) || k >= minOverlap {
			m.text += w[d:]
			return
		}
		break
	}
	m.text = w
	m.trunc = trunc
}

// fuzzPieces is what content bytes of a fuzz input map to: few letters, so
// that overlaps are common, runes of every width, and loose pieces of
// encodings so that sequences split and break.
var fuzzPieces = []string{
	"é", "€", "😀", "\n", "\xff", "\xe2", "\x82", "\xac", "\xf0\x9f", "\x98\x80",
	"\xed\xa0", "\xc3", "\xa9", "xyz\n", "\uFFFD",
}

func fuzzContent(p []byte) string {
	var sb strings.Builder
	for _, c := range p {
		if int(c) < 256-len(fuzzPieces) {
			sb.WriteByte('a' + c%3)
		} else {
			sb.WriteString(fuzzPieces[255-int(c)])
		}
	}
	return sb.String()
}

// fuzzReader hands out the bytes of a fuzz input, then zeros.
type fuzzReader struct{ p []byte }

func (r *fuzzReader) byte() byte {
	if len(r.p) == 0 {
		return 0
	}
	c := r.p[0]
	r.p = r.p[1:]
	return c
}

func (r *fuzzReader) bytes(n int) []byte {
	n = min(n, len(r.p))
	q := r.p[:n]
	r.p = r.p[n:]
	return q
}

// FuzzBuffer drives a Buffer and the model with the same random observations
// and checks after every step:
//   - the held text is boundTail of the model's text, at most limit bytes,
//     valid UTF-8; TotalBytes and Truncated agree with the model;
//   - every chunk is valid UTF-8; an append chunk grows TotalBytes by exactly
//     its length (so TotalBytes never shrinks except by a Replace chunk);
//   - Take reports nothing only when nothing the client sees changed;
//   - the client that applies the chunks holds a suffix of the model's text
//     (nothing duplicated, nothing lost), whose bounded tail is the held
//     text, and which is the held text itself when nothing was dropped;
//   - for sequences of Deltas only, TotalBytes never decreases;
//   - the backing array stays within its cap.
func FuzzBuffer(f *testing.F) {
	f.Add([]byte("\x05\x00\x04abcd\x03\x02xx\x16\x03\xfe\xfd\xfc"))
	f.Add([]byte("\x10\x05\x08abcdabcd\x20\x05\x04abcd\x05\x0a\x03efg\x06\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{p: data}
		limit := minLimit + int(r.byte()%33)
		b := NewBuffer(limit)
		m := &model{limit: limit}
		var cl client
		var last Chunk // the last chunk taken, with Text the held text
		taken := false
		pureDelta := true
		var prevTotal int64
		// Steps are capped so that the quadratic model stays fast.
		for step := 0; len(r.p) > 0 && step < 256; step++ {
			h := r.byte()
			n := int(r.byte() % 24)
			content := fuzzContent(r.bytes(n))
			var obs Text
			flush := false
			kind := h & 7
			switch kind {
			case 0, 1:
				obs = Text{Kind: Delta}
			case 2, 3:
				obs = Text{Kind: Snapshot}
			case 4, 5:
				obs = Text{Kind: Window}
			case 6:
				obs = Text{Kind: Final}
			case 7:
				flush = true
			}
			switch kind {
			case 3:
				content = m.live() + content
			case 5:
				whole := m.live() + content
				content = whole[max(0, len(whole)-int(r.byte())):]
			case 6:
				if n%2 == 0 {
					content = m.live() + content
				}
			}
			obs.Truncated = h&8 != 0
			if h&16 != 0 || kind == 1 {
				obs.Bytes = []byte(content)
			} else {
				obs.Text = content
				// A producer that checked its text says so; the Buffer
				// must then fold it exactly as it folds it unchecked.
				obs.Valid = h&128 != 0 && utf8.ValidString(content)
			}
			if kind != 0 && kind != 1 && kind != 7 {
				pureDelta = false
			}

			if flush {
				b.Flush()
				m.flush()
			} else {
				b.Apply(obs)
				m.apply(obs)
			}

			held := string(b.held())
			live := m.live()
			if want := boundTail(live, limit); held != want {
				t.Fatalf("step %d %+v: held %q, model %q (whole %q)", step, obs, held, want, live)
			}
			if !utf8.ValidString(held) || len(held) > limit {
				t.Fatalf("step %d: held %q invalid or over %d bytes", step, held, limit)
			}
			if b.total != int64(len(live)) {
				t.Fatalf("step %d: total %d, model %d", step, b.total, len(live))
			}
			if got, want := b.truncated(), m.trunc || len(live) > len(held); got != want {
				t.Fatalf("step %d: truncated %v, model %v", step, got, want)
			}
			if cap(b.data) > b.maxCap() {
				t.Fatalf("step %d: cap %d over %d", step, cap(b.data), b.maxCap())
			}
			if pureDelta && b.total < prevTotal {
				t.Fatalf("step %d: deltas only, total fell from %d to %d", step, prevTotal, b.total)
			}
			prevTotal = b.total

			var c Chunk
			ok := false
			switch (h >> 5) & 3 {
			case 0, 1:
				c, ok = b.Take()
				if !ok && b.seen && (!taken || held != last.Text || b.total != last.TotalBytes || b.truncated() != last.Truncated) {
					t.Fatalf("step %d: Take reported nothing, but %q/%d/%v changed to %q/%d/%v",
						step, last.Text, last.TotalBytes, last.Truncated, held, b.total, b.truncated())
				}
			case 2:
				c, ok = b.Whole(), true
			}
			if !ok {
				continue
			}
			if !utf8.ValidString(c.Text) {
				t.Fatalf("step %d: chunk %q is not valid UTF-8", step, c.Text)
			}
			if !c.Replace && taken && c.TotalBytes != last.TotalBytes+int64(len(c.Text)) {
				t.Fatalf("step %d: append chunk %+v after total %d", step, c, last.TotalBytes)
			}
			if c.TotalBytes != b.total || c.Truncated != b.truncated() {
				t.Fatalf("step %d: chunk %+v, buffer total %d truncated %v", step, c, b.total, b.truncated())
			}
			cl.apply(c)
			last, taken = Chunk{Text: held, TotalBytes: c.TotalBytes, Truncated: c.Truncated}, true
			if !strings.HasSuffix(live, cl.text) {
				t.Fatalf("step %d: client %q is not a suffix of the model's %q", step, cl.text, live)
			}
			checkClient(t, b, &cl)
		}
		b.Flush()
		m.flush()
		w := b.Whole()
		if want := boundTail(m.text, limit); w.Text != want || w.TotalBytes != int64(len(m.text)) {
			t.Fatalf("end: Whole %+v, model %q (%d bytes)", w, want, len(m.text))
		}
	})
}
