package dialect

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpencodeUpdate(t *testing.T) {
	d, ok := Lookup("opencode")
	if !ok {
		t.Fatal("opencode not registered")
	}
	tail := strings.Repeat("x", 30000)
	head := strings.Repeat("h", 30000)
	runObsCases(t, d, []obsCase{
		{
			name:   "synthetic pending tool_call: title bash is not the command",
			update: `{"sessionUpdate":"tool_call","toolCallId":"o1","title":"bash","kind":"execute","status":"pending","locations":[],"rawInput":{}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending}},
		},
		{
			name:   "title shell is not the command either; rawInput cwd is read",
			update: `{"sessionUpdate":"tool_call","toolCallId":"o1","title":"shell","kind":"execute","status":"pending","rawInput":{"cwd":"/w"}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Cwd: "/w"}},
		},
		{
			name:   "newer tool_call titled with the command",
			update: `{"sessionUpdate":"tool_call","toolCallId":"o1","title":"npm test","kind":"execute","status":"pending","rawInput":{}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "npm test"}},
		},
		{
			name:   "in_progress: rawInput command and description, cumulative content is a Snapshot",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","kind":"execute","title":"bash","rawInput":{"command":"npm test","description":"Run tests"},"content":[{"type":"content","content":{"type":"text","text":"PASS a\n"}}]}`,
			want: []accum.Observation{{ToolCallID: "o1", Shell: accum.ShellYes, Status: accum.StatusRunning, Command: "npm test", Description: "Run tests",
				Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "PASS a\n")}}},
		},
		{
			name:   "a later title that is the description never becomes the command",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","kind":"execute","title":"Run tests"}`,
			want:   []accum.Observation{{ToolCallID: "o1", Shell: accum.ShellYes, Status: accum.StatusRunning}},
		},
		{
			name:   "unchanged output re-sent without content: no text",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","rawInput":{"command":"npm test","description":"Run tests","workdir":"sub"}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning, Shell: accum.ShellYes, Command: "npm test", Description: "Run tests", Cwd: "sub"}},
		},
		{
			name:   "tail-window reset: marker stripped, Window",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"...\n\n` + tail + `"}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning, Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Window, Text: tail, Truncated: true}}}},
		},
		{
			name:   "older head-kept snapshot: suffix stripped, Snapshot",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"` + head + `\n\n..."}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning, Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Snapshot, Text: head, Truncated: true}}}},
		},
		{
			// Kilo (and OpenCode) can carry the model-facing truncation
			// header on a live in_progress frame: a notice, and what
			// follows is only the tail of the output.
			name:   "in_progress truncation header: notice stripped, tail Window, Truncated",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"...output truncated...\n\nFull output saved to: /home/dev/.local/share/kilo/tool-output/tool_9\n\n38002\n38003\n"}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning, Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Window, Text: "38002\n38003\n", Truncated: true}}}},
		},
		{
			name:   "in_progress truncation header with no saved file: still a notice",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"...output truncated...\n\n38003\n"}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning, Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Window, Text: "38003\n", Truncated: true}}}},
		},
		{
			name:   "in_progress truncation header then only (no output): truncated, nothing replaced",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"...output truncated...\n\nFull output saved to: /tmp/out\n\n(no output)"}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning, Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Delta, Truncated: true}}}},
		},
		{
			// Kilo 7.7 sends the final model-facing text on an in_progress
			// frame before the completed one: its notices are not output.
			// What they say is read on that completed frame, which repeats
			// them (exit null); the live frame claims nothing.
			name:   "in_progress text with a shell_metadata timeout notice: notice stripped, the final says TimedOut",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"start\n\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms. If this command is expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.\n</shell_metadata>"}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning, Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "start\n")}}},
		},
		{
			// Kilo's final text of a command that printed nothing, sent
			// live before the completed frame.
			name:   "in_progress (no output) stands for empty output: no text",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"(no output)"}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning}},
		},
		{
			// kilo-7.7.7_bash-ask_probeu6: `echo '(no output)'` printed
			// Kilo's word with a newline; Kilo's own has none.
			name:   "in_progress (no output) with a newline is the command's output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_pi_none_2","status":"in_progress","kind":"execute","title":"echo '(no output)'","locations":[{"path":"/home/dev/work/proj"}],"rawInput":{"command":"echo '(no output)'","description":"Run step 0 (pi_none)","cwd":"/home/dev/work/proj"},"content":[{"type":"content","content":{"type":"text","text":"(no output)\n"}}]}`,
			want: []accum.Observation{{ToolCallID: "call_pi_none_2", Shell: accum.ShellYes, Status: accum.StatusRunning, Command: "echo '(no output)'", Cwd: "/home/dev/work/proj",
				Description: "Run step 0 (pi_none)", Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "(no output)\n")}}},
		},
		{
			name:   "in_progress truncation header then the command's own (no output) line: a tail",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"...output truncated...\n\nFull output saved to: /tmp/out\n\n(no output)\n"}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning, Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Window, Text: "(no output)\n", Truncated: true}}}},
		},
		{
			name:   "in_progress (no output) before a timeout notice: no text, no claim",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"(no output)\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>"}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning}},
		},
		{
			name:   "in_progress text with an abort notice: notice stripped, the final says Cancelled",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"tick1\n\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>"}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning, Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "tick1\n")}}},
		},
		// OpenCode 1.18.33 (recorded): commands that print a
		// <shell_metadata> block themselves. The live frame cannot tell it
		// from OpenCode's, and the flags of a live frame stick to the call:
		// it claims no timeout or abort, and a block that does not end the
		// text as OpenCode writes it ("\n\n<shell_metadata>\n...\n
		// </shell_metadata>", nothing after) stays output. The final, with
		// exit 0 (or 5) and the block in metadata.output, keeps it whole.
		{
			name:   "printed timeout block after one newline, a newline after it (call_mimic_tail_claude_21, live): output, no TimedOut",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_mimic_tail_claude_21","status":"in_progress","kind":"execute","title":"echo body2; echo 'Command timed out after 2s'; printf '<shell_metadata>\\nshell tool terminated command after exceeding timeout 2000 ms\\n</shell_metadata>\\n'","locations":[{"path":"/home/dev/work/proj"}],"rawInput":{"command":"echo body2; echo 'Command timed out after 2s'; printf '<shell_metadata>\\nshell tool terminated command after exceeding timeout 2000 ms\\n</shell_metadata>\\n'","cwd":"/home/dev/work/proj"},"content":[{"type":"content","content":{"type":"text","text":"body2\nCommand timed out after 2s\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>\n"}}]}`,
			want: []accum.Observation{{ToolCallID: "call_mimic_tail_claude_21", Status: accum.StatusRunning, Shell: accum.ShellYes, Cwd: "/home/dev/work/proj",
				Command: "echo body2; echo 'Command timed out after 2s'; printf '<shell_metadata>\\nshell tool terminated command after exceeding timeout 2000 ms\\n</shell_metadata>\\n'",
				Texts:   []accum.Text{txt(accum.Combined, accum.Snapshot, "body2\nCommand timed out after 2s\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>\n")}}},
		},
		{
			name:   "printed timeout block (call_mimic_tail_claude_21, final exit 0): output whole, no TimedOut",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_mimic_tail_claude_21","status":"completed","title":"echo body2; echo 'Command timed out after 2s'; printf '<shell_metadata>\\nshell tool terminated command after exceeding timeout 2000 ms\\n</shell_metadata>\\n'","content":[{"type":"content","content":{"type":"text","text":"body2\nCommand timed out after 2s\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>\n"}}],"rawOutput":{"output":"body2\nCommand timed out after 2s\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>\n","metadata":{"output":"body2\nCommand timed out after 2s\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>\n","exit":0,"truncated":false}}}`,
			want: []accum.Observation{{ToolCallID: "call_mimic_tail_claude_21", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "body2\nCommand timed out after 2s\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>\n")}}},
		},
		{
			name:   "printed abort block (call_oc_meta_abort_30, live): output, no Cancelled",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_oc_meta_abort_30","status":"in_progress","kind":"execute","title":"printf 'body-o\\n\\n<shell_metadata>\\nUser aborted the command\\n</shell_metadata>\\n'","locations":[{"path":"/home/dev/work/proj"}],"rawInput":{"command":"printf 'body-o\\n\\n<shell_metadata>\\nUser aborted the command\\n</shell_metadata>\\n'","cwd":"/home/dev/work/proj"},"content":[{"type":"content","content":{"type":"text","text":"body-o\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>\n"}}]}`,
			want: []accum.Observation{{ToolCallID: "call_oc_meta_abort_30", Status: accum.StatusRunning, Shell: accum.ShellYes, Cwd: "/home/dev/work/proj",
				Command: "printf 'body-o\\n\\n<shell_metadata>\\nUser aborted the command\\n</shell_metadata>\\n'",
				Texts:   []accum.Text{txt(accum.Combined, accum.Snapshot, "body-o\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>\n")}}},
		},
		{
			name:   "printed abort block (call_oc_meta_abort_30, final exit 0): output whole, no Cancelled",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_oc_meta_abort_30","status":"completed","title":"printf 'body-o\\n\\n<shell_metadata>\\nUser aborted the command\\n</shell_metadata>\\n'","content":[{"type":"content","content":{"type":"text","text":"body-o\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>\n"}}],"rawOutput":{"output":"body-o\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>\n","metadata":{"output":"body-o\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>\n","exit":0,"truncated":false}}}`,
			want: []accum.Observation{{ToolCallID: "call_oc_meta_abort_30", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "body-o\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>\n")}}},
		},
		{
			name:   "printed timeout block (call_oc_meta_exit5_33, live): output, no TimedOut",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_oc_meta_exit5_33","status":"in_progress","kind":"execute","title":"printf 'body-e\\n\\n<shell_metadata>\\nshell tool terminated command after exceeding timeout 2000 ms\\n</shell_metadata>\\n'; exit 5","locations":[{"path":"/home/dev/work/proj"}],"rawInput":{"command":"printf 'body-e\\n\\n<shell_metadata>\\nshell tool terminated command after exceeding timeout 2000 ms\\n</shell_metadata>\\n'; exit 5","cwd":"/home/dev/work/proj"},"content":[{"type":"content","content":{"type":"text","text":"body-e\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>\n"}}]}`,
			want: []accum.Observation{{ToolCallID: "call_oc_meta_exit5_33", Status: accum.StatusRunning, Shell: accum.ShellYes, Cwd: "/home/dev/work/proj",
				Command: "printf 'body-e\\n\\n<shell_metadata>\\nshell tool terminated command after exceeding timeout 2000 ms\\n</shell_metadata>\\n'; exit 5",
				Texts:   []accum.Text{txt(accum.Combined, accum.Snapshot, "body-e\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>\n")}}},
		},
		{
			name:   "printed timeout block (call_oc_meta_exit5_33, final exit 5): output whole, no TimedOut",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_oc_meta_exit5_33","status":"completed","title":"printf 'body-e\\n\\n<shell_metadata>\\nshell tool terminated command after exceeding timeout 2000 ms\\n</shell_metadata>\\n'; exit 5","content":[{"type":"content","content":{"type":"text","text":"body-e\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>\n"}}],"rawOutput":{"output":"body-e\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>\n","metadata":{"output":"body-e\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>\n","exit":5,"truncated":false}}}`,
			want: []accum.Observation{{ToolCallID: "call_oc_meta_exit5_33", Status: accum.StatusCompleted, Exit: ex(5, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "body-e\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>\n")}}},
		},
		{
			// The same block printed exactly as OpenCode writes it (no
			// newline after): on the live frame it is read as OpenCode's
			// notice and kept out of the live text, but still claims
			// nothing; the final (exit 0, the block in metadata.output)
			// puts it back whole.
			name:   "a printed block shaped exactly as OpenCode's, live: kept out of the text, no Cancelled",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"body-o\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>"}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning, Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "body-o")}}},
		},
		{
			name:   "short text ending in dots is plain output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"wait\n\n..."}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning, Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "wait\n\n...")}}},
		},
		{
			name:   "final completed nonzero: metadata.exit is structured, output Final",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"PASS a\nFAIL b\n"}}],"rawOutput":{"output":"PASS a\nFAIL b\n","metadata":{"output":"PASS a\nFAIL b\n","exit":1,"description":"Run tests","truncated":false}}}`,
			want: []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Description: "Run tests", Exit: ex(1, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "PASS a\nFAIL b\n")}}},
		},
		{
			name:   "metadata.exitCode accepted, numeric string",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"ok\n","metadata":{"exitCode":"0"}}}`,
			want: []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "ok\n")}}},
		},
		{
			name:   "exit missing is unknown, never 0",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"ok\n","metadata":{"exit":"abc"}}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Texts: []accum.Text{txt(accum.Combined, accum.Final, "ok\n")}}},
		},
		{
			name:   "timeout: exit null and shell_metadata; marker kept out of output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"start\n\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms. If this command is expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.\n</shell_metadata>"}}],"rawOutput":{"output":"start\n\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms. If this command is expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.\n</shell_metadata>","metadata":{"output":"start\n","exit":null,"truncated":false}}}`,
			want: []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, TimedOut: true,
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "start\n")}}},
		},
		{
			name:   "older bash_metadata timeout (with its typo)",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"x\n\n\n<bash_metadata>\nbash tool terminated commmand after exceeding timeout 120000 ms\n</bash_metadata>","metadata":{"exit":null}}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, TimedOut: true, Texts: []accum.Text{txt(accum.Combined, accum.Final, "x\n")}}},
		},
		{
			name:   "oldest one-line timeout marker",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"x\n\n\n(Command timed out after 2000 ms)","metadata":{"exit":null}}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, TimedOut: true, Texts: []accum.Text{txt(accum.Combined, accum.Final, "x\n")}}},
		},
		{
			name:   "oldest one-line abort marker: Cancelled",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"x\n\n\n(Command was aborted)","metadata":{"exit":null}}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Cancelled: true, CancelNotice: "Command was aborted", Texts: []accum.Text{txt(accum.Combined, accum.Final, "x\n")}}},
		},
		{
			name:   "a one-line marker beside an exit code is the command's output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"a\n(Command timed out after 100 ms)\n","metadata":{"exit":0}}}`,
			want: []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "a\n(Command timed out after 100 ms)\n")}}},
		},
		{
			name:   "a one-line marker on a live frame is the command's output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"a\n(Command was aborted)\n"}}]}`,
			want: []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning,
				Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "a\n(Command was aborted)\n")}}},
		},
		{
			name:   "a metadata block beside an exit code, in metadata.output too, is the command's output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"data\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>\n","metadata":{"output":"data\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>\n","exit":0,"truncated":false}}}`,
			want: []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "data\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>\n")}}},
		},
		{
			name:   "an older bash_metadata block beside an exit code, no metadata.output: the command's output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"x\n<bash_metadata>\nshell tool terminated command after exceeding timeout 100 ms\n</bash_metadata>","metadata":{"exit":3}}}`,
			want: []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Exit: ex(3, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "x\n<bash_metadata>\nshell tool terminated command after exceeding timeout 100 ms\n</bash_metadata>")}}},
		},
		{
			name:   "a block metadata.output lacks is OpenCode's, even beside an exit code",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"start\n\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>","metadata":{"output":"start\n","exit":143,"truncated":false}}}`,
			want: []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, TimedOut: true, Exit: ex(143, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "start\n")}}},
		},
		{
			name:   "a truncation header when metadata.truncated is false is the command's output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"...12 lines truncated...\n\nreal line\n","metadata":{"output":"...12 lines truncated...\n\nreal line\n","exit":0,"truncated":false}}}`,
			want: []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "...12 lines truncated...\n\nreal line\n")}}},
		},
		{
			name:   "user abort in shell_metadata: Cancelled, no exit",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"before-kill\n\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>","metadata":{"output":"before-kill\n","exit":null,"truncated":false}}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Cancelled: true, CancelNotice: "User aborted the command", Texts: []accum.Text{txt(accum.Combined, accum.Final, "before-kill\n")}}},
		},
		{
			name:   "abort with no output at all: nothing to wipe",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>","metadata":{"exit":null}}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Cancelled: true, CancelNotice: "User aborted the command"}},
		},
		{
			name:   "truncation header: Truncated tail Window, header not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"...output truncated...\n\nFull output saved to: /tmp/out\n\n38002\n38003\n"}}],"rawOutput":{"output":"...output truncated...\n\nFull output saved to: /tmp/out\n\n38002\n38003\n","metadata":{"exit":0,"truncated":true,"outputPath":"/tmp/out"}}}`,
			want: []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Window, Text: "38002\n38003\n", Truncated: true}}}},
		},
		{
			name:   "truncation header then only (no output): keep the live output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawOutput":{"output":"...output truncated...\n\nFull output saved to: /tmp/out\n\n(no output)","metadata":{"exit":0,"truncated":true}}}`,
			want: []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Delta, Truncated: true}}}},
		},
		{
			name:   "(no output) stands for empty output and is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"(no output)"}}],"rawOutput":{"output":"(no output)","metadata":{"output":"","exit":0}}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false)}},
		},
		{
			// kilo-7.7.7_bash-ask_probeu6, the final of `echo '(no output)'`.
			name:   "(no output) with a newline is the command's output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_pi_none_2","status":"completed","title":"Run step 0 (pi_none)","content":[{"type":"content","content":{"type":"text","text":"(no output)\n"}}],"rawOutput":{"output":"(no output)\n","metadata":{"output":"(no output)\n","exit":0,"description":"Run step 0 (pi_none)","truncated":false,"approval":{"source":"manual"}}}}`,
			want: []accum.Observation{{ToolCallID: "call_pi_none_2", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false), Description: "Run step 0 (pi_none)",
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "(no output)\n")}}},
		},
		{
			name:   "content only, no rawOutput",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"hi\n"}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Texts: []accum.Text{txt(accum.Combined, accum.Final, "hi\n")}}},
		},
		{
			name:   "permission rejected: failed → Cancelled, error text not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"failed","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"The user rejected permission to use this specific tool call."}}],"rawOutput":{"error":"The user rejected permission to use this specific tool call.","metadata":{}}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Shell: accum.ShellYes, Status: accum.StatusFailed, Cancelled: true, CancelNotice: "The user rejected permission to use this specific tool call."}},
		},
		{
			name:   "rejected with feedback: Cancelled",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"failed","rawOutput":{"error":"The user rejected permission to use this specific tool call with the following feedback: use pnpm"}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusFailed, Cancelled: true, CancelNotice: "The user rejected permission to use this specific tool call with the following feedback: use pnpm"}},
		},
		{
			name:   "exception: Failed, error text not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"Error: spawn /bin/zsh ENOENT"}}],"rawOutput":{"error":"Error: spawn /bin/zsh ENOENT","metadata":{}}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusFailed, Failed: true}},
		},
		{
			name:   "config rule denies: Failed (the user was not asked)",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"failed","rawOutput":{"error":"The user has specified a rule which prevents you from using this specific tool call."}}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusFailed, Failed: true}},
		},
		{
			name:   "other tools are not read as shell output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"r1","status":"completed","kind":"read","content":[{"type":"content","content":{"type":"text","text":"file body"}}],"rawOutput":{"output":"file body","metadata":{"exit":0}}}`,
			want:   []accum.Observation{{ToolCallID: "r1", Shell: accum.ShellNo, Status: accum.StatusCompleted}},
		},
		{
			name:   "lenient: rawInput and rawOutput of other JSON types",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"completed","rawInput":"npm test","rawOutput":[1,2],"content":[{"type":"content","content":{"type":"text","text":"x"}}]}`,
			want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusCompleted, Texts: []accum.Text{txt(accum.Combined, accum.Final, "x")}}},
		},
		{
			name:   "not a tool call update",
			update: `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`,
		},
	})
}

func TestOpencodePermission(t *testing.T) {
	d, _ := Lookup("opencode")
	runObsCases(t, d, []obsCase{
		{
			name: "ask with command in rawInput",
			ask:  `{"toolCallId":"o1","status":"pending","title":"bash","kind":"execute","rawInput":{"command":"rm -rf build","description":"Clean"}}`,
			want: []accum.Observation{{ToolCallID: "o1", Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true, Command: "rm -rf build", Description: "Clean"}},
		},
		{
			name: "ask titled with the command",
			ask:  `{"toolCallId":"o1","status":"pending","title":"rm -rf build","kind":"execute","rawInput":{}}`,
			want: []accum.Observation{{ToolCallID: "o1", Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true, Command: "rm -rf build"}},
		},
	})
}

func TestOpencodeDetect(t *testing.T) {
	for _, name := range []string{"OpenCode", "opencode"} {
		if got := Detect(name).Info().Name; got != "opencode" {
			t.Errorf("Detect(%q) = %s", name, got)
		}
	}
}

// TestOpencodeRecording replays the real OpenCode 1.18.33 session.
func TestOpencodeRecording(t *testing.T) {
	d, _ := Lookup("opencode")
	frames := loadRecording(t, "opencode-1.18.33_plain.ndjson")
	for _, fr := range frames {
		f, err := Read(d, fr.Msg)
		if err != nil {
			t.Fatalf("line %d: %v", fr.Line, err)
		}
		if f.AgentName != "" && Detect(f.AgentName).Info().Name != "opencode" {
			t.Errorf("agent %q not detected as opencode", f.AgentName)
		}
	}
	calls, cancels := replayRecording(t, d, "opencode-1.18.33_plain.ndjson")
	if cancels != 2 { // session/cancel, then stopReason cancelled
		t.Errorf("cancel frames = %d, want 2", cancels)
	}
	type want struct {
		id, command string
		exit        *accum.Exit
		timedOut    bool
		cancelled   bool
	}
	wants := []want{
		{"call_ls_2", "ls", ex(0, accum.ExitStructured, false), false, false},
		{"call_exit3_4", "printf 'a\\nb\\n'; exit 3", ex(3, accum.ExitStructured, false), false, false},
		{"call_stderr_6", "echo to-stdout; echo to-stderr >&2; echo more-stdout", ex(0, accum.ExitStructured, false), false, false},
		{"call_stderr_fail_8", "ls /nonexistent-dir-xyz", ex(2, accum.ExitStructured, false), false, false},
		{"call_slow_10", "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done", ex(0, accum.ExitStructured, false), false, false},
		{"call_big_12", "seq 1 40000", ex(0, accum.ExitStructured, false), false, false},
		{"call_badutf8_14", `printf '\xff\xfe ok\n'`, ex(0, accum.ExitStructured, false), false, false},
		{"call_timeout_16", "echo start; sleep 6; echo finished-late", nil, true, false},
		{"call_signal_18", "echo before-kill; kill -9 $$", nil, false, true},
	}
	if len(calls) != len(wants) {
		t.Fatalf("calls = %d, want %d", len(calls), len(wants))
	}
	for i, w := range wants {
		c := calls[i]
		if c.id != w.id {
			t.Fatalf("call %d = %s, want %s", i, c.id, w.id)
		}
		if !c.obs[0].Opens || c.obs[0].Shell != accum.ShellYes || c.obs[0].Command != "" || c.obs[0].Status != accum.StatusPending {
			t.Errorf("%s: opening observation %+v", c.id, c.obs[0])
		}
		cmd := ""
		for _, o := range c.obs {
			if o.Command != "" {
				cmd = o.Command
			}
			if o.Description != "" && !strings.HasPrefix(o.Description, "Run step ") {
				t.Errorf("%s: description %q", c.id, o.Description)
			}
			for _, tx := range o.Texts {
				if strings.Contains(tx.Text, "Run step") || strings.Contains(tx.Text, "metadata>") || strings.Contains(tx.Text, "Full output saved") {
					t.Errorf("%s: metadata in output %q", c.id, tx.Text)
				}
			}
		}
		if cmd != w.command {
			t.Errorf("%s: command %q, want %q", c.id, cmd, w.command)
		}
		f := c.final()
		if f.Status != accum.StatusCompleted {
			t.Errorf("%s: final status %v", c.id, f.Status)
		}
		if describeExit(f.Exit) != describeExit(w.exit) {
			t.Errorf("%s: exit %s, want %s", c.id, describeExit(f.Exit), describeExit(w.exit))
		}
		if f.TimedOut != w.timedOut || f.Cancelled != w.cancelled {
			t.Errorf("%s: timedOut=%v cancelled=%v", c.id, f.TimedOut, f.Cancelled)
		}
	}

	// Step 4: cumulative snapshots, one per line, then the Final.
	var kinds []accum.TextKind
	var texts []string
	for _, tx := range calls[4].texts {
		kinds = append(kinds, tx.Kind)
		texts = append(texts, tx.Text)
	}
	wantTexts := []string{"line1\n", "line1\nline2\n", "line1\nline2\nline3\n", "line1\nline2\nline3\nline4\n", "line1\nline2\nline3\nline4\nline5\n", "line1\nline2\nline3\nline4\nline5\n"}
	if strings.Join(texts, "|") != strings.Join(wantTexts, "|") || kinds[len(kinds)-1] != accum.Final || kinds[0] != accum.Snapshot {
		t.Errorf("slow step texts %q kinds %v", texts, kinds)
	}

	// Step 5: a snapshot, two tail windows (marker stripped), then a
	// truncated tail Window without the header.
	big := calls[5].texts
	if len(big) != 4 {
		t.Fatalf("big step: %d texts", len(big))
	}
	if big[0].Kind != accum.Snapshot || !strings.HasPrefix(big[0].Text, "1\n2\n3\n") {
		t.Errorf("big step first text %v %q", big[0].Kind, big[0].Text[:10])
	}
	for _, tx := range big[1:3] {
		if tx.Kind != accum.Window || !tx.Truncated || strings.HasPrefix(tx.Text, "...") || len(tx.Text) != 30000 {
			t.Errorf("big step window %v len %d starts %q", tx.Kind, len(tx.Text), tx.Text[:10])
		}
	}
	if last := big[3]; last.Kind != accum.Window || !last.Truncated || !strings.HasPrefix(last.Text, "38002\n") || !strings.HasSuffix(last.Text, "\n40000\n") {
		t.Errorf("big step final %v truncated=%v starts %q", last.Kind, last.Truncated, last.Text[:10])
	}

	// Step 6: the agent already replaced the bad bytes.
	if tx := calls[6].texts; tx[len(tx)-1].Text != "\ufffd\ufffd ok\n" {
		t.Errorf("badutf8 final %q", tx[len(tx)-1].Text)
	}
	// Steps 7 and 8: output before the marker survives.
	if tx := calls[7].texts; !reflect.DeepEqual(tx[len(tx)-1], txt(accum.Combined, accum.Final, "start\n")) {
		t.Errorf("timeout final %+v", tx[len(tx)-1])
	}
	if tx := calls[8].texts; !reflect.DeepEqual(tx[len(tx)-1], txt(accum.Combined, accum.Final, "before-kill\n")) {
		t.Errorf("cancelled final %+v", tx[len(tx)-1])
	}
}

// TestOpencodeKiloLiveNoticeLeftToFinal: Kilo 7.7.7 (recorded) sends the
// timeout notice on an in_progress frame, then again on the completed
// frame with exit null. The live frame keeps the notice out of its text
// and claims nothing; the final alone says the call timed out (or was
// aborted), so a block a command prints (exit 0) is never a timeout.
func TestOpencodeKiloLiveNoticeLeftToFinal(t *testing.T) {
	d, _ := Lookup("opencode")
	calls, _ := replayRecording(t, d, "agents/kilo-7.7.7_bash-ask_full.ndjson")
	for _, tc := range []struct {
		id                  string
		timedOut, cancelled bool
	}{
		{"call_timeout_27", true, false},
		{"call_cancel_35", false, true},
	} {
		c := findCall(t, calls, tc.id)
		for _, o := range c.obs {
			if !o.Status.Ended() {
				assert.False(t, o.TimedOut || o.Cancelled, "%s: a live frame claims timedOut=%v cancelled=%v", tc.id, o.TimedOut, o.Cancelled)
			}
			for _, tx := range o.Texts {
				assert.NotContains(t, tx.Text, "metadata>", "%s: notice in output", tc.id)
			}
		}
		f := c.final()
		assert.Equal(t, tc.timedOut, f.TimedOut, "%s: final timedOut", tc.id)
		assert.Equal(t, tc.cancelled, f.Cancelled, "%s: final cancelled", tc.id)
	}
	out, _ := findCall(t, calls, "call_timeout_27").output(accum.Combined)
	assert.Equal(t, "start\n", out)
}

// TestOpencodeTruncTrailer: the head-truncation note of the tool framework
// (OpenCode's or Kilo's, naming either's data directory) is removed from
// the end of a final text; output that merely looks like it is kept.
func TestOpencodeTruncTrailer(t *testing.T) {
	for _, tc := range []struct {
		name, text, body string
		head             bool
	}{
		{"kilo's directory", "a\nb\n\n...12 lines truncated...\n\nThe tool call succeeded but the output was truncated. Full output saved to: /home/dev/.local/share/kilo/tool-output/tool_1\nUse Grep to search the full content or Read with offset/limit to view specific sections.", "a\nb", true},
		{"opencode's directory, bytes", "a\n\n...4096 bytes truncated...\n\nThe tool call succeeded but the output was truncated. Full output saved to: /home/dev/.local/share/opencode/tool-output/tool_2\nUse the Task tool to have explore agent process this file with Grep and Read (with offset/limit). Do NOT read the full file yourself - delegate to save context.", "a", true},
		{"no saved-to hint: output", "a\n\n...3 lines truncated...\n\nsee above", "a\n\n...3 lines truncated...\n\nsee above", false},
		{"a note in the middle: output", "a\n\n...3 lines truncated...\n\nFull output saved to: /x\n\nmore output\n\nand more", "a\n\n...3 lines truncated...\n\nFull output saved to: /x\n\nmore output\n\nand more", false},
	} {
		var p opencodeParsed
		p.parse(tc.text)
		assert.Equal(t, tc.body, p.body, tc.name)
		assert.Equal(t, tc.head, p.head, tc.name)
		assert.Equal(t, tc.head, p.truncated, tc.name)
	}
}

// trailingNoticesSearched is trailingNotices as it was before it looked at
// the end of the text first: every text searched whole.
func trailingNoticesSearched(p *opencodeParsed, text string) string {
	for {
		if m := findFrom(opencodeMetaBlock, text, "<shell_metadata>", "<bash_metadata>"); m != nil {
			note := text[m[4]:m[5]]
			p.timedOut = p.timedOut || opencodeTimeoutText.MatchString(note)
			if opencodeAbortText.MatchString(note) {
				p.aborted, p.notice = true, notice(note)
			}
			text = text[:m[0]]
			continue
		}
		if m := findFrom(opencodeOldMarker, text, "(Command "); m != nil {
			note := text[m[2]:m[3]]
			p.timedOut = p.timedOut || strings.Contains(note, "timed out")
			if strings.Contains(note, "aborted") {
				p.aborted, p.notice = true, notice(note)
			}
			text = text[:m[0]]
			continue
		}
		return text
	}
}

// noticeSeeds end, or nearly end, as OpenCode's notices do.
var noticeSeeds = []string{
	"",
	"out\n",
	"out\n\n<bash_metadata>\nbash tool terminated command after exceeding timeout 120000 ms\n</bash_metadata>",
	"out\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>\n \t\r\f",
	"out\n\n<shell_metadata>\nx\n</shell_metadata>\v",
	"<bash_metadata>a</bash_metadata> mid <bash_metadata>b</bash_metadata>\n",
	"a</bash_metadata>",
	"out\n\n(Command timed out after 120000 ms)",
	"out\n\n\n(Command was aborted)\n\n",
	"(Command was aborted)(Command was aborted)",
	"x (Command timed out after 5ms) y (Command was aborted)",
	"(Command was aborted) (3 passed)",
	"out (Command (Command was aborted)",
	"(Command timed out after  ms)",
	"out\n\n(Command was aborted)\n\n<bash_metadata>\ntimed out\n</bash_metadata>\n",
	"<bash_metadata>\n(Command was aborted)\n</bash_metadata>(Command was aborted)",
	"done (ok)",
	")",
}

// TestTrailingNoticesLooksAtTheEnd holds trailingNotices, which searches
// only a text that ends as a notice does, to the search of every text.
func TestTrailingNoticesLooksAtTheEnd(t *testing.T) {
	for _, text := range noticeSeeds {
		var got, want opencodeParsed
		require.Equal(t, trailingNoticesSearched(&want, text), got.trailingNotices(text), "%q", text)
		require.Equal(t, want, got, "%q", text)
	}
}

func FuzzTrailingNotices(f *testing.F) {
	for _, s := range noticeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var got, want opencodeParsed
		if g, w := got.trailingNotices(text), trailingNoticesSearched(&want, text); g != w || got != want {
			t.Fatalf("%q: %q %+v, searched whole: %q %+v", text, g, got, w, want)
		}
	})
}

// TestOpencodeLiveNoOutputByBuild: OpenCode (1.x) sends on its live frames
// only the command's own output, and a silent command gets none (probe M,
// opencode-1.18.33_bash-ask_quiet and _tricky: `true`, `false` and a
// grep that matched nothing got no live content, only the final's "(no
// output)"). So a live text "(no output)" is what the command printed
// (opencode-1.18.33_bash-ask_tricky-more, call_m_no_output_39:
// `printf '(no output)'`), and so does Kilo 7.0.33. Kilo 7.7 sends its
// final model-facing text on an in_progress frame as well
// (kilo-7.7.2_bash-ask_tricky and kilo-7.7.7_bash-ask_tricky,
// call_silent_false_33: `false` got a live "(no output)"), so there the
// word stays its placeholder, as for a build the dialect does not know.
func TestOpencodeLiveNoOutputByBuild(t *testing.T) {
	d, ok := Lookup("opencode")
	require.True(t, ok)
	const live = `{"sessionUpdate":"tool_call_update","toolCallId":"call_m_no_output_39","status":"in_progress","kind":"execute","title":"printf '(no output)'","locations":[{"path":"/home/dev/work/proj"}],"rawInput":{"command":"printf '(no output)'","cwd":"/home/dev/work/proj"},"content":[{"type":"content","content":{"type":"text","text":"(no output)"}}]}`
	base := accum.Observation{ToolCallID: "call_m_no_output_39", Shell: accum.ShellYes, Status: accum.StatusRunning, Command: "printf '(no output)'", Cwd: "/home/dev/work/proj"}
	printed := base
	printed.Texts = []accum.Text{txt(accum.Combined, accum.Snapshot, "(no output)")}
	for _, b := range []struct {
		build string
		want  accum.Observation
	}{
		{"1.3.0", printed},
		{"1.18.33", printed},
		// Kilo 7.0.33 (named OpenCode, on an OpenCode 1.x base) sends a
		// silent command no live text and an empty final
		// (kilo-7.0.33_bash-ask_tricky, call_silent_false_33), so its live
		// "(no output)" is the command's (_tricky-more, call_m_no_output_39).
		{"7.0.33", printed},
		{"7.7.2", base}, // kilo-7.7.2_bash-ask_tricky: `false` got a live "(no output)"
		{"7.7.7", base},
		{"7.7.9", base}, // kilo-7.7.9_bash-ask_tricky, call_silent_false_33, the same
		{"", base},
	} {
		t.Run(b.build, func(t *testing.T) {
			runObsCases(t, Bind(d, ParseVersion(b.build)), []obsCase{{name: "live (no output)", update: live, want: []accum.Observation{b.want}}})
		})
	}
	// A model-facing text (a notice block after the word) is no output
	// of the command, on any build.
	runObsCases(t, Bind(d, ParseVersion("1.18.33")), []obsCase{{
		name:   "live (no output) before a timeout notice: no text",
		update: `{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"(no output)\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>"}}]}`,
		want:   []accum.Observation{{ToolCallID: "o1", Status: accum.StatusRunning}},
	}})
}

// TestOpencodeNoOutputWordsByBuild: OpenCode 1.3.0 and 1.3.2 and Kilo
// 7.0.33 never write "(no output)" for a silent command: its final text
// is empty (opencode-1.3.0_bash-ask_tricky, opencode-1.3.2_bash-ask_tricky
// and kilo-7.0.33_bash-ask_tricky, call_silent_false_33), and their
// binaries hold no such text. So on
// these builds the words, on the final as on a live frame, are what the
// command printed (kilo-7.0.33_bash-ask_tricky-more, call_m_no_output_39:
// `printf '(no output)'`), also where no live frame came before (a
// session/load replay sends only the final). From OpenCode 1.14.34 (and
// in Kilo 7.7) a silent command's final says "(no output)", the
// placeholder, as for a build the dialect does not know.
func TestOpencodeNoOutputWordsByBuild(t *testing.T) {
	d, ok := Lookup("opencode")
	require.True(t, ok)
	const final = `{"sessionUpdate":"tool_call_update","toolCallId":"call_m_no_output_39","status":"completed","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"(no output)"}}],"title":"Run step 12 (m_no_output)","rawInput":{"command":"printf '(no output)'","description":"Run step 12 (m_no_output)"},"rawOutput":{"output":"(no output)","metadata":{"output":"(no output)","exit":0,"description":"Run step 12 (m_no_output)","truncated":false}}}`
	for _, b := range []struct {
		build   string
		printed bool
	}{
		{"1.3.0", true},
		// 1.3.2, the last build before 1.14.34 on npm: a silent command's
		// final is empty too (opencode-1.3.2_bash-ask_tricky,
		// call_silent_false_33), and its binary holds no such words.
		{"1.3.2", true},
		{"7.0.33", true}, // Kilo, named OpenCode
		{"1.14.34", false},
		{"1.18.33", false},
		{"7.7.2", false},
		{"7.7.9", false}, // kilo-7.7.9_bash-ask_tricky: `false`'s final is "(no output)"
		{"", false},
	} {
		t.Run(b.build, func(t *testing.T) {
			obs, err := readCase(Bind(d, ParseVersion(b.build)), final, "")
			require.NoError(t, err)
			require.Len(t, obs, 1)
			require.NotNil(t, obs[0].Exit)
			assert.Equal(t, int32(0), obs[0].Exit.Code)
			if b.printed {
				assert.Equal(t, []accum.Text{txt(accum.Combined, accum.Final, "(no output)")}, obs[0].Texts, "the command's own words")
			} else {
				assert.Empty(t, obs[0].Texts, "the placeholder is no output")
			}
		})
	}
}

