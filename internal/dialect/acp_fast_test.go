package dialect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/stretchr/testify/require"
)

// fastBoth decodes msg into message[U] with jsonlit.FastDecode alone and
// with encoding/json alone (the dialects' own UnmarshalJSON methods
// included), and fails when the fast decoder says yes and its result
// differs, or encoding/json fails. It returns what the fast decoder said.
func fastBoth[U any](t *testing.T, msg []byte) bool {
	t.Helper()
	var fast, std message[U]
	ok := jsonlit.FastDecode(msg, &fast, nil)
	jsonlit.SetEncodingJSONOnly(true)
	err := json.Unmarshal(msg, &std)
	jsonlit.SetEncodingJSONOnly(false)
	if ok {
		require.NoError(t, err, "%q: the fast decoder said yes", msg)
		require.Equal(t, std, fast, "%q", msg)
	}
	return ok
}

// fastTypes are the update types of every dialect (readFrame's U).
var fastTypes = []struct {
	name  string
	check func(*testing.T, []byte) bool
}{
	{"auggie", fastBoth[auggieCall]},
	{"claude", fastBoth[claudeUpdate]},
	{"cline", fastBoth[clineCall]},
	{"codex", fastBoth[codexUpdate]},
	{"copilot", fastBoth[copilotCall]},
	{"cursor", fastBoth[cursorCall]},
	{"docker", fastBoth[dockerCall]},
	{"droid", fastBoth[droidCall]},
	{"gemini", fastBoth[geminiCall]},
	{"generic", fastBoth[shellUpdate]},
	{"grok", fastBoth[grokCall]},
	{"opencode", fastBoth[opencodeCall]},
	{"pi", fastBoth[piCall]},
	{"qwen", fastBoth[qwenCall]},
}

// fuzzCorpus returns the inputs of the fuzz corpora of this package.
func fuzzCorpus(tb testing.TB) [][]byte {
	files, _ := filepath.Glob("testdata/fuzz/*/*")
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(tb, err)
		for _, line := range strings.Split(string(b), "\n") {
			if s, ok := strings.CutPrefix(line, "[]byte("); ok {
				if u, err := strconv.Unquote(strings.TrimSuffix(s, ")")); err == nil {
					out = append(out, []byte(u))
				}
			}
		}
	}
	return out
}

// TestFastDecodeIsEncodingJSON holds jsonlit.FastDecode to encoding/json
// on every recorded frame and every seed, with every dialect's message
// type, and requires it to decode nearly every recorded frame that
// readFrame decodes (all but the quiet updates) itself. What falls back
// is a frame with a member of another JSON type than the dialect reads
// (another agent's frames, mostly), which encoding/json reads with a
// type error.
func TestFastDecodeIsEncodingJSON(t *testing.T) {
	frames := recordingFrames(t, 16<<20, true)
	var seeds [][]byte
	for _, s := range fastCheckSeeds() {
		seeds = append(seeds, []byte(s))
	}
	seeds = append(seeds, fuzzCorpus(t)...)
	for _, ft := range fastTypes {
		fast, read := 0, 0
		for _, m := range frames {
			ok := ft.check(t, m)
			if !skipped(m) {
				read++
				if ok {
					fast++
				}
			}
		}
		for _, m := range seeds {
			ft.check(t, m)
		}
		t.Logf("%s: %d of the %d recorded frames that are not quiet updates decoded by the fast path", ft.name, fast, read)
		require.GreaterOrEqual(t, fast, read*9/10, "%s: the fast path falls back on more than a tenth of the recorded frames", ft.name)
	}
}

// fastSeeds are frames where the fast path must fall back, or decode as
// encoding/json does: names that fold to a field, escaped or repeated,
// values of other types, raw types given every JSON type.
var fastSeeds = []string{
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call","toolCallId":"a","ſessionUpdate":"x"}}}`,
	"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"a\",\"\u212aind\":\"execute\"}}}",
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call","toolCallId":"a","kind":"execute","\u006bind":"read"}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","rawOutput":{"exit_code":1,"exit_code":"2"},"_meta":null}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","rawOutput":{"stdout":"x","formatted_output":null,"aggregated_output":7}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","rawOutput":"text","rawInput":{"command":["bash","-lc","ls"],"cwd":"/"}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","rawOutput":[1,2],"rawInput":"x","content":[]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","rawOutput":null,"content":null,"title":null,"exitStatus":{"exitCode":"3","signal":null}}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"agentInfo":{"name":"x","version":1.5},"authMethods":[{"id":"a"},7],"stopReason":null}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-1}}`,
	`{"jsonrpc":"2.0","id":{"x":[1]},"method":"session/request_permission","params":{"toolCall":{"toolCallId":"a"},"options":[{"optionId":"o","kind":"reject_once"},null]}}`,
	`{"jsonrpc":"2.0","method":"terminal/create","id":2,"params":{"command":"ls","args":["-l"],"env":[{"name":"A","value":"b"}],"cwd":"/x","outputByteLimit":10}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","rawOutput":{"output":[104,105],"output_delta":"hi"},"content":[{"type":"content","content":{"type":"text","text":"x"}},{"type":"terminal","terminalId":"t"}]}}}`,
}

// fastCheckSeeds are the hand-written frames the fast decoder is held to
// encoding/json on: the one-pass decode's, the elision's and its own.
func fastCheckSeeds() []string {
	return append(append(append([]string{}, decodeSeeds...), elideSeeds...), fastSeeds...)
}

// FuzzFastDecode looks for a message that jsonlit.FastDecode decodes into
// some dialect's message type differently from encoding/json. Its seeds
// are the top-level recordings' frames (seedFrames, as for this package's
// other targets seeded from recordings) and fastCheckSeeds:
// TestFastDecodeIsEncodingJSON holds every recorded frame, and seeding
// all of them (about 80,000) left a run of test/run.sh's count doing
// nothing but measure the seeds' coverage.
func FuzzFastDecode(f *testing.F) {
	seedFrames(f, fastCheckSeeds()...)
	for _, m := range fuzzCorpus(f) {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, ft := range fastTypes {
			ft.check(t, msg)
		}
	})
}

// TestContradictionsReadLight: every dialect's contradictions walk reads
// the light frame of an elided decode (no member it reads is elided), and
// one that elided a signal would not.
func TestContradictionsReadLight(t *testing.T) {
	require.True(t, contradictionsReadLight[codexUpdate]())
	require.True(t, contradictionsReadLight[claudeUpdate]())
	require.True(t, contradictionsReadLight[grokCall]())
	require.True(t, contradictionsReadLight[opencodeCall]())
	type signalText struct {
		ToolCall
		RawOutput struct {
			Signal rawText `json:"signal"`
		} `json:"rawOutput"`
	}
	require.False(t, contradictionsReadLight[signalText]())
}
