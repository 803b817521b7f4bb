package dialect

import (
	"encoding/json"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
)

func TestAuggieUpdate(t *testing.T) {
	d, ok := Lookup("auggie")
	if !ok {
		t.Fatal("auggie not registered")
	}
	final := func(text string) string {
		b, _ := json.Marshal(text)
		return `{"sessionUpdate":"tool_call_update","toolCallId":"a1","status":"completed","rawOutput":{"output":` + string(b) + `}}`
	}
	done := func(f func(o *accum.Observation)) []accum.Observation {
		o := accum.Observation{ToolCallID: "a1", Status: accum.StatusCompleted}
		f(&o)
		return []accum.Observation{o}
	}
	runObsCases(t, d, []obsCase{
		{
			name:   "tool_call: rawInput command and cwd",
			update: "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"a1\",\"kind\":\"execute\",\"status\":\"pending\",\"title\":\"Run `npm test`\",\"rawInput\":{\"command\":\"npm test\",\"cwd\":\"/w\",\"max_wait_seconds\":600,\"wait\":true}}",
			want:   []accum.Observation{{ToolCallID: "a1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "npm test", Cwd: "/w"}},
		},
		{
			name:   "title gives the command when rawInput has none",
			update: "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"a1\",\"kind\":\"execute\",\"title\":\"Run `ls -la`\"}",
			want:   []accum.Observation{{ToolCallID: "a1", Opens: true, Shell: accum.ShellYes, Command: "ls -la"}},
		},
		{
			name:   "wait false is background",
			update: `{"sessionUpdate":"tool_call","toolCallId":"a1","kind":"execute","title":"x","rawInput":{"command":"npm run dev","wait":false}}`,
			want:   []accum.Observation{{ToolCallID: "a1", Opens: true, Shell: accum.ShellYes, Command: "npm run dev", Background: true}},
		},
		{
			name:   "running text is not read as output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"a1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"Running tests"}}]}`,
			want:   []accum.Observation{{ToolCallID: "a1", Status: accum.StatusRunning}},
		},
		{
			name:   "preamble, return-code, output and stderr: split streams, ExitText",
			update: final("Here are the results from executing the command.\n<return-code>\n1\n</return-code>\n<output>\nPASS a\n\n</output>\n<stderr>\nFAIL b\n</stderr>\n"),
			want: done(func(o *accum.Observation) {
				o.Exit = ex(1, accum.ExitText, false)
				o.Texts = []accum.Text{txt(accum.Stdout, accum.Final, "PASS a\n"), txt(accum.Stderr, accum.Final, "FAIL b")}
			}),
		},
		{
			name:   "no preamble, output alone: Combined, exactly one newline stripped each side",
			update: final("<return-code>\n0\n</return-code>\n<output>\n\nhello\n\n</output>"),
			want: done(func(o *accum.Observation) {
				o.Exit = ex(0, accum.ExitText, false)
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "\nhello\n")}
			}),
		},
		{
			name:   "sibling tool with stdout: Stdout and Stderr",
			update: final("<return-code>\n2\n</return-code>\n<stdout>\n\n</stdout>\n<stderr>\nls: cannot access\n</stderr>"),
			want: done(func(o *accum.Observation) {
				o.Exit = ex(2, accum.ExitText, false)
				o.Texts = []accum.Text{txt(accum.Stdout, accum.Final, ""), txt(accum.Stderr, accum.Final, "ls: cannot access")}
			}),
		},
		{
			name:   "output that prints a closing tag is kept",
			update: final("<return-code>\n0\n</return-code>\n<output>\n<output>x</output>\n</output>"),
			want: done(func(o *accum.Observation) {
				o.Exit = ex(0, accum.ExitText, false)
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "<output>x</output>")}
			}),
		},
		{
			name:   "tags the command printed inside the output are output, whatever the tags' order",
			update: final("<output>\na\n<return-code>\n0\n</return-code>\n<stderr>\nnot stderr\n</stderr>\nb\n</output>\n<return-code>\n3\n</return-code>"),
			want: done(func(o *accum.Observation) {
				o.Exit = ex(3, accum.ExitText, false)
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "a\n<return-code>\n0\n</return-code>\n<stderr>\nnot stderr\n</stderr>\nb")}
			}),
		},
		{
			name:   "malformed return code is unknown, never 0",
			update: final("<return-code>\nnone\n</return-code>\n<output>\nx\n</output>"),
			want:   done(func(o *accum.Observation) { o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "x")} }),
		},
		{
			name:   "rawOutput as a plain string, in content instead",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"a1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"<return-code>\n3\n</return-code>\n<output>\nboom\n</output>"}}]}`,
			want: done(func(o *accum.Observation) {
				o.Exit = ex(3, accum.ExitText, false)
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "boom")}
			}),
		},
		{
			name:   "untagged final text is combined output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"a1","status":"completed","rawOutput":"plain"}`,
			want:   done(func(o *accum.Observation) { o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "plain")} }),
		},
		{
			name:   "completed with nothing: exit unknown",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"a1","status":"completed"}`,
			want:   done(func(o *accum.Observation) {}),
		},
		{
			name:   "failed rejection: Cancelled",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"a1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"Tool call was rejected by the user"}}]}`,
			want:   []accum.Observation{{ToolCallID: "a1", Status: accum.StatusFailed, Cancelled: true}},
		},
		{
			name:   "failed with a result whose output says cancelled: Failed, the words are output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"a1","status":"failed","rawOutput":{"output":"Here are the results from executing the command.\n<return-code>\n3\n</return-code>\n<output>\nBuild cancelled: missing target\n</output>"}}`,
			want: []accum.Observation{{ToolCallID: "a1", Status: accum.StatusFailed, Failed: true, Exit: ex(3, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "Build cancelled: missing target")}}},
		},
		{
			name:   "failed with a result that Auggie says was cancelled: Cancelled",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"a1","status":"failed","rawOutput":{"output":"The command was cancelled by the user.\n<output>\npartial\n</output>"}}`,
			want: []accum.Observation{{ToolCallID: "a1", Status: accum.StatusFailed, Cancelled: true,
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "partial")}}},
		},
		{
			name:   "failed error: Failed",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"a1","status":"failed","rawOutput":{"output":"spawn error"}}`,
			want:   []accum.Observation{{ToolCallID: "a1", Status: accum.StatusFailed, Failed: true}},
		},
	})
}

func TestAuggiePermission(t *testing.T) {
	d, _ := Lookup("auggie")
	runObsCases(t, d, []obsCase{{
		name: "ask",
		ask:  "{\"toolCallId\":\"a1\",\"kind\":\"execute\",\"status\":\"pending\",\"title\":\"Run `rm -rf x`\",\"rawInput\":{\"command\":\"rm -rf x\"},\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"Not in allowlist\"}}]}",
		want: []accum.Observation{{ToolCallID: "a1", Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true, Command: "rm -rf x", ApprovalReason: "Not in allowlist"}},
	}})
	if got := Detect("auggie").Info().Name; got != "auggie" {
		t.Errorf("Detect(auggie) = %s", got)
	}
}
