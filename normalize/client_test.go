package normalize_test

import (
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Frames of claude-agent-acp 0.101.0 talking to a client that declares
// JetBrains AIR (test/testdata/recordings/agents/
// claude-agent-acp-0.101.0_air_terminal-meta_full.ndjson, step exit3).
const (
	airInit    = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"_meta":{"terminal_output":true,"jetbrains":{"air":{"version":1,"capabilities":[]}}}},"clientInfo":{"name":"acpnorm-harness","title":"acpnorm agent harness","version":"0.1.0"}}}`
	plainInit  = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"_meta":{"terminal_output":true}},"clientInfo":{"name":"acpnorm-harness","title":"acpnorm agent harness","version":"0.1.0"}}}`
	claudeInit = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","title":"Claude Agent","version":"0.101.0"},"authMethods":[]}}`
)

var airExit3 = []string{
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"_meta":{"claudeCode":{"toolName":"Bash"},"terminal_info":{"terminal_id":"toolu_exit3_8"}},"toolCallId":"toolu_exit3_8","sessionUpdate":"tool_call","name":"Bash","status":"pending","title":"Terminal","kind":"execute","content":[{"type":"terminal","terminalId":"toolu_exit3_8"}]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"_meta":{"jetbrains":{"air":{"version":1,"commandTitle":"Run step 1 (exit3)"}}},"toolCallId":"toolu_exit3_8","sessionUpdate":"tool_call_update","rawInput":{"command":"printf 'a\\nb\\n'; exit 3","description":"Run step 1 (exit3)"},"title":"printf 'a\\nb\\n'; exit 3"}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"_meta":{"terminal_output":{"terminal_id":"toolu_exit3_8","data":"Exit code 3\na\nb"}},"toolCallId":"toolu_exit3_8","sessionUpdate":"tool_call_update"}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"_meta":{"terminal_exit":{"terminal_id":"toolu_exit3_8","exit_code":1,"signal":null}},"toolCallId":"toolu_exit3_8","sessionUpdate":"tool_call_update","status":"failed"}}}`,
}

// feedClient feeds frames to one session, the client's own with
// FromClient, and returns the last revision.
func feedClient(t *testing.T, n *normalize.Normalizer, frames ...string) *normalize.ShellExec {
	t.Helper()
	var last *normalize.ShellExec
	for _, f := range frames {
		dir := normalize.FromAgent
		if strings.Contains(f, `"method":"initialize"`) {
			dir = normalize.FromClient // the client's initialize request
		}
		out, err := n.Feed("s", []byte(f), normalize.WithDirection(dir))
		require.NoError(t, err)
		if len(out) > 0 {
			last = out[len(out)-1]
		}
	}
	return last
}

// What the client declared in its initialize request reaches the dialect:
// claude-agent-acp sends an AIR client a made-up terminal_exit (1 for any
// error), and the exit code is the output's "Exit code 3" header. The same
// frames to a client that is not AIR read terminal_exit.
func TestClientCapabilitiesBindDialect(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frames []string
		want   int32
	}{
		{"AIR client", append([]string{airInit, claudeInit}, airExit3...), 3},
		{"AIR client, the agent's result first", append([]string{claudeInit, airInit}, airExit3...), 3},
		{"another client", append([]string{plainInit, claudeInit}, airExit3...), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := feedClient(t, normalize.New(), tc.frames...)
			require.NotNil(t, last)
			assert.Equal(t, normalize.StateEnded, last.State)
			assert.Equal(t, "printf 'a\\nb\\n'; exit 3", last.Command)
			require.NotNil(t, last.ExitCode)
			assert.Equal(t, tc.want, *last.ExitCode)
		})
	}
}

// The client's declaration is kept with the session in the store: a
// replica that loads the session reads for the same client.
func TestClientCapabilitiesPersisted(t *testing.T) {
	st := store.NewMemory()
	feedClient(t, normalize.New(normalize.WithStore(st)), airInit, claudeInit, airExit3[0])
	last := feedClient(t, normalize.New(normalize.WithStore(st)), airExit3[1:]...)
	require.NotNil(t, last)
	require.NotNil(t, last.ExitCode)
	assert.Equal(t, int32(3), *last.ExitCode)
}

// Frames read ahead (Prepare) for the reader a session reports are read
// for its client too.
func TestClientCapabilitiesPrepared(t *testing.T) {
	n := normalize.New()
	var reader string
	var last *normalize.ShellExec
	for _, f := range append([]string{airInit, claudeInit}, airExit3...) {
		dir := normalize.FromAgent
		if f == airInit {
			dir = normalize.FromClient
		}
		p := normalize.Prepare([]byte(f), "", reader)
		out, err := n.Feed("s", []byte(f), normalize.WithDirection(dir), normalize.WithPrepared(p), normalize.WithNextReader(func(r string) { reader = r }))
		require.NoError(t, err)
		if len(out) > 0 {
			last = out[len(out)-1]
		}
	}
	require.NotNil(t, last)
	require.NotNil(t, last.ExitCode)
	assert.Equal(t, int32(3), *last.ExitCode)
}

// Capabilities that are not an object, or too large, are a FrameError
// that names the problem; the session goes on as for a client that
// declared nothing.
func TestClientCapabilitiesBad(t *testing.T) {
	n := normalize.New()
	_, err := n.Feed("s", []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientCapabilities":[1]}}`), normalize.WithDirection(normalize.FromClient))
	require.Error(t, err)
	assert.ErrorContains(t, err, "clientCapabilities is not a JSON object")
	last := feedClient(t, n, append([]string{claudeInit}, airExit3...)...)
	require.NotNil(t, last)
	require.NotNil(t, last.ExitCode)
	assert.Equal(t, int32(1), *last.ExitCode, "read as a client that is not AIR")

	big := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientCapabilities":{"_meta":{"jetbrains":{"air":{}}},"pad":"` + pad(9000) + `"}}}`
	_, err = normalize.New().Feed("s", []byte(big), normalize.WithDirection(normalize.FromClient))
	assert.ErrorContains(t, err, "over the 8192-byte limit")
}

