package dialect

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Frames as Qwen Code 0.24 (`qwen --acp`) sends them, from the field guide.

func qwenFinal(status, report, rawOutput string) string {
	raw := ""
	if rawOutput != "" {
		raw = `,"rawOutput":` + rawOutput
	}
	return `{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command-1","status":"` + status + `","content":[{"type":"content","content":{"type":"text","text":` + jsq(report) + `}}]` + raw + `}`
}

func jsq(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

func TestQwenUpdate(t *testing.T) {
	d, ok := Lookup("qwen")
	if !ok {
		t.Fatal("no qwen dialect")
	}
	C, F := accum.Combined, accum.Final
	id := "run_shell_command-1"
	done, failed, running := accum.StatusCompleted, accum.StatusFailed, accum.StatusRunning
	yes := accum.ShellYes
	report := func(out, code, sig string) string {
		return "Command: npm test\nDirectory: (root)\nOutput: " + out + "\nError: (none)\nExit Code: " + code + "\nSignal: " + sig + "\nBackground PIDs: (none)\nProcess Group PGID: 4242"
	}
	runObsCases(t, d, []obsCase{
		{name: "tool_call titled Shell with empty rawInput: a shell call without a command",
			update: `{"sessionUpdate":"tool_call","toolCallId":"run_shell_command-1","status":"pending","title":"Shell","content":[],"locations":[],"kind":"execute","rawInput":{},"_meta":{"toolName":"run_shell_command"}}`,
			want:   one(accum.Observation{ToolCallID: id, Opens: true, Shell: yes, Status: accum.StatusPending})},
		{name: "toolName makes a shell call even without kind",
			update: `{"sessionUpdate":"tool_call","toolCallId":"run_shell_command-1","status":"pending","title":"Shell","_meta":{"toolName":"run_shell_command"}}`,
			want:   one(accum.Observation{ToolCallID: id, Opens: true, Shell: yes, Status: accum.StatusPending})},
		{name: "in_progress update: command and description from rawInput, never the title",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command-1","status":"in_progress","title":"npm test (Run the tests)","kind":"execute","rawInput":{"command":"npm test","description":"Run the tests","is_background":false}}`,
			want:   one(accum.Observation{ToolCallID: id, Shell: yes, Status: running, Command: "npm test", Description: "Run the tests"})},
		{name: "directory and background from rawInput",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command-1","status":"in_progress","title":"npm run dev [in web] (Serve)","kind":"execute","rawInput":{"command":"npm run dev","description":"Serve","directory":"web","is_background":true}}`,
			want:   one(accum.Observation{ToolCallID: id, Shell: yes, Status: running, Command: "npm run dev", Description: "Serve", Cwd: "web", Background: true})},
		{name: "content of a running frame is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command-1","status":"in_progress","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"npm test (Run the tests)"}}]}`,
			want:   one(accum.Observation{ToolCallID: id, Shell: yes, Status: running})},
		{name: "success: output from rawOutput, the report is not output",
			update: qwenFinal("completed", report("ok", "0", "(none)"), `{"type":"shell_result","output":"ok\n","exitCode":0,"signal":null,"outcome":"success","error":null,"truncated":false,"outputFiles":[]}`),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "ok\n")}})},
		{name: "nonzero exit is failed with exitCode",
			update: qwenFinal("failed", report("a\nb", "3", "(none)"), `{"type":"shell_result","output":"a\nb\n","exitCode":3,"signal":null,"outcome":"failed","error":null,"truncated":false}`),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: failed, Exit: ex(3, accum.ExitStructured, false), Verdict: accum.VerdictFailed, Texts: []accum.Text{txt(C, F, "a\nb\n")}})},
		{name: "killed: exitCode 0 beside signal 9 is no exit status",
			update: qwenFinal("failed", report("before-kill", "(none)", "9"), `{"type":"shell_result","output":"before-kill\n","exitCode":0,"signal":9,"outcome":"failed","error":null,"truncated":false}`),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: failed, Signal: "SIGKILL", Verdict: accum.VerdictFailed, Texts: []accum.Text{txt(C, F, "before-kill\n")}})},
		{name: "timed out: signal 15 and outcome timed_out",
			update: qwenFinal("failed", report("start", "(none)", "15"), `{"type":"shell_result","output":"start\n","exitCode":0,"signal":15,"outcome":"timed_out","error":null,"truncated":false}`),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: failed, Signal: "SIGTERM", TimedOut: true, Texts: []accum.Text{txt(C, F, "start\n")}})},
		{name: "cancelled: signal 15 and outcome cancelled",
			update: qwenFinal("failed", report("tick1", "(none)", "15"), `{"type":"shell_result","output":"tick1\n","exitCode":0,"signal":"SIGTERM","outcome":"cancelled","error":null,"truncated":false}`),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: failed, Signal: "SIGTERM", Cancelled: true, Texts: []accum.Text{txt(C, F, "tick1\n")}})},
		{name: "killed, the signal under a member Qwen does not use: exitCode 0 beside outcome failed is no exit status",
			update: qwenFinal("failed", report("before-kill", "(none)", "(none)"), `{"type":"shell_result","output":"before-kill\n","exitCode":0,"signal":null,"terminationSignal":9,"outcome":"failed","error":null,"truncated":false}`),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: failed, ExitSetAside: true, Verdict: accum.VerdictFailed, Texts: []accum.Text{txt(C, F, "before-kill\n")}})},
		{name: "timed out with no signal: exitCode 0 beside outcome timed_out is no exit status",
			update: qwenFinal("failed", report("start", "(none)", "(none)"), `{"type":"shell_result","output":"start\n","exitCode":0,"signal":null,"outcome":"timed_out","error":null,"truncated":false}`),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: failed, ExitSetAside: true, TimedOut: true, Texts: []accum.Text{txt(C, F, "start\n")}})},
		{name: "cancelled with no signal: exitCode 0 is no exit status",
			update: qwenFinal("failed", report("tick1", "(none)", "(none)"), `{"type":"shell_result","output":"tick1\n","exitCode":0,"signal":null,"outcome":"cancelled","error":null,"truncated":false}`),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: failed, ExitSetAside: true, Cancelled: true, Texts: []accum.Text{txt(C, F, "tick1\n")}})},
		{name: "a nonzero exitCode beside outcome failed stays the exit",
			update: qwenFinal("failed", report("x", "2", "(none)"), `{"type":"shell_result","output":"x\n","exitCode":2,"signal":null,"outcome":"failed"}`),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: failed, Exit: ex(2, accum.ExitStructured, false), Verdict: accum.VerdictFailed, Texts: []accum.Text{txt(C, F, "x\n")}})},
		{name: "rejected ask: the refusal is not output",
			update: qwenFinal("failed", `Tool "run_shell_command" was canceled by the user.`, ""),
			want:   one(accum.Observation{ToolCallID: id, Status: failed, Cancelled: true, CancelNotice: `Tool "run_shell_command" was canceled by the user.`})},
		{name: "tool error without rawOutput is a failure, not output",
			update: qwenFinal("failed", "Command rejected because it could not be parsed safely", ""),
			want:   one(accum.Observation{ToolCallID: id, Status: failed, Failed: true})},
		{name: "error field beside an unknown exit is a failure",
			update: qwenFinal("failed", "Error: spawn ENOENT", `{"type":"shell_result","output":"","exitCode":null,"signal":null,"outcome":"failed","error":"spawn bash ENOENT"}`),
			want:   one(accum.Observation{ToolCallID: id, Status: failed, Failed: true, Verdict: accum.VerdictFailed, Texts: []accum.Text{txt(C, F, "")}})},
		{name: "truncated: the window is output, marked truncated; the notice in content is not",
			update: qwenFinal("completed", "Tool output was too large and has been truncated.\nThe full output has been saved to: /tmp/x.output\n\nTruncated part of the output:\n1\n\n---\n... [CONTENT TRUNCATED] ...\n---\n\n39999\n40000", `{"type":"shell_result","output":"39998\n39999\n40000\n","exitCode":0,"signal":null,"outcome":"success","truncated":true,"outputFiles":["/tmp/x.output"]}`),
			want:   one(accum.Observation{ToolCallID: id, Status: done, Exit: ex(0, accum.ExitStructured, false), Texts: []accum.Text{{Stream: C, Kind: F, Text: "39998\n39999\n40000\n", Truncated: true}}})},
		{name: "a truncation notice inside rawOutput.output is removed; the tail is kept",
			update: qwenFinal("completed", "", `{"type":"shell_result","output":"Tool output was too large and has been truncated.\nThe full output has been saved to: /tmp/x\n\nTruncated part of the output:\nhead\n\n---\n... [CONTENT TRUNCATED] ...\n---\n\ntail1\ntail2","exitCode":0,"signal":null,"truncated":true}`),
			want:   one(accum.Observation{ToolCallID: id, Status: done, Exit: ex(0, accum.ExitStructured, false), Texts: []accum.Text{{Stream: C, Kind: F, Text: "tail1\ntail2", Truncated: true}}})},
		{name: "a separator line in an output not said truncated is output",
			update: qwenFinal("completed", "", `{"type":"shell_result","output":"head\n... [CONTENT TRUNCATED] ...\ntail","exitCode":0,"signal":null,"truncated":false}`),
			want:   one(accum.Observation{ToolCallID: id, Status: done, Exit: ex(0, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "head\n... [CONTENT TRUNCATED] ...\ntail")}})},
		{name: "an output that only starts with the notice's words is output",
			update: qwenFinal("completed", "", `{"type":"shell_result","output":"Tool output was too large and has been truncated\nline2\n","exitCode":0,"signal":null,"truncated":false}`),
			want:   one(accum.Observation{ToolCallID: id, Status: done, Exit: ex(0, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "Tool output was too large and has been truncated\nline2\n")}})},
		{name: "the notice's first line and a blank line, said not truncated: output",
			update: qwenFinal("completed", "", `{"type":"shell_result","output":"Tool output was too large and has been truncated\n\nreal tail\n","exitCode":0,"signal":null,"truncated":false}`),
			want:   one(accum.Observation{ToolCallID: id, Status: done, Exit: ex(0, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "Tool output was too large and has been truncated\n\nreal tail\n")}})},
		{name: "the no-output marker is empty output",
			update: qwenFinal("completed", "", `{"type":"shell_result","output":"(run_shell_command completed with no output)","exitCode":0,"signal":null}`),
			want:   one(accum.Observation{ToolCallID: id, Status: done, Exit: ex(0, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "")}})},
		{name: "final without rawOutput: the report's fields, Gemini's way",
			update: qwenFinal("completed", report("hello", "0", "(none)"), ""),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "hello")}})},
		{name: "final without rawOutput: report with a signal keeps no 0",
			update: qwenFinal("completed", report("x", "0", "9"), ""),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: done, Signal: "SIGKILL", Texts: []accum.Text{txt(C, F, "x")}})},
		{name: "newer title Shell: command (description) with rawInput at once",
			update: `{"sessionUpdate":"tool_call","toolCallId":"run_shell_command-1","status":"pending","title":"Shell: npm test (Run the tests)","kind":"execute","rawInput":{"command":"npm test","description":"Run the tests","is_background":false},"_meta":{"toolName":"run_shell_command","timestamp":1764500000000}}`,
			want:   one(accum.Observation{ToolCallID: id, Opens: true, Shell: yes, Status: accum.StatusPending, Command: "npm test", Description: "Run the tests"})},
		{name: "newer title without rawInput command: the display name is no part of the command",
			update: `{"sessionUpdate":"tool_call","toolCallId":"run_shell_command-1","status":"pending","title":"Shell: make [in web] (Build)","kind":"execute","rawInput":{"description":"Build"},"_meta":{"toolName":"run_shell_command"}}`,
			want:   one(accum.Observation{ToolCallID: id, Opens: true, Shell: yes, Status: accum.StatusPending, Command: "make", CommandFromTitle: true, Cwd: "web", Description: "Build"})},
		{name: "rawOutput as display text: the output; the content report states the exit code, and is not output",
			update: qwenFinal("completed", report("hello", "0", "(none)"), `"hello\n"`),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "hello\n")}})},
		{name: "rawOutput as display text: an exit marker is the exit, not output",
			update: qwenFinal("failed", report("(empty)", "2", "(none)"), `"Command exited with code: 2"`),
			want:   one(accum.Observation{ToolCallID: id, Command: "npm test", CommandFromTitle: true, Status: failed, Exit: ex(2, accum.ExitText, false)})},
		{name: "rawOutput as display text: a refusal is cancelled, not output",
			update: qwenFinal("failed", "", `"Tool \"run_shell_command\" was canceled by the user."`),
			want:   one(accum.Observation{ToolCallID: id, Status: failed, Cancelled: true, CancelNotice: `Tool "run_shell_command" was canceled by the user.`})},
		{name: "other tools are left alone",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"read_file-2","status":"completed","kind":"read","content":[{"type":"content","content":{"type":"text","text":"file body"}}],"rawOutput":{"output":"file body"}}`,
			want:   one(accum.Observation{ToolCallID: "read_file-2", Shell: accum.ShellNo, Status: done})},
		{name: "available_commands_update is skipped",
			update: `{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"init","description":"x"}]}`,
			want:   nil},
	})
}

func TestQwenPermission(t *testing.T) {
	d, _ := Lookup("qwen")
	id := "run_shell_command-1"
	runObsCases(t, d, []obsCase{
		{name: "ask: command and description from rawInput, never the title with its description",
			ask:  `{"toolCallId":"run_shell_command-1","title":"rm -rf dist (Remove the build)","kind":"execute","status":"pending","rawInput":{"command":"rm -rf dist","description":"Remove the build","is_background":false}}`,
			want: one(accum.Observation{ToolCallID: id, Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true, Command: "rm -rf dist", Description: "Remove the build"})},
		{name: "ask without a rawInput command: the title less its description, as a title command",
			ask:  `{"toolCallId":"run_shell_command-1","title":"make (Build it)","kind":"execute","status":"pending","rawInput":{"description":"Build it"}}`,
			want: one(accum.Observation{ToolCallID: id, Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true, Command: "make", CommandFromTitle: true, Description: "Build it"})},
		{name: "an edit tool's ask is not a shell call's",
			ask:  `{"toolCallId":"edit-3","title":"Edit a.go","kind":"edit","status":"pending","rawInput":{"file_path":"a.go"}}`,
			want: one(accum.Observation{ToolCallID: "edit-3", Shell: accum.ShellNo, Status: accum.StatusPending, PermissionAsk: true})},
	})
	for _, name := range []string{"qwen-code", "Qwen-Code", "qwen", "@qwen-code/qwen-code", "qwen-code@0.24.0"} {
		if got := Detect(name).Info().Name; got != "qwen" {
			t.Errorf("Detect(%q) = %s, want qwen", name, got)
		}
	}
}

// TestQwenOutputReadMatchesDecode holds the hand reading of Qwen's object
// rawOutput to what encoding/json decodes into qwenOutput.
func TestQwenOutputReadMatchesDecode(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"type":"shell_result","output":"x\n","exitCode":0,"signal":9,"outcome":"failed","error":null,"truncated":true,"outputFiles":["/f"]}`,
		`{"exitCode":"3","exit_code":4.0,"signal":"SIGTERM","signal":null,"truncated":"yes","output":7,"error":"boom"}`,
		`{"TYPE":"x","Output":"y","EXITCODE":null,"Signal":{"a":1},"outcome":["failed"],"truncated":null}`,
	} {
		var want qwenOutput
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				t.Fatalf("%s: %v", in, err)
			}
		}
		var got qwenOutput
		got.read([]byte(in))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", in, got, want)
		}
	}
}

