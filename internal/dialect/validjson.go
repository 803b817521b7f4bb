package dialect

import (
	"bytes"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// This file reads the members of JSON objects and the elements of arrays
// that encoding/json has already validated, as it has the bytes it hands
// to an UnmarshalJSON method. The few fields that take more than one JSON
// type (a rawOutput that is a string or an object, an argv or a command
// string) are read this way, so that no subtree of a frame is decoded by a
// second json.Unmarshal.

// eachMember calls fn with the key and the raw value of every member of
// the object b, in order (a repeated key comes again: the last one wins, as
// with encoding/json). The key is folded the way encoding/json matches
// keys to fields, case-insensitively: compare it with the upper-case field
// name. Nothing is called when b is not an object.
func eachMember(b []byte, fn func(key string, val []byte)) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		ke := stringEnd(b, i)
		key := foldKey(b[i:ke])
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return
		}
		i = skipSpace(b, i+1)
		ve := valueEnd(b, i)
		fn(key, b[i:ve])
		i = skipSpace(b, ve)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i = skipSpace(b, i+1)
	}
}

// eachElement calls fn with every element of the array b until fn returns
// false. Nothing is called when b is not an array.
func eachElement(b []byte, fn func(val []byte) bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != ']' {
		ve := valueEnd(b, i)
		if !fn(b[i:ve]) {
			return
		}
		i = skipSpace(b, ve)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i = skipSpace(b, i+1)
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string literal that starts at
// b[i].
func stringEnd(b []byte, i int) int {
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

// valueEnd returns the index just past the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
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

// foldKey unquotes an object key and folds it as encoding/json does to
// match keys to field names: ASCII letters to upper case, other letters
// to the upper case of their lower case. A folded key met before is
// taken from foldedKeys, so that reading it allocates nothing.
func foldKey(lit []byte) string {
	k := lit
	if len(k) >= 2 {
		k = k[1 : len(k)-1]
	}
	if bytes.IndexByte(k, '\\') >= 0 {
		s, _ := unquote(lit)
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
		out = utf8.AppendRune(out, unicode.ToUpper(unicode.ToLower(r)))
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
