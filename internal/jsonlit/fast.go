package jsonlit

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"sync"
	"unsafe"
)

// FastDecode is json.Unmarshal for the common case, in one pass of its own
// over msg: it validates what encoding/json validates, matches member
// names to the fields of a plan compiled once per type (planOf), decodes
// the values of those fields and skips every other value, validating it
// without decoding it. A field of a type with an UnmarshalJSON method (the
// raw types of the dialects) is handed the validated value, as
// encoding/json hands it, or, for a string literal and a
// StringUnmarshaler, the text the literal decodes to, decoded in the pass
// that validates it; a FastUnmarshaler decodes itself in the same pass.
//
// It says true only when what it decoded into *v is what json.Unmarshal
// would decode with no error: on any doubt it stops and says false, and
// *v is then partly written, so the caller must reset it and decode msg
// otherwise (Decode does). It falls back on invalid JSON, a value of
// another JSON type than its field's Go type, a member name that is not a
// field's name but that encoding/json could match to one case-
// insensitively (with Unicode folding), a member that comes twice for the
// same field, a value nested deeper than maxDepth, a field of a type it
// does not plan (maps, interfaces, arrays, []byte, ",string" fields,
// types with only UnmarshalText), an UnmarshalJSON method that fails, and
// a non-empty slice to decode into. v must be a non-nil pointer.
//
// lits are the values ElideMembers took out of the frame msg is the light
// copy of: where a field of a LitTaker type meets the "" or [] that stands
// for one of them, it is handed the Lit instead.
func FastDecode(msg []byte, v any, lits []Lit) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	return fastDecode(msg, planOf(rv.Type().Elem()), rv.UnsafePointer(), lits)
}

// FastDecodeTaking is FastDecode of a whole frame (no lits) that does in
// its own pass what ElideMembers does in a walk before it: where a
// LitTaker field meets a string literal or a byte array of at least the
// size ElideMembers takes out, in a frame of at least the size it walks,
// the value is read whole and noted, and light is msg with each such
// value "" or [] (nil when there is none), which a walk of the frame
// after the decode reads as it read ElideMembers' light frame. A literal
// of a field with the TextField option is validated and decoded in one
// scan, through the memo of the call under scope (as ElideMembers
// decodes a content text), and handed over as a Lit (lits are those);
// another literal is validated and handed over as it is, to be unquoted
// if it is read; a literal the frame repeats byte for byte is not read
// again. A byte array is decoded in the scan that validates it
// (DecodeByteArray). ok false: as FastDecode.
func FastDecodeTaking[T any](msg []byte, v *T, scope string) (light []byte, lits []Lit, ok bool) {
	d := decs.Get().(*Dec)
	d.b, d.i, d.lits, d.depth = msg, 0, nil, 0
	if len(msg) >= elideFrame {
		d.taken = &d.tk
		d.tk.scope = scope
	}
	ok = d.space() && d.value(planOf(reflect.TypeFor[T]()), unsafe.Pointer(v)) && !d.space()
	if ok {
		light, lits = d.tk.light(msg), d.tk.decodedLits()
	}
	d.tk = taken{}
	d.release()
	return light, lits, ok
}

// taken holds where FastDecodeTaking handed a LitTaker field a big value
// of the frame whole: at most maxTaken of them, in the order of the
// frame.
type taken struct {
	n     int
	spans [maxTaken]struct {
		start, end int
		array      bool
		decoded    bool   // a literal of a TextField, decoded
		text       string // its text
	}
	// scope, and sid and tcid, the last sessionId and toolCallId literals
	// met before a text, are the memo's key, as ElideMembers keys it.
	scope     string
	sid, tcid []byte
}

// decodedLits returns the literals t notes with their decoded texts (each
// valid UTF-8, as DecodeLiteral makes it), for a caller that marks texts
// it hands on as checked; nil when there are none.
func (t *taken) decodedLits() []Lit {
	var out []Lit
	for _, s := range t.spans[:t.n] {
		if s.decoded {
			out = append(out, Lit{Text: s.text})
		}
	}
	return out
}

// maxTaken bounds the values a taken notes; the ones past it stay in the
// light frame, which reads the same either way.
const maxTaken = 8

