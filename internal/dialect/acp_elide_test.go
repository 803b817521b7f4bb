package dialect

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// elideAll makes the elided decode take out every content text, however
// short, and read it through jsonlit's memo, for the rest of the test.
func elideAll(tb testing.TB) {
	tb.Cleanup(jsonlit.SetElideSizes(0, 0))
	tb.Cleanup(jsonlit.SetMemoSizes(0, 1<<20)) // and read every one through the memo
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
	// The other members that reach a rawText (elidedMembers): Codex's
	// repeated outputs (the second read as the first), in other cases,
	// repeated, null, of another type, with bad escapes and control
	// bytes; Claude's toolResponse, OpenCode's metadata, Grok's prompt.
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","rawOutput":{"stdout":"x\ny\u0041","aggregated_output":"x\ny\u0041","Formatted_Output":"Exit code: 0\nx","exit_code":0}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","rawOutput":{"aggregated_output":"a","AGGREGATED_OUTPUT":null,"stdout":"b\"c","stdout":7,"exit_code":1}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","rawOutput":{"aggregated_output":"bad \q escape","exit_code":0}}}}`,
	"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"a\",\"status\":\"completed\",\"rawOutput\":{\"stdout\":\"bad \x01 control\",\"exit_code\":0}}}}",
	"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"a\",\"status\":\"completed\",\"rawOutput\":{\"aggregated_output\":\"\xff\xfe \\ud800 \xe2\x82\",\"exit_code\":0}}}}",
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","rawOutput":"the model-facing text"}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","_meta":{"claudeCode":{"toolName":"Bash","toolResponse":{"stdout":"out\n","stderr":"err\n","interrupted":false}}}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","kind":"execute","rawOutput":{"output":"o","metadata":{"output":"o\u0041\n","exit":2}}}}}`,
	// OpenCode's rawOutput.output (decoded in the walk) after a content
	// text of the same bytes, of other bytes, before it, null, a number;
	// Codex's stdout and aggregated_output apart under a PTY.
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"same\n\u0041"}}],"rawOutput":{"output":"same\n\u0041","metadata":{"exit":0}}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"same\n"}}],"rawOutput":{"output":"same\nand more","metadata":{"exit":1}}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","kind":"execute","rawOutput":{"output":"first","Output":"second"},"content":[{"type":"content","content":{"type":"text","text":"first"}}]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"t"}}],"rawOutput":{"output":null,"metadata":{"output":"live","exit":0}}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","kind":"execute","rawOutput":{"output":12,"metadata":{"output":"live"}}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","rawOutput":{"stdout":"pty \u001b[0m all","aggregated_output":"pty all","source":"unified_exec_startup","process_id":"7","exit_code":0}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","rawOutput":{"type":"Bash","output_for_prompt":"exit: 3\nhello","exit_code":3}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"in_progress","rawOutput":{"type":"Bash","output_for_prompt":"live\n","output":[104,105]}}}}`,
}

// TestElidedDecodeIsEncodingJSON holds the elided decode, with every
// content text taken out, to encoding/json on every recorded frame, with
// every dialect, and on the seeds.
func TestElidedDecodeIsEncodingJSON(t *testing.T) {
	elideAll(t)
	msgs := recordingFrames(t, 16<<20, false)
	for _, s := range append(elideSeeds, decodeSeeds...) {
		msgs = append(msgs, []byte(s))
	}
	elided := 0
	for _, m := range msgs {
		if _, lits := jsonlit.Elide(m, true, ""); len(lits) > 0 {
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
	seedFrames(f, elideSeeds...)
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

	member := func(ms []jsonlit.Member, path ...string) *jsonlit.Member {
		for _, name := range path {
			var next *jsonlit.Member
			for k := range ms {
				if ms[k].Name == name {
					next = &ms[k]
				}
			}
			if next == nil {
				return nil
			}
			if name == path[len(path)-1] {
				return next
			}
			ms = next.Members
		}
		return nil
	}
	grokMs := elidedMembers[grokCall]()
	require.NotNil(t, member(grokMs, "rawoutput", "output"), "Grok's rawOutput byte arrays reach rawBytes")
	assert.True(t, member(grokMs, "rawoutput", "output").Bytes)
	assert.True(t, member(grokMs, "rawoutput", "output_delta").Bytes)
	assert.Nil(t, member(elidedMembers[shellUpdate](), "rawoutput"), "the generic rawOutput has no rawText or rawBytes")
	codexMs := elidedMembers[codexUpdate]()
	for name, lazy := range map[string]bool{"aggregated_output": false, "stdout": false, "formatted_output": true} {
		m := member(codexMs, "rawoutput", name)
		require.NotNil(t, m, "Codex's rawOutput.%s is a rawText, through codexRawOutput's own decode", name)
		assert.True(t, m.Text, name)
		assert.Equal(t, lazy, m.Lazy, "%s: the outputs Codex's dialect reads are decoded as they are validated, formatted_output only validated", name)
	}
	assert.Nil(t, member(codexMs, "rawoutput", "output"), "a Str is decoded by the decoder")
	claudeStdout := member(elidedMembers[claudeUpdate](), "_meta", "claudecode", "toolresponse", "stdout")
	require.NotNil(t, claudeStdout)
	assert.True(t, claudeStdout.Text && !claudeStdout.Lazy, "Claude's stdout, read whenever it is there, is decoded as it is validated")
	ocMs := elidedMembers[opencodeCall]()
	require.NotNil(t, member(ocMs, "rawoutput", "metadata", "output"))
	assert.True(t, member(ocMs, "rawoutput", "metadata", "output").Lazy, "OpenCode's metadata.output is read only when there is no model-facing text")
	require.NotNil(t, member(ocMs, "rawoutput", "output"))
	assert.False(t, member(ocMs, "rawoutput", "output").Lazy, "OpenCode's rawOutput.output, read whenever it is there, is decoded as it is validated")
	type twoOutputs struct {
		ToolCall
		RawOutput *grokOutput `json:"rawOutput"`
		Other     string      `json:"RAWOUTPUT"`
	}
	assert.Nil(t, member(elidedMembers[twoOutputs](), "rawoutput"), "a name two fields take is not followed")
	type methodOutput struct {
		ToolCall
		RawOutput TerminalOutput `json:"rawOutput"` // UnmarshalJSON sees the raw bytes
	}
	assert.Empty(t, elidedMembers[methodOutput]())
	type ownOutput struct {
		ToolCall
		RawOutput struct {
			Output rawText `json:"output"`
		} `json:"rawOutput,omitempty"`
	}
	assert.Empty(t, elidedMembers[ownOutput](), "a field with options is not followed")
}

// TestElideOnlyLongTexts: at the default sizes, a big frame gives up only
// its long content texts, and a small frame is not walked.
func TestElideOnlyLongTexts(t *testing.T) {
	long := strings.Repeat("output line\n", 2000)
	lit, err := json.Marshal(long)
	require.NoError(t, err)
	msg := `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"short"}},{"type":"content","content":{"type":"text","text":` + string(lit) + `}}]}}}`
	light, lits := jsonlit.Elide([]byte(msg), false, "")
	require.Len(t, lits, 1)
	assert.Equal(t, long, lits[0].Text)
	assert.Equal(t, string(lit), string(lits[0].Raw))
	assert.Equal(t, len(msg)-len(lit)+2, len(light))
	assert.Equal(t, `""`, string(light[lits[0].End-2:lits[0].End]))
	f, err := Read(Generic(), []byte(msg))
	require.NoError(t, err)
	require.Len(t, f.Observations, 1)
	require.Len(t, f.Observations[0].Texts, 1)
	assert.Equal(t, "short\n"+long, f.Observations[0].Texts[0].Text)
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
		assert.Equal(t, tc.want, (&jsonlit.Lit{Text: whole}).Holds(tc.s), tc.name)
	}
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
	light, lits := jsonlit.Elide([]byte(msg), true, "")
	require.Len(t, lits, 1)
	assert.Equal(t, out, lits[0].Bytes)
	assert.Equal(t, len(msg)-len(arr)+2, len(light))
	assert.Equal(t, `[]`, string(light[lits[0].End-2:lits[0].End]))
	g, ok := Lookup("grok")
	require.True(t, ok)
	readBoth(t, g, []byte(msg))
	f, err := Read(g, []byte(msg))
	require.NoError(t, err)
	require.Len(t, f.Observations, 1)
	require.NotEmpty(t, f.Observations[0].Texts)
	assert.Equal(t, out, f.Observations[0].Texts[0].Bytes)
}

// TestElidedDecodeConcurrent reads every recorded frame from several
// goroutines at once, every content text and output elided: the pooled
// decoders (elidedDecoders) give each read its own values back.
func TestElidedDecodeConcurrent(t *testing.T) {
	elideAll(t)
	msgs := recordingFrames(t, 16<<20, false)
	d, ok := Lookup("codex")
	require.True(t, ok)
	want := make([]Frame, len(msgs))
	wantErr := make([]error, len(msgs))
	for i, m := range msgs {
		want[i], wantErr[i] = Read(d, m)
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for k := range msgs {
				i := (k + g*len(msgs)/4) % len(msgs)
				got, err := Read(d, msgs[i])
				if (err == nil) != (wantErr[i] == nil) || !reflect.DeepEqual(got, want[i]) {
					errs <- fmt.Errorf("frame %d read differently: %+v, %v", i, got, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
}
