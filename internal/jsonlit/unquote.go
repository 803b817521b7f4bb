package jsonlit

import (
	"encoding/binary"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote decodes one JSON string literal (with its quotes) that a
// decoder has already validated, as it does before it hands a
// value to an UnmarshalJSON method. Calling json.Unmarshal there instead
// would scan the bytes twice more (validation, then decoding), and strings
// of whole command outputs dominate the cost of a frame.
//
// The result equals what json.Unmarshal gives: escapes are decoded, every
// byte that is not valid UTF-8 and every unpaired surrogate escape becomes
// U+FFFD. ok is false when b is not a string literal.
func Unquote(b []byte) (s string, ok bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	b = b[1 : len(b)-1]
	// Fast path: nothing to decode.
	i := plainRun(b)
	if i == len(b) {
		return string(b), true
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for {
		sb.Write(b[:i])
		b = b[i:]
		if len(b) == 0 {
			break
		}
		switch c := b[0]; {
		case c == '\\':
			if len(b) < 2 {
				return "", false
			}
			n := 2
			switch e := b[1]; e {
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
				r, ok := hex4(b[2:])
				if !ok {
					return "", false
				}
				n = 6
				if utf16.IsSurrogate(r) {
					r1 := r
					r = utf8.RuneError
					if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
						if r2, ok := hex4(b[8:]); ok {
							if dec := utf16.DecodeRune(r1, r2); dec != utf8.RuneError {
								r, n = dec, 12
							}
						}
					}
				}
				sb.WriteRune(r)
			default:
				return "", false
			}
			b = b[n:]
		case c < utf8.RuneSelf:
			sb.WriteByte(c) // a control byte, which valid JSON does not hold
			b = b[1:]
		default:
			r, n := utf8.DecodeRune(b)
			if r == utf8.RuneError && n == 1 {
				sb.WriteRune(utf8.RuneError)
			} else {
				sb.Write(b[:n])
			}
			b = b[n:]
		}
		i = plainRun(b)
	}
	return sb.String(), true
}

// plainRun returns the length of the leading run of b that needs no
// decoding: ASCII, no backslash, no control byte. It looks at eight bytes
// at a time, since command outputs are mostly such runs.
func plainRun(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		bs := x ^ ('\\' * ones)
		// A high bit in x is a non-ASCII byte; (x - 0x20...) & ^x has one
		// for a byte below 0x20, (bs - 0x01...) & ^bs for a backslash.
		if (x|(x-0x20*ones)&^x|(bs-ones)&^bs)&highs != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '\\' || c < ' ' || c >= utf8.RuneSelf {
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
