package dialect

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clFinal is Cline's final update with the given rawOutput.
func clFinal(status, rawOutput string) string {
	return `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"` + status + `","rawOutput":` + rawOutput + `}`
}

// clTexts are the three texts of a final: combined, stdout, stderr.
func clTexts(stdout, stderr string) []accum.Text {
	return []accum.Text{
		txt(accum.Combined, accum.Final, stdout+stderr),
		txt(accum.Stdout, accum.Final, stdout),
		txt(accum.Stderr, accum.Final, stderr),
	}
}

func TestClineUpdate(t *testing.T) {
	d, ok := Lookup("cline")
	require.True(t, ok, "cline not registered")
	runObsCases(t, d, []obsCase{
		{
			name:   "the update before any tool_call: command from rawInput, never the title",
			update: `{"toolCallId":"c1","title":"run_commands: ls","kind":"execute","status":"pending","rawInput":{"commands":["ls"]},"sessionUpdate":"tool_call_update"}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusPending, Command: "ls"}),
		},
		{
			name:   "the late tool_call says pending again",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"run_commands: ls","kind":"execute","status":"pending","rawInput":{"commands":["ls"]}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "ls"}),
		},
		{
			name:   "several commands are one call, one per line",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"run_commands: make","kind":"execute","status":"pending","rawInput":{"commands":["make",{"command":"go","args":["test","./..."]},7]}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "make\ngo test ./..."}),
		},
		{
			name:   "success: true is Cline's word for a close with code 0",
			update: clFinal("completed", `[{"query":"ls","result":"alpha.txt\nbeta.md\n","success":true}]`),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "ls", CommandFromTitle: true, Exit: ex(0, accum.ExitStructured, false), Texts: clTexts("alpha.txt\nbeta.md\n", "")}),
		},
		{
			name:   "under success: true a bracket line is the command's own output: Cline writes one only for a failure",
			update: clFinal("completed", `[{"query":"cat log","result":"[Command exited with code 0]\nok\n","success":true}]`),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "cat log", CommandFromTitle: true, Exit: ex(0, accum.ExitStructured, false), Texts: clTexts("[Command exited with code 0]\nok\n", "")}),
		},
		{
			name:   "exit 3 under completed: the bracket line is the exit code, not output",
			update: clFinal("completed", `[{"query":"printf 'a\\nb\\n'; exit 3","result":"[Command exited with code 3]\na\nb\n","error":"Command exited with code 3","success":false}]`),
			want: one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "printf 'a\\nb\\n'; exit 3", CommandFromTitle: true,
				Exit: ex(3, accum.ExitText, false), Texts: clTexts("a\nb\n", "")}),
		},
		{
			name:   "the stderr marker splits the streams and is not output",
			update: clFinal("completed", `[{"query":"x","result":"to-stdout\nmore-stdout\n\n[stderr]\nto-stderr\n","success":true}]`),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "x", CommandFromTitle: true, Exit: ex(0, accum.ExitStructured, false), Texts: clTexts("to-stdout\nmore-stdout\n", "to-stderr\n")}),
		},
		{
			name:   "stderr only, exit 2",
			update: clFinal("completed", `[{"query":"ls /nope","result":"[Command exited with code 2]\n\n[stderr]\nls: cannot access '/nope': No such file or directory\n","error":"Command exited with code 2","success":false}]`),
			want: one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "ls /nope", CommandFromTitle: true,
				Exit: ex(2, accum.ExitText, false), Texts: clTexts("", "ls: cannot access '/nope': No such file or directory\n")}),
		},
		{
			name:   "exit with no output: the bracket line alone",
			update: clFinal("completed", `[{"query":"false","result":"[Command exited with code 1]","error":"Command exited with code 1","success":false}]`),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "false", CommandFromTitle: true, Exit: ex(1, accum.ExitText, false), Texts: clTexts("", "")}),
		},
		{
			name:   "aborted: cancelled, the output is lost, not empty",
			update: clFinal("completed", `[{"query":"sleep 9","result":"","error":"Command failed: Command was aborted","success":false}]`),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "sleep 9", CommandFromTitle: true, Cancelled: true, CancelNotice: "Command failed: Command was aborted"}),
		},
		{
			name:   "timed out",
			update: clFinal("completed", `[{"query":"sleep 99","result":"","error":"Command failed: Command timed out after 30000ms","success":false}]`),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "sleep 99", CommandFromTitle: true, TimedOut: true}),
		},
		{
			name:   "a spawn failure: failed, its text the reason",
			update: clFinal("completed", `[{"query":"x","result":"","error":"Command failed: Failed to execute command: spawn /bin/sh ENOENT","success":false}]`),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "x", CommandFromTitle: true, Failed: true, FailNotice: "Command failed: Failed to execute command: spawn /bin/sh ENOENT"}),
		},
		{
			// cline-3.0.65_plain_probeu8: Cline appends "\n[stderr]\n" and
			// the stderr AFTER the stdout, so its marker is the last one; a
			// "[stderr]" line the command printed to stdout is output.
			name:   "a [stderr] line in stdout is output: Cline's marker is the last one",
			update: clFinal("completed", `[{"query":"echo out1; echo '[stderr]'; echo out2; echo real-err >&2","result":"out1\n[stderr]\nout2\n\n[stderr]\nreal-err\n","success":true}]`),
			want: one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "echo out1; echo '[stderr]'; echo out2; echo real-err >&2", CommandFromTitle: true,
				Exit: ex(0, accum.ExitStructured, false), Texts: clTexts("out1\n[stderr]\nout2\n", "real-err\n")}),
		},
		{
			name:   "moved to the background: no success proof, notice not output",
			update: clFinal("completed", `[{"query":"npm run dev","result":"[Command is still running. Output will continue in /tmp/cline-command-1/output.log]\nready\n","success":true}]`),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "npm run dev", CommandFromTitle: true, Background: true, Texts: clTexts("ready\n", "")}),
		},
		{
			name: "several commands: outputs in order, the last failing exit code",
			update: clFinal("completed", `[{"query":"echo a","result":"a\n","success":true},{"query":"exit 3","result":"[Command exited with code 3]","error":"Command exited with code 3","success":false},`+
				`{"query":"echo b >&2; exit 5","result":"[Command exited with code 5]\n\n[stderr]\nb\n","error":"Command exited with code 5","success":false}]`),
			want: one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "echo a\nexit 3\necho b >&2; exit 5", CommandFromTitle: true,
				Exit: ex(5, accum.ExitText, false), Texts: clTexts("a\n", "b\n")}),
		},
		{
			name:   "several commands all succeeded",
			update: clFinal("completed", `[{"query":"echo a","result":"a\n","success":true},{"query":"echo b","result":"b\n","success":true}]`),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "echo a\necho b", CommandFromTitle: true, Exit: ex(0, accum.ExitStructured, false), Texts: clTexts("a\nb\n", "")}),
		},
		{
			name:   "rejection: rawOutput is a JSON string holding the error",
			update: clFinal("failed", `"{\"error\":\"User rejected the tool call -- NOT a tool or system failure. Clarify with user before proceeding.\"}"`),
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Cancelled: true, CancelNotice: "User rejected the tool call -- NOT a tool or system failure. Clarify with user before proceeding."}),
		},
		{
			name:   "a bare failed before the tool_call",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed"}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed}),
		},
		{
			name:   "a replay: rawOutput is a JSON string of one entry",
			update: clFinal("completed", `"{\"query\":\"printf 'a\\\\nb\\\\n'; exit 3\",\"result\":\"[Command exited with code 3]\\na\\nb\\n\",\"error\":\"Command exited with code 3\",\"success\":false}"`),
			want: one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "printf 'a\\nb\\n'; exit 3", CommandFromTitle: true,
				Exit: ex(3, accum.ExitText, false), Texts: clTexts("a\nb\n", "")}),
		},
		{
			name:   "a string rawOutput that is not JSON is an error text",
			update: clFinal("failed", `"boom"`),
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Failed: true, FailNotice: "boom"}),
		},
		{
			name:   "other tools are not shell output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"r1","kind":"read","status":"completed","rawOutput":[{"query":"a.txt","result":"body","success":true}]}`,
			want:   one(accum.Observation{ToolCallID: "r1", Shell: accum.ShellNo, Status: accum.StatusCompleted}),
		},
	})
	runObsCases(t, d, []obsCase{{
		name: "the ask",
		ask:  `{"toolCallId":"c1","title":"run_commands: rm -f notes.txt","kind":"execute","status":"pending","rawInput":{"commands":["rm -f notes.txt"]}}`,
		want: one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true, Command: "rm -f notes.txt"}),
	}})
}