// light returns msg with every value t notes replaced by "" (a literal)
// or [] (an array): what ElideMembers returns for those values. Each is
// a valid value of the same JSON type in the same place, so the light
// frame is valid exactly when msg is, and differs from it only where a
// LitTaker field read a value whole. nil when t notes none.
func (t *taken) light(msg []byte) []byte {
	if t.n == 0 {
		return nil
	}
	cut := 0
	for _, s := range t.spans[:t.n] {
		cut += s.end - s.start - 2
	}
	light := make([]byte, 0, len(msg)-cut)
	from := 0
	for _, s := range t.spans[:t.n] {
		light = append(light, msg[from:s.start]...)
		if s.array {
			light = append(light, '[', ']')
		} else {
			light = append(light, '"', '"')
		}
		from = s.end
	}
	return append(light, msg[from:]...)
}

func fastDecode(msg []byte, p *plan, ptr unsafe.Pointer, lits []Lit) bool {
	d := decs.Get().(*Dec)
	d.b, d.i, d.lits, d.depth = msg, 0, lits, 0
	ok := d.space() && d.value(p, ptr) && !d.space()
	d.release()
	return ok
}

// release lets go of the frame and puts d back in the pool.
func (d *Dec) release() {
	d.b, d.lits, d.taken = nil, nil, nil
	for k := range d.nseen {
		d.seen[k] = nil
	}
	d.nseen = 0
	decs.Put(d)
}

// note notes in d.taken the value at d.b[start:end] handed whole to a
// LitTaker field, and a literal's decoded text.
func (d *Dec) note(start, end int, array, decoded bool, text string) {
	t := d.taken
	if t.n == maxTaken {
		return
	}
	s := &t.spans[t.n]
	s.start, s.end, s.array, s.decoded, s.text = start, end, array, decoded, text
	t.n++
}

// noteID keeps, for the memo's key, the literal of a sessionId or
// toolCallId member whose value starts at d.b[start] and ends at d.i.
func (d *Dec) noteID(name []byte, start int) {
	if d.b[start] != '"' {
		return
	}
	switch string(name) {
	case "sessionId":
		d.taken.sid = d.b[start:d.i]
	case "toolCallId":
		d.taken.tcid = d.b[start:d.i]
	}
}

// takeText reads the string literal at rest, the rest of the frame, for
// a LitTaker field when it is one ElideMembers would take out: one the
// frame held before, byte for byte, is that literal and its text; another
// is validated and decoded in one pass, through the memo of the call when
// it is long enough for it. done false: read it as any value.
func (d *Dec) takeText(p *plan, ptr unsafe.Pointer, rest []byte) (ok, done bool) {
	t := d.taken
	n, text := 0, ""
	for k := range t.n {
		if s := &t.spans[k]; s.decoded && bytes.HasPrefix(rest, d.b[s.start:s.end]) {
			n, text = s.end-s.start, s.text
			break
		}
	}
	if n == 0 {
		// Shorter than what is taken when it ends within elideMin+2 bytes:
		// only those are looked at, as a snapshot of megabytes would
		// otherwise be scanned once more here.
		if w := rest[:min(len(rest), elideMin+2)]; StringEnd(w, 0) < len(w) {
			return false, false
		}
		if len(rest) >= memoMin {
			text, n, ok = memoDecode(memoKeyOf(t.scope, t.sid, t.tcid, rest), rest)
		} else {
			text, n, ok = DecodeLiteral(rest)
		}
		if !ok {
			return false, true
		}
	}
	l := Lit{Raw: rest[:n:n], Text: text}
	if !reflect.NewAt(p.typ, ptr).Interface().(LitTaker).TakeLit(&l) {
		// Not a taker of literals: it reads the literal, validated.
		if reflect.NewAt(p.typ, ptr).Interface().(json.Unmarshaler).UnmarshalJSON(l.Raw) != nil {
			return false, true
		}
	} else {
		d.note(d.i, d.i+n, false, true, text)
	}
	d.i += n
	return true, true
}

