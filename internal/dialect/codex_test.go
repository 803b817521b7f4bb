package dialect

import (
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func codexDialect(t *testing.T) Dialect {
	d, ok := Lookup("codex")
	if !ok {
		t.Fatal("codex not registered")
	}
	return d
}

func TestCodexDetect(t *testing.T) {
	for _, n := range []string{"codex-acp", "codex", "@zed-industries/codex-acp", "@agentclientprotocol/codex-acp", "Codex-ACP"} {
		if got := Detect(n).Info().Name; got != "codex" {
			t.Errorf("Detect(%q) = %s", n, got)
		}
	}
}

func TestCodexTypeScriptAdapter(t *testing.T) {
	d := codexDialect(t)
	C, D, F := accum.Combined, accum.Delta, accum.Final
	yes, running, done, failed := accum.ShellYes, accum.StatusRunning, accum.StatusCompleted, accum.StatusFailed
	runObsCases(t, d, []obsCase{
		{name: "tool_call with the zsh wrapper in rawInput.command",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"echo hello","status":"in_progress","content":[{"type":"terminal","terminalId":"c1"}],"rawInput":{"command":"/bin/zsh -lc 'echo hello'","cwd":"/w"},"_meta":{"terminal_info":{"cwd":"/w","terminal_id":"c1"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", TerminalID: "c1", Opens: true, Shell: yes, Status: running, Command: "echo hello", Cwd: "/w"})},
		{name: "terminal_output_delta (client did not opt in) is a delta",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_output_delta":{"data":"hello\n","terminal_id":"c1"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", TerminalID: "c1", Shell: yes, Texts: []accum.Text{txt(C, D, "hello\n")}})},
		{name: "terminal_output (opted in) is a delta",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_output":{"data":"more\n","terminal_id":"c1"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", TerminalID: "c1", Shell: yes, Texts: []accum.Text{txt(C, D, "more\n")}})},
		{name: "final: formatted_output and terminal_exit",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"formatted_output":"hello\n","exit_code":0},"_meta":{"terminal_exit":{"exit_code":0,"signal":null,"terminal_id":"c1"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(0, accum.ExitTerminal, false), Texts: []accum.Text{txt(C, F, "hello\n")}})},
		{name: "completion fallback: whole output also in terminal_output_delta is not doubled",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"formatted_output":"no match\n","exit_code":1},"_meta":{"terminal_output_delta":{"data":"no match\n","terminal_id":"c1"},"terminal_exit":{"exit_code":1,"signal":null,"terminal_id":"c1"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", TerminalID: "c1", Shell: yes, Status: failed, Exit: ex(1, accum.ExitTerminal, false), Texts: []accum.Text{txt(C, F, "no match\n")}})},
		{name: "exit_code null is unknown",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"formatted_output":"","exit_code":null},"_meta":{"terminal_exit":{"exit_code":null,"signal":"SIGTERM","terminal_id":"c1"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Signal: "SIGTERM"})},
		{name: "nonzero exit under completed is still exit 2",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"formatted_output":"x","exit_code":2}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(2, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "x")}})},
		{name: "replayed timeout: terminal_exit -1 without rawOutput is the sentinel, not an exit",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","name":"exec_command","status":"failed","_meta":{"terminal_output_delta":{"data":"start\n","terminal_id":"c1"},"terminal_exit":{"exit_code":-1,"signal":null,"terminal_id":"c1"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", TerminalID: "c1", Shell: yes, Status: failed, Failed: true, Texts: []accum.Text{txt(C, D, "start\n")}})},
		// Replays of a rejected command (TS 1.x, recorded): Codex's text to
		// the model, in formatted_output and a terminal delta, is a notice.
		{name: "replayed rejection (1.1.4): exec_command failed ... rejected by user is a cancel, not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"formatted_output":"exec_command failed for ` + "`/bin/bash -lc 'rm -f notes.txt && echo removed'`" + `: CreateProcess { message: \"Rejected(\\\"rejected by user\\\")\" }","exit_code":null},"_meta":{"terminal_exit":{"exit_code":null,"signal":null,"terminal_id":"c1"},"terminal_output_delta":{"data":"exec_command failed for ` + "`/bin/bash -lc 'rm -f notes.txt && echo removed'`" + `: CreateProcess { message: \"Rejected(\\\"rejected by user\\\")\" }","terminal_id":"c1"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", TerminalID: "c1", Shell: yes, Status: done, Cancelled: true, CancelNotice: "rejected by user"})},
		{name: "replayed rejection (1.13.1): Wall time ... aborted by user is a cancel, not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"formatted_output":"Wall time: 0.1 seconds\naborted by user","exit_code":null},"_meta":{"terminal_exit":{"exit_code":null,"signal":null,"terminal_id":"c1"},"terminal_output_delta":{"data":"Wall time: 0.1 seconds\naborted by user","terminal_id":"c1"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", TerminalID: "c1", Shell: yes, Status: done, Cancelled: true, CancelNotice: "aborted by user"})},
		{name: "a spawn failure's text is a failure, not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"formatted_output":"exec_command failed for ` + "`nope`" + `: CreateProcess { message: \"No such file or directory\" }","exit_code":null}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Failed: true, FailNotice: "exec_command failed for `nope`: CreateProcess { message: \"No such file or directory\" }"})},
		{name: "the same words with an exit code are the command's output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"formatted_output":"Wall time: 0.1 seconds\naborted by user","exit_code":0}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(0, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "Wall time: 0.1 seconds\naborted by user")}})},
		{name: "replay (1.1.4): the model-facing text in formatted_output and the delta; its header is no output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"formatted_output":"Chunk ID: d714ec\nWall time: 0.0825 seconds\nProcess exited with code 3\nOriginal token count: 1\nOutput:\na\nb\n","exit_code":3},"_meta":{"terminal_exit":{"exit_code":3,"signal":null,"terminal_id":"c1"},"terminal_output_delta":{"data":"Chunk ID: d714ec\nWall time: 0.0825 seconds\nProcess exited with code 3\nOriginal token count: 1\nOutput:\na\nb\n","terminal_id":"c1"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", TerminalID: "c1", Shell: yes, Status: failed, Exit: ex(3, accum.ExitTerminal, false), Texts: []accum.Text{txt(C, F, "a\nb\n")}})},
		{name: "a header whose code differs from the exit code is the command's output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"formatted_output":"Wall time: 1 seconds\nProcess exited with code 3\nOutput:\nx\n","exit_code":0}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(0, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "Wall time: 1 seconds\nProcess exited with code 3\nOutput:\nx\n")}})},
		// 1.1.4 and 1.13.1 (tricky-more): formatted_output is the raw
		// output, a command's own words included.
		{name: "1.x final: a timeout sentence beside exit 0 is the command's output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"formatted_output":"command timed out after 5 milliseconds\nx\n","exit_code":0},"_meta":{"terminal_exit":{"exit_code":0,"signal":null,"terminal_id":"c1"}}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(0, accum.ExitTerminal, false),
				Texts: []accum.Text{txt(C, F, "command timed out after 5 milliseconds\nx\n")}})},
		{name: "1.x final: a Total output lines header with no elision marker is the command's output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","name":"exec_command","status":"completed","rawOutput":{"formatted_output":"Total output lines: 3\n\nx\n","exit_code":0},"_meta":{"terminal_output_delta":{"data":"Total output lines: 3\n\nx\n","terminal_id":"c1"},"terminal_exit":{"exit_code":0,"signal":null,"terminal_id":"c1"}}}`,
			want: one(accum.Observation{ToolCallID: "c1", TerminalID: "c1", Shell: yes, Status: done, Exit: ex(0, accum.ExitTerminal, false),
				Texts: []accum.Text{txt(C, F, "Total output lines: 3\n\nx\n")}})},
		{name: "1.x final: an elision marker alone is the command's output, not a cut",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"formatted_output":"a…5 chars truncated…b\n","exit_code":0}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(C, F, "a…5 chars truncated…b\n")}})},
		{name: "lone read command gets kind read and no terminal but is a shell",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c2","kind":"read","title":"Read go.mod","status":"in_progress","rawInput":{"command":"/bin/zsh -lc 'cat go.mod'","cwd":"/w"}}`,
			want:   one(accum.Observation{ToolCallID: "c2", Opens: true, Shell: yes, Status: running, Command: "cat go.mod", Cwd: "/w"})},
	})
}

