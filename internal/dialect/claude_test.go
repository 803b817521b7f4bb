package dialect

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/internal/accum"
)

func claudeDialect(t *testing.T) Dialect {
	d, ok := Lookup("claude")
	if !ok {
		t.Fatal("claude not registered")
	}
	return d
}

func TestClaudeDetect(t *testing.T) {
	for _, n := range []string{"@zed-industries/claude-code-acp", "@agentclientprotocol/claude-agent-acp", "claude-code-acp", "claude-agent-acp", "claude-code"} {
		if got := Detect(n).Info().Name; got != "claude" {
			t.Errorf("Detect(%q) = %s", n, got)
		}
	}
}

func TestClaudeUpdate(t *testing.T) {
	d := claudeDialect(t)
	C, S, F := accum.Combined, accum.Snapshot, accum.Final
	yes, no, pending, running, done, failed := accum.ShellYes, accum.ShellNo, accum.StatusPending, accum.StatusRunning, accum.StatusCompleted, accum.StatusFailed
	bash := `"_meta":{"claudeCode":{"toolName":"Bash"}}`
	// The first 30,000 characters of seq 1 60000, where the old Bash tool
	// cut it (claude-code-acp-0.11.0_plain_full: "...6221\n62").
	cut30k := claudeSeqHead(30000)
	runObsCases(t, d, []obsCase{
		{name: "first tool_call: title Terminal is not a command",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call","rawInput":{},"status":"pending","title":"Terminal","kind":"execute","content":[]}`,
			want:   one(accum.Observation{ToolCallID: "t1", Opens: true, Shell: yes, Status: pending})},
		{name: "second tool_call (old adapter): command, description content is not output",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call","rawInput":{"command":"ls","description":"List files"},"status":"pending","title":"` + "`ls`" + `","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"List files"}}]}`,
			want:   one(accum.Observation{ToolCallID: "t1", Opens: true, Shell: yes, Status: pending, Command: "ls", Description: "List files"})},
		{name: "backticked title is the command when rawInput has none",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call","rawInput":{},"status":"pending","title":"` + "`make`" + `","kind":"execute"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Opens: true, Shell: yes, Status: pending, Command: "make"})},
		{name: "with the capability: terminal content and terminal_info",
			update: `{"_meta":{"claudeCode":{"toolName":"Bash"},"terminal_info":{"terminal_id":"t1"}},"toolCallId":"t1","sessionUpdate":"tool_call","name":"Bash","rawInput":{},"status":"pending","title":"Terminal","kind":"execute","content":[{"type":"terminal","terminalId":"t1"}]}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Opens: true, Shell: yes, Status: pending})},
		{name: "status-less rawInput refinement",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call_update","rawInput":{"command":"npm test","description":"Run tests","timeout":2000},"title":"npm test"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Command: "npm test", Description: "Run tests"})},
		{name: "run_in_background input",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call_update","rawInput":{"command":"npm run dev","run_in_background":true}}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Command: "npm run dev", Background: true})},
		{name: "heartbeat carries no output",
			update: `{"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"in_progress","_meta":{"claudeCode":{"toolResponse":{"elapsedTimeSeconds":1}}}}`,
			want:   one(accum.Observation{ToolCallID: "t1", Status: running})},
		{name: "toolResponse with stderr empty: not a split (Claude merges stderr), stdout is the whole output",
			update: `{"_meta":{"claudeCode":{"toolResponse":{"stdout":"a\nerr","stderr":"","interrupted":false,"isImage":false},"toolName":"Bash"}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Texts: []accum.Text{txt(C, S, "a\nerr")}})},
		{name: "toolResponse with stderr: separate streams",
			update: `{"_meta":{"claudeCode":{"toolResponse":{"stdout":"a","stderr":"err","interrupted":false},"toolName":"Bash"}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Texts: []accum.Text{txt(accum.Stdout, F, "a"), txt(accum.Stderr, F, "err")}})},
		{name: "toolResponse interrupted is a cancellation",
			update: `{"_meta":{"claudeCode":{"toolResponse":{"stdout":"","stderr":"","interrupted":true},"toolName":"Bash"}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Cancelled: true})},
		{name: "toolResponse moved to the background by its timeout",
			update: `{"_meta":{"claudeCode":{"toolResponse":{"stdout":"start","stderr":"","interrupted":false,"backgroundTaskId":"b1","timedOutAfterMs":2000},"toolName":"Bash"}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Background: true, Texts: []accum.Text{txt(C, S, "start")}})},
		{name: "success with the capability: whole output in terminal_output is a snapshot",
			update: `{"_meta":{"terminal_output":{"terminal_id":"t1","data":"alpha\nbeta"}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes, Texts: []accum.Text{txt(C, S, "alpha\nbeta")}})},
		{name: "final with terminal_exit",
			update: `{"_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"t1","exit_code":0,"signal":null}},"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"completed"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: done, Exit: ex(0, accum.ExitTerminal, false)})},
		{name: "capability success with rawOutput plain string",
			update: `{"_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"t1","exit_code":0,"signal":null}},"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"ok\n"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: done, Exit: ex(0, accum.ExitTerminal, false), Texts: []accum.Text{txt(C, F, "ok\n")}})},
		{name: "Exit code header in terminal_output: exit from text, header not output",
			update: `{"_meta":{"terminal_output":{"terminal_id":"t1","data":"Exit code 3\na\nb"}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes, Exit: ex(3, accum.ExitText, false), Texts: []accum.Text{txt(C, S, "a\nb")}})},
		{name: "newer error: terminal_output_delta with header and terminal_exit",
			update: `{"_meta":{"terminal_output_delta":{"terminal_id":"t1","data":"Exit code 1\nboom"},"terminal_exit":{"terminal_id":"t1","exit_code":1,"signal":null}},"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"failed"}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes, Status: failed, Exit: ex(1, accum.ExitTerminal, false), Texts: []accum.Text{txt(C, F, "boom")}})},
		{name: "error without the capability: rawOutput with header, fenced content ignored",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"failed","rawOutput":"Exit code 127\nbash: x: command not found","content":[{"type":"content","content":{"type":"text","text":"` + "```\\nExit code 127\\nbash: x: command not found\\n```" + `"}}]}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: failed, Exit: ex(127, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "bash: x: command not found")}})},
		{name: "error with only fenced content",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"failed","content":[{"type":"content","content":{"type":"text","text":"` + "```\\nExit code 2\\nnope\\n```" + `"}}]}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: failed, Exit: ex(2, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "nope\n")}})},
		{name: "success without the capability: console fence, no exit code (unknown)",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"hello","content":[{"type":"content","content":{"type":"text","text":"` + "```console\\nhello\\n```" + `"}}]}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: done, Texts: []accum.Text{txt(C, F, "hello")}})},
		{name: "success output that starts like a header is output under completed",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"Exit code 5\nfrom my script"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: done, Texts: []accum.Text{txt(C, F, "Exit code 5\nfrom my script")}})},
		{name: "persisted-output: the preview, truncated, of at least the size it states",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"<persisted-output>\nOutput too large (365.1KB). Full output saved to: /x/t1.txt\n\nPreview (first 2KB):\n1\n2\n3\n...\n</persisted-output>"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: done, Texts: []accum.Text{{Stream: C, Kind: F, Text: "1\n2\n3\n", Truncated: true, Head: true, TotalBytes: 373811}}})},
		{name: "truncation trailer is removed, marks truncation and states the real size",
			update: `{"_meta":{"terminal_output":{"terminal_id":"t1","data":"1\n2\n\n[Output truncated (228894 bytes total): full output saved to /x/y.txt]"}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes, Texts: []accum.Text{{Stream: C, Kind: S, Text: "1\n2", Truncated: true, Head: true, TotalBytes: 228894}}})},
		{name: "older lines-truncated trailer (claude-code-acp 0.11.0) is removed and marks truncation",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"completed","rawOutput":` + jsonString(cut30k+"\n\n... [53779 lines truncated] ...") + `}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: done, Texts: []accum.Text{{Stream: C, Kind: F, Text: cut30k, Truncated: true, Head: true}}})},
		{name: "older lines-truncated trailer in toolResponse stdout (claude-code-acp 0.11.0)",
			update: `{"_meta":{"claudeCode":{"toolResponse":{"stdout":` + jsonString(cut30k+"\n\n... [53779 lines truncated] ...") + `,"stderr":"","interrupted":false,"isImage":false},"toolName":"Bash"}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Texts: []accum.Text{{Stream: C, Kind: S, Text: cut30k, Truncated: true, Head: true}}})},
		// claude-agent-acp 0.101.0 (probe Q3, toolu_claude_lines_trunc_21):
		// the command printed "body-l\n... [3 lines truncated] ..." (33
		// bytes, exit 0). The old Bash tool's trailer follows its first
		// 30,000 characters after a blank line; this is output.
		{name: "a short output that ends like the lines-truncated trailer is output (toolResponse)",
			update: `{"_meta":{"claudeCode":{"toolResponse":{"stdout":"body-l\n... [3 lines truncated] ...","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false},"toolName":"Bash"}},"toolCallId":"toolu_claude_lines_trunc_21","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_claude_lines_trunc_21", Shell: yes, Texts: []accum.Text{txt(C, S, "body-l\n... [3 lines truncated] ...")}})},
		{name: "a short output that ends like the lines-truncated trailer is output (terminal_output)",
			update: `{"_meta":{"terminal_output":{"terminal_id":"toolu_claude_lines_trunc_21","data":"body-l\n... [3 lines truncated] ..."}},"toolCallId":"toolu_claude_lines_trunc_21","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_claude_lines_trunc_21", TerminalID: "toolu_claude_lines_trunc_21", Shell: yes, Texts: []accum.Text{txt(C, S, "body-l\n... [3 lines truncated] ...")}})},
		{name: "the lines-truncated trailer after a blank line but fewer than 30,000 characters is output",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"1\n2\n62\n\n... [53779 lines truncated] ..."}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: done, Texts: []accum.Text{txt(C, F, "1\n2\n62\n\n... [53779 lines truncated] ...")}})},
		{name: "background start notice is not output",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"Command running in background with ID: bash_1. Output is being written to: /tmp/x.output"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: done, Background: true})},
		{name: "moved-to-background notice after output",
			update: `{"_meta":{"terminal_output":{"terminal_id":"t1","data":"start\nCommand did not complete within its 2s timeout and was moved to the background (ID: b1). Output is being written to: /tmp/b1.output."}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes, Background: true, Texts: []accum.Text{txt(C, S, "start")}})},
		{name: "older timeout text",
			update: `{` + bash + `,"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"failed","rawOutput":"Exit code 143\nstart\nCommand timed out after 2m 0.0s"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: failed, Exit: ex(143, accum.ExitText, false), TimedOut: true, Texts: []accum.Text{txt(C, F, "start")}})},
		{name: "only the Bash tool is a shell",
			update: `{"_meta":{"claudeCode":{"toolName":"BashOutput"}},"toolCallId":"t2","sessionUpdate":"tool_call","rawInput":{"bash_id":"b1"},"status":"pending","title":"Tail Logs","kind":"execute"}`,
			want:   one(accum.Observation{ToolCallID: "t2", Opens: true, Shell: no, Status: pending, Command: "Tail Logs"})},
		{name: "Read tool is not a shell",
			update: `{"_meta":{"claudeCode":{"toolName":"Read"}},"toolCallId":"t3","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"file body","kind":"read"}`,
			want:   one(accum.Observation{ToolCallID: "t3", Shell: no, Status: done, Texts: []accum.Text{txt(C, F, "file body")}})},
		{name: "v2 terminal_update: header stripped from the snapshot",
			update: `{"sessionUpdate":"terminal_update","terminalId":"t1","output":{"data":"RXhpdCBjb2RlIDEKYm9vbQ=="},"exitStatus":{"exitCode":1,"signal":null}}`,
			// The rest stays text, with the words removed beside it
			// (Text.Whole), which only text carries.
			want: one(accum.Observation{TerminalID: "t1", Shell: yes, Exit: ex(1, accum.ExitStatus, false), Texts: []accum.Text{txt(C, S, "boom")}})},
		{name: "v2 terminal_output_chunk", update: `{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"aGk="}`,
			want: one(accum.Observation{TerminalID: "t1", Shell: yes, Texts: []accum.Text{{Stream: C, Kind: accum.Delta, Bytes: []byte("hi")}}})},
		{name: "usage_update gives nothing", update: `{"sessionUpdate":"usage_update","used":5}`},
		// claude-agent-acp 0.101.0 on ACP v2 announces each terminal with
		// a bare terminal_update before the tool_call_update whose content
		// shows it (recorded: claude-agent-acp-0.101.0_v2_terminal-meta_full):
		// it says nothing about the command, and no call owns the terminal yet.
		{name: "v2 terminal_update that only announces the terminal gives nothing",
			update: `{"sessionUpdate":"terminal_update","terminalId":"toolu_ok_3"}`},
		// Its command is the rawInput.command of the tool_call_update the
		// adapter sends right after it, from the same report; a
		// session/resume replay sends it before the call shows the terminal.
		{name: "v2 terminal_update with only the command gives nothing",
			update: `{"sessionUpdate":"terminal_update","terminalId":"toolu_ok_3","command":"ls"}`},
		{name: "v2 terminal_update that offers terminal/cancel gives nothing",
			update: `{"sessionUpdate":"terminal_update","terminalId":"t1","command":"sleep 6","capabilities":{"cancel":{}}}`},
	})
}

func TestClaudePermission(t *testing.T) {
	d := claudeDialect(t)
	runObsCases(t, d, []obsCase{
		{name: "old adapter ask: no kind, backticked title, rawInput command",
			ask:  `{"toolCallId":"t1","rawInput":{"command":"ls /x","description":"List"},"title":"` + "`ls /x`" + `"}`,
			want: one(accum.Observation{ToolCallID: "t1", Shell: accum.ShellYes, Command: "ls /x", Description: "List", PermissionAsk: true})},
		{name: "new adapter ask with name Bash and terminal content",
			ask:  `{"toolCallId":"t1","name":"Bash","status":"pending","rawInput":{"command":"rm x"},"title":"rm x","kind":"execute","content":[{"type":"terminal","terminalId":"t1"}]}`,
			want: one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: accum.ShellYes, Status: accum.StatusPending, Command: "rm x", PermissionAsk: true})},
		{name: "ask text is the reason",
			ask:  `{"toolCallId":"t2","name":"WebFetch","title":"Fetch","kind":"fetch","content":[{"type":"content","content":{"type":"text","text":"Needs network"}}]}`,
			want: one(accum.Observation{ToolCallID: "t2", Shell: accum.ShellNo, PermissionAsk: true, ApprovalReason: "Needs network"})},
	})
}

type claudeStep struct {
	id, command, exit, output string
	truncated, bg, asked      bool
}

func checkClaudeRecording(t *testing.T, name string, steps []claudeStep) {
	calls, _ := replayRecording(t, claudeDialect(t), name)
	for _, s := range steps {
		c := findCall(t, calls, s.id)
		if c.shell != accum.ShellYes || !c.ended {
			t.Errorf("%s: shell %v ended %v", s.id, c.shell, c.ended)
		}
		if c.command != s.command {
			t.Errorf("%s: command %q, want %q", s.id, c.command, s.command)
		}
		if got := c.exitCode(); got != s.exit {
			t.Errorf("%s: exit %s, want %s", s.id, got, s.exit)
		}
		if c.bg != s.bg {
			t.Errorf("%s: background %v", s.id, c.bg)
		}
		if (c.asks > 0) != s.asked {
			t.Errorf("%s: %d asks, want asked=%v", s.id, c.asks, s.asked)
		}
		out, tr := c.output(accum.Combined)
		if s.output != "\x00" && out != s.output {
			t.Errorf("%s: output %q, want %q", s.id, out, s.output)
		}
		if tr != s.truncated {
			t.Errorf("%s: truncated %v", s.id, tr)
		}
		for _, tx := range c.texts {
			for _, bad := range []string{"Run step", "Exit code", "```", "persisted-output", "Command did not complete", "running in background", "Output truncated"} {
				if strings.Contains(tx.Text, bad) {
					t.Errorf("%s: %q in output", s.id, bad)
				}
			}
			if tx.Stream != accum.Combined {
				t.Errorf("%s: split stream reported though Claude merged stderr", s.id)
			}
		}
	}
}

func TestClaudeRecordingOldAdapterPlain(t *testing.T) {
	checkClaudeRecording(t, "claude-code-acp-0.16.2_plain.ndjson", []claudeStep{
		// Success without the capability: no exit code anywhere.
		{id: "toolu_ls_1", command: "ls", exit: "-", output: "alpha.txt\nbeta.md\ngamma.go"},
		{id: "toolu_exit3_4", command: `printf 'a\nb\n'; exit 3`, exit: "3", output: "a\nb", asked: true},
		{id: "toolu_stderr_9", command: "echo to-stdout; echo to-stderr >&2; echo more-stdout", exit: "-", output: "to-stdout\nmore-stdout\nto-stderr"},
		{id: "toolu_stderr_fail_12", command: "ls /nonexistent-dir-xyz", exit: "2", output: "ls: cannot access '/nonexistent-dir-xyz': No such file or directory", asked: true},
		{id: "toolu_slow_14", command: "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done", exit: "-", output: "line1\nline2\nline3\nline4\nline5", asked: true},
		{id: "toolu_big_22", command: "seq 1 40000", exit: "-", output: "\x00", truncated: true, asked: true},
		{id: "toolu_badutf8_26", command: `printf '\xff\xfe ok\n'`, exit: "-", output: "\ufffd\ufffd ok", asked: true},
		{id: "toolu_timeout_30", command: "echo start; sleep 6; echo finished-late", exit: "-", output: "", bg: true},
		// Claude reports the killed shell as "Exit code 1".
		{id: "toolu_signal_33", command: "echo before-kill; kill -9 $$", exit: "1", output: "before-kill", asked: true},
	})
	calls, _ := replayRecording(t, claudeDialect(t), "claude-code-acp-0.16.2_plain.ndjson")
	if len(calls) != 9 {
		t.Errorf("%d calls, want 9 (tool_call sent twice must not make two)", len(calls))
	}
	big := findCall(t, calls, "toolu_big_22")
	if out, _ := big.output(accum.Combined); !strings.HasPrefix(out, "1\n2\n3\n") || !strings.HasSuffix(out, "527\n") {
		t.Errorf("preview %q", out)
	}
}

func TestClaudeRecordingTerminalMeta(t *testing.T) {
	checkClaudeRecording(t, "claude-agent-acp-0.101.0_terminal-meta.ndjson", []claudeStep{
		{id: "toolu_ls_2", command: "ls", exit: "0", output: "alpha.txt\nbeta.md\ngamma.go"},
		{id: "toolu_exit3_6", command: `printf 'a\nb\n'; exit 3`, exit: "3", output: "a\nb", asked: true},
		{id: "toolu_stderr_9", command: "echo to-stdout; echo to-stderr >&2; echo more-stdout", exit: "0", output: "to-stdout\nto-stderr\nmore-stdout"},
		{id: "toolu_stderr_fail_12", command: "ls /nonexistent-dir-xyz", exit: "2", output: "ls: cannot access '/nonexistent-dir-xyz': No such file or directory", asked: true},
		{id: "toolu_slow_16", command: "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done", exit: "0", output: "line1\nline2\nline3\nline4\nline5", asked: true},
		{id: "toolu_big_20", command: "seq 1 40000", exit: "0", output: "\x00", truncated: true},
		{id: "toolu_badutf8_24", command: `printf '\xff\xfe ok\n'`, exit: "0", output: "\ufffd\ufffd ok"},
		// Moved to the background by its 2 s timeout; no exit code.
		{id: "toolu_timeout_27", command: "echo start; sleep 6; echo finished-late", exit: "-", output: "start", bg: true},
		{id: "toolu_signal_31", command: "echo before-kill; kill -9 $$", exit: "1", output: "before-kill", asked: true},
	})
}

// TestClaudeNotices: the adapters' refusal and cancel texts are notices,
// never output; the call is Cancelled and the notice is quoted in words.
func TestClaudeNotices(t *testing.T) {
	d := claudeDialect(t)
	yes, failed := accum.ShellYes, accum.StatusFailed
	const cancelText = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."
	cancelNotice := notice(cancelText)
	runObsCases(t, d, []obsCase{
		// The adapter then ends the call failed; a command that printed
		// the same words ends completed (WordsIfFailed).
		{name: "refusal in terminal_output is not output, unless the call ends completed",
			update: `{"_meta":{"terminal_output":{"terminal_id":"t1","data":"User refused permission to run tool"}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes, Cancelled: true, CancelNotice: "User refused permission to run tool", WordsIfFailed: true})},
		{name: "cancel notice in terminal_output is not output, unless the call ends completed",
			update: `{"_meta":{"terminal_output":{"terminal_id":"t1","data":` + jsonString(cancelText) + `}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes, Cancelled: true, CancelNotice: cancelNotice, WordsIfFailed: true})},
		{name: "nonExecutionKind user-rejected on the failed final",
			update: `{"_meta":{"claudeCode":{"toolName":"Bash","nonExecutionKind":"user-rejected"},"terminal_exit":{"terminal_id":"t1","exit_code":null,"signal":null}},"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"failed"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: failed, Cancelled: true})},
		{name: "nonExecutionKind permission-rule on the failed final",
			update: `{"_meta":{"claudeCode":{"toolName":"Bash","nonExecutionKind":"permission-rule"}},"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"failed"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: failed, Cancelled: true})},
		{name: "old adapter: refusal as rawOutput and fenced content",
			update: `{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"failed","rawOutput":"User refused permission to run tool","content":[{"type":"content","content":{"type":"text","text":"` + "```\\nUser refused permission to run tool\\n```" + `"}}]}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: failed, Cancelled: true, CancelNotice: "User refused permission to run tool"})},
		{name: "old adapter: refusal as content only",
			update: `{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"failed","content":[{"type":"content","content":{"type":"text","text":"` + "```\\nUser refused permission to run tool\\n```" + `"}}]}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: failed, Cancelled: true, CancelNotice: "User refused permission to run tool"})},
		{name: "Claude Code's interrupt marker is a notice",
			update: `{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"failed","rawOutput":"[Request interrupted by user for tool use]"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: failed, Cancelled: true, CancelNotice: "[Request interrupted by user for tool use]"})},
		{name: "a completed result whose output is the refusal's words is output: Claude refuses under failed",
			update: `{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"t1","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"User refused permission to run tool"}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: accum.StatusCompleted, Texts: []accum.Text{txt(accum.Combined, accum.Final, "User refused permission to run tool")}})},
		{name: "output that merely mentions a refusal stays output",
			update: `{"_meta":{"terminal_output":{"terminal_id":"t1","data":"log: User refused permission to run tool\n"}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes, Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "log: User refused permission to run tool\n")}})},
	})
}

// claudeSeqHead is the first n characters of `seq 1 60000`'s output.
func claudeSeqHead(n int) string {
	var b strings.Builder
	for i := 1; b.Len() < n; i++ {
		b.WriteString(strconv.Itoa(i) + "\n")
	}
	return b.String()[:n]
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// claude-code-acp's mcp__acp__Bash (the client owns the terminal): its
// result texts are notices around the terminal's output.
func TestClaudeClientTerminalBash(t *testing.T) {
	d := claudeDialect(t)
	final := func(text string) string {
		b, _ := json.Marshal(text)
		return `{"_meta":{"claudeCode":{"toolName":"mcp__acp__Bash"}},"toolCallId":"t","sessionUpdate":"tool_call_update","status":"completed","rawOutput":[{"type":"text","text":` + string(b) + `}],"content":[{"type":"content","content":{"type":"text","text":` + string(b) + `}}]}`
	}
	done := accum.StatusCompleted
	runObsCases(t, d, []obsCase{
		{
			name:   "the tool is a shell command",
			update: "{\"_meta\":{\"claudeCode\":{\"toolName\":\"mcp__acp__Bash\"}},\"toolCallId\":\"t\",\"sessionUpdate\":\"tool_call\",\"rawInput\":{\"command\":\"ls\"},\"status\":\"pending\",\"title\":\"`ls`\",\"kind\":\"execute\",\"content\":[]}",
			want:   one(accum.Observation{ToolCallID: "t", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "ls"}),
		},
		{
			name:   "Exited with code N: exit N, the header not output",
			update: final("Exited with code 3.Final output:\n\na\nb\n"),
			want: one(accum.Observation{ToolCallID: "t", Shell: accum.ShellYes, Status: done, Exit: ex(3, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "a\nb\n")}}),
		},
		{
			name:   "a signal",
			update: final("Interrupted by the user. Signal `SIGKILL`. Final output:\n\nbefore-kill\n"),
			want: one(accum.Observation{ToolCallID: "t", Shell: accum.ShellYes, Status: done, Signal: "SIGKILL",
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "before-kill\n")}}),
		},
		{
			name:   "a timeout",
			update: final("Timed out. New output:\n\nstart\n"),
			want: one(accum.Observation{ToolCallID: "t", Shell: accum.ShellYes, Status: done, TimedOut: true,
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "start\n")}}),
		},
		{
			name:   "the client cut the output: its tail, truncated, the note not output",
			update: final("Exited with code 0.Final output:\n\ntail\n\n\nCommand output was too long, so it was truncated to 5 bytes."),
			want: one(accum.Observation{ToolCallID: "t", Shell: accum.ShellYes, Status: done, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Text: "tail\n", Truncated: true}}}),
		},
		{
			name:   "the cancel notice",
			update: final("Tool cancelled by user"),
			want:   one(accum.Observation{ToolCallID: "t", Shell: accum.ShellYes, Status: done, Cancelled: true, CancelNotice: "Tool cancelled by user"}),
		},
		{
			name:   "started in the background",
			update: final("Command started in background with id: term-7"),
			want:   one(accum.Observation{ToolCallID: "t", Shell: accum.ShellYes, Status: done, Background: true}),
		},
	})
}

// TestClaudeMadeUpTerminalExit reads frames as claude-agent-acp 0.70.0
// sent them with _meta.terminal_output
// (test/testdata/recordings/agents/claude-agent-acp-0.70.0_terminal-meta_full.ndjson).
// Builds before 0.86.0 fill terminal_exit.exit_code with 1 for every
// result Claude Code flagged as an error and 0 for every other: that value
// is no exit code. The output's own "Exit code N" header is.
func TestClaudeMadeUpTerminalExit(t *testing.T) {
	d := claudeDialect(t)
	C, S, F := accum.Combined, accum.Snapshot, accum.Final
	yes, done, failed := accum.ShellYes, accum.StatusCompleted, accum.StatusFailed
	exit := func(id string, code, status string) string {
		return `{"_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"` + id + `","exit_code":` + code + `,"signal":null}},"toolCallId":"` + id + `","sessionUpdate":"tool_call_update","status":"` + status + `"`
	}
	exit3 := exit("toolu_exit3_5", "1", "failed") + `,"rawOutput":"Exit code 3\na\nb","content":[{"type":"terminal","terminalId":"toolu_exit3_5"}]}`
	for _, v := range []string{"0.70.0", "0.85.1"} {
		t.Run(v, func(t *testing.T) {
			runObsCases(t, Bind(d, ParseVersion(v)), []obsCase{
				{name: "the header is the exit code; terminal_exit 1 is not",
					update: exit3,
					want:   one(accum.Observation{ToolCallID: "toolu_exit3_5", TerminalID: "toolu_exit3_5", Shell: yes, Status: failed, Exit: ex(3, accum.ExitText, false), ExitSetAside: true, Texts: []accum.Text{txt(C, F, "a\nb")}})},
				{name: "the header on the terminal_output frame",
					update: `{"_meta":{"terminal_output":{"terminal_id":"toolu_exit3_5","data":"Exit code 3\na\nb"}},"toolCallId":"toolu_exit3_5","sessionUpdate":"tool_call_update"}`,
					want:   one(accum.Observation{ToolCallID: "toolu_exit3_5", TerminalID: "toolu_exit3_5", Shell: yes, Exit: ex(3, accum.ExitText, false), Texts: []accum.Text{txt(C, S, "a\nb")}})},
				{name: "a success: terminal_exit 0 is no proof (it is 0 for every result not flagged as an error)",
					update: exit("toolu_ok_2", "0", "completed") + `,"rawOutput":"alpha.txt\nbeta.md","content":[{"type":"terminal","terminalId":"toolu_ok_2"}]}`,
					want:   one(accum.Observation{ToolCallID: "toolu_ok_2", TerminalID: "toolu_ok_2", Shell: yes, Status: done, ExitSetAside: true, Texts: []accum.Text{txt(C, F, "alpha.txt\nbeta.md")}})},
				{name: "a command moved to the background by its timeout: terminal_exit 0 is made up",
					update: exit("toolu_timeout_26", "0", "completed") + `,"rawOutput":"Command did not complete within its 2s timeout and was moved to the background (ID: b6bk9prrn). Output is being written to: /tmp/x.output.","content":[{"type":"terminal","terminalId":"toolu_timeout_26"}]}`,
					want:   one(accum.Observation{ToolCallID: "toolu_timeout_26", TerminalID: "toolu_timeout_26", Shell: yes, Status: done, Background: true, ExitSetAside: true})},
				{name: "v2 terminal_update: the same made-up code as exitStatus is set aside too; the header is the exit",
					update: `{"sessionUpdate":"terminal_update","terminalId":"t1","output":{"data":"RXhpdCBjb2RlIDMKYm9vbQ=="},"exitStatus":{"exitCode":1,"signal":null}}`,
					want:   one(accum.Observation{TerminalID: "t1", Shell: yes, Exit: ex(3, accum.ExitText, false), ExitSetAside: true, Texts: []accum.Text{txt(C, S, "boom")}})},
				{name: "a rejected call: nothing ran, so no exit code",
					update: `{"_meta":{"claudeCode":{"toolName":"Bash","nonExecutionKind":"permission-rule"},"terminal_exit":{"terminal_id":"toolu_reject_32","exit_code":1,"signal":null}},"toolCallId":"toolu_reject_32","sessionUpdate":"tool_call_update","status":"failed","rawOutput":"User refused permission to run tool","content":[{"type":"terminal","terminalId":"toolu_reject_32"}]}`,
					want:   one(accum.Observation{ToolCallID: "toolu_reject_32", TerminalID: "toolu_reject_32", Shell: yes, Status: failed, Cancelled: true, CancelNotice: "User refused permission to run tool", ExitSetAside: true})},
			})
		})
	}
	// From 0.86.0, and for a build that is unknown or newer than any
	// studied, the adapter's terminal_exit is the command's.
	for _, v := range []string{"0.86.0", "0.101.0", "0.200.0", "", "not-a-version"} {
		t.Run("newest rules for "+v, func(t *testing.T) {
			runObsCases(t, Bind(d, ParseVersion(v)), []obsCase{
				{name: "terminal_exit is the exit code",
					update: exit("toolu_exit3_8", "3", "failed") + `,"rawOutput":"Exit code 3\na\nb","content":[{"type":"terminal","terminalId":"toolu_exit3_8"}]}`,
					want:   one(accum.Observation{ToolCallID: "toolu_exit3_8", TerminalID: "toolu_exit3_8", Shell: yes, Status: failed, Exit: ex(3, accum.ExitTerminal, false), Texts: []accum.Text{txt(C, F, "a\nb")}})},
			})
		})
	}
	runObsCases(t, d, []obsCase{
		{name: "the abort line after an interrupted command's output is a notice",
			update: `{"_meta":{"terminal_output":{"terminal_id":"t1","data":"tick1\ntick2\n[Command was aborted before completion]"}},"toolCallId":"t1","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes, Cancelled: true, CancelNotice: "[Command was aborted before completion]", Texts: []accum.Text{txt(C, S, "tick1\ntick2")}})},
	})
}

// TestClaudeReplayedTerminalExit: from 0.86.0 claude-agent-acp takes a
// success's exit code 0 from Claude Code's structured result, which says
// when a nonzero exit was read as a success (returnCodeInterpretation:
// then exit_code null). A session/load replay has no structured result,
// and the adapter fills in 0 for every result not flagged as an error:
// grep's exit 1 "No matches found" too. The replay renders the result
// whole, restating the terminal content item that live frames leave out
// (the adapter's field tracker drops it there as unchanged): a 0 beside
// that item is made up, no exit evidence, and not said to be set aside
// (the call it restates ended live; a reason changed by the replay alone
// would revise it for nothing). A nonzero exit_code is the "Exit code N"
// header's, live or replayed. Frames from
// claude-agent-acp-0.101.0_terminal-meta_load-quiet (toolu_nomatch_7,
// toolu_silent_3) and _load (toolu_exit3_8).
func TestClaudeReplayedTerminalExit(t *testing.T) {
	yes, done, failed := accum.ShellYes, accum.StatusCompleted, accum.StatusFailed
	final := func(id, code, status, content string) string {
		return `{"_meta": {"claudeCode": {"toolName": "Bash"}, "terminal_exit": {"terminal_id": "` + id + `", "exit_code": ` + code + `, "signal": null}}, "toolCallId": "` + id + `", "sessionUpdate": "tool_call_update", "status": "` + status + `"` + content + `}`
	}
	item := func(id string) string { return `, "content": [{"type": "terminal", "terminalId": "` + id + `"}]` }
	for _, v := range []string{"0.86.0", "0.101.0", ""} {
		t.Run("build "+v, func(t *testing.T) {
			runObsCases(t, Bind(claudeDialect(t), ParseVersion(v)), []obsCase{
				{name: "replayed grep without a match (exit 1): the 0 is made up",
					update: final("toolu_nomatch_7", "0", "completed", item("toolu_nomatch_7")),
					want:   one(accum.Observation{ToolCallID: "toolu_nomatch_7", TerminalID: "toolu_nomatch_7", Shell: yes, Status: done})},
				{name: "replayed true (exit 0): the 0 is made up all the same",
					update: final("toolu_silent_3", "0", "completed", item("toolu_silent_3")),
					want:   one(accum.Observation{ToolCallID: "toolu_silent_3", TerminalID: "toolu_silent_3", Shell: yes, Status: done})},
				{name: "replayed exit 3: the header's code is the command's",
					update: final("toolu_exit3_8", "3", "failed", item("toolu_exit3_8")),
					want:   one(accum.Observation{ToolCallID: "toolu_exit3_8", TerminalID: "toolu_exit3_8", Shell: yes, Status: failed, Exit: ex(3, accum.ExitTerminal, false)})},
				{name: "live success: the 0 is Claude Code's",
					update: final("toolu_silent_3", "0", "completed", ""),
					want:   one(accum.Observation{ToolCallID: "toolu_silent_3", Shell: yes, Status: done, Exit: ex(0, accum.ExitTerminal, false)})},
				{name: "live grep without a match: null",
					update: final("toolu_nomatch_7", "null", "completed", ""),
					want:   one(accum.Observation{ToolCallID: "toolu_nomatch_7", Shell: yes, Status: done})},
			})
		})
	}
}

// TestClaudeReplayedOutputLikeItsNotices: claude-agent-acp 0.101.0 replays
// a loaded session (session/load) without toolResponse, so the only text
// of a call is its terminal_output, and then `completed` with
// terminal_exit 0. These frames are from a real replay (probe Q,
// claude-agent-acp-0.101.0_terminal-meta_probeq_load) of commands that
// printed lines like Claude's notices and exited 0. Each notice is read
// only in the shape and place Claude really writes it: a timeout under
// an error's "Exit code N" header, the background notice as the last
// line with the task's ID, the truncation note with the file it saved.
func TestClaudeReplayedOutputLikeItsNotices(t *testing.T) {
	d := Bind(claudeDialect(t), ParseVersion("0.101.0"))
	yes, C, S := accum.ShellYes, accum.Combined, accum.Snapshot
	out := func(id, data string) obsCase {
		return obsCase{name: id,
			update: `{"_meta":{"terminal_output":{"terminal_id":"` + id + `","data":` + jsonString(data) + `}},"toolCallId":"` + id + `","sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: id, TerminalID: id, Shell: yes, Texts: []accum.Text{txt(C, S, data)}})}
	}
	runObsCases(t, d, []obsCase{
		out("toolu_claude_tail_timeout_65", "body-t\nCommand timed out after 2s"),
		out("toolu_claude_tail_bg_74", "body-b\nCommand did not complete within its 2s timeout and was moved to the background.\nafter-bg"),
		out("toolu_claude_tail_trunc_79", "body-c\n[Output truncated (999 bytes total)]"),
		// claude-agent-acp-0.101.0_terminal-meta_probeq3, replayed.
		out("toolu_pi_timedout_35", "body-m\n\nCommand timed out after 2 seconds"),
	})
}

// TestClaudeCwdResetNotice: after a command that changed directory
// (`cd /tmp && pwd`) Claude Code appends "Shell cwd was reset to DIR" (the
// agent's work directory) to the command's stderr, and the adapters send
// it at the end of the output: a notice, never output. Frames from
// claude-agent-acp-0.101.0_terminal-meta_probeu (live, then replayed by
// session/load) and claude-code-acp-0.16.2_plain_probeu (probe U).
func TestClaudeCwdResetNotice(t *testing.T) {
	d := Bind(claudeDialect(t), ParseVersion("0.101.0"))
	yes, done, C, S, F := accum.ShellYes, accum.StatusCompleted, accum.Combined, accum.Snapshot, accum.Final
	runObsCases(t, d, []obsCase{
		{name: "claude-agent-acp: toolResponse stderr",
			update: `{"_meta": {"claudeCode": {"toolResponse": {"stdout": "/tmp", "stderr": "\nShell cwd was reset to /home/dev/work/proj", "interrupted": false, "isImage": false, "noOutputExpected": false}, "toolName": "Bash"}}, "toolCallId": "toolu_cd_30", "sessionUpdate": "tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_cd_30", Shell: yes, Texts: []accum.Text{txt(C, S, "/tmp")}})},
		{name: "claude-agent-acp: terminal_output, after a blank line",
			update: `{"_meta": {"terminal_output": {"terminal_id": "toolu_cd_30", "data": "/tmp\n\nShell cwd was reset to /home/dev/work/proj"}}, "toolCallId": "toolu_cd_30", "sessionUpdate": "tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_cd_30", TerminalID: "toolu_cd_30", Shell: yes, Texts: []accum.Text{txt(C, S, "/tmp")}})},
		{name: "claude-agent-acp: terminal_output replayed by session/load",
			update: `{"_meta": {"terminal_output": {"terminal_id": "toolu_cd_30", "data": "/tmp\nShell cwd was reset to /home/dev/work/proj"}}, "toolCallId": "toolu_cd_30", "sessionUpdate": "tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_cd_30", TerminalID: "toolu_cd_30", Shell: yes, Texts: []accum.Text{txt(C, S, "/tmp")}})},
		{name: "claude-code-acp: toolResponse stderr",
			update: `{"_meta": {"claudeCode": {"toolResponse": {"stdout": "/tmp", "stderr": "Shell cwd was reset to /home/dev/work/proj", "interrupted": false, "isImage": false, "noOutputExpected": false}, "toolName": "Bash"}}, "toolCallId": "toolu_cd_38", "sessionUpdate": "tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_cd_38", Shell: yes, Texts: []accum.Text{txt(C, S, "/tmp")}})},
		{name: "claude-code-acp: rawOutput",
			update: `{"_meta": {"claudeCode": {"toolName": "Bash"}}, "toolCallId": "toolu_cd_38", "sessionUpdate": "tool_call_update", "status": "completed", "rawOutput": "/tmp\nShell cwd was reset to /home/dev/work/proj", "content": [{"type": "content", "content": {"type": "text", "text": "/tmp\nShell cwd was reset to /home/dev/work/proj"}}]}`,
			want:   one(accum.Observation{ToolCallID: "toolu_cd_38", Shell: yes, Status: done, Texts: []accum.Text{txt(C, F, "/tmp")}})},
		// Only that shape: the last line, a whole line, an absolute path.
		{name: "the words not on the last line are output",
			update: `{"_meta": {"terminal_output": {"terminal_id": "t1", "data": "Shell cwd was reset to /x\nmore"}}, "toolCallId": "t1", "sessionUpdate": "tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes, Texts: []accum.Text{txt(C, S, "Shell cwd was reset to /x\nmore")}})},
		{name: "the words inside a line are output",
			update: `{"_meta": {"terminal_output": {"terminal_id": "t1", "data": "log: Shell cwd was reset to /x"}}, "toolCallId": "t1", "sessionUpdate": "tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes, Texts: []accum.Text{txt(C, S, "log: Shell cwd was reset to /x")}})},
		{name: "not a path: output",
			update: `{"_meta": {"terminal_output": {"terminal_id": "t1", "data": "a\nShell cwd was reset to somewhere"}}, "toolCallId": "t1", "sessionUpdate": "tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes, Texts: []accum.Text{txt(C, S, "a\nShell cwd was reset to somewhere")}})},
	})
}

// TestClaudeClientTerminalWordsOnlyItsOwn: the header and notices of
// claude-code-acp's client-terminal Bash (mcp__acp__Bash) are that tool's
// only. The Bash tool's output with the same words is what the command
// printed: probe U's `printf 'Exited with code 4.Final output:\n\nreal\n'`
// (exit 0), replayed by session/load without toolResponse
// (claude-code-acp-0.16.2_plain_probeu2, claude-agent-acp-0.101.0_terminal-meta_probeu2).
func TestClaudeClientTerminalWordsOnlyItsOwn(t *testing.T) {
	d := Bind(claudeDialect(t), ParseVersion("0.101.0"))
	yes, done, C, S, F := accum.ShellYes, accum.StatusCompleted, accum.Combined, accum.Snapshot, accum.Final
	const out = "Exited with code 4.Final output:\n\nreal"
	bashFinal := func(id, text string) obsCase {
		return obsCase{name: text,
			update: `{"_meta": {"claudeCode": {"toolName": "Bash"}}, "toolCallId": "` + id + `", "sessionUpdate": "tool_call_update", "status": "completed", "rawOutput": ` + jsonString(text) + `, "content": [{"type": "content", "content": {"type": "text", "text": ` + jsonString(text) + `}}]}`,
			want:   one(accum.Observation{ToolCallID: id, Shell: yes, Status: done, Texts: []accum.Text{txt(C, F, text)}})}
	}
	runObsCases(t, d, []obsCase{
		bashFinal("toolu_claude_term_47", out),
		{name: "claude-agent-acp's replayed terminal_output",
			update: `{"_meta": {"terminal_output": {"terminal_id": "toolu_claude_term_39", "data": ` + jsonString(out) + `}}, "toolCallId": "toolu_claude_term_39", "sessionUpdate": "tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "toolu_claude_term_39", TerminalID: "toolu_claude_term_39", Shell: yes, Texts: []accum.Text{txt(C, S, out)}})},
		bashFinal("t1", "Timed out. New output:\n\nstart\n"),
		bashFinal("t1", "Command started in background with id: term-7"),
		bashFinal("t1", "Tool cancelled by user"),
	})
}

// TestClaudeClientTerminalResultItems: claude-code-acp 0.16.2's
// client-terminal Bash (mcp__acp__Bash) sends its result as MCP text
// items in rawOutput. Replayed by session/load there is nothing else (no
// terminal requests): the header is the exit code, the rest the output.
// Live, the header says the timeout the client's answers do not (they
// say SIGTERM). Frames from probe U (claude-code-acp-0.16.2_client-terminal_probeu,
// lines 323-324, and _probeu7, lines 39-40).
func TestClaudeClientTerminalResultItems(t *testing.T) {
	d := claudeDialect(t)
	yes, done, C, F := accum.ShellYes, accum.StatusCompleted, accum.Combined, accum.Final
	final := func(id, text string) string {
		return `{"_meta": {"claudeCode": {"toolName": "mcp__acp__Bash"}}, "toolCallId": "` + id + `", "sessionUpdate": "tool_call_update", "status": "completed", "rawOutput": [{"type": "text", "text": ` + jsonString(text) + `}]}`
	}
	runObsCases(t, d, []obsCase{
		{name: "replayed exit 0 and its output",
			update: final("toolu_heredoc_18", "Exited with code 0.Final output:\n\nline one\nline two\nafter-heredoc\n"),
			want: one(accum.Observation{ToolCallID: "toolu_heredoc_18", Shell: yes, Status: done, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{txt(C, F, "line one\nline two\nafter-heredoc\n")}})},
		{name: "replayed exit 3 without output",
			update: final("toolu_exit_bare_24", "Exited with code 3.Final output:\n\n"),
			want:   one(accum.Observation{ToolCallID: "toolu_exit_bare_24", Shell: yes, Status: done, Exit: ex(3, accum.ExitText, false)})},
		{name: "live timeout",
			update: final("toolu_timeout_6", "Timed out. New output:\n\nstart\n"),
			want: one(accum.Observation{ToolCallID: "toolu_timeout_6", Shell: yes, Status: done, TimedOut: true,
				Texts: []accum.Text{txt(C, F, "start\n")}})},
		{name: "the Bash tool's result is a string, never items",
			update: `{"_meta": {"claudeCode": {"toolName": "Bash"}}, "toolCallId": "t1", "sessionUpdate": "tool_call_update", "status": "completed", "rawOutput": [{"type": "text", "text": "Exited with code 3.Final output:\n\n"}]}`,
			want:   one(accum.Observation{ToolCallID: "t1", Shell: yes, Status: done})},
	})
}

// TestClaudeHeaderAgreesWithTerminalExit: Claude's "Exit code N" header
// starts the text of a command that failed with N, and claude-agent-acp
// (from 0.86.0) sends that N as terminal_exit too. A frame whose
// terminal_exit says otherwise carries a command's output that starts
// with those words: probe U's printf 'Exit code 3\n...' (exit 0), as a
// session/load replay sends it (terminal_output, then terminal_exit 0),
// here in one frame.
func TestClaudeHeaderAgreesWithTerminalExit(t *testing.T) {
	d := Bind(claudeDialect(t), ParseVersion("0.101.0"))
	yes, failed, C, S := accum.ShellYes, accum.StatusFailed, accum.Combined, accum.Snapshot
	const out = "Exit code 3\nCommand exited with code 2\nOutput: x\nExit Code: 5\nSignal: 9"
	frame := func(code, status string) string {
		return `{"_meta": {"claudeCode": {"toolName": "Bash"}, "terminal_output": {"terminal_id": "toolu_fake_head_12", "data": ` + jsonString(out) + `}, "terminal_exit": {"terminal_id": "toolu_fake_head_12", "exit_code": ` + code + `, "signal": null}}, "toolCallId": "toolu_fake_head_12", "sessionUpdate": "tool_call_update", "status": "` + status + `"}`
	}
	runObsCases(t, d, []obsCase{
		{name: "terminal_exit 0: the line is output",
			update: frame("0", "failed"),
			want: one(accum.Observation{ToolCallID: "toolu_fake_head_12", TerminalID: "toolu_fake_head_12", Shell: yes, Status: failed,
				Exit: ex(0, accum.ExitTerminal, false), Texts: []accum.Text{txt(C, accum.Final, out)}})},
		{name: "terminal_exit 3: the header",
			update: frame("3", "failed"),
			want: one(accum.Observation{ToolCallID: "toolu_fake_head_12", TerminalID: "toolu_fake_head_12", Shell: yes, Status: failed,
				Exit: ex(3, accum.ExitTerminal, false), Texts: []accum.Text{txt(C, accum.Final, out[len("Exit code 3\n"):])}})},
		{name: "no terminal_exit: the header",
			update: `{"_meta": {"terminal_output": {"terminal_id": "t1", "data": ` + jsonString(out) + `}}, "toolCallId": "t1", "sessionUpdate": "tool_call_update"}`,
			want: one(accum.Observation{ToolCallID: "t1", TerminalID: "t1", Shell: yes,
				Exit: ex(3, accum.ExitText, false), Texts: []accum.Text{txt(C, S, out[len("Exit code 3\n"):])}})},
	})
}

// TestClaudePersistedOutputStatesItsSize: a session/load replay sends only
// Claude Code's <persisted-output> preview (no toolResponse with
// persistedOutputSize); its "Output too large (148KB)" states the whole
// output's size, rounded to a tenth of a KB: at least 147.95 KB, the
// bytes the stream then reports (probe U,
// claude-agent-acp-0.101.0_terminal-meta_probeu line 265; the command
// printed 151507 bytes).
func TestClaudePersistedOutputStatesItsSize(t *testing.T) {
	d := Bind(claudeDialect(t), ParseVersion("0.101.0"))
	line := strings.Repeat("x", 100)
	preview := strings.Repeat(line+"\n", 19)
	data := "<persisted-output>\nOutput too large (148KB). Full output saved to: /home/dev/.claude/projects/-home-dev-work-proj/cd773688-9a24-42e4-87be-a34fda943819/tool-results/bauy08yv7.txt\n\nPreview (first 2KB):\n" + preview + "...\n</persisted-output>"
	sized := func(text, size string, total int64) obsCase {
		d := strings.Replace(data, "(148KB)", "("+size+")", 1)
		return obsCase{name: size,
			update: `{"_meta": {"terminal_output": {"terminal_id": "toolu_big150_43", "data": ` + jsonString(d) + `}}, "toolCallId": "toolu_big150_43", "sessionUpdate": "tool_call_update"}`,
			want: one(accum.Observation{ToolCallID: "toolu_big150_43", TerminalID: "toolu_big150_43", Shell: accum.ShellYes,
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Snapshot, Text: text, Truncated: true, Head: true, TotalBytes: total}}})}
	}
	runObsCases(t, d, []obsCase{
		sized(preview, "148KB", 151500), // 147.95 * 1024, rounded down
		sized(preview, "365.1KB", 373811),
		sized(preview, "1.2MB", 1205862),
		sized(preview, "900B", 0), // no more than the preview: says nothing
		sized(preview, "lots", 0),
	})
}

// TestClaudeV2TerminalText: on ACP v2 claude-agent-acp (0.101.0) sends
// what v1 sends as `_meta.terminal_output.data` as a terminal_update's
// base64 `output.data` (recorded: claude-agent-acp-0.101.0_v2_terminal-meta_full).
// The same text holds the same notices and trailers, read the same way:
// never output.
func TestClaudeV2TerminalText(t *testing.T) {
	d := claudeDialect(t)
	C, S := accum.Combined, accum.Snapshot
	yes := accum.ShellYes
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	up := func(text string) string {
		return `{"sessionUpdate":"terminal_update","terminalId":"t1","output":{"data":"` + b64(text) + `"}}`
	}
	bytesOf := func(s string) accum.Text { return accum.Text{Stream: C, Kind: S, Bytes: []byte(s)} }
	const cancelText = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."
	runObsCases(t, d, []obsCase{
		{name: "the output alone", update: up("alpha.txt\nbeta.md"),
			want: one(accum.Observation{TerminalID: "t1", Shell: yes, Texts: []accum.Text{bytesOf("alpha.txt\nbeta.md")}})},
		{name: "the Exit code header is the exit, not output", update: up("Exit code 4\nafter-cancel"),
			want: one(accum.Observation{TerminalID: "t1", Shell: yes, Exit: ex(4, accum.ExitText, false), Texts: []accum.Text{txt(C, S, "after-cancel")}})},
		{name: "the refusal is a notice, unless the call ends completed", update: up("User refused permission to run tool"),
			want: one(accum.Observation{TerminalID: "t1", Shell: yes, Cancelled: true, CancelNotice: "User refused permission to run tool", WordsIfFailed: true})},
		{name: "the cancel notice is a notice, unless the call ends completed", update: up(cancelText),
			want: one(accum.Observation{TerminalID: "t1", Shell: yes, Cancelled: true, CancelNotice: notice(cancelText), WordsIfFailed: true})},
		{name: "the truncation trailer marks a head and states the size",
			update: up("1\n2\n\n[Output truncated (348894 bytes total): full output saved to /x/y.txt]"),
			want:   one(accum.Observation{TerminalID: "t1", Shell: yes, Texts: []accum.Text{{Stream: C, Kind: S, Bytes: []byte("1\n2"), Truncated: true, Head: true, TotalBytes: 348894}}})},
		{name: "the moved-to-background notice is no output",
			update: up("start\nCommand did not complete within its 2s timeout and was moved to the background (ID: b1). Output is being written to: /tmp/b1.output."),
			want:   one(accum.Observation{TerminalID: "t1", Shell: yes, Background: true, Texts: []accum.Text{txt(C, S, "start")}})},
		// A session/resume replay (replayFrom start) sends exitStatus 0
		// for every result Claude Code did not flag as an error (the
		// adapter's `exitCode = isError ? undefined : 0` without the
		// structured result), in a terminal_update before the
		// tool_call_update that restates the terminal item: that 0 is
		// evidence only live. A nonzero code is the header's, replayed too.
		{name: "exitStatus 0 is evidence only live",
			update: `{"sessionUpdate":"terminal_update","terminalId":"t1","exitStatus":{"exitCode":0}}`,
			want:   one(accum.Observation{TerminalID: "t1", Shell: yes, Exit: ex(0, accum.ExitStatus, false), ExitLiveOnly: true})},
		{name: "a nonzero exitStatus is evidence replayed too",
			update: `{"sessionUpdate":"terminal_update","terminalId":"t1","exitStatus":{"exitCode":3}}`,
			want:   one(accum.Observation{TerminalID: "t1", Shell: yes, Exit: ex(3, accum.ExitStatus, false)})},
		{name: "bytes that are not UTF-8 are kept, only the header read",
			update: `{"sessionUpdate":"terminal_update","terminalId":"t1","output":{"data":"` + base64.StdEncoding.EncodeToString([]byte("Exit code 2\n\xff\xfe")) + `"}}`,
			want:   one(accum.Observation{TerminalID: "t1", Shell: yes, Exit: ex(2, accum.ExitText, false), Texts: []accum.Text{bytesOf("\xff\xfe")}})},
	})
}

// TestClaudeOldClaudeCode: claude-code-acp 0.8.0 and 0.9.0 bundle Claude
// Code 0.1.27 (@anthropic-ai/claude-agent-sdk), which writes none of the
// words newer builds add to a Bash result: no "Exit code N" header over a
// failure (the failed result is the output alone, fenced in the content
// text, with no exit code anywhere), no "(Bash completed with no
// output)", no moved-to-background notice (its timeout notice is
// "Command running in background with ID: X"), and its interrupt line is
// "<error>Command was aborted before completion</error>"; the adapter
// adds neither claude-agent-acp's bracketed interrupt line nor its
// truncation note. It sends no toolResponse, so nothing else tells those
// words from output: there they are what the command printed. Frames
// from claude-code-acp-0.8.0_plain_tricky-notes (0.9.0 sends the same),
// each step's command printing the words and exiting 0 (n_hdr_fail: exit
// 5), and from
// claude-code-acp-0.11.0_plain_tricky-notes (n_hdr_fail under the header
// Claude Code 0.1.57 writes).
func TestClaudeOldClaudeCode(t *testing.T) {
	d := claudeDialect(t)
	C, F := accum.Combined, accum.Final
	done, failed := accum.StatusCompleted, accum.StatusFailed
	final := func(id, status, text string) string {
		return `{"toolCallId": "` + id + `", "sessionUpdate": "tool_call_update", "status": "` + status + `", "content": [{"type": "content", "content": {"type": "text", "text": ` + jsonString(text) + `}}]}`
	}
	// These builds put _meta.claudeCode on every Bash result (a final
	// with no _meta, on a session that names no build, is claude-code-acp
	// before 0.6.9's: TestClaudePreSDKFinals).
	metaFinal := func(id, status, text string) string {
		return `{"_meta": {"claudeCode": {"toolName": "Bash"}}, ` + final(id, status, text)[1:]
	}
	kept := func(v, id, text string) obsCase {
		return obsCase{name: "build " + v + ": " + text, update: final(id, "completed", text),
			want: one(accum.Observation{ToolCallID: id, Status: done, Texts: []accum.Text{txt(C, F, text)}})}
	}
	// The builds, as recorded on tricky-notes: 0.9.0 (Claude Code 0.1.27
	// too) sends 0.8.0's frames; 0.10.2 (0.1.37) and 0.10.10 (0.1.55)
	// write the header and send toolResponse, as 0.11.0 does.
	for _, v := range []string{"0.8.0", "0.9.0"} {
		runObsCases(t, Bind(d, ParseVersion(v)), []obsCase{
			{name: "build " + v + ": the first line of a failure is output, the exit unknown",
				update: final("toolu_n_hdr_fail_49", "failed", "```\nExit code 3\nreal\n```"),
				want:   one(accum.Observation{ToolCallID: "toolu_n_hdr_fail_49", Status: failed, Texts: []accum.Text{txt(C, F, "Exit code 3\nreal\n")}})},
			kept(v, "toolu_n_aborted_3", "out\n[Command was aborted before completion]"),
			kept(v, "toolu_n_trunc_7", "out\n[Output truncated (999 bytes total): full output saved to /tmp/x.txt]"),
			kept(v, "toolu_n_bgmoved_16", "out\nCommand did not complete within its 2s timeout and was moved to the background (ID: b1)."),
			kept(v, "toolu_n_noout_25", "(Bash completed with no output)"),
		})
	}
	// Newer builds write those words (or, for claude-code-acp, send the
	// output whole in toolResponse first): read as theirs.
	const hdr = `{"_meta": {"claudeCode": {"toolName": "Bash"}}, "toolCallId": "toolu_n_hdr_fail_50", "sessionUpdate": "tool_call_update", "status": "failed", "content": [{"type": "content", "content": {"type": "text", "text": "` + "```" + `\nExit code 5\nExit code 3\nreal\n` + "```" + `"}}]}`
	for _, v := range []string{"0.10.2", "0.10.10", "0.11.0", "0.16.2", ""} {
		runObsCases(t, Bind(d, ParseVersion(v)), []obsCase{
			{name: "build " + v + ": the header is the exit, the rest output",
				update: hdr,
				want:   one(accum.Observation{ToolCallID: "toolu_n_hdr_fail_50", Shell: accum.ShellYes, Status: failed, Exit: ex(5, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "Exit code 3\nreal\n")}})},
			{name: "build " + v + ": the empty-result notice is no output",
				update: metaFinal("toolu_n_noout_25", "completed", "(Bash completed with no output)"),
				want:   one(accum.Observation{ToolCallID: "toolu_n_noout_25", Shell: accum.ShellYes, Status: done})},
		})
	}
}

// TestClaudeCompletedSaysNoHeader: Claude Code writes its "Exit code N"
// header only over a result it flags as an error, which the adapters end
// `failed`. A `completed` Bash final says so (ExitWordsOutput): a header
// read on an earlier frame without a status (a session/load replay's
// terminal_output, with no toolResponse before it) was the command's first
// line. The client-terminal Bash writes its own header under `completed`:
// its final says nothing of the kind. Frames from
// claude-agent-acp-0.85.1_terminal-meta_exitline-load (the replay of
// exitline_first) and claude-code-acp's mcp__acp__Bash.
func TestClaudeCompletedSaysNoHeader(t *testing.T) {
	yes, done, C, S := accum.ShellYes, accum.StatusCompleted, accum.Combined, accum.Snapshot
	for _, v := range []string{"0.85.1", "0.101.0"} {
		d := Bind(claudeDialect(t), ParseVersion(v))
		runObsCases(t, d, []obsCase{
			{name: v + ": the replayed output, without a status: the header is read",
				update: `{"_meta": {"terminal_output": {"terminal_id": "toolu_exitline_first_2", "data": "Exit code 3\nreal"}}, "toolCallId": "toolu_exitline_first_2", "sessionUpdate": "tool_call_update"}`,
				want: one(accum.Observation{ToolCallID: "toolu_exitline_first_2", TerminalID: "toolu_exitline_first_2", Shell: yes,
					Exit: ex(3, accum.ExitText, false), Worded: accum.Worded{Exit: true},
					Texts: []accum.Text{{Stream: C, Kind: S, Text: "real", Whole: "Exit code 3\nreal"}}})},
			{name: v + ": the completed final: no header was written",
				update: `{"_meta": {"claudeCode": {"toolName": "Bash"}, "terminal_exit": {"terminal_id": "toolu_exitline_first_2", "exit_code": 0, "signal": null}}, "toolCallId": "toolu_exitline_first_2", "sessionUpdate": "tool_call_update", "status": "completed", "content": [{"type": "terminal", "terminalId": "toolu_exitline_first_2"}]}`,
				want: one(accum.Observation{ToolCallID: "toolu_exitline_first_2", TerminalID: "toolu_exitline_first_2", Shell: yes, Status: done,
					ExitSetAside: v == "0.85.1", ExitWordsOutput: true})},
		})
	}
	runObsCases(t, claudeDialect(t), []obsCase{
		{name: "the client-terminal Bash's own header under completed",
			update: `{"_meta": {"claudeCode": {"toolName": "mcp__acp__Bash"}}, "toolCallId": "t", "sessionUpdate": "tool_call_update", "status": "completed", "rawOutput": [{"type": "text", "text": "Exited with code 3.Final output:\n\nx\n"}]}`,
			want: one(accum.Observation{ToolCallID: "t", Shell: yes, Status: done, Exit: ex(3, accum.ExitText, false), Worded: accum.Worded{Exit: true},
				Texts: []accum.Text{{Stream: C, Kind: accum.Final, Text: "x\n", Whole: "Exited with code 3.Final output:\n\nx\n"}}})},
	})
}

// TestClaudeExitLineAfterCwdReset folds what claude-agent-acp 0.101.0
// sent live for `cd /tmp && printf 'Exit code 3\nreal\n'` (exit 0;
// claude-agent-acp-0.101.0_terminal-meta_exitline-cwd): toolResponse
// gives stdout whole, Claude Code's cwd notice in stderr; the terminal's
// output is stdout, a blank line and the notice. The first line looks
// like the header, but with the notice left out the text is exactly
// stdout: the line is output, and the notice is not. A failure after a
// cd keeps its header as the exit code (a frame made for the test: the
// recorded exit 4 came without the notice).
func TestClaudeExitLineAfterCwdReset(t *testing.T) {
	d := Bind(claudeDialect(t), ParseVersion("0.101.0"))
	id := "toolu_x_cd_exitline_3"
	notice := `Shell cwd was reset to /home/dev/work/proj`
	frames := []string{
		`{"_meta": {"claudeCode": {"toolName": "Bash"}, "terminal_info": {"terminal_id": "` + id + `"}}, "toolCallId": "` + id + `", "sessionUpdate": "tool_call", "name": "Bash", "rawInput": {}, "status": "pending", "title": "Terminal", "kind": "execute", "content": [{"type": "terminal", "terminalId": "` + id + `"}]}`,
		`{"_meta": {"claudeCode": {"toolName": "Bash"}}, "toolCallId": "` + id + `", "sessionUpdate": "tool_call_update", "rawInput": {"command": "cd /tmp && printf 'Exit code 3\\nreal\\n'", "description": "Run step 0 (x_cd_exitline)"}, "title": "cd /tmp && printf 'Exit code 3\\nreal\\n'"}`,
		`{"_meta": {"claudeCode": {"toolResponse": {"stdout": "Exit code 3\nreal", "stderr": "\n` + notice + `", "interrupted": false, "isImage": false, "noOutputExpected": false}, "toolName": "Bash"}}, "toolCallId": "` + id + `", "sessionUpdate": "tool_call_update"}`,
		`{"_meta": {"terminal_output": {"terminal_id": "` + id + `", "data": "Exit code 3\nreal\n\n` + notice + `"}}, "toolCallId": "` + id + `", "sessionUpdate": "tool_call_update"}`,
		`{"_meta": {"claudeCode": {"toolName": "Bash"}, "terminal_exit": {"terminal_id": "` + id + `", "exit_code": 0, "signal": null}}, "toolCallId": "` + id + `", "sessionUpdate": "tool_call_update", "status": "completed"}`,
	}
	last, out := foldFrames(t, d, id, frames...)
	require.NotNil(t, out)
	assert.Equal(t, accum.Ended, last.State)
	assert.Equal(t, "Exit code 3\nreal", out.Text, "the command's first line is output, the cwd notice is not")
	if assert.NotNil(t, last.ExitCode) {
		assert.Equal(t, int32(0), *last.ExitCode)
	}

	fail := "toolu_x_cd_fail_6"
	last, out = foldFrames(t, d, fail,
		`{"_meta": {"terminal_output": {"terminal_id": "`+fail+`", "data": "Exit code 4\nout\n\n`+notice+`"}}, "toolCallId": "`+fail+`", "sessionUpdate": "tool_call_update"}`,
		`{"_meta": {"claudeCode": {"toolName": "Bash"}, "terminal_exit": {"terminal_id": "`+fail+`", "exit_code": 4, "signal": null}}, "toolCallId": "`+fail+`", "sessionUpdate": "tool_call_update", "status": "failed"}`)
	require.NotNil(t, out)
	assert.Equal(t, "out", out.Text)
	if assert.NotNil(t, last.ExitCode) {
		assert.Equal(t, int32(4), *last.ExitCode)
	}
}

// TestClaudeExitLineKeptOnOtherWires folds what claude-agent-acp 0.101.0
// sent where no toolResponse gives the output whole first: a client that
// declares JetBrains AIR (its terminal_exit 0 is made up), live and then
// replayed by session/load after the restart, and ACP v2 (the output as
// terminal_update bytes). Each ends `completed`, so an "Exit code 3" first
// line was the command's output, also before Claude Code's cwd notice
// (claude-agent-acp-0.101.0_air_terminal-meta_exitline-cwd,
// _v2_terminal-meta_exitline-cwd, _v2_terminal-meta_tricky).
func TestClaudeExitLineKeptOnOtherWires(t *testing.T) {
	d := Bind(claudeDialect(t), ParseVersion("0.101.0"))
	air := BindPeers(claudeDialect(t), ParseVersion("0.101.0"), mustClient(t, airCaps))
	notice := `Shell cwd was reset to /home/dev/work/proj`
	id := "toolu_x_cd_exitline_3"
	out := func(data string) string {
		return `{"_meta": {"terminal_output": {"terminal_id": "` + id + `", "data": ` + strconv.Quote(data) + `}}, "toolCallId": "` + id + `", "sessionUpdate": "tool_call_update"}`
	}
	final := `{"_meta": {"terminal_exit": {"terminal_id": "` + id + `", "exit_code": 0, "signal": null}}, "toolCallId": "` + id + `", "sessionUpdate": "tool_call_update", "status": "completed"}`
	open := `{"_meta": {"jetbrains": {"air": {"version": 1, "commandTitle": "Run step 0 (x_cd_exitline)"}}}, "toolCallId": "` + id + `", "sessionUpdate": "tool_call_update", "rawInput": {"command": "cd /tmp && printf 'Exit code 3\\nreal\\n'", "description": "Run step 0 (x_cd_exitline)"}, "title": "cd /tmp && printf 'Exit code 3\\nreal\\n'"}`
	t.Run("AIR, live", func(t *testing.T) {
		last, text := foldFrames(t, air, id, open, out("Exit code 3\nreal\n\n"+notice), final)
		require.NotNil(t, text)
		assert.Equal(t, "Exit code 3\nreal", text.Text)
		assert.Nil(t, last.ExitCode, "a made-up 0, and the command's own first line")
	})
	t.Run("AIR, the replay alone", func(t *testing.T) {
		last, text := foldFrames(t, air, id, open, out("Exit code 3\nreal\n"+notice), final)
		require.NotNil(t, text)
		assert.Equal(t, "Exit code 3\nreal", text.Text)
		assert.Nil(t, last.ExitCode)
	})
	v2 := func(tid, data string) []string {
		return []string{
			`{"toolCallId": "` + tid + `", "name": "Bash", "rawInput": {}, "status": "pending", "title": "Terminal", "kind": "execute", "content": [{"type": "terminal", "terminalId": "` + tid + `"}], "sessionUpdate": "tool_call_update"}`,
			`{"sessionUpdate": "terminal_update", "terminalId": "` + tid + `", "output": {"data": "` + base64.StdEncoding.EncodeToString([]byte(data)) + `"}}`,
			`{"sessionUpdate": "terminal_update", "terminalId": "` + tid + `", "exitStatus": {"exitCode": 0}}`,
			`{"toolCallId": "` + tid + `", "status": "completed", "sessionUpdate": "tool_call_update"}`,
		}
	}
	for name, data := range map[string]string{"v2": "Exit code 3\nreal", "v2, before the cwd notice": "Exit code 3\nreal\n\n" + notice} {
		t.Run(name, func(t *testing.T) {
			last, text := foldFrames(t, d, "toolu_exitline_first_3", v2("toolu_exitline_first_3", data)...)
			require.NotNil(t, text)
			assert.Equal(t, "Exit code 3\nreal", text.Text)
			if assert.NotNil(t, last.ExitCode) {
				assert.Equal(t, int32(0), *last.ExitCode)
			}
		})
	}
}

// claudeCwdReset looks at the last line only; it finds the notice where a
// search of the whole text for its last place would, and nowhere else.
func FuzzClaudeCwdReset(f *testing.F) {
	whole := func(s string) int {
		i := strings.LastIndex(s, claudeCwdNotice)
		if i < 0 || (i > 0 && s[i-1] != '\n') {
			return -1
		}
		if dir := s[i+len(claudeCwdNotice):]; !strings.HasPrefix(dir, "/") || strings.ContainsAny(dir, "\r\n") {
			return -1
		}
		for n := 0; n < 2 && i > 0 && s[i-1] == '\n'; n++ {
			i--
		}
		return i
	}
	for _, s := range []string{
		"", "/tmp\n\nShell cwd was reset to /work", "Shell cwd was reset to /work", "out\nShell cwd was reset to /w\n",
		"out\nShell cwd was reset to w", "out Shell cwd was reset to /w", "out\nShell cwd was reset to /w\r",
		"a\n\n\nShell cwd was reset to /w", "Shell cwd was reset to /aShell cwd was reset to /b",
		"Shell cwd was reset to /a\nShell cwd was reset to /b\nx", "\nShell cwd was reset to /",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := claudeCwdReset(s), whole(s); got != want {
			t.Fatalf("claudeCwdReset(%q) = %d, the whole text's search says %d", s, got, want)
		}
	})
}

// TestClaudeInterruptLineAfterHeader: a command the user cancelled while it
// ran, as claude-agent-acp 0.24.2 and 0.31.4 replay it after a restart
// (session/load; the live run sent nothing after the cancel). Their Claude
// Code (2.1.84, 2.1.121) kept the interrupted result as its "Exit code N"
// header, then its own "[Request interrupted by user for tool use]" line,
// then the output so far; the replay sends that under `failed` with no
// toolResponse and no nonExecutionKind. The line is Claude Code's mark of
// the user's interrupt: a cancel, keeping the header's exit code, and no
// output. From 0.32.0 (Claude Code 2.1.126) no build writes the line
// after the header: 0.32.0 to 0.37.0 replay the same cancel as "Exit code
// 137" and the output alone, 0.39.0 and later as the adapter's refusal
// text. There, and for a build not known, the same bytes come only from a
// failed command that printed that line first, and it is output. The
// frame is from claude-agent-acp-0.24.2_terminal-meta_load (toolu_cancel_14;
// 0.31.4's is the same).
func TestClaudeInterruptLineAfterHeader(t *testing.T) {
	const ticks = "tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7\ntick8"
	const line = "[Request interrupted by user for tool use]"
	text := "Exit code 137\n" + line + "\n" + ticks
	frame := `{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"toolu_cancel_14","sessionUpdate":"tool_call_update","status":"failed","rawOutput":` + jsonString(text) + `,"content":[{"type":"content","content":{"type":"text","text":` + jsonString("```\n"+text+"\n```") + `}}]}`
	yes, failed, C, F := accum.ShellYes, accum.StatusFailed, accum.Combined, accum.Final
	for _, v := range []string{"0.24.2", "0.31.4"} {
		t.Run(v, func(t *testing.T) {
			runObsCases(t, Bind(claudeDialect(t), ParseVersion(v)), []obsCase{
				{name: "the line after the header is the interrupt: cancelled, exit 137 kept, the ticks the output",
					update: frame,
					want:   one(accum.Observation{ToolCallID: "toolu_cancel_14", Shell: yes, Status: failed, Exit: ex(137, accum.ExitText, false), Cancelled: true, CancelNotice: line, Texts: []accum.Text{txt(C, F, ticks)}})},
			})
		})
	}
	for _, v := range []string{"0.32.0", "0.37.0", "0.40.0", "0.101.0", ""} {
		t.Run("newer rules for "+v, func(t *testing.T) {
			runObsCases(t, Bind(claudeDialect(t), ParseVersion(v)), []obsCase{
				{name: "a failed command that printed the line first: output",
					update: frame,
					want:   one(accum.Observation{ToolCallID: "toolu_cancel_14", Shell: yes, Status: failed, Exit: ex(137, accum.ExitText, false), Texts: []accum.Text{txt(C, F, line+"\n"+ticks)}})},
			})
		})
	}
}

// TestClaudePreSDKFinals: claude-code-acp 0.4.5 and 0.2.5 (Claude Code
// 1.0.124 and 1.0.128 through its own SDK) name no build and end a Bash
// call with no _meta at all, the output alone as the content text (fenced
// in 0.4.5, bare in 0.2.5). Frames from claude-code-acp-0.4.5_plain_full,
// claude-code-acp-0.2.5_plain_full and claude-code-acp-0.4.5_plain_tricky-notes.
// Their Claude Code writes none of the newer words: an "Exit code N"
// first line, a truncation note, the bracketed interrupt line, the
// empty-result notice are what the command printed. It kills a command
// its timeout stops and puts "Command timed out after D" first, joined to
// the stderr by a space. A session that names its build, or declares
// JetBrains AIR (claude-agent-acp 0.101.0 ends some calls with no _meta
// there), and a frame with _meta are read as before.
func TestClaudePreSDKFinals(t *testing.T) {
	C, F := accum.Combined, accum.Final
	failed, done := accum.StatusFailed, accum.StatusCompleted
	frame := func(id, status, text string) string {
		return `{"toolCallId":"` + id + `","sessionUpdate":"tool_call_update","status":"` + status + `","content":[{"type":"content","content":{"type":"text","text":` + jsonString(text) + `}}]}`
	}
	const to = "toolu_timeout_46"
	timedOut := func(out string) []accum.Observation {
		return one(accum.Observation{ToolCallID: to, Status: failed, TimedOut: true, Worded: accum.Worded{TimedOut: true}, Texts: []accum.Text{txt(C, F, out)}})
	}
	kept := func(id string, status accum.Status, out string) []accum.Observation {
		return one(accum.Observation{ToolCallID: id, Status: status, Texts: []accum.Text{txt(C, F, out)}})
	}
	unnamed := Bind(claudeDialect(t), ParseVersion(""))
	runObsCases(t, unnamed, []obsCase{
		{name: "0.4.5: fenced timeout notice, then the output", update: frame(to, "failed", "```\nCommand timed out after 2s\nstart\n```"), want: timedOut("start\n")},
		{name: "0.2.5: the same unfenced", update: frame(to, "failed", "Command timed out after 2s\nstart"), want: timedOut("start")},
		{name: "minutes, and the stderr after the notice", update: frame(to, "failed", "Command timed out after 2m 5s oops\nstart"), want: timedOut("oops\nstart")},
		{name: "a completed command that printed the notice", update: frame(to, "completed", "Command timed out after 2s\nstart"), want: kept(to, done, "Command timed out after 2s\nstart")},
		{name: "other words", update: frame(to, "failed", "command timed out after 2000 milliseconds\nx"), want: kept(to, failed, "command timed out after 2000 milliseconds\nx")},
		{name: "no duration", update: frame(to, "failed", "Command timed out after all\nx"), want: kept(to, failed, "Command timed out after all\nx")},
		{name: "an Exit code first line is output, the exit unknown", update: frame("toolu_n_hdr_fail_48", "failed", "```\nExit code 3\nreal\n```"), want: kept("toolu_n_hdr_fail_48", failed, "Exit code 3\nreal\n")},
		{name: "the bracketed interrupt line is output", update: frame("toolu_n_aborted_2", "completed", "out\n[Command was aborted before completion]"), want: kept("toolu_n_aborted_2", done, "out\n[Command was aborted before completion]")},
		{name: "the truncation note is output", update: frame("toolu_n_trunc_6", "completed", "out\n[Output truncated (999 bytes total): full output saved to /tmp/x.txt]"), want: kept("toolu_n_trunc_6", done, "out\n[Output truncated (999 bytes total): full output saved to /tmp/x.txt]")},
		{name: "the empty-result notice is output", update: frame("toolu_n_noout_24", "completed", "(Bash completed with no output)"), want: kept("toolu_n_noout_24", done, "(Bash completed with no output)")},
		{name: "a frame with _meta.claudeCode keeps the newer reading",
			update: `{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"toolu_n_hdr_fail_48","sessionUpdate":"tool_call_update","status":"failed","content":[{"type":"content","content":{"type":"text","text":"` + "```" + `\nExit code 3\nreal\n` + "```" + `"}}]}`,
			want:   one(accum.Observation{ToolCallID: "toolu_n_hdr_fail_48", Shell: accum.ShellYes, Status: failed, Exit: ex(3, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "real\n")}})},
	})
	for _, d := range map[string]Dialect{
		"0.8.0":          Bind(claudeDialect(t), ParseVersion("0.8.0")),
		"0.16.2":         Bind(claudeDialect(t), ParseVersion("0.16.2")),
		"unbound":        claudeDialect(t),
		"unnamed to AIR": BindPeers(claudeDialect(t), ParseVersion(""), mustClient(t, airCaps)),
	} {
		runObsCases(t, d, []obsCase{
			{name: "the timeout notice's bytes are output", update: frame(to, "failed", "Command timed out after 2s\nstart"), want: kept(to, failed, "Command timed out after 2s\nstart")},
		})
	}
	for _, d := range []Dialect{Bind(claudeDialect(t), ParseVersion("0.16.2")), claudeDialect(t), BindPeers(claudeDialect(t), ParseVersion(""), mustClient(t, airCaps))} {
		runObsCases(t, d, []obsCase{
			{name: "newer words: the empty-result notice is no output", update: frame("toolu_n_noout_24", "completed", "(Bash completed with no output)"), want: one(accum.Observation{ToolCallID: "toolu_n_noout_24", Status: done})},
		})
	}
}
