package dialect

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readUpdate reads one session/update with d and returns its observations.
func readUpdate(t *testing.T, d Dialect, update string) []accum.Observation {
	t.Helper()
	f, err := Read(d, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":`+update+`}}`))
	require.NoError(t, err)
	return f.Observations
}

func mustDialect(t *testing.T, name string) Dialect {
	t.Helper()
	d, ok := Lookup(name)
	require.True(t, ok, name)
	return d
}

// A "future" OpenCode build that moves the exit code from metadata.exit
// to metadata.exit_status: the exit stays unknown, and the move is said.
func TestFutureBuildMovesExit(t *testing.T) {
	d := Bind(mustDialect(t, "opencode"), ParseVersion("99.0.0"))
	today := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"output":"boom\n","metadata":{"exit":3,"output":"boom\n"}}}`)
	require.Len(t, today, 1)
	require.NotNil(t, today[0].Exit)
	assert.Empty(t, today[0].Unrecognized, "today's wire is understood")

	future := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"output":"boom\n","metadata":{"exit_status":3,"output":"boom\n"}}}`)
	require.Len(t, future, 1)
	assert.Nil(t, future[0].Exit, "an exit in a field the dialect never saw is not inferred")
	assert.Equal(t, []accum.Unrecognized{{What: accum.UnrecognizedExit, Field: "rawOutput.metadata.exit_status"}}, future[0].Unrecognized)
}

// Qwen's rawOutput shell_result names its exit code exitCode; an
// exit_code there is a member no build was seen to send: no exit, and
// said.
func TestQwenExitOnlyFromExitCode(t *testing.T) {
	d := mustDialect(t, "qwen")
	today := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"failed","rawOutput":{"type":"shell_result","output":"boom\n","exitCode":3,"signal":null,"outcome":"failed"}}`)
	require.Len(t, today, 1)
	require.NotNil(t, today[0].Exit)
	assert.EqualValues(t, 3, today[0].Exit.Code)
	assert.Empty(t, today[0].Unrecognized, "today's wire is understood")

	moved := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"failed","rawOutput":{"type":"shell_result","output":"boom\n","exit_code":3,"signal":null,"outcome":"failed"}}`)
	require.Len(t, moved, 1)
	assert.Nil(t, moved[0].Exit, "an exit in a field the dialect never saw is not inferred")
	assert.Equal(t, []accum.Unrecognized{{What: accum.UnrecognizedExit, Field: "rawOutput.exit_code"}}, moved[0].Unrecognized)
}

// Both Codex adapters name the end event's exit code exit_code (every
// recorded build); one under exitCode or metadata.exit is a wire change:
// no exit, and said.
func TestCodexExitOnlyFromExitCode(t *testing.T) {
	d := mustDialect(t, "codex")
	today := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"failed","rawOutput":{"exit_code":3,"stdout":"boom\n","stderr":"","aggregated_output":"boom\n"}}`)
	require.Len(t, today, 1)
	require.NotNil(t, today[0].Exit)
	assert.EqualValues(t, 3, today[0].Exit.Code)
	assert.Empty(t, today[0].Unrecognized, "today's wire is understood")

	for _, c := range []struct{ output, field string }{
		{`{"exitCode":3,"stdout":"boom\n","stderr":"","aggregated_output":"boom\n"}`, "rawOutput.exitCode"},
		{`{"metadata":{"exit":3},"stdout":"boom\n","stderr":"","aggregated_output":"boom\n"}`, "rawOutput.metadata.exit"},
	} {
		moved := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"failed","rawOutput":`+c.output+`}`)
		require.Len(t, moved, 1)
		assert.Nil(t, moved[0].Exit, "%s: an exit in a field the dialect never saw is not inferred", c.field)
		require.NotEmpty(t, moved[0].Unrecognized, c.field)
		assert.Equal(t, c.field, moved[0].Unrecognized[0].Field)
	}
}