func TestCodexRustAdapter(t *testing.T) {
	d := codexDialect(t)
	C, S, F := accum.Combined, accum.Snapshot, accum.Final
	yes, running, done, failed := accum.ShellYes, accum.StatusRunning, accum.StatusCompleted, accum.StatusFailed
	begin := `"rawInput":{"call_id":"c1","turn_id":"t","command":["bash","-lc","npm test"],"cwd":"/w","parsed_cmd":[{"type":"unknown","cmd":"npm test"}]}`
	runObsCases(t, d, []obsCase{
		{name: "begin event: array command unwrapped, search kind is a shell",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"search","title":"List /w","status":"in_progress",` + begin + `}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Status: running, Command: "npm test", Cwd: "/w"})},
		{name: "without the capability: cumulative fenced content is a snapshot",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"` + "```sh\\nPASS a\\nPASS b\\n```\\n" + `"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: running, Texts: []accum.Text{txt(C, S, "PASS a\nPASS b\n")}})},
		{name: "end event: stdout/stderr split, aggregated_output is combined",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"call_id":"c1","stdout":"o1\no2\n","stderr":"e\n","aggregated_output":"o1\ne\no2\n","exit_code":0,"duration":{"secs":0,"nanos":5},"formatted_output":"o1\ne\no2\n","status":"completed","source":"agent"},"_meta":{"terminal_exit":{"terminal_id":"c1","exit_code":0,"signal":null}}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(0, accum.ExitTerminal, false),
				Texts: []accum.Text{txt(accum.Stdout, F, "o1\no2\n"), txt(accum.Stderr, F, "e\n"), txt(C, F, "o1\ne\no2\n")}})},
		{name: "unified exec (PTY, process_id): stderr is merged, no split",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"process_id":"42","source":"unified_exec_startup","stdout":"e\no\n","stderr":"","aggregated_output":"e\no\n","exit_code":0,"formatted_output":"e\no\n","status":"completed"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(0, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "e\no\n")}})},
		{name: "final fenced content then the end event: the aggregate is last",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"` + "```sh\\nboom\\n```\\n" + `"}}],"rawOutput":{"process_id":"4","stdout":"boom\n","stderr":"","aggregated_output":"boom\n","exit_code":3,"formatted_output":"boom\n","status":"failed"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Exit: ex(3, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "boom\n"), txt(C, F, "boom\n")}})},
		{name: "abbreviated formatted_output is used only without aggregated_output, and is truncated",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"exit_code":0,"formatted_output":"Total output lines: 40000\n\n1\n2\n…228894 chars truncated…\n40000\n"}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: C, Kind: F, Text: "1\n2\n…228894 chars truncated…\n40000\n", Truncated: true}}})},
		{name: "output starting like Codex's execution error, beside a real exit code, is output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"process_id":"1","source":"unified_exec_startup","stdout":"execution error: division by zero\n","stderr":"","aggregated_output":"execution error: division by zero\n","formatted_output":"execution error: division by zero\n","exit_code":1,"status":"failed"}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Exit: ex(1, accum.ExitStructured, false),
				Texts: []accum.Text{txt(C, F, "execution error: division by zero\n")}})},
		{name: "output starting like Codex's timeout sentence, beside exit 0, is output and no timeout",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"process_id":"1","source":"unified_exec_startup","stdout":"command timed out after 100 milliseconds\nretrying... ok\n","stderr":"","aggregated_output":"command timed out after 100 milliseconds\nretrying... ok\n","formatted_output":"command timed out after 100 milliseconds\nretrying... ok\n","exit_code":0,"status":"completed"}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(C, F, "command timed out after 100 milliseconds\nretrying... ok\n")}})},
		{name: "timeout: exit 124 kept, TimedOut, banner not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"stdout":"start\n","stderr":"","aggregated_output":"start\n","exit_code":124,"formatted_output":"command timed out after 2003 milliseconds\nstart\n","status":"failed","source":"agent"},"_meta":{"terminal_exit":{"terminal_id":"c1","exit_code":124,"signal":null}}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Exit: ex(124, accum.ExitTerminal, false), TimedOut: true,
				Texts: []accum.Text{txt(accum.Stdout, F, "start\n"), txt(accum.Stderr, F, ""), txt(C, F, "start\n")}})},
		// formatted_output without aggregated_output is the TypeScript
		// adapter 1.x's, the raw output (tricky-cancel's k_codex_timeout,
		// recorded on 1.13.1 and 1.1.4): Codex's timeout sentence there,
		// even beside its 124, is the command's own line.
		{name: "1.x final: a timeout sentence beside exit 124 is the command's output, no timeout",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_k_codex_timeout_36","name":"exec_command","status":"failed","rawOutput":{"formatted_output":"command timed out after 2000 milliseconds\nx\n","exit_code":124},"_meta":{"terminal_output_delta":{"data":"command timed out after 2000 milliseconds\nx\n","terminal_id":"call_k_codex_timeout_36"},"terminal_exit":{"exit_code":124,"signal":null,"terminal_id":"call_k_codex_timeout_36"}}}`,
			want: one(accum.Observation{ToolCallID: "call_k_codex_timeout_36", TerminalID: "call_k_codex_timeout_36", Shell: yes, Status: failed, Exit: ex(124, accum.ExitTerminal, false),
				Texts: []accum.Text{txt(C, F, "command timed out after 2000 milliseconds\nx\n")}})},
		{name: "Sandbox(Signal(9)): SIGKILL, the -1 sentinel dropped, error text is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"stdout":"","stderr":"execution error: Sandbox(Signal(9))","aggregated_output":"execution error: Sandbox(Signal(9))","exit_code":-1,"formatted_output":"execution error: Sandbox(Signal(9))","status":"failed","source":"agent"},"_meta":{"terminal_exit":{"terminal_id":"c1","exit_code":-1,"signal":null}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Signal: "SIGKILL", Failed: true})},
		{name: "other execution error: a failure, not output, the -1 sentinel dropped",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"stdout":"","stderr":"execution error: Io(NotFound)","aggregated_output":"execution error: Io(NotFound)","exit_code":-1,"status":"failed"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Failed: true})},
		{name: "unified exec killed (exit -1, no signal text): exit unknown, a failure, output kept",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"process_id":"1","source":"unified_exec_startup","stdout":"before-kill\n","stderr":"","aggregated_output":"before-kill\n","exit_code":-1,"formatted_output":"before-kill\n","status":"failed"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Failed: true, Texts: []accum.Text{txt(C, F, "before-kill\n")}})},
		{name: "terminal_exit -1 is the sentinel too",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"exit_code":-1},"_meta":{"terminal_exit":{"terminal_id":"c1","exit_code":-1,"signal":null}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Failed: true})},
		{name: "exit -1 on a running frame stays a placeholder, not a failure",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","rawOutput":{"exit_code":-1}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: running, Exit: ex(-1, accum.ExitStructured, true)})},
		// The TS 2.x adapter's end event with its status left out (a
		// session/load replay, see TestCodexTS2ReplayedEndEvent) is an end.
		{name: "exit -1 in an end event whose status is left out is the sentinel",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","rawOutput":{"exit_code":-1}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Failed: true})},
		{name: "declined end event is a rejected command",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"stdout":"","stderr":"","aggregated_output":"","exit_code":-1,"status":"declined"}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Cancelled: true,
				Texts: []accum.Text{txt(accum.Stdout, F, ""), txt(accum.Stderr, F, "")}})},
		{name: "0.7.x rejection: no declined status, the refusal is the only text beside -1: Cancelled, not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"aggregated_output":"exec command rejected by user","call_id":"c1","command":["/bin/bash","-lc","rm -f notes.txt"],"exit_code":-1,"formatted_output":"exec command rejected by user","source":"agent","stderr":"exec command rejected by user","stdout":""},"_meta":{"terminal_exit":{"exit_code":-1,"signal":null,"terminal_id":"c1"}}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Cancelled: true, CancelNotice: "exec command rejected by user"})},
		{name: "the same words from a command that exited are its output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"aggregated_output":"exec command rejected by user","exit_code":1,"stderr":"exec command rejected by user","stdout":""}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Exit: ex(1, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Stdout, F, ""), txt(accum.Stderr, F, "exec command rejected by user"), txt(C, F, "exec command rejected by user")}})},
		{name: "UTF-16 byte-order-mark sniffing is undone",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"process_id":"1","stdout":"漠੫","stderr":"","aggregated_output":"漠੫","exit_code":0,"status":"completed"}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: C, Kind: F, Bytes: []byte("\xff\xfe ok\n")}}})},
		// session/load replays (Rust adapter): the model's exec_command
		// call and the tool's model-facing text.
		{name: "replayed exec_command: no kind, rawInput.cmd is the command, workdir the cwd",
			update: `{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"exec_command","status":"completed","rawInput":{"cmd":"printf 'x\\n'; exit 3","workdir":"/w","yield_time_ms":10000}}`,
			want:   one(accum.Observation{ToolCallID: "call_1", Opens: true, Shell: yes, Status: done, Command: "printf 'x\\n'; exit 3", Cwd: "/w"})},
		{name: "replayed exec_command text: exit code from its header, the rest is output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","rawOutput":"Chunk ID: 3f2a1b\nWall time: 0.0521 seconds\nProcess exited with code 3\nOriginal token count: 1\nOutput:\nx\n"}`,
			want:   one(accum.Observation{ToolCallID: "call_1", Status: done, Exit: ex(3, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "x\n")}})},
		{name: "replayed exec_command text of 0.11.1 starts with a Command line",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","rawOutput":"Command: /bin/bash -lc \"printf 'a\\\\nb\\\\n'; exit 3\"\nChunk ID: d38d93\nWall time: 0.0000 seconds\nProcess exited with code 3\nOriginal token count: 1\nOutput:\na\nb\n"}`,
			want:   one(accum.Observation{ToolCallID: "call_1", Status: done, Exit: ex(3, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "a\nb\n")}})},
		{name: "replayed exec_command text of a process killed: -1 is no exit",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","rawOutput":"Wall time: 0.0100 seconds\nProcess exited with code -1\nOutput:\nbefore-kill\n"}`,
			want:   one(accum.Observation{ToolCallID: "call_1", Status: done, Failed: true, Texts: []accum.Text{txt(C, F, "before-kill\n")}})},
		{name: "replayed exec_command text of a process still running: no exit, output so far",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","rawOutput":"Chunk ID: 9\nWall time: 10.0010 seconds\nProcess running with session ID 4\nOutput:\nstart\n"}`,
			want:   one(accum.Observation{ToolCallID: "call_1", Status: done, Texts: []accum.Text{txt(C, S, "start\n")}})},
		{name: "replayed exec_command text cut for the model is truncated",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","rawOutput":"Wall time: 0.2 seconds\nProcess exited with code 0\nOriginal token count: 90000\nOutput:\n1\n…228894 chars truncated…\n60000\n"}`,
			want: one(accum.Observation{ToolCallID: "call_1", Status: done, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{{Stream: C, Kind: F, Text: "1\n…228894 chars truncated…\n60000\n", Truncated: true}}})},
		{name: "replayed shell_command text: Exit code header",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_2","status":"completed","rawOutput":"Exit code: 1\nWall time: 0 seconds\nOutput:\nboom\n"}`,
			want:   one(accum.Observation{ToolCallID: "call_2", Status: done, Exit: ex(1, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "boom\n")}})},
		// codex-acp 0.16.0 shell_command, session/load (recorded): a
		// command killed at its 2 s timeout replays its model-facing
		// text, where Codex's timeout sentence opens the output as it
		// opens formatted_output live: it says the call timed out, and
		// is no output.
		{name: "replayed shell_command timeout: Codex's timeout sentence is no output, the call timed out",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_timeout_5","status":"completed","rawOutput":"Exit code: 124\nWall time: 2 seconds\nOutput:\ncommand timed out after 2003 milliseconds\nstart\n"}`,
			want:   one(accum.Observation{ToolCallID: "call_timeout_5", Status: done, Exit: ex(124, accum.ExitText, false), TimedOut: true, Texts: []accum.Text{txt(C, F, "start\n")}})},
		{name: "replayed text of an exit 0 opening with the timeout sentence: output, no timeout",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_2","status":"completed","rawOutput":"Exit code: 0\nWall time: 0 seconds\nOutput:\ncommand timed out after 100 milliseconds\nretrying... ok\n"}`,
			want:   one(accum.Observation{ToolCallID: "call_2", Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "command timed out after 100 milliseconds\nretrying... ok\n")}})},
		// codex-acp 0.16.0 shell_command, session/load (recorded): a
		// shell killed by a signal replays Codex's error text alone, the
		// same words formatted_output has live: the signal, no output.
		{name: "replayed Sandbox(Signal(9)): SIGKILL, a failure, not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_kill_2","status":"completed","rawOutput":"execution error: Sandbox(Signal(9))"}`,
			want:   one(accum.Observation{ToolCallID: "call_kill_2", Status: done, Signal: "SIGKILL", Failed: true})},
		{name: "replayed Sandbox(Signal(15)): SIGTERM, a failure, not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_term_26","status":"completed","rawOutput":"execution error: Sandbox(Signal(15))"}`,
			want:   one(accum.Observation{ToolCallID: "call_term_26", Status: done, Signal: "SIGTERM", Failed: true})},
		{name: "replayed other execution error: a failure, neither output nor an exit",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","rawOutput":"execution error: Io(NotFound)"}`,
			want:   one(accum.Observation{ToolCallID: "call_1", Status: done, Failed: true, FailNotice: "execution error: Io(NotFound)"})},
		// The TypeScript adapter 1.x replays the model-facing text as
		// formatted_output beside exit_code (constructed from the
		// 0.16.0 text above): the timeout is read there too.
		{name: "TS 1.x replay of a shell tool's timeout text in formatted_output: timed out, the sentence no output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"formatted_output":"Exit code: 124\nWall time: 2 seconds\nOutput:\ncommand timed out after 2003 milliseconds\nstart\n","exit_code":124}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: failed, Exit: ex(124, accum.ExitStructured, false), TimedOut: true, Texts: []accum.Text{txt(C, F, "start\n")}})},
		{name: "replayed tool error: a failure, neither output nor an exit",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","rawOutput":"exec_command failed: CreateProcess { message: \"No such file\" }"}`,
			want:   one(accum.Observation{ToolCallID: "call_1", Status: done, Failed: true, FailNotice: "exec_command failed: CreateProcess { message: \"No such file\" }"})},
		{name: "replayed text of another form is neither output nor an exit",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","rawOutput":"something Codex never said"}`,
			want:   one(accum.Observation{ToolCallID: "call_1", Status: done})},
		{name: "replayed unified exec abort: Cancelled, not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","rawOutput":"aborted by user after 2.0s"}`,
			want:   one(accum.Observation{ToolCallID: "call_1", Status: done, Cancelled: true, CancelNotice: "aborted by user"})},
		{name: "replayed shell_command abort: Cancelled, not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","rawOutput":"Wall time: 2.0 seconds\naborted by user"}`,
			want:   one(accum.Observation{ToolCallID: "call_1", Status: done, Cancelled: true, CancelNotice: "aborted by user"})},
		{name: "write_stdin replayed is not a shell call",
			update: `{"sessionUpdate":"tool_call","toolCallId":"call_3","title":"write_stdin","status":"completed","rawInput":{"session_id":4,"chars":""}}`,
			want:   one(accum.Observation{ToolCallID: "call_3", Opens: true, Status: done})},
		{name: "real CJK output with a newline is left alone",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"process_id":"1","aggregated_output":"你好\n","exit_code":0}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: done, Exit: ex(0, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "你好\n")}})},
	})
}

