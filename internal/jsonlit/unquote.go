package jsonlit

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Every string literal jsonlit decodes (Unquote, DecodeLiteral, the fast
// decoder's strings and member names, the memo's texts) goes through one
// routine, decodeInto: it validates the literal as encoding/json does and
// decodes it in the same pass, writing into one buffer by index. Only
// Unquote of a literal that starts with a long plain run (unquoteWide)
// writes through a strings.Builder instead, whose buffer is not zeroed.

// Unquote decodes one JSON string literal (with its quotes) that a
// decoder has already validated, as it does before it hands a
// value to an UnmarshalJSON method. Calling json.Unmarshal there instead
// would scan the bytes twice more (validation, then decoding), and strings
// of whole command outputs dominate the cost of a frame.
//
// The result equals what json.Unmarshal gives: escapes are decoded, every
// byte that is not valid UTF-8 and every unpaired surrogate escape becomes
// U+FFFD. ok is false when b is not a valid string literal (one that
// holds a raw control byte or an unescaped quote included: it is read as
// DecodeLiteral reads it).
func Unquote(b []byte) (s string, ok bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	body := b[1 : len(b)-1]
	// Fast path: nothing to decode.
	n := literalRun(body)
	if n == len(body) {
		return string(body), true
	}
	if n >= wideRun {
		return unquoteWide(b, n)
	}
	// The text is no longer than the body unless it holds bytes that are
	// not UTF-8 (each three bytes of U+FFFD), for which decodeInto makes
	// room; the closing quote bounds every run.
	out := make([]byte, len(body))
	copy(out, body[:n])
	d := decodeInto(out, n, b, 1+n, len(b)-1)
	if !d.ok || d.end != len(b) {
		return "", false
	}
	return unsafe.String(unsafe.SliceData(d.out), len(d.out)), true
}

// unquoteWide is Unquote for a literal whose first plain run, of n
// bytes, is long: most likely a text of long runs (a build log), which
// it writes run by run into a strings.Builder. Where the text is mostly
// such runs, copying them whole into a buffer that is not zeroed first
// (as make's is) costs less than decodeInto's writes by index; where
// escapes are dense (seq), decodeInto's cost less.
func unquoteWide(b []byte, n int) (string, bool) {
	var sb strings.Builder
	sb.Grow(len(b) - 2)
	end := len(b) - 1 // the closing quote
	i := 1
	for {
		r := n
		if n < 0 {
			r = literalRun(b[i:end])
		}
		n = -1
		sb.Write(b[i : i+r])
		if i += r; i >= end {
			return sb.String(), true
		}
		switch c := b[i]; {
		case c == '\\':
			if i+1 < end {
				if x := unescaped[b[i+1]]; x != 0 {
					sb.WriteByte(x)
					i += 2
					continue
				}
			}
			var u [4]byte
			o, k, next, ok := unicodeEscape(u[:], 0, b[:end], i)
			if !ok {
				return "", false
			}
			sb.Write(o[:k])
			i = next
		case c >= utf8.RuneSelf:
			k := i + 1
			for k < end && b[k] >= utf8.RuneSelf {
				k++
			}
			if utf8.Valid(b[i:k]) {
				sb.Write(b[i:k])
				i = k
				continue
			}
			for i < k {
				r, size := utf8.DecodeRune(b[i:k])
				if r == utf8.RuneError && size == 1 {
					sb.WriteString("\uFFFD")
				} else {
					sb.Write(b[i : i+size])
				}
				i += size
			}
		default: // a quote or a control byte
			return "", false
		}
	}
}

// decoded is what decodeInto read.
type decoded struct {
	out []byte // the decoded text appended
	end int    // the offset just past the closing quote
	// clean is the last offset of the literal after a byte it holds as is
	// (a plain ASCII byte), and cleanOut the length of out there: the
	// decoding of what comes before it does not depend on what comes
	// after, so a literal that starts with the same bytes up to there
	// decodes to the same text up to cleanOut. 0 when there is none.
	clean, cleanOut int
	ok              bool
}

// decodeFrom decodes the string literal b (b[0] is its opening quote)
// from offset i, where the decoding does not depend on what came before
// (1, or a clean offset), appending the text to out.
func decodeFrom(out []byte, b []byte, i int) decoded {
	q := nextQuote(b, i)
	j := len(out)
	if cap(out)-j < q-i {
		out = grow(out, j, q-i)
	}
	return decodeInto(out[:cap(out)], j, b, i, q)
}

// nextQuote returns the index of the first quote at or after b[i], or
// len(b).
func nextQuote(b []byte, i int) int {
	if k := bytes.IndexByte(b[i:], '"'); k >= 0 {
		return i + k
	}
	return len(b)
}

// grow returns a buffer with out[:j] and room for need more bytes, a
// quarter more than out at least, so that growing by little steps (bytes
// that are not UTF-8) costs amortised constant time.
func grow(out []byte, j, need int) []byte {
	n := max(j+need, len(out)+len(out)/4)
	nb := make([]byte, n)
	copy(nb, out[:j])
	return nb
}

// Byte classes in a string literal.
const (
	cPlain   = iota // ASCII held as is
	cQuote          // the end
	cEscape         // a backslash
	cControl        // a control byte, which JSON does not allow unescaped
	cHigh           // the first byte of a UTF-8 sequence, or not UTF-8
)

var class = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c < ' ':
			t[c] = cControl
		case c == '"':
			t[c] = cQuote
		case c == '\\':
			t[c] = cEscape
		case c >= utf8.RuneSelf:
			t[c] = cHigh
		}
	}
	return t
}()