// TestOpencodeKiloBackgroundProcess: Kilo 7.7.7's background_process tool
// (kilocode/tool/background-process.ts, read in the native binary of
// @kilocode/cli-linux-x64@7.7.7) takes {action: start|list|status|logs|
// stop|restart, command?, id?, workdir?, description?, ready?, inherit?,
// persistent?}. `start` asks the bash permission (metadata {command,
// description, action: "start", backgroundProcess: true}), starts the
// command as a tracked process and returns at once: title "Started:
// <description or command>", output Kilo's summary of the process ("id:
// bgp_...\nstatus: running\npid: N\ncwd: D\ncommand: C\nlifetime:
// session\nlast_output: <its last line so far>"), metadata {processID,
// status}. Its ACP frames (acp/agent's toolStart, the in_progress and
// completed updates, the ask built for the tool "bash") give it the kind
// "other" (only bash and shell are execute), title "background_process"
// until the final, rawInput the tool's input; the final carries no
// rawInput. The other actions run no command (logs return the retained
// output of a process the call did not start). The frames are built from
// that source: no recording has them. A start is a shell command gone on
// in the background: Kilo's summary is no output, and no exit code is
// known; the other actions are no shell.
func TestOpencodeKiloBackgroundProcess(t *testing.T) {
	d := Bind(mustDialect(t, "opencode"), ParseVersion("7.7.7"))
	summary := "id: bgp_9c1f2e3d4001aBcDeFgHiJkLmN\nstatus: running\npid: 4242\ncwd: /w\ncommand: npm run dev\nlifetime: session\nlast_output: ready on http://localhost:3000"

	f, err := Read(d, []byte(`{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"call_bg_1","title":"npm run dev","kind":"execute","status":"pending","locations":[],"rawInput":{"command":"npm run dev","description":"Dev server","action":"start","backgroundProcess":true,"cwd":"/w"}},"options":[]}}`))
	require.NoError(t, err)
	require.Len(t, f.Observations, 1)
	ask := f.Observations[0]
	assert.Equal(t, accum.ShellYes, ask.Shell)
	assert.Equal(t, "npm run dev", ask.Command)
	assert.True(t, ask.Background, "the ask says the command starts in the background")

	open := readUpdate(t, d, `{"sessionUpdate":"tool_call","toolCallId":"call_bg_1","title":"background_process","kind":"other","status":"pending","locations":[],"rawInput":{}}`)
	require.Len(t, open, 1)
	assert.NotEqual(t, accum.ShellNo, open[0].Shell, "an opening without input says nothing yet")
	assert.Empty(t, open[0].Command, "the tool's name is no command")

	running := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"call_bg_1","status":"in_progress","kind":"other","title":"background_process","locations":[],"rawInput":{"action":"start","command":"npm run dev","description":"Dev server"}}`)
	require.Len(t, running, 1)
	assert.Equal(t, accum.ShellYes, running[0].Shell)
	assert.Equal(t, "npm run dev", running[0].Command)
	assert.True(t, running[0].Background)

	final := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"call_bg_1","status":"completed","title":"Started: Dev server","content":[{"type":"content","content":{"type":"text","text":`+jsq(summary)+`}}],"rawOutput":{"output":`+jsq(summary)+`,"metadata":{"processID":"bgp_9c1f2e3d4001aBcDeFgHiJkLmN","status":"running"}}}`)
	require.Len(t, final, 1)
	assert.Empty(t, final[0].Texts, "Kilo's summary of the process is no output")
	assert.Nil(t, final[0].Exit)
	assert.True(t, final[0].Background)
	assert.Empty(t, final[0].Unrecognized)

	// A start refused before it ran (the sandbox is on) is a completed
	// call whose output is Kilo's words: no output, Failed.
	refused := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"call_bg_1","status":"completed","title":"Invalid background process input","content":[{"type":"content","content":{"type":"text","text":"Background processes are unavailable while the sandbox is enabled for action: start"}}],"rawOutput":{"output":"Background processes are unavailable while the sandbox is enabled for action: start","metadata":{}}}`)
	require.Len(t, refused, 1)
	assert.Empty(t, refused[0].Texts)
	assert.True(t, refused[0].Failed)

	for _, in := range []string{`{"action":"logs","id":"bgp_9c1f2e3d4001aBcDeFgHiJkLmN"}`, `{"action":"stop","id":"bgp_9c1f2e3d4001aBcDeFgHiJkLmN"}`, `{"action":"list"}`} {
		obs := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"call_bg_2","status":"in_progress","kind":"other","title":"background_process","locations":[],"rawInput":`+in+`}`)
		require.Len(t, obs, 1, in)
		assert.Equal(t, accum.ShellNo, obs[0].Shell, "%s runs no command", in)
	}

	// bash is still a shell, in the foreground.
	bash := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"call_sh_3","status":"in_progress","kind":"execute","title":"npm test","locations":[],"rawInput":{"command":"npm test","description":"Run tests","cwd":"/w"}}`)
	require.Len(t, bash, 1)
	assert.Equal(t, accum.ShellYes, bash[0].Shell)
	assert.False(t, bash[0].Background)
}

// TestOpencodeHeadBlock: OpenCode 1.0.185 cuts a big output to its first
// 30 000 characters and appends "\n\n<bash_metadata>\nbash tool truncated
// output as it exceeded 30000 char limit\n</bash_metadata>" beside exit 0,
// with the block in metadata.output too and no `truncated` member
// (opencode-1.0.185_bash-ask_full, call_big_23: seq 1 60000). The block
// is OpenCode's: the output is that head, truncated, never one that
// replaces a fuller text. The same block after any other text, beside
// an exit code, is what the command printed (tricky-notes' n_meta).
func TestOpencodeHeadBlock(t *testing.T) {
	d, ok := Lookup("opencode")
	require.True(t, ok)
	var final []byte
	for _, f := range loadRecording(t, "agents/opencode-1.0.185_bash-ask_full.ndjson") {
		if bytes.Contains(f.Msg, []byte(`"toolCallId":"call_big_23","status":"completed"`)) {
			final = f.Msg
		}
	}
	require.NotNil(t, final, "the recorded final of seq 1 60000")
	const block = "\n\n<bash_metadata>\nbash tool truncated output as it exceeded 30000 char limit\n</bash_metadata>"
	var seq strings.Builder
	for i := 1; i <= 60000; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	head := seq.String()[:30000]
	require.Contains(t, string(final), strings.ReplaceAll(head[len(head)-40:], "\n", `\n`)+strings.ReplaceAll(block, "\n", `\n`)+`"`)
	for _, build := range []string{"1.0.185", "1.18.33", ""} {
		t.Run(build, func(t *testing.T) {
			f, err := Read(Bind(d, ParseVersion(build)), final)
			require.NoError(t, err)
			require.Len(t, f.Observations, 1)
			o := f.Observations[0]
			require.NotNil(t, o.Exit)
			assert.Equal(t, int32(0), o.Exit.Code)
			require.Len(t, o.Texts, 1)
			x := o.Texts[0]
			assert.True(t, x.Text == head, "the output is the first 30 000 characters, without the block: %d bytes, ending %q", len(x.Text), x.Text[max(len(x.Text)-120, 0):])
			assert.Equal(t, []any{accum.Combined, accum.Final, true, true}, []any{x.Stream, x.Kind, x.Truncated, x.Head}, "stream, kind, truncated, head")
		})
	}
	printed := `{"sessionUpdate":"tool_call_update","toolCallId":"n1","status":"completed","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"out` + strings.ReplaceAll(block, "\n", `\n`) + `"}}],"rawInput":{"command":"printf ..."},"rawOutput":{"metadata":{"output":"out` + strings.ReplaceAll(block, "\n", `\n`) + `","exit":0}}}`
	obs, err := readCase(Bind(d, ParseVersion("1.0.185")), printed, "")
	require.NoError(t, err)
	require.Len(t, obs, 1)
	assert.Equal(t, []accum.Text{txt(accum.Combined, accum.Final, "out"+block)}, obs[0].Texts, "the command's own block")
}
