package dialect

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestV2ResumeReplays: ACP v2 restores a session with session/resume, and
// replays its history only when replayFrom asks for it (as v1's
// session/load always does); without replayFrom nothing is replayed.
func TestV2ResumeReplays(t *testing.T) {
	for _, c := range []struct {
		msg  string
		load bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s","cwd":"/w","mcpServers":[],"replayFrom":{"type":"start"}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s","cwd":"/w"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s","cwd":"/w","replayFrom":null}}`, false},
	} {
		f, err := Read(Generic(), []byte(c.msg))
		require.NoError(t, err, c.msg)
		assert.Equal(t, c.load, f.Load, c.msg)
		assert.Equal(t, "/w", f.SessionCwd, c.msg)
		if c.load {
			assert.Equal(t, "1", f.LoadID)
		}
	}
}

// TestV2PermissionSubject: an ACP v2 permission ask names the tool call
// under `subject` ({"type":"tool_call","toolCall":{...}}), not `toolCall`
// (recorded: claude-agent-acp-0.101.0_v2_terminal-meta_full): it is read
// as v1's, so its answer can reject the call.
func TestV2PermissionSubject(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","title":"rm -f notes.txt","subject":{"type":"tool_call","toolCall":{"toolCallId":"toolu_reject_50","name":"Bash","rawInput":{"command":"rm -f notes.txt"},"title":"rm -f notes.txt","kind":"execute","content":[{"type":"terminal","terminalId":"toolu_reject_50"}]}},"options":[{"optionId":"allow-once","name":"Yes","kind":"allow_once"},{"optionId":"reject","name":"No","kind":"reject_once"}]}}`
	f, err := Read(Generic(), []byte(msg))
	require.NoError(t, err)
	require.NotNil(t, f.Ask)
	assert.Equal(t, []string{"reject"}, f.Ask.RejectOptions)
	require.Len(t, f.Observations, 1)
	o := f.Observations[0]
	assert.Equal(t, "toolu_reject_50", o.ToolCallID)
	assert.Equal(t, "rm -f notes.txt", o.Command)
	assert.True(t, o.PermissionAsk)
}

// TestV2StatusCancelled: ACP v2 adds the tool call status `cancelled`
// (recorded: claude-agent-acp-0.101.0_v2_terminal-meta_full, the call a
// session/cancel stopped): the call ended, cancelled.
func TestV2StatusCancelled(t *testing.T) {
	f, err := Read(Generic(), []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"cancelled"}}}`))
	require.NoError(t, err)
	require.Len(t, f.Observations, 1)
	o := f.Observations[0]
	assert.True(t, o.Status.Ended(), "status %v", o.Status)
	assert.True(t, o.Cancelled)
	assert.Empty(t, o.Unrecognized)
}

// TestV2ClientCapabilities: an ACP v2 initialize request names the client's
// capabilities `capabilities` (v1: clientCapabilities); claude-agent-acp
// passes their `_meta` on to its v1 core, so a v2 client that declares
// JetBrains AIR there gets the AIR wire too (its made-up exit codes).
func TestV2ClientCapabilities(t *testing.T) {
	f, err := Read(Generic(), []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{"_meta":{"terminal_output":true,"jetbrains":{"air":{"version":1}}}}}}`))
	require.NoError(t, err)
	require.NotNil(t, f.Client)
	assert.True(t, claudeAirClient(*f.Client))
	// v1's member wins where both are sent.
	f, err = Read(Generic(), []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"capabilities":{"_meta":{"jetbrains":{"air":{}}}}}}`))
	require.NoError(t, err)
	assert.False(t, claudeAirClient(*f.Client))
}
