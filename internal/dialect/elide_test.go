package dialect

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/benchcpu"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// elideAll makes the elided decode take out every content text, however
// short, and read it through the memo (memo.go), for the rest of the test.
func elideAll(tb testing.TB) {
	frame, lit := elideFrame, elideMin
	elideFrame, elideMin = 0, 0
	tb.Cleanup(func() { elideFrame, elideMin = frame, lit })
	memoSmall(tb, 1<<20) // and read every one through the memo
}

// elideSeeds are frames whose content texts are on the elided path, with
// what could make the walk and the decoder disagree: names in other cases
// or escaped, repeated members, nulls, texts that are not strings, bad
// escapes and control bytes, invalid UTF-8 and surrogates, whitespace,
// trailing bytes.
var elideSeeds = []string{
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"line 1\nline 2\n"}}]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","PARAMS":{"Update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","CONTENT":[{"type":"content","Content":{"type":"text","TEXT":"x\ty"}}]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"one","text":"two"}},{"type":"content","content":{"type":"text","text":"three"}}]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":[{"type":"content","content":{"type":"text","\u0074ext":"esc","text":"plain"}}]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"a","text":null}}]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":[{"type":"content","content":{"type":"text","text":7}}]}}}`,
	"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"a\",\"kind\":\"execute\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"bad \x01 control\"}}]}}}",
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"bad \q escape"}}]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"bad \u12 escape"}}]}}}`,
	"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"a\",\"kind\":\"execute\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"\xff\xfe \\ud800 \\ud83d\\ude00 \\udc00\\u0041 \xe2\x82\"}}]}}}",
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"unterminated}}]}}}`,
	` { "jsonrpc" : "2.0" , "method" : "session/update" , "params" : { "update" : { "sessionUpdate" : "tool_call_update" , "toolCallId" : "a" , "kind":"execute", "content" : [ { "type" : "content" , "content" : { "type" : "text" , "text" : "spaced \"quoted\" \\ back" } } ] } } } `,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"then garbage"}}]}}} x`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":5,"kind":"execute","content":[{"type":"content","content":{"type":"text","text":"type error elsewhere"}}]}}}`,
	`{"jsonrpc":"2.0","id":"r","method":"session/request_permission","params":{"toolCall":{"toolCallId":"a","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"the reason"}}]},"options":[{"optionId":"no","kind":"reject_once"}]}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":{"type":"content","content":{"type":"text","text":"content that is an object"}}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":[{"type":"content","content":[{"text":"an array"}]},{"content":{"text":{"text":"nested"}}}]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":[{"update":{"content":[{"content":{"text":"params is an array"}}]}}]}`,
	`{"params":{"update":{"content":[{"content":{"text":"no method, no id"}}]}}}`,
	// Grok's byte arrays (rawOutput.output, output_delta): forms the
	// one-scan decode must leave to the decoder, names in other cases,
	// escaped or repeated, and arrays that are not byte arrays.
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"in_progress","rawOutput":{"output":[104,105,10],"OUTPUT_DELTA":[ 104 , 105 ]}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"in_progress","rawOutput":{"output":[104.0,1e2,01,256,-1]}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"in_progress","rawOutput":{"output":[97],"output":[98],"Output":[99,]}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","rawOutput":{"output":[97,98],"output":null,"output_delta":[[1]],"exit_code":0}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","rawOutput":{"output":"text","output_delta":[],"exit_code":1}}}}`,
}

// TestElidedDecodeIsEncodingJSON holds the elided decode, with every
// content text taken out, to encoding/json on every recorded frame, with
// every dialect, and on the seeds.
func TestElidedDecodeIsEncodingJSON(t *testing.T) {
	elideAll(t)
	msgs := recordingFrames(t, 16<<20)
	for _, s := range append(elideSeeds, decodeSeeds...) {
		msgs = append(msgs, []byte(s))
	}
	elided := 0
	for _, m := range msgs {
		if _, lits := elide(m, true); len(lits) > 0 {
			elided++
		}
	}
	require.Greater(t, elided, 50, "the recordings have content texts to elide")
	for _, d := range All() {
		for _, m := range msgs {
			readBoth(t, d, m)
		}
	}
}

// FuzzElidedDecode looks for a frame that the elided decode reads
// differently from encoding/json.
func FuzzElidedDecode(f *testing.F) {
	for _, m := range recordingFrames(f, 4096) {
		f.Add(m)
	}
	for _, s := range elideSeeds {
		f.Add([]byte(s))
	}
	dialects := All()
	f.Fuzz(func(t *testing.T, msg []byte) {
		elideAll(t)
		for _, d := range dialects {
			readBoth(t, d, msg)
		}
	})
}

// TestElisionSafe: the update types whose content reaches only
// ToolCall.Content are elided; one with a content field of its own is not.
func TestElisionSafe(t *testing.T) {
	assert.True(t, elisionSafe[shellUpdate]())
	assert.True(t, elisionSafe[opencodeCall]())
	assert.True(t, elisionSafe[grokCall]())
	type shadow struct {
		ToolCall
		Body string `json:"CONTENT"`
	}
	assert.False(t, elisionSafe[shadow]())

	assert.True(t, bytesElisionSafe[grokCall](), "Grok's rawOutput byte arrays reach rawBytes")
	assert.False(t, bytesElisionSafe[shellUpdate](), "the generic rawOutput has no rawBytes")
	type twoOutputs struct {
		ToolCall
		RawOutput *grokOutput `json:"rawOutput"`
		Other     string      `json:"RAWOUTPUT"`
	}
	assert.False(t, bytesElisionSafe[twoOutputs]())
}

// TestElideOnlyLongTexts: at the default sizes, a big frame gives up only
// its long content texts, and a small frame is not walked.
func TestElideOnlyLongTexts(t *testing.T) {
	long := strings.Repeat("output line\n", 2000)
	lit, err := json.Marshal(long)
	require.NoError(t, err)
	msg := `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"short"}},{"type":"content","content":{"type":"text","text":` + string(lit) + `}}]}}}`
	light, lits := elide([]byte(msg), false)
	require.Len(t, lits, 1)
	assert.Equal(t, long, lits[0].text)
	assert.Equal(t, string(lit), string(lits[0].raw))
	assert.Equal(t, len(msg)-len(lit)+2, len(light))
	assert.Equal(t, `""`, string(light[lits[0].end-2:lits[0].end]))
	f, err := Read(Generic(), []byte(msg))
	require.NoError(t, err)
	require.Len(t, f.Observations, 1)
	require.Len(t, f.Observations[0].Texts, 1)
	assert.Equal(t, "short\n"+long, f.Observations[0].Texts[0].Text)
}

// FuzzDecodeLiteral holds decodeLiteral to encoding/json: the same text
// for every literal it accepts, and a refusal for every one it refuses.
func FuzzDecodeLiteral(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud83d\ude00"`, `"\n\u0041"`, "\"\xff\"", `"\ud800\udbff"`, `"a\qb"`, "\"\x01\"", `"\u00"`, `"x\"y"`, `"\\"`, `"abc`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, n, ok := decodeLiteral(b)
		var want string
		wantErr := json.Unmarshal(b[:max(n, 0)], &want)
		if !ok {
			// No valid literal starts b: no prefix of b that starts and
			// ends with a quote is one.
			for i := 1; i <= len(b) && b[0] == '"'; i++ {
				if b[i-1] == '"' && i > 1 && json.Unmarshal(b[:i], &want) == nil {
					t.Fatalf("decodeLiteral(%q) refused it, but %q is a literal", b, b[:i])
				}
			}
			return
		}
		if wantErr != nil || got != want {
			t.Fatalf("decodeLiteral(%q) = %q (%d bytes); encoding/json: %q, %v", b, got, n, want, wantErr)
		}
	})
}

