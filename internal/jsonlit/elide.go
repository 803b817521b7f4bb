package jsonlit

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// Agents that re-send a whole output on every update put it in a tool
// call's content text (`params.update.content[i].content.text`), and that
// one string is nearly all of the frame: hundreds of kilobytes, ten times a
// second. The one-pass decoder scans such a string byte by byte, and
// unquoting it scans and copies it again. A frame of at least elideFrame
// bytes is therefore first walked by Elide, which finds the content texts
// of at least elideMin bytes (and, when asked, the byte arrays of
// `rawOutput.output` and `rawOutput.output_delta`), validates and decodes
// each in one pass of its own (DecodeLiteral: eight bytes at a time where
// the text is plain; DecodeByteArray), and returns a copy of the frame in
// which each of them is "" (or []). A decoder reads that light frame as it
// would the frame: every other byte is the same, and each value it did not
// see is a valid value of the same JSON type, so the light frame is valid
// JSON exactly when the frame is. The caller then puts each elided value
// back where the decoder met its "" or [] (Lit.End).
//
// ElideMembers also takes out the other big members a caller names
// (Member): outputs agents repeat outside the content texts (Codex's
// rawOutput.stdout and aggregated_output, Claude's toolResponse.stdout).
// A lazy one is only validated (ValidLiteral) and handed back as its
// literal, which the caller unquotes if it reads it; a literal that
// repeats, byte for byte, one already taken out is not read again.
// internal/dialect puts them back into the fields of its shared ToolCall
// shape and of each dialect's update type, and its tests
// (TestElidedDecodeIsEncodingJSON, FuzzElidedDecode) hold the result to
// encoding/json's on every recorded frame with every dialect.
//
// A content text or a byte array of at least memoMin bytes is read
// through the memo (memo.go): when it begins with the bytes of the one the
// same call of the same scope sent before, only what follows them is
// decoded.

// elideFrame and elideMin are the smallest frame that is walked and the
// smallest content text literal (or byte array) that is elided;
// SetElideSizes changes them for tests.
var (
	elideFrame = 16 << 10
	elideMin   = 4 << 10
)

// SetElideSizes sets the smallest frame Elide walks and the smallest
// value it takes out, and returns what restores the defaults before it.
// It is for tests and benchmarks (0, 0: take out every value; a frame
// size of math.MaxInt: walk nothing), which must not run in parallel with
// other reads.
func SetElideSizes(frame, value int) (restore func()) {
	f, v := elideFrame, elideMin
	elideFrame, elideMin = frame, value
	return func() { elideFrame, elideMin = f, v }
}

// Lit is one value Elide took out of a frame: a content text literal or
// a byte array.
type Lit struct {
	End  int64  // the offset just past the "" or [] that stands for it in the light frame
	Raw  []byte // the literal or the array in the frame
	Text string // a literal's decoded text, always valid UTF-8
	// Bytes is an array's decoded bytes (never nil for an array, nil for
	// a literal).
	Bytes []byte
	// Lazy says the literal was validated but not decoded (Text is ""):
	// a Member with Lazy set, whose reader unquotes it only when it uses
	// it (unless its bytes repeat a literal decoded before it in the
	// frame: it then has that one's text).
	Lazy bool
}

// Member names a member of the object under a frame's `update` (or a
// permission ask's `toolCall`), or of an object below it, whose value
// Elide takes out when it is big enough: a string literal (Text), which
// it validates and, unless Lazy, decodes; a byte array (Bytes); or an
// object whose Members it walks. Name is the member's name in lower-case
// ASCII; a member whose name differs from it by more than ASCII case is
// left in the frame. The caller must put every value it takes out back
// where the decoder meets it, so it names only members that its decoder
// sends to a field that does (internal/dialect finds them by reflection).
type Member struct {
	Name    string
	Text    bool
	Lazy    bool
	Bytes   bool
	Members []Member
}

// rawOutputArrays are the members Elide takes out of the call when asked
// for arrays: the byte arrays of rawOutput.output and output_delta.
var rawOutputArrays = []Member{{Name: "rawoutput", Members: []Member{{Name: "output", Bytes: true}, {Name: "output_delta", Bytes: true}}}}

