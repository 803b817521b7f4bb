package jsonlit

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzDecodeLiteral holds DecodeLiteral to encoding/json: the same text
// for every literal it accepts, and a refusal for every one it refuses;
// and ValidLiteral to DecodeLiteral: the same literals, of the same
// length.
func FuzzDecodeLiteral(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud83d\ude00"`, `"\n\u0041"`, "\"\xff\"", `"\ud800\udbff"`, `"a\qb"`, "\"\x01\"", `"\u00"`, `"x\"y"`, `"\\"`, `"abc`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, n, ok := DecodeLiteral(b)
		if vn, vok := ValidLiteral(b); vok != ok || vn != n {
			t.Fatalf("ValidLiteral(%q) = %d, %v; DecodeLiteral: %d, %v", b, vn, vok, n, ok)
		}
		var want string
		wantErr := json.Unmarshal(b[:max(n, 0)], &want)
		if !ok {
			// No valid literal starts b: no prefix of b that starts and
			// ends with a quote is one.
			for i := 1; i <= len(b) && b[0] == '"'; i++ {
				if b[i-1] == '"' && i > 1 && json.Unmarshal(b[:i], &want) == nil {
					t.Fatalf("DecodeLiteral(%q) refused it, but %q is a literal", b, b[:i])
				}
			}
			return
		}
		if wantErr != nil || got != want {
			t.Fatalf("DecodeLiteral(%q) = %q (%d bytes); encoding/json: %q, %v", b, got, n, want, wantErr)
		}
	})
}

// TestValidLiteralAtEveryPlace puts each kind of byte that ends a plain
// run (the closing quote, an escape of each kind, a bad escape, a control
// byte, a byte that is not ASCII) at every place of a word, after a run
// long enough to be read eight bytes at a time and after a short one, and
// holds ValidLiteral to DecodeLiteral (which FuzzDecodeLiteral holds to
// encoding/json): the same verdict and the same length.
func TestValidLiteralAtEveryPlace(t *testing.T) {
	stops := []string{`"`, `\n"`, `\u0041"`, `\ud83d\ude00"`, `\q"`, `\u00g0"`, "\x01\"", "\x7f\"", "\xc3\xa9\"", "\xff\"", `\`, ``}
	for _, lead := range []string{"", "ab", strings.Repeat("x", 40) + `\t`} {
		for k := range 24 {
			for _, stop := range stops {
				for _, tail := range []string{"", `rest"`, strings.Repeat("y", 30) + `"`, `\n\n"`} {
					b := []byte(`"` + lead + strings.Repeat("p", k) + stop + tail)
					_, n, ok := DecodeLiteral(b)
					vn, vok := ValidLiteral(b)
					require.Equal(t, ok, vok, "verdict on %q", b)
					require.Equal(t, n, vn, "length of %q", b)
				}
			}
		}
	}
}

// BenchmarkDecodeLiteral reads one 512 KiB content text of build-log
// lines (a `\n` escape every 45 bytes or so), and one of `seq` output
// (an escape every 6 or 7 bytes), several ways: DecodeLiteral (validate
// and decode in one pass, what Elide does), ValidLiteral (validate only,
// what Elide does with a lazy text), jsontext's validation of the literal
// (the floor of the one-pass decoder), go-json-experiment's decode of the
// literal into a string (what the one-pass decode of a frame did with it,
// before unquote read it again), and unquote alone.
func BenchmarkDecodeLiteral(b *testing.B) {
	var log, seq strings.Builder
	for i := 1; log.Len() < 512<<10; i++ {
		log.WriteString("step ")
		log.WriteString(strings.Repeat("x", i%7))
		log.WriteString(": compiled package in 12 ms\n")
	}
	for i := 1; seq.Len() < 512<<10; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	for _, text := range []struct{ name, s string }{{"log", log.String()}, {"seq", seq.String()}} {
		lit, err := json.Marshal(text.s)
		require.NoError(b, err)
		runReads(b, text.name, len(lit), []benchRead{
			{"DecodeLiteral", func() bool { _, _, ok := DecodeLiteral(lit); return ok }},
			{"ValidLiteral", func() bool { _, ok := ValidLiteral(lit); return ok }},
			{"jsontext-scan", func() bool { return jsontext.Value(lit).IsValid() }},
			{"go-json-experiment", func() bool { var s string; return jsonv2.Unmarshal(lit, &s, onePass) == nil }},
			{"unquote", func() bool { _, ok := Unquote(lit); return ok }},
		})
	}
}

