package dialect

import (
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An exit code is known only when the agent wrote an integer: a number
// whose decimal value is whole and fits an int32, bare or in a string.
// Anything else is unknown, never 0, and in particular never a value that
// only rounding to a float made whole.
func TestParseCode(t *testing.T) {
	known := map[string]int32{
		`3`: 3, `-1`: -1, `0`: 0, `"3"`: 3, `" 3 "`: 3, `"+3"`: 3,
		`3.0`: 3, `1e2`: 100, `1E+2`: 100, `0.0`: 0, `-0`: 0, `0e5`: 0, `0e-400`: 0,
		`300e-2`: 3, `0.03e2`: 3, `2147483647`: 2147483647, `-2147483648`: -2147483648,
		`2147483647.000`: 2147483647, `21474836470e-1`: 2147483647, `"1e2"`: 100, `0000000000000000000000000003`: 3,
		`1e0000002`: 100, `0.5e1`: 5, `1e-0`: 1,
	}
	for lit, want := range known {
		c := ParseCode([]byte(lit))
		assert.True(t, c.Known, "%s: unknown, want %d", lit, want)
		assert.Equal(t, want, c.Value, "%s", lit)
	}
	for _, lit := range []string{
		// Not whole, however close to a whole number a float would make it.
		`1e-400`, `-1e-400`, `"1e-400"`, `5e-324`, `3.5`, `3.0000000000000000001`, `2.9999999999999999999`,
		`1e-7`, `0.0000000001`, `30e-1e`, `5e-1`, `1e-0000001`,
		// Past an int32.
		`2147483648`, `-2147483649`, `1e10`, `1e400`, `21474836480e-1`, `1e99999999999999999999`,
		// Not a decimal number at all.
		`"0x3"`, `"0x1p3"`, `"1_0"`, `"Inf"`, `"-Infinity"`, `"NaN"`, `"3abc"`, `"-"`, `""`, `"."`, `".5"`, `"3."`, `"3e"`, `"e3"`, `"--3"`,
		`true`, `null`, `{}`, `[3]`, ``,
	} {
		c := ParseCode([]byte(lit))
		assert.False(t, c.Known, "%s: known as %d, want unknown", lit, c.Value)
	}
}

// A code padded with white space other than ASCII's (U+00A0, U+3000,
// U+0085) is not a number an agent wrote: it reads as unknown wherever an
// exit code is read, structured or in text, never as the code it holds.
func TestExitCodePaddedWithOtherSpaceIsUnknown(t *testing.T) {
	for _, pad := range []string{"\u00a0", "\u3000", "\u0085", "\u2028"} {
		for _, lit := range []string{`"` + pad + `0"`, `"0` + pad + `"`, `"` + pad + `3"`} {
			c := ParseCode([]byte(lit))
			assert.False(t, c.Known, "ParseCode(%q) known as %d", lit, c.Value)
		}
		for name, read := range map[string]func(o *accum.Observation){
			"gemini exited": func(o *accum.Observation) { geminiFinal(o, "Command exited with code: 0"+pad) },
			"gemini debug": func(o *accum.Observation) {
				geminiDebugResult(o, "Command: x\nDirectory: (root)\nOutput: a\nError: (none)\nExit Code: "+pad+"0\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 1")
			},
			"qwen report": func(o *accum.Observation) {
				qwenReport(o, "Command: x\nDirectory: (root)\nOutput: a\nError: (none)\nExit Code: "+pad+"0\nSignal: (none)\nProcess Group PGID: 1")
			},
			"docker report": func(o *accum.Observation) {
				dockerResult(o, "Error executing command: exit status 0"+pad+"\nOutput: a")
			},
			"grok exit line": func(o *accum.Observation) { p, tr := "exit: "+pad+"0\na\n", false; grokExitLineIn(o, &p, &tr) },
			"auggie tag": func(o *accum.Observation) {
				if r, ok := parseAuggieResult("<return-code>\n" + pad + "0\n</return-code>\n<output>\na\n</output>"); ok && r.exit.Known {
					o.Exit = r.exit.Exit(accum.ExitText, true)
				}
			},
		} {
			var o accum.Observation
			read(&o)
			assert.Nil(t, o.Exit, "%s padded with %q: exit %+v", name, pad, o.Exit)
		}
	}
	// ASCII white space around a code is a code.
	for _, lit := range []string{`" 3"`, `"3 "`, `"\t3\n"`} {
		assert.True(t, ParseCode([]byte(lit)).Known, "%s", lit)
	}
}

// exitFieldCase is one dialect's documented final frame (the reference's
// fields, a recorded frame's shape where there is one) whose exit code
// field is X, after the frames that open the call.
type exitFieldCase struct {
	name, dialect string
	frames        []string
}

// fold reads the case's frames with mark replaced by v through its
// dialect, and returns the call's last revision, which must have ended.
func (tc exitFieldCase) fold(t *testing.T, mark, v string) accum.Revision {
	t.Helper()
	d, ok := Lookup(tc.dialect)
	require.True(t, ok, tc.dialect)
	frames := make([]string, len(tc.frames))
	for i, f := range tc.frames {
		frames[i] = strings.ReplaceAll(f, mark, v)
	}
	last, _ := foldFrames(t, d, "x", frames...)
	require.Equal(t, accum.Ended, last.State, "%s, exit %q: the call did not end", tc.name, v)
	return last
}

var exitFieldCases = []exitFieldCase{
	{"codex TS: terminal_exit and rawOutput.exit_code", "codex", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"echo hello","status":"in_progress","content":[{"type":"terminal","terminalId":"c1"}],"rawInput":{"command":"echo hello","cwd":"/w"},"_meta":{"terminal_info":{"cwd":"/w","terminal_id":"c1"}}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_output_delta":{"data":"hello\n","terminal_id":"c1"}}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"formatted_output":"hello\n","exit_code":X},"_meta":{"terminal_exit":{"exit_code":X,"signal":null,"terminal_id":"c1"}}}`}},
	{"codex TS 2.x: a lone listing command, rawOutput.exit_code only", "codex", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"read","title":"List files","name":"exec_command","status":"in_progress"}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"formatted_output":"a\n","exit_code":X}}`}},
	{"codex Rust: the end event", "codex", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"npm test","status":"in_progress","rawInput":{"call_id":"c1","command":["bash","-lc","npm test"],"cwd":"/w"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"stdout":"a\n","stderr":"","aggregated_output":"a\n","formatted_output":"a\n","exit_code":X,"duration":{"secs":0,"nanos":1},"status":"completed"}}`}},
	{"claude: terminal_exit", "claude", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"t1","kind":"execute","title":"ls","status":"pending","rawInput":{"command":"ls"},"content":[{"type":"terminal","terminalId":"t1"}],"_meta":{"claudeCode":{"toolName":"Bash"},"terminal_info":{"terminal_id":"t1"}}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"t1","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_output":{"terminal_id":"t1","data":"a"}}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","rawOutput":"a","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"t1","exit_code":X,"signal":null}}}`}},
	{"claude v2: terminal_update exitStatus", "claude", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"t1","kind":"execute","title":"ls","status":"pending","content":[{"type":"terminal","terminalId":"T"}],"_meta":{"claudeCode":{"toolName":"Bash"}}}`,
		`{"sessionUpdate":"terminal_update","terminalId":"T","command":"ls","exitStatus":{"exitCode":X,"signal":null}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","_meta":{"claudeCode":{"toolName":"Bash"}}}`}},
	{"opencode: metadata.exit", "opencode", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"o1","title":"bash","kind":"execute","status":"pending","locations":[],"rawInput":{}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"a\n"}}],"rawInput":{"command":"npm test","description":"d"},"rawOutput":{"output":"a\n","metadata":{"output":"a\n","exit":X,"description":"d","truncated":false}}}`}},
	{"opencode: metadata.exitCode", "opencode", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"o1","title":"bash","kind":"execute","status":"pending","locations":[],"rawInput":{}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"a\n"}}],"rawInput":{"command":"npm test","description":"d"},"rawOutput":{"output":"a\n","metadata":{"output":"a\n","exitCode":X,"description":"d","truncated":false}}}`}},
	{"cursor: rawOutput.exitCode", "cursor", []string{
		"{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"u1\",\"kind\":\"execute\",\"title\":\"`ls`\",\"status\":\"pending\",\"rawInput\":{\"command\":\"ls\"}}",
		`{"sessionUpdate":"tool_call_update","toolCallId":"u1","status":"completed","rawOutput":{"exitCode":X,"stdout":"a\n","stderr":""}}`}},
	{"grok: rawOutput.exit_code", "grok", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"g1","title":"run_terminal_command","rawInput":{"command":"ls","description":"d"},"_meta":{"x.ai/tool":{"name":"run_terminal_command","kind":"execute"}}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"a\n"}}],"rawOutput":{"type":"Bash","exit_code":X,"signal":null,"timed_out":false,"truncated":false,"total_bytes":2}}`}},
	{"qwen: rawOutput.exitCode", "qwen", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"q1","kind":"execute","title":"Shell","status":"pending","rawInput":{},"_meta":{"toolName":"run_shell_command"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"q1","status":"in_progress","rawInput":{"command":"ls","description":"d"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"q1","status":"completed","rawOutput":{"type":"shell_result","output":"a","exitCode":X,"signal":null,"outcome":"success","error":null,"truncated":false}}`}},
	{"copilot: rawOutput.contents[].exitCode", "copilot", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"p1","kind":"execute","title":"List files","status":"pending","rawInput":{"command":"ls","description":"List files"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"p1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"a"}}],"rawOutput":{"content":"a","detailedContent":"a","contents":[{"type":"shell_exit","shellId":"1","exitCode":X,"cwd":"/w","outputPreview":"a"}]}}`}},
	{"pi: terminal_exit", "pi", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"pi1","title":"ls","status":"pending","content":[{"type":"terminal","terminalId":"pi1"}],"_meta":{"terminal_info":{"terminal_id":"pi1"}}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"pi1","status":"completed","_meta":{"terminal_output":{"terminal_id":"pi1","data":"a\n"},"terminal_exit":{"terminal_id":"pi1","exit_code":X,"signal":null}}}`}},
	{"generic: rawOutput.exit_code", "generic", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"x1","kind":"execute","title":"ls","status":"pending","rawInput":{"command":"ls"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"x1","status":"completed","rawOutput":{"exit_code":X,"output":"a"}}`}},
	{"generic v2: terminal_update exitStatus", "generic", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"x1","kind":"execute","title":"ls","status":"pending","content":[{"type":"terminal","terminalId":"T"}]}`,
		`{"sessionUpdate":"terminal_update","terminalId":"T","command":"ls","exitStatus":{"exitCode":X,"signal":null}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"x1","status":"completed"}`}},
}

// Every dialect reads the exit code field its agent documents through
// the same rules, whatever path it takes to it: an integer, an integral
// float or a numeric string is the code, and a known nonzero one is a
// failure even under `completed`; a negative one is never success; a
// fraction, null, a boolean, an object, an array, a word, an empty
// string or a value past an int32 is UNKNOWN, never 0 and never success.
// Each frame says `completed`, the status that must not decide.
func TestEveryDialectsExitFieldReadsByTheRules(t *testing.T) {
	known := map[string]int32{`3`: 3, `"3"`: 3, `3.0`: 3, `0`: 0}
	malformed := []string{`"abc"`, `3.5`, `null`, `true`, `false`, `{}`, `[]`, `[3]`, `""`, `"0x3"`, `2147483648`, `4294967296`, `-2147483649`}
	for _, tc := range exitFieldCases {
		fold := func(v string) accum.Revision { return tc.fold(t, "X", v) }
		for v, want := range known {
			last := fold(v)
			if assert.NotNil(t, last.ExitCode, "%s, exit %s", tc.name, v) {
				assert.Equal(t, want, *last.ExitCode, "%s, exit %s", tc.name, v)
			}
			wantOutcome := accum.Failed
			if want == 0 {
				wantOutcome = accum.Succeeded
			}
			assert.Equal(t, wantOutcome, last.Outcome, "%s, exit %s", tc.name, v)
		}
		for _, v := range malformed {
			last := fold(v)
			assert.Nil(t, last.ExitCode, "%s, exit %s", tc.name, v)
			assert.Equal(t, accum.Unknown, last.Outcome, "%s, exit %s", tc.name, v)
		}
		// A negative code: the reference gives it a meaning only for
		// Grok (-1 beside a signal); Codex's -1 is its "no exit code"
		// sentinel, and a Windows crash status reads negative. Whatever
		// a dialect makes of it, it is no success and never 0.
		for _, v := range []string{`-1`, `-3`, `"-3"`} {
			last := fold(v)
			if last.ExitCode != nil {
				assert.NotZero(t, *last.ExitCode, "%s, exit %s", tc.name, v)
			}
			assert.Equal(t, accum.Failed, last.Outcome, "%s, exit %s", tc.name, v)
		}
	}
}

// exitTextCases are documented finals whose exit code is a text marker
// (section 3's list and the agents' own), the code written as Y.
var exitTextCases = []exitFieldCase{
	{"auggie: <return-code>", "auggie", []string{
		"{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"a1\",\"kind\":\"execute\",\"title\":\"Run `ls x`\",\"status\":\"pending\",\"rawInput\":{\"command\":\"ls x\",\"cwd\":\"/w\"}}",
		`{"sessionUpdate":"tool_call_update","toolCallId":"a1","status":"completed","rawOutput":{"output":"Here are the results from executing the command.\n<return-code>\nY\n</return-code>\n<output>\nx\n</output>"}}`}},
	{"gemini: Command exited with code", "gemini", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"m1","kind":"execute","title":"false","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"[current working directory /x] (fail)"}}]}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"m1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Command exited with code: Y"}}]}`}},
	{"cline: [Command exited with code N] and error", "cline", []string{
		`{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"pending","title":"run_commands: false","kind":"execute","rawInput":{"commands":["false"]}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","rawOutput":[{"query":"false","result":"[Command exited with code Y]\nout","error":"Command exited with code Y","success":false}]}`}},
	{"docker-agent: exit status N", "docker-agent", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"d1","kind":"execute","title":"Shell","status":"pending","rawInput":{"cmd":"false","cwd":"/w"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"d1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Error executing command: exit status Y\nOutput: out"}}]}`}},
	{"pi: Command exited with code N beside terminal_exit 1", "pi", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"pi1","title":"false","status":"pending","content":[{"type":"terminal","terminalId":"pi1"}],"_meta":{"terminal_info":{"terminal_id":"pi1"}}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"pi1","status":"failed","_meta":{"terminal_output":{"terminal_id":"pi1","data":"out\n\n\nCommand exited with code Y"},"terminal_exit":{"terminal_id":"pi1","exit_code":1,"signal":null}}}`}},
	{"copilot: the shellId trailer", "copilot", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"p1","kind":"execute","title":"Fail it","status":"pending","rawInput":{"command":"false","description":"Fail it"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"p1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"boom\n<shellId: 3 completed with exit code Y>"}}],"rawOutput":{"content":"boom\n<shellId: 3 completed with exit code Y>","detailedContent":"boom\n<shellId: 3 completed with exit code Y>"}}`}},
	{"claude: Exit code N, no terminal _meta", "claude", []string{
		`{"sessionUpdate":"tool_call","toolCallId":"t1","kind":"execute","title":"x","status":"pending","rawInput":{"command":"x"},"_meta":{"claudeCode":{"toolName":"Bash"}}}`,
		"{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"t1\",\"status\":\"failed\",\"rawOutput\":\"Exit code Y\\nboom\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"```\\nExit code Y\\nboom\\n```\"}}],\"_meta\":{\"claudeCode\":{\"toolName\":\"Bash\"}}}"}},
}

// A text marker states an exit code only when it holds an integer that
// fits an int32: 3 is the code (a failure, whatever the status says);
// a word, a fraction, nothing, "(none)", "null", hex or a number past an
// int32 states none, and the call is never a success for it.
func TestEveryDialectsExitTextReadsByTheRules(t *testing.T) {
	malformed := []string{`abc`, `3.5`, ``, `(none)`, `null`, `0x3`, `2147483648`, `99999999999`}
	for _, tc := range exitTextCases {
		fold := func(v string) accum.Revision { return tc.fold(t, "Y", v) }
		last := fold("3")
		if assert.NotNil(t, last.ExitCode, tc.name) {
			assert.Equal(t, int32(3), *last.ExitCode, tc.name)
		}
		assert.Equal(t, accum.Failed, last.Outcome, tc.name)
		for _, v := range malformed {
			last := fold(v)
			assert.Nil(t, last.ExitCode, "%s, exit %q", tc.name, v)
			assert.NotEqual(t, accum.Succeeded, last.Outcome, "%s, exit %q", tc.name, v)
		}
	}
}