// Holds says whether s is a part of l's text (the same bytes in memory,
// not an equal copy) that begins and ends on rune boundaries of it: such
// a string is valid UTF-8 without being read again, since Text is.
func (l *Lit) Holds(s string) bool {
	whole := l.Text
	if s == "" || whole == "" {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	w := uintptr(unsafe.Pointer(unsafe.StringData(whole)))
	if p < w || p-w > uintptr(len(whole)) || uintptr(len(whole))-(p-w) < uintptr(len(s)) {
		return false
	}
	end := int(p-w) + len(s)
	return utf8.RuneStart(s[0]) && (end == len(whole) || utf8.RuneStart(whole[end]))
}

// Elide returns msg with every content text of at least elideMin bytes
// replaced by "" (and, when arrays says so, every byte array of
// rawOutput.output and rawOutput.output_delta by []), and those values;
// none when msg is shorter than elideFrame, is not an object of the
// expected shape, or a text on the path is not a valid string (the
// decoder then reads msg itself and says what is wrong).
//
// scope names whose frame msg is (for acpnormd, the identity): the memo
// keeps what it learns from msg under it, and only a frame of the same
// scope, session and call reads it again.
func Elide(msg []byte, arrays bool, scope string) ([]byte, []Lit) {
	var call []Member
	if arrays {
		call = rawOutputArrays
	}
	return ElideMembers(msg, true, call, scope)
}

// ElideMembers is Elide with the members of the call to take out besides
// its content texts (those only when content says so) named by call.
func ElideMembers(msg []byte, content bool, call []Member, scope string) ([]byte, []Lit) {
	if len(msg) < elideFrame {
		return nil, nil
	}
	w := elider{msg: msg, content: content, call: call, scope: scope}
	i := SkipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return nil, nil
	}
	if w.object(i, 0) < 0 || w.bad || len(w.lits) == 0 {
		return nil, nil
	}
	light := make([]byte, 0, len(msg)-w.cut)
	from := 0
	for k := range w.lits {
		l := &w.lits[k]
		start := len(light) + (l.start - from)
		light = append(light, msg[from:l.start]...)
		if w.out[k].Bytes != nil {
			light = append(light, '[', ']')
		} else {
			light = append(light, '"', '"')
		}
		w.out[k].End = int64(start + 2)
		from = l.start + len(w.out[k].Raw)
	}
	light = append(light, msg[from:]...)
	return light, w.out
}

// elider walks a frame along the path of content texts:
// {params:{update|toolCall:{content:[{content:{text:"..."}}]}}}.
type elider struct {
	msg  []byte
	lits []struct{ start int }
	out  []Lit
	cut  int  // bytes taken out
	bad  bool // a text on the path is not a valid string
	// scope, and sid and tcid, the session id and tool call id literals
	// met before the texts, are the memo's key (memo.go).
	scope     string
	sid, tcid []byte
	// content says to take out the content texts; call names the other
	// members of the call to take out.
	content bool
	call    []Member
}

// The levels of the path, by depth: the object at each level and the
// member names that lead to the next.
const (
	lvRoot    = iota // the message: params
	lvParams         // update, toolCall
	lvCall           // content
	lvContent        // the content array: its elements
	lvItem           // content
	lvInner          // text
	lvOff            // off the path
)

// maxElideDepth bounds the nesting elide follows; deeper frames are left
// to the decoder.
const maxElideDepth = 64

