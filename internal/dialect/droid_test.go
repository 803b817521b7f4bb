package dialect

import (
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/require"
)

func TestDroidUpdate(t *testing.T) {
	d, ok := Lookup("droid")
	require.True(t, ok)
	require.Equal(t, "droid", Detect("@factory/cli").Info().Name)
	runObsCases(t, d, []obsCase{
		{
			name:   "tool_call: the command from rawInput, the summary as description, the title's risk suffix never the command",
			update: "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"title\":\"`ls -la` (low)\",\"kind\":\"execute\",\"status\":\"pending\",\"rawInput\":{\"summary\":\"List files\",\"command\":\"ls -la\",\"riskLevelReason\":\"Read only.\",\"riskLevel\":\"low\"}}",
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "ls -la", Description: "List files"}),
		},
		{
			name:   "a title alone gives the command without its backticks and suffix",
			update: "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"title\":\"`rm -rf build` (high)\",\"kind\":\"execute\",\"status\":\"pending\"}",
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "rm -rf build", CommandFromTitle: true}),
		},
		{
			name:   "terminal content with a uuid no client created",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","content":[{"type":"terminal","terminalId":"0c6b5d3e-1d4f"}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusRunning, TerminalID: "0c6b5d3e-1d4f"}),
		},
		{
			name:   "a bare failed: no exit code",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed"}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed}),
		},
		{
			name:   "the second tool_call of a cancel says nothing",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Tool call","kind":"other","status":"pending","rawInput":{}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Status: accum.StatusPending}),
		},
		{
			name:   "the cancel notice is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"text":"Error: Tool execution cancelled by user"},"content":[{"type":"content","content":{"type":"text","text":"Error: Tool execution cancelled by user"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Cancelled: true, CancelNotice: "Error: Tool execution cancelled by user"}),
		},
		{
			name:   "a replayed failure: exit from the markers, the rest is output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"Error: Command failed (exit code: 3)\na\nb\n\n[Process exited with code 3]"}}]}`,
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Exit: ex(3, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "a\nb")}}),
		},
		{
			name:   "output that only mentions the markers mid-text is output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"see [Process exited with code 3] above\n"}}]}`,
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted,
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "see [Process exited with code 3] above\n")}}),
		},
	})
}

func TestDroidAsk(t *testing.T) {
	d, _ := Lookup("droid")
	runObsCases(t, d, []obsCase{{
		name: "the risk level and its reason are why it asks",
		ask:  "{\"toolCallId\":\"c1\",\"title\":\"`rm x` (low)\",\"rawInput\":{\"summary\":\"Remove\",\"command\":\"rm x\",\"riskLevelReason\":\"Deletes one file.\",\"riskLevel\":\"low\"},\"kind\":\"execute\"}",
		want: one(accum.Observation{ToolCallID: "c1", PermissionAsk: true, Shell: accum.ShellYes, Command: "rm x", Description: "Remove", ApprovalReason: "risk level low: Deletes one file."}),
	}})
}