// FuzzDecodeByteArray holds DecodeByteArray to encoding/json: an array
// it reads is valid JSON, and encoding/json reads the same numbers from it
// (internal/dialect's FuzzRawBytes holds its own reader to the same bytes).
// It also holds the eight-byte reading of compact elements to the byte
// loop: the same bytes, length and verdict for every input.
func FuzzDecodeByteArray(f *testing.F) {
	for _, s := range byteArraySeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkByteArray(t, b)
	})
}

// byteArraySeeds are short arrays, valid and not, and long ones that the
// eight-byte reading meets: every width of element, spaces, a leading
// zero, numbers past 255, a fraction and an exponent mid-array, and an
// array cut short.
func byteArraySeeds() []string {
	seeds := []string{"[]", "[ ]", "[0]", "[1,2,3]", "[ 255 , 0\n,\t10\r]", "[256]", "[01]", "[1.0]", "[1e2]", "[-1]", "[1,]", "[1 2]", "[1", `["a"]`, "[[1]]", "[1,2] x", "[12345]"}
	long := "115,116,101,112,32,48,10,0,9,99,255,1,22,200,7"
	for _, mid := range []string{"", "256", "1000", "01", "00", "1.5", "2e1", "-3", " 4 ", "5 ", "\t6", "a", ",", "", "300,"} {
		seeds = append(seeds, "["+long+","+mid+","+long+"]", "["+long+","+mid+"]", "["+mid+","+long+"]")
	}
	return append(seeds, "["+long, "["+long+",", "["+long+"]  ", "["+long+"]]")
}

// checkByteArray checks DecodeByteArray(b) against encoding/json and
// against its byte loop.
func checkByteArray(t *testing.T, b []byte) {
	out, n, ok := DecodeByteArray(b)
	byteByByte.Store(true)
	slowOut, slowN, slowOK := DecodeByteArray(b)
	byteByByte.Store(false)
	require.Equal(t, slowOK, ok, "%q: the verdict differs from the byte loop's", b)
	require.Equal(t, slowN, n, "%q: the length differs from the byte loop's", b)
	require.Equal(t, slowOut, out, "%q: the bytes differ from the byte loop's", b)
	if !ok {
		return
	}
	require.NotNil(t, out)
	arr := b[:n]
	require.True(t, json.Valid(arr), "%q read as %v is not valid JSON", arr, out)
	var nums []float64
	require.NoError(t, json.Unmarshal(arr, &nums))
	require.Len(t, out, len(nums))
	for i, v := range nums {
		require.Equal(t, float64(out[i]), v, "element %d of %q", i, arr)
	}
}

// TestDecodeByteArraySeeds runs the fuzz seeds as a test, and every byte
// value as an element at each position of a long compact array.
func TestDecodeByteArraySeeds(t *testing.T) {
	for _, s := range byteArraySeeds() {
		checkByteArray(t, []byte(s))
	}
	var long strings.Builder
	for v := range 40 {
		fmt.Fprintf(&long, "%d,", v*6)
	}
	for c := range 256 {
		for k := range 12 {
			b := []byte("[" + long.String() + "1,22,133,4]")
			b[1+k] = byte(c)
			checkByteArray(t, b)
		}
	}
}