// object walks the object at msg[i] at path level lv and returns the
// offset just past it, or -1 when the walk gives up.
func (w *elider) object(i, lv int) int {
	b := w.msg
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		var key []byte
		if key, i = memberKey(b, i); i < 0 {
			return -1
		}
		next := lvOff
		switch lv {
		case lvRoot:
			if equalFoldASCII(key, "params") {
				next = lvParams
			}
		case lvParams:
			if equalFoldASCII(key, "update") || equalFoldASCII(key, "toolcall") {
				next = lvCall
			} else if equalFoldASCII(key, "sessionid") {
				w.sid = w.literal(i)
			}
		case lvCall:
			if w.content && equalFoldASCII(key, "content") {
				next = lvContent
			} else if equalFoldASCII(key, "toolcallid") {
				w.tcid = w.literal(i)
			} else if m := memberNamed(w.call, key); m != nil {
				if i = w.member(i, m, 1); i < 0 {
					return -1
				}
				goto member
			}
		case lvItem:
			if equalFoldASCII(key, "content") {
				next = lvInner
			}
		case lvInner:
			if equalFoldASCII(key, "text") && i < len(b) && b[i] == '"' {
				e := w.text(i)
				if e < 0 {
					return -1
				}
				i = e
				goto member
			}
		}
		i = w.value(i, next, 1)
		if i < 0 {
			return -1
		}
	member:
		var closed bool
		if i, closed = afterMember(b, i, '}'); closed || i < 0 {
			return i
		}
	}
}

// memberKey reads the name of the member at b[i] and its colon: it
// returns the name's bytes (as written, between the quotes) and the start
// of the member's value, or -1 when there is no name and colon there.
func memberKey(b []byte, i int) (key []byte, value int) {
	if i >= len(b) || b[i] != '"' {
		return nil, -1
	}
	ke := StringEnd(b, i)
	key = b[i+1 : max(i+1, ke-1)]
	i = SkipSpace(b, ke)
	if i >= len(b) || b[i] != ':' {
		return nil, -1
	}
	return key, SkipSpace(b, i+1)
}

// afterMember reads what follows a member of an object or an element of
// an array at b[i]: a comma (it returns the start of the next one), or the
// closing byte (it returns the index past it, closed). -1: neither.
func afterMember(b []byte, i int, closing byte) (next int, closed bool) {
	i = SkipSpace(b, i)
	if i >= len(b) {
		return -1, false
	}
	switch b[i] {
	case ',':
		return SkipSpace(b, i+1), false
	case closing:
		return i + 1, true
	}
	return -1, false
}

// value walks the value at msg[i]; lv is the level an object or array
// there would be at.
func (w *elider) value(i, lv, depth int) int {
	b := w.msg
	if i >= len(b) || depth > maxElideDepth {
		return -1
	}
	switch b[i] {
	case '{':
		if lv == lvOff || lv == lvContent {
			return skipValue(b, i)
		}
		return w.object(i, lv)
	case '[':
		if lv != lvContent {
			return skipValue(b, i)
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for {
			if i >= len(b) {
				return -1
			}
			if b[i] == '{' {
				i = w.object(i, lvItem)
			} else {
				i = skipValue(b, i)
			}
			if i < 0 {
				return -1
			}
			var closed bool
			if i, closed = afterMember(b, i, ']'); closed || i < 0 {
				return i
			}
		}
	}
	return skipValue(b, i)
}

// memberNamed returns the member of ms that the member name key (its
// bytes between the quotes) names, or nil.
func memberNamed(ms []Member, key []byte) *Member {
	for k := range ms {
		if equalFoldASCII(key, ms[k].Name) {
			return &ms[k]
		}
	}
	return nil
}

// member walks the value at msg[i] of a member m names, taking it out
// when m says so and it is long enough, and returns the offset just past
// it, or -1 when the walk gives up.
func (w *elider) member(i int, m *Member, depth int) int {
	b := w.msg
	if i >= len(b) || depth > maxElideDepth {
		return -1
	}
	switch {
	case b[i] == '"' && m.Text:
		return w.literalAt(i, m.Lazy)
	case b[i] == '[' && m.Bytes:
		if e := w.array(i); e >= 0 {
			return e
		}
	case b[i] == '{' && len(m.Members) > 0:
		return w.members(i, m.Members, depth+1)
	}
	return w.value(i, lvOff, depth)
}

// members walks the object at msg[i], whose members ms names, and
// returns the offset just past it, or -1 when the walk gives up.
func (w *elider) members(i int, ms []Member, depth int) int {
	b := w.msg
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		var key []byte
		if key, i = memberKey(b, i); i < 0 {
			return -1
		}
		if m := memberNamed(ms, key); m != nil {
			i = w.member(i, m, depth)
		} else {
			i = w.value(i, lvOff, depth)
		}
		if i < 0 {
			return -1
		}
		var closed bool
		if i, closed = afterMember(b, i, '}'); closed || i < 0 {
			return i
		}
	}
}

