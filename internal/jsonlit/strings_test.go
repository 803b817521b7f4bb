package jsonlit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stringCases are literals every string decoder of jsonlit must read as
// encoding/json does: each escape, surrogate pairs and lone halves, bytes
// that are not UTF-8 at either edge of a plain run (and of a run long
// enough to be read eight bytes at a time), a literal that ends right
// after an escape, and what real output holds (NUL, \r, ANSI escapes).
func stringCases() []string {
	const word = 8                       // decodeInto reads plain runs eight bytes at a time
	long := strings.Repeat("x", wideRun) // after a run this long, eight at a time
	cases := []string{
		`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b"`, `"\f"`, `"\n"`, `"\r"`, `"\t"`,
		`"\u0041"`, `"\u00e9"`, `"\u00E9"`, `"\u20ac"`, `"\uFFFF"`, `"\u0000"`, `"\u001f"`, `"\u007f"`,
		`"\ud83d\ude00"`, `"\uD83D\uDE00"`, `"\ud83d"`, `"\ude00"`, `"\ude00\ud83d"`, `"\ud83d\ud83d\ude00"`,
		`"\ud83dx"`, `"\ud83d\n"`, `"\ud83d\u0041"`, `"\ud83d\u"`, `"x\ud800\udbff"`, `"\udbff\udfff"`,
		"\"\xff\"", "\"\xffa\"", "\"a\xff\"", "\"\xc3\"", "\"caf\xc3\"", "\"\xc3\xa9\"", "\"\xe2\x82\"", "\"\xf0\x9f\x98\"",
		"\"\xed\xa0\x80\"", "\"\xc0\xaf\"", "\"\xf4\x90\x80\x80\"", "\"é€😀\"", "\"\x80\x80\x80\x80\x80\"",
		`"a\n"`, `"ab\\"`, `"\"\""`, `"x\"y\"z"`, `"\\\""`,
		`"line 1\r\nline 2\r\n"`, `"\u0000nul\u0000"`, `"\u001b[31mred\u001b[0m\r"`, `"\u001b]0;title\u0007"`,
		`"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n"`,
	}
	// Edges of the runs: a non-UTF-8 byte, a UTF-8 rune, an escape and an
	// escaped quote just before, at and after each edge of a word.
	for _, n := range []int{0, 1, 7, 8, 9, wideRun - 1, wideRun, wideRun + 1, wideRun + word - 1, wideRun + word, 2*wideRun + 3} {
		pre := long[:min(n, len(long))] + strings.Repeat("y", max(0, n-len(long)))
		for _, mid := range []string{"\xff", "\xe2\x82", "é", "€", `\n`, `\"`, `\u00e9`, `\ud83d\ude00`, `\ud83d`} {
			cases = append(cases, `"`+pre+mid+`"`, `"`+pre+mid+pre+`"`, `"`+mid+pre+mid+`"`)
		}
	}
	// Short runs between escapes (seq's output), long enough for
	// decodeInto to read them eight bytes at a time (denseRun), with each
	// other kind of byte or escape at each offset of two words after the
	// first escape (where the byte loop takes over, or the words go on
	// past an escaped quote or backslash), and cut at each length (where
	// the end of the literal, of the frame or of the room stops them),
	// alone and followed by some of those as the literal's last bytes
	// (where it hands over just after an escape that ends no run).
	var seq strings.Builder
	for k := 1; seq.Len() < 8*word; k++ {
		fmt.Fprintf(&seq, `%d\n`, k)
	}
	dense := seq.String()
	for n := 2; n < 2+2*word+2; n++ {
		for _, mid := range []string{`\"`, `\\`, `\\\\`, `\\\"`, `\/`, `\t\t`, `\u00e9`, `\ud83d\ude00`, `\ud83d`, `\x`, "é", "\xff", "\x01", `"`, strings.Repeat("x", word-1), strings.Repeat("x", word), strings.Repeat("x", word+1), strings.Repeat("x", wideRun+1)} {
			cases = append(cases, `"`+dense[:n]+mid+dense[n:]+`"`)
		}
	}
	for n := 2; n < 6*word; n++ {
		cases = append(cases, `"`+dense[:n]+`"`)
		for _, mid := range []string{`\"`, `\\`, `\t\t`, `\u00e9`, "é", `"`} {
			cases = append(cases, `"`+dense[:n]+mid+`"`)
		}
	}
	// Many bytes that are not UTF-8 and many escaped quotes: the text
	// outgrows the room first made for it.
	cases = append(cases, `"`+strings.Repeat("\xff", 100)+`"`, `"`+strings.Repeat(`\"`, 100)+`"`,
		`"`+strings.Repeat(`a\"b`+"\xfe", 50)+`"`)
	return cases
}

