package dialect

import (
	"errors"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
)

func TestGenericUpdate(t *testing.T) {
	d := Generic()
	C, D, S, F := accum.Combined, accum.Delta, accum.Snapshot, accum.Final
	running, done, failed := accum.StatusRunning, accum.StatusCompleted, accum.StatusFailed
	yes, no := accum.ShellYes, accum.ShellNo
	runObsCases(t, d, []obsCase{
		{name: "tool_call with rawInput string command, cwd, description",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"Run tests","status":"in_progress","rawInput":{"command":"npm test","cwd":"/w","description":"Run the tests"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Status: running, Command: "npm test", Cwd: "/w", Description: "Run the tests"})},
		{name: "argv command is kept whole: only adapters' own wrappers are removed, by their dialect",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"x","rawInput":{"command":["bash","-lc","npm test"]}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Command: "bash -lc 'npm test'"})},
		{name: "argv without wrapper is joined",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"x","rawInput":{"command":["ls","-la"]}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Command: "ls -la"})},
		{name: "a model-written sh -c string is the command",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"x","rawInput":{"command":"sh -c 'echo hi'"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Command: "sh -c 'echo hi'"})},
		{name: "title is the command for kind execute without rawInput command",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"make build","status":"pending"}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Status: accum.StatusPending, Command: "make build"})},
		{name: "title is not a command for other kinds",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"read","title":"Read file.go"}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: no})},
		{name: "read kind with a rawInput command is a shell",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"search","title":"List","rawInput":{"command":"ls"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Command: "ls"})},
		{name: "edit kind with a command stays not a shell",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"edit","title":"Edit","rawInput":{"command":"x"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: no, Command: "x"})},
		{name: "content of the opening tool_call is not output (description)",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"ls","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"List files"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Status: running, Command: "ls"})},
		{name: "content text of a running update is a fenced snapshot",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"` + "```sh\\na\\nb\\n```\\n" + `"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: running, Texts: []accum.Text{txt(C, S, "a\nb\n")}})},
		{name: "content text of a final update is the final output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"done\n"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: done, Texts: []accum.Text{txt(C, F, "done\n")}})},
		{name: "content equal to the description is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","rawInput":{"command":"ls","description":"List"},"content":[{"type":"content","content":{"type":"text","text":"List"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: running, Shell: yes, Command: "ls", Description: "List"})},
		{name: "content beside a terminal is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"terminal","terminalId":"t1"},{"type":"content","content":{"type":"text","text":"x"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", TerminalID: "t1", Shell: yes, Status: done})},
		{name: "content of a call known not to be a shell is ignored",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","kind":"read","status":"completed","content":[{"type":"content","content":{"type":"text","text":"file body"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: no, Status: done})},
		{name: "rawOutput string is the final combined output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":"hello\n"}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: done, Texts: []accum.Text{txt(C, F, "hello\n")}})},
		{name: "structured exit_code on a final frame",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"exit_code":3,"output":"x"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: done, Exit: ex(3, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "x")}})},
		{name: "structured exit on a running frame is a placeholder",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","rawOutput":{"exit_code":0}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: running, Exit: ex(0, accum.ExitStructured, true)})},
		{name: "exitCode (camel) as a numeric string",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"exitCode":"2"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: failed, Exit: ex(2, accum.ExitStructured, false)})},
		{name: "metadata.exit and metadata.exitCode",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"metadata":{"exitCode":1.0}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: done, Exit: ex(1, accum.ExitStructured, false)})},
		{name: "null or malformed exit is unknown, never 0",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"exit_code":null,"exitCode":"abc","metadata":{"exit":1.5}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: done})},
		{name: "an exit that only rounding would make 0 is unknown",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"exit_code":1e-400},"_meta":{"terminal_exit":{"exit_code":"-1e-400"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done})},
		{name: "stdout and stderr both present are separate streams",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"stdout":"o\n","stderr":"","exit_code":0}}`,
			want: one(accum.Observation{ToolCallID: "c1", Status: done, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Stdout, F, "o\n"), txt(accum.Stderr, F, "")}})},
		{name: "stdout alone is not a split: it only updates a stream already split",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"stdout":"o\n"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: done, Texts: []accum.Text{{Stream: accum.Stdout, Kind: F, Text: "o\n", IfSplit: true}}})},
		{name: "aggregated_output wins over formatted_output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"formatted_output":"short","aggregated_output":"full"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: done, Texts: []accum.Text{txt(C, F, "full")}})},
		{name: "formatted_output alone is the combined output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"formatted_output":"f"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: done, Texts: []accum.Text{txt(C, F, "f")}})},
		{name: "signal and timed_out",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"signal":"kill","timed_out":true}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: failed, Signal: "SIGKILL", TimedOut: true})},
		{name: "_meta terminal convention: info, delta",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"echo hello","status":"in_progress","content":[{"type":"terminal","terminalId":"t1"}],"rawInput":{"command":"echo hello","cwd":"/w"},"_meta":{"terminal_info":{"cwd":"/w","terminal_id":"t1"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", TerminalID: "t1", Opens: true, Shell: yes, Status: running, Command: "echo hello", Cwd: "/w"})},
		{name: "_meta terminal_output is a delta",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_output":{"terminal_id":"t1","data":"hello\n"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", TerminalID: "t1", Shell: yes, Texts: []accum.Text{txt(C, D, "hello\n")}})},
		{name: "terminal_exit beats a structured exit code",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"exit_code":0},"_meta":{"terminal_exit":{"terminal_id":"t1","exit_code":2,"signal":null}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(2, accum.ExitTerminal, false)})},
		{name: "fields of unexpected types are skipped, not fatal",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":5,"kind":["x"],"status":"completed","content":"nope","rawInput":{"command":7,"cwd":false},"rawOutput":[1,2],"_meta":{"terminal_output":{"data":5}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done})},
		{name: "agent_message_chunk gives nothing", update: `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`},
		{name: "plan gives nothing", update: `{"sessionUpdate":"plan","entries":[]}`},
		{name: "usage_update gives nothing", update: `{"sessionUpdate":"usage_update","used":1}`},
		{name: "unknown update gives nothing", update: `{"sessionUpdate":"something_new","x":{"y":1}}`},
	})
}

func TestGenericTerminalV2(t *testing.T) {
	d := Generic()
	C := accum.Combined
	yes := accum.ShellYes
	runObsCases(t, d, []obsCase{
		{name: "terminal_update output is a replacement snapshot of bytes",
			update: `{"sessionUpdate":"terminal_update","terminalId":"t1","command":"npm test","cwd":"/w","output":{"data":"aGVsbG8K"}}`,
			want: one(accum.Observation{TerminalID: "t1", Shell: yes, Command: "npm test", Cwd: "/w",
				Texts: []accum.Text{{Stream: C, Kind: accum.Snapshot, Bytes: []byte("hello\n")}}})},
		{name: "output null clears",
			update: `{"sessionUpdate":"terminal_update","terminalId":"t1","output":null}`,
			want:   one(accum.Observation{TerminalID: "t1", Shell: yes, Texts: []accum.Text{{Stream: C, Kind: accum.Snapshot, Bytes: []byte{}}}})},
		{name: "output omitted leaves it unchanged; exitStatus is ExitStatus evidence",
			update: `{"sessionUpdate":"terminal_update","terminalId":"t1","exitStatus":{"exitCode":3,"signal":null}}`,
			want:   one(accum.Observation{TerminalID: "t1", Shell: yes, Exit: ex(3, accum.ExitStatus, false)})},
		{name: "exitStatus with a signal and no code",
			update: `{"sessionUpdate":"terminal_update","terminalId":"t1","exitStatus":{"exitCode":null,"signal":"SIGTERM"}}`,
			want:   one(accum.Observation{TerminalID: "t1", Shell: yes, Signal: "SIGTERM"})},
		{name: "invalid bytes survive base64",
			update: `{"sessionUpdate":"terminal_update","terminalId":"t1","output":{"data":"//4gb2sK"}}`,
			want:   one(accum.Observation{TerminalID: "t1", Shell: yes, Texts: []accum.Text{{Stream: C, Kind: accum.Snapshot, Bytes: []byte("\xff\xfe ok\n")}}})},
		{name: "data that is not base64 is dropped",
			update: `{"sessionUpdate":"terminal_update","terminalId":"t1","output":{"data":"not base64!"}}`,
			want:   one(accum.Observation{TerminalID: "t1", Shell: yes})},
		{name: "terminal_output_chunk is a delta of bytes (a split UTF-8 sequence stays bytes)",
			update: `{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"aGnC"}`,
			want:   one(accum.Observation{TerminalID: "t1", Shell: yes, Texts: []accum.Text{{Stream: C, Kind: accum.Delta, Bytes: []byte("hi\xc2")}}})},
		{name: "terminal update without a terminal id gives nothing",
			update: `{"sessionUpdate":"terminal_output_chunk","data":"aGk="}`},
	})
}

func TestGenericPermission(t *testing.T) {
	d := Generic()
	runObsCases(t, d, []obsCase{
		{name: "ask text is the reason, not output; execute title is the command",
			ask: `{"toolCallId":"c1","kind":"execute","title":"node x.js","status":"pending","content":[{"type":"content","content":{"type":"text","text":"Not in allowlist: node"}}]}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusPending, Command: "node x.js",
				PermissionAsk: true, ApprovalReason: "Not in allowlist: node"})},
		{name: "rawInput command wins over the title",
			ask:  `{"toolCallId":"c1","kind":"execute","title":"Run it","rawInput":{"command":["sh","-c","make"],"cwd":"/w"}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Command: "sh -c make", Cwd: "/w", PermissionAsk: true})},
		{name: "fetch ask is not a shell and its title is not a command",
			ask:  `{"toolCallId":"c2","kind":"fetch","title":"Fetch https://x"}`,
			want: one(accum.Observation{ToolCallID: "c2", Shell: accum.ShellNo, PermissionAsk: true})},
	})
}

func TestGenericRead(t *testing.T) {
	d := Generic()
	if _, err := Read(d, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{`)); !errors.Is(err, ErrBadFrame) {
		t.Errorf("truncated JSON: got %v", err)
	}
	fr, err := Read(d, []byte(`{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c1","kind":"execute","title":"rm -rf x"},"options":[{"optionId":"no","kind":"reject_once"}]}}`))
	if err != nil || fr.Ask == nil || len(fr.Observations) != 1 || !fr.Observations[0].PermissionAsk || fr.Observations[0].Command != "rm -rf x" {
		t.Errorf("permission: %+v %v", fr, err)
	}
	if d.Info().Name != GenericName || len(d.Info().AgentNames) != 0 {
		t.Errorf("info: %+v", d.Info())
	}
	if Detect("some-unknown-agent").Info().Name != GenericName {
		t.Error("unknown agents must be read with the generic dialect")
	}
}