// literalAt takes the string literal at msg[i] out when it is long enough:
// decoded, or when lazy only validated. It returns the offset just past
// it. A literal with the bytes of one taken out before (seen) is not read
// again: it is that one, decoded when that one was.
func (w *elider) literalAt(i int, lazy bool) int {
	if l := w.seen(i, !lazy); l != nil {
		n := len(l.Raw)
		w.take(i, Lit{Raw: w.msg[i : i+n : i+n], Text: l.Text, Lazy: l.Lazy})
		return i + n
	}
	var (
		text string
		n    int
		ok   bool
	)
	if lazy {
		n, ok = ValidLiteral(w.msg[i:])
	} else {
		text, n, ok = DecodeLiteral(w.msg[i:])
	}
	if !ok {
		w.bad = true
		return -1
	}
	w.take(i, Lit{Raw: w.msg[i : i+n : i+n], Text: text, Lazy: lazy})
	return i + n
}

// seen returns the literal taken out before whose bytes the frame at
// msg[i] begins with (agents repeat an output in two members: Codex's
// stdout and aggregated_output), only a decoded one when decoded is set,
// or nil. That valid literal is then the one at msg[i], whole.
func (w *elider) seen(i int, decoded bool) *Lit {
	for k := range w.out {
		if l := &w.out[k]; l.Bytes == nil && (!decoded || !l.Lazy) && bytes.HasPrefix(w.msg[i:], l.Raw) {
			return l
		}
	}
	return nil
}

// take takes l, the value at msg[i], out when it is long enough.
func (w *elider) take(i int, l Lit) {
	if len(l.Raw) >= elideMin+2 {
		w.lits = append(w.lits, struct{ start int }{i})
		w.out = append(w.out, l)
		w.cut += len(l.Raw) - 2
	}
}

// ValidLiteral says whether b starts with a JSON string literal that
// encoding/json accepts (bytes that are not valid UTF-8 included: it
// reads each as U+FFFD), and returns its length with its quotes. It
// decodes nothing. A plain run is read eight bytes at a time, to the
// place of the quote, backslash or control byte that ends it, when it is
// the first run or the one before it was long (a build log); a byte at
// a time after a short one (the output of seq: an escape every few
// bytes), where each step of the wider test waits on the one before and
// a byte loop runs ahead.
func ValidLiteral(b []byte) (n int, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return 0, false
	}
	i := 1
	for wide := true; ; {
		from := i
		if wide {
			for ; i+8 <= len(b); i += 8 {
				if m := escapeBytes(binary.LittleEndian.Uint64(b[i:])); m != 0 {
					i += bits.TrailingZeros64(m) >> 3
					break
				}
			}
		}
		for i < len(b) && !stops[b[i]] {
			i++
		}
		if i >= len(b) {
			return 0, false
		}
		wide = i-from >= wideRun
		switch b[i] {
		case '"':
			return i + 1, true
		case '\\':
			if i+1 >= len(b) {
				return 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(b[i+2:]); !ok {
					return 0, false
				}
				i += 6
			default:
				return 0, false
			}
		default: // a control byte
			return 0, false
		}
	}
}