// TestQwenDisplayedResult reads finals as Qwen Code 0.15.10 sent them
// (test/testdata/recordings/agents/qwen-code-0.15.10_plain_full.ndjson):
// every final is `completed`, whatever the exit; rawOutput is the displayed
// output alone (a string); the content is the model's report, the only
// place that states the exit code and the signal.
func TestQwenDisplayedResult(t *testing.T) {
	d, _ := Lookup("qwen")
	C, F := accum.Combined, accum.Final
	id := "run_shell_command-1"
	done := accum.StatusCompleted
	report := func(cmd, out, code, sig string) string {
		return "Command: " + cmd + "\nDirectory: (root)\nOutput: " + out + "\nError: (none)\nExit Code: " + code + "\nSignal: " + sig + "\nProcess Group PGID: 23566"
	}
	runObsCases(t, d, []obsCase{
		{name: "exit 0: Signal 0 is no signal",
			update: qwenFinal("completed", report("ls", "alpha.txt  beta.md", "0", "0"), jsq("alpha.txt  beta.md")),
			want:   one(accum.Observation{ToolCallID: id, Command: "ls", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "alpha.txt  beta.md")}})},
		{name: "exit 3 on a completed frame",
			update: qwenFinal("completed", report("printf 'a\\nb\\n'; exit 3", "a\nb", "3", "0"), jsq("a\nb")),
			want:   one(accum.Observation{ToolCallID: id, Command: "printf 'a\\nb\\n'; exit 3", CommandFromTitle: true, Status: done, Exit: ex(3, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "a\nb")}})},
		{name: "killed: Exit Code 0 beside Signal 9 is no exit status",
			update: qwenFinal("completed", report("echo before-kill; kill -9 $$", "before-kill", "0", "9"), jsq("before-kill")),
			want:   one(accum.Observation{ToolCallID: id, Command: "echo before-kill; kill -9 $$", CommandFromTitle: true, Status: done, Signal: "SIGKILL", Texts: []accum.Text{txt(C, F, "before-kill")}})},
		{name: "an error in the report is Qwen's failure, not output",
			update: qwenFinal("completed", "Command: x\nDirectory: (root)\nOutput: (empty)\nError: spawn bash ENOENT\nExit Code: (none)\nSignal: (none)\nProcess Group PGID: (none)", jsq("Command failed: spawn bash ENOENT")),
			want:   one(accum.Observation{ToolCallID: id, Command: "x", CommandFromTitle: true, Status: done, Failed: true})},
		{name: "timed out: the model's notice says so; the displayed output is the output",
			update: qwenFinal("completed", "Command timed out after 2000ms before it could complete. Below is the output before it timed out:\nstart", jsq("start")),
			want:   one(accum.Observation{ToolCallID: id, Status: done, TimedOut: true, Texts: []accum.Text{txt(C, F, "start")}})},
		{name: "timed out without output: neither text is output",
			update: qwenFinal("completed", "Command timed out after 2000ms before it could complete. There was no output before it timed out.", jsq("Command timed out after 2000ms.")),
			want:   one(accum.Observation{ToolCallID: id, Status: done, TimedOut: true})},
		{name: "timed out (0.21): a failed final; the notice line before the displayed output is not output",
			update: qwenFinal("failed", "Command timed out after 2000ms before it could complete.", jsq("Command timed out after 2000ms before it could complete.\nstart")),
			want:   one(accum.Observation{ToolCallID: id, Status: accum.StatusFailed, TimedOut: true, Texts: []accum.Text{txt(C, F, "start")}})},
		{name: "exit 3 (0.21): a failed final, Signal (none)",
			update: qwenFinal("failed", report("printf 'a\\nb\\n'; exit 3", "a\nb", "3", "(none)"), jsq("a\nb")),
			want:   one(accum.Observation{ToolCallID: id, Command: "printf 'a\\nb\\n'; exit 3", CommandFromTitle: true, Status: accum.StatusFailed, Exit: ex(3, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "a\nb")}})},
		// Qwen Code 0.21.10 and 0.23.4 (recorded, load's cancel): a
		// command the user cancelled ends `failed`, its content Qwen's
		// message for a call cancelled once it had run, rawOutput the
		// output before the cancel. Live, the cancelled turn tells it; a
		// session/load replay has only this frame.
		{name: "cancelled (0.21, 0.23): Qwen's post-run cancel message as the whole content; the displayed output is the output",
			update: qwenFinal("failed", "The tool had already completed; its output was discarded.", jsq("tick1\ntick2")),
			want: one(accum.Observation{ToolCallID: id, Status: accum.StatusFailed, Cancelled: true, CancelNotice: "The tool had already completed; its output was discarded.",
				Texts: []accum.Text{txt(C, F, "tick1\ntick2")}})},
		{name: "the post-run cancel message printed by a command that failed is output, the report's exit the exit",
			update: qwenFinal("failed", report("echo 'The tool had already completed; its output was discarded.'; exit 1", "The tool had already completed; its output was discarded.", "1", "(none)"), jsq("The tool had already completed; its output was discarded.")),
			want: one(accum.Observation{ToolCallID: id, Command: "echo 'The tool had already completed; its output was discarded.'; exit 1", CommandFromTitle: true, Status: accum.StatusFailed, Exit: ex(1, accum.ExitText, false),
				Texts: []accum.Text{txt(C, F, "The tool had already completed; its output was discarded.")}})},
		{name: "the post-run cancel message as a displayed output beside no report, on a completed frame, is output",
			update: qwenFinal("completed", "The tool had already completed; its output was discarded.", jsq("The tool had already completed; its output was discarded.")),
			want:   one(accum.Observation{ToolCallID: id, Status: done, Texts: []accum.Text{txt(C, F, "The tool had already completed; its output was discarded.")}})},
		{name: "cancelled: the notice is quoted, the displayed output is the output",
			update: qwenFinal("completed", "Command was cancelled by user before it could complete. Below is the output before it was cancelled:\ntick1\ntick2", jsq("tick1\ntick2")),
			want: one(accum.Observation{ToolCallID: id, Status: done, Cancelled: true, CancelNotice: "Command was cancelled by user before it could complete. Below is the output before it was cancelled:",
				Texts: []accum.Text{txt(C, F, "tick1\ntick2")}})},
		{name: "too long: the report cut by Qwen's notice still states the exit; the saved-to note is not output and marks the output truncated",
			update: qwenFinal("completed", "Tool output was too large and has been truncated.\nThe full output has been saved to: /home/dev/.qwen/tmp/x/run_shell_command_1.output\n\nTruncated part of the output:\nCommand: seq 1 60000\nDirectory: (root)\nOutput: 48124\n48125\n\n... [CONTENT TRUNCATED] ...\n58153\nError: (none)\nExit Code: 0\nSignal: 0\nProcess Group PGID: 23749",
				jsq("48124\n48125\n58153\nOutput too long and was saved to: /home/dev/.qwen/tmp/x/run_shell_command_1.output")),
			want: one(accum.Observation{ToolCallID: id, Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{{Stream: C, Kind: F, Text: "48124\n48125\n58153", Truncated: true}}})},
		{name: "the long-run advice to the model is neither output nor report",
			update: qwenFinal("completed", report("make", "built", "0", "0")+"\n\nNote: this foreground command ran for 75s. Next time you run a similar long-running process, pass `is_background: true`.", jsq("built\n\nNote: this foreground command ran for 75s. Next time you run a similar long-running process, pass `is_background: true`.")),
			want:   one(accum.Observation{ToolCallID: id, Command: "make", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "built")}})},
		// Qwen Code 0.24.4 (recorded), run_shell_command with
		// is_background: the final's rawOutput is the tool's display
		// "Background shell <id> started (pid N).", its content the
		// model's notice "Background shell started.\nid: <id>\n...". Both
		// are Qwen's: the command went on in the background, no output.
		{name: "background start (0.24.4, call_bg_7): Qwen's notices, no output, Background",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_bg_7","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Background shell started.\nid: bg_c7e7d7af\npid: 15517\noutput file: /home/dev/.qwen/tmp/067906a4e02060eca9500645fd177fbe196e24bb0b9a25b672e7181c651748c7/background-shells/2954886d-1157-4561-b669-f28922c36041/shell-bg_c7e7d7af.output\nstatus file: /home/dev/.qwen/tmp/067906a4e02060eca9500645fd177fbe196e24bb0b9a25b672e7181c651748c7/background-shells/2954886d-1157-4561-b669-f28922c36041/shell-bg_c7e7d7af.status\nTo check whether this process is still running, Read the status file (status: running|completed|failed|cancelled). Do NOT infer liveness from the output file: programs often block-buffer stdout when not attached to a TTY, so an empty output file is normal while the process is alive (for live output, re-run with e.g. ` + "`" + `python -u` + "`" + ` or ` + "`" + `stdbuf -oL` + "`" + `).\nTo inspect: /tasks (text) or the interactive Background tasks dialog (focus the footer Background tasks pill, then Enter — detail view + live updates). Read the output file directly to view the captured output."}}],"_meta":{"toolName":"run_shell_command","provenance":"builtin"},"rawOutput":"Background shell bg_c7e7d7af started (pid 15517)."}`,
			want:   one(accum.Observation{ToolCallID: "call_bg_7", Shell: accum.ShellYes, Status: done, Background: true})},
		{name: "a displayed text that only reads like the background notice, beside a report, is output",
			update: qwenFinal("completed", report("cat n.txt", "Background shell bg_1 started (pid 7).", "0", "0"), jsq("Background shell bg_1 started (pid 7).")),
			want:   one(accum.Observation{ToolCallID: id, Command: "cat n.txt", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "Background shell bg_1 started (pid 7).")}})},
		// Qwen Code 0.15.10 (recorded, tricky-more and tricky): commands
		// whose own output is the words Qwen appends to the display or the
		// shape of its debug report. The model's report shows the output
		// as its Output field, word for word the display: the display is
		// then the output alone, whatever it reads like. Qwen's own notes
		// (the long-run advice, the saved-to note) follow the report and
		// the output in the display, never inside the report's Output.
		{name: "a display that is the report's Output word for word: the long-run advice printed by the command is output (m_qwen_hint)",
			update: qwenFinal("completed", report("printf 'out\\n\\nNote: ...'", "out\n\nNote: this foreground command ran for 12s. Next time use is_background.", "0", "0"),
				jsq("out\n\nNote: this foreground command ran for 12s. Next time use is_background.")),
			want: one(accum.Observation{ToolCallID: id, Command: "printf 'out\\n\\nNote: ...'", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{txt(C, F, "out\n\nNote: this foreground command ran for 12s. Next time use is_background.")}})},
		{name: "the saved-to note printed by the command is output, not a cut (m_qwen_saved)",
			update: qwenFinal("completed", report("printf x", "out\nOutput too long and was saved to: /tmp/x.txt", "0", "0"), jsq("out\nOutput too long and was saved to: /tmp/x.txt")),
			want: one(accum.Observation{ToolCallID: id, Command: "printf x", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{txt(C, F, "out\nOutput too long and was saved to: /tmp/x.txt")}})},
		{name: "a background notice printed by the command is output (m_claude_bg)",
			update: qwenFinal("completed", report("echo x", "Command running in background with ID: bash_1", "0", "0"), jsq("Command running in background with ID: bash_1")),
			want: one(accum.Observation{ToolCallID: id, Command: "echo x", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{txt(C, F, "Command running in background with ID: bash_1")}})},
		{name: "a report's words printed by the command are output (report_words)",
			update: qwenFinal("completed", report("printf y", "Output: x\nCommand: y\nDirectory: z\nExit Code: 0\nSignal: (none)\nProcess Group PGID: 1", "0", "0"),
				jsq("Output: x\nCommand: y\nDirectory: z\nExit Code: 0\nSignal: (none)\nProcess Group PGID: 1")),
			want: one(accum.Observation{ToolCallID: id, Command: "printf y", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{txt(C, F, "Output: x\nCommand: y\nDirectory: z\nExit Code: 0\nSignal: (none)\nProcess Group PGID: 1")}})},
		{name: "Qwen's advice after a report whose Output holds the command's own advice: only the last is Qwen's",
			update: qwenFinal("completed", report("make", "built\n\nNote: this foreground command ran for 1s. Next time x.", "0", "0")+"\n\nNote: this foreground command ran for 75s. Next time you run a similar long-running process, pass `is_background: true`.",
				jsq("built\n\nNote: this foreground command ran for 1s. Next time x.\n\nNote: this foreground command ran for 75s. Next time you run a similar long-running process, pass `is_background: true`.")),
			want: one(accum.Observation{ToolCallID: id, Command: "make", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{txt(C, F, "built\n\nNote: this foreground command ran for 1s. Next time x.")}})},
		// Qwen Code 0.21.2 to 0.23.4 (recorded, commit-note c_commit): after a git
		// commit whose analysis fails, Qwen appends its attribution
		// warning after a blank line to the report and to the display.
		{name: "the attribution warning after the report is neither output nor report (0.23.4, c_commit)",
			update: qwenFinal("completed", report("git commit -q -m init && echo committed", "committed", "0", "(none)")+"\n\n"+qwenNoteSkipped, jsq("committed\n\n"+qwenNoteSkipped)),
			want:   one(accum.Observation{ToolCallID: id, Command: "git commit -q -m init && echo committed", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "committed")}})},
		{name: "the long-run advice, then the attribution warning: both Qwen's",
			update: qwenFinal("completed", report("make && git commit -m x", "built", "0", "(none)")+"\n\nNote: this foreground command ran for 75s. Next time x.\n\n"+qwenNoteSkipped, jsq("built\n\nNote: this foreground command ran for 75s. Next time x.\n\n"+qwenNoteSkipped)),
			want:   one(accum.Observation{ToolCallID: id, Command: "make && git commit -m x", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "built")}})},
		{name: "the command's own words like the warning, in the report's Output, are output",
			update: qwenFinal("completed", report("cat w.txt", "x\n\n"+qwenNoteSkipped, "0", "(none)"), jsq("x\n\n"+qwenNoteSkipped)),
			want:   one(accum.Observation{ToolCallID: id, Command: "cat w.txt", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "x\n\n"+qwenNoteSkipped)}})},
		{name: "output that merely looks like a report line is output",
			update: qwenFinal("completed", report("cat r.txt", "Exit Code: 7", "0", "0"), jsq("Exit Code: 7")),
			want:   one(accum.Observation{ToolCallID: id, Command: "cat r.txt", CommandFromTitle: true, Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "Exit Code: 7")}})},
	})
}

