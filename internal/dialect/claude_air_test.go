package dialect

import (
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// airCaps are the clientCapabilities of the harness's AIR variants
// (test/agents/record.mjs), in the shape claude-agent-acp's isAirClient
// reads: an object at _meta.jetbrains.air.
const airCaps = `{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"_meta":{"terminal_output":true,"jetbrains":{"air":{"version":1,"capabilities":[]}}}}`

func mustClient(t *testing.T, caps string) Client {
	t.Helper()
	c, err := ParseClient([]byte(caps))
	require.NoError(t, err)
	return c
}

// Which clients claude-agent-acp treats as AIR: an object at
// _meta.jetbrains.air, whatever it holds; nothing else.
func TestClaudeAirClient(t *testing.T) {
	for caps, want := range map[string]bool{
		airCaps:                                true,
		`{"_meta":{"jetbrains":{"air":{}}}}`:   true,
		`{"_meta":{"jetbrains":{"air":true}}}`: false,
		`{"_meta":{"jetbrains":{"air":[1]}}}`:  false,
		`{"_meta":{"jetbrains":{}}}`:           false,
		`{"_meta":{"air":{}}}`:                 false,
		`{"jetbrains":{"air":{}}}`:             false,
		`{"fs":{"readTextFile":true},"_meta":{"terminal_output":true}}`: false,
		``: false,
	} {
		assert.Equal(t, want, claudeAirClient(mustClient(t, caps)), caps)
	}
}

// TestClaudeAirClientWire reads frames as claude-agent-acp 0.101.0 sent
// them to a client declaring JetBrains AIR
// (test/testdata/recordings/agents/claude-agent-acp-0.101.0_air_terminal-meta_full.ndjson,
// _air_plain_full, _air_terminal-meta_quiet): terminal_exit.exit_code is
// the adapter's (1 for any error, 0 for any other result), so it is no
// exit code, only set aside (ExitSetAside, for the outcome reason); the
// "Exit code N" header of the output is. The same frames
// to a client that is not AIR keep the newest rules.
func TestClaudeAirClientWire(t *testing.T) {
	d := claudeDialect(t)
	C, S, F := accum.Combined, accum.Snapshot, accum.Final
	yes, done, failed := accum.ShellYes, accum.StatusCompleted, accum.StatusFailed
	exit := func(id, code, status string) string {
		return `{"_meta":{"terminal_exit":{"terminal_id":"` + id + `","exit_code":` + code + `,"signal":null}},"toolCallId":"` + id + `","sessionUpdate":"tool_call_update","status":"` + status + `"}`
	}
	air := BindPeers(d, ParseVersion("0.101.0"), mustClient(t, airCaps))
	assert.Equal(t, "claude", air.Info().Name)
	assert.Equal(t, mustClient(t, airCaps), ClientOf(air))
	runObsCases(t, air, []obsCase{
		{name: "exit3: terminal_exit 1 is made up",
			update: exit("toolu_exit3_8", "1", "failed"),
			want:   one(accum.Observation{ToolCallID: "toolu_exit3_8", Shell: yes, Status: failed, ExitSetAside: true})},
		{name: "exit3: the header of terminal_output is the exit code, and not output",
			update: `{"_meta":{"terminal_output":{"terminal_id":"toolu_exit3_8","data":"Exit code 3\na\nb"}},"toolCallId":"toolu_exit3_8","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_exit3_8", TerminalID: "toolu_exit3_8", Shell: yes, Exit: ex(3, accum.ExitText, false), Texts: []accum.Text{txt(C, S, "a\nb")}})},
		{name: "nomatch: grep's exit 1, read by Claude Code as success, is sent as 0",
			update: exit("toolu_nomatch_7", "0", "completed"),
			want:   one(accum.Observation{ToolCallID: "toolu_nomatch_7", Shell: yes, Status: done, ExitSetAside: true})},
		{name: "timeout: a command moved to the background is sent as 0",
			update: exit("toolu_timeout_38", "0", "completed"),
			want:   one(accum.Observation{ToolCallID: "toolu_timeout_38", Shell: yes, Status: done, ExitSetAside: true})},
		{name: "reject: 1 for a call that never ran",
			update: `{"_meta":{"claudeCode":{"nonExecutionKind":"permission-rule"},"terminal_exit":{"terminal_id":"toolu_reject_49","exit_code":1,"signal":null}},"toolCallId":"toolu_reject_49","sessionUpdate":"tool_call_update","status":"failed"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_reject_49", Shell: yes, Status: failed, Cancelled: true, ExitSetAside: true})},
		{name: "the refinement: rawInput.command is the command, commandTitle the description",
			update: `{"_meta":{"jetbrains":{"air":{"version":1,"commandTitle":"Run step 0 (ok)"}}},"toolCallId":"toolu_ok_3","sessionUpdate":"tool_call_update","rawInput":{"command":"ls","description":"Run step 0 (ok)"},"title":"ls"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_ok_3", Shell: yes, Command: "ls", Description: "Run step 0 (ok)"})},
		{name: "a streaming input's report: no rawInput and no kind, the title is the command",
			update: `{"_meta":{"jetbrains":{"air":{"version":1,"commandTitle":"List the files"}}},"toolCallId":"toolu_ok_3","sessionUpdate":"tool_call_update","title":"ls -la"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_ok_3", Command: "ls -la", Description: "List the files"})},
		{name: "without a terminal: the description content while it runs is not output",
			update: `{"_meta":{"jetbrains":{"air":{"version":1,"commandTitle":"Run step 0 (ok)"}}},"toolCallId":"toolu_ok_3","sessionUpdate":"tool_call_update","rawInput":{"command":"ls","description":"Run step 0 (ok)"},"title":"ls","content":[{"type":"content","content":{"type":"text","text":"Run step 0 (ok)"}}]}`,
			want:   one(accum.Observation{ToolCallID: "toolu_ok_3", Shell: yes, Command: "ls", Description: "Run step 0 (ok)"})},
		{name: "without a terminal: the fenced final is the output, its header the exit",
			update: `{"toolCallId":"toolu_exit3_8","sessionUpdate":"tool_call_update","status":"failed","content":[{"type":"content","content":{"type":"text","text":"` + "```\\nExit code 3\\na\\nb\\n```" + `"}}]}`,
			want:   one(accum.Observation{ToolCallID: "toolu_exit3_8", Status: failed, Exit: ex(3, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "a\nb\n")}})},
	})

	// The same build to a client that is not AIR: terminal_exit is the
	// command's exit code.
	plain := BindPeers(d, ParseVersion("0.101.0"), mustClient(t, `{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"_meta":{"terminal_output":true}}`))
	runObsCases(t, plain, []obsCase{
		{name: "not AIR: terminal_exit is the exit code",
			update: exit("toolu_exit3_6", "3", "failed"),
			want:   one(accum.Observation{ToolCallID: "toolu_exit3_6", Shell: yes, Status: failed, Exit: ex(3, accum.ExitTerminal, false)})},
	})
	// Rebinding to the agent's version alone (Bind) drops the client.
	assert.Equal(t, Client{}, ClientOf(Bind(air, ParseVersion("0.101.0"))))
}

// Texts claude-agent-acp sends where output goes that are about the call:
// Claude Code's empty-result text (recorded: the quiet scenario, plain and
// AIR plain variants) and the adapter's notices for a call closed without
// a result (0.101.0's source, tool-calls/renderer.js unfinished()).
func TestClaudeNoOutputNotices(t *testing.T) {
	d := claudeDialect(t)
	yes, done, failed := accum.ShellYes, accum.StatusCompleted, accum.StatusFailed
	const cancelled = "The turn was cancelled before this tool call returned a result."
	runObsCases(t, d, []obsCase{
		{name: "(Bash completed with no output) as rawOutput is no output",
			update: `{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"toolu_silent_2","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"(Bash completed with no output)"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_silent_2", Shell: yes, Status: done})},
		{name: "AIR plain: the same without _meta",
			update: `{"toolCallId":"toolu_silent_3","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"(Bash completed with no output)"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_silent_3", Status: done})},
		{name: "output that only contains such a line stays output",
			update: `{"toolCallId":"t","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"x\n(Bash completed with no output)"}`,
			want:   one(accum.Observation{ToolCallID: "t", Status: done, Texts: []accum.Text{txt(accum.Combined, accum.Final, "x\n(Bash completed with no output)")}})},
		{name: "dropped before it ran: no output",
			update: `{"toolCallId":"t","sessionUpdate":"tool_call_update","status":"failed","content":[{"type":"content","content":{"type":"text","text":"Claude stopped this tool call before it ran."}}]}`,
			want:   one(accum.Observation{ToolCallID: "t", Status: failed})},
		{name: "ended without a result: no output",
			update: `{"toolCallId":"t","sessionUpdate":"tool_call_update","status":"failed","content":[{"type":"content","content":{"type":"text","text":"Claude ended the turn without returning a result for this tool."}}]}`,
			want:   one(accum.Observation{ToolCallID: "t", Status: failed})},
		{name: "stopped by a session/cancel: cancelled, no output",
			update: `{"toolCallId":"t","sessionUpdate":"tool_call_update","status":"failed","content":[{"type":"content","content":{"type":"text","text":"` + cancelled + `"}}]}`,
			want:   one(accum.Observation{ToolCallID: "t", Status: failed, Cancelled: true, CancelNotice: notice(cancelled)})},
	})
}

// ParseClient keeps a client's capabilities as compact JSON, bounded.
func TestParseClient(t *testing.T) {
	c, err := ParseClient([]byte(" {\n \"terminal\": true ,\"_meta\":{ \"a\":[1, 2]}}\n"))
	require.NoError(t, err)
	assert.Equal(t, `{"terminal":true,"_meta":{"a":[1,2]}}`, c.Raw())
	again, err := ParseClient([]byte(c.Raw()))
	require.NoError(t, err)
	assert.Equal(t, c, again)

	for _, raw := range []string{"", "null", " null "} {
		c, err := ParseClient([]byte(raw))
		require.NoError(t, err, raw)
		assert.Equal(t, Client{}, c, raw)
	}
	for raw, msg := range map[string]string{
		`[1]`:   "not a JSON object",
		`"x"`:   "not a JSON object",
		`{"a":`: "clientCapabilities",
		`{"a":"` + strings.Repeat("x", MaxClientBytes) + `"}`: "over the 8192-byte limit",
	} {
		c, err := ParseClient([]byte(raw))
		require.Error(t, err)
		assert.Contains(t, err.Error(), msg)
		assert.Equal(t, Client{}, c)
	}
}

// An initialize request gives the client's capabilities, as sent (a long
// string in them is kept whole), and only a request does.
func TestReadInitializeClient(t *testing.T) {
	d := claudeDialect(t)
	long := strings.Repeat("x", 600)
	msg := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"_meta":{"jetbrains":{"air":{"version":1,"note":"` + long + `"}}}},"clientInfo":{"name":"x"}}}`
	f, err := Read(d, []byte(msg))
	require.NoError(t, err)
	require.NotNil(t, f.Client)
	require.NoError(t, f.ClientErr)
	assert.Contains(t, f.Client.Raw(), long)
	assert.True(t, claudeAirClient(*f.Client))

	f, err = Read(d, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`))
	require.NoError(t, err)
	require.NotNil(t, f.Client, "an initialize without capabilities declares nothing")
	assert.Equal(t, Client{}, *f.Client)

	f, err = Read(d, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientCapabilities":7}}`))
	require.NoError(t, err, "bad capabilities do not fail the frame")
	require.NotNil(t, f.Client)
	assert.Equal(t, Client{}, *f.Client)
	assert.ErrorContains(t, f.ClientErr, "not a JSON object")

	f, err = Read(d, []byte(`{"jsonrpc":"2.0","method":"initialize","params":{"clientCapabilities":{}}}`))
	require.NoError(t, err)
	assert.Nil(t, f.Client, "a notification is not the client's initialize request")
}

// ParseClient never panics; what it keeps is compact, bounded, and parses
// to itself; an AIR declaration is only ever read from what it kept.
func FuzzParseClient(f *testing.F) {
	for _, s := range []string{airCaps, `{}`, `null`, `[1]`, `{"_meta":{"jetbrains":{"air":true}}}`, `{"_meta":{"jetbrains":{"air":{}}}`, " {\"a\" : \"\\u2028\"} "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := ParseClient(raw)
		if err != nil {
			require.Equal(t, Client{}, c)
			return
		}
		require.LessOrEqual(t, len(c.Raw()), MaxClientBytes)
		require.NotContains(t, c.Raw(), "\n", "a reader id holds it after a newline")
		again, err := ParseClient([]byte(c.Raw()))
		require.NoError(t, err)
		require.Equal(t, c, again)
		_ = claudeAirClient(c)
	})
}