// FastUnmarshaler is implemented by a type with an UnmarshalJSON method
// that the fast decoder can do in its own pass: UnmarshalJSONFast must
// leave the value as UnmarshalJSON would with the raw bytes of the value
// d is at, read that value whole (Decode or Value), and say false when it
// cannot (the whole decode then falls back).
type FastUnmarshaler interface {
	UnmarshalJSONFast(d *Dec) bool
}

// StringUnmarshaler is implemented by a type whose UnmarshalJSON, given a
// string literal, keeps the text it decodes to (as Unquote decodes it)
// and nothing else of the literal: the fast decoder then decodes the
// literal in the pass that validates it and hands over the text, where
// it would validate it, then have UnmarshalJSON unquote it.
type StringUnmarshaler interface {
	UnmarshalJSONString(text string)
}

// LitTaker is implemented by a type that takes back a value ElideMembers
// took out of a frame (see FastDecode). TakeLit says false when l is not
// of a kind it takes; its UnmarshalJSON then reads the "" or [].
type LitTaker interface {
	TakeLit(l *Lit) bool
}

// Dec is the fast decoder, at one value when it is handed to
// UnmarshalJSONFast.
type Dec struct {
	b     []byte
	i     int
	lits  []Lit
	depth int
	// strs holds short strings decoded before (kinds, statuses, ids met
	// again and again), so that one met again is not allocated again. It
	// is returned only for the same bytes, so it tells nothing of the
	// frames it came from.
	strs *[256]string
	// seen are the long literals a LitTaker field was handed in this
	// frame (at most len(seen)), so that one the frame repeats byte for
	// byte (Codex's stdout and aggregated_output) is not validated again.
	seen  [4][]byte
	nseen int
	// taken, when not nil (it is then &tk), notes the big values handed
	// whole to LitTaker fields (FastDecodeTaking).
	taken *taken
	tk    taken
	// decode is the TextField option of the field being decoded.
	decode bool
}

// maxCachedString bounds the strings Dec.strs holds.
const maxCachedString = 24

var decs = sync.Pool{New: func() any { return new(Dec) }}

// maxDepth bounds the nesting of objects and arrays the fast decoder
// reads; a deeper frame falls back.
const maxDepth = 64

// Kind returns the first byte of the value the decoder is at: '{', '[',
// '"', 't', 'f', 'n', or the first byte of a number.
func (d *Dec) Kind() byte { return d.b[d.i] }

// Decode decodes the value into v, a non-nil pointer, by its type's plan.
func (d *Dec) Decode(v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	return d.value(planOf(rv.Type().Elem()), rv.UnsafePointer())
}

// Value reads the value whole, validating it, and returns its bytes.
func (d *Dec) Value() ([]byte, bool) {
	start := d.i
	if !d.skip() {
		return nil, false
	}
	return d.b[start:d.i], true
}

// space skips whitespace and says whether a byte follows.
func (d *Dec) space() bool {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return true
		}
	}
	return false
}