// TestQwenOlderAsk holds the reading of builds before 0.15.6, which ask
// permission before any tool_call and without rawInput, titling the call
// "<command> [timeout: Nms] (<description>)" (0.10.1 recorded).
func TestQwenOlderAsk(t *testing.T) {
	d, ok := Lookup("qwen")
	require.True(t, ok)
	ask := func(title string) string {
		return `{"toolCallId":"q1","status":"pending","title":` + jsq(title) + `,"content":[],"locations":[],"kind":"execute"}`
	}
	for _, tc := range []struct {
		build, title, command, description string
	}{
		{"0.10.1", "printf 'a\\nb\\n'; exit 3 (Run step 1 (exit3))", "printf 'a\\nb\\n'; exit 3", "Run step 1 (exit3)"},
		{"0.10.1", "echo start; sleep 6 [timeout: 2000ms] (Run step 8)", "echo start; sleep 6", "Run step 8"},
		{"0.10.1", "(cd web && make)", "(cd web && make)", ""},
		{"0.10.1", "make (x) (Build it)", "make (x)", "Build it"},
		{"0.10.1", "make test || (echo failed; exit 3)", "make test || (echo failed; exit 3)", ""},
		{"0.10.1", "printf 'a\\nb\\n'; exit 3 [timeout: 5000ms]", "printf 'a\\nb\\n'; exit 3", ""},
		// A newer build: a title's parenthesis is the command's own.
		{"0.24.4", "f (x)", "f (x)", ""},
	} {
		obs, err := readCase(Bind(d, ParseVersion(tc.build)), "", ask(tc.title))
		require.NoError(t, err, tc.title)
		require.Len(t, obs, 1, tc.title)
		o := obs[0]
		assert.Equal(t, tc.command, o.Command, "%s: %s", tc.build, tc.title)
		assert.Equal(t, tc.description, o.Description, "%s: %s", tc.build, tc.title)
	}
}