// TestDecodeByteArrayPairs holds the eight-byte reading of two elements
// from one word to the byte loop: every pair of a valid element and an
// element that is valid, too wide, over 255, led by a zero, spaced, a
// fraction or missing, at every offset of the word.
func TestDecodeByteArrayPairs(t *testing.T) {
	elems := []string{"0", "7", "10", "99", "100", "255", "256", "999", "00", "01", "007", "1000", " 5", "5 ", "1.5", "1e2", "-1", ""}
	for lead := range 8 {
		pad := strings.Repeat("1,", lead/2) + strings.Repeat("22,", lead%2)
		for _, a := range elems[:6] {
			for _, c := range elems {
				for _, tail := range []string{",3,44,5,66,7,88]", "]", ",3]", "  ,3,44,5,66,7,88]"} {
					checkByteArray(t, []byte("["+pad+a+","+c+tail))
				}
			}
		}
	}
}

// TestAppendByteArray holds AppendByteArray to encoding/json's array of
// the same byte values, and DecodeByteArray to reading it back.
func TestAppendByteArray(t *testing.T) {
	every := make([]byte, 256)
	for c := range every {
		every[c] = byte(c)
	}
	for _, b := range [][]byte{nil, {}, {0}, {255, 9, 10}, []byte("hi\n"), every} {
		vals := make([]int, len(b))
		for k, c := range b {
			vals[k] = int(c)
		}
		want, err := json.Marshal(vals)
		require.NoError(t, err)
		got := AppendByteArray([]byte("x"), b)
		require.Equal(t, "x"+string(want), string(got), "%v", b)
		back, n, ok := DecodeByteArray(got[1:])
		require.True(t, ok, "%s", got)
		assert.Equal(t, len(got)-1, n)
		assert.Equal(t, string(b), string(back))
	}
}

// BenchmarkDecodeByteArray reads two outputs of about 150 KiB sent as
// arrays of byte values (as Grok sends outputs): "log", one build-log line
// repeated (the element widths repeat every 42 elements, which a branch
// predictor learns), and "text", words of varied length and case, digits
// and punctuation from a seeded generator; each as DecodeByteArray reads
// it ("eight-bytes") and with its eight-byte reading of compact elements
// off ("byte-loop"), in the same run.
//
//	go test ./internal/jsonlit -run '^$' -bench BenchmarkDecodeByteArray
func BenchmarkDecodeByteArray(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	var text []byte
	for len(text) < 150<<10 {
		word := make([]byte, 1+r.IntN(9))
		for k := range word {
			word[k] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:"[r.IntN(67)]
		}
		text = append(append(text, word...), " \n"[r.IntN(2)])
	}
	for _, out := range []struct {
		name string
		b    []byte
	}{{"log", []byte(strings.Repeat("step 00001: compiled package/001 in 37 ms\n", 150<<10/42))}, {"text", text}} {
		arr := AppendByteArray(nil, out.b)
		read := func() bool { got, _, ok := DecodeByteArray(arr); return ok && len(got) == len(out.b) }
		runReads(b, out.name, len(arr), []benchRead{
			{"eight-bytes", read},
			{"byte-loop", func() bool { byteByByte.Store(true); defer byteByByte.Store(false); return read() }},
			{"jsontext-scan", func() bool { return jsontext.Value(arr).IsValid() }},
		})
	}
}

