package dialect

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// unquote decodes one JSON string literal (with its quotes) that the
// encoding/json decoder has already validated, as it does before it hands a
// value to an UnmarshalJSON method. Calling json.Unmarshal there instead
// would scan the bytes twice more (validation, then decoding), and strings
// of whole command outputs dominate the cost of a frame.
//
// The result equals what json.Unmarshal gives: escapes are decoded, every
// byte that is not valid UTF-8 and every unpaired surrogate escape becomes
// U+FFFD. ok is false when b is not a string literal.
func unquote(b []byte) (s string, ok bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	b = b[1 : len(b)-1]
	// Fast path: nothing to decode.
	plain := true
	for _, c := range b {
		if c == '\\' || c >= utf8.RuneSelf || c < ' ' {
			plain = false
			break
		}
	}
	if plain {
		return string(b), true
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\\':
			if i+1 >= len(b) {
				return "", false
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				sb.WriteByte(e)
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				r, ok := hex4(b[i+2:])
				if !ok {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if len(b) >= i+6 && b[i] == '\\' && b[i+1] == 'u' {
						if r2, ok := hex4(b[i+2:]); ok {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								sb.WriteRune(dec)
								i += 6
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				sb.WriteRune(r)
				continue
			default:
				return "", false
			}
			i += 2
		case c < utf8.RuneSelf:
			sb.WriteByte(c)
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				sb.WriteRune(utf8.RuneError)
			} else {
				sb.Write(b[i : i+n])
			}
			i += n
		}
	}
	return sb.String(), true
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