// BenchmarkDecodeLiteral reads one 512 KiB content text of build-log
// lines (a `\n` escape every 45 bytes or so) three ways: decodeLiteral
// (validate and decode in one pass, what elide does), go-json-experiment's
// decode of the literal into a string (what the one-pass decode of a frame
// did with it, before unquote read it again), and unquote alone.
func BenchmarkDecodeLiteral(b *testing.B) {
	var sb strings.Builder
	for i := 1; sb.Len() < 512<<10; i++ {
		sb.WriteString("step ")
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString(": compiled package in 12 ms\n")
	}
	lit, err := json.Marshal(sb.String())
	require.NoError(b, err)
	b.Run("decodeLiteral", func(b *testing.B) {
		b.SetBytes(int64(len(lit)))
		defer benchcpu.Report(b, benchcpu.Now())
		for b.Loop() {
			if _, _, ok := decodeLiteral(lit); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("go-json-experiment", func(b *testing.B) {
		b.SetBytes(int64(len(lit)))
		defer benchcpu.Report(b, benchcpu.Now())
		for b.Loop() {
			var s string
			if err := jsonv2.Unmarshal(lit, &s, onePass); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unquote", func(b *testing.B) {
		b.SetBytes(int64(len(lit)))
		defer benchcpu.Report(b, benchcpu.Now())
		for b.Loop() {
			if _, ok := unquote(lit); !ok {
				b.Fatal("refused")
			}
		}
	})
}

// TestElidedTextMarkedChecked: a long content text that the elided decode
// decoded itself reaches accum marked Valid (accum does not read it again
// to check its UTF-8), and only the parts of such a text that begin and
// end between runes are.
func TestElidedTextMarkedChecked(t *testing.T) {
	long := strings.Repeat("output \u00e9 line\n", 2000) + "\xff end"
	lit, err := json.Marshal(long)
	require.NoError(t, err)
	msg := `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":[{"type":"content","content":{"type":"text","text":` + string(lit) + `}}]}}}`
	f, err := Read(Generic(), []byte(msg))
	require.NoError(t, err)
	require.Len(t, f.Observations, 1)
	require.Len(t, f.Observations[0].Texts, 1)
	x := f.Observations[0].Texts[0]
	assert.True(t, x.Valid, "the decoded text is marked checked")
	assert.Equal(t, strings.ToValidUTF8(long, "\uFFFD"), x.Text)

	whole := x.Text
	e := strings.Index(whole, "\u00e9")
	for _, tc := range []struct {
		name string
		s    string
		want bool
	}{
		{"the whole", whole, true},
		{"a head cut between runes", whole[:e], true},
		{"a tail cut between runes", whole[e:], true},
		{"cut inside a rune at the end", whole[:e+1], false},
		{"cut inside a rune at the start", whole[e+1:], false},
		{"an equal copy elsewhere", strings.Clone(whole), false},
		{"empty", "", false},
	} {
		assert.Equal(t, tc.want, within(tc.s, whole), tc.name)
	}
}

// FuzzDecodeByteArray holds decodeByteArray to encoding/json and to
// rawBytes: an array it reads is valid JSON, encoding/json reads the same
// numbers from it, and rawBytes the same bytes.
func FuzzDecodeByteArray(f *testing.F) {
	for _, s := range []string{"[]", "[ ]", "[0]", "[1,2,3]", "[ 255 , 0\n,\t10\r]", "[256]", "[01]", "[1.0]", "[1e2]", "[-1]", "[1,]", "[1 2]", "[1", `["a"]`, "[[1]]", "[1,2] x", "[12345]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, n, ok := decodeByteArray(b)
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
		var r rawBytes
		require.NoError(t, r.UnmarshalJSON(arr))
		require.True(t, r.Set)
		require.Equal(t, out, r.B)
	})
}

// TestByteArrayElided: at the default sizes, a big Grok byte array is
// taken out of the frame and decoded once, and the frame reads as the
// same frame read by encoding/json.
func TestByteArrayElided(t *testing.T) {
	out := []byte(strings.Repeat("output line \u00e9\n", 1000))
	arr, err := json.Marshal(func() []int {
		v := make([]int, len(out))
		for i, c := range out {
			v[i] = int(c)
		}
		return v
	}())
	require.NoError(t, err)
	msg := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"in_progress","rawOutput":{"type":"run_terminal_command","output":` + string(arr) + `,"truncated":false},"_meta":{"x.ai/tool":{"name":"run_terminal_command","kind":"execute"}}}}}`
	light, lits := elide([]byte(msg), true)
	require.Len(t, lits, 1)
	assert.Equal(t, out, lits[0].bytes)
	assert.Equal(t, len(msg)-len(arr)+2, len(light))
	assert.Equal(t, `[]`, string(light[lits[0].end-2:lits[0].end]))
	g, ok := Lookup("grok")
	require.True(t, ok)
	readBoth(t, g, []byte(msg))
	f, err := Read(g, []byte(msg))
	require.NoError(t, err)
	require.Len(t, f.Observations, 1)
	require.NotEmpty(t, f.Observations[0].Texts)
	assert.Equal(t, out, f.Observations[0].Texts[0].Bytes)
}

// TestFoldKeyRemembers: a member name read before is folded without an
// allocation, a name is folded as before, and what is remembered is
// bounded however many names frames send.
func TestFoldKeyRemembers(t *testing.T) {
	assert.Equal(t, "TOOLCALLID", foldKey([]byte(`"toolCallId"`)))
	assert.Equal(t, "EXIT_CODE", foldKey([]byte(`"exit\u005fcode"`)))
	assert.Equal(t, "\u00c9T\u00c9", foldKey([]byte(`"\u00e9t\u00c9"`)))
	lit := []byte(`"rawOutput"`)
	foldKey(lit)
	assert.Zero(t, testing.AllocsPerRun(100, func() { foldKey(lit) }))
	for i := range 2 * maxFoldedKeys {
		foldKey([]byte(fmt.Sprintf(`"k%d"`, i)))
	}
	assert.LessOrEqual(t, len(*foldedKeys.Load()), maxFoldedKeys)
	long := `"` + strings.Repeat("x", 2*maxFoldedKey) + `"`
	assert.Equal(t, strings.Repeat("X", 2*maxFoldedKey), foldKey([]byte(long)))
}