func TestUnrecognizedKinds(t *testing.T) {
	codex := mustDialect(t, "codex")
	for _, c := range []struct {
		name   string
		d      Dialect
		update string
		want   []accum.Unrecognized
	}{
		{"a signal name in a new member", mustDialect(t, "opencode"),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"output":"","metadata":{"exit":null,"killSignal":"SIGTERM"}}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedExit, Field: "rawOutput.metadata.killSignal"}}},
		{"a numeric string under _meta.terminal_*", mustDialect(t, "opencode"),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","_meta":{"terminal_exit":{"exit_code":"2"}},"rawOutput":{"output":"x"}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedExit, Field: "_meta.terminal_exit.exit_code"}}},
		{"output in a new member", codex,
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","rawOutput":{"stdout_text":"line one\nline two\n"}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedOutput, Field: "rawOutput.stdout_text"}}},
		{"output as bytes in a new member", codex,
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","rawOutput":{"chunk":{"data":[104,105,10]}}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedOutput, Field: "rawOutput.chunk.data"}}},
		{"a result block no rule reads", Generic(),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Command: make\nDirectory: (root)\nOutput: oops\nExit Code: 2\nSignal: (none)"}}]}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedResult, Field: "content text"}}},
		{"a text rawOutput with a result line", Generic(),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"completed","rawOutput":"Process exited with code 1\nOutput:\nno\n"}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedResult, Field: "rawOutput"}}},
		{"not on a live frame: output may say exit status", Generic(),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"FAIL\nexit status 1\n"}}]}`,
			nil},
		{"not when an exit was read", Generic(),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"completed","rawOutput":{"exit_code":1,"output":"exit status 1\n"}}`,
			nil},
		{"short words, paths and known members are not a wire change", Generic(),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"completed","rawOutput":{"exit_code":0,"text":"ok","output_file":"/tmp/very/long/path/to/output.txt","status":"completed","metadata":{"exit":0}}}`,
			nil},
		{"a status ACP does not define", mustDialect(t, "opencode"),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"error","rawOutput":{"output":"a\n","metadata":{"exit":3}}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedStatus, Field: "status"}}},
		{"a content item of a type ACP does not define", codex,
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"x"}},{"type":"terminal_output","data":"a\nb\n"}]}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedContent, Field: "content[].type"}}},
		{"a content block of a type ACP does not define", Generic(),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","content":[{"type":"content","content":{"type":"output","text":"a\nb\n"}}]}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedContent, Field: "content[].type"}}},
		{"ACP's own content types and statuses are read", Generic(),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"failed","content":[{"type":"content","content":{"type":"text","text":"x"}},{"type":"content","content":{"type":"resource_link","uri":"file:///x","name":"x"}},{"type":"diff","path":"/x","newText":"y"},{"type":"terminal","terminalId":"t"}]}`,
			nil},
		{"output moved to result", mustDialect(t, "qwen"),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"completed","rawOutput":{"result":"alpha.txt  beta.md"}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedOutput, Field: "rawOutput.result"}}},
		{"output in the elements' out", mustDialect(t, "cline"),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","rawOutput":[{"out":"a\nb\n"}]}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedOutput, Field: "rawOutput[].out"}}},
		{"a terminal's data moved to chunk", mustDialect(t, "claude"),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_output":{"terminal_id":"c","chunk":"Exit code 3\na\nb"}}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedOutput, Field: "_meta.terminal_output.chunk"}}},
		{"a body, a log, a content string", Generic(),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","rawOutput":{"body":"line one\nline two\n","log":"x\n","content":"y\n"}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedOutput, Field: "rawOutput.body"}, {What: accum.UnrecognizedOutput, Field: "rawOutput.log"}, {What: accum.UnrecognizedOutput, Field: "rawOutput.content"}}},
		{"a text block whose text moved", Generic(),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"completed","content":[{"type":"content","content":{"type":"text","value":"a\nb\n"}}]}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedContent, Field: "content[].content.text"}}},
		{"an empty text is a text", Generic(),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":""}}]}`,
			nil},
		{"the agent's failure notice reads like an exit line", mustDialect(t, "pi"),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"failed","_meta":{"terminal_output":{"terminal_id":"c","data":"\n\nCommand exited with status 3"},"terminal_exit":{"terminal_id":"c","exit_code":1,"signal":null}}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedResult, Field: "failure notice"}}},
		{"a failure notice of other words", mustDialect(t, "pi"),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"failed","_meta":{"terminal_output":{"terminal_id":"c","data":"Working directory does not exist: /x"},"terminal_exit":{"terminal_id":"c","exit_code":1,"signal":null}}}`,
			nil},
		{"tools that are not shells are not looked at", Generic(),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"read","status":"completed","rawOutput":{"exit_status":1}}`,
			nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs := readUpdate(t, c.d, c.update)
			require.NotEmpty(t, obs)
			assert.Equal(t, c.want, obs[0].Unrecognized)
		})
	}
}

