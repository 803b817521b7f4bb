package jsonlit

import (
	"encoding/json"
	"fmt"
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
func FuzzDecodeByteArray(f *testing.F) {
	for _, s := range []string{"[]", "[ ]", "[0]", "[1,2,3]", "[ 255 , 0\n,\t10\r]", "[256]", "[01]", "[1.0]", "[1e2]", "[-1]", "[1,]", "[1 2]", "[1", `["a"]`, "[[1]]", "[1,2] x", "[12345]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, n, ok := DecodeByteArray(b)
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
	})
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