// Qwen Code 0.15.10 and 0.21.10 state the exit code only in the report
// for the model, which ends, in every recorded call that ran (exit 0 too),
// "Exit Code: N\nSignal: S\nProcess Group PGID: N". A report without
// those lines, or whose Exit Code is neither a number nor "(none)", comes
// from a build that reworded them: no exit code is read from it, and
// that is said (result_text, as a result block no rule reads is).
func TestQwenReportWithoutItsExitLinesIsSaid(t *testing.T) {
	report := func(lines string) string {
		return "Command: printf 'a\\nb\\n'; exit 3\nDirectory: (root)\nOutput: a\nb\nError: (none)\n" + lines + "Process Group PGID: 4242"
	}
	said := []accum.Unrecognized{{What: accum.UnrecognizedResult, Field: "content text"}}
	for _, b := range []struct{ build, status string }{{"0.15.10", "completed"}, {"0.21.10", "failed"}} {
		d := Bind(mustDialect(t, "qwen"), ParseVersion(b.build))
		for _, c := range []struct {
			name, text string
			exit       int32 // -1: none
			signal     string
			want       []accum.Unrecognized
		}{
			{"today's lines", report("Exit Code: 3\nSignal: (none)\n"), 3, "", nil},
			{"Exit Code 0 beside a signal", report("Exit Code: 0\nSignal: 9\n"), -1, "SIGKILL", nil},
			{"no exit code stated", report("Exit Code: (none)\nSignal: (none)\n"), -1, "", nil},
			{"Exit code", report("Exit code: 3\nSignal: (none)\n"), -1, "", said},
			{"Exit Status", report("Exit Status: 3\nSignal: (none)\n"), -1, "", said},
			{"Return code", report("Return code: 3\nSignal: (none)\n"), -1, "", said},
			{"ExitCode", report("ExitCode: 3\nSignal: (none)\n"), -1, "", said},
			{"the exit line dropped", report("Signal: (none)\n"), -1, "", said},
			{"neither exit nor signal line", report(""), -1, "", said},
			{"an exit code that is no number", report("Exit Code: 3 (error)\nSignal: (none)\n"), -1, "", said},
			{"not a report: no Directory and Output lines", "Command: make", -1, "", nil},
		} {
			obs := readUpdate(t, d, qwenFinal(b.status, c.text, jsq("a\nb")))
			require.Len(t, obs, 1)
			o := obs[0]
			if c.exit < 0 {
				assert.Nil(t, o.Exit, "%s %s: an exit no recorded line states is not inferred", b.build, c.name)
			} else if assert.NotNil(t, o.Exit, "%s %s", b.build, c.name) {
				assert.Equal(t, c.exit, o.Exit.Code, "%s %s", b.build, c.name)
			}
			assert.Equal(t, c.signal, o.Signal, "%s %s", b.build, c.name)
			assert.Equal(t, c.want, o.Unrecognized, "%s %s", b.build, c.name)
		}
	}
}