func TestCodexPermission(t *testing.T) {
	d := codexDialect(t)
	runObsCases(t, d, []obsCase{
		// The Rust adapter's ask text is the reason (when Codex gave one)
		// followed by its own sections: "Proposed Amendment: <argv, one
		// per line>", "Available Decisions: <one per line>", ... Those
		// describe the options, not why it asks.
		{name: "ask before the tool_call: command from the argv; amendment and decisions are no reason",
			ask: `{"toolCallId":"call_1","kind":"execute","status":"pending","title":"printf 'a'; exit 3","content":[{"type":"content","content":{"type":"text","text":"Proposed Amendment: printf\nAvailable Decisions: Approved\nAbort"}}],"rawInput":{"call_id":"call_1","command":["/bin/bash","-lc","printf 'a'; exit 3"],"cwd":"/w"}}`,
			want: one(accum.Observation{ToolCallID: "call_1", Shell: accum.ShellYes, Status: accum.StatusPending, Command: "printf 'a'; exit 3", Cwd: "/w",
				PermissionAsk: true})},
		{name: "0.7.4: only the amendment, its argv over several lines: no reason",
			ask:  `{"toolCallId":"call_3","kind":"execute","status":"pending","title":"Run rm -f notes.txt","content":[{"type":"content","content":{"type":"text","text":"Proposed Amendment: rm\n-f\nnotes.txt"}}],"rawInput":{"command":["/bin/bash","-lc","rm -f notes.txt"]}}`,
			want: one(accum.Observation{ToolCallID: "call_3", Shell: accum.ShellYes, Status: accum.StatusPending, Command: "rm -f notes.txt", PermissionAsk: true})},
		{name: "a reason line before the sections is the reason; a network context is kept",
			ask:  `{"toolCallId":"call_4","kind":"execute","title":"curl x","content":[{"type":"content","content":{"type":"text","text":"needs network\nProposed Amendment: curl\nx\nNetwork Approval Context: Https example.com\nAvailable Decisions: Approved\nAbort"}}],"rawInput":{"command":["curl","x"]}}`,
			want: one(accum.Observation{ToolCallID: "call_4", Shell: accum.ShellYes, Command: "curl x", PermissionAsk: true, ApprovalReason: "needs network\nNetwork Approval Context: Https example.com"})},
		{name: "another agent's text is the reason as it is",
			ask:  `{"toolCallId":"call_5","kind":"execute","title":"node x","content":[{"type":"content","content":{"type":"text","text":"Not in allowlist: node"}}],"rawInput":{"command":"node x"}}`,
			want: one(accum.Observation{ToolCallID: "call_5", Shell: accum.ShellYes, Command: "node x", PermissionAsk: true, ApprovalReason: "Not in allowlist: node"})},
		{name: "rawInput.reason is the reason when present",
			ask:  `{"toolCallId":"call_2","kind":"execute","title":"curl x","content":[{"type":"content","content":{"type":"text","text":"Reason: needs network\nAvailable Decisions: Approved"}}],"rawInput":{"command":["curl","x"],"reason":"needs network"}}`,
			want: one(accum.Observation{ToolCallID: "call_2", Shell: accum.ShellYes, Command: "curl x", PermissionAsk: true, ApprovalReason: "needs network"})},
	})
}

// codexSteps are the recorded steps' call id fragments and what must be
// reported for them.
type codexStep struct {
	id, command, exit, output, signal string
	timedOut, open                    bool
	// failed: the final observation reports a failure without an exit code.
	failed bool
}

func checkCodexRecording(t *testing.T, name string, steps []codexStep, splitStderr bool) {
	calls, _ := replayRecording(t, codexDialect(t), name)
	for _, s := range steps {
		c := findCall(t, calls, s.id)
		if c.shell != accum.ShellYes {
			t.Errorf("%s: not a shell", s.id)
		}
		if c.command != s.command {
			t.Errorf("%s: command %q, want %q", s.id, c.command, s.command)
		}
		if c.ended == s.open {
			t.Errorf("%s: ended=%v", s.id, c.ended)
		}
		if got := c.exitCode(); got != s.exit {
			t.Errorf("%s: exit %s, want %s", s.id, got, s.exit)
		}
		if c.signal != s.signal || c.timedOut != s.timedOut {
			t.Errorf("%s: signal %q timedOut %v", s.id, c.signal, c.timedOut)
		}
		if got := c.final().Failed; got != s.failed {
			t.Errorf("%s: Failed %v, want %v", s.id, got, s.failed)
		}
		if s.output != "" {
			if out, _ := c.output(accum.Combined); out != s.output {
				t.Errorf("%s: output %q, want %q", s.id, out, s.output)
			}
		}
		for _, tx := range c.texts {
			if strings.Contains(tx.Text, "```") || strings.Contains(tx.Text, "execution error") || strings.Contains(tx.Text, "timed out after") {
				t.Errorf("%s: metadata in output: %q", s.id, tx.Text)
			}
		}
	}
	stderr := findCall(t, calls, "call_stderr_5")
	if out, _ := stderr.output(accum.Stderr); splitStderr && out != "to-stderr\n" {
		t.Errorf("stderr stream %q", out)
	}
	if !splitStderr {
		for _, c := range calls {
			for _, tx := range c.texts {
				if tx.Stream != accum.Combined {
					t.Errorf("%s: split stream reported under the PTY exec tool", c.id)
				}
			}
		}
	}
}

func TestCodexRecordingShellCommandTerminalMeta(t *testing.T) {
	checkCodexRecording(t, "codex-acp-0.16.0_shell-command_terminal-meta.ndjson", []codexStep{
		{id: "call_ls_1", command: "ls", exit: "0", output: "alpha.txt\nbeta.md\ngamma.go\n"},
		{id: "call_exit3_3", command: `printf 'a\nb\n'; exit 3`, exit: "3", output: "a\nb\n"},
		{id: "call_stderr_5", command: "echo to-stdout; echo to-stderr >&2; echo more-stdout", exit: "0", output: "to-stdout\nmore-stdout\nto-stderr\n"},
		{id: "call_stderr_fail_7", command: "ls /nonexistent-dir-xyz", exit: "2", output: "ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n"},
		{id: "call_slow_9", command: "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done", exit: "0", output: "line1\nline2\nline3\nline4\nline5\n"},
		{id: "call_big_11", command: "seq 1 40000", exit: "0"},
		{id: "call_badutf8_13", command: `printf '\xff\xfe ok\n'`, exit: "0", output: "\xff\xfe ok\n"},
		{id: "call_timeout_15", command: "echo start; sleep 6; echo finished-late", exit: "124", output: "start\n", timedOut: true},
		{id: "call_signal_17", command: "echo before-kill; kill -9 $$", exit: "-", output: "before-kill\n", signal: "SIGKILL", failed: true},
	}, true)
	calls, _ := replayRecording(t, codexDialect(t), "codex-acp-0.16.0_shell-command_terminal-meta.ndjson")
	big := findCall(t, calls, "call_big_11")
	if out, tr := big.output(accum.Combined); len(out) != 228894 || tr || !strings.HasSuffix(out, "39999\n40000\n") {
		t.Errorf("big output: %d bytes, truncated %v", len(out), tr)
	}
}