// literal reads true, false or null.
func (d *Dec) literal(lit string) bool {
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// value decodes the value at d.b[d.i] (not whitespace) into ptr by p.
func (d *Dec) value(p *plan, ptr unsafe.Pointer) bool {
	c := d.b[d.i]
	switch p.kind {
	case kString:
		switch c {
		case '"':
			s, ok := d.str()
			*(*string)(ptr) = s
			return ok
		case 'n':
			return d.literal("null")
		}
	case kBool:
		switch c {
		case 't':
			*(*bool)(ptr) = true
			return d.literal("true")
		case 'f':
			*(*bool)(ptr) = false
			return d.literal("false")
		case 'n':
			return d.literal("null")
		}
	case kInt, kUint, kFloat:
		if c == 'n' {
			return d.literal("null")
		}
		return d.number(p, ptr)
	case kStruct:
		switch c {
		case '{':
			return d.object(p.fields, ptr)
		case 'n':
			return d.literal("null")
		}
	case kPtr:
		if c == 'n' {
			*(*unsafe.Pointer)(ptr) = nil
			return d.literal("null")
		}
		q := *(*unsafe.Pointer)(ptr)
		if q == nil {
			q = reflect.New(p.elem.typ).UnsafePointer()
			*(*unsafe.Pointer)(ptr) = q
		}
		return d.value(p.elem, q)
	case kSlice:
		switch c {
		case '[':
			return d.array(p, ptr)
		case 'n':
			*(*sliceHeader)(ptr) = sliceHeader{}
			return d.literal("null")
		}
	case kUnmarshaler:
		if p.strs && c == '"' {
			text, ok := d.str()
			reflect.NewAt(p.typ, ptr).Interface().(StringUnmarshaler).UnmarshalJSONString(text)
			return ok
		}
		if p.takes && d.lits == nil {
			if ok, done := d.takeWhole(p, ptr, c); done {
				return ok
			}
		}
		start := d.i
		if !d.skip() {
			return false
		}
		raw := d.b[start:d.i]
		if p.takes && len(raw) == 2 && d.take(p, ptr, raw[0] == '[') {
			return true
		}
		return reflect.NewAt(p.typ, ptr).Interface().(json.Unmarshaler).UnmarshalJSON(raw) == nil
	case kFast:
		if p.takes && d.i+2 <= len(d.b) && (string(d.b[d.i:d.i+2]) == `""` || string(d.b[d.i:d.i+2]) == `[]`) {
			d.i += 2
			if d.take(p, ptr, c == '[') {
				return true
			}
			d.i -= 2
		}
		return reflect.NewAt(p.typ, ptr).Interface().(FastUnmarshaler).UnmarshalJSONFast(d)
	}
	return false
}

// takeWhole reads the value of a LitTaker field in a frame that is not
// a light one (no lits) as ElideMembers would take it out, in the same
// pass: a string literal that repeats, byte for byte, a long one handed
// to such a field before is not validated again (it is that literal,
// whole); a byte array of plain byte values is validated and decoded in
// one scan (DecodeByteArray) and handed over as a Lit, where the scan
// would validate it and UnmarshalJSON read it again. done false: read it
// as any value.
func (d *Dec) takeWhole(p *plan, ptr unsafe.Pointer, c byte) (ok, done bool) {
	rest := d.b[d.i:]
	switch c {
	case '"':
		if d.taken != nil && d.decode {
			if ok, done = d.takeText(p, ptr, rest); done {
				return ok, done
			}
		}
		n := 0
		if t := d.taken; t != nil {
			// A literal taken before, a decoded content text included
			// (OpenCode repeats it in rawOutput.output).
			for k := range t.n {
				if s := &t.spans[k]; !s.array && bytes.HasPrefix(rest, d.b[s.start:s.end]) {
					n = s.end - s.start
					break
				}
			}
		}
		for _, s := range d.seen[:d.nseen] {
			if n > 0 {
				break
			}
			if bytes.HasPrefix(rest, s) {
				n = len(s)
				break
			}
		}
		if n == 0 {
			if n, ok = ValidLiteral(rest); !ok {
				return false, true
			}
			if n >= elideMin+2 && d.nseen < len(d.seen) {
				d.seen[d.nseen] = rest[:n:n]
				d.nseen++
			}
		}
		if d.taken != nil && n >= elideMin+2 {
			d.note(d.i, d.i+n, false, false, "")
		}
		d.i += n
		return reflect.NewAt(p.typ, ptr).Interface().(json.Unmarshaler).UnmarshalJSON(rest[:n:n]) == nil, true
	case '[':
		out, n, ok := DecodeByteArray(rest)
		if !ok {
			return false, false
		}
		l := Lit{Raw: rest[:n:n], Bytes: out}
		if !reflect.NewAt(p.typ, ptr).Interface().(LitTaker).TakeLit(&l) {
			return false, false
		}
		if d.taken != nil && n >= elideMin+2 {
			d.note(d.i, d.i+n, true, false, "")
		}
		d.i += n
		return true, true
	}
	return false, false
}

// take hands the Lit that ends where the decoder is to the LitTaker at
// ptr, when there is one of the kind (array or literal) it read.
func (d *Dec) take(p *plan, ptr unsafe.Pointer, array bool) bool {
	for k := range d.lits {
		if l := &d.lits[k]; l.End == int64(d.i) && (l.Bytes != nil) == array {
			return reflect.NewAt(p.typ, ptr).Interface().(LitTaker).TakeLit(l)
		}
	}
	return false
}

type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// array decodes the array at d.b[d.i] into the slice at ptr, as
// encoding/json does into a nil slice: an empty array gives an empty
// slice that is not nil.
func (d *Dec) array(p *plan, ptr unsafe.Pointer) bool {
	h := (*sliceHeader)(ptr)
	if h.data != nil || d.depth >= maxDepth {
		return false // encoding/json would decode into the elements there
	}
	d.depth++
	d.i++
	if !d.space() {
		return false
	}
	sv := reflect.NewAt(p.typ, ptr).Elem()
	if d.b[d.i] == ']' {
		d.i++
		d.depth--
		sv.Set(reflect.MakeSlice(p.typ, 0, 0))
		return true
	}
	for n := 0; ; n++ {
		if n == h.cap {
			sv.Grow(max(4, n))
		}
		h.len = n + 1
		if !d.value(p.elem, unsafe.Add(h.data, uintptr(n)*p.size)) || !d.space() {
			return false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
			if !d.space() {
				return false
			}
			continue
		case ']':
			d.i++
			d.depth--
			return true
		}
		return false
	}
}

// object decodes the object at d.b[d.i] into the struct at base.
func (d *Dec) object(sp *structPlan, base unsafe.Pointer) bool {
	if d.depth >= maxDepth {
		return false
	}
	d.depth++
	d.i++
	if !d.space() {
		return false
	}
	if d.b[d.i] == '}' {
		d.i++
		d.depth--
		return true
	}
	var seen [maxFields / 64]uint64
	var fold [64]byte
	for {
		if d.b[d.i] != '"' {
			return false
		}
		name, plain, ok := d.name()
		if !ok || !d.space() || d.b[d.i] != ':' {
			return false
		}
		d.i++
		if !d.space() {
			return false
		}
		vstart := d.i
		f, exact := sp.lookup(name)
		switch {
		case f != nil:
			if f.bad || seen[f.bit/64]&(1<<(f.bit%64)) != 0 {
				return false // a repeated member: encoding/json's last-wins or merge is left to it
			}
			seen[f.bit/64] |= 1 << (f.bit % 64)
			ptr := base
			for _, h := range f.path {
				q := (*unsafe.Pointer)(unsafe.Add(ptr, h.off))
				if *q == nil {
					*q = reflect.New(h.elem).UnsafePointer()
				}
				ptr = *q
			}
			d.decode = f.decode
			if !d.value(f.plan, unsafe.Add(ptr, f.off)) {
				return false
			}
		case exact:
			return false // a name two fields take from each other
		default:
			// A member no field has: unless encoding/json would match it
			// case-insensitively, skip it.
			if plain && len(name) > sp.maxFolded {
				// ASCII folding keeps the length: it cannot fold to one.
			} else if plain {
				if sp.folded[string(foldName(fold[:0], name))] {
					return false
				}
			} else if sp.folded[string(foldName(fold[:0], name))] {
				return false
			}
			if !d.skip() {
				return false
			}
		}
		if d.taken != nil && len(name) >= len("toolCallId")-1 && len(name) <= len("toolCallId") {
			d.noteID(name, vstart)
		}
		if !d.space() {
			return false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
			if !d.space() {
				return false
			}
			continue
		case '}':
			d.i++
			d.depth--
			return true
		}
		return false
	}
}

// name reads a member name: its bytes, unquoted (a view of the frame when
// it is plain ASCII without escapes), and whether it was.
func (d *Dec) name() (name []byte, plain, ok bool) {
	b := d.b[d.i+1:]
	n := literalRun(b)
	if n < len(b) && b[n] == '"' {
		d.i += n + 2
		return b[:n], true, true
	}
	m, ok := ValidLiteral(d.b[d.i:])
	if !ok {
		return nil, false, false
	}
	s, ok := Unquote(d.b[d.i : d.i+m])
	d.i += m
	return []byte(s), false, ok
}

// str reads a string literal into a string, as encoding/json decodes it.
func (d *Dec) str() (string, bool) {
	b := d.b[d.i+1:]
	n := literalRun(b)
	if n < len(b) && b[n] == '"' {
		d.i += n + 2
		if n > maxCachedString || n == 0 {
			return string(b[:n]), true
		}
		if d.strs == nil {
			d.strs = new([256]string)
		}
		h := (uint(n)*0x9E3779B1 ^ uint(b[0])*0x85EBCA6B ^ uint(b[n-1])*0xC2B2AE35 ^ uint(b[n/2])*0x27D4EB2F) >> 8 & 255
		if s := d.strs[h]; s == string(b[:n]) {
			return s, true
		}
		s := string(b[:n])
		d.strs[h] = s
		return s, true
	}
	// Validated and decoded in one pass, from the end of the plain run
	// (a clean offset: see decodeFrom); out is sized to the first quote,
	// the literal's end unless an escaped quote comes first.
	hint := n + 1
	if q := bytes.IndexByte(b[n:], '"'); q > 0 {
		hint += q
	}
	dd := decodeFrom(append(make([]byte, 0, hint), b[:n]...), d.b[d.i:], 1+n)
	if !dd.ok {
		return "", false
	}
	d.i += dd.end
	return unsafe.String(unsafe.SliceData(dd.out), len(dd.out)), true
}

// numberEnd returns the offset just past the number at b[i], or -1 when
// no valid JSON number starts there.
func numberEnd(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		for i++; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		for i++; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		for i++; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	}
	return i
}