// stops are the bytes a string literal does not hold as they are: the
// quote, the backslash and the control bytes.
var stops = func() (t [256]bool) {
	for c := range ' ' {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// text takes the content text literal at msg[i] out when it is long
// enough, and returns the offset just past it.
func (w *elider) text(i int) int {
	text, n, ok := throughMemo(w, i, memoDecode, DecodeLiteral)
	if !ok {
		w.bad = true
		return -1
	}
	w.take(i, Lit{Raw: w.msg[i : i+n : i+n], Text: text})
	return i + n
}

// throughMemo reads the value at w.msg[i] with read, or through the memo
// entry of the call (memo) when what is left of the frame is big enough
// for the value to be memoised.
func throughMemo[T any](w *elider, i int, memo func(memoKey, []byte) (T, int, bool), read func([]byte) (T, int, bool)) (T, int, bool) {
	if len(w.msg)-i >= memoMin {
		return memo(memoKeyOf(w.scope, w.sid, w.tcid, w.msg[i:]), w.msg[i:])
	}
	return read(w.msg[i:])
}

// array takes the byte array at msg[i] out when it is long enough and
// DecodeByteArray reads it, and returns the offset just past it; -1 when
// it is left in the frame, to be walked as any value.
func (w *elider) array(i int) int {
	out, n, ok := throughMemo(w, i, memoDecodeArray, DecodeByteArray)
	if !ok {
		return -1
	}
	w.take(i, Lit{Raw: w.msg[i : i+n : i+n], Bytes: out})
	return i + n
}

// DecodeByteArray reads the JSON array at the start of b when it holds
// nothing but integers from 0 to 255 as JSON writes them (digits, no
// leading zero, no fraction or exponent), with JSON whitespace around
// them: it returns those bytes (never nil) and the array's length. Such
// an array is valid JSON and encoding/json reads these numbers from it
// (FuzzDecodeByteArray; internal/dialect's FuzzRawBytes holds its own
// reader of byte arrays to it). ok is false for anything else, which is
// left to the decoder: this is one scan of the array that validates and
// decodes it, for outputs sent as arrays of bytes.
func DecodeByteArray(b []byte) (out []byte, n int, ok bool) {
	out, n, _, ok = decodeByteArray(b)
	return out, n, ok
}

// AppendByteArray appends b to dst as JSON writes a []byte that is not
// base64: an array of its byte values ("[104,105]"), the form
// DecodeByteArray reads. It is for the tests and load generators that
// build such frames.
func AppendByteArray(dst, b []byte) []byte {
	dst = append(dst, '[')
	for i, c := range b {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, uint64(c), 10)
	}
	return append(dst, ']')
}

// decodeByteArray is DecodeByteArray that also returns the offset just
// past the array's last comma (decodeArrayFrom's comma), which the memo
// keeps the array up to.
func decodeByteArray(b []byte) (out []byte, n, comma int, ok bool) {
	if len(b) == 0 || b[0] != '[' {
		return nil, 0, 0, false
	}
	i := SkipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return []byte{}, i + 1, 0, true
	}
	return decodeArrayFrom(nil, b, i)
}

// decodeArrayFrom decodes the byte array b (b[0] is its '[') from offset
// i, where an element is due: its first, or one after a comma (spaces may
// come first). The bytes decoded before i are prefix, which out starts
// with (a copy). comma is the offset just past the last comma it read, 0
// when it read none: the decoding of the array up to there does not depend
// on what follows, and all but the last byte of out come before it.
func decodeArrayFrom(prefix, b []byte, i int) (out []byte, n, comma int, ok bool) {
	// The array holds no string and no other array, so it ends at the
	// first ']' (if it is one of ours), and has a byte for each comma and
	// one more: two scans at memory speed size the bytes exactly.
	end := bytes.IndexByte(b[i:], ']')
	if end < 0 {
		return nil, 0, 0, false
	}
	out = make([]byte, len(prefix), len(prefix)+bytes.Count(b[i:i+end], []byte{','})+1)
	copy(out, prefix)
	wide := !byteByByte.Load()
	for i < len(b) {
		// Compact elements (1 to 3 digits and a comma: the arrays agents
		// send), eight bytes at a time; anything else (space, the last
		// element, a number that is not a byte) is the loop's below.
		for wide && i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			m := nonDigits(x)
			l := bits.TrailingZeros64(m) >> 3
			if l == 0 || l > 3 || byte(x>>(8*l)) != ',' {
				break
			}
			v, ok := compactByte(x, l)
			if !ok {
				break
			}
			// The next element, when the word holds it whole: its end is
			// the word's second non-digit (no flag is wrong before it, as
			// neither digits nor a comma carry), and it is read beside
			// the first rather than after it.
			if m &= m - 1; m != 0 {
				e := bits.TrailingZeros64(m) >> 3
				if l2 := e - l - 1; l2 >= 1 && l2 <= 3 && byte(x>>(8*e)) == ',' {
					if v2, ok := compactByte(x>>(8*(l+1)), l2); ok {
						out = append(out, byte(v), byte(v2))
						i += e + 1
						comma = i
						continue
					}
				}
			}
			out = append(out, byte(v))
			i += l + 1
			comma = i
		}
		if i = SkipSpace(b, i); i >= len(b) {
			break
		}
		v := int(b[i]) - '0'
		switch {
		case v == 0:
			i++
		case v > 0 && v <= 9:
			i++
			for k := 0; k < 2 && i < len(b) && b[i]-'0' <= 9; k++ {
				v = v*10 + int(b[i]-'0')
				i++
			}
		default:
			return nil, 0, 0, false
		}
		if v > 255 || i < len(b) && (b[i]-'0' <= 9 || b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
			return nil, 0, 0, false
		}
		out = append(out, byte(v))
		i = SkipSpace(b, i)
		if i >= len(b) {
			break
		}
		if b[i] == ']' {
			return out, i + 1, comma, true
		}
		if b[i] != ',' {
			break
		}
		comma = i + 1
		i = SkipSpace(b, i+1)
	}
	return nil, 0, 0, false
}

