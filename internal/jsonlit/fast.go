package jsonlit

import (
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
	ok, _ := FastDecodeMarked(msg, v, lits, nil)
	return ok
}

func fastDecodeMarked(msg []byte, p *plan, ptr unsafe.Pointer, lits []Lit, marks *Marks) (bool, Marked) {
	d := decs.Get().(*Dec)
	d.b, d.i, d.lits, d.depth, d.marks = msg, 0, lits, 0, marks
	if marks != nil {
		d.marked = Marked{}
	}
	ok := d.space() && d.value(p, ptr) && !d.space()
	var marked Marked
	if marks != nil {
		marked = d.marked // d.marked is written only when marks are asked for
	}
	d.b, d.lits, d.marks = nil, nil, nil // let go of the frame
	decs.Put(d)
	return ok, marked
}

// FastDecodeMarked is FastDecode that also says where some members are
// in msg: the members marks names, of the objects it decodes into values
// of marks' struct type. A caller that would walk msg again to find them
// (to look at what it does not decode) is handed their places instead.
// What it returns is only meaningful when it says true.
func FastDecodeMarked(msg []byte, v any, lits []Lit, marks *Marks) (bool, Marked) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false, Marked{}
	}
	return fastDecodeMarked(msg, planOf(rv.Type().Elem()), rv.UnsafePointer(), lits, marks)
}

// Marks names the members FastDecodeMarked marks: in every object it
// decodes into a value of struct type in, each member whose name matches
// one of names as encoding/json matches a member's name to a field's
// (without regard to case, with Unicode's simple folding), whether or not
// in has a field of that name, and whether or not that member is decoded.
type Marks struct {
	in    reflect.Type
	names [][]byte // folded by foldName
}

// NewMarks returns the Marks of the members names in the objects of
// struct type in.
func NewMarks(in reflect.Type, names ...string) *Marks {
	m := &Marks{in: in}
	for _, n := range names {
		m.names = append(m.names, foldName(nil, []byte(n)))
	}
	return m
}

// MaxMarked bounds the marks Marked holds.
const MaxMarked = 4

// Marked is where FastDecodeMarked found the members of its Marks, in the
// order of the frame: Marks[:min(N, MaxMarked)] (N counts every one, so N
// > MaxMarked says some are not held). Objects counts the objects of the
// Marks' type it decoded.
type Marked struct {
	Objects, N int
	Marks      [MaxMarked]Mark
}

// Mark is one marked member: Name is the index of its name in the names
// of the Marks, msg[Key[0]:Key[1]] the literal of its name as sent, and
// msg[Value:] starts with its value.
type Mark struct {
	Name  int
	Key   [2]int
	Value int
}

// mark records the member named name (unquoted; plain ASCII without
// escapes when plain), whose literal is at d.b[key[0]:key[1]] and whose
// value d is at, when the Marks name it. Folding maps rune to rune (an
// invalid byte is one), so a plain name folds to one of its own length,
// and a name of more than four bytes per byte of a folded name (four per
// rune at most) cannot fold to it.
func (d *Dec) mark(name []byte, plain bool, key [2]int) {
	var buf [64]byte
	for k, n := range d.marks.names {
		if plain && len(name) != len(n) || len(name) > 4*len(n) {
			continue
		}
		if string(foldName(buf[:0], name)) == string(n) {
			if d.marked.N < MaxMarked {
				d.marked.Marks[d.marked.N] = Mark{Name: k, Key: key, Value: d.i}
			}
			d.marked.N++
			return
		}
	}
}

// FastUnmarshaler is implemented by a type with an UnmarshalJSON method
// that the fast decoder can do in its own pass: UnmarshalJSONFast must
// leave the value as UnmarshalJSON would with the raw bytes of the value
// d is at, read that value whole (Decode, Value, Str, or Elements and Members
// with each element or member value read so), and say false when it
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
	// marks, when not nil, are the members whose places marked records.
	marks  *Marks
	marked Marked
	// strs holds short strings decoded before (kinds, statuses, ids met
	// again and again), so that one met again is not allocated again. It
	// is returned only for the same bytes, so it tells nothing of the
	// frames it came from.
	strs *[256]string
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

