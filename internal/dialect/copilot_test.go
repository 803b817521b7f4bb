package dialect

import (
	"strconv"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCopilotUpdate(t *testing.T) {
	d, ok := Lookup("copilot")
	require.True(t, ok, "copilot not registered")
	window := strings.Repeat("9", copilotWindow)
	runObsCases(t, d, []obsCase{
		{
			name:   "tool_call: the title is the description, rawInput the command",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Run the tests","kind":"execute","status":"pending","rawInput":{"command":"npm test","description":"Run the tests"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "npm test", Description: "Run the tests"}),
		},
		{
			name:   "a title alone is never the command",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"List files","kind":"execute","status":"pending"}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending}),
		},
		{
			name:   "status-less live content is the whole output so far",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"content","content":{"type":"text","text":"tick1\ntick2\n"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "tick1\ntick2\n")}}),
		},
		{
			name:   "a 10,240-char live text is a tail window",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"content","content":{"type":"text","text":"` + window + `"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Window, Text: window, Truncated: true}}}),
		},
		{
			name:   "a live text past 1.0.62's limit: its head, truncated, the notice not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"content","content":{"type":"text","text":"1\n2\n2269\n<output too long - dropped 6989 lines from the end>\n"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Snapshot, Text: "1\n2\n2269\n", Truncated: true}}}),
		},
		{
			name:   "the notice's words inside the output are output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"content","content":{"type":"text","text":"<output too long - dropped 3 lines from the end>\nmore\n"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "<output too long - dropped 3 lines from the end>\nmore\n")}}),
		},
		{
			name: "final completed with exit 4: contents[].exitCode, trailer not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"after-cancel\n<shellId: 2 completed with exit code 4>"}}],` +
				`"rawOutput":{"content":"after-cancel\n<shellId: 2 completed with exit code 4>","detailedContent":"after-cancel\n<shellId: 2 completed with exit code 4>","contents":[{"type":"shell_exit","shellId":"2","exitCode":4,"cwd":"/w","outputPreview":"after-cancel\n"}]}}`,
			want: one(accum.Observation{ToolCallID: "c1", TerminalID: "2", AboutTerminal: true, Status: accum.StatusCompleted, Exit: ex(4, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Text: "after-cancel", TrimmedEnd: true}}}),
		},
		{
			name:   "a replay without contents: the trailer gives the exit code",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"a\nb\n<shellId: 7 completed with exit code 3>"}}],"rawOutput":{"content":"a\nb\n<shellId: 7 completed with exit code 3>"}}`,
			want: one(accum.Observation{ToolCallID: "c1", TerminalID: "7", AboutTerminal: true, Status: accum.StatusCompleted, Exit: ex(3, accum.ExitText, false),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Text: "a\nb", TrimmedEnd: true}}}),
		},
		{
			name:   "an older build's trailer (before 1.0.60) gives the exit code",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"a\nb\n<exited with exit code 3>"}}],"rawOutput":{"content":"a\nb\n<exited with exit code 3>","detailedContent":"a\nb\n<exited with exit code 3>"}}`,
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(3, accum.ExitText, false),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Text: "a\nb", TrimmedEnd: true}}}),
		},
		{
			name:   "no output: only the trailer, nothing to wipe",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"<shellId: 3 completed with exit code 0>"}}],"rawOutput":{"contents":[{"type":"shell_exit","exitCode":0}]}}`,
			want:   one(accum.Observation{ToolCallID: "c1", TerminalID: "3", AboutTerminal: true, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false)}),
		},
		{
			name:   "a malformed exit code is unknown, never 0",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"x\n"}}],"rawOutput":{"contents":[{"type":"shell_exit","exitCode":"n/a"}]}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Text: "x\n", TrimmedEnd: true}}}),
		},
		{
			name: "output too large: a notice and a head that never replaces the live text",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Output too large to read at once (223.5 KB). Saved to: /tmp/copilot-out.txt\nUse the view tool to read it.\n\nPreview (first 500 chars):\n1\n2\n3\n\n<shellId: 5 completed with exit code 0>"}}],` +
				`"rawOutput":{"contents":[{"type":"shell_exit","exitCode":0}]}}`,
			want: one(accum.Observation{ToolCallID: "c1", TerminalID: "5", AboutTerminal: true, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Text: "1\n2\n3\n", Truncated: true, Head: true, TotalBytes: 228812}}}),
		},
		{
			name:   "rejected: Cancelled, the message not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"message":"The user rejected this tool call.","code":"rejected"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Cancelled: true, CancelNotice: "The user rejected this tool call."}),
		},
		{
			name:   "policy refusal: Failed, unknown exit, the message as the reason",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"message":"Command not executed. The command would terminate the shell session.","code":"failure"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Failed: true, FailNotice: "Command not executed. The command would terminate the shell session."}),
		},
		{
			name:   "lenient: rawOutput and rawInput of other JSON types",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawInput":"ls","rawOutput":"boom"}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Failed: true}),
		},
		{
			name:   "other tools are not shell output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"r1","kind":"read","status":"completed","content":[{"type":"content","content":{"type":"text","text":"body"}}]}`,
			want:   one(accum.Observation{ToolCallID: "r1", Shell: accum.ShellNo, Status: accum.StatusCompleted}),
		},
		{
			name:   "not a tool call update",
			update: `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`,
		},
	})
	runObsCases(t, d, []obsCase{{
		name: "the ask: rawInput {command, commands}",
		ask:  `{"toolCallId":"c1","title":"Run the tests","kind":"execute","status":"pending","rawInput":{"command":"npm test","commands":["npm test"]}}`,
		want: one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true, Command: "npm test"}),
	}, {
		name: "an ask with only commands",
		ask:  `{"toolCallId":"c1","title":"Run","kind":"execute","status":"pending","rawInput":{"commands":["make"]}}`,
		want: one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true, Command: "make"}),
	}})
}

