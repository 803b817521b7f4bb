package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func explainOut(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	require.NoError(t, replayCmd(append([]string{"--explain"}, args...), &out, &errOut), errOut.String())
	return out.String()
}

// On a real recording, explain names, for every call, the frame and the
// field its command, cwd, exit and output came from.
func TestExplainRecording(t *testing.T) {
	out := explainOut(t, "../../test/testdata/recordings/opencode-1.18.33_plain.ndjson")
	for _, want := range []string{
		`call "call_exit3_4" (dialect opencode, agent build "1.18.33")`,
		`  command  "printf 'a\\nb\\n'; exit 3"`,
		`             from frame 17 rawInput.command`,
		`  exit     3`,
		`             from frame 20 rawOutput.metadata.exit`,
		`             from frame 20 rawOutput.output`,
		`  outcome  ENDED FAILED: exit code 3`,
	} {
		assert.Contains(t, out, want)
	}
	// A dialect that labels no field is still named, with the frame.
	out = explainOut(t, "../../test/testdata/recordings/claude-agent-acp-0.101.0_terminal-meta.ndjson")
	assert.Contains(t, out, `(dialect claude, agent build "0.101.0")`)
	assert.Regexp(t, `from frame \d+ _meta.terminal_exit.exit_code`, out)
	assert.Regexp(t, `from frames? [\d-]+( \(\d+ frames\))? \(read by the claude dialect; it names no field\)`, out)

	// A client terminal's exit is named as such, with the frame that
	// answered it.
	out = explainOut(t, "../../test/testdata/recordings/agents/claude-code-acp-0.16.2_client-terminal_scenario-dev.ndjson")
	assert.Contains(t, out, "  exit     4\n             from frame 38 client terminal exit status (terminal/wait_for_exit or terminal/output result), applied when frame 42 ended the call\n")
	assert.Contains(t, out, "from frame 38 terminal/output result output (a client terminal)")
}

// A session whose client declared JetBrains AIR is explained as the
// session read it: claude-agent-acp's terminal_exit 1 is made up for such
// a client, and exit 3 comes from the output's header, held until the
// call ended.
func TestExplainClientBound(t *testing.T) {
	out := explainOut(t, "../../test/testdata/recordings/agents/claude-agent-acp-0.101.0_air_terminal-meta_full.ndjson")
	assert.Contains(t, out, "  exit     3\n             from frame 29 Exit code header of the output text, applied when frame 30 ended the call\n")
	assert.Contains(t, out, "  outcome  ENDED FAILED: exit code 3\n")
	assert.NotContains(t, out, "_meta.terminal_exit.exit_code")
}

// A future build of a known agent that moves the exit code to a field the
// dialect never read: explain says the exit is unknown and where the
// move went.
func TestExplainFutureBuild(t *testing.T) {
	rec := strings.Join([]string{
		`{"dir":"agent->client","msg":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"opencode","version":"99.0.0"}}}}`,
		`{"dir":"client->agent","msg":{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}}`,
		`{"dir":"agent->client","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"make","status":"pending","rawInput":{"command":"make"}}}}}`,
		`{"dir":"agent->client","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"output":"boom\n","metadata":{"exit_status":3}}}}}}`,
	}, "\n") + "\n"
	file := filepath.Join(t.TempDir(), "future.ndjson")
	require.NoError(t, os.WriteFile(file, []byte(rec), 0o600))
	out := explainOut(t, file)
	assert.Contains(t, out, `call "c1" (dialect opencode, agent build "99.0.0")`)
	assert.Contains(t, out, `  exit     unknown: no frame carried an exit code where the opencode dialect reads one for this build (see below what it did not understand)`)
	assert.Contains(t, out, "  unknown  not understood by the opencode dialect:\n             frame 4 rawOutput.metadata.exit_status (exit_field)\n")
	assert.Contains(t, out, `from the session's cwd (frame 2 session/new cwd)`)
}

