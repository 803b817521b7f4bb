package normalize_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reportsOf feeds the recording at path to a Normalizer, in the
// direction each frame travelled, closes the session, and returns what
// Hooks.UnrecognizedField said ("what field").
func reportsOf(t *testing.T, path string) []string {
	t.Helper()
	var got []string
	n := normalize.New(normalize.WithHooks(normalize.Hooks{UnrecognizedField: func(_, _, what, field string) {
		got = append(got, what+" "+field)
	}}))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	seq := uint64(0)
	for sc.Scan() {
		var line struct {
			Dir string
			Msg json.RawMessage
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		dir := normalize.FromAgent
		if line.Dir == "client->agent" {
			dir = normalize.FromClient
		}
		seq++
		_, _ = n.Feed("s", line.Msg, normalize.WithSequence(seq), normalize.WithDirection(dir))
	}
	require.NoError(t, sc.Err())
	_, _ = n.CloseSession("s", normalize.WithSequence(seq+1))
	return got
}

// Every committed recording is read as its agent's build sent it: the
// session says nothing unrecognized, not even at the end of its calls
// (an exit line left in output) or of a tool it does not take for a
// shell. A report here is a false one: it would fire for every session
// of that build.
//
// But for outputsLikeReports: there the command's own output reads like
// an agent's exit report on a call with no exit code to weigh it against,
// and the session says exactly those reports.
func TestRecordingsRaiseNoReport(t *testing.T) {
	files, _ := filepath.Glob("../test/testdata/recordings/*.ndjson")
	agents, _ := filepath.Glob("../test/testdata/recordings/agents/*.ndjson")
	require.NotEmpty(t, agents)
	for _, file := range append(files, agents...) {
		assert.Equal(t, outputsLikeReports[filepath.Base(file)], reportsOf(t, file), filepath.Base(file))
	}
}

// outputsLikeReports are the recordings of test/agents' tricky scenarios
// whose commands print lines that read like an agent's exit report
// ("Exit code 3", "Command exited with code 0", "Exit Code: 0"; in
// tricky-notes "exit: 7" and "<shellId: 9 completed with exit code 7>") on a
// build that gives a success no exit code (plain Claude, Gemini with
// --debug, Gemini 0.36.0's plain text), or whose exit comes only after
// the turn has ended (codex-acp2 1.1.4 sends a call's end during the next
// prompt: tricky-load's d_exited, '[Process exited with code 7]' last):
// with no code to tell them from a reworded report, the session says what
// it cannot read, once, and these are its words.
var outputsLikeReports = map[string][]string{
	"claude-agent-acp-0.101.0_air_plain_tricky.ndjson":               {"result_text content text"},
	"claude-agent-acp-0.101.0_plain_tricky.ndjson":                   {"result_text rawOutput"},
	"claude-code-acp-0.16.2_plain_tricky.ndjson":                     {"result_text rawOutput"},
	"gemini-cli-0.61.0_debug_tricky.ndjson":                          {"result_text output"},
	"claude-agent-acp-0.101.0_plain_tricky-notes.ndjson":             {"result_text output"},
	"claude-agent-acp-0.101.0_plain_exitline-cwd.ndjson":             {"result_text rawOutput"},
	"claude-agent-acp-0.101.0_air_terminal-meta_exitline-cwd.ndjson": {"result_text output"},
	"claude-code-acp-0.16.2_plain_tricky-notes.ndjson":               {"result_text output"},
	"gemini-cli-0.61.0_debug_tricky-notes.ndjson":                    {"result_text output"},
	"gemini-cli-0.36.0_debug_tricky.ndjson":                          {"result_text output"},
	"gemini-cli-0.36.0_plain_tricky.ndjson":                          {"result_text content text"},
	"gemini-cli-0.36.0_plain_tricky-notes.ndjson":                    {"result_text output"},
	"gemini-cli-0.35.3_plain_tricky.ndjson":                          {"result_text content text"},
	"gemini-cli-0.35.3_plain_tricky-notes.ndjson":                    {"result_text output"},
	"gemini-cli-0.36.0_debug_tricky-load.ndjson":                     {"result_text content text"},
	"gemini-cli-0.36.0_plain_tricky-load.ndjson":                     {"result_text content text"},
	"gemini-cli-0.45.2_debug_tricky-load.ndjson":                     {"result_text content text"},
	"codex-acp2-1.1.4_plain_tricky-load.ndjson":                      {"result_text output"},
	"gemini-cli-0.40.1_debug_tricky.ndjson":                          {"result_text output"},
	"gemini-cli-0.40.1_debug_tricky-load.ndjson":                     {"result_text content text"},
	"gemini-cli-0.36.0_plain_tricky-gemini.ndjson":                   {"result_text content text"},
	"gemini-cli-0.37.2_plain_tricky-gemini.ndjson":                   {"result_text content text"},
	// pi-acp 0.0.23 and 0.0.24 (pi 0.84.2) give a success no exit code
	// either; in tricky-load, "[Process exited with code 7]" and the like.
	// So does pi 0.85.1 under pi-acp 0.0.34 (its terminal_exit 0 is set
	// aside: a killed shell sends the same frame).
	"pi-acp-0.0.34+pi.0.85.1_plain_tricky.ndjson":                {"result_text output"},
	"pi-acp-0.0.23_plain_tricky.ndjson":                          {"result_text content text"},
	"pi-acp-0.0.23_plain_tricky-notes.ndjson":                    {"result_text output"},
	"pi-acp-0.0.23_plain_tricky-load.ndjson":                     {"result_text content text"},
	"pi-acp-0.0.24_plain_tricky.ndjson":                          {"result_text content text"},
	"pi-acp-0.0.24_plain_tricky-notes.ndjson":                    {"result_text output"},
	"pi-acp-0.0.24_plain_tricky-load.ndjson":                     {"result_text content text"},
	"claude-agent-acp-0.50.0_plain_tricky-load.ndjson":           {"result_text rawOutput"},
	"claude-agent-acp-0.50.0_plain_tricky-notes.ndjson":          {"result_text output"},
	"claude-agent-acp-0.50.0_plain_tricky.ndjson":                {"result_text rawOutput"},
	"claude-agent-acp-0.50.0_terminal-meta_tricky-load.ndjson":   {"result_text rawOutput"},
	"claude-agent-acp-0.50.0_terminal-meta_tricky-notes.ndjson":  {"result_text output"},
	"claude-agent-acp-0.50.0_terminal-meta_tricky.ndjson":        {"result_text rawOutput"},
	"claude-agent-acp-0.40.0_terminal-meta_tricky-load.ndjson":   {"result_text rawOutput"},
	"claude-agent-acp-0.40.0_terminal-meta_tricky-notes.ndjson":  {"result_text output"},
	"claude-agent-acp-0.40.0_terminal-meta_tricky.ndjson":        {"result_text rawOutput"},
	"claude-agent-acp-0.24.2_terminal-meta_tricky-load.ndjson":   {"result_text rawOutput"},
	"claude-agent-acp-0.24.2_terminal-meta_tricky-notes.ndjson":  {"result_text output"},
	"claude-agent-acp-0.24.2_terminal-meta_tricky.ndjson":        {"result_text rawOutput"},
	"claude-agent-acp-0.24.2_plain_tricky.ndjson":                {"result_text rawOutput"},
	"claude-agent-acp-0.60.0_plain_tricky-notes.ndjson":          {"result_text output"},
	"claude-agent-acp-0.60.0_plain_tricky.ndjson":                {"result_text rawOutput"},
	"claude-agent-acp-0.60.0_terminal-meta_tricky-notes.ndjson":  {"result_text output"},
	"claude-agent-acp-0.60.0_terminal-meta_tricky.ndjson":        {"result_text rawOutput"},
	"claude-agent-acp-0.70.0_plain_tricky-load.ndjson":           {"result_text rawOutput"},
	"claude-agent-acp-0.70.0_plain_tricky-notes.ndjson":          {"result_text output"},
	"claude-agent-acp-0.70.0_plain_tricky.ndjson":                {"result_text rawOutput"},
	"claude-agent-acp-0.70.0_terminal-meta_tricky-load.ndjson":   {"result_text rawOutput"},
	"claude-agent-acp-0.70.0_terminal-meta_tricky-notes.ndjson":  {"result_text output"},
	"claude-agent-acp-0.70.0_terminal-meta_tricky.ndjson":        {"result_text rawOutput"},
	"claude-agent-acp-0.85.1_plain_tricky-load.ndjson":           {"result_text rawOutput"},
	"claude-agent-acp-0.85.1_plain_tricky-notes.ndjson":          {"result_text output"},
	"claude-agent-acp-0.85.1_plain_tricky.ndjson":                {"result_text rawOutput"},
	"claude-agent-acp-0.85.1_terminal-meta_tricky-load.ndjson":   {"result_text output"},
	"claude-agent-acp-0.85.1_terminal-meta_tricky-notes.ndjson":  {"result_text output"},
	"claude-agent-acp-0.85.1_terminal-meta_tricky.ndjson":        {"result_text output"},
	"claude-agent-acp-0.86.0_plain_tricky-load.ndjson":           {"result_text rawOutput"},
	"claude-agent-acp-0.86.0_plain_tricky-notes.ndjson":          {"result_text output"},
	"claude-agent-acp-0.86.0_plain_tricky.ndjson":                {"result_text rawOutput"},
	"claude-agent-acp-0.95.0_plain_tricky-notes.ndjson":          {"result_text output"},
	"claude-agent-acp-0.95.0_plain_tricky.ndjson":                {"result_text rawOutput"},
	"claude-code-acp-0.11.0_plain_tricky-notes.ndjson":           {"result_text output"},
	"claude-code-acp-0.11.0_plain_tricky.ndjson":                 {"result_text content text"},
	"claude-code-acp-0.13.2_plain_tricky-notes.ndjson":           {"result_text output"},
	"claude-code-acp-0.13.2_plain_tricky.ndjson":                 {"result_text rawOutput"},
	"claude-code-acp-0.12.6_plain_tricky-notes.ndjson":           {"result_text output"},
	"claude-code-acp-0.12.6_plain_tricky.ndjson":                 {"result_text content text"},
	"claude-code-acp-0.14.0_plain_tricky-notes.ndjson":           {"result_text output"},
	"claude-code-acp-0.14.0_plain_tricky.ndjson":                 {"result_text rawOutput"},
	"claude-code-acp-0.6.10_plain_tricky-notes.ndjson":           {"result_text output"},
	"claude-code-acp-0.4.5_plain_tricky-notes.ndjson":            {"result_text output"},
	"claude-code-acp-0.2.5_plain_tricky-notes.ndjson":            {"result_text output"},
	"claude-code-acp-0.8.0_plain_tricky-notes.ndjson":            {"result_text output"},
	"claude-code-acp-0.8.0_plain_tricky.ndjson":                  {"result_text content text"},
	"claude-code-acp-0.9.0_plain_tricky-notes.ndjson":            {"result_text output"},
	"claude-code-acp-0.9.0_plain_tricky.ndjson":                  {"result_text content text"},
	"claude-code-acp-0.10.2_plain_tricky-notes.ndjson":           {"result_text output"},
	"claude-code-acp-0.10.2_plain_tricky.ndjson":                 {"result_text content text"},
	"claude-code-acp-0.10.3_plain_tricky-notes.ndjson":           {"result_text output"},
	"claude-code-acp-0.10.3_plain_tricky.ndjson":                 {"result_text content text"},
	"claude-code-acp-0.10.4_plain_tricky-notes.ndjson":           {"result_text output"},
	"claude-code-acp-0.10.4_plain_tricky.ndjson":                 {"result_text content text"},
	"claude-code-acp-0.10.5_plain_tricky-notes.ndjson":           {"result_text output"},
	"claude-code-acp-0.10.5_plain_tricky.ndjson":                 {"result_text content text"},
	"claude-code-acp-0.10.10_plain_tricky-notes.ndjson":          {"result_text output"},
	"claude-code-acp-0.10.10_plain_tricky.ndjson":                {"result_text content text"},
	"claude-agent-acp-0.70.0_terminal-meta_exitline-load.ndjson": {"result_text rawOutput"},
	"claude-agent-acp-0.85.1_terminal-meta_exitline-load.ndjson": {"result_text output"},
}

// saidOf feeds frames to a new Normalizer as session "s" and returns what
// Hooks.UnrecognizedField said ("what field").
func saidOf(t *testing.T, frames ...string) []string {
	t.Helper()
	var got []string
	n := normalize.New(normalize.WithHooks(normalize.Hooks{UnrecognizedField: func(_, _, what, field string) {
		got = append(got, what+" "+field)
	}}))
	for _, f := range frames {
		_, err := n.Feed("s", []byte(f))
		require.NoError(t, err)
	}
	return got
}

// An exit line the dialect left in a call's output (a build reworded its
// words about how the command ended) is said when the call ends, once;
// the record is what the dialect read. Output that merely ends as a Go
// program's does, with an exit known, says nothing.
func TestExitLineLeftInOutput(t *testing.T) {
	update := func(u string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":` + u + `}}`
	}
	live := func(data string) string {
		return update(`{"_meta":{"terminal_output":{"terminal_id":"t1","data":` + data + `}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`)
	}
	open := update(`{"_meta":{"claudeCode":{"toolName":"Bash"},"terminal_info":{"terminal_id":"t1"}},"toolCallId":"t1","sessionUpdate":"tool_call","rawInput":{"command":"printf 'a\\nb\\n'; exit 3"},"status":"pending","title":"Terminal","kind":"execute","content":[{"type":"terminal","terminalId":"t1"}]}`)
	end := update(`{"_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"t1","exit_code":3,"signal":null}},"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"failed"}`)

	assert.Empty(t, saidOf(t, claudeInit, open, live(`"Exit code 3\na\nb"`), end), "the agent's own header is read")
	assert.Equal(t, []string{"result_text output"}, saidOf(t, claudeInit, open, live(`"exit status 3\na\nb"`), end))
	assert.Equal(t, []string{"result_text output"}, saidOf(t, claudeInit, open, live(`"Exited with status 3\na\nb"`), end))
	assert.Empty(t, saidOf(t, claudeInit, open, live(`"a\nb\nexit status 3"`), end), "a Go program's last line, the exit known")
	assert.Empty(t, saidOf(t, claudeInit, open, live(`"exit status 3\na\nb"`)), "a call that has not ended")
	// Output that comes after the end (a session/load replaying the
	// call's history) is looked at when it comes.
	assert.Equal(t, []string{"result_text output"}, saidOf(t, claudeInit, open, end, live(`"exit status 3\na\nb"`)))
}

// A tool call that opens with the signs of a shell its dialect does not
// take for one is said, though the call is none; the session's shell
// calls say it no more than before.
func TestShellUnreadSaid(t *testing.T) {
	open := func(tool string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"_meta":{"claudeCode":{"toolName":"` + tool + `"}},"toolCallId":"t1","sessionUpdate":"tool_call","rawInput":{"command":"ls"},"status":"pending","title":"ls","kind":"execute"}}}`
	}
	assert.Equal(t, []string{"shell_unread kind"}, saidOf(t, claudeInit, open("Shell")))
	assert.Empty(t, saidOf(t, claudeInit, open("Bash")))
}