// Qwen Code 0.12.0 (recorded) runs a command in a pseudo-terminal by
// default and sends xterm's buffer as the output, every row rendered
// untrimmed: each line but the last comes padded with spaces to the
// terminal's 80 columns. The padding is the terminal's blank cells, not
// bytes the command wrote. 0.15.10 (recorded) and 0.10.1 (recorded) send
// no such padding: a line's trailing spaces there are the command's.
func TestQwenXtermPadding(t *testing.T) {
	d := mustDialect(t, "qwen")
	C, F := accum.Combined, accum.Final
	done, yes := accum.StatusCompleted, accum.ShellYes
	pad := func(s string) string { return s + strings.Repeat(" ", 80-len(s)) }
	report := func(cmd, out, code string) string {
		return "Command: " + cmd + "\nDirectory: (root)\nOutput: " + out + "\nError: (none)\nExit Code: " + code + "\nSignal: 0\nProcess Group PGID: 31391"
	}
	// final is a final frame in the shape 0.12.0 sends (call_exit3_5 of
	// qwen-code-0.12.0_plain_full.ndjson); raw "" sends no rawOutput.
	final := func(id, content, raw string) string {
		f := `{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"completed","content":[{"type":"content","content":{"type":"text","text":` + jsq(content) + `}}],"_meta":{"toolName":"run_shell_command"}`
		if raw != "" {
			f += `,"rawOutput":` + jsq(raw)
		}
		return f + `}`
	}
	ended := func(id, cmd string, code int32, out string) []accum.Observation {
		return one(accum.Observation{ToolCallID: id, Shell: yes, Command: cmd, Status: done, Exit: ex(code, accum.ExitText, false), Texts: []accum.Text{txt(C, F, out)}})
	}
	exit3, exit3Raw := "printf 'a\\nb\\n'; exit 3", pad("a")+"\nb"
	stderr := "echo to-stdout; echo to-stderr >&2; echo more-stdout"
	stderrRaw := pad("to-stdout") + "\n" + pad("to-stderr") + "\nmore-stdout"
	wide, wideRaw := "printf '%0120d\\n' 7", strings.Repeat("0", 80)+"\n"+strings.Repeat("0", 39)+"7"
	trailing, trailingRaw := "printf 'x   \\ny\\n'", pad("x")+"\ny"
	var ticks, ticksRaw []string
	for i := 1; i <= 8; i++ {
		ticks = append(ticks, fmt.Sprintf("tick%d", i))
		ticksRaw = append(ticksRaw, pad(ticks[i-1]))
	}
	ticksRaw[len(ticksRaw)-1] = ticks[len(ticks)-1]
	cancelled := "Command was cancelled by user before it could complete. Below is the output before it was cancelled:"

	runObsCases(t, Bind(d, ParseVersion("0.12.0")), []obsCase{
		{name: "0.12.0 exit3: the padding to 80 columns is not output",
			update: final("call_exit3_5", report(exit3, exit3Raw, "3"), exit3Raw),
			want:   ended("call_exit3_5", exit3, 3, "a\nb")},
		{name: "0.12.0 stderr: every line but the last loses its padding",
			update: final("call_stderr_8", report(stderr, stderrRaw, "0"), stderrRaw),
			want:   ended("call_stderr_8", stderr, 0, "to-stdout\nto-stderr\nmore-stdout")},
		{name: "0.12.0 a line wider than the terminal stays wrapped at column 80",
			update: final("call_wide_2", report(wide, wideRaw, "0"), wideRaw),
			want:   ended("call_wide_2", wide, 0, wideRaw)},
		{name: "0.12.0 a line's own trailing spaces cannot be told from the padding",
			update: final("call_trailing_5", report(trailing, trailingRaw, "0"), trailingRaw),
			want:   ended("call_trailing_5", trailing, 0, "x\ny")},
		{name: "0.12.0 cancel: the output before the cancel loses its padding",
			update: final("call_cancel_35", cancelled+"\n"+strings.Join(ticksRaw, "\n"), strings.Join(ticksRaw, "\n")),
			want: one(accum.Observation{ToolCallID: "call_cancel_35", Shell: yes, Status: done, Cancelled: true, CancelNotice: cancelled,
				Texts: []accum.Text{txt(C, F, strings.Join(ticks, "\n"))}})},
		{name: "0.12.0 a final without rawOutput: the report's output loses its padding",
			update: final("call_exit3_5", report(exit3, exit3Raw, "3"), ""),
			want:   ended("call_exit3_5", exit3, 3, "a\nb")},
	})
	for _, build := range []string{"0.15.10", "0.10.1"} {
		want := ended("call_trailing_5", trailing, 0, "x   \ny")
		// Before 0.15.6 the report's Command line is the command as run.
		want[0].CommandFromTitle = !ParseVersion(build).Before("0.15.6")
		runObsCases(t, Bind(d, ParseVersion(build)), []obsCase{
			{name: build + " a line's trailing spaces are the command's",
				update: final("call_trailing_5", report(trailing, "x   \ny", "0"), "x   \ny"),
				want:   want},
		})
	}
}

