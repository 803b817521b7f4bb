package dialect

import (
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
)

func TestCursorUpdate(t *testing.T) {
	d, ok := Lookup("cursor")
	if !ok {
		t.Fatal("cursor not registered")
	}
	runObsCases(t, d, []obsCase{
		{
			name:   "tool_call: rawInput command; id with a newline kept exactly",
			update: "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"tool_1\\nabc\",\"kind\":\"execute\",\"status\":\"pending\",\"title\":\"`npm test`\",\"rawInput\":{\"command\":\"npm test\"}}",
			want:   []accum.Observation{{ToolCallID: "tool_1\nabc", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "npm test"}},
		},
		{
			name:   "backticked title gives the command when rawInput has none",
			update: "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"kind\":\"execute\",\"status\":\"pending\",\"title\":\"`ls -la`\"}",
			want:   []accum.Observation{{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "ls -la", CommandFromTitle: true}},
		},
		{
			name:   "bare in_progress",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress"}`,
			want:   []accum.Observation{{ToolCallID: "c1", Status: accum.StatusRunning}},
		},
		{
			name:   "completed for a nonzero exit: structured exit, split streams",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"exitCode":2,"stdout":"","stderr":"ls: cannot access\n"}}`,
			want: []accum.Observation{{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(2, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Stdout, accum.Final, ""), txt(accum.Stderr, accum.Final, "ls: cannot access\n")}}},
		},
		{
			name:   "completed success, exit as float",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"exitCode":0.0,"stdout":"ok\n","stderr":""}}`,
			want: []accum.Observation{{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Stdout, accum.Final, "ok\n"), txt(accum.Stderr, accum.Final, "")}}},
		},
		{
			name:   "exitCode null is unknown, never 0",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"exitCode":null,"stdout":"x"}}`,
			want:   []accum.Observation{{ToolCallID: "c1", Status: accum.StatusCompleted, Texts: []accum.Text{txt(accum.Stdout, accum.Final, "x")}}},
		},
		{
			name:   "spawn failure / rejection: completed with nothing, nothing implies success",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed"}`,
			want:   []accum.Observation{{ToolCallID: "c1", Status: accum.StatusCompleted}},
		},
		{
			name:   "failed without exit: Failed",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed"}`,
			want:   []accum.Observation{{ToolCallID: "c1", Status: accum.StatusFailed, Failed: true}},
		},
		{
			name:   "lenient: stdout of another type is ignored",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"exitCode":"1","stdout":42,"stderr":"e"}}`,
			want: []accum.Observation{{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(1, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Stderr, accum.Final, "e")}}},
		},
		{
			name:   "edit tools untouched",
			update: "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"e1\",\"kind\":\"edit\",\"title\":\"`main.go`\"}",
			want:   []accum.Observation{{ToolCallID: "e1", Opens: true, Shell: accum.ShellNo}},
		},
	})
}

func TestCursorPermission(t *testing.T) {
	d, _ := Lookup("cursor")
	runObsCases(t, d, []obsCase{
		{
			name: "ask under another id naming the real target: reported as is",
			ask:  `{"toolCallId":"perm-7","kind":"fetch","status":"pending","title":"Fetch https://example.com","content":[{"type":"content","content":{"type":"text","text":"Not in allowlist: curl"}}]}`,
			want: []accum.Observation{{ToolCallID: "perm-7", Status: accum.StatusPending, PermissionAsk: true, ApprovalReason: "Not in allowlist: curl"}},
		},
		{
			name: "ask for a shell command",
			ask:  "{\"toolCallId\":\"c1\",\"kind\":\"execute\",\"title\":\"`rm -rf x`\",\"rawInput\":{\"command\":\"rm -rf x\"}}",
			want: []accum.Observation{{ToolCallID: "c1", Shell: accum.ShellYes, PermissionAsk: true, Command: "rm -rf x"}},
		},
		{
			name: "ask with nothing but a backticked title: a command that never replaces the tool_call's",
			ask:  "{\"toolCallId\":\"c1\",\"kind\":\"execute\",\"status\":\"pending\",\"title\":\"`sleep 2`\"}",
			want: []accum.Observation{{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true, Command: "sleep 2", CommandFromTitle: true}},
		},
	})
	for _, name := range []string{"cursor-agent", "Cursor"} {
		if got := Detect(name).Info().Name; got != "cursor" {
			t.Errorf("Detect(%q) = %s", name, got)
		}
	}
}