func pad(n int) string { return strings.Repeat("x", n) }

// sessionUpdate is a session/update notification of session s1 carrying
// the update u.
func sessionUpdate(u string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":` + u + `}}`
}

// airCall is the frames of one Bash call of claude-agent-acp 0.101.0 to an
// AIR client whose terminal_output is data, ended by end (the harness's
// recordings: tricky-cancel's k_claude_refused for a command that printed
// the words, full's reject for the refusal itself).
func airCall(id, command, data, end string) []string {
	up := sessionUpdate
	q := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) }
	return []string{
		up(`{"_meta":{"claudeCode":{"toolName":"Bash"},"terminal_info":{"terminal_id":"` + id + `"}},"toolCallId":"` + id + `","sessionUpdate":"tool_call","name":"Bash","status":"pending","title":"Terminal","kind":"execute","content":[{"type":"terminal","terminalId":"` + id + `"}]}`),
		up(`{"_meta":{"jetbrains":{"air":{"version":1,"commandTitle":"Run it"}}},"toolCallId":"` + id + `","sessionUpdate":"tool_call_update","rawInput":{"command":"` + q(command) + `","description":"Run it"},"title":"` + q(command) + `"}`),
		up(`{"_meta":{"terminal_output":{"terminal_id":"` + id + `","data":"` + q(data) + `"}},"toolCallId":"` + id + `","sessionUpdate":"tool_call_update"}`),
		up(strings.ReplaceAll(end, "ID", id)),
	}
}