// unescaped[e] is the byte the escape \e stands for, 0 where \e is not a
// one-byte escape.
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// decodeInto decodes the string literal b from offset i (see decodeFrom)
// into out, whose first j bytes are the text so far. q is the index of a
// quote at or after the next quote of b from i (or len(b)), and out has
// room for q-i more bytes: a plain byte, an escape and a UTF-8 sequence
// never decode to more bytes than they take, so only a byte that is not
// UTF-8 (three bytes of U+FFFD) and an escaped quote (which moves past q)
// need room made. The rare cases are functions of their own, so that the
// loop over plain runs and one-byte escapes keeps its state in registers.
func decodeInto(out []byte, j int, b []byte, i, q int) decoded {
	var clean, cleanOut int
	from := i // where the current plain run started
	// wide says the last plain run was long: the next one is read eight
	// bytes at a time. The first one is.
	wide := true
	i, j = wordRun(out, j, b, i)
	for i < len(b) {
		c := b[i]
		if class[c] == cPlain {
			out[j] = c
			i++
			j++
			continue
		}
		if i > from {
			clean, cleanOut = i, j
			wide = i-from >= wideRun
		}
		if c == '\\' && i+1 < len(b) {
			if x := unescaped[b[i+1]]; x != 0 {
				out[j] = x
				j++
				i += 2
				if i > q { // \" moved past q
					out, q = roomTo(out, j, b, i)
				}
				if from = i; wide {
					i, j = wordRun(out, j, b, i)
				} else if i < len(b) && class[b[i]] == cPlain {
					// Runs this short, between escapes: seq's output.
					if k, n := denseRun(out, j, b, i); k > i {
						// Just after an escape that ended a run.
						i, j, from = k, n, k
						clean, cleanOut = k-2, n-1
						if i > q { // \" moved past q
							out, q = roomTo(out, j, b, i)
						}
					}
				}
				continue
			}
		}
		switch class[c] {
		case cQuote:
			return decoded{out: out[:j], end: i + 1, clean: clean, cleanOut: cleanOut, ok: true}
		case cEscape:
			var ok bool
			if out, j, i, ok = unicodeEscape(out, j, b, i); !ok {
				return decoded{}
			}
		case cControl:
			return decoded{}
		default: // cHigh
			out, j, i = nonASCII(out, j, b, i, q)
		}
		if from = i; wide {
			i, j = wordRun(out, j, b, i)
		}
	}
	return decoded{}
}