// Qwen Code 0.12.0's terminal (80 columns, 30 rows, xterm's default
// scrollback of 1,000 lines) holds 1,030 rows: an output longer than that
// loses its head, and the wire says nothing of it. `seq 1 60000` (step big
// of qwen-code-0.12.0_plain_full.ndjson) came as rows 58972..60000, 1,029
// rows (the cursor's empty last row trimmed), each padded to 80 columns.
// A text that fills the buffer is a tail window: truncated.
func TestQwenXtermScrollbackWindow(t *testing.T) {
	d := mustDialect(t, "qwen")
	pad := func(s string) string { return s + strings.Repeat(" ", 80-len(s)) }
	rows := func(from, to int, padded bool) string {
		var ls []string
		for i := from; i <= to; i++ {
			s := fmt.Sprint(i)
			if padded && i < to {
				s = pad(s)
			}
			ls = append(ls, s)
		}
		return strings.Join(ls, "\n")
	}
	final := func(raw string) string {
		report := "Command: seq 1 60000\nDirectory: (root)\nOutput: " + raw + "\nError: (none)\nExit Code: 0\nSignal: 0\nProcess Group PGID: 31561"
		return `{"sessionUpdate":"tool_call_update","toolCallId":"call_big_17","status":"completed","content":[{"type":"content","content":{"type":"text","text":` + jsq(report) + `}}],"_meta":{"toolName":"run_shell_command"},"rawOutput":` + jsq(raw) + `}`
	}
	for _, c := range []struct {
		build, raw, text string
		truncated        bool
	}{
		{"0.12.0", rows(58972, 60000, true), rows(58972, 60000, false), true},
		{"0.12.0", rows(1, 1030, true), rows(1, 1030, false), true},
		{"0.12.0", rows(1, 1028, true), rows(1, 1028, false), false},
		// 0.15.10 holds 10,030 rows, and what it cuts it says it saved to
		// a file (TestQwenDisplayedResult): a text of 1,029 lines is whole.
		{"0.15.10", rows(58972, 60000, false), rows(58972, 60000, false), false},
	} {
		obs := readUpdate(t, Bind(d, ParseVersion(c.build)), final(c.raw))
		require.Len(t, obs, 1)
		require.Len(t, obs[0].Texts, 1)
		n := strings.Count(c.raw, "\n") + 1
		assert.True(t, c.text == obs[0].Texts[0].Text, "%s, %d lines: the text, without the padding", c.build, n)
		assert.Equal(t, c.truncated, obs[0].Texts[0].Truncated, "%s, %d lines", c.build, n)
	}
}

// TestQwenImageGen: Qwen Code 0.24.4 gives its image_gen tool the kind
// execute (chunks/image-gen-UIN6FN2N.js: ImageGenTool, "execute" /*
// Execute */), and names it in `_meta.toolName` on every frame: no shell
// call, and no shell it missed; run_shell_command still is one.
func TestQwenImageGen(t *testing.T) {
	d := mustDialect(t, "qwen")
	open := readUpdate(t, d, `{"sessionUpdate":"tool_call","toolCallId":"call_img_1","status":"pending","title":"ImageGen","content":[],"locations":[],"kind":"execute","rawInput":{},"_meta":{"toolName":"image_gen","provenance":"builtin","phase":"preparing"}}`)
	require.Len(t, open, 1)
	assert.Equal(t, accum.ShellNo, open[0].Shell)
	assert.Empty(t, open[0].Command)
	assert.Empty(t, open[0].Unrecognized)

	running := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"call_img_1","status":"in_progress","kind":"execute","title":"a red cube","rawInput":{"prompt":"a red cube","size":"1024*1024"},"_meta":{"toolName":"image_gen","provenance":"builtin"}}`)
	require.Len(t, running, 1)
	assert.Equal(t, accum.ShellNo, running[0].Shell)

	f, err := Read(d, []byte(`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","options":[],"toolCall":{"toolCallId":"call_img_1","status":"pending","title":"a red cube","kind":"execute","rawInput":{"prompt":"a red cube"},"_meta":{"toolName":"image_gen"}}}}`))
	require.NoError(t, err)
	require.Len(t, f.Observations, 1)
	assert.Equal(t, accum.ShellNo, f.Observations[0].Shell)
	assert.Empty(t, f.Observations[0].Unrecognized)

	shell := readUpdate(t, d, `{"sessionUpdate":"tool_call","toolCallId":"call_ok_2","status":"pending","title":"Shell","content":[],"locations":[],"kind":"execute","rawInput":{},"_meta":{"toolName":"run_shell_command","provenance":"builtin","phase":"preparing"}}`)
	require.Len(t, shell, 1)
	assert.Equal(t, accum.ShellYes, shell[0].Shell)
}