func TestCodexRecordingUnifiedExecPlain(t *testing.T) {
	checkCodexRecording(t, "codex-acp-0.16.0_unified-exec_plain.ndjson", []codexStep{
		{id: "call_ls_1", command: "ls", exit: "0", output: "alpha.txt\nbeta.md\ngamma.go\n"},
		{id: "call_exit3_3", command: `printf 'a\nb\n'; exit 3`, exit: "3", output: "a\nb\n"},
		{id: "call_stderr_5", command: "echo to-stdout; echo to-stderr >&2; echo more-stdout", exit: "0", output: "to-stderr\nto-stdout\nmore-stdout\n"},
		{id: "call_stderr_fail_7", command: "ls /nonexistent-dir-xyz", exit: "2"},
		{id: "call_slow_9", command: "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done", exit: "0", output: "line2\nline3\nline4\nline5\n"},
		{id: "call_big_11", command: "seq 1 40000", exit: "0"},
		{id: "call_badutf8_13", command: `printf '\xff\xfe ok\n'`, exit: "0", output: "\ufffd\ufffd ok\n"},
		// Codex never closed this call under its default exec tool.
		{id: "call_timeout_15", command: "echo start; sleep 6; echo finished-late", exit: "-", open: true},
		// No signal text here: Codex's -1 is its "no exit code" sentinel.
		{id: "call_signal_17", command: "echo before-kill; kill -9 $$", exit: "-", output: "before-kill\n", failed: true},
	}, false)
}

func TestCodexRecordingUntrustedApproval(t *testing.T) {
	calls, _ := replayRecording(t, codexDialect(t), "codex-acp-0.16.0_unified-exec_untrusted-approval.ndjson")
	c := findCall(t, calls, "call_exit3_3")
	if c.asks == 0 || c.exitCode() != "3" || c.command != `printf 'a\nb\n'; exit 3` {
		t.Errorf("exit3: %+v", c)
	}
	// The ask's text is only the adapter's amendment and decisions: no
	// reason is on the wire.
	if len(c.reasons) != 1 || c.reasons[0] != "" {
		t.Errorf("reasons %q", c.reasons)
	}
	for _, tx := range c.texts {
		if strings.Contains(tx.Text, "Proposed Amendment") {
			t.Errorf("ask text in output: %q", tx.Text)
		}
	}
	slow := findCall(t, calls, "call_slow_5")
	if slow.asks == 0 || slow.exitCode() != "0" {
		t.Errorf("slow: %+v", slow)
	}
	if ls := findCall(t, calls, "call_ls_1"); ls.asks > 0 || ls.exitCode() != "0" {
		t.Errorf("ls: %+v", ls)
	}
}

func TestRawTextHasPrefix(t *testing.T) {
	for _, tc := range []struct {
		lit, p string
		want   bool
	}{
		{`"execution error: x"`, "execution error: ", true},
		{`"execution error: "`, "execution error: ", true},
		{`"execution error:"`, "execution error: ", false},
		{`"exec"`, "execution error: ", false},
		{`"\u0065xecution error: x"`, "execution error: ", true},
		{`"execution\u0020error: x"`, "execution error: ", true},
		{`"execution error\n x"`, "execution error: ", false},
		{"\"execution \xffrror: \"", "execution error: ", false},
		{`""`, "e", false},
	} {
		var r rawText
		r.UnmarshalJSON([]byte(tc.lit))
		if got := r.HasPrefix(tc.p); got != tc.want {
			t.Errorf("%s HasPrefix %q = %v", tc.lit, tc.p, got)
		}
		if got := strings.HasPrefix(r.Str().S, tc.p); got != tc.want {
			t.Errorf("%s: case disagrees with unquote", tc.lit)
		}
	}
}

// TestCodexWrapperOnce: Codex's own wrapper (Rust argv ["/bin/bash","-lc",X],
// TS "/bin/zsh -lc '...'") is removed once; a wrapper the model wrote
// inside it is the command. The TS permission ask re-quotes the command
// as one shell word, which is unquoted there, and only there.
func TestCodexWrapperOnce(t *testing.T) {
	d := codexDialect(t)
	yes, running := accum.ShellYes, accum.StatusRunning
	runObsCases(t, d, []obsCase{
		{name: "Rust argv: the model's sh -c inside the adapter's bash -lc",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"x","status":"in_progress","rawInput":{"command":["/bin/bash","-lc","sh -c 'echo hi'"],"cwd":"/w"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Status: running, Command: "sh -c 'echo hi'", Cwd: "/w"})},
		{name: "TS string: the model's bash -c inside the adapter's zsh -lc",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"x","status":"in_progress","rawInput":{"command":"/bin/zsh -lc 'bash -c '\"'\"'echo hi'\"'\"''","cwd":"/w"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Status: running, Command: "bash -c 'echo hi'", Cwd: "/w"})},
		{name: "TS ask: the command re-quoted as one shell word is unquoted",
			ask:  `{"toolCallId":"c1","kind":"execute","title":"x","status":"pending","rawInput":{"command":"\"printf '\\\\346'\"'$i; done'","cwd":"/w"}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: yes, Status: accum.StatusPending, Command: `printf '\346'$i; done`, Cwd: "/w", PermissionAsk: true})},
		{name: "TS 2.x tool_call: a command that is one quoted word is what ran",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","name":"exec_command","kind":"execute","title":"x","status":"in_progress","rawInput":{"command":"'./run tests.sh'","cwd":"/w"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Status: running, Command: `'./run tests.sh'`, Cwd: "/w"})},
		{name: "TS 1.x tool_call: the same",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"x","status":"in_progress","rawInput":{"command":"'$HOME'","cwd":"/w"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Status: running, Command: `'$HOME'`, Cwd: "/w"})},
		{name: "a plain one-word command stays",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"ls","status":"in_progress","rawInput":{"command":"ls","cwd":"/w"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: yes, Status: running, Command: "ls", Cwd: "/w"})},
	})
}

// TestCodexPTYStdoutBeatsCutFormattedOutput: under the unified exec tool's
// PTY, stdout is the whole combined output; without aggregated_output it
// is used before formatted_output, which Codex cuts to about 10 KB.
func TestCodexPTYStdoutBeatsCutFormattedOutput(t *testing.T) {
	d := codexDialect(t)
	runObsCases(t, d, []obsCase{
		{name: "pty stdout, no aggregated_output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"process_id":"9","stdout":"1\n2\n3\n","stderr":"","formatted_output":"Total output lines: 3\n\n1\n…1 chars truncated…3\n","exit_code":0,"status":"completed"}}`,
			want: one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "1\n2\n3\n")}})},
	})
}

// TestCodexCommandIsRawInput: the command is rawInput.command whenever it
// is there. Only an adapter's own wrapper is removed: the Rust adapter's
// argv and the older TypeScript adapter's "/bin/zsh -lc '...'" (its shell
// by absolute path); the TS 2.x adapter (frames with a `name`, even null)
// sends what the model wrote, and a title never replaces it.
func TestCodexCommandIsRawInput(t *testing.T) {
	d := codexDialect(t)
	for _, tc := range []struct {
		name, update, want string
		fromTitle          bool
	}{
		{"2.x: the model's bash -lc is the command", `{"sessionUpdate":"tool_call","toolCallId":"c","kind":"execute","title":"npm test","status":"in_progress","rawInput":{"command":"bash -lc 'npm test'","cwd":"/w"},"name":"exec_command"}`, "bash -lc 'npm test'", false},
		{"2.x with name null: still as written", `{"sessionUpdate":"tool_call","toolCallId":"c","kind":"execute","title":"x","status":"in_progress","rawInput":{"command":"/bin/bash -lc 'x'","cwd":"/w"},"name":null}`, "/bin/bash -lc 'x'", false},
		{"older TS adapter: its /bin/zsh -lc wrapper removed once", `{"sessionUpdate":"tool_call","toolCallId":"c","kind":"execute","title":"bash -c 'echo hi'","status":"in_progress","rawInput":{"command":"/bin/zsh -lc 'bash -c '\"'\"'echo hi'\"'\"''","cwd":"/w"}}`, "bash -c 'echo hi'", false},
		{"a relative bash -lc is the model's, kept", `{"sessionUpdate":"tool_call","toolCallId":"c","kind":"execute","title":"ls","status":"in_progress","rawInput":{"command":"bash -lc 'ls'","cwd":"/w"}}`, "bash -lc 'ls'", false},
		{"Rust argv wrapper removed", `{"sessionUpdate":"tool_call","toolCallId":"c","kind":"execute","title":"ls","status":"in_progress","rawInput":{"command":["/bin/bash","-lc","ls"],"cwd":"/w"}}`, "ls", false},
		{"no rawInput: the title, marked as a title", `{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute","title":"Read a.txt"}`, "Read a.txt", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Read(d, []byte(upd(tc.update)))
			require.NoError(t, err)
			require.Len(t, f.Observations, 1)
			assert.Equal(t, tc.want, f.Observations[0].Command)
			assert.Equal(t, tc.fromTitle, f.Observations[0].CommandFromTitle)
		})
	}
}