// denseRun is decodeInto's byte loop, from b[i] (out at j) just after an
// escape, over a stretch of short plain runs and one-byte escapes (seq's
// output: an escape every six bytes or so), read eight bytes at a time:
// each word's backslashes are found at once, and each run between two
// escapes is copied with one eight-byte store (a longer one a word at a
// time). The byte loop spends about ten instructions on each byte and
// its branches follow seq's runs well; here a run costs about what a byte
// costs there, and no word's masks wait on the runs before them.
//
// It stops at a quote that ends the literal, a control byte, a byte of
// 0x80 or more, a backslash that starts no one-byte escape (\u, or an
// invalid escape), and 16 bytes before the end of b or of out, within
// which its reads and writes stay. It returns the offset in b and the
// length of out just after the last escape it read that ended a plain
// run, where the byte loop takes over (i and j when there is none): the
// byte loop's state there is known (its plain run starts there, and its
// clean offset is that escape's backslash), and what it reads again, the
// few bytes after, it writes again to the same place with the same bytes.
// An escaped quote it reads may be past decodeInto's q. The loop keeps
// few variables (no handover offsets of its own, no slice lengths, no
// copy call), so that they stay in registers: with more, Go's register
// allocator spilled some and reloaded them at each escape.
func denseRun(out []byte, j int, b []byte, i int) (int, int) {
	if byteByByte.Load() {
		return i, j
	}
	const ones = ones64
	s, js := i, j // the plain run being read: its start in b, and in out
	// k counts the escapes read since the last that ended a run (each
	// two bytes of b and one of out): it hands over k escapes back.
	k := 0
	pb, po := unsafe.Pointer(unsafe.SliceData(b)), unsafe.Pointer(unsafe.SliceData(out))
	// Reads go up to b[w+15] (a run's word starts at w+7 at most) and
	// writes up to out[js+(w-s)+15] (a run's store, its escape's byte).
	// js-s only falls (by one an escape), so the bound on w, lim, is
	// worked out again only when w passes it.
	lim := min(len(b), len(out)-(js-s)) - 16
	for w := i; ; w += 8 {
		if w > lim {
			if lim = min(len(b), len(out)-(js-s)) - 16; w > lim {
				break
			}
		}
		x := loadWord(pb, w)
		// Exact masks, a high bit for each byte found and none for any
		// other: y is x without its high bits, so no sum carries from
		// one byte into the next.
		y := x &^ highBits
		stop := x&highBits | ^(y+0x60*ones)&highBits | ^((y^'"'*ones)+0x7f*ones)&highBits
		bs := ^((y ^ '\\'*ones) + 0x7f*ones) & highBits
		if stop != 0 {
			bs &= 1<<(8*(bits.TrailingZeros64(stop)>>3)) - 1 // the backslashes before the stop
		}
		if s > w {
			bs &^= 0xFF // the letter of an escape in the word before
		}
		for bs != 0 {
			p := w + bits.TrailingZeros64(bs)>>3
			c := unescaped[*(*byte)(unsafe.Add(pb, p+1))]
			if c == 0 {
				return s - 2*k, js - k
			}
			// The run, a word at a time: its last store ends 7 bytes
			// past it at most, within the bounds above (p <= w+7).
			n := p - s
			for o := 0; ; o += 8 {
				storeWord(po, js+o, loadWord(pb, s+o))
				if o+8 >= n {
					break
				}
			}
			*(*byte)(unsafe.Add(po, js+n)) = c
			js += n + 1
			s = p + 2
			k++
			if n > 0 {
				k = 0
			}
			bs &= bs - 1
			if c == '\\' {
				bs &= bs - 1 // the escaped backslash, when it is in this word
			}
		}
		if stop != 0 {
			if s <= w+bits.TrailingZeros64(stop)>>3 {
				break
			}
			w = s - 8 // the stop was the quote of a \" just read: go on after it
		}
	}
	return s - 2*k, js - k
}

// loadWord returns the eight bytes at p+i, the first in the lowest byte.
func loadWord(p unsafe.Pointer, i int) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(p, i))[:])
}

// storeWord writes x at p+i, its lowest byte first.
func storeWord(p unsafe.Pointer, i int, x uint64) {
	binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(p, i))[:], x)
}

// wideRun is the length of a plain run after which decodeInto and
// ValidLiteral read the next one eight bytes at a time (a build log);
// after a shorter one (the output of seq: an escape every few bytes) they
// read a byte at a time, where the wider test does not pay. Each has its
// own word test (ValidLiteral's lets bytes above 0x7F through) and its own
// byte loop (decodeInto's writes), so the rule is this constant.
const wideRun = 16

// wordRun copies the plain run at b[i] into out at j, found eight bytes
// at a time (literalRun), with one copy. It returns the new i and j.
func wordRun(out []byte, j int, b []byte, i int) (int, int) {
	r := literalRun(b[i:])
	copy(out[j:], b[i:i+r])
	return i + r, j + r
}