// TestQwenMonitor: Qwen Code 0.24.4's monitor tool (chunks/monitor-XCEGKLFN.js,
// MonitorTool, "execute" /* Execute */, parameters {command, description?,
// max_events?, idle_timeout_ms?, directory?}) spawns `bash -c <command>`
// detached and returns at once; every line the command prints goes to the
// model later as a notification, never to this call. Its result is Qwen's
// notice: llmContent "Monitor started.\nid: mon_...\ncommand: ...\n..." (the
// content), returnDisplay "Monitor started: <description> (mon_...)" (the
// rawOutput, a string), `_meta.toolName: "monitor"` on every frame (the
// ToolCallEmitter's emitStart and emitResult). Or, with no command running,
// "Monitor failed to start: E" / "Monitor failed: E", "Cannot start monitor:
// maximum concurrent monitors (N) reached. ..." / "Monitor rejected: too many
// concurrent monitors.", "Monitor was cancelled before it could start." /
// "Monitor cancelled.", all with a completed status (the tool returns no
// error). The frames are built from that source: no recording has them.
// A monitor is a shell command gone on in the background: none of these
// texts is output, no exit code is known.
func TestQwenMonitor(t *testing.T) {
	d := mustDialect(t, "qwen")
	meta := `"_meta":{"toolName":"monitor","provenance":"builtin"}`
	open := readUpdate(t, d, `{"sessionUpdate":"tool_call","toolCallId":"call_mon_1","status":"pending","title":"Monitor: Monitor: Watch the build log","content":[],"locations":[],"kind":"execute","rawInput":{"command":"tail -f build.log","description":"Watch the build log"},`+meta+`}`)
	require.Len(t, open, 1)
	assert.Equal(t, accum.ShellYes, open[0].Shell)
	assert.Equal(t, "tail -f build.log", open[0].Command)
	assert.Equal(t, "Watch the build log", open[0].Description)
	assert.True(t, open[0].Background, "a monitor's command runs in the background")

	final := func(status, content, display string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"call_mon_1","status":"` + status + `","content":[{"type":"content","content":{"type":"text","text":` + jsq(content) + `}}],` + meta + `,"rawOutput":` + jsq(display) + `}`
	}
	started := "Monitor started.\nid: mon_0f1e2d3c4b5a6978\ncommand: tail -f build.log\ndescription: Watch the build log\nmax_events: 1000\nidle_timeout: 300000ms\nEvents will be delivered as notifications. The monitor auto-stops after 1000 events or 300000ms of silence.\nTo inspect: /tasks (text) or the interactive Background tasks dialog (focus the footer Background tasks pill, then Enter \u2014 detail view + live updates)."
	for _, c := range []struct {
		name, status, content, display string
		failed, cancelled              bool
	}{
		{"started", "completed", started, "Monitor started: Watch the build log (mon_0f1e2d3c4b5a6978)", false, false},
		{"spawn failed", "completed", "Monitor failed to start: spawn /bin/bash ENOENT", "Monitor failed: spawn /bin/bash ENOENT", true, false},
		{"too many monitors", "completed", "Cannot start monitor: maximum concurrent monitors (5) reached. Stop an existing monitor first.", "Monitor rejected: too many concurrent monitors.", true, false},
		{"cancelled before it started", "completed", "Monitor was cancelled before it could start.", "Monitor cancelled.", false, true},
		{"a sandboxed start that failed", "failed", "Monitor failed to start: sandbox unavailable", "Monitor failed: sandbox unavailable", true, false},
	} {
		obs := readUpdate(t, d, final(c.status, c.content, c.display))
		require.Len(t, obs, 1, c.name)
		o := obs[0]
		assert.Equal(t, accum.ShellYes, o.Shell, c.name)
		assert.True(t, o.Background, c.name)
		assert.Empty(t, o.Texts, "%s: Qwen's notice is no output", c.name)
		assert.Nil(t, o.Exit, "%s: no exit code", c.name)
		assert.Empty(t, o.Command, "%s: the notice names no command", c.name)
		assert.Equal(t, c.failed, o.Failed, c.name)
		assert.Equal(t, c.cancelled, o.Cancelled, c.name)
		assert.Empty(t, o.Unrecognized, c.name)
	}

	// The user refused the ask: Qwen ends the call `failed` with its
	// error (acpAgent-GQCJ4KZY.js stopAfterPermissionCancel, `Tool
	// "${toolName}" was canceled by the user.`, sent by emitError without
	// rawOutput), as for run_shell_command: cancelled, not failed.
	refused := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"call_mon_1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"Tool \"monitor\" was canceled by the user."}}],`+meta+`}`)
	require.Len(t, refused, 1)
	assert.True(t, refused[0].Cancelled, "a refused monitor is cancelled")
	assert.False(t, refused[0].Failed, "a refused monitor did not fail")
	assert.Equal(t, `Tool "monitor" was canceled by the user.`, refused[0].CancelNotice)
	assert.Empty(t, refused[0].Texts)
	assert.True(t, refused[0].Background)

	f, err := Read(d, []byte(`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","options":[],"toolCall":{"toolCallId":"call_mon_1","status":"pending","title":"Monitor: Monitor: Watch the build log","kind":"execute","rawInput":{"command":"tail -f build.log","description":"Watch the build log"},`+meta+`}}}`))
	require.NoError(t, err)
	require.Len(t, f.Observations, 1)
	assert.Equal(t, "tail -f build.log", f.Observations[0].Command)
	assert.True(t, f.Observations[0].Background)
}

// TestQwenOtherToolWithACommandArgument: a tool `_meta.toolName` names
// other than Qwen's shell and monitor, of a kind that is not execute (an
// MCP or discovered tool, kind other or read, whose own arguments include
// a `command`), is no shell call, and no shell the dialect missed; a tool
// of kind execute under another name, or a frame without a kind, still
// reads as a shell (a renamed shell tool). No recording has one: the frames are in the shape of
// Qwen's tool calls, rawInput the tool's arguments.
func TestQwenOtherToolWithACommandArgument(t *testing.T) {
	d := mustDialect(t, "qwen")
	for _, c := range []struct {
		name, update string
		shell        accum.Shell
		command      string
	}{
		{"an MCP tool of kind other", `{"sessionUpdate":"tool_call","toolCallId":"call_mcp_1","status":"pending","title":"deploy","kind":"other","rawInput":{"command":"deploy prod","region":"eu"},"_meta":{"toolName":"deploy","provenance":"mcp"}}`, accum.ShellNo, ""},
		{"its update, which names its kind beside rawInput", `{"sessionUpdate":"tool_call_update","toolCallId":"call_mcp_1","status":"in_progress","kind":"other","rawInput":{"command":"deploy prod"},"_meta":{"toolName":"deploy"}}`, accum.ShellNo, ""},
		{"a tool of kind read", `{"sessionUpdate":"tool_call","toolCallId":"call_mcp_2","status":"pending","title":"logs","kind":"read","rawInput":{"command":"tail"},"_meta":{"toolName":"service_logs"}}`, accum.ShellNo, ""},
		{"a renamed shell of kind execute", `{"sessionUpdate":"tool_call","toolCallId":"call_sh_3","status":"pending","title":"Shell","kind":"execute","rawInput":{"command":"ls"},"_meta":{"toolName":"run_command"}}`, accum.ShellYes, "ls"},
		{"the shell without a kind", `{"sessionUpdate":"tool_call_update","toolCallId":"call_sh_4","status":"in_progress","rawInput":{"command":"ls"},"_meta":{"toolName":"run_shell_command"}}`, accum.ShellYes, "ls"},
		{"no kind: the command says shell", `{"sessionUpdate":"tool_call_update","toolCallId":"call_sh_6","status":"in_progress","rawInput":{"command":"ls"},"_meta":{"toolName":"run_command"}}`, accum.ShellYes, "ls"},
		{"no toolName: the command says shell", `{"sessionUpdate":"tool_call","toolCallId":"call_sh_5","status":"pending","title":"Shell","rawInput":{"command":"ls"}}`, accum.ShellYes, "ls"},
	} {
		obs := readUpdate(t, d, c.update)
		require.Len(t, obs, 1, c.name)
		assert.Equal(t, c.shell, obs[0].Shell, c.name)
		assert.Equal(t, c.command, obs[0].Command, c.name)
		assert.Empty(t, obs[0].Unrecognized, c.name)
	}
}

// TestQwenShownOutputIsTheReportsField: the display is the output when the
// report's own Output field (the line after Directory) holds it, never when
// only the command's text does: a heredoc that writes "Output: <words>" and
// "Error: ..." lines and prints nothing leaves Qwen's exit words in the
// display, which stay Qwen's.
// qwenNoteSkipped is the warning Qwen Code 0.23.4 appended to a git
// commit's result when it could not analyze the commit (recorded).
const qwenNoteSkipped = "AI attribution note skipped: could not analyze the commit diff (shallow clone, missing reflog for --amend, or partial `git diff` failure). Co-authored-by trailer is unaffected."