// A frame that opens a tool call with the signs of a shell, which its
// dialect does not take for one (a renamed or re-kinded shell tool),
// says so; one without them, or one the dialect reads as a shell, does
// not.
func TestShellUnread(t *testing.T) {
	claude, gemini, copilot := mustDialect(t, "claude"), mustDialect(t, "gemini"), mustDialect(t, "copilot")
	for _, c := range []struct {
		name   string
		d      Dialect
		update string
		want   []accum.Unrecognized
	}{
		{"the shell tool renamed", claude,
			`{"_meta":{"claudeCode":{"toolName":"Shell"}},"toolCallId":"c","sessionUpdate":"tool_call","rawInput":{},"status":"pending","title":"Terminal","kind":"execute","content":[]}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedShell, Field: "kind"}}},
		{"a terminal content item", claude,
			`{"_meta":{"claudeCode":{"toolName":"Shell"}},"toolCallId":"c","sessionUpdate":"tool_call","rawInput":{},"status":"pending","title":"Terminal","content":[{"type":"terminal","terminalId":"c"}]}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedShell, Field: "content[].terminalId"}}},
		{"a command in rawInput", claude,
			`{"_meta":{"claudeCode":{"toolName":"Shell"}},"toolCallId":"c","sessionUpdate":"tool_call","rawInput":{"description":"list","cmd":"ls"},"status":"pending","title":"ls","kind":"other"}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedShell, Field: "rawInput.cmd"}}},
		{"the shell's kind changed: its id names it", gemini,
			`{"sessionUpdate":"tool_call","toolCallId":"run_shell_command__run_shell_command_1796051290753_0","status":"in_progress","title":"ls","content":[],"locations":[],"kind":"other"}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedShell, Field: "toolCallId"}}},
		{"the shell as it is", claude,
			`{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"c","sessionUpdate":"tool_call","rawInput":{},"status":"pending","title":"Terminal","kind":"execute","content":[]}`,
			nil},
		{"another tool", claude,
			`{"_meta":{"claudeCode":{"toolName":"Read"}},"toolCallId":"c","sessionUpdate":"tool_call","rawInput":{"file_path":"/x"},"status":"pending","title":"Read /x","kind":"read"}`,
			nil},
		// claude-code-acp (0.16.2, its newest) gives the tools that read
		// and stop a background shell the kind execute: tools the
		// dialect knows, no shell it missed.
		{"a known tool of kind execute that is no shell: BashOutput", claude,
			`{"_meta":{"claudeCode":{"toolName":"BashOutput"}},"toolCallId":"t2","sessionUpdate":"tool_call","rawInput":{"bash_id":"b1"},"status":"pending","title":"Tail Logs","kind":"execute"}`,
			nil},
		{"Copilot's stop_bash: kind execute, a shellId and no command", copilot,
			`{"sessionUpdate":"tool_call","toolCallId":"toolu_stop_1","title":"Stopping shell session","kind":"execute","status":"pending","rawInput":{"shellId":"3"}}`,
			nil},
		{"a known tool of kind execute that is no shell: KillShell", claude,
			`{"_meta":{"claudeCode":{"toolName":"KillShell"}},"toolCallId":"t3","sessionUpdate":"tool_call","rawInput":{"shell_id":"b1"},"status":"pending","title":"Kill Process","kind":"execute"}`,
			nil},
		{"a word in an id that is no shell's", gemini,
			`{"sessionUpdate":"tool_call","toolCallId":"read_file__shellfish_1","status":"in_progress","title":"x","kind":"read"}`,
			nil},
		{"not on a frame that does not open the call", claude,
			`{"_meta":{"claudeCode":{"toolName":"Shell"}},"toolCallId":"c","sessionUpdate":"tool_call_update","rawInput":{"command":"ls"},"kind":"execute"}`,
			nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs := readUpdate(t, c.d, c.update)
			require.NotEmpty(t, obs)
			if c.want != nil {
				assert.NotEqual(t, accum.ShellYes, obs[0].Shell, "the dialect does not read it as a shell")
			}
			assert.Equal(t, c.want, obs[0].Unrecognized)
		})
	}

	// A permission ask is often the first sight of a call.
	f, err := Read(gemini, []byte(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","options":[],"toolCall":{"toolCallId":"c","status":"pending","title":"ls","kind":"other","rawInput":{"command":"ls"}}}}`))
	require.NoError(t, err)
	require.Len(t, f.Observations, 1)
	assert.Equal(t, []accum.Unrecognized{{What: accum.UnrecognizedShell, Field: "rawInput.command"}}, f.Observations[0].Unrecognized)
}

// What a dialect declares it does not read is not unrecognized.
type unreadProbe struct {
	ToolCall
	RawOutput *struct {
		Exit Code `json:"exit"`
	} `json:"rawOutput"`
}

func (unreadProbe) unreadFields() []string {
	return []string{"rawOutput.legacy", "rawOutput.items[].text", "_meta"}
}

func TestUnreadFieldsDeclared(t *testing.T) {
	k := knownOf[unreadProbe]()
	var got []accum.Unrecognized
	s := scan{out: &got}
	s.path[0] = []byte(`"rawOutput"`)
	s.value([]byte(`{"exit":1,"legacy":{"exit_code":3},"items":[{"text":"long enough to be output\n","exit_code":4}],"exit_status":5}`), 0, k.rawOutput, 0)
	s.path[0] = []byte(`"_meta"`)
	s.value([]byte(`{"terminal_exit":{"exit_code":3}}`), 0, k.meta, 0)
	assert.Equal(t, []accum.Unrecognized{
		{What: accum.UnrecognizedExit, Field: "rawOutput.items[].exit_code"},
		{What: accum.UnrecognizedExit, Field: "rawOutput.exit_status"},
	}, got)
}

// Every recording of a studied build is understood: nothing it carries
// is reported as unrecognized, but in outputsLikeReports.
func TestRecordingsUnderstood(t *testing.T) {
	for _, file := range recordingFiles(t, true) {
		fh, err := os.Open(file)
		require.NoError(t, err)
		d := Generic()
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 64<<20)
		found := map[accum.Unrecognized]int{}
		for sc.Scan() {
			var line struct {
				Msg json.RawMessage `json:"msg"`
			}
			require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
			fr, err := Read(d, line.Msg)
			if err != nil {
				continue
			}
			if fr.AgentName != "" {
				d = Detect(fr.AgentName)
			} else if fr.Sign != "" && d == Generic() {
				d, _ = Lookup(fr.Sign)
				fr, _ = Read(d, line.Msg)
			}
			for _, o := range fr.Observations {
				for _, u := range o.Unrecognized {
					found[u]++
				}
			}
		}
		fh.Close()
		want := outputsLikeReports[filepath.Base(file)]
		if want == nil {
			want = map[accum.Unrecognized]int{}
		}
		assert.Equal(t, want, found, filepath.Base(file))
	}
}