// TestNonDigits holds nonDigits' first flag to a byte loop: every byte
// value at every offset among digits, and random words.
func TestNonDigits(t *testing.T) {
	byLoop := func(w [8]byte) int {
		for k, c := range w {
			if c < '0' || c > '9' {
				return k
			}
		}
		return 8
	}
	check := func(w [8]byte) {
		if got, want := bits.TrailingZeros64(nonDigits(binary.LittleEndian.Uint64(w[:])))>>3, byLoop(w); got != want {
			t.Fatalf("nonDigits(% x) flags byte %d, want %d", w, got, want)
		}
	}
	for c := range 256 {
		for k := range 8 {
			w := [8]byte{'1', '9', '0', '5', '2', '8', '3', '7'}
			w[k] = byte(c)
			check(w)
			for c2 := range 256 {
				w2 := w
				w2[(k+1)%8] = byte(c2)
				check(w2)
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 1 << 20 {
		x := r.Uint64()
		if i%2 == 0 { // bytes 0x30 to 0x3f: digits and the six after '9'
			x = x&0x0f0f0f0f0f0f0f0f | 0x3030303030303030
		}
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], x)
		check(w)
	}
}

// TestFoldKeyRemembers: a member name read before is folded without an
// allocation, a name is folded as before, and what is remembered is
// bounded however many names frames send.
func TestFoldKeyRemembers(t *testing.T) {
	assert.Equal(t, "TOOLCALLID", FoldKey([]byte(`"toolCallId"`)))
	assert.Equal(t, "EXIT_CODE", FoldKey([]byte(`"exit\u005fcode"`)))
	assert.Equal(t, "\u00c9T\u00c9", FoldKey([]byte(`"\u00e9t\u00c9"`)))
	lit := []byte(`"rawOutput"`)
	FoldKey(lit)
	assert.Zero(t, testing.AllocsPerRun(100, func() { FoldKey(lit) }))
	for i := range 2 * maxFoldedKeys {
		FoldKey([]byte(fmt.Sprintf(`"k%d"`, i)))
	}
	assert.LessOrEqual(t, len(*foldedKeys.Load()), maxFoldedKeys)
	long := `"` + strings.Repeat("x", 2*maxFoldedKey) + `"`
	assert.Equal(t, strings.Repeat("X", 2*maxFoldedKey), FoldKey([]byte(long)))
}

// TestElideRepeatedLiteral: a member whose bytes repeat a literal taken
// out before it in the frame is not read again. A lazy one then has the
// text of a decoded one before it; a decoded one after a lazy one is
// still decoded.
func TestElideRepeatedLiteral(t *testing.T) {
	defer SetElideSizes(0, 0)()
	x := strings.Repeat(`x\n`, 40)
	y := strings.Repeat(`y\t`, 40)
	msg := []byte(`{"params":{"update":{"rawOutput":{"a":"` + x + `","b":"` + x + `","c":"` + y + `","d":"` + y + `"}}}}`)
	call := []Member{{Name: "rawoutput", Members: []Member{
		{Name: "a", Text: true}, {Name: "b", Text: true, Lazy: true},
		{Name: "c", Text: true, Lazy: true}, {Name: "d", Text: true},
	}}}
	light, lits := ElideMembers(msg, false, call, "")
	require.Equal(t, `{"params":{"update":{"rawOutput":{"a":"","b":"","c":"","d":""}}}}`, string(light))
	require.Len(t, lits, 4)
	wantX, wantY := strings.Repeat("x\n", 40), strings.Repeat("y\t", 40)
	for k, want := range []Lit{
		{Text: wantX}, // a: decoded
		{Text: wantX}, // b: lazy, the bytes of a: a's text
		{Lazy: true},  // c: lazy
		{Text: wantY}, // d: decoded, the bytes of c, which has no text
	} {
		assert.Equal(t, want.Text, lits[k].Text, "literal %d", k)
		assert.Equal(t, want.Lazy, lits[k].Lazy, "literal %d", k)
		assert.Equal(t, `"`+[]string{x, x, y, y}[k]+`"`, string(lits[k].Raw), "literal %d", k)
	}
}

// TestFoldKeyIsEncodingJSON: FoldKey matches a key to a field name as
// encoding/json does, Unicode letters whose case mappings leave their
// fold orbit ("ı", "İ") included.
func TestFoldKeyIsEncodingJSON(t *testing.T) {
	for _, key := range []string{"kind", "KIND", "Kınd", "KİND", "ſtatus", "\u212aind", "Kind_", "ÉTÉ", "été"} {
		for _, field := range []string{"Kind", "Status", "Été"} {
			var v struct {
				Kind   string `json:"kind"`
				Status string
				Ete    string `json:"Été"`
			}
			require.NoError(t, json.Unmarshal([]byte(`{"`+key+`":"x"}`), &v))
			matched := map[string]bool{"Kind": v.Kind == "x", "Status": v.Status == "x", "Été": v.Ete == "x"}[field]
			assert.Equal(t, matched, FoldKey([]byte(`"`+key+`"`)) == string(foldName(nil, []byte(field))), "key %q, field %q", key, field)
		}
	}
}