// number decodes a number into an integer or float field as
// encoding/json does; one that does not fit (a fraction into an integer,
// an overflow) falls back.
func (d *Dec) number(p *plan, ptr unsafe.Pointer) bool {
	end := numberEnd(d.b, d.i)
	if end < 0 {
		return false
	}
	s := unsafe.String(&d.b[d.i], end-d.i)
	d.i = end
	bits := int(p.size * 8)
	switch p.kind {
	case kInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || bits < 64 && (n < -1<<(bits-1) || n > 1<<(bits-1)-1) {
			return false
		}
		switch p.size {
		case 1:
			*(*int8)(ptr) = int8(n)
		case 2:
			*(*int16)(ptr) = int16(n)
		case 4:
			*(*int32)(ptr) = int32(n)
		default:
			*(*int64)(ptr) = n
		}
	case kUint:
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || bits < 64 && n > 1<<bits-1 {
			return false
		}
		switch p.size {
		case 1:
			*(*uint8)(ptr) = uint8(n)
		case 2:
			*(*uint16)(ptr) = uint16(n)
		case 4:
			*(*uint32)(ptr) = uint32(n)
		default:
			*(*uint64)(ptr) = n
		}
	case kFloat:
		f, err := strconv.ParseFloat(s, bits)
		if err != nil || bits == 32 && math.Abs(f) > math.MaxFloat32 {
			return false
		}
		if bits == 32 {
			*(*float32)(ptr) = float32(f)
		} else {
			*(*float64)(ptr) = f
		}
	}
	return true
}

// skip reads the value at d.b[d.i] (not whitespace) whole, validating it
// as encoding/json does, without decoding it.
func (d *Dec) skip() bool {
	switch c := d.b[d.i]; c {
	case '"':
		n, ok := ValidLiteral(d.b[d.i:])
		d.i += n
		return ok
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	case '{', '[':
		if d.depth >= maxDepth {
			return false
		}
		d.depth++
		d.i++
		if !d.space() {
			return false
		}
		closing := c + 2 // '}' or ']'
		if d.b[d.i] == closing {
			d.i++
			d.depth--
			return true
		}
		for {
			if c == '{' {
				if d.b[d.i] != '"' {
					return false
				}
				n, ok := ValidLiteral(d.b[d.i:])
				if d.i += n; !ok || !d.space() || d.b[d.i] != ':' {
					return false
				}
				d.i++
				if !d.space() {
					return false
				}
			}
			if !d.skip() || !d.space() {
				return false
			}
			switch d.b[d.i] {
			case ',':
				d.i++
				if !d.space() {
					return false
				}
				continue
			case closing:
				d.i++
				d.depth--
				return true
			}
			return false
		}
	}
	end := numberEnd(d.b, d.i)
	if end < 0 {
		return false
	}
	d.i = end
	return true
}