// roomTo returns out with room from j for b up to its next quote from
// i, and that quote's index.
func roomTo(out []byte, j int, b []byte, i int) ([]byte, int) {
	q := nextQuote(b, i)
	if len(out)-j < q-i {
		out = grow(out, j, q-i)
	}
	return out, q
}

// unicodeEscape decodes the \u escape at b[i] (or a surrogate pair of
// them) into out at j, as encoding/json does: a lone surrogate is
// U+FFFD. ok is false when b[i] starts no valid escape.
func unicodeEscape(out []byte, j int, b []byte, i int) (_ []byte, _, _ int, ok bool) {
	if i+1 >= len(b) || b[i+1] != 'u' {
		return out, j, i, false
	}
	r, ok := hex4(b[i+2:])
	if !ok {
		return out, j, i, false
	}
	n := 6
	if utf16.IsSurrogate(r) {
		r1 := r
		r = utf8.RuneError
		if i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
			if r2, ok := hex4(b[i+8:]); ok {
				if dec := utf16.DecodeRune(r1, r2); dec != utf8.RuneError {
					r, n = dec, 12
				}
			}
		}
	}
	return out, j + utf8.EncodeRune(out[j:], r), i + n, true
}

// nonASCII copies the run of bytes at or above 0x80 at b[i] into out at
// j: UTF-8 sequences as they are, each other byte as U+FFFD (for which
// it makes room; q is as for decodeInto).
func nonASCII(out []byte, j int, b []byte, i, q int) ([]byte, int, int) {
	for i < len(b) && b[i] >= utf8.RuneSelf {
		// Two- and three-byte sequences (Latin, Cyrillic, CJK) are
		// checked here; the rest as utf8 does.
		if c := b[i]; c >= 0xC2 && c <= 0xDF && i+1 < len(b) && b[i+1]&0xC0 == 0x80 {
			out[j], out[j+1] = c, b[i+1]
			j += 2
			i += 2
			continue
		} else if c >= 0xE1 && c <= 0xEF && c != 0xED && i+2 < len(b) && b[i+1]&0xC0 == 0x80 && b[i+2]&0xC0 == 0x80 {
			out[j], out[j+1], out[j+2] = c, b[i+1], b[i+2]
			j += 3
			i += 3
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			if len(out)-j < q-i+2 {
				out = grow(out, j, q-i+2)
			}
			out[j], out[j+1], out[j+2] = 0xEF, 0xBF, 0xBD // U+FFFD
			j += 3
			i++
			continue
		}
		copy(out[j:], b[i:i+size])
		j += size
		i += size
	}
	return out, j, i
}

// stopBytes has the high bit set in the first byte of x (in memory order)
// that ends a plain run: a quote, a backslash, a control byte or a byte
// of 0x80 or more. Bits may be set in later bytes too (a borrow carries
// up), never in earlier ones.
func stopBytes(x uint64) uint64 {
	// A high bit in x is a non-ASCII byte.
	return x&highBits | escapeBytes(x)
}

// escapeBytes is stopBytes without the bytes of 0x80 or more, which a
// literal holds as they are (ValidLiteral): the high bit is set in the
// first quote, backslash or control byte of x, and maybe in later bytes,
// never in earlier ones.
func escapeBytes(x uint64) uint64 {
	const ones = 0x0101010101010101
	bs := x ^ ('\\' * ones)
	qs := x ^ ('"' * ones)
	// (x - 0x20...) & ^x has a high bit for a byte below 0x20, (bs -
	// 0x01...) & ^bs for a backslash and (qs - 0x01...) & ^qs for a
	// quote; a byte of 0x80 or more has none (its own high bit is masked
	// by ^x, ^bs or ^qs).
	return ((x-0x20*ones)&^x | (bs-ones)&^bs | (qs-ones)&^qs) & highBits
}

const highBits = 0x8080808080808080

// literalRun returns the length of the leading run of b that a string
// literal holds as is: ASCII, no quote, no backslash, no control byte.
// It looks at eight bytes at a time.
func literalRun(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := stopBytes(x); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if class[b[i]] != cPlain {
			break
		}
	}
	return i
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