const ones64 = 0x0101010101010101

// byteByByte turns the eight-byte readings that have a byte loop beside
// them off (DecodeByteArray's of compact elements, decodeInto's of short
// runs between escapes: denseRun), for the tests that hold them to their
// byte loops.
var byteByByte atomic.Bool

// nonDigits has the high bit set in the first byte of x, in memory order,
// that is not an ASCII digit, and in none before it (its trailing zeros
// count eight per digit; a word of digits has none set). x + 0x46 sets a
// byte's high bit from 0x3a up, x's own high bit marks 0x80 up, and
// (x | 0x80) - 0x30 clears it below 0x30. Only a byte of 0xba or more
// carries, into the next: the flags are exact up to the first such byte,
// so for digits and commas, as far as they go.
func nonDigits(x uint64) uint64 {
	return ((x + 0x46*ones64) | x | ^((x | highBits) - 0x30*ones64)) & highBits
}

// compactByte is the value of the l (1 to 3) digits in the low bytes of
// x, as an element of a byte array: false when it is over 255 or has a
// leading zero. The digits' values are moved up so that the last is
// byte 2 (no digit borrows from the next).
func compactByte(x uint64, l int) (uint64, bool) {
	t := (x - 0x30*ones64) & (1<<(8*l) - 1) << (8 * (3 - l))
	v := t&0xff*100 + t>>8&0xff*10 + t>>16&0xff
	return v, v <= 255 && (l == 1 || byte(x) != '0')
}

// literal returns the string literal at msg[i] as it is, or nil when
// the value there is not a string; it is only a memo key.
func (w *elider) literal(i int) []byte {
	if i >= len(w.msg) || w.msg[i] != '"' {
		return nil
	}
	return w.msg[i:min(StringEnd(w.msg, i), len(w.msg))]
}

// skipValue returns the offset just past the value at b[i], without
// checking it (the decoder does), or -1 at the end of b.
func skipValue(b []byte, i int) int {
	e := ValueEnd(b, i)
	if e <= i || e > len(b) {
		return -1
	}
	return e
}

// equalFoldASCII says whether the JSON member name b (its bytes between
// the quotes) is name, whose letters are lower-case ASCII, in any case of
// ASCII letters. A name with an escape or another letter never matches:
// it is left to the decoder.
func equalFoldASCII(b []byte, name string) bool {
	if len(b) != len(name) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// DecodeLiteral reads the JSON string literal at the start of b in one
// pass: it returns its text decoded exactly as Unquote does (escapes
// decoded; each byte that is not valid UTF-8 and each unpaired surrogate
// escape as U+FFFD) and the literal's length with its quotes. ok is false
// when b does not start with a valid string literal: an unescaped control
// byte, a bad escape or no closing quote.
func DecodeLiteral(b []byte) (text string, n int, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", 0, false
	}
	// decodeFrom sizes the text to the literal (to its first quote, more
	// when that one is escaped), not to the rest of b.
	d := decodeFrom(nil, b, 1)
	if !d.ok {
		return "", 0, false
	}
	return unsafe.String(unsafe.SliceData(d.out), len(d.out)), d.end, true
}