// TestQwenAttributionWarningAloneIsNoOutput: a commit that prints
// nothing (git commit -q) has an empty output, and Qwen's display is then
// its warning alone, with no blank line before it. It reads as the same
// final without the warning.
func TestQwenAttributionWarningAloneIsNoOutput(t *testing.T) {
	d, _ := Lookup("qwen")
	report := "Command: git commit -q -m x\nDirectory: (root)\nOutput: (empty)\nError: (none)\nExit Code: 0\nSignal: (none)\nProcess Group PGID: 7"
	read := func(content, display string) []accum.Observation {
		obs, err := readCase(d, qwenFinal("completed", content, jsq(display)), "")
		require.NoError(t, err)
		return obs
	}
	want := read(report, "")
	require.Len(t, want, 1)
	assert.Equal(t, want, read(report+"\n\n"+qwenNoteSkipped, qwenNoteSkipped))
	// A warning the report does not end with is no note of Qwen's: the
	// command printed it.
	got := read(report, qwenNoteSkipped)
	require.Len(t, got, 1)
	require.NotEmpty(t, got[0].Texts)
	assert.Equal(t, qwenNoteSkipped, got[0].Texts[0].Text)
}

func TestQwenShownOutputIsTheReportsField(t *testing.T) {
	const trailer = "\nError: (none)\nExit Code: 3\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 9"
	for _, tc := range []struct {
		name, content, display string
		out                    string
		ok                     bool
	}{
		{"the field holds it", "Command: printf 'Exit code 3'\nDirectory: /w\nOutput: Exit code 3" + trailer, "Exit code 3", "Exit code 3", true},
		{"a multi-line command holds it", "Command: cat <<EOF\nOutput: Command exited with code: 3\nError: (none)\nEOF\nexit 3\nDirectory: /w\nOutput: (empty)" + trailer, "Command exited with code: 3", "", false},
		{"an output with Error lines", "Command: sh x\nDirectory: /w\nOutput: a\nError: b" + trailer, "a\nError: b", "a\nError: b", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := qwenShownOutput(tc.content, tc.display)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.out, out)
		})
	}
}

// TestQwenOwnSedEdit: Qwen Code (0.21.2 to 0.24.4, recorded: commit-note
// c_edit) runs no process for a `sed -i` it can simulate on a file it has
// read: it writes the file itself and ends the call with the diff of its
// edit, the file's content before and after under rawOutput. None of it is
// output, and nothing says an exit status: no process ran.
func TestQwenOwnSedEdit(t *testing.T) {
	d := mustDialect(t, "qwen")
	obs := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"call_c_edit_2","status":"completed","content":[{"type":"diff","path":"/home/dev/.qwen/memories/MEMORY.md","oldText":"# Memory\n\n- old\n","newText":"# Memory\n\n- new\n"}],"_meta":{"toolName":"run_shell_command","provenance":"builtin"},"rawOutput":{"fileDiff":"Index: MEMORY.md\n===================================================================\n--- MEMORY.md\tCurrent\n+++ MEMORY.md\tProposed\n@@ -1,3 +1,3 @@\n # Memory\n \n-- old\n+- new\n","fileName":"MEMORY.md","filePath":"/home/dev/.qwen/memories/MEMORY.md","originalContent":"# Memory\n\n- old\n","newContent":"# Memory\n\n- new\n","diffStat":{"model_added_lines":1,"model_removed_lines":1,"model_added_chars":5,"model_removed_chars":5,"user_added_lines":0,"user_removed_lines":0,"user_added_chars":0,"user_removed_chars":0}}}`)
	require.Len(t, obs, 1)
	assert.Empty(t, obs[0].Texts, "the edit's diff and contents are no output")
	assert.Nil(t, obs[0].Exit, "no process ran")
	assert.False(t, obs[0].Failed)
	assert.Empty(t, obs[0].Unrecognized, "Qwen's edit display is understood")
	assert.NotEmpty(t, obs[0].Src.Notice, "said: Qwen made the edit itself")

	// An edit display beside a shell result is no shape any build sent:
	// the result is read as ever.
	both := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"type":"shell_result","output":"x\n","exitCode":0,"fileDiff":"d"}}`)
	require.Len(t, both, 1)
	require.NotNil(t, both[0].Exit)
	require.NotEmpty(t, both[0].Texts)
}

// A build that sends its shell_result as a JSON string (the object
// stringified) in rawOutput: the string is not 0.15's displayed output
// but the result itself, read as 0.24.4's object is, never as output.
// A command's own output of that shape, which the report's Output field
// shows word for word (0.15's display), stays output.
func TestQwenResultObjectAsString(t *testing.T) {
	d := mustDialect(t, "qwen")
	// 0.24.4's finals of `ls` and `printf 'a\nb\n'; exit 3` (qwen-code-0.24.4_plain_full).
	for _, c := range []struct{ name, content, object, status string }{
		{"exit 0", "Command: ls\nDirectory: (root)\nOutput: alpha.txt  beta.md  gamma.go  notes.txt\nError: (none)\nExit Code: 0\nSignal: (none)\nProcess Group PGID: 10897",
			`{"type":"shell_result","version":1,"text":"alpha.txt  beta.md  gamma.go  notes.txt","output":"alpha.txt  beta.md  gamma.go  notes.txt","directory":"/home/dev/work/proj","exitCode":0,"signal":null,"pid":10897,"error":null,"outcome":"completed","notices":[],"truncated":false,"outputFiles":[]}`,
			"completed"},
		{"exit 3", "Command: printf 'a\\nb\\n'; exit 3\nDirectory: (root)\nOutput: a\nb\nError: (none)\nExit Code: 3\nSignal: (none)\nProcess Group PGID: 11106",
			`{"type":"shell_result","version":1,"text":"a\nb","output":"a\nb","directory":"/home/dev/work/proj","exitCode":3,"signal":null,"pid":11106,"error":null,"outcome":"failed","notices":[],"truncated":false,"outputFiles":[]}`,
			"failed"},
		{"exit 3, without its type, the members reordered", "Command: printf 'a\\nb\\n'; exit 3\nDirectory: (root)\nOutput: a\nb\nError: (none)\nExit Code: 3\nSignal: (none)\nProcess Group PGID: 11106",
			`{"directory":"/home/dev/work/proj","exitCode":3,"signal":null,"output":"a\nb","outcome":"failed","truncated":false}`,
			"failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			frame := func(raw string) string {
				return `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"` + c.status + `","content":[{"type":"content","content":{"type":"text","text":` + jsonString(c.content) + `}}],"_meta":{"toolName":"run_shell_command","provenance":"builtin"},"rawOutput":` + raw + `}`
			}
			want := withoutProvenance(readUpdate(t, d, frame(c.object)))
			got := readUpdate(t, d, frame(jsonString(c.object)))
			require.Len(t, got, 1)
			for _, tx := range got[0].Texts {
				assert.NotContains(t, tx.Text, `"exitCode"`, "the result is not output")
			}
			assert.Equal(t, want, withoutProvenance(got), "the string reads as the object")
		})
	}
	// 0.15.10's final of a command that printed such an object: the
	// report shows it as its Output, so it is the output.
	printed := `{"type":"shell_result","output":"x","exitCode":3}`
	obs := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","content":[{"type":"content","content":{"type":"text","text":`+
		jsonString("Command: cat r.json\nDirectory: (root)\nOutput: "+printed+"\nError: (none)\nExit Code: 0\nSignal: 0\nProcess Group PGID: 15563")+
		`}}],"_meta":{"toolName":"run_shell_command"},"rawOutput":`+jsonString(printed)+`}`)
	require.Len(t, obs, 1)
	assert.Equal(t, []accum.Text{txt(accum.Combined, accum.Final, printed)}, obs[0].Texts)
	require.NotNil(t, obs[0].Exit)
	assert.EqualValues(t, 0, obs[0].Exit.Code)
}
