package jsonlit

import (
	"cmp"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// A plan says how FastDecode fills a value of one Go type: compiled once
// per type by reflection, from the rules encoding/json decodes that type
// by (its fields as typeFields finds them, its UnmarshalJSON method),
// and kept for every later frame. A type or a field the fast decoder does
// not handle is planned as bad: a value that reaches it makes the decode
// fall back.

type kind uint8

const (
	kBad         kind = iota // not handled: fall back
	kString                  // a string kind
	kBool                    // a bool kind
	kInt                     // a signed integer kind of size bytes
	kUint                    // an unsigned integer kind of size bytes
	kFloat                   // a float kind of size bytes
	kStruct                  // a struct filled field by field
	kPtr                     // a pointer to elem (elem not a pointer)
	kSlice                   // a slice of elem
	kUnmarshaler             // *typ has UnmarshalJSON: it is handed the raw value
	kFast                    // *typ has UnmarshalJSON and UnmarshalJSONFast
)

type plan struct {
	kind   kind
	typ    reflect.Type
	size   uintptr // of an integer or float; of elem for a slice
	elem   *plan
	fields *structPlan
	// takes says *typ is a LitTaker (with kUnmarshaler or kFast).
	takes bool
	// strs says *typ is a StringUnmarshaler (with kUnmarshaler, not takes).
	strs bool
}

// structPlan is a struct's fields as encoding/json matches member names
// to them.
type structPlan struct {
	typ reflect.Type // the struct's
	// exact maps each name that selects a field to it (encoding/json's
	// byExactName); a name that selects none (two fields at the same depth)
	// maps to nil.
	exact map[string]*fieldPlan
	// folded holds the folded form (foldName) of every name in exact: a
	// member whose name is not one of them exactly but folds to one would
	// be matched case-insensitively by encoding/json, so it makes the
	// fast decode fall back.
	folded map[string]bool
	// maxFolded is the length of the longest key of folded.
	maxFolded int
	n         int // fields, each numbered in fieldPlan.bit
	// table is exact again, open-addressed by nameHash, for the decoder:
	// a frame's member names are looked up some thirty times per frame,
	// and hashing a short name this way costs less than the map's hash.
	table []slot
	mask  uint
}

type slot struct {
	name string
	f    *fieldPlan
	used bool
}

// nameHash mixes a name's length and three of its bytes.
func nameHash(b []byte) uint {
	n := uint(len(b))
	if n == 0 {
		return 0
	}
	return n*0x9E3779B1 ^ uint(b[0])*0x85EBCA6B ^ uint(b[n-1])*0xC2B2AE35 ^ uint(b[n/2])*0x27D4EB2F
}

// lookup is exact[string(name)].
func (sp *structPlan) lookup(name []byte) (f *fieldPlan, ok bool) {
	h := nameHash(name)
	for {
		h &= sp.mask
		s := &sp.table[h]
		if !s.used {
			return nil, false
		}
		if s.name == string(name) {
			return s.f, true
		}
		h++
	}
}

// index builds table from exact.
func (sp *structPlan) index() {
	size := uint(8)
	for size < 2*uint(len(sp.exact)) {
		size *= 2
	}
	sp.table, sp.mask = make([]slot, size), size-1
	for name, f := range sp.exact {
		h := nameHash([]byte(name))
		for sp.table[h&sp.mask].used {
			h++
		}
		sp.table[h&sp.mask] = slot{name: name, f: f, used: true}
	}
}

// fieldPlan is one field: reached from the struct's address through the
// embedded pointers of path, then at off.
type fieldPlan struct {
	bit  int
	path []hop
	off  uintptr
	plan *plan
	bad  bool // encoding/json fails on it (a ",string" field, an unexported embedded pointer on its path)
}

// hop is one embedded pointer on the way to a promoted field: at off
// from the struct (or from the previous hop's target), a pointer to elem
// that the decoder allocates when it is nil, as encoding/json does.
type hop struct {
	off  uintptr
	elem reflect.Type
}

// maxFields bounds the fields of a struct the fast decoder handles (the
// members it has seen are kept in a bit set of this size).
const maxFields = 256

var (
	unmarshalerType       = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType   = reflect.TypeFor[encoding.TextUnmarshaler]()
	fastType              = reflect.TypeFor[FastUnmarshaler]()
	litTakerType          = reflect.TypeFor[LitTaker]()
	stringUnmarshalerType = reflect.TypeFor[StringUnmarshaler]()
)

var (
	plans   sync.Map // reflect.Type → *plan
	planMu  sync.Mutex
	planNew = map[reflect.Type]*plan{} // plans being compiled, guarded by planMu
)

// planOf returns the plan of t, compiling it (and the plans it needs) the
// first time.
func planOf(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	planMu.Lock()
	defer planMu.Unlock()
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := compile(t)
	for typ, q := range planNew {
		plans.Store(typ, q)
	}
	clear(planNew)
	return p
}

// compile plans t; planMu is held. A type met again while it is being
// compiled (a recursive type) gets the plan under construction.
func compile(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	if p, ok := planNew[t]; ok {
		return p
	}
	p := &plan{typ: t}
	planNew[t] = p
	pt := reflect.PointerTo(t)
	p.takes = pt.Implements(litTakerType)
	switch {
	case t.Kind() == reflect.Pointer:
		// A pointer type with methods of its own cannot be declared, but
		// a pointer to a pointer is not handled.
		if e := t.Elem(); e.Kind() != reflect.Pointer {
			p.kind, p.elem = kPtr, compile(e)
		}
		return p
	case pt.Implements(unmarshalerType):
		p.kind = kUnmarshaler
		if pt.Implements(fastType) {
			p.kind = kFast
		}
		p.strs = p.kind == kUnmarshaler && !p.takes && pt.Implements(stringUnmarshalerType)
		return p
	case pt.Implements(textUnmarshalerType), t.Implements(textUnmarshalerType):
		return p // bad: encoding/json would use UnmarshalText
	}
	switch t.Kind() {
	case reflect.String:
		p.kind = kString
	case reflect.Bool:
		p.kind = kBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.kind, p.size = kInt, t.Size()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		p.kind, p.size = kUint, t.Size()
	case reflect.Float32, reflect.Float64:
		p.kind, p.size = kFloat, t.Size()
	case reflect.Slice:
		// A []byte takes base64 strings in encoding/json: not handled.
		if t.Elem().Kind() != reflect.Uint8 {
			p.kind, p.elem, p.size = kSlice, compile(t.Elem()), t.Elem().Size()
		}
	case reflect.Struct:
		if sp, ok := compileStruct(t); ok {
			p.kind, p.fields = kStruct, sp
		}
	}
	return p
}

// jsonField is a field as encoding/json's typeFields finds it.
type jsonField struct {
	name   string
	tagged bool
	index  []int
	quoted bool // a ",string" option that applies: not handled
}

// compileStruct plans the fields of struct t as encoding/json's
// typeFields selects them: embedded structs walked breadth first, the
// shallowest field of a name taking it (a tagged one before an untagged
// one at the same depth), two at the same depth taking it from each
// other. ok is false for what it does not follow (too many fields).
func compileStruct(t reflect.Type) (*structPlan, bool) {
	type queued struct {
		typ   reflect.Type
		index []int
	}
	var fields []jsonField
	next := []queued{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current := next
		next = nil
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, q := range current {
			if visited[q.typ] {
				continue
			}
			visited[q.typ] = true
			for i := range q.typ.NumField() {
				sf := q.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				index := append(slices.Clone(q.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				quoted := false
				if hasOpt(opts, "string") {
					switch ft.Kind() {
					case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64, reflect.String:
						quoted = true
					}
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					f := jsonField{name: name, tagged: tagged, index: index, quoted: quoted}
					fields = append(fields, f)
					if count[q.typ] > 1 {
						fields = append(fields, f) // annihilated below, as in typeFields
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, queued{typ: ft, index: index})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	sp := &structPlan{typ: t, exact: map[string]*fieldPlan{}, folded: map[string]bool{}}
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		group := fields[i:j]
		name := group[0].name
		i = j
		folded := string(foldName(nil, []byte(name)))
		sp.folded[folded] = true
		sp.maxFolded = max(sp.maxFolded, len(folded))
		if len(group) > 1 && len(group[0].index) == len(group[1].index) && group[0].tagged == group[1].tagged {
			sp.exact[name] = nil // no field: a member of this name falls back
			continue
		}
		if sp.n == maxFields {
			return nil, false
		}
		sp.exact[name] = fieldAt(t, group[0], sp.n)
		sp.n++
	}
	sp.index()
	return sp, true
}

// fieldAt plans the field of struct t at f.index.
func fieldAt(t reflect.Type, f jsonField, bit int) *fieldPlan {
	fp := &fieldPlan{bit: bit, bad: f.quoted}
	typ := t
	for k, i := range f.index {
		sf := typ.Field(i)
		fp.off += sf.Offset
		if k == len(f.index)-1 {
			fp.plan = compile(sf.Type)
			break
		}
		typ = sf.Type
		if typ.Kind() == reflect.Pointer {
			if !sf.IsExported() {
				fp.bad = true // encoding/json cannot set it
			}
			typ = typ.Elem()
			fp.path = append(fp.path, hop{off: fp.off, elem: typ})
			fp.off = 0
		}
	}
	return fp
}

func hasOpt(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// validTag is encoding/json's isValidTag.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// foldName appends name folded as encoding/json folds member names to
// match them to fields: ASCII letters upper-cased, every other rune the
// smallest of its Unicode simple-fold orbit.
func foldName(out, name []byte) []byte {
	for i := 0; i < len(name); {
		if c := name[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(name[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	return out
}

func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
