package jsonlit

import (
	"bytes"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// This file reads the members of JSON objects and the elements of arrays
// that encoding/json has already validated, as it has the bytes it hands
// to an UnmarshalJSON method. The few fields that take more than one JSON
// type (an output that is a string or an object, an argv or a command
// string) are read this way, so that no subtree of a frame is decoded by a
// second json.Unmarshal. On bytes that are not valid JSON these functions
// stop early or skip ahead; they never read past b.

// EachMember calls fn with the key and the raw value of every member of
// the object b, in order (a repeated key comes again: the last one wins, as
// with encoding/json). The key is folded the way encoding/json matches
// keys to fields, case-insensitively: compare it with the upper-case field
// name. Nothing is called when b is not an object.
func EachMember(b []byte, fn func(key string, val []byte)) {
	EachMemberLit(b, func(key, val []byte) { fn(FoldKey(key), val) })
}

// EachMemberLit is EachMember with each key as its literal in b, quoted
// and not folded (for a caller that names a member as the frame spells
// it).
func EachMemberLit(b []byte, fn func(key, val []byte)) {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i = SkipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		ke := StringEnd(b, i)
		key := b[i:ke]
		i = SkipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return
		}
		i = SkipSpace(b, i+1)
		ve := ValueEnd(b, i)
		fn(key, b[i:ve])
		i = SkipSpace(b, ve)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i = SkipSpace(b, i+1)
	}
}

// EachElement calls fn with every element of the array b until fn returns
// false. Nothing is called when b is not an array.
func EachElement(b []byte, fn func(val []byte) bool) {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return
	}
	i = SkipSpace(b, i+1)
	for i < len(b) && b[i] != ']' {
		ve := ValueEnd(b, i)
		if !fn(b[i:ve]) {
			return
		}
		i = SkipSpace(b, ve)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i = SkipSpace(b, i+1)
	}
}

// SkipSpace returns the index of the first byte at or after b[i] that is
// not JSON whitespace (len(b) when there is none).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// StringEnd returns the index just past the string literal that starts at
// b[i] (its closing quote is the first one no backslash escapes), or
// len(b) when it has none. It does not check what the literal holds.
func StringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		j += k
		escaped := false
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			escaped = !escaped
		}
		if !escaped {
			return j + 1
		}
		j++
	}
}

// ValueEnd returns the index just past the value that starts at b[i]
// (len(b) at most), without checking it.
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = StringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// FoldKey unquotes an object key and folds it as encoding/json does to
// match keys to field names: ASCII letters to upper case, every other
// rune to the smallest of its Unicode simple-fold orbit (foldRune, as
// strings.EqualFold compares: "ı" is no "I"). A folded key met before is
// taken from foldedKeys, so that reading it allocates nothing.
func FoldKey(lit []byte) string {
	k := lit
	if len(k) >= 2 {
		k = k[1 : len(k)-1]
	}
	if bytes.IndexByte(k, '\\') >= 0 {
		s, _ := Unquote(lit)
		k = []byte(s)
	}
	var buf [maxFoldedKey]byte
	out := buf[:0]
	for i := 0; i < len(k); {
		c := k[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(k[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	if m := foldedKeys.Load(); m != nil {
		if s, ok := (*m)[string(out)]; ok {
			return s
		}
	}
	s := string(out)
	rememberKey(s)
	return s
}

// KeyIs says whether FoldKey(lit) is upper, a name of ASCII that has no
// lower-case letter ("OPTIONID"): for a key of plain ASCII without
// escapes (nearly every one), by comparing its bytes, without FoldKey's
// look-up.
func KeyIs(lit []byte, upper string) bool {
	if len(lit) < 2 {
		return FoldKey(lit) == upper
	}
	body := lit[1 : len(lit)-1]
	if literalRun(body) < len(body) {
		return FoldKey(lit) == upper // an escape or a rune beyond ASCII
	}
	if len(body) != len(upper) {
		return false
	}
	for i, c := range body {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// foldedKeys holds the folded keys met so far: a frame has a dozen member
// names, nearly always the same few. The names come from the frames, so
// it is bounded: at most maxFoldedKeys names of at most maxFoldedKey
// bytes. The map is never changed once stored: a name is added to a copy.
var (
	foldedKeys   atomic.Pointer[map[string]string]
	foldedKeysMu sync.Mutex
)

const (
	maxFoldedKeys = 512
	maxFoldedKey  = 64
)

func rememberKey(s string) {
	if len(s) > maxFoldedKey {
		return
	}
	foldedKeysMu.Lock()
	defer foldedKeysMu.Unlock()
	var old map[string]string
	if p := foldedKeys.Load(); p != nil {
		old = *p
	}
	if _, ok := old[s]; ok || len(old) >= maxFoldedKeys {
		return
	}
	m := make(map[string]string, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[s] = s
	foldedKeys.Store(&m)
}