// Str reads the string literal the decoder is at and returns the text it
// decodes to, as Unquote decodes it, in the pass that validates it. ok is
// false when the decoder is not at a string literal or the literal is not
// valid.
func (d *Dec) Str() (text string, ok bool) {
	if d.b[d.i] != '"' {
		return "", false
	}
	return d.str()
}

// ByteArray reads the array the decoder is at when it is one
// DecodeByteArray reads (byte values, nothing else), and returns its
// bytes. ok is false, and the decoder has not moved, for any other value:
// the caller reads it otherwise.
func (d *Dec) ByteArray() (out []byte, ok bool) {
	if d.b[d.i] != '[' || d.depth >= maxDepth {
		return nil, false
	}
	out, n, ok := DecodeByteArray(d.b[d.i:])
	if ok {
		d.i += n
	}
	return out, ok
}

// Elements reads the array the decoder is at, calling each with the
// decoder at every element in turn (never at whitespace). each must read
// the element whole (Decode, Value, Str, Elements, Members) and say whether it
// could. Elements says false when the decoder is not at an array, when
// the array is not valid JSON or nested deeper than the decoder reads,
// and when each says false; the decode then falls back.
func (d *Dec) Elements(each func() bool) bool {
	if d.b[d.i] != '[' {
		return false
	}
	empty, ok := d.open(']')
	for more := !empty; ok && more; {
		if !each() {
			return false
		}
		more, ok = d.next(']')
	}
	return ok
}

// Members reads the object the decoder is at, calling each with every
// member's name as its literal in the frame (quoted, validated, not
// unquoted: FoldKey folds it), the decoder at the member's value (never
// at whitespace). each must read the value whole, as with Elements, and
// say whether it could; Members says false as Elements does. A repeated
// name comes again: what it means is the caller's.
func (d *Dec) Members(each func(key []byte) bool) bool {
	if d.b[d.i] != '{' {
		return false
	}
	empty, ok := d.open('}')
	for more := !empty; ok && more; {
		if d.b[d.i] != '"' {
			return false
		}
		start := d.i
		n, valid := ValidLiteral(d.b[d.i:])
		if d.i += n; !valid || !d.space() || d.b[d.i] != ':' {
			return false
		}
		d.i++
		if !d.space() || !each(d.b[start:start+n]) {
			return false
		}
		more, ok = d.next('}')
	}
	return ok
}

// open enters the array or object the decoder is at, which end closes:
// empty says it closed at once (the decoder is past it), ok false that
// it is nested deeper than the decoder reads or the input ends. Else the
// decoder is at its first value (or member name).
func (d *Dec) open(end byte) (empty, ok bool) {
	if d.depth >= maxDepth {
		return false, false
	}
	d.depth++
	d.i++
	if !d.space() {
		return false, false
	}
	if d.b[d.i] == end {
		d.i++
		d.depth--
		return true, true
	}
	return false, true
}

// next reads what follows a value of the array or object end closes: a
// comma, after which more says the decoder is at the next value (or
// member name), or end, which the decoder is then past. ok is false for
// anything else, or when the input ends.
func (d *Dec) next(end byte) (more, ok bool) {
	if !d.space() {
		return false, false
	}
	switch d.b[d.i] {
	case ',':
		d.i++
		return true, d.space()
	case end:
		d.i++
		d.depth--
		return false, true
	}
	return false, false
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
	marking := d.marks != nil && sp.typ == d.marks.in
	if marking {
		d.marked.Objects++
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
		keyStart := d.i
		name, plain, ok := d.name()
		keyEnd := d.i
		if !ok || !d.space() || d.b[d.i] != ':' {
			return false
		}
		d.i++
		if !d.space() {
			return false
		}
		if marking {
			d.mark(name, plain, [2]int{keyStart, keyEnd})
		}
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
	dd := decodeFrom(nil, d.b[d.i:], 1)
	if !dd.ok {
		return nil, false, false
	}
	d.i += dd.end
	return dd.out, false, true
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
	// (a clean offset: see decodeFrom), into a buffer sized to the first
	// quote, the literal's end unless an escaped quote comes first.
	lit := d.b[d.i:]
	q := nextQuote(lit, 1+n)
	out := make([]byte, q-1)
	copy(out, b[:n])
	dd := decodeInto(out, n, lit, 1+n, q)
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