// Each call is headed by the build it was read as, not the last one the
// recording named: a client that reconnected to another build of the
// agent has calls of both.
func TestExplainBuildPerCall(t *testing.T) {
	call := func(id string) []string {
		return []string{
			`{"dir":"agent->client","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"` + id + `","kind":"execute","title":"make","status":"pending","rawInput":{"command":"make"}}}}}`,
			`{"dir":"agent->client","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"completed","rawOutput":{"output":"ok\n","metadata":{"exit":0}}}}}}`,
		}
	}
	initialize := func(v string) string {
		return `{"dir":"agent->client","msg":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"opencode","version":"` + v + `"}}}}`
	}
	lines := append([]string{initialize("1.17.18")}, call("c1")...)
	lines = append(append(lines, initialize("1.18.33")), call("c2")...)
	file := filepath.Join(t.TempDir(), "builds.ndjson")
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	out := explainOut(t, file)
	assert.Contains(t, out, `call "c1" (dialect opencode, agent build "1.17.18")`)
	assert.Contains(t, out, `call "c2" (dialect opencode, agent build "1.18.33")`)
}

// A session whose agent named nothing (and showed no sign), or named an
// agent no dialect knows, is read by the generic dialect: explain says
// so before the calls, as the agent_name report does.
func TestExplainAgentName(t *testing.T) {
	for _, c := range []struct{ name, init, want string }{
		{"absent", `{"protocolVersion":1,"agentInfo":{"version":"2.0.0"}}`,
			"dialect generic: the agent named no agent (agentInfo.name absent) and showed no sign of its dialect: a known agent may be misread (agent_name)\n"},
		{"unknown", `{"protocolVersion":1,"agentInfo":{"name":"acme-agent","version":"2.0.0"}}`,
			"dialect generic: no dialect knows the agent's name (agentInfo.name) (agent_name)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := strings.Join([]string{
				`{"dir":"agent->client","msg":{"jsonrpc":"2.0","id":0,"result":` + c.init + `}}`,
				`{"dir":"agent->client","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"make","status":"pending","rawInput":{"command":"make"}}}}}`,
			}, "\n") + "\n"
			file := filepath.Join(t.TempDir(), "unnamed.ndjson")
			require.NoError(t, os.WriteFile(file, []byte(rec), 0o600))
			out := explainOut(t, file)
			assert.Contains(t, out, c.want)
			assert.Less(t, strings.Index(out, c.want), strings.Index(out, `call "c1"`), "said before the calls")
		})
	}
	out := explainOut(t, "../../test/testdata/recordings/opencode-1.18.33_plain.ndjson")
	assert.NotContains(t, out, "agent_name")
}

// A reworded exit line left in output, and a shell tool its dialect no
// longer takes for one, are named with the frame.
func TestExplainExitLineAndShellUnread(t *testing.T) {
	rec := strings.Join([]string{
		`{"dir":"agent->client","msg":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","title":"Claude Agent","version":"0.101.0"}}}}`,
		`{"dir":"agent->client","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"_meta":{"claudeCode":{"toolName":"Bash"},"terminal_info":{"terminal_id":"t1"}},"toolCallId":"t1","sessionUpdate":"tool_call","rawInput":{"command":"false"},"status":"pending","title":"false","kind":"execute","content":[{"type":"terminal","terminalId":"t1"}]}}}}`,
		`{"dir":"agent->client","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"_meta":{"terminal_output":{"terminal_id":"t1","data":"exit status 1\nno"}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}}}}`,
		`{"dir":"agent->client","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"t1","exit_code":1,"signal":null}},"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"failed"}}}}`,
		`{"dir":"agent->client","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"_meta":{"claudeCode":{"toolName":"Shell"}},"toolCallId":"t2","sessionUpdate":"tool_call","rawInput":{"command":"ls"},"status":"pending","title":"ls","kind":"execute"}}}}`,
	}, "\n") + "\n"
	file := filepath.Join(t.TempDir(), "reworded.ndjson")
	require.NoError(t, os.WriteFile(file, []byte(rec), 0o600))
	out := explainOut(t, file)
	assert.Contains(t, out, "  unknown  not understood by the claude dialect:\n             frame 4 output: an exit line at its start or end, left in it (result_text)\n")
	assert.Contains(t, out, `frame 5: tool call "t2" has a shell's kind, but the claude dialect does not read it as a shell (shell_unread)`)
}

func TestExplainFlags(t *testing.T) {
	for _, args := range [][]string{{"--explain", "--json"}, {"--explain", "--addr", "127.0.0.1:1"}} {
		_, err := parseReplay(args)
		assert.Error(t, err, "%q", args)
	}
}