// TestCodexBuilds holds the readings that depend on the adapter's build
// (agentInfo.version), each seen on a recorded build.
func TestCodexBuilds(t *testing.T) {
	d := codexDialect(t)
	const (
		// codex-acp 0.7.4, unified exec, `echo before-kill; kill -9 $$`.
		killedPTY = `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"aggregated_output":"before-kill\r\n","exit_code":1,"formatted_output":"before-kill\r\n","process_id":"53707","source":"unified_exec_startup","stderr":"","stdout":"before-kill\r\n"}}`
		exit3PTY  = `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"aggregated_output":"a\r\n","exit_code":3,"process_id":"9","source":"unified_exec_startup","stdout":"a\r\n"}}`
		exit1Pipe = `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"aggregated_output":"","exit_code":1,"source":"agent","stderr":"","stdout":""}}`
		// codex-acp 0.9.5, unified exec, `seq 1 60000`: the aggregate is
		// the text Codex shortened for the model.
		shortBig = `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"aggregated_output":"Total output lines: 60000\n\n1\n2\n42…77224 tokens truncated…7\n59999\n60000\n","exit_code":0,"process_id":"9","source":"unified_exec_startup","stdout":"Total output lines: 60000\n\n1\n2\n42…77224 tokens truncated…7\n59999\n60000\n"}}`
		// codex-acp 0.4.4, unified exec: the end event has no process_id
		// and no source; the PTY shows only in its CRLF line ends. A
		// killed shell (`echo before-kill; kill -9 $$`) says exit 1, and
		// past Codex's limit (`seq 1 60000`) the aggregate is the text
		// shortened for the model without the "Total output lines"
		// header, which only formatted_output has; the cuts fall where
		// they fall (here inside a CRLF).
		killed044 = `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"aggregated_output":"before-kill\r\n","call_id":"c1","duration":{"nanos":261883,"secs":10},"exit_code":1,"formatted_output":"before-kill\r\n","stderr":"","stdout":"before-kill\r\n"}}`
		exit3044  = `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"aggregated_output":"a\r\nb\r\n","call_id":"c1","duration":{"nanos":1,"secs":0},"exit_code":3,"formatted_output":"a\r\nb\r\n","stderr":"","stdout":"a\r\nb\r\n"}}`
		big044    = `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"aggregated_output":"1\r\n2\r\n1018\r…398894 tokens truncated…\r\n59287\r\n59999\r\n60000\r\n","call_id":"c1","duration":{"nanos":507193,"secs":10},"exit_code":0,"formatted_output":"Total output lines: 1732\n\n1\r\n2\r\n\n[... omitted 1 of 1732 lines ...]\n\n59999\r\n60000\r\n","stderr":"","stdout":"1\r\n2\r\n1018\r…398894 tokens truncated…\r\n59287\r\n59999\r\n60000\r\n"}}`
		// codex-acp 0.4.4, shell_command (pipes): LF line ends, stdout
		// and stderr apart; the aggregate is the raw output, and Codex's
		// marker in it is the command's own.
		exit1Pipe044 = `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"aggregated_output":"x\n","call_id":"c1","duration":{"nanos":1,"secs":0},"exit_code":1,"formatted_output":"x\n","stderr":"","stdout":"x\n"}}`
		bigPipe044   = `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"aggregated_output":"1\n2…5 tokens truncated…9\n","call_id":"c1","duration":{"nanos":1,"secs":0},"exit_code":0,"formatted_output":"Total output lines: 2\n\n1\n2…5 tokens truncated…9\n","stderr":"","stdout":"1\n2…5 tokens truncated…9\n"}}`
	)
	C, F := accum.Combined, accum.Final
	failed := accum.StatusFailed
	killedOut := []accum.Text{txt(C, F, "before-kill\r\n")}
	for _, tc := range []struct {
		build, name, update string
		want                accum.Observation
	}{
		{"0.7.4", "PTY exit 1 is no evidence: Failed, exit unknown", killedPTY,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed, Failed: true, Texts: killedOut}},
		{"0.7.4", "PTY exit 3 is truthful", exit3PTY,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed, Exit: ex(3, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "a\r\n")}}},
		{"0.7.4", "exit 1 outside the PTY is truthful", exit1Pipe,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed, Exit: ex(1, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Stdout, F, ""), txt(accum.Stderr, F, "")}}},
		{"0.8.2", "0.8.2 sends 1 for a kill too", killedPTY,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed, Failed: true, Texts: killedOut}},
		// codex-acp-0.9.2_unified-exec_plain_full, call_kill_29:
		// `exit_code: -1` beside process_id and source.
		{"0.9.2", "0.9.2 sends -1 for a kill: its exit 1 is an exit 1", killedPTY,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed, Exit: ex(1, accum.ExitStructured, false), Texts: killedOut}},
		{"0.10.0", "so does 0.10.0", killedPTY,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed, Exit: ex(1, accum.ExitStructured, false), Texts: killedOut}},
		{"0.9.5", "a shortened aggregate: the tail after Codex's marker, truncated, never replacing fuller text", shortBig,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: C, Kind: accum.Window, Text: "7\n59999\n60000\n", Truncated: true}}}},
		// codex-acp-0.9.2_unified-exec_plain_full, call_big_17: the same
		// "Total output lines" header and "…N tokens truncated…" marker.
		{"0.9.2", "0.9.2 shortens the aggregate too", shortBig,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: C, Kind: accum.Window, Text: "7\n59999\n60000\n", Truncated: true}}}},
		{"0.10.0", "0.10.0 sends the raw output: such a text is output", shortBig,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(C, F, "Total output lines: 60000\n\n1\n2\n42…77224 tokens truncated…7\n59999\n60000\n")}}},
		{"0.4.4", "0.4.4: a CRLF-only output is the PTY's: its exit 1 is no evidence", killed044,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed, Failed: true, Texts: killedOut}},
		{"0.4.4", "0.4.4: PTY exit 3 is truthful", exit3044,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed, Exit: ex(3, accum.ExitStructured, false), Texts: []accum.Text{txt(C, F, "a\r\nb\r\n")}}},
		{"0.4.4", "0.4.4: the shortened aggregate without its header (only formatted_output has it): the tail after Codex's marker, truncated", big044,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: C, Kind: accum.Window, Text: "\r\n59287\r\n59999\r\n60000\r\n", Truncated: true}}}},
		{"0.4.4", "0.4.4 shell_command: exit 1 of a pipe (LF line ends) is truthful", exit1Pipe044,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed, Exit: ex(1, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Stdout, F, "x\n"), txt(accum.Stderr, F, ""), txt(C, F, "x\n")}}},
		{"0.4.4", "0.4.4 shell_command: Codex's marker in a pipe's raw output is output", bigPipe044,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Stdout, F, "1\n2…5 tokens truncated…9\n"), txt(accum.Stderr, F, ""), txt(C, F, "1\n2…5 tokens truncated…9\n")}}},
		{"0.10.0", "from 0.10.0 CRLF line ends alone are no PTY sign (its end events name their source)", killed044,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed, Exit: ex(1, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Stdout, F, "before-kill\r\n"), txt(accum.Stderr, F, ""), txt(C, F, "before-kill\r\n")}}},
		{"", "an unknown build reads with the newest rules", killedPTY,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed, Exit: ex(1, accum.ExitStructured, false), Texts: killedOut}},
		{"2.6.0", "the TypeScript adapter's versions are not the Rust adapter's", killedPTY,
			accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed, Exit: ex(1, accum.ExitStructured, false), Texts: killedOut}},
	} {
		t.Run(tc.build+" "+tc.name, func(t *testing.T) {
			got, err := readCase(Bind(d, ParseVersion(tc.build)), tc.update, "")
			require.NoError(t, err)
			assert.Equal(t, []accum.Observation{tc.want}, withoutProvenance(got))
		})
	}
}

// TestCodexRawOutputDecodesAlike holds rawOutput's two shapes (the end
// event, the replayed text) and its type errors to one reading, whichever
// decoder runs.
func TestCodexRawOutputDecodesAlike(t *testing.T) {
	d := codexDialect(t)
	for _, raw := range []string{
		`"Chunk ID: 1\nWall time: 0 seconds\nProcess exited with code 3\nOutput:\nx\n"`,
		`"bad \ud800 text"`,
		`{"exit_code":3,"timed_out":"yes","aggregated_output":"x\n"}`,
		`{"exit_code":"3","stdout":7,"stderr":"e"}`,
		`{"exit_code":3,"exit_code":4}`,
		`{"formatted_output":"","exit_code":null}`, `{"exit_code":{}}`, `{"formatted_output":null}`, `{"stdout":"x","success":true}`,
		`[1,2]`, `7`, `null`, `true`,
	} {
		msg := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":` + raw + `,"title":"after"}}}`
		readBoth(t, d, []byte(msg))
	}
}

// TestCodexReplaySources: a replayed call says where its command, exit and
// output came from and what was kept out of output, for replay --explain.
func TestCodexReplaySources(t *testing.T) {
	d := codexDialect(t)
	open, err := readCase(d, `{"sessionUpdate":"tool_call","toolCallId":"c","title":"exec_command","status":"completed","rawInput":{"cmd":"exit 3","workdir":"/w"}}`, "")
	require.NoError(t, err)
	require.Len(t, open, 1)
	assert.Equal(t, accum.Sources{Command: "rawInput.cmd", Cwd: "rawInput.workdir"}, open[0].Src)

	end, err := readCase(d, `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":"Wall time: 0 seconds\nProcess exited with code 3\nOutput:\nx\n"}`, "")
	require.NoError(t, err)
	require.Len(t, end, 1)
	assert.Equal(t, accum.Sources{Exit: "exit line of the model-facing text", Output: "rawOutput (the model-facing text)", Notice: "header of the model-facing text"}, end[0].Src)
}