// named has a member whose name the fast decoder must unquote.
type named struct {
	Name string `json:"name"`
	S    string `json:"s"`
}

// checkStringDecoders holds Unquote, DecodeLiteral (with more of a frame
// after the literal), the fast decoder's strings and member names and
// decodeFrom from the end of the first plain run to encoding/json on the
// literal lit.
func checkStringDecoders(t *testing.T, lit []byte) {
	checkDenseRun(t, lit)
	checkDenseRun(t, append(append([]byte{}, lit...), `, "tail": "x\n"}`...))
	var want string
	if json.Unmarshal(lit, &want) != nil || len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		got, n, ok := DecodeLiteral(lit)
		require.False(t, ok && n == len(lit), "DecodeLiteral(%q) = %q, %d; encoding/json refuses it", lit, got, n)
		return
	}
	got, ok := Unquote(lit)
	require.True(t, ok, "Unquote(%q) refused", lit)
	require.Equal(t, want, got, "Unquote(%q)", lit)

	frame := append(append([]byte{}, lit...), `, "tail": "\u00e9\"x"}`...)
	got, n, ok := DecodeLiteral(frame)
	require.True(t, ok, "DecodeLiteral(%q) refused", frame)
	require.Equal(t, len(lit), n, "DecodeLiteral(%q)", frame)
	require.Equal(t, want, got, "DecodeLiteral(%q)", frame)

	r := literalRun(lit[1:])
	d := decodeFrom(append([]byte{}, lit[1:1+r]...), frame, 1+r)
	require.True(t, d.ok, "decodeFrom(%q, %d) refused", frame, 1+r)
	require.Equal(t, want, string(d.out), "decodeFrom(%q, %d)", frame, 1+r)
	if d.clean > 0 {
		// What precedes a clean offset decodes to the text up to cleanOut.
		require.Equal(t, string(d.out[:d.cleanOut]), mustDecode(t, append(append([]byte{}, lit[:d.clean]...), '"')))
	}

	msg := []byte(`{"s":` + string(lit) + `,"n\u0061me":` + string(lit) + `}`)
	var fast, std named
	require.NoError(t, json.Unmarshal(msg, &std))
	require.True(t, FastDecode(msg, &fast, nil), "FastDecode(%s) said no", msg)
	require.Equal(t, std, fast, "FastDecode(%s)", msg)
	require.Equal(t, want, fast.S)

	// A member name that needs decoding, matched to its field (or not).
	key := []byte(`{` + string(lit) + `:"v","s":"k","x":` + string(lit) + `}`)
	var kv, kvStd struct{ S, X string }
	require.NoError(t, json.Unmarshal(key, &kvStd))
	if FastDecode(key, &kv, nil) { // it may leave a long unknown name to the one pass
		require.Equal(t, kvStd, kv, "FastDecode(%s)", key)
	}
}

// checkDenseRun holds decodeInto's eight-byte reading of short runs
// between escapes (denseRun) to its byte loop on the literal at the start
// of b: the same text, end, clean offset and verdict.
func checkDenseRun(t *testing.T, b []byte) {
	if len(b) == 0 {
		return
	}
	got := decodeFrom(nil, b, 1)
	byteByByte.Store(true)
	want := decodeFrom(nil, b, 1)
	byteByByte.Store(false)
	require.Equal(t, want, got, "decodeFrom(%q, 1) differs from its byte loop", b)
}

func mustDecode(t *testing.T, lit []byte) string {
	var s string
	require.NoError(t, json.Unmarshal(lit, &s), "%q", lit)
	return s
}

func TestStringDecodersAreEncodingJSON(t *testing.T) {
	for _, c := range stringCases() {
		checkStringDecoders(t, []byte(c))
	}
}

// TestDecodeLiteralSizesToTheLiteral: the text of a literal at the start
// of a long frame does not keep an array the size of the frame.
func TestDecodeLiteralSizesToTheLiteral(t *testing.T) {
	frame := []byte(`"a\nb"` + strings.Repeat(" ", 1<<16))
	got, n, ok := DecodeLiteral(frame)
	require.True(t, ok)
	require.Equal(t, 6, n)
	require.Equal(t, "a\nb", got)
	d := decodeFrom(nil, frame, 1)
	require.LessOrEqual(t, cap(d.out), 8)
}

// FuzzStringDecoders holds every string decoder of jsonlit to
// encoding/json on the literals it accepts.
func FuzzStringDecoders(f *testing.F) {
	for _, c := range stringCases() {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStringDecoders(t, b)
	})
}
