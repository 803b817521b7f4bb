package jsonlit

import (
	"encoding/json"
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
