package normalize_test

import (
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// codexTS is an update of the TypeScript Codex adapter's session.
func codexTS(update string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":` + update + `}}`
}

// An MCP tool call of the TypeScript Codex adapter
// (@agentclientprotocol/codex-acp, every build) has kind execute, and the
// ask for its approval is a bare toolCall {toolCallId, kind: "execute",
// status: "pending"} marked only in the request's own `_meta`. The adapter
// sends the tool_call first (Codex's item/started precedes its
// elicitation), then the ask; in either order, and after the ask's
// answer, the call is no shell call: no ShellExec, where before its title
// was the command and its result the output. A command asked for the
// same way still is one.
func TestCodexTSMCPToolCallIsNoShell(t *testing.T) {
	open := codexTS(`{"sessionUpdate":"tool_call","toolCallId":"call_m1","kind":"execute","title":"mcp.docs.search","status":"in_progress","rawInput":{"server":"docs","tool":"search","arguments":{"q":"acp"}},"_meta":{"is_mcp_tool_call":true}}`)
	ask := `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"call_m1","kind":"execute","status":"pending"},"_meta":{"is_mcp_tool_approval":true},"options":[{"optionId":"allow_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Cancel","kind":"reject_once"}]}}`
	answer := `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`
	running := codexTS(`{"sessionUpdate":"tool_call_update","toolCallId":"call_m1","status":"in_progress"}`)
	end := codexTS(`{"sessionUpdate":"tool_call_update","toolCallId":"call_m1","status":"completed","rawInput":{"server":"docs","tool":"search","arguments":{"q":"acp"}},"rawOutput":{"result":{"content":[{"type":"text","text":"3 hits"}],"structuredContent":null},"error":null}}`)

	cmdAsk := `{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"call_c1","kind":"execute","status":"pending","rawInput":{"command":"echo hi","cwd":"/w"}},"options":[{"optionId":"allow_once","name":"Allow Once","kind":"allow_once"}],"_meta":{"codex":{"params":{"itemId":"call_c1","command":"/bin/bash -lc 'echo hi'","cwd":"/w"}}}}}`
	cmdAnswer := `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`
	cmdOpen := codexTS(`{"sessionUpdate":"tool_call","toolCallId":"call_c1","kind":"execute","title":"echo hi","status":"in_progress","rawInput":{"command":"/bin/bash -lc 'echo hi'","cwd":"/w"}}`)
	cmdEnd := codexTS(`{"sessionUpdate":"tool_call_update","toolCallId":"call_c1","status":"completed","rawOutput":{"formatted_output":"hi\n","exit_code":0}}`)

	for _, version := range []string{"1.1.4", "1.13.1", "2.6.0"} {
		initResult := `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"@agentclientprotocol/codex-acp","title":"Codex","version":"` + version + `"},"authMethods":[]}}`
		for _, tc := range []struct {
			name   string
			frames []string
		}{
			{"tool_call, then the ask", []string{open, ask, answer, running, end}},
			{"the ask, then the tool_call", []string{ask, answer, open, running, end}},
		} {
			t.Run(version+" "+tc.name, func(t *testing.T) {
				n := normalize.New()
				var execs []*normalize.ShellExec
				for _, f := range append(append([]string{plainInit, initResult}, tc.frames...), cmdAsk, cmdAnswer, cmdOpen, cmdEnd) {
					dir := normalize.FromAgent
					if f == plainInit || f == answer || f == cmdAnswer {
						dir = normalize.FromClient
					}
					_, err := n.Feed("s", []byte(f), normalize.WithDirection(dir), normalize.WithEmit(func(ev normalize.Event) error {
						if ev.ShellExec != nil {
							execs = append(execs, ev.ShellExec)
						}
						return nil
					}))
					require.NoError(t, err)
				}
				require.NotEmpty(t, execs, "the command is a shell call")
				for _, x := range execs {
					assert.Equal(t, "call_c1", x.ToolCallID, "only the command is a ShellExec")
				}
				last := execs[len(execs)-1]
				assert.Equal(t, "echo hi", last.Command)
			})
		}
	}
}