func TestCopilotLeast(t *testing.T) {
	for _, tc := range []struct {
		num, unit string
		want      int64
	}{{"340.7", "KB", 348825}, {"224", "KB", 228864}, {"1.25", "MB", 1305477}, {"x", "KB", 0}, {"3", "B", 2}} {
		assert.Equal(t, tc.want, copilotLeast(tc.num, tc.unit), "%s %s", tc.num, tc.unit)
	}
}

func TestCopilotDetect(t *testing.T) {
	for _, name := range []string{"Copilot", "copilot", "GitHub Copilot", "@github/copilot"} {
		assert.Equal(t, "copilot", Detect(name).Info().Name, name)
	}
	f, err := Read(Generic(), []byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"authMethods":[{"id":"copilot-login","name":"Log in with Copilot CLI"}]}}`))
	require.NoError(t, err)
	assert.Equal(t, "copilot", f.Sign, "an initialize result without agentInfo, offering copilot-login")
}

// TestCopilotRecording replays the real Copilot CLI 1.0.102 cancel/reject
// session.
func TestCopilotRecording(t *testing.T) {
	d, _ := Lookup("copilot")
	const rec = "copilot-1.0.102_plain_scenario-dev.ndjson"
	for _, fr := range loadRecording(t, rec) {
		f, err := Read(d, fr.Msg)
		require.NoError(t, err, "line %d", fr.Line)
		if f.AgentName != "" {
			assert.Equal(t, "copilot", Detect(f.AgentName).Info().Name)
		}
	}
	calls, cancels := replayRecording(t, d, rec)
	assert.Equal(t, 2, cancels) // session/cancel, then stopReason cancelled
	require.Len(t, calls, 3)

	rejected := calls[0]
	assert.Equal(t, "rm -f notes.txt && echo removed", rejected.command)
	assert.Equal(t, 1, rejected.asks)
	assert.True(t, rejected.final().Cancelled)
	assert.Empty(t, rejected.texts)

	ticks := calls[1]
	assert.False(t, ticks.ended, "the cancelled call gets no final frame")
	out, _ := ticks.output(accum.Combined)
	assert.Equal(t, "tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7\ntick8\ntick9\ntick10\ntick11\n", out)

	exit4 := calls[2]
	assert.Equal(t, "echo after-cancel; exit 4", exit4.command)
	assert.Equal(t, "4", exit4.exitCode())
	for _, tx := range exit4.texts {
		assert.NotContains(t, tx.Text, "shellId")
	}
	for _, c := range calls {
		assert.True(t, strings.HasPrefix(c.obs[0].Description, "Run step "), "%s: description %q", c.id, c.obs[0].Description)
	}
}

// Copilot 1.0.61 runs commands in an interactive shell: when the
// command's own `exit N` ends that shell, the shell prints `exit` before
// the trailer. That line is the shell's, not the command's; builds from
// 1.0.80 on (and an unknown or newer build) run a shell that does not
// print it, so there a last `exit` line is the command's own output.
func TestCopilotShellExitLine(t *testing.T) {
	d := mustDialect(t, "copilot")
	C, F := accum.Combined, accum.Final
	done := accum.StatusCompleted
	final := func(text string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":` + strconv.Quote(text) + `}}]}`
	}
	want := func(out string, code int32, shell string) []accum.Observation {
		o := accum.Observation{ToolCallID: "c1", TerminalID: shell, AboutTerminal: true, Status: done, Exit: ex(code, accum.ExitText, false)}
		if out != "" {
			o.Texts = []accum.Text{{Stream: C, Kind: F, Text: out, TrimmedEnd: true}}
		}
		return []accum.Observation{o}
	}
	for _, v := range []string{"1.0.61", "1.0.50"} {
		t.Run(v, func(t *testing.T) {
			runObsCases(t, Bind(d, ParseVersion(v)), []obsCase{
				{name: "the shell's exit line before the trailer is not output",
					update: final("a\nb\nexit\n<shellId: 1 completed with exit code 3>"),
					want:   want("a\nb", 3, "1")},
				{name: "only the last line, once",
					update: final("exit\nexit\n<shellId: 2 completed with exit code 4>"),
					want:   want("exit", 4, "2")},
				{name: "a command that printed nothing",
					update: final("exit\n<shellId: 3 completed with exit code 0>"),
					want:   want("", 0, "3")},
				{name: "a line that only starts with exit is output",
					update: final("exit code was 3\n<shellId: 4 completed with exit code 0>"),
					want:   want("exit code was 3", 0, "4")},
			})
		})
	}
	for _, v := range []string{"1.0.80", "1.0.102", "", "garbage"} {
		t.Run("newest rules for "+v, func(t *testing.T) {
			runObsCases(t, Bind(d, ParseVersion(v)), []obsCase{
				{name: "a last exit line is the command's own output",
					update: final("a\nb\nexit\n<shellId: 1 completed with exit code 3>"),
					want:   want("a\nb\nexit", 3, "1")},
			})
		})
	}
}

