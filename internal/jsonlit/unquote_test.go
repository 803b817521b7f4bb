package jsonlit

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"math/rand/v2"
	"testing"
)

func TestUnquote(t *testing.T) {
	for _, lit := range []string{
		`""`, `"plain ascii"`, `"a\nb\tc\\d\"e\/f\b\f\r"`, `"\u00e9t\u00E9"`, `"é€😀"`,
		`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00x"`, `"\ud83d\u0041"`, `"\ud83dx"`,
		"\"\xff\xfe ok\"", "\"caf\xc3\"", `"\u0000"`,
		// Long runs, read eight bytes at a time, with an escape or a
		// non-ASCII byte at every offset of a word.
		`"0123456789abcdef0123456789abcdef"`, `"0123456\n89abcdef01234567\\9abcdef\u00e9"`,
		`"01234567é9abcdef0123456789abcde\""`, `"~~~~~~~~\/~~~~~~~\t~~~~~~~~~~~~~~~~~~~~\ud83d\ude00~~~~"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatalf("%s: encoding/json: %v", lit, err)
		}
		got, ok := Unquote([]byte(lit))
		if !ok || got != want {
			t.Errorf("Unquote(%s) = %q, %v; encoding/json gives %q", lit, got, ok, want)
		}
	}
	for _, bad := range []string{``, `"`, `abc`, `"\x"`, `"\u12"`, `"abc\"`, "\"a\x01b\"", `"a"b"`, `"\`,
		// The same after a long first run (unquoteWide).
		"\"0123456789abcdef\x01\"", `"0123456789abcdef"x"`, `"0123456789abcdef\u12"`, `"0123456789abcdef\q"`, `"0123456789abcdef\"`} {
		if _, ok := Unquote([]byte(bad)); ok {
			t.Errorf("Unquote(%q) accepted", bad)
		}
	}
}

// FuzzUnquote checks Unquote against encoding/json on every string literal
// encoding/json accepts.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud83d\ude00"`, `"\n\u0041"`, "\"\xff\"", `"\ud800\udbff"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		if json.Unmarshal(b, &want) != nil || len(b) == 0 || b[0] != '"' || b[len(b)-1] != '"' {
			return
		}
		got, ok := Unquote(b)
		if !ok || got != want {
			t.Fatalf("Unquote(%q) = %q, %v; encoding/json gives %q", b, got, ok, want)
		}
	})
}

// TestWordTestsFindTheFirstStop holds the eight-byte tests to the byte
// tables: in every word, the lowest high bit of escapeBytes is at the
// first byte that stops (a quote, a backslash or a control byte), and
// that of stopBytes at the first byte that is not plain (those and the
// bytes of 0x80 or more); both are 0 when there is none. Words are every
// byte value at every offset among plain bytes, every pair of values at
// two offsets, and random words.
func TestWordTestsFindTheFirstStop(t *testing.T) {
	first := func(w [8]byte, stop func(c byte) bool) int {
		for k, c := range w {
			if stop(c) {
				return k
			}
		}
		return 8
	}
	lowest := func(m uint64) int { return bits.TrailingZeros64(m) >> 3 }
	check := func(w [8]byte) {
		x := binary.LittleEndian.Uint64(w[:])
		if got, want := lowest(escapeBytes(x)), first(w, func(c byte) bool { return stops[c] }); got != want {
			t.Fatalf("escapeBytes(% x): first stop at %d, want %d", w, got, want)
		}
		if got, want := lowest(stopBytes(x)), first(w, func(c byte) bool { return class[c] != cPlain }); got != want {
			t.Fatalf("stopBytes(% x): first stop at %d, want %d", w, got, want)
		}
	}
	plain := [8]byte{'a', ' ', '~', '#', '!', '0', 'Z', '['}
	for a := range 256 {
		for i := range 8 {
			w := plain
			w[i] = byte(a)
			check(w)
			for c := range 256 {
				for k := i + 1; k < 8; k++ {
					w2 := w
					w2[k] = byte(c)
					check(w2)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], r.Uint64())
		check(w)
	}
}