// TestCodexEndEventMakesAShellCall: Codex classifies a lone listing, read
// or search command (ls, cat, rg) and the TypeScript adapter then opens it
// as kind read or search with no rawInput and no terminal. When nothing
// was streamed, the end event's rawOutput {formatted_output, exit_code}
// is the only sign that a command ran; only a command execution's end
// event carries those members in either adapter. Frames from the
// codex-acp 1.1.4 load recording (ls /nonexistent-dir-xyz, exit 2).
func TestCodexEndEventMakesAShellCall(t *testing.T) {
	d := codexDialect(t)
	no, done, failed := accum.ShellNo, accum.StatusCompleted, accum.StatusFailed
	open := `{"sessionUpdate":"tool_call","toolCallId":"call_stderr_fail_8","status":"in_progress","kind":"read","title":"List files in 'nonexistent-dir-xyz'"}`
	end := `{"sessionUpdate":"tool_call_update","toolCallId":"call_stderr_fail_8","status":"failed","rawOutput":{"formatted_output":"","exit_code":2}}`
	runObsCases(t, d, []obsCase{
		{name: "1.1.4: a listing opens as kind read with no rawInput: not yet known to be a shell; the title describes it",
			update: open,
			want: one(accum.Observation{ToolCallID: "call_stderr_fail_8", Opens: true, Shell: no, Status: accum.StatusRunning,
				Description: "List files in 'nonexistent-dir-xyz'"})},
		{name: "1.1.4: its only end frame, rawOutput {formatted_output, exit_code}, is a command's end event",
			update: end,
			want:   one(accum.Observation{ToolCallID: "call_stderr_fail_8", Shell: accum.ShellYes, Status: failed, Exit: ex(2, accum.ExitStructured, false)})},
		{name: "an end event with exit_code null is still a command's (a declined one)",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"formatted_output":"","exit_code":null}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: failed})},
		{name: "Rust end event with aggregated_output alone is a command's",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"aggregated_output":"x\n"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: done, Texts: []accum.Text{txt(accum.Combined, accum.Final, "x\n")}})},
		// The same call replayed on session/load (1.1.4): the tool's
		// model-facing text in rawOutput.output. Its header is Codex's
		// statement, not output; the text alone does not make a shell
		// call (write_stdin's text has the same form).
		{name: "1.1.4 replay: rawOutput.output's header gives the exit and is no output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_stderr_fail_8","status":"failed","rawOutput":{"output":"Chunk ID: e6ecf2\nWall time: 0.0021 seconds\nProcess exited with code 2\nOriginal token count: 17\nOutput:\nls: cannot access '/nonexistent-dir-xyz': No such file or directory\n"}}`,
			want: one(accum.Observation{ToolCallID: "call_stderr_fail_8", Status: failed, Exit: ex(2, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n")}})},
		{name: "replayed rawOutput.output of a stopped command is a cancel, not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"output":"aborted by user after 2.0s"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: failed, Cancelled: true, CancelNotice: "aborted by user"})},
		{name: "rawOutput.output of another form is read as before",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"output":"Success. Updated the following files:\nM a.go\n"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: done, Texts: []accum.Text{txt(accum.Combined, accum.Final, "Success. Updated the following files:\nM a.go\n")}})},
	})

	// What must stay no shell: Codex's own tools that are not commands
	// (no command, no exit code), whatever their kind.
	for _, f := range []struct{ name, update string }{
		{"TS image view: kind read, rawInput {path}",
			`{"sessionUpdate":"tool_call","toolCallId":"v1","kind":"read","title":"View Image /w/a.png","status":"completed","content":[{"type":"content","content":{"type":"resource_link","name":"/w/a.png","uri":"/w/a.png"}}],"locations":[{"path":"/w/a.png"}],"rawInput":{"path":"/w/a.png"}}`},
		{"TS web search: kind search, rawInput {query}",
			`{"sessionUpdate":"tool_call","toolCallId":"w1","kind":"search","title":"Searching the web","status":"completed","rawInput":{"query":"acp"}}`},
		{"Rust patch apply end: stdout, stderr and success are no command's end event",
			`{"sessionUpdate":"tool_call_update","toolCallId":"p1","status":"completed","rawOutput":{"call_id":"p1","turn_id":"t","stdout":"Success. Updated the following files:\nM a.go\n","stderr":"","success":true,"changes":{}}}`},
		{"MCP result, even naming exit_code in its text",
			`{"sessionUpdate":"tool_call_update","toolCallId":"m1","status":"completed","rawOutput":{"result":{"content":[{"type":"text","text":"exit_code"}]},"error":null}}`},
		{"Rust dynamic tool response",
			`{"sessionUpdate":"tool_call_update","toolCallId":"d1","status":"completed","rawOutput":{"call_id":"d1","turn_id":"t","content_items":[],"success":true,"error":null}}`},
	} {
		obs, err := readCase(d, f.update, "")
		require.NoError(t, err, f.name)
		require.Len(t, obs, 1, f.name)
		assert.NotEqual(t, accum.ShellYes, obs[0].Shell, f.name)
	}

	// Folded as a client folds them: one ShellExec, FAILED with exit 2.
	c := accum.NewCall("call_stderr_fail_8", 1<<20)
	for _, f := range []string{open, end} {
		obs, err := readCase(d, f, "")
		require.NoError(t, err)
		for i := range obs {
			c.Apply(&obs[i])
		}
	}
	require.True(t, c.IsShell(), "a command that ran (exit 2) is a shell call")
	r, ok := c.Revision()
	require.True(t, ok)
	assert.Equal(t, accum.Ended, r.State)
	assert.Equal(t, accum.Failed, r.Outcome)
	require.NotNil(t, r.ExitCode)
	assert.Equal(t, int32(2), *r.ExitCode)
	assert.Equal(t, "List files in 'nonexistent-dir-xyz'", r.Description, "no command is on the wire; the title describes it")
}

// TestCodexReplayNeverWorse folds what codex-acp 0.16.0 (shell_command,
// terminal meta) sent for a command its 2 s timeout killed, a shell killed
// by SIGKILL and one killed by SIGTERM: the live frames, then the frames
// session/load replays for them, as a session folds them (replayed
// observations are accum.Observation.Replayed). Read alone, as by a
// client that joins at session/load, the replay says what the live run
// said, less the output it does not repeat; after the live run it
// changes nothing.
func TestCodexReplayNeverWorse(t *testing.T) {
	d := codexDialect(t)
	// loadOnlyOutput: the replay repeats the output of a timeout, not
	// the output before a kill.
	type want struct {
		exit           *int32
		signal, output string
		timedOut       bool
		loadOnlyOutput string
	}
	code := func(n int32) *int32 { return &n }
	for _, tc := range []struct {
		name       string
		live, load []string
		want       want
	}{
		{name: "timeout",
			live: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_timeout_5","title":"echo start; sleep 6; echo finished-late","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"call_timeout_5"}],"rawInput":{"call_id":"call_timeout_5","turn_id":"01a244fc-c3a0-7f62-9ea6-3b30241d5fb4","started_at_ms":1796453745630,"command":["/bin/bash","-lc","echo start; sleep 6; echo finished-late"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"echo start; sleep 6; echo finished-late"}],"source":"agent"},"_meta":{"terminal_info":{"terminal_id":"call_timeout_5","cwd":"/home/dev/work/proj"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_timeout_5","_meta":{"terminal_output":{"terminal_id":"call_timeout_5","data":"start\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_timeout_5","status":"failed","rawOutput":{"call_id":"call_timeout_5","turn_id":"01a244fc-c3a0-7f62-9ea6-3b30241d5fb4","completed_at_ms":1796453747634,"command":["/bin/bash","-lc","echo start; sleep 6; echo finished-late"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"echo start; sleep 6; echo finished-late"}],"source":"agent","stdout":"start\n","stderr":"","aggregated_output":"start\n","exit_code":124,"duration":{"secs":2,"nanos":3198427},"formatted_output":"command timed out after 2003 milliseconds\nstart\n","status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_timeout_5","exit_code":124,"signal":null}}}`,
			},
			load: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_timeout_5","title":"echo start; sleep 6; echo finished-late","kind":"execute","status":"completed","rawInput":{"command":"echo start; sleep 6; echo finished-late","timeout_ms":2000}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_timeout_5","status":"completed","rawOutput":"Exit code: 124\nWall time: 2 seconds\nOutput:\ncommand timed out after 2003 milliseconds\nstart\n"}`,
			},
			want: want{exit: code(124), timedOut: true, output: "start\n", loadOnlyOutput: "start\n"}},
		{name: "SIGKILL",
			live: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_kill_2","title":"echo before-kill; kill -9 $$","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"call_kill_2"}],"rawInput":{"call_id":"call_kill_2","turn_id":"01a244fc-c305-7030-82b2-afae5073af35","started_at_ms":1796453745501,"command":["/bin/bash","-lc","echo before-kill; kill -9 $$"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"echo before-kill; kill -9 $$"}],"source":"agent"},"_meta":{"terminal_info":{"terminal_id":"call_kill_2","cwd":"/home/dev/work/proj"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_kill_2","_meta":{"terminal_output":{"terminal_id":"call_kill_2","data":"before-kill\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_kill_2","status":"failed","rawOutput":{"call_id":"call_kill_2","turn_id":"01a244fc-c305-7030-82b2-afae5073af35","completed_at_ms":1796453745508,"command":["/bin/bash","-lc","echo before-kill; kill -9 $$"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"echo before-kill; kill -9 $$"}],"source":"agent","stdout":"","stderr":"execution error: Sandbox(Signal(9))","aggregated_output":"execution error: Sandbox(Signal(9))","exit_code":-1,"duration":{"secs":0,"nanos":0},"formatted_output":"execution error: Sandbox(Signal(9))","status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_kill_2","exit_code":-1,"signal":null}}}`,
			},
			load: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_kill_2","title":"echo before-kill; kill -9 $$","kind":"execute","status":"completed","rawInput":{"command":"echo before-kill; kill -9 $$"}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_kill_2","status":"completed","rawOutput":"execution error: Sandbox(Signal(9))"}`,
			},
			want: want{signal: "SIGKILL", output: "before-kill\n"}},
		{name: "SIGTERM",
			live: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_term_26","title":"echo before-term; kill -15 $$","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"call_term_26"}],"rawInput":{"call_id":"call_term_26","turn_id":"01a244f2-b7c6-79d3-ae27-f9f96e356fe8","started_at_ms":1796453087237,"command":["/bin/bash","-lc","echo before-term; kill -15 $$"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"echo before-term; kill -15 $$"}],"source":"agent"},"_meta":{"terminal_info":{"terminal_id":"call_term_26","cwd":"/home/dev/work/proj"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_term_26","_meta":{"terminal_output":{"terminal_id":"call_term_26","data":"before-term\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_term_26","status":"failed","rawOutput":{"call_id":"call_term_26","turn_id":"01a244f2-b7c6-79d3-ae27-f9f96e356fe8","completed_at_ms":1796453087243,"command":["/bin/bash","-lc","echo before-term; kill -15 $$"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"echo before-term; kill -15 $$"}],"source":"agent","stdout":"","stderr":"execution error: Sandbox(Signal(15))","aggregated_output":"execution error: Sandbox(Signal(15))","exit_code":-1,"duration":{"secs":0,"nanos":0},"formatted_output":"execution error: Sandbox(Signal(15))","status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_term_26","exit_code":-1,"signal":null}}}`,
			},
			load: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_term_26","title":"echo before-term; kill -15 $$","kind":"execute","status":"completed","rawInput":{"command":"echo before-term; kill -15 $$"}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_term_26","status":"completed","rawOutput":"execution error: Sandbox(Signal(15))"}`,
			},
			want: want{signal: "SIGTERM", output: "before-term\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// fold applies frames to c, replayed or not, and returns the
			// last revision and the last combined text it carried.
			fold := func(c *accum.Call, frames []string, replayed bool, last *accum.Revision, out *string) {
				for _, f := range frames {
					obs, err := readCase(d, f, "")
					require.NoError(t, err)
					for i := range obs {
						obs[i].Replayed = replayed
						c.Apply(&obs[i])
						if r, ok := c.Revision(); ok {
							*last = r
							if t := r.Texts[accum.Combined]; t != nil {
								*out = t.Text
							}
						}
					}
				}
			}
			check := func(what string, r accum.Revision, out string, output string) {
				t.Helper()
				assert.Equal(t, accum.Ended, r.State, what)
				assert.Equal(t, accum.Failed, r.Outcome, "%s: %s", what, r.OutcomeReason)
				assert.Equal(t, tc.want.exit, r.ExitCode, what)
				assert.Equal(t, tc.want.signal, r.Signal, what)
				assert.Equal(t, tc.want.timedOut, r.TimedOut, what)
				assert.Equal(t, output, out, what)
			}

			live := accum.NewCall("c", 1<<20)
			var r accum.Revision
			out := ""
			fold(live, tc.live, false, &r, &out)
			check("live", r, out, tc.want.output)
			fold(live, tc.load, true, &r, &out)
			check("live, then the replay", r, out, tc.want.output)

			alone := accum.NewCall("c", 1<<20)
			r, out = accum.Revision{}, ""
			fold(alone, tc.load, true, &r, &out)
			check("the replay alone", r, out, tc.want.loadOnlyOutput)
		})
	}
}

// TestCodexTS2ReplayedEndEvent: the TypeScript adapter 2.x (2.0.1 and
// 2.6.0 recorded) replays a lone listing command on session/load as a
// tool_call that already says completed or failed, then its end event
// with the status left out (the adapter drops a field that did not change
// since the call's last report): rawOutput {exit_code} and the output as a
// terminal delta. That frame is the end event whatever its status: the
// adapter sends rawOutput {exit_code} only from a command's end
// (commandEndRawOutput), so its exit code is the command's, no
// placeholder. Frames from codex-acp2-2.0.1_plain_load (agent_proc 2).
func TestCodexTS2ReplayedEndEvent(t *testing.T) {
	d := codexDialect(t)
	for _, tc := range []struct {
		name, open, end string
		outcome         accum.Outcome
		exit            int32
	}{
		{"ok", `{"sessionUpdate":"tool_call","toolCallId":"call_ok_2","name":"exec_command","kind":"read","title":"List files","status":"completed"}`,
			`{"sessionUpdate":"tool_call_update","toolCallId":"call_ok_2","rawOutput":{"exit_code":0},"_meta":{"terminal_output_delta":{"data":"alpha.txt\nbeta.md\ngamma.go\nnotes.txt\n","terminal_id":"call_ok_2"}}}`,
			accum.Succeeded, 0},
		{"stderr_fail", `{"sessionUpdate":"tool_call","toolCallId":"call_stderr_fail_9","name":"exec_command","kind":"read","title":"List files in 'nonexistent-dir-xyz'","status":"failed"}`,
			`{"sessionUpdate":"tool_call_update","toolCallId":"call_stderr_fail_9","rawOutput":{"exit_code":2},"_meta":{"terminal_output_delta":{"data":"ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n","terminal_id":"call_stderr_fail_9"}}}`,
			accum.Failed, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end, err := readCase(d, tc.end, "")
			require.NoError(t, err)
			require.Len(t, end, 1)
			assert.Equal(t, ex(tc.exit, accum.ExitStructured, false), end[0].Exit, "the end event's exit code is no placeholder")

			c := accum.NewCall("c", 1<<20)
			for _, f := range []string{tc.open, tc.end} {
				obs, err := readCase(d, f, "")
				require.NoError(t, err)
				for i := range obs {
					obs[i].Replayed = true
					c.Apply(&obs[i])
				}
			}
			r, ok := c.Revision()
			require.True(t, ok)
			assert.Equal(t, accum.Ended, r.State)
			assert.Equal(t, tc.outcome, r.Outcome, r.OutcomeReason)
			require.NotNil(t, r.ExitCode)
			assert.Equal(t, tc.exit, *r.ExitCode)
		})
	}

	// A frame that says it is still running keeps its exit code a
	// placeholder, as any live frame's (no recorded build sends one).
	obs, err := readCase(d, `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","rawOutput":{"exit_code":0}}`, "")
	require.NoError(t, err)
	require.Len(t, obs, 1)
	assert.Equal(t, ex(0, accum.ExitStructured, true), obs[0].Exit)
}