// TestClineBigOutput: cline-3.0.65_plain_probeu (step big150), 151,507
// bytes of stdout that Cline cut to its first and last 24,000 chars around
// its note: stdout says the total the note states, as the output does.
func TestClineBigOutput(t *testing.T) {
	d, _ := Lookup("cline")
	out := strings.Repeat(strings.Repeat("x", 100)+"\n", 1499) + strings.Repeat("x", 100) + "END-BIG\n"
	require.Len(t, out, 151507)
	result := out[:24000] + "\n[... output truncated: 151507 chars total. Refine the command (grep, head, tail) to view the elided middle ...]\n" + out[len(out)-24000:]
	entry, err := json.Marshal(map[string]any{"query": "head -c 150000 /dev/zero | tr '\\0' x | fold -w 100; echo END-BIG", "result": result, "success": true})
	require.NoError(t, err)
	got, err := readCase(d, clFinal("completed", "["+string(entry)+"]"), "")
	require.NoError(t, err)
	require.Len(t, got, 1)
	kept := out[:24000] + out[len(out)-24000:]
	assert.Equal(t, []accum.Text{
		{Stream: accum.Combined, Kind: accum.Final, Text: kept, Truncated: true, TotalBytes: 151507},
		{Stream: accum.Stdout, Kind: accum.Final, Text: kept, Truncated: true, TotalBytes: 151507},
		{Stream: accum.Stderr, Kind: accum.Final, Truncated: true},
	}, got[0].Texts)
}