// To an AIR client claude-agent-acp sends its refusal and cancel notices
// as the terminal's output, on a frame without a status, exactly as it
// sends a command's output (no toolResponse comes before it): only the
// end tells them apart. A refused or cancelled call ends `failed`; a
// command that printed the same words ends `completed`, and they are its
// output.
func TestClaudeAirNoticeOrOutput(t *testing.T) {
	completed := `{"_meta":{"terminal_exit":{"terminal_id":"ID","exit_code":0,"signal":null}},"toolCallId":"ID","sessionUpdate":"tool_call_update","status":"completed"}`
	refused := `{"_meta":{"claudeCode":{"nonExecutionKind":"permission-rule"},"terminal_exit":{"terminal_id":"ID","exit_code":1,"signal":null}},"toolCallId":"ID","sessionUpdate":"tool_call_update","status":"failed"}`
	replayedFail := `{"_meta":{"terminal_exit":{"terminal_id":"ID","exit_code":1,"signal":null}},"toolCallId":"ID","sessionUpdate":"tool_call_update","status":"failed"}`
	const refusal = "User refused permission to run tool"
	const cancel = "The user doesn't want to proceed with this tool use."
	for _, tc := range []struct {
		name, data, end string
		want            normalize.Outcome
		output          string
	}{
		{"printed the refusal", refusal, completed, normalize.Unknown, refusal},
		{"printed the cancel notice", cancel, completed, normalize.Unknown, cancel},
		{"refused", refusal, refused, normalize.Cancelled, ""},
		{"refused, no nonExecutionKind", refusal, replayedFail, normalize.Cancelled, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := "echo '" + tc.data + "'"
			last := feedClient(t, normalize.New(), append([]string{airInit, claudeInit}, airCall("toolu_1", cmd, tc.data, tc.end)...)...)
			require.NotNil(t, last)
			assert.Equal(t, normalize.StateEnded, last.State)
			assert.Equal(t, tc.want, last.Outcome, last.OutcomeReason)
			assert.Nil(t, last.ExitCode, "the adapter's exit code is made up")
			got := ""
			if last.Output != nil {
				got = last.Output.Text
			}
			assert.Equal(t, tc.output, got)
		})
	}
}

// The same on ACP v2 (claude-agent-acp 0.101.0, variant v2_terminal-meta:
// tricky-cancel's k_claude_refused, full's reject): the output is a
// terminal_update's base64 data, the exit a terminal_update's exitStatus,
// and only the call's final status tells the command's words from the
// adapter's refusal.
func TestClaudeV2NoticeOrOutput(t *testing.T) {
	const (
		v2Init     = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"acpnorm-harness","version":"0.1.0"},"capabilities":{"_meta":{"terminal_output":true}}}}`
		v2Claude   = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"@agentclientprotocol/claude-agent-acp","title":"Claude Agent","version":"0.101.0"},"capabilities":{},"authMethods":[]}}`
		refusal    = "User refused permission to run tool"
		refusalB64 = "VXNlciByZWZ1c2VkIHBlcm1pc3Npb24gdG8gcnVuIHRvb2w="
	)
	up := sessionUpdate
	call := func(exitStatus, final string) []string {
		return []string{
			up(`{"sessionUpdate":"terminal_update","terminalId":"toolu_1"}`),
			up(`{"toolCallId":"toolu_1","name":"Bash","rawInput":{},"status":"pending","title":"Terminal","kind":"execute","content":[{"type":"terminal","terminalId":"toolu_1"}],"sessionUpdate":"tool_call_update"}`),
			up(`{"toolCallId":"toolu_1","rawInput":{"command":"echo 'User refused permission to run tool'","description":"Run it"},"title":"echo 'User refused permission to run tool'","sessionUpdate":"tool_call_update"}`),
			up(`{"sessionUpdate":"terminal_update","terminalId":"toolu_1","output":{"data":"` + refusalB64 + `"}}`),
			up(`{"sessionUpdate":"terminal_update","terminalId":"toolu_1","exitStatus":` + exitStatus + `}`),
			up(final),
		}
	}
	for _, tc := range []struct {
		name   string
		frames []string
		want   normalize.Outcome
		output string
	}{
		{"printed the refusal", call(`{"exitCode":0}`, `{"toolCallId":"toolu_1","status":"completed","sessionUpdate":"tool_call_update"}`), normalize.Succeeded, refusal},
		{"refused", call(`{}`, `{"toolCallId":"toolu_1","status":"failed","_meta":{"claudeCode":{"nonExecutionKind":"permission-rule"}},"sessionUpdate":"tool_call_update"}`), normalize.Cancelled, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := feedClient(t, normalize.New(), append([]string{v2Init, v2Claude}, tc.frames...)...)
			require.NotNil(t, last)
			assert.Equal(t, normalize.StateEnded, last.State)
			assert.Equal(t, tc.want, last.Outcome, last.OutcomeReason)
			got := ""
			if last.Output != nil {
				got = last.Output.Text
			}
			assert.Equal(t, tc.output, got)
		})
	}
}