// TestCodexCRLFOnly: 0.4.4's unified exec shows its PTY only in its line
// ends; a cut Codex made for the model between CR and LF is no bare LF.
func TestCodexCRLFOnly(t *testing.T) {
	for s, want := range map[string]bool{
		"before-kill\r\n": true,
		"a\r\nb\r\n":      true,
		"1018\r…5 tokens truncated…\r\n59287\r\n": true,
		"1018\r…5 tokens truncated…\n59287\r\n":   true,
		"a\nb\n":                      false,
		"a\r\nb\n":                    false,
		"no newline":                  false,
		"":                            false,
		"a\r\n…5 tokens truncated…\n": false,
	} {
		assert.Equal(t, want, codexCRLFOnly(s), "%q", s)
	}
}

// codexUpd wraps an update in its session/update message.
func codexUpd(update string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":` + update + `}}`
}

// codexFrame is one message of a call and whether its observation says
// the call is a shell command.
type codexFrame struct {
	msg   string
	shell accum.Shell
}

// TestCodexMCPAndDynamicTools: the TypeScript adapter gives kind execute
// to calls that run no command, an MCP tool call (title
// "mcp.<server>.<tool>", rawInput {server, tool, arguments},
// `_meta.is_mcp_tool_call` on its tool_call) and a dynamic tool call
// (rawInput {arguments}), and asks for an MCP tool's approval with a
// bare toolCall {toolCallId, kind: "execute", status: "pending"} whose
// only sign is the request's own `_meta.is_mcp_tool_approval`. The frames
// are those the dist of each build writes (@agentclientprotocol/codex-acp
// 1.1.4, 1.13.1, 2.6.0, dist/index.js): the tool_call first (Codex's
// item/started comes before its elicitation), then the ask, the
// accepted call's in_progress, its progress and its end. None is a shell
// call, and the call folds to none.
func TestCodexMCPAndDynamicTools(t *testing.T) {
	d := codexDialect(t)
	no, unknown := accum.ShellNo, accum.ShellUnknown
	mcpOpen := func(status, rest string) string {
		return codexUpd(`{"sessionUpdate":"tool_call","toolCallId":"call_m1","kind":"execute","title":"mcp.docs.search","status":"` + status + `","rawInput":{"server":"docs","tool":"search","arguments":{"q":"acp"}}` + rest + `,"_meta":{"is_mcp_tool_call":true}}`)
	}
	mcpResult := `"rawOutput":{"result":{"content":[{"type":"text","text":"3 hits"}],"structuredContent":null},"error":null}`
	mcpAsk := func(options string) string {
		return `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"call_m1","kind":"execute","status":"pending"},"_meta":{"is_mcp_tool_approval":true},"options":` + options + `}}`
	}
	mcpAccepted := codexUpd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_m1","status":"in_progress"}`)
	mcpProgress := codexUpd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_m1","_meta":{"mcp_output_delta":{"data":"searching"}}}`)
	mcpEnd := codexUpd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_m1","status":"completed","rawInput":{"server":"docs","tool":"search","arguments":{"q":"acp"}},` + mcpResult + `}`)
	options1 := `[{"optionId":"allow_once","name":"Allow","kind":"allow_once"},{"optionId":"decline","name":"Decline","kind":"reject_once"}]`
	options2 := `[{"optionId":"allow_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Cancel","kind":"reject_once"}]`
	for _, tc := range []struct {
		name   string
		frames []codexFrame
	}{
		// 1.1.4 and 1.13.1: createMcpToolCallUpdate (its
		// createExecuteToolCallUpdate and `_meta: {is_mcp_tool_call:
		// true}`), buildPermissionRequest / buildMcpPermissionRequest
		// (correlated: the bare toolCall and the request's `_meta`), the
		// in_progress handleElicitation sends when the user allows it,
		// createMcpToolProgressEvent, completeItemEvent's mcpToolCall.
		{"1.x MCP tool call, its approval asked", []codexFrame{
			{mcpOpen("in_progress", ""), no}, {mcpAsk(options1), no}, {mcpAccepted, unknown}, {mcpProgress, unknown}, {mcpEnd, no}}},
		// 2.6.0: McpToolReporter.started/completed through
		// AcpToolCallRenderer.render (standardMeta's mcpMeta), and
		// ElicitationReporter.permission/accepted.
		{"2.6.0 MCP tool call, its approval asked", []codexFrame{
			{mcpOpen("in_progress", ""), no}, {mcpAsk(options2), no}, {mcpAccepted, unknown}, {mcpProgress, unknown}, {mcpEnd, no}}},
		{"MCP tool call replayed on session/load: one tool_call with its result", []codexFrame{
			{mcpOpen("completed", ","+mcpResult), no}}},
		// A form elicitation Codex could not correlate with a call: a
		// standalone ask under an id of its own (1.1.4: rawInput
		// {serverName, schema}, the message as content; 1.13.1 and
		// 2.6.0 also title "MCP tool call approval"), then (2.6.0)
		// ElicitationReporter.answered.
		{"1.1.4 standalone MCP tool approval", []codexFrame{
			{`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"elicitation-docs","kind":"execute","status":"pending","content":[{"type":"content","content":{"type":"text","text":"Allow docs to run search?"}}],"rawInput":{"serverName":"docs","schema":{"type":"object","properties":{}}}},"_meta":{"is_mcp_tool_approval":true},"options":` + options1 + `}}`, no}}},
		{"2.6.0 standalone MCP tool approval", []codexFrame{
			{`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"elicitation:s:docs:1","kind":"execute","status":"pending","title":"MCP tool call approval","rawInput":{"serverName":"docs","description":"Allow docs to run search?","schema":{"type":"object","properties":{}}},"content":[{"type":"content","content":{"type":"text","text":"Allow docs to run search?"}}]},"_meta":{"is_mcp_tool_approval":true},"options":` + options2 + `}}`, no},
			{codexUpd(`{"sessionUpdate":"tool_call_update","toolCallId":"elicitation:s:docs:1","status":"completed","rawOutput":{"action":"accept"}}`), unknown}}},
		// Dynamic tools: 1.1.4 createDynamicToolCallUpdate (rawInput
		// {arguments}, no name), 1.13.1 the same with `name`
		// (functionToolName), 2.6.0 DynamicToolReporter.started/completed.
		{"1.1.4 dynamic tool call", []codexFrame{
			{codexUpd(`{"sessionUpdate":"tool_call","toolCallId":"call_d1","kind":"execute","title":"lookup","status":"in_progress","rawInput":{"arguments":{"id":7}}}`), no},
			{codexUpd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_d1","status":"completed"}`), unknown}}},
		{"1.13.1 dynamic tool call", []codexFrame{
			{codexUpd(`{"sessionUpdate":"tool_call","toolCallId":"call_d1","kind":"execute","title":"lookup","status":"in_progress","rawInput":{"arguments":{"id":7}},"name":"lookup"}`), no},
			{codexUpd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_d1","name":"lookup","status":"completed"}`), unknown}}},
		{"2.6.0 dynamic tool call", []codexFrame{
			{codexUpd(`{"sessionUpdate":"tool_call","toolCallId":"call_d1","name":"lookup","kind":"execute","title":"lookup","status":"in_progress","rawInput":{"arguments":{"id":7}}}`), no},
			{codexUpd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_d1","name":"lookup","status":"completed","content":[{"type":"content","content":{"type":"text","text":"seven"}}]}`), unknown}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c *accum.Call
			for i, fr := range tc.frames {
				f, err := Read(d, []byte(fr.msg))
				require.NoError(t, err, "frame %d", i)
				require.Len(t, f.Observations, 1, "frame %d", i)
				o := &f.Observations[0]
				assert.Equal(t, fr.shell, o.Shell, "frame %d", i)
				if fr.shell == no {
					assert.Empty(t, o.Unrecognized, "frame %d: a known tool, no shell it missed", i)
				}
				if c == nil {
					c = accum.NewCall(o.ToolCallID, 1<<20)
				}
				c.Apply(o)
			}
			assert.False(t, c.IsShell(), "no shell call")
			assert.True(t, c.NotShell(), "said to be another tool")
		})
	}
}

// TestCodexCommandAsksStayShells: the command asks and the shell tool
// calls of every build are still shell calls beside the MCP reading
// above (the asks as recorded, 1.1.4's with its `_meta.codex.params` and
// the rawInput null it sends for an ask without a command).
func TestCodexCommandAsksStayShells(t *testing.T) {
	d := codexDialect(t)
	for _, tc := range []struct {
		name, msg, command string
	}{
		{"1.1.4 command ask", `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"call_reject_32","kind":"execute","status":"pending","rawInput":{"command":"rm -f notes.txt && echo removed","cwd":"/w"}},"options":[{"optionId":"reject_once","name":"Reject","kind":"reject_once","_meta":{"codex":{"decision":"decline"}}}],"_meta":{"codex":{"params":{"itemId":"call_reject_32","command":"/bin/bash -lc 'rm -f notes.txt && echo removed'","cwd":"/w"}}}}}`, "rm -f notes.txt && echo removed"},
		{"1.1.4 command ask without a command", `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"call_x","kind":"execute","status":"pending","rawInput":null},"options":[{"optionId":"reject_once","name":"Reject","kind":"reject_once"}],"_meta":{"codex":{"params":{"itemId":"call_x","command":null,"cwd":"/w"}}}}}`, ""},
		{"1.13.1 command ask", `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"call_reject_33","kind":"execute","status":"pending","title":"Run command","rawInput":{"command":"rm -f notes.txt && echo removed","cwd":"/w"}},"options":[{"optionId":"cancel","name":"No","kind":"reject_once"}],"_meta":{"permission":{"version":1,"title":"Run command?"}}}}`, "rm -f notes.txt && echo removed"},
		{"2.6.0 command ask", `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"call_reject_33","title":"rm -f notes.txt && echo removed","rawInput":{"command":"rm -f notes.txt && echo removed","cwd":"/w"},"kind":"execute","status":"pending"},"options":[{"optionId":"cancel","name":"No","kind":"reject_once"}]}}`, "rm -f notes.txt && echo removed"},
		{"2.6.0 exec_command", codexUpd(`{"sessionUpdate":"tool_call","toolCallId":"call_1","name":"exec_command","kind":"execute","title":"echo hi","status":"in_progress","rawInput":{"command":"echo hi","cwd":"/w"}}`), "echo hi"},
	} {
		f, err := Read(d, []byte(tc.msg))
		require.NoError(t, err, tc.name)
		require.Len(t, f.Observations, 1, tc.name)
		assert.Equal(t, accum.ShellYes, f.Observations[0].Shell, tc.name)
		assert.Equal(t, tc.command, f.Observations[0].Command, tc.name)
	}
}

// TestCodexReplayedJSONShellOutput: codex-acp 0.14.0 (recorded: its
// shell-command_terminal-meta load, load-long and tricky-load) replays a
// shell_command's result not as the "Exit code: N\nWall time: ...\nOutput:"
// text of 0.11.1 and 0.16.0 but as the JSON Codex gives the model for its
// shell tools, in a string: {"output": ..., "metadata": {"exit_code": N,
// "duration_seconds": S}}. The exit code and the output are there; the
// output holds Codex's timeout sentence beside its 124 and, for a long
// output, its "Total output lines: N" header over an elision marker, as
// the text form does.
func TestCodexReplayedJSONShellOutput(t *testing.T) {
	d := codexDialect(t)
	C, F := accum.Combined, accum.Final
	done := accum.StatusCompleted
	update := func(id, raw string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"completed","rawOutput":` + raw + `}`
	}
	runObsCases(t, d, []obsCase{
		{name: "an exit 3 and its output",
			update: update("call_exit3_5", `"{\"output\":\"a\\nb\\n\",\"metadata\":{\"exit_code\":3,\"duration_seconds\":0.0}}"`),
			want:   one(accum.Observation{ToolCallID: "call_exit3_5", Status: done, Exit: ex(3, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "a\nb\n")}})},
		{name: "an output that reads like Codex's exit words is output, the exit the metadata's",
			update: update("call_c_process_exited_20", `"{\"output\":\"Process exited with code 7\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}"`),
			want:   one(accum.Observation{ToolCallID: "call_c_process_exited_20", Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "Process exited with code 7\n")}})},
		{name: "a timeout: Codex's sentence beside its 124 is no output",
			update: update("call_timeout_8", `"{\"output\":\"command timed out after 2004 milliseconds\\nstart\\n\",\"metadata\":{\"exit_code\":124,\"duration_seconds\":2.0}}"`),
			want:   one(accum.Observation{ToolCallID: "call_timeout_8", Status: done, Exit: ex(124, accum.ExitText, false), TimedOut: true, Texts: []accum.Text{txt(C, F, "start\n")}})},
		{name: "the timeout sentence beside an exit 0 is output",
			update: update("c1", `"{\"output\":\"command timed out after 5 milliseconds\\nx\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}"`),
			want:   one(accum.Observation{ToolCallID: "c1", Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "command timed out after 5 milliseconds\nx\n")}})},
		{name: "a long output: the header over the marker is Codex's, the output truncated",
			update: update("call_big_5", `"{\"output\":\"Total output lines: 60000\\n\\n1\\n2\\n…338894 chars truncated…\\n59999\\n60000\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}"`),
			want: one(accum.Observation{ToolCallID: "call_big_5", Status: done, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{{Stream: C, Kind: F, Text: "1\n2\n…338894 chars truncated…\n59999\n60000\n", Truncated: true}}})},
		{name: "the header with no marker after it is the command's",
			update: update("c1", `"{\"output\":\"Total output lines: 3\\n\\nx\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}"`),
			want:   one(accum.Observation{ToolCallID: "c1", Status: done, Exit: ex(0, accum.ExitText, false), Texts: []accum.Text{txt(C, F, "Total output lines: 3\n\nx\n")}})},
		{name: "-1 is no exit",
			update: update("c1", `"{\"output\":\"before-kill\\n\",\"metadata\":{\"exit_code\":-1,\"duration_seconds\":0.0}}"`),
			want:   one(accum.Observation{ToolCallID: "c1", Status: done, Failed: true, Texts: []accum.Text{txt(C, F, "before-kill\n")}})},
		{name: "JSON of another shape is not read",
			update: update("c1", `"{\"output\":\"x\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0},\"more\":1}"`),
			want:   one(accum.Observation{ToolCallID: "c1", Status: done})},
		{name: "JSON without an exit code is not read",
			update: update("c1", `"{\"output\":\"x\\n\",\"metadata\":{\"duration_seconds\":0.0}}"`),
			want:   one(accum.Observation{ToolCallID: "c1", Status: done})},
	})
}

// undoUTF16Sniff undoes only texts with no ASCII character: one that
// opens with an ASCII byte is left as it is, valid UTF-8 or not, however
// it goes on.
func TestUndoUTF16SniffASCIIFirst(t *testing.T) {
	b, ok := undoUTF16Sniff("漠੫")
	require.True(t, ok)
	assert.Equal(t, []byte("\xff\xfe ok\n"), b)
	for _, s := range []string{"", "x", "x漠੫", "\n漠੫", "1\n2\n", "a\xff\xfe", "\x00漠"} {
		b, ok := undoUTF16Sniff(s)
		assert.False(t, ok, "%q", s)
		assert.Nil(t, b, "%q", s)
	}
}