// foldCopilot reads one call's frames (each case sets update or ask) with
// the Copilot dialect and folds them through a call, as the session does;
// it returns the call and its last revision.
func foldCopilot(t *testing.T, frames []obsCase) (*accum.Call, accum.Revision) {
	t.Helper()
	return foldCopilotBuild(t, mustDialect(t, "copilot"), frames)
}

// foldCopilotBuild is foldCopilot with d, a Copilot dialect bound to a
// build.
func foldCopilotBuild(t *testing.T, d Dialect, frames []obsCase) (*accum.Call, accum.Revision) {
	t.Helper()
	c := accum.NewCall("c", 1<<20)
	for _, f := range frames {
		obs, err := readCase(d, f.update, f.ask)
		require.NoError(t, err)
		for i := range obs {
			c.Apply(&obs[i])
		}
	}
	r, ok := c.Revision()
	require.True(t, ok)
	return c, r
}

// The real frames of Copilot CLI 1.0.102's bash tool in async mode
// (`mode: "async"`, with or without `detach`): the final is only
// Copilot's notice that the command went on in the background, never
// output; the command's exit is not known then.
func TestCopilotAsync(t *testing.T) {
	d := mustDialect(t, "copilot")
	done, pending := accum.StatusCompleted, accum.StatusPending
	runObsCases(t, d, []obsCase{
		{
			name:   "mode async: Background",
			update: `{"sessionUpdate":"tool_call","toolCallId":"call_bg0_2","title":"Run step 0 (bg0)","kind":"execute","status":"pending","rawInput":{"command":"sleep 1; echo bg-late","description":"Run step 0 (bg0)","mode":"async"}}`,
			want:   one(accum.Observation{ToolCallID: "call_bg0_2", Opens: true, Shell: accum.ShellYes, Status: pending, Command: "sleep 1; echo bg-late", Description: "Run step 0 (bg0)", Background: true}),
		},
		{
			name:   "mode async, detach: Background",
			update: `{"sessionUpdate":"tool_call","toolCallId":"call_bg1_6","title":"Run step 1 (bg1)","kind":"execute","status":"pending","rawInput":{"command":"sleep 1; echo bg-late","description":"Run step 1 (bg1)","mode":"async","detach":true}}`,
			want:   one(accum.Observation{ToolCallID: "call_bg1_6", Opens: true, Shell: accum.ShellYes, Status: pending, Command: "sleep 1; echo bg-late", Description: "Run step 1 (bg1)", Background: true}),
		},
		{
			name:   "mode sync is not background",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Run","kind":"execute","status":"pending","rawInput":{"command":"ls","description":"Run","mode":"sync"}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: pending, Command: "ls", Description: "Run"}),
		},
		{
			name:   "the background notice is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_bg0_2","status":"completed","content":[{"type":"content","content":{"type":"text","text":"<command started in background with shellId: 0>"}}],"rawOutput":{"content":"<command started in background with shellId: 0>","detailedContent":"<command started in background with shellId: 0>"}}`,
			want:   one(accum.Observation{ToolCallID: "call_bg0_2", TerminalID: "0", AboutTerminal: true, Status: done, Background: true}),
		},
		{
			name:   "the detached background notice is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_bg1_6","status":"completed","content":[{"type":"content","content":{"type":"text","text":"<command started in detached background with shellId: 1>"}}],"rawOutput":{"content":"<command started in detached background with shellId: 1>","detailedContent":"<command started in detached background with shellId: 1>"}}`,
			want:   one(accum.Observation{ToolCallID: "call_bg1_6", TerminalID: "1", AboutTerminal: true, Status: done, Background: true}),
		},
		{
			name:   "a command that printed the notice's words and ended: its trailer says so, the words are output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"<command started in background with shellId: 0>\n<shellId: 3 completed with exit code 0>"}}],"rawOutput":{"contents":[{"type":"shell_exit","shellId":"3","exitCode":0,"outputPreview":"<command started in background with shellId: 0>\n"}]}}`,
			want: one(accum.Observation{ToolCallID: "c1", TerminalID: "3", AboutTerminal: true, Status: done, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Text: "<command started in background with shellId: 0>", TrimmedEnd: true}}}),
		},
	})

	t.Run("what was streamed before the notice is kept", func(t *testing.T) {
		_, r := foldCopilot(t, []obsCase{
			{update: `{"sessionUpdate":"tool_call","toolCallId":"call_bgA_2","title":"Run step 0 (bgA)","kind":"execute","status":"pending","rawInput":{"command":"for i in 1 2 3; do echo tick$i; sleep 0.5; done; exit 3","description":"Run step 0 (bgA)","mode":"async","shellId":"bgq"}}`},
			{ask: `{"toolCallId":"call_bgA_2","title":"Run step 0 (bgA)","kind":"execute","status":"pending","rawInput":{"command":"for i in 1 2 3; do echo tick$i; sleep 0.5; done; exit 3","commands":["for i in 1 2 3; do echo tick$i; sleep 0.5; done; exit 3"]}}`},
			{update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_bgA_2","content":[{"type":"content","content":{"type":"text","text":"tick1\n"}}]}`},
			{update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_bgA_2","status":"completed","content":[{"type":"content","content":{"type":"text","text":"<command started in background with shellId: bgq>"}}],"rawOutput":{"content":"<command started in background with shellId: bgq>","detailedContent":"<command started in background with shellId: bgq>"}}`},
		})
		assert.Equal(t, "for i in 1 2 3; do echo tick$i; sleep 0.5; done; exit 3", r.Command)
		assert.True(t, r.Background)
		assert.Equal(t, accum.Unknown, r.Outcome)
		assert.Nil(t, r.ExitCode)
		require.NotNil(t, r.Texts[accum.Combined])
		assert.Equal(t, "tick1\n", r.Texts[accum.Combined].Text)
	})
}

// Copilot's stop_bash tool (`kind: execute`, title "Stopping shell
// session", rawInput {shellId}) stops a shell the bash tool started; it
// runs no command, like read_bash (`kind: read`, rawInput {shellId,
// delay}).
func TestCopilotStopBash(t *testing.T) {
	d := mustDialect(t, "copilot")
	runObsCases(t, d, []obsCase{
		{
			name:   "rawInput {shellId} without a command is no shell call",
			update: `{"sessionUpdate":"tool_call","toolCallId":"call_stopB_13","title":"Stopping shell session","kind":"execute","status":"pending","rawInput":{"shellId":"bgr"}}`,
			want:   one(accum.Observation{ToolCallID: "call_stopB_13", Opens: true, Shell: accum.ShellNo, Status: accum.StatusPending}),
		},
		{
			name:   "the bash tool's own shellId beside a command is a shell call",
			update: `{"sessionUpdate":"tool_call","toolCallId":"call_bgA_2","title":"Run step 0 (bgA)","kind":"execute","status":"pending","rawInput":{"command":"echo hi","description":"Run step 0 (bgA)","shellId":"bgq"}}`,
			want:   one(accum.Observation{ToolCallID: "call_bgA_2", TerminalID: "bgq", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "echo hi", Description: "Run step 0 (bgA)"}),
		},
	})
	c, _ := foldCopilot(t, []obsCase{
		{update: `{"sessionUpdate":"tool_call","toolCallId":"call_stopB_13","title":"Stopping shell session","kind":"execute","status":"pending","rawInput":{"shellId":"bgr"}}`},
		{update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_stopB_13","status":"completed","content":[{"type":"content","content":{"type":"text","text":"<command with id: bgr stopped>"}}],"rawOutput":{"content":"<command with id: bgr stopped>","detailedContent":"<command with id: bgr stopped>"}}`},
	})
	assert.True(t, c.NotShell())
}

// A command may print the first words of Copilot's too-large notice.
// Every build recorded (1.0.57 to 1.0.102) writes the notice as `Output
// too large to read at once (N KB). Saved to: <file>`; a text without
// that shape is the command's output, whole (the real frames of 1.0.102,
// live and on a session/load replay).
func TestCopilotPrintedTooLarge(t *testing.T) {
	const printed = "Output too large to read at once (1.0 KB)\nPreview (first 5 chars):\nhello\n"
	const cmd = `{"sessionUpdate":"tool_call","toolCallId":"call_copilot_toolarge_65","title":"Run step 21 (copilot_toolarge)","kind":"execute","status":"pending","rawInput":{"command":"echo 'Output too large to read at once (1.0 KB)'; echo 'Preview (first 5 chars):'; echo hello","description":"Run step 21 (copilot_toolarge)"}}`
	const final = `{"sessionUpdate":"tool_call_update","toolCallId":"call_copilot_toolarge_65","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Output too large to read at once (1.0 KB)\nPreview (first 5 chars):\nhello\n<shellId: 21 completed with exit code 0>"}}],"rawOutput":{"content":"Output too large to read at once (1.0 KB)\nPreview (first 5 chars):\nhello\n<shellId: 21 completed with exit code 0>","detailedContent":"Output too large to read at once (1.0 KB)\nPreview (first 5 chars):\nhello\n<shellId: 21 completed with exit code 0>","contents":[{"type":"shell_exit","shellId":"21","exitCode":0,"cwd":"/home/dev/work/proj","outputPreview":"Output too large to read at once (1.0 KB)\nPreview (first 5 chars):\nhello\n"}]}}`
	const replayed = `{"sessionUpdate":"tool_call_update","toolCallId":"call_copilot_toolarge_65","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Output too large to read at once (1.0 KB)\nPreview (first 5 chars):\nhello\n<shellId: 21 completed with exit code 0>"}}],"rawOutput":{"content":"Output too large to read at once (1.0 KB)\nPreview (first 5 chars):\nhello\n<shellId: 21 completed with exit code 0>"}}`
	d := mustDialect(t, "copilot")
	id, done := "call_copilot_toolarge_65", accum.StatusCompleted
	whole := []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Text: strings.TrimSuffix(printed, "\n"), TrimmedEnd: true}}
	runObsCases(t, d, []obsCase{
		{name: "live: the words without the notice's shape are output", update: final,
			want: one(accum.Observation{ToolCallID: id, TerminalID: "21", AboutTerminal: true, Status: done, Exit: ex(0, accum.ExitStructured, false), Texts: whole})},
		{name: "replayed: the same", update: replayed,
			want: one(accum.Observation{ToolCallID: id, TerminalID: "21", AboutTerminal: true, Status: done, Exit: ex(0, accum.ExitText, false), Texts: whole})},
		{name: "the real notice, with its file: the live text stays, the size stated",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Output too large to read at once (340.7 KB). Saved to: /tmp/t/copilot-tool-output-1.txt\nConsider using tools like grep (for searching), head/tail (for viewing start/end), view with view_range (for specific sections), or jq (for JSON) to examine portions of the output.\n\nPreview (first 500 chars):\n1\n2\n3\n\n<shellId: 5 completed with exit code 0>"}}],` +
				`"rawOutput":{"contents":[{"type":"shell_exit","shellId":"5","exitCode":0,"cwd":"/w","outputPreview":"1\n2\n3","outputTruncated":true,"outputFilePath":"/tmp/t/copilot-tool-output-1.txt"}]}}`,
			want: one(accum.Observation{ToolCallID: "c1", TerminalID: "5", AboutTerminal: true, Status: done, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Text: "1\n2\n3\n", Truncated: true, Head: true, TotalBytes: 348825}}})},
	})
	for _, tc := range []struct {
		name   string
		frames []obsCase
	}{
		{"live", []obsCase{{update: cmd}, {update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_copilot_toolarge_65","content":[{"type":"content","content":{"type":"text","text":"Output too large to read at once (1.0 KB)\nPreview (first 5 chars):\nhello\n"}}]}`}, {update: final}}},
		{"replayed", []obsCase{{update: cmd}, {update: replayed}}},
	} {
		t.Run("folded "+tc.name, func(t *testing.T) {
			_, r := foldCopilot(t, tc.frames)
			assert.Equal(t, accum.Succeeded, r.Outcome)
			out := r.Texts[accum.Combined]
			require.NotNil(t, out)
			assert.False(t, out.Truncated)
			if tc.name == "live" {
				assert.Equal(t, printed, out.Text)
				assert.EqualValues(t, len(printed), out.TotalBytes)
			} else {
				assert.Equal(t, strings.TrimSuffix(printed, "\n"), out.Text)
			}
		})
	}
}

// copilotDone is a `completed` tool_call_update of Copilot 1.0.102 whose
// content and rawOutput restate text, with rawOutput.contents when
// contents is not "" (the real frames, recorded).
func copilotDone(id, text, contents string) string {
	q := strconv.Quote(text)
	c := ""
	if contents != "" {
		c = `,"contents":[` + contents + `]`
	}
	return `{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"completed","content":[{"type":"content","content":{"type":"text","text":` + q + `}}],"rawOutput":{"content":` + q + `,"detailedContent":` + q + c + `}}`
}

// Copilot 1.0.102's read_bash and stop_bash results (and the read Copilot
// makes itself when a background shell ends, under an id of its own) name
// the shell the bash tool started by its shellId, in the shape of the bash
// call's own final: the output so far, then a still-running notice or the
// trailer (a detached command's with an `Output:` header and a trailer of
// its own). Every frame that names a shell says so (TerminalID,
// AboutTerminal); the session gives what another tool's frame says of the
// command to the call that started the shell (the real frames, recorded;
// TestConformanceCopilotShells in test/ plays the whole sessions).
func TestCopilotShellReports(t *testing.T) {
	d := mustDialect(t, "copilot")
	done := accum.StatusCompleted
	C, F := accum.Combined, accum.Final
	final := func(s string) []accum.Text { return []accum.Text{{Stream: C, Kind: F, Text: s, TrimmedEnd: true}} }
	runObsCases(t, d, []obsCase{
		{
			name:   "async bash: the started notice names the shell",
			update: copilotDone("call_async_exit3_2", "<command started in background with shellId: 0>", ""),
			want:   one(accum.Observation{ToolCallID: "call_async_exit3_2", TerminalID: "0", AboutTerminal: true, Status: done, Background: true}),
		},
		{
			name:   "the model's own shellId, detached",
			update: copilotDone("call_async_own_id_16", "<command started in detached background with shellId: myshell>", ""),
			want:   one(accum.Observation{ToolCallID: "call_async_own_id_16", TerminalID: "myshell", AboutTerminal: true, Status: done, Background: true}),
		},
		{
			name:   "the bash tool_call with the model's own shellId owns that shell from the start",
			update: `{"sessionUpdate":"tool_call","toolCallId":"call_async_own_id_16","title":"Run step 2 (async_own_id)","kind":"execute","status":"pending","rawInput":{"command":"echo own-id; sleep 1; echo own-done","description":"Run step 2 (async_own_id)","mode":"async","detach":true,"shellId":"myshell"}}`,
			want: one(accum.Observation{ToolCallID: "call_async_own_id_16", TerminalID: "myshell", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending,
				Command: "echo own-id; sleep 1; echo own-done", Description: "Run step 2 (async_own_id)", Background: true}),
		},
		{
			name: "read_bash at the shell's end: its output and exit code, the trailer not output",
			update: copilotDone("call_async_exit3_4", "async-out\n<shellId: 0 completed with exit code 3>",
				`{"type":"shell_exit","shellId":"0","exitCode":3,"cwd":"/home/dev/work/proj","outputPreview":"async-out\n"}`),
			want: one(accum.Observation{ToolCallID: "call_async_exit3_4", TerminalID: "0", AboutTerminal: true, Status: done,
				Exit: ex(3, accum.ExitStructured, false), Texts: final("async-out")}),
		},
		{
			name: "a sync bash's own final names its shell the same way",
			update: copilotDone("call_wait_13", "waited\n<shellId: 2 completed with exit code 0>",
				`{"type":"shell_exit","shellId":"2","exitCode":0,"cwd":"/home/dev/work/proj","outputPreview":"waited\n"}`),
			want: one(accum.Observation{ToolCallID: "call_wait_13", TerminalID: "2", AboutTerminal: true, Status: done,
				Exit: ex(0, accum.ExitStructured, false), Texts: final("waited")}),
		},
		{
			name:   "read_bash again after the end was read: nothing new, the exit restated",
			update: copilotDone("call_async_ticks_10", "\n<shellId: 0 completed with exit code 3>", `{"type":"shell_exit","shellId":"0","exitCode":3,"cwd":"/home/dev/work/proj"}`),
			want:   one(accum.Observation{ToolCallID: "call_async_ticks_10", TerminalID: "0", AboutTerminal: true, Status: done, Exit: ex(3, accum.ExitStructured, false)}),
		},
		{
			name:   "read_bash while the command runs: the output so far, the notice not output, no exit",
			update: copilotDone("call_async_ticks_4", "tick1\ntick2\n<command with shellId: 0 is still running after 0.7 seconds. The command is still running. Use read_bash to continue waiting for output, or stop_bash to stop it.>", ""),
			want:   one(accum.Observation{ToolCallID: "call_async_ticks_4", TerminalID: "0", AboutTerminal: true, Status: done, Background: true, Texts: final("tick1\ntick2")}),
		},
		{
			name:   "a sync bash past its initial wait: completed, but the command goes on in the background",
			update: copilotDone("call_sync_long_23", "first\n<command with shellId: 2 is still running after 30 seconds. The command is still running. You will be automatically notified when it completes; if you need the command to complete end your response with no tool calls to wait for the notification. Use stop_bash to stop it.>", ""),
			want:   one(accum.Observation{ToolCallID: "call_sync_long_23", TerminalID: "2", AboutTerminal: true, Status: done, Background: true, Texts: final("first")}),
		},
		{
			name:   "detached, still running: the Output: header is not output",
			update: copilotDone("call_detach_running_4", "Output:\nd1\n<command with shellId: 0 is still running in detached background after 0.5s. You will be automatically notified when it completes.>", ""),
			want:   one(accum.Observation{ToolCallID: "call_detach_running_4", TerminalID: "0", AboutTerminal: true, Status: done, Background: true, Texts: final("d1")}),
		},
		{
			name: "detached, ended: its trailer gives the exit code, the Output: header is not output",
			update: copilotDone("call_detach_running_6", "Output:\nd1\nd2\n<detached command with shellId: 0 completed with exit code 6>",
				`{"type":"shell_exit","shellId":"0","exitCode":6,"cwd":"/home/dev/work/proj","outputPreview":"d1\nd2"}`),
			want: one(accum.Observation{ToolCallID: "call_detach_running_6", TerminalID: "0", AboutTerminal: true, Status: done,
				Exit: ex(6, accum.ExitStructured, false), Texts: final("d1\nd2")}),
		},
		{
			name:   "detached, ended, a replay without contents: the trailer's exit code",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"r1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Output:\nd1\n<detached command with shellId: 0 completed with exit code 6>"}}]}`,
			want:   one(accum.Observation{ToolCallID: "r1", TerminalID: "0", AboutTerminal: true, Status: done, Exit: ex(6, accum.ExitText, false), Texts: final("d1")}),
		},
		{
			name:   "stop_bash stopped the command: it did not end by itself, no exit code",
			update: copilotDone("call_read_then_stop_20", "<command with id: 3 stopped>", ""),
			want: one(accum.Observation{ToolCallID: "call_read_then_stop_20", TerminalID: "3", AboutTerminal: true, Status: done,
				Verdict: accum.VerdictFailed, FailNotice: "<command with id: 3 stopped>"}),
		},
		{
			name:   "stop_bash after the command had ended: nothing about it",
			update: copilotDone("call_async_own_id_20", "<command with id: myshell had already stopped>", ""),
			want:   one(accum.Observation{ToolCallID: "call_async_own_id_20", Status: done}),
		},
		{
			name:   "read_bash of a stopped shell fails: the tool's failure, not the command's",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"call_read_then_stop_22","status":"failed","rawOutput":{"message":"shellId: 3 was already stopped via stop_bash.\n\nActive shell sessions:\n  shellId: 1, pid: 9163, mode: async, status: completed, elapsed: 8s, commands: 1, unread output: yes\n    current command: sleep 2; echo late-end; exit 4","code":"failure"}}`,
			want:   one(accum.Observation{ToolCallID: "call_read_then_stop_22", Status: accum.StatusFailed, Failed: true, FailNotice: "shellId: 3 was already stopped via stop_bash."}),
		},
		{
			name:   "a command that printed the still-running words and ended: they are output",
			update: copilotDone("c1", "<command with shellId: 0 is still running after 1 seconds. x>\n<shellId: 5 completed with exit code 0>", `{"type":"shell_exit","shellId":"5","exitCode":0}`),
			want: one(accum.Observation{ToolCallID: "c1", TerminalID: "5", AboutTerminal: true, Status: done, Exit: ex(0, accum.ExitStructured, false),
				Texts: final("<command with shellId: 0 is still running after 1 seconds. x>")}),
		},
	})
}