// outputsLikeReports are the recordings of test/agents' tricky scenarios
// whose commands print lines that read like an agent's exit report
// ("Exit code 3", "Command exited with code 0", "Exit Code: 0"; in
// tricky-notes "exit: 7" and "<shellId: 9 completed with exit code 7>")
// in a text the dialect does not read an exit from, on a build that gives
// a success no exit code (plain Claude, Gemini with --debug, Gemini
// 0.36.0's plain text, and claude-agent-acp before 0.86.0 with the
// capability, whose 0 is made up and whose 0.70.0 and older builds repeat
// the output as rawOutput; tricky-load's outputs, live and replayed): the
// frames say what they cannot read, these many times.
var outputsLikeReports = map[string]map[accum.Unrecognized]int{
	"claude-agent-acp-0.101.0_air_plain_tricky.ndjson":   {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-agent-acp-0.101.0_plain_tricky.ndjson":       {{What: accum.UnrecognizedResult, Field: "content text"}: 3, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-code-acp-0.16.2_plain_tricky.ndjson":         {{What: accum.UnrecognizedResult, Field: "content text"}: 3, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"gemini-cli-0.61.0_debug_tricky.ndjson":              {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"claude-agent-acp-0.101.0_plain_tricky-notes.ndjson": {{What: accum.UnrecognizedResult, Field: "content text"}: 2, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-agent-acp-0.101.0_plain_exitline-cwd.ndjson": {{What: accum.UnrecognizedResult, Field: "content text"}: 2, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-code-acp-0.16.2_plain_tricky-notes.ndjson":   {{What: accum.UnrecognizedResult, Field: "content text"}: 2, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"gemini-cli-0.61.0_debug_tricky-notes.ndjson":        {{What: accum.UnrecognizedResult, Field: "content text"}: 1},
	"gemini-cli-0.36.0_debug_tricky.ndjson":              {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"gemini-cli-0.36.0_plain_tricky.ndjson":              {{What: accum.UnrecognizedResult, Field: "content text"}: 4},
	"gemini-cli-0.36.0_plain_tricky-notes.ndjson":        {{What: accum.UnrecognizedResult, Field: "content text"}: 4},
	"gemini-cli-0.35.3_plain_tricky.ndjson":              {{What: accum.UnrecognizedResult, Field: "content text"}: 4},
	"gemini-cli-0.35.3_plain_tricky-notes.ndjson":        {{What: accum.UnrecognizedResult, Field: "content text"}: 4},
	"gemini-cli-0.36.0_debug_tricky-load.ndjson":         {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"gemini-cli-0.36.0_plain_tricky-load.ndjson":         {{What: accum.UnrecognizedResult, Field: "content text"}: 4},
	"gemini-cli-0.45.2_debug_tricky-load.ndjson":         {{What: accum.UnrecognizedResult, Field: "content text"}: 1},
	"gemini-cli-0.40.1_debug_tricky.ndjson":              {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"gemini-cli-0.40.1_debug_tricky-load.ndjson":         {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	// tricky-gemini: "Command exited with code 7", no colon, is no
	// marker of Gemini's, and 0.36.0 shows it as the output.
	"gemini-cli-0.36.0_plain_tricky-gemini.ndjson": {{What: accum.UnrecognizedResult, Field: "content text"}: 1},
	"gemini-cli-0.37.2_plain_tricky-gemini.ndjson": {{What: accum.UnrecognizedResult, Field: "content text"}: 1},
	// pi-acp 0.0.23 and 0.0.24 (pi 0.84.2) give a success no exit code
	// either; in tricky-load, "[Process exited with code 7]" and the like.
	"pi-acp-0.0.23_plain_tricky.ndjson":                          {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"pi-acp-0.0.23_plain_tricky-notes.ndjson":                    {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"pi-acp-0.0.23_plain_tricky-load.ndjson":                     {{What: accum.UnrecognizedResult, Field: "content text"}: 4},
	"pi-acp-0.0.24_plain_tricky.ndjson":                          {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"pi-acp-0.0.24_plain_tricky-notes.ndjson":                    {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"pi-acp-0.0.24_plain_tricky-load.ndjson":                     {{What: accum.UnrecognizedResult, Field: "content text"}: 4},
	"claude-agent-acp-0.50.0_plain_tricky-load.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 4, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 4},
	"claude-agent-acp-0.50.0_plain_tricky-notes.ndjson":          {{What: accum.UnrecognizedResult, Field: "content text"}: 2, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-agent-acp-0.50.0_plain_tricky.ndjson":                {{What: accum.UnrecognizedResult, Field: "content text"}: 3, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-agent-acp-0.50.0_terminal-meta_tricky-load.ndjson":   {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 4},
	"claude-agent-acp-0.50.0_terminal-meta_tricky-notes.ndjson":  {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-agent-acp-0.50.0_terminal-meta_tricky.ndjson":        {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-agent-acp-0.40.0_terminal-meta_tricky-load.ndjson":   {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 4},
	"claude-agent-acp-0.40.0_terminal-meta_tricky-notes.ndjson":  {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-agent-acp-0.40.0_terminal-meta_tricky.ndjson":        {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-agent-acp-0.24.2_terminal-meta_tricky-load.ndjson":   {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 4},
	"claude-agent-acp-0.24.2_terminal-meta_tricky-notes.ndjson":  {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-agent-acp-0.24.2_terminal-meta_tricky.ndjson":        {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-agent-acp-0.24.2_plain_tricky.ndjson":                {{What: accum.UnrecognizedResult, Field: "content text"}: 3, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-agent-acp-0.60.0_plain_tricky-notes.ndjson":          {{What: accum.UnrecognizedResult, Field: "content text"}: 2, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-agent-acp-0.60.0_plain_tricky.ndjson":                {{What: accum.UnrecognizedResult, Field: "content text"}: 3, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-agent-acp-0.60.0_terminal-meta_tricky-notes.ndjson":  {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-agent-acp-0.60.0_terminal-meta_tricky.ndjson":        {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-agent-acp-0.70.0_plain_tricky-load.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 4, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 4},
	"claude-agent-acp-0.70.0_plain_tricky-notes.ndjson":          {{What: accum.UnrecognizedResult, Field: "content text"}: 2, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-agent-acp-0.70.0_plain_tricky.ndjson":                {{What: accum.UnrecognizedResult, Field: "content text"}: 3, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-agent-acp-0.70.0_terminal-meta_tricky-load.ndjson":   {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 4},
	"claude-agent-acp-0.70.0_terminal-meta_tricky-notes.ndjson":  {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-agent-acp-0.70.0_terminal-meta_tricky.ndjson":        {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-agent-acp-0.85.1_plain_tricky-load.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 4, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 4},
	"claude-agent-acp-0.85.1_plain_tricky-notes.ndjson":          {{What: accum.UnrecognizedResult, Field: "content text"}: 2, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-agent-acp-0.85.1_plain_tricky.ndjson":                {{What: accum.UnrecognizedResult, Field: "content text"}: 3, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-agent-acp-0.86.0_plain_tricky-load.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 4, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 4},
	"claude-agent-acp-0.86.0_plain_tricky-notes.ndjson":          {{What: accum.UnrecognizedResult, Field: "content text"}: 2, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-agent-acp-0.86.0_plain_tricky.ndjson":                {{What: accum.UnrecognizedResult, Field: "content text"}: 3, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-agent-acp-0.95.0_plain_tricky-notes.ndjson":          {{What: accum.UnrecognizedResult, Field: "content text"}: 2, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-agent-acp-0.95.0_plain_tricky.ndjson":                {{What: accum.UnrecognizedResult, Field: "content text"}: 3, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-code-acp-0.11.0_plain_tricky-notes.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"claude-code-acp-0.11.0_plain_tricky.ndjson":                 {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-code-acp-0.13.2_plain_tricky-notes.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 2, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-code-acp-0.13.2_plain_tricky.ndjson":                 {{What: accum.UnrecognizedResult, Field: "content text"}: 3, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-code-acp-0.12.6_plain_tricky-notes.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"claude-code-acp-0.12.6_plain_tricky.ndjson":                 {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-code-acp-0.14.0_plain_tricky-notes.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 2, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
	"claude-code-acp-0.14.0_plain_tricky.ndjson":                 {{What: accum.UnrecognizedResult, Field: "content text"}: 3, {What: accum.UnrecognizedResult, Field: "rawOutput"}: 3},
	"claude-code-acp-0.6.10_plain_tricky-notes.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-code-acp-0.4.5_plain_tricky-notes.ndjson":            {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-code-acp-0.2.5_plain_tricky-notes.ndjson":            {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-code-acp-0.8.0_plain_tricky-notes.ndjson":            {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-code-acp-0.8.0_plain_tricky.ndjson":                  {{What: accum.UnrecognizedResult, Field: "content text"}: 4},
	"claude-code-acp-0.9.0_plain_tricky-notes.ndjson":            {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-code-acp-0.9.0_plain_tricky.ndjson":                  {{What: accum.UnrecognizedResult, Field: "content text"}: 4},
	"claude-code-acp-0.10.2_plain_tricky-notes.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"claude-code-acp-0.10.2_plain_tricky.ndjson":                 {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-code-acp-0.10.3_plain_tricky-notes.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"claude-code-acp-0.10.3_plain_tricky.ndjson":                 {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-code-acp-0.10.4_plain_tricky-notes.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"claude-code-acp-0.10.4_plain_tricky.ndjson":                 {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-code-acp-0.10.5_plain_tricky-notes.ndjson":           {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"claude-code-acp-0.10.5_plain_tricky.ndjson":                 {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-code-acp-0.10.10_plain_tricky-notes.ndjson":          {{What: accum.UnrecognizedResult, Field: "content text"}: 2},
	"claude-code-acp-0.10.10_plain_tricky.ndjson":                {{What: accum.UnrecognizedResult, Field: "content text"}: 3},
	"claude-agent-acp-0.70.0_terminal-meta_exitline-load.ndjson": {{What: accum.UnrecognizedResult, Field: "rawOutput"}: 2},
}

func TestResultBlock(t *testing.T) {
	long := strings.Repeat(`exit-free output line\n`, 1000)
	for _, c := range []struct {
		lit  string
		want bool
	}{
		{`"Exit Code: 3"`, true},
		{`"Command: x\nExit Code: 3\nSignal: (none)"`, true},
		{`"exit status 1\n"`, true},
		{`"[Process exited with code 3]\na\nb\n"`, true},
		{`"a\nb\n<Command exited with code 3>"`, true},
		{`"a\n(exit code 3)\n"`, true},
		{`"  exit status: 2"`, true},
		{`"Exit status 3\nok\n"`, true},
		{`"a\nb\n\n\nCommand exited with status 3"`, true},
		{`"Command: x\nOutput: a\n[exit: 3]\nSignal: (none)"`, true},
		{`"a\nExited with status 3\n"`, true},
		{`"x\nExit status 3\n"`, true},
		// Go's os/exec words a failed program so: a command's own output
		// (go test, go run) holds it, at its end or a few lines before.
		{`"--- FAIL: TestX (0.00s)\nFAIL\nexit status 1\nFAIL\texample.com/x\t0.004s\n"`, false},
		{`"panic: boom\n\ngoroutine 1 [running]:\nmain.main()\nexit status 2\n"`, false},
		{`"Process exited with code 137\nOutput:\n"`, true},
		{`"Exited with code 4.Final output:\n\nx\n"`, true},
		{`"` + long + `Exit Code: 2"`, true},
		{`"Exit Code: 2\n` + long + `"`, true},
		{`"` + long + `Exit Code: 2\n` + long + `"`, false}, // in the middle of a long output: not a result block
		{`"the exit code is 3"`, false},
		{`"exit status unknown"`, false},
		{`"Exit Code: 3 and more"`, false},
		{`"` + long + `"`, false},
	} {
		assert.Equal(t, c.want, resultBlock([]byte(c.lit)), "%.60q", c.lit)
	}
}

// wordKind says what nameKinds reads of each word: the word lists of the
// member names that say an exit, output or where output is.
func TestWordKinds(t *testing.T) {
	for _, c := range []struct {
		name string
		want wordKinds
	}{
		{"exitCode", wordKinds{exit: true}},
		{"exit_status", wordKinds{exit: true}},
		{"ReturnCode", wordKinds{exit: true}},
		{"returncode", wordKinds{exit: true}},
		{"rc", wordKinds{exit: true}},
		{"killSignal", wordKinds{exit: true, signal: true}},
		{"stdout_text", wordKinds{output: true}},
		{"STDERR", wordKinds{output: true}},
		{"data", wordKinds{output: true}},
		{"result", wordKinds{output: true}},
		{"out", wordKinds{output: true}},
		{"chunk", wordKinds{output: true}},
		{"body", wordKinds{output: true}},
		{"log", wordKinds{output: true}},
		{"content", wordKinds{output: true}},
		{"logFile", wordKinds{output: true, place: true}},
		{"output-file", wordKinds{output: true, place: true}},
		{"output.path", wordKinds{output: true, place: true}},
		{"text uri", wordKinds{output: true, place: true}},
		{"fileName", wordKinds{place: true}},
		{"dir", wordKinds{place: true}},
		{"url", wordKinds{place: true}},
		{"id", wordKinds{place: true}},
		{"command", wordKinds{}},
		{"exited", wordKinds{}},
		{"outputs", wordKinds{}},
		{strings.Repeat("x", 33) + "_exit", wordKinds{exit: true}},
		{strings.Repeat("exit", 9), wordKinds{}},
	} {
		assert.Equal(t, c.want, nameKinds([]byte(c.name)), c.name)
	}
}

// knownNode.member finds, for every name, what a lookup of the name
// folded as encoding/json folds it finds in the node's members: on every
// node of every dialect's known tree, for each member's name as the
// dialect spells it, in upper and lower case, escaped, and for names that
// are no member.
func TestKnownMemberIsTheMap(t *testing.T) {
	for _, d := range All() {
		// A shell frame with rawOutput and _meta builds the dialect's tree.
		_, _ = Read(d, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","rawOutput":{},"_meta":{}}}}`))
	}
	nodes := 0
	var check func(n *knownNode, depth int)
	check = func(n *knownNode, depth int) {
		if n == nil || depth > 20 {
			return
		}
		nodes++
		names := []string{"", "x", "exit_status", "ſtdout", "K", "\u212a", strings.Repeat("a", 70)}
		for k, c := range n.members {
			names = append(names, k, strings.ToLower(k), k+"x", k[:len(k)/2])
			check(c, depth+1)
		}
		for _, name := range names {
			for _, lit := range []string{`"` + name + `"`, strings.Replace(strconv.Quote(name), "a", `\u0061`, 1)} {
				want := n.members[jsonlit.FoldKey([]byte(lit))]
				if n.members == nil {
					want = nil
				}
				assert.Same(t, want, n.member([]byte(lit)), "%s", lit)
			}
		}
		check(n.elems, depth+1)
	}
	readPlans.Range(func(_, v any) bool {
		k := v.(*readPlan).known
		check(k.rawOutput, 0)
		check(k.meta, 0)
		return true
	})
	assert.Greater(t, nodes, 50, "the dialects' trees were built and walked")
}

// Members a dialect does not read are found wherever they are: after a
// big known string (a frame the elided decode reads light), under
// `_meta`, nested in an unknown object, in an array, and with names that
// differ only in case from known ones.
func TestUnrecognizedAfterBigKnown(t *testing.T) {
	big := strings.Repeat(`0123456789 seq output line\n`, 40<<10/27)
	codex := mustDialect(t, "codex")
	for _, c := range []struct {
		name   string
		update string
		want   []accum.Unrecognized
	}{
		{"after a big known output",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","rawOutput":{"aggregated_output":"` + big + `","stdout":"` + big + `","new_exit_code":3}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedExit, Field: "rawOutput.new_exit_code"}}},
		{"after a big content text, under _meta, nested and in an array",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"` + big + `"}}],` +
				`"_meta":{"terminal_exit":{"exit_code":null,"exit_status_v2":4},"terminal_output":{"data":"x","stdout_bytes":"` + big[:64] + `"}},` +
				`"rawOutput":{"formatted_output":"` + big + `","result":{"exitCode":5,"chunks":[{"text":"` + big[:64] + `"}]}}}`,
			[]accum.Unrecognized{
				{What: accum.UnrecognizedExit, Field: "_meta.terminal_exit.exit_status_v2"},
				{What: accum.UnrecognizedOutput, Field: "_meta.terminal_output.stdout_bytes"},
				{What: accum.UnrecognizedExit, Field: "rawOutput.result.exitCode"},
				{What: accum.UnrecognizedOutput, Field: "rawOutput.result.chunks[].text"},
			}},
		{"a known name in another case is known; a longer one is not",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","rawOutput":{"AGGREGATED_OUTPUT":"` + big + `","Exit_Code":1,"exit_code_":2}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedExit, Field: "rawOutput.exit_code_"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs := readUpdate(t, codex, c.update)
			require.NotEmpty(t, obs)
			assert.Equal(t, c.want, obs[0].Unrecognized)
		})
	}
}

// The walk finds `params`, `update`, `rawOutput` and `_meta` wherever
// encoding/json (and so the typed decode) does: in another case, with an
// escape, and spelled with a character that folds to an ASCII letter
// (ſ folds to S, as encoding/json folds names: "paramſ" is params).
func TestUnrecognizedUnderFoldedNames(t *testing.T) {
	codex := mustDialect(t, "codex")
	for _, c := range []struct{ name, params, update, rawOutput string }{
		{"as sent", "params", "update", "rawOutput"},
		{"another case", "PARAMS", "Update", "RAWOUTPUT"},
		{"escaped", `p\u0061rams`, `upd\u0061te`, `r\u0061wOutput`},
		{"a non-ASCII fold", "paramſ", "update", "rawOutput"},
		{"a non-ASCII fold escaped", `param\u017f`, "update", "rawOutput"},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg := `{"jsonrpc":"2.0","method":"session/update","` + c.params + `":{"sessionId":"s","` + c.update + `":` +
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"in_progress","` + c.rawOutput + `":{"new_exit_code":3}}}}`
			var generic struct {
				Params struct {
					Update struct {
						RawOutput map[string]any `json:"rawOutput"`
					} `json:"update"`
				} `json:"params"`
			}
			require.NoError(t, json.Unmarshal([]byte(msg), &generic))
			require.NotEmpty(t, generic.Params.Update.RawOutput, "encoding/json reads the names as params, update and rawOutput")
			var spelled string // the path names a member as sent, unquoted
			require.NoError(t, json.Unmarshal([]byte(`"`+c.rawOutput+`"`), &spelled))
			f, err := Read(codex, []byte(msg))
			require.NoError(t, err)
			require.NotEmpty(t, f.Observations)
			assert.Equal(t, []accum.Unrecognized{{What: accum.UnrecognizedExit, Field: spelled + ".new_exit_code"}}, f.Observations[0].Unrecognized)
		})
	}
}

// readWalked is Read with noticeUnrecognized walking the frame itself
// rather than taking the fast decode's marks.
func readWalked(d Dialect, msg []byte) (Frame, error) {
	noMarks.Store(true)
	defer noMarks.Store(false)
	return Read(d, msg)
}

// markSeeds are updates in which the marks of the fast decode and the walk
// could part: the members named in another case, escaped, folded from a
// non-ASCII letter, given twice, with an update in a toolCall too, and
// other objects of the update type.
var markSeeds = func() []string {
	up := func(params string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":` + params + `}`
	}
	body := `"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"completed"`
	var out []string
	for _, m := range []string{
		`"rawOutput":{"new_exit_code":3}`,
		`"RAWOUTPUT":{"new_exit_code":3}`,
		`"r\u0061wOutput":{"new_exit_code":3},"_m\u0065ta":{"x":{"exit":1}}`,
		`"rawOutpuT":{"x":"y"},"_META":{"terminal_exit":{"new_code":4}}`,
		"\"rawOutput\":{\"exit\":1},\"_meta\":{\"exitſtatus\":2}",
		"\"_\u006deta\":{\"killSignal\":\"SIGTERM\"}",
		`"_meta":{"a":{"exitCode":1}},"_meta":{"b":{"exitCode":2}}`,
		`"_meta":{"a":1},"_Meta":{"exit_status":2},"_mEta":{"c":3},"_meTa":{"d":4},"_metA":{"exit":5}`,
		`"rawOutput":"exit code 3","_meta":"Exit code: 2"`,
		`"rawOutput":[{"exit_code":1}],"_meta":[1,{"signal":"SIGKILL"}]`,
		`"rawOutput":null,"_meta":null`,
		"\"rawOutput\":{\"output\":\"\\u001b[31mx\\r\\u0000\",\"exit_status\":7}",
	} {
		out = append(out, up(`{"sessionId":"s","update":{`+body+`,`+m+`}}`))
		out = append(out, up(`{"sessionId":"s","update":{`+m+`,`+body+`},"toolCall":{"toolCallId":"d","rawOutput":{"exit_status":9}}}`))
	}
	out = append(out,
		`{"params":{"update":{`+body+`,"rawOutput":{"a_exit":1}}},"jsonrpc":"2.0","method":"session/update"}`,
		up(`{"update":{`+body+`,"rawOutput":{"a_exit":1}},"update":{`+body+`,"rawOutput":{"b_exit":2}}}`),
		up(`{"update":{`+body+`,"rawOutput":{"a_exit":1}},"Update":{`+body+`,"rawOutput":{"b_exit":2}}}`),
		up(`{"update":{` + body + `,"rawOutput":{"a_exit":1}}}`)[:80],
	)
	return out
}()

// TestUnrecognizedMarksAreTheWalk: what the unrecognized walk finds from
// the fast decode's marks of rawOutput and _meta is what it finds walking
// the frame to them, on every recorded frame and on the seeds, with every
// dialect.
func TestUnrecognizedMarksAreTheWalk(t *testing.T) {
	frames := recordingFrames(t, 16<<20, true)
	for _, s := range markSeeds {
		frames = append(frames, []byte(s))
	}
	found := 0
	for _, m := range frames {
		for _, d := range All() {
			got, gotErr := Read(d, m)
			want, wantErr := readWalked(d, m)
			require.Equal(t, wantErr, gotErr, "%s: %s", d.Info().Name, m)
			require.Equal(t, want, got, "%s: %s", d.Info().Name, m)
			for _, o := range got.Observations {
				found += len(o.Unrecognized)
			}
		}
	}
	require.Greater(t, found, 1000, "the recordings and seeds have members no dialect reads")
}

// FuzzUnrecognizedMarks looks for a frame whose unrecognized members read
// otherwise from the fast decode's marks than from the walk.
//
//	go test ./internal/dialect -run '^$' -fuzz FuzzUnrecognizedMarks -fuzztime 20000x
func FuzzUnrecognizedMarks(f *testing.F) {
	seedFrames(f, markSeeds...)
	dialects := All()
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, d := range dialects {
			got, gotErr := Read(d, msg)
			want, wantErr := readWalked(d, msg)
			if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Fatalf("%s: %q\nmarks: error %v\nwalk:  error %v", d.Info().Name, msg, gotErr, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %q\nmarks: %+v\nwalk:  %+v", d.Info().Name, msg, got, want)
			}
		}
	})
}

// Every dialect says an exit code its agent moved to a member it does not
// read, also one whose rawOutput is read by its own code rather than by
// json tags (see ownFields), and beside what it reads.
func TestEveryDialectSaysAMovedExit(t *testing.T) {
	const end = `{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","status":"completed",`
	for _, d := range All() {
		for _, c := range []struct{ rest, field string }{
			{`"rawOutput":{"exit_status_v2":3}}`, "rawOutput.exit_status_v2"},
			{`"rawOutput":{"vendor_result":{"exit_status_v2":3}}}`, "rawOutput.vendor_result.exit_status_v2"},
			{`"_meta":{"vendor":{"exit_status_v2":3}}}`, "_meta.vendor.exit_status_v2"},
		} {
			obs := readUpdate(t, d, end+c.rest)
			require.NotEmpty(t, obs, d.Info().Name)
			assert.Contains(t, obs[0].Unrecognized, accum.Unrecognized{What: accum.UnrecognizedExit, Field: c.field}, "%s: %s", d.Info().Name, c.rest)
		}
	}
	for _, c := range []struct{ dialect, update, field string }{
		{"copilot", `"rawOutput":{"message":"m","contents":[{"type":"shell_exit","exit_code":4}]}}`, "rawOutput.contents[].exit_code"},
		{"copilot", `"rawOutput":{"contents":[{"type":"shell_exit","exitCode":0,"signal":"SIGKILL"}]}}`, "rawOutput.contents[].signal"},
		{"cline", `"rawOutput":[{"query":"make","result":"boom","exitCode":2}]}`, "rawOutput[].exitCode"},
		{"cline", `"rawOutput":{"query":"make","result":"boom","exitCode":2}}`, "rawOutput.exitCode"},
		{"pi", `"rawOutput":{"toolName":"bash","details":{"exitCode":2}}}`, "rawOutput.details.exitCode"},
		{"auggie", `"rawOutput":{"output":"x","returnCode":2}}`, "rawOutput.returnCode"},
	} {
		obs := readUpdate(t, mustDialect(t, c.dialect), end+c.update)
		require.NotEmpty(t, obs, c.dialect)
		assert.Contains(t, obs[0].Unrecognized, accum.Unrecognized{What: accum.UnrecognizedExit, Field: c.field}, "%s: %s", c.dialect, c.update)
	}
}

// A member the dialect reads, sent with another JSON type or with an exit
// code no int32 holds, is read as absent (never made up) and said: a
// build that wraps its exit code in an object, sends it as a word or a
// fraction, or its output as an object, changed its wire.
func TestUnrecognizedWrongType(t *testing.T) {
	codex, opencode := mustDialect(t, "codex"), mustDialect(t, "opencode")
	codexEnd := func(members string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"failed","rawOutput":{` + members + `}}`
	}
	for _, c := range []struct {
		name   string
		d      Dialect
		update string
		want   []accum.Unrecognized
	}{
		{"an exit code in an object", codex, codexEnd(`"exit_code":{"code":3},"stdout":"boom\n","aggregated_output":"boom\n"`),
			[]accum.Unrecognized{{What: accum.UnrecognizedExit, Field: "rawOutput.exit_code"}}},
		{"an exit code over int32", codex, codexEnd(`"exit_code":1099511627776,"stdout":"boom\n","aggregated_output":"boom\n"`),
			[]accum.Unrecognized{{What: accum.UnrecognizedExit, Field: "rawOutput.exit_code"}}},
		{"an exit code with a fraction", codex, codexEnd(`"exit_code":3.5,"stdout":"boom\n","aggregated_output":"boom\n"`),
			[]accum.Unrecognized{{What: accum.UnrecognizedExit, Field: "rawOutput.exit_code"}}},
		{"an exit code as a word", codex, codexEnd(`"exit_code":"error","stdout":"boom\n","aggregated_output":"boom\n"`),
			[]accum.Unrecognized{{What: accum.UnrecognizedExit, Field: "rawOutput.exit_code"}}},
		{"output as an object", codex, codexEnd(`"exit_code":3,"stdout":{"text":"boom\n"},"aggregated_output":{"text":"boom\n"}`),
			[]accum.Unrecognized{{What: accum.UnrecognizedOutput, Field: "rawOutput.stdout"}, {What: accum.UnrecognizedOutput, Field: "rawOutput.aggregated_output"}}},
		{"an exit's object as a string", opencode,
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"output":"boom\n","metadata":"{\"exit\":3}"}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedExit, Field: "rawOutput.metadata"}}},
		{"_meta's terminal exit as a number", codex,
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","_meta":{"terminal_exit":3}}`,
			[]accum.Unrecognized{{What: accum.UnrecognizedExit, Field: "_meta.terminal_exit"}}},
		// What a dialect reads with its own types is no change.
		{"a numeric string", codex, codexEnd(`"exit_code":"3","stdout":"boom\n","aggregated_output":"boom\n"`), nil},
		{"an integral float", codex, codexEnd(`"exit_code":3.0,"stdout":"boom\n","aggregated_output":"boom\n"`), nil},
		{"null", codex, codexEnd(`"exit_code":null,"stdout":null,"aggregated_output":"boom\n"`), nil},
		{"a negative code", codex, codexEnd(`"exit_code":-1,"stdout":"","aggregated_output":""`), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs := readUpdate(t, c.d, c.update)
			require.NotEmpty(t, obs)
			var got []accum.Unrecognized
			for _, o := range obs {
				got = append(got, o.Unrecognized...)
				if c.want != nil && o.Exit != nil {
					assert.Equal(t, int32(3), o.Exit.Code, "only a code read from what it reads")
				}
			}
			assert.Equal(t, c.want, got)
		})
	}
}