func TestClineDetect(t *testing.T) {
	assert.Equal(t, "cline", Detect("cline").Info().Name)
	assert.Equal(t, "cline", Detect("Cline CLI").Info().Name)
	f, err := Read(Generic(), []byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"authMethods":[{"id":"cline","name":"Sign in with Cline"},{"id":"cline-pass","name":"Sign in with ClinePass"}]}}`))
	require.NoError(t, err)
	assert.Equal(t, "cline", f.Sign)
}

// TestClineRecording replays the real Cline 3.0.65 cancel/reject session.
func TestClineRecording(t *testing.T) {
	d, _ := Lookup("cline")
	const rec = "cline-3.0.65_plain_scenario-dev.ndjson"
	calls, cancels := replayRecording(t, d, rec)
	assert.Equal(t, 2, cancels)
	require.Len(t, calls, 3)
	assert.Equal(t, "rm -f notes.txt && echo removed", calls[0].command)
	assert.Equal(t, 1, calls[0].asks)
	assert.True(t, calls[0].final().Cancelled)
	assert.Empty(t, calls[0].texts)

	assert.True(t, calls[1].final().Cancelled, "Command was aborted")
	assert.Empty(t, calls[1].texts, "the aborted command's output is lost, not empty")

	assert.Equal(t, "4", calls[2].exitCode())
	out, _ := calls[2].output(accum.Combined)
	assert.Equal(t, "after-cancel\n", out)
	for _, c := range calls {
		for _, o := range c.obs {
			assert.NotContains(t, o.Command, "run_commands")
		}
	}
}

// TestClineExecuteCommand: Cline 2 (2.18.0, the Node build) runs commands
// with its older tool execute_command {command, requires_approval}. Its ACP
// frames carry the command as rawInput.command, and when the model asked
// for approval, its ask text's marker "REQ_APP" is glued to the end of both
// the title ("Execute command: <cmd>REQ_APP") and rawInput.command. It runs
// the command with its output in a log file ("📋 Output is being logged to:
// <file>", a notice) and never ends the call.
func TestClineExecuteCommand(t *testing.T) {
	d, _ := Lookup("cline")
	runObsCases(t, d, []obsCase{
		{
			name:   "the command from rawInput.command, without the approval marker",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Execute command: lsREQ_APP","kind":"execute","status":"pending","rawInput":{"command":"lsREQ_APP"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "ls"}),
		},
		{
			name: "the ask, the same",
			ask:  `{"toolCallId":"c1","title":"Execute command: echo a; exit 4REQ_APP","kind":"execute","status":"pending","rawInput":{"command":"echo a; exit 4REQ_APP"}}`,
			want: one(accum.Observation{ToolCallID: "c1", PermissionAsk: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "echo a; exit 4"}),
		},
		{
			name:   "without approval asked for, no marker",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Execute command: ls","kind":"execute","status":"pending","rawInput":{"command":"ls"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "ls"}),
		},
		{
			name:   "a command that really ends in REQ_APP keeps it when the title does not say the marker was added",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Run it","kind":"execute","status":"pending","rawInput":{"command":"echo REQ_APP"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "echo REQ_APP"}),
		},
		{
			name:   "the log file notice is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","rawOutput":{"output":"\n📋 Output is being logged to: /tmp/cline/background-1.log"},"content":[{"type":"content","content":{"type":"text","text":"\n📋 Output is being logged to: /tmp/cline/background-1.log"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusRunning}),
		},
	})
}

// clineNotesCmd is call_notes_35 of cline-3.0.65_plain_tricky: a command
// of 226 chars, whose own output looks like agents' notices.
const clineNotesCmd = `echo '[Output truncated (999 bytes total): full output saved to /tmp/x.txt]'; echo 'Command moved to background (PID 42).'; echo '[Command completed with background processes still running; their output is no longer captured]'`

// TestClineShortenedQuery: Cline 3 cuts a `query` over 200 chars to its
// first 200 and " ... [command truncated: N more chars; full command is
// in the tool call input]" (recorded cline-3.0.65_plain_tricky,
// call_notes_35); rawInput.commands holds the whole command that ran.
func TestClineShortenedQuery(t *testing.T) {
	d, _ := Lookup("cline")
	require.Len(t, clineNotesCmd, 226)
	query := clineNotesCmd[:200] + " ... [command truncated: 26 more chars; full command is in the tool call input]"
	runObsCases(t, d, []obsCase{
		{
			name:   "a query alone fills the command, as a title does: it may be shortened",
			update: clFinal("completed", `[{"query":"ls","result":"a\n","success":true}]`),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "ls", CommandFromTitle: true, Exit: ex(0, accum.ExitStructured, false), Texts: clTexts("a\n", "")}),
		},
		{
			name:   "a shortened query alone: its head, never Cline's note",
			update: clFinal("completed", `[{"query":`+jsonString(query)+`,"result":"a\n","success":true}]`),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: clineNotesCmd[:200], CommandFromTitle: true, Exit: ex(0, accum.ExitStructured, false), Texts: clTexts("a\n", "")}),
		},
		{
			name:   "the note's words after a head that is not 200 chars are the command's",
			update: clFinal("completed", `[{"query":"echo ' ... [command truncated: 26 more chars; full command is in the tool call input]'","result":"a\n","success":true}]`),
			want: one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "echo ' ... [command truncated: 26 more chars; full command is in the tool call input]'",
				CommandFromTitle: true, Exit: ex(0, accum.ExitStructured, false), Texts: clTexts("a\n", "")}),
		},
	})

	// The call as the session folds it: the final's shortened query does
	// not rename the command rawInput named.
	c := accum.NewCall("c1", 1<<20)
	for _, f := range []string{
		`{"toolCallId":"call_notes_35","title":"run_commands: echo '[Output truncated (999 bytes total): full output saved to /tmp/x.txt]'; echo 'Command moved to background (PID ...","kind":"execute","status":"pending","rawInput":{"commands":[` + jsonString(clineNotesCmd) + `]},"sessionUpdate":"tool_call_update"}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"call_notes_35","status":"in_progress"}`,
		`{"sessionUpdate":"tool_call","toolCallId":"call_notes_35","title":"run_commands: echo '[Output truncated (999 bytes total): full output saved to /tmp/x.txt]'; echo 'Command moved to background (PID ...","kind":"execute","status":"pending","rawInput":{"commands":[` + jsonString(clineNotesCmd) + `]}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"call_notes_35","status":"completed","rawOutput":[{"query":` + jsonString(query) + `,"result":"hi\n","success":true}]}`,
	} {
		obs, err := readCase(d, f, "")
		require.NoError(t, err)
		for i := range obs {
			c.Apply(&obs[i])
		}
	}
	assert.Equal(t, clineNotesCmd, c.Command())
}

// TestClineBackgroundNote: Cline 3.0.65 appends its note that background
// processes outlived the command as "<output>\n<note>", nothing after it
// (its bundle: `${a0}\n${Z0}`). A last line with the note's words ended by
// "\n" is the command's (cline-3.0.65_plain_tricky, call_notes_35).
func TestClineBackgroundNote(t *testing.T) {
	d, _ := Lookup("cline")
	const note = "[Command completed with background processes still running; their output is no longer captured]"
	const printed = "[Output truncated (999 bytes total): full output saved to /tmp/x.txt]\nCommand moved to background (PID 42).\n" + note + "\n"
	final := func(result string) string {
		return clFinal("completed", `[{"query":`+jsonString(clineNotesCmd)+`,"result":`+jsonString(result)+`,"success":true}]`)
	}
	runObsCases(t, d, []obsCase{
		{
			name:   "the note's words printed by the command, ended by a newline, are output",
			update: final(printed),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: clineNotesCmd, CommandFromTitle: true, Exit: ex(0, accum.ExitStructured, false), Texts: clTexts(printed, "")}),
		},
		{
			name:   "Cline's note after the output: not output",
			update: final("ready\n\n" + note),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: clineNotesCmd, CommandFromTitle: true, Exit: ex(0, accum.ExitStructured, false), Texts: clTexts("ready\n", "")}),
		},
		{
			name:   "Cline's note after an empty output",
			update: final("\n" + note),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: clineNotesCmd, CommandFromTitle: true, Exit: ex(0, accum.ExitStructured, false), Texts: clTexts("", "")}),
		},
		{
			name:   "the note's words as the whole output, with no newline before them, are output",
			update: final(note),
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: clineNotesCmd, CommandFromTitle: true, Exit: ex(0, accum.ExitStructured, false), Texts: clTexts(note, "")}),
		},
	})
}

// clineNote is Cline 3's truncation note, the newlines around it
// included, over a text of total chars.
func clineNote(total int) string {
	return "\n[... output truncated: " + strconv.Itoa(total) + " chars total. Refine the command (grep, head, tail) to view the elided middle ...]\n"
}

// TestClineTruncationNote: Cline 3 (3.0.57, 3.0.61, 3.0.65) cuts a result
// past 48,000 UTF-16 units (or whose stream it could not hold whole) to
// exactly its first 24,000 and its last 24,000 around its note
// (cline-3.0.65_plain_full's seq: 24,000 chars, the note, 24,000 chars);
// a note anywhere else is the command's output.
func TestClineTruncationNote(t *testing.T) {
	d, _ := Lookup("cline")
	final := func(result string) string {
		return clFinal("completed", `[{"query":"x","result":`+jsonString(result)+`,"success":true}]`)
	}
	done := func(texts ...accum.Text) []accum.Observation {
		return one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "x", CommandFromTitle: true, Exit: ex(0, accum.ExitStructured, false), Texts: texts})
	}
	head, tail := strings.Repeat("1\n", 12000), strings.Repeat("9\n", 12000)
	// Cline keeps the first and last 24,000 chars of stdout, the marker
	// and stderr: a marker after its note means the note cut stdout and
	// the stderr after it is whole, so stdout is the total less the
	// stderr (Cline counts UTF-16 units: é is one).
	tailErr := strings.Repeat("9\n", 11991) + "\n[stderr]\nwarn: é\n"
	headErr := "ok\n\n[stderr]\n" + strings.Repeat("w", 23986) + "\n"
	wTail := strings.Repeat("w", 23999) + "\n"
	// 😀 is two UTF-16 units.
	wide := "😀" + strings.Repeat("x", 23998)
	const m = "a\n[... output truncated: 999 chars total. Full output in /tmp/x ...]\nb\n"
	runObsCases(t, d, []obsCase{
		{
			name:   "the note: not output, truncated with at least the stated size",
			update: final(head + clineNote(588894) + tail),
			want: done(
				accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: head + tail, Truncated: true, TotalBytes: 588894},
				accum.Text{Stream: accum.Stdout, Kind: accum.Final, Text: head + tail, Truncated: true, TotalBytes: 588894},
				accum.Text{Stream: accum.Stderr, Kind: accum.Final, Truncated: true}),
		},
		{
			name:   "truncated with stderr after the note: stdout was cut, stderr is whole",
			update: final(head + clineNote(588894) + tailErr),
			want: done(
				accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: head + strings.Repeat("9\n", 11991) + "warn: é\n", Truncated: true, TotalBytes: 588894},
				accum.Text{Stream: accum.Stdout, Kind: accum.Final, Text: head + strings.Repeat("9\n", 11991), Truncated: true, TotalBytes: 588894 - 8},
				accum.Text{Stream: accum.Stderr, Kind: accum.Final, Text: "warn: é\n"}),
		},
		{
			name:   "truncated with stderr before the note: stdout is whole, stderr was cut",
			update: final(headErr + clineNote(60000) + wTail),
			want: done(
				accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: "ok\n" + headErr[13:] + wTail, Truncated: true, TotalBytes: 60000},
				accum.Text{Stream: accum.Stdout, Kind: accum.Final, Text: "ok\n"},
				accum.Text{Stream: accum.Stderr, Kind: accum.Final, Text: headErr[13:] + wTail, Truncated: true, TotalBytes: 60000 - 3}),
		},
		{
			name:   "the head and the tail are counted in UTF-16 units",
			update: final(wide + clineNote(90000) + wide),
			want: done(
				accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: wide + wide, Truncated: true, TotalBytes: 90000},
				accum.Text{Stream: accum.Stdout, Kind: accum.Final, Text: wide + wide, Truncated: true, TotalBytes: 90000},
				accum.Text{Stream: accum.Stderr, Kind: accum.Final, Truncated: true}),
		},
		{
			// cline-3.0.65_plain_tricky-more, m_cline_trunc.
			name:   "a short output holding the note's words is output, whole",
			update: final(m),
			want:   done(clTexts(m, "")...),
		},
		{
			name:   "the note's words after a head of another size are output",
			update: final(head[1:] + clineNote(588894) + tail),
			want:   done(clTexts(head[1:]+clineNote(588894)+tail, "")...),
		},
		{
			name:   "the note's words before a tail of another size are output",
			update: final(head + clineNote(588894) + tail + "9"),
			want:   done(clTexts(head+clineNote(588894)+tail+"9", "")...),
		},
		{
			name:   "the note's words the command printed in the head stay; Cline's own note goes",
			update: final(m + head[len(m):] + clineNote(588894) + tail),
			want: done(
				accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: m + head[len(m):] + tail, Truncated: true, TotalBytes: 588894},
				accum.Text{Stream: accum.Stdout, Kind: accum.Final, Text: m + head[len(m):] + tail, Truncated: true, TotalBytes: 588894},
				accum.Text{Stream: accum.Stderr, Kind: accum.Final, Truncated: true}),
		},
	})
}