// Copilot 1.0.80 to 1.0.89 stream an output that passes their live limit
// between two reads as the whole output so far (the first read, 8,192
// characters), then only its last 128 characters, from mid-line, then the
// "Output too large" final with a 500-character head preview (the real
// frames of `seq 1 60000` on 1.0.86, call_big_17, recorded in
// copilot-1.0.86_plain_full; `seq 1 10000` gives the same shapes with
// "(47.7 KB)"). The fragment never replaces the output streamed before
// it, and is not joined to it; 1.0.92 on send a 10,240-character tail.
func TestCopilotTailFragment(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 60000; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	seq := b.String()
	head, tail := seq[:8192], seq[len(seq)-copilotTail:]
	require.Equal(t, "9\n59980\n", tail[:8])
	live := func(text string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"call_big_17","content":[{"type":"content","content":{"type":"text","text":` + strconv.Quote(text) + `}}]}`
	}
	start := `{"sessionUpdate":"tool_call","toolCallId":"call_big_17","title":"Run step 5 (big)","kind":"execute","status":"pending","rawInput":{"command":"seq 1 60000","description":"Run step 5 (big)"}}`
	preview := seq[:strings.LastIndexByte(seq[:500], '\n')+1]
	tooLarge := copilotDone("call_big_17", "Output too large to read at once (340.7 KB). Saved to: /tmp/harness/tmp/1796463810626-copilot-tool-output.txt\n"+
		"Consider using tools like grep (for searching), head/tail (for viewing start/end), view with view_range (for specific sections), or jq (for JSON) to examine portions of the output.\n\n"+
		"Preview (first 500 chars):\n"+preview+"\n<shellId: 5 completed with exit code 0>", "")
	d := mustDialect(t, "copilot")
	fragment := accum.Text{Stream: accum.Combined, Kind: accum.Snapshot, Text: tail, Truncated: true, Head: true}
	whole := func(s string) []accum.Text { return []accum.Text{txt(accum.Combined, accum.Snapshot, s)} }
	for _, v := range []string{"1.0.70", "1.0.80", "1.0.86", "1.0.89"} {
		bd := Bind(d, ParseVersion(v))
		t.Run(v, func(t *testing.T) {
			runObsCases(t, bd, []obsCase{
				{name: "128 characters: maybe a fragment of the end, never replacing more",
					update: live(tail), want: one(accum.Observation{ToolCallID: "call_big_17", Texts: []accum.Text{fragment}})},
				{name: "8,192 characters: the whole output so far",
					update: live(head), want: one(accum.Observation{ToolCallID: "call_big_17", Texts: whole(head)})},
				{name: "another length: the whole output so far",
					update: live(tail[1:]), want: one(accum.Observation{ToolCallID: "call_big_17", Texts: whole(tail[1:])})},
			})
			_, r := foldCopilotBuild(t, bd, []obsCase{{update: start}, {update: live(head)}, {update: live(tail)}, {update: tooLarge}})
			out := r.Texts[accum.Combined]
			require.NotNil(t, out)
			assert.Equal(t, head, out.Text, "the output streamed before the fragment is kept")
			assert.True(t, out.Truncated)
			assert.GreaterOrEqual(t, out.TotalBytes, int64(348825))
			assert.Equal(t, accum.Succeeded, r.Outcome)

			// A command whose whole output is 128 characters: cut while
			// that is all there is, whole once restated.
			short := strings.Repeat("x", 127) + "\n"
			_, r = foldCopilotBuild(t, bd, []obsCase{{update: start}, {update: live(short)}})
			require.NotNil(t, r.Texts[accum.Combined])
			assert.Equal(t, short, r.Texts[accum.Combined].Text)
			_, r = foldCopilotBuild(t, bd, []obsCase{{update: start}, {update: live(short)}, {update: live(short + "y\n")},
				{update: copilotDone("call_big_17", short+"y\n<shellId: 5 completed with exit code 0>", "")}})
			require.NotNil(t, r.Texts[accum.Combined])
			assert.Equal(t, short+"y\n", r.Texts[accum.Combined].Text)
			assert.False(t, r.Texts[accum.Combined].Truncated)
			_, r = foldCopilotBuild(t, bd, []obsCase{{update: start}, {update: live(short)},
				{update: copilotDone("call_big_17", short+"<shellId: 5 completed with exit code 0>", "")}})
			require.NotNil(t, r.Texts[accum.Combined])
			assert.Equal(t, short, r.Texts[accum.Combined].Text)
			assert.False(t, r.Texts[accum.Combined].Truncated)
		})
	}
	// The builds before 1.0.70 never send the fragment: 1.0.62, 1.0.65
	// and 1.0.69 end a big live output with copilotDropped's notice,
	// 1.0.61 and 1.0.57 send none. A live text of 128 characters is the
	// whole output so far there, nothing cut.
	for _, v := range []string{"1.0.57", "1.0.61", "1.0.62", "1.0.65", "1.0.69"} {
		bd := Bind(d, ParseVersion(v))
		t.Run("no fragment on "+v, func(t *testing.T) {
			runObsCases(t, bd, []obsCase{
				{name: "128 characters are the whole output so far",
					update: live(tail), want: one(accum.Observation{ToolCallID: "call_big_17", Texts: whole(tail)})},
			})
			short := strings.Repeat("x", 127) + "\n"
			_, r := foldCopilotBuild(t, bd, []obsCase{{update: start}, {update: live(short)}})
			require.NotNil(t, r.Texts[accum.Combined])
			assert.Equal(t, short, r.Texts[accum.Combined].Text)
			assert.False(t, r.Texts[accum.Combined].Truncated, "nothing was cut from a live text of 128 characters")
		})
	}
	for _, v := range []string{"1.0.92", "1.0.102", ""} {
		t.Run("newest rules for "+v, func(t *testing.T) {
			runObsCases(t, Bind(d, ParseVersion(v)), []obsCase{
				{name: "128 characters are the whole output so far",
					update: live(tail), want: one(accum.Observation{ToolCallID: "call_big_17", Texts: whole(tail)})},
			})
		})
	}
}

// Copilot 1.0.0 and 0.0.399 (as 1.0.57 and 1.0.61, a pseudo-terminal
// shell) send no trailer at all when a command's own `exit N` ends that
// shell: the final is empty, and the exit code is lost. What came live
// then ends with the shell's `exit` line (recorded: `printf 'a\nb\n';
// exit 3` on 1.0.0), which is no more output live than before a
// trailer; a build from 1.0.62 on keeps a last `exit` line live as the
// command's.
func TestCopilotShellExitLineLive(t *testing.T) {
	const rec = "agents/copilot-1.0.0_plain_full.ndjson"
	update := func(line int) string {
		for _, f := range loadRecording(t, rec) {
			if f.Line == line {
				v := valueAt(f.Msg, "PARAMS", "UPDATE")
				return string(v[:jsonlit.ValueEnd(v, 0)])
			}
		}
		t.Fatalf("%s has no line %d", rec, line)
		return ""
	}
	opening, live, final := update(13), update(16), update(17)
	require.Contains(t, live, `a\nb\nexit\n`, "the recorded live text")
	for _, c := range []struct {
		version, out string
	}{
		{"1.0.0", "a\nb\n"},
		{"0.0.399", "a\nb\n"},
		{"1.0.61", "a\nb\n"},
		{"1.0.62", "a\nb\nexit\n"},
		{"", "a\nb\nexit\n"},
	} {
		t.Run(c.version, func(t *testing.T) {
			d := Bind(mustDialect(t, "copilot"), ParseVersion(c.version))
			r, out := foldFrames(t, d, "call_exit3_5", opening, live, final)
			require.NotNil(t, out)
			assert.Equal(t, c.out, out.Text)
			assert.Nil(t, r.ExitCode, "the empty final states no exit code")
			assert.Equal(t, accum.Unknown, r.Outcome)
		})
	}
	d := Bind(mustDialect(t, "copilot"), ParseVersion("1.0.0"))
	liveText := func(text string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"content","content":{"type":"text","text":` + strconv.Quote(text) + `}}]}`
	}
	runObsCases(t, d, []obsCase{
		{name: "the shell's last exit line, live",
			update: liveText("out\nexit\n"),
			want:   one(accum.Observation{ToolCallID: "c1", Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Snapshot, Text: "out\n", Whole: "out\nexit\n"}}})},
		{name: "an exit line with more after it is output",
			update: liveText("exit\nmore\n"),
			want:   one(accum.Observation{ToolCallID: "c1", Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Snapshot, Text: "exit\nmore\n"}}})},
		{name: "a line that only starts with exit is output",
			update: liveText("out\nexit 3\n"),
			want:   one(accum.Observation{ToolCallID: "c1", Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Snapshot, Text: "out\nexit 3\n"}}})},
	})
	// The notice says what was cut where it was: a live text has no
	// shellId trailer, so the notice cannot place the line before one.
	got, err := readCase(d, liveText("out\nexit\n"), "")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "the shell's exit line, last in the text", got[0].Src.Notice)
}
