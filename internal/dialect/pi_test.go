package dialect

import (
	"strconv"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// piUpd is a pi-acp tool_call_update with the given status and _meta.
func piUpd(status, meta string) string {
	s := ""
	if status != "" {
		s = `"status":"` + status + `",`
	}
	return `{"sessionUpdate":"tool_call_update","toolCallId":"p1",` + s + `"_meta":` + meta + `}`
}

func piOut(data string) string {
	return `"terminal_output":{"terminal_id":"p1","data":` + jsonString(data) + `}`
}

func piExit(code string) string {
	return `"terminal_exit":{"terminal_id":"p1","exit_code":` + code + `,"signal":null}`
}

func TestPiUpdate(t *testing.T) {
	d, ok := Lookup("pi")
	require.True(t, ok, "pi not registered")
	live := func(s string) accum.Text { return piText(s, false) }
	runObsCases(t, d, []obsCase{
		{
			name:   "tool_call: the title is the command, terminal content and terminal_info",
			update: `{"sessionUpdate":"tool_call","toolCallId":"p1","title":"ls -la","kind":"execute","status":"pending","content":[{"type":"terminal","terminalId":"p1"}],"_meta":{"terminal_info":{"terminal_id":"p1","cwd":"/w"}}}`,
			want:   one(accum.Observation{ToolCallID: "p1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "ls -la", TerminalID: "p1", Cwd: "/w"}),
		},
		{
			name:   "the tool name as title is not the command",
			update: `{"sessionUpdate":"tool_call","toolCallId":"p1","title":"bash","kind":"execute","status":"pending","content":[{"type":"terminal","terminalId":"p1"}]}`,
			want:   one(accum.Observation{ToolCallID: "p1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, TerminalID: "p1"}),
		},
		{
			name:   "a replay's tool_call says completed: its status is not read",
			update: `{"sessionUpdate":"tool_call","toolCallId":"p1","title":"bash","kind":"execute","status":"completed","content":[{"type":"terminal","terminalId":"p1"}],"_meta":{"terminal_info":{"terminal_id":"p1","cwd":"/w"}}}`,
			want:   one(accum.Observation{ToolCallID: "p1", Opens: true, Shell: accum.ShellYes, TerminalID: "p1", Cwd: "/w"}),
		},
		{
			name:   "status-only update with an empty _meta",
			update: piUpd("in_progress", `{}`),
			want:   one(accum.Observation{ToolCallID: "p1", Status: accum.StatusRunning}),
		},
		{
			name:   "a live delta is a rolling delta of pi's window",
			update: piUpd("in_progress", `{`+piOut("tick1\n")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusRunning, Texts: []accum.Text{live("tick1\n")}}),
		},
		{
			name:   "exit 0: completed with terminal_exit 0",
			update: piUpd("completed", `{`+piExit("0")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitTerminal, false)}),
		},
		{
			name:   "exit 4: the last line beats terminal_exit 1 and is not output",
			update: piUpd("failed", `{`+piOut("\n\nCommand exited with code 4")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, Exit: ex(4, accum.ExitText, false)}),
		},
		{
			name:   "the last delta's output before the exit line is kept",
			update: piUpd("failed", `{`+piOut("b\n\n\nCommand exited with code 3")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, Exit: ex(3, accum.ExitText, false), Texts: []accum.Text{live("b\n")}}),
		},
		{
			name:   "exit 137 is SIGKILL by pi's own convention",
			update: piUpd("failed", `{`+piOut("\n\nCommand exited with code 137")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, Exit: ex(137, accum.ExitText, false), Signal: "SIGKILL"}),
		},
		{
			name:   "exit 143 is SIGTERM",
			update: piUpd("failed", `{`+piOut("\n\nCommand exited with code 143")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, Exit: ex(143, accum.ExitText, false), Signal: "SIGTERM"}),
		},
		{
			name:   "no output and a nonzero exit",
			update: piUpd("failed", `{`+piOut("(no output)\n\nCommand exited with code 2")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, Exit: ex(2, accum.ExitText, false)}),
		},
		{
			name:   "(no output) on success is not output",
			update: piUpd("completed", `{`+piOut("(no output)")+`,`+piExit("0")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitTerminal, false)}),
		},
		{
			name:   "timeout: timed out, exit unknown, notice not output",
			update: piUpd("failed", `{`+piOut("\n\nCommand timed out after 2 seconds")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, TimedOut: true}),
		},
		{
			name:   "timeout with no output at all",
			update: piUpd("failed", `{`+piOut("Command timed out after 2 seconds")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, TimedOut: true}),
		},
		{
			name:   "timeout after the shell exited: its code is known",
			update: piUpd("failed", `{`+piOut("\n\nCommand timed out after 2 seconds. The shell exited with code 0 after 0.1 seconds, but background processes it started kept writing output until the timeout.")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, TimedOut: true, Exit: ex(0, accum.ExitText, false)}),
		},
		{
			name:   "aborted: cancelled, notice not output",
			update: piUpd("failed", `{`+piOut("\n\nCommand aborted")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, Cancelled: true, CancelNotice: "Command aborted"}),
		},
		{
			// pi says how a command ended only on a failed final: on a
			// completed one, such words are what the command printed.
			name:   "completed: words like pi's in the last delta are output",
			update: piUpd("completed", `{`+piOut("child said:\n\nCommand exited with code 3")+`,`+piExit("0")+`}`),
			want: one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitTerminal, false),
				Texts: []accum.Text{live("child said:\n\nCommand exited with code 3")}}),
		},
		{
			name:   "completed: an abort's words in the last delta are output",
			update: piUpd("completed", `{`+piOut("retry\n\nCommand aborted")+`,`+piExit("0")+`}`),
			want: one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitTerminal, false),
				Texts: []accum.Text{live("retry\n\nCommand aborted")}}),
		},
		{
			name:   "truncation note: truncated, not output",
			update: piUpd("completed", `{`+piOut("\n\n[Showing lines 38001-40000 of 40000. Full output: /tmp/pi-bash-1a2b.log]")+`,`+piExit("0")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitTerminal, false), Texts: []accum.Text{piText("", true)}}),
		},
		{
			// pi-acp-0.0.34_plain_probeu2, the session/load replay of a
			// command that printed such a line: pi keeps the tail, so its
			// own note always shows lines up to the last (B-C of C).
			name:   "a note that does not end at the last line is the command's output",
			update: piUpd("completed", `{`+piOut("real\n\n\n[Showing lines 1-2 of 9. Full output: /tmp/x]\n")+`,`+piExit("0")+`}`),
			want: one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Exit: ex(0, accum.ExitTerminal, false),
				Texts: []accum.Text{live("real\n\n\n[Showing lines 1-2 of 9. Full output: /tmp/x]\n")}}),
		},
		{
			name:   "truncation by bytes, then a nonzero exit",
			update: piUpd("failed", `{`+piOut("\n\n[Showing lines 900-1200 of 1200 (50.0KB limit). Full output: /tmp/pi-bash-3c.log]\n\nCommand exited with code 1")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, Exit: ex(1, accum.ExitText, false), Texts: []accum.Text{piText("", true)}}),
		},
		{
			name:   "a failed final with only pi's error message: failed, unknown exit, not output",
			update: piUpd("failed", `{`+piOut("Working directory does not exist: /gone\nCannot execute bash commands.")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, Failed: true, FailNotice: "Working directory does not exist: /gone"}),
		},
		{
			name:   "terminated without an exit code",
			update: piUpd("failed", `{`+piOut("x\n\n\nCommand terminated without an exit code")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, Failed: true, FailNotice: "Command terminated without an exit code", Texts: []accum.Text{live("x\n")}}),
		},
		{
			name:   "a terminal exit that is not pi-acp's 0/1 guess is real",
			update: piUpd("failed", `{`+piExit("2")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, Exit: ex(2, accum.ExitTerminal, false)}),
		},
		{
			name:   "a bare failed with terminal_exit 1: failed, exit unknown",
			update: piUpd("failed", `{`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, Failed: true}),
		},
		{
			// pi-acp 0.0.34 gives the terminal wire (terminal content and
			// terminal_info naming the call) to its bash tool alone
			// (emitBashToolCall; session/load's replay of a bash result):
			// a build that gives that call another kind still ran it, and
			// its title is still the command.
			name:   "a call with the terminal wire's signs is the shell whatever its kind",
			update: `{"sessionUpdate":"tool_call","toolCallId":"p1","title":"ls -la","kind":"other","status":"pending","content":[{"type":"terminal","terminalId":"p1"}],"_meta":{"terminal_info":{"terminal_id":"p1","cwd":"/w"}}}`,
			want:   one(accum.Observation{ToolCallID: "p1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "ls -la", TerminalID: "p1", Cwd: "/w"}),
		},
		{
			// pi-acp titles no update but its bash tool's (the command as
			// the model writes it), whatever kind a build gives it; the
			// opening frame says whether the call is a shell.
			name:   "an update's title is the command whatever its kind",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"p1","title":"ls -la","kind":"other","status":"in_progress"}`,
			want:   one(accum.Observation{ToolCallID: "p1", Status: accum.StatusRunning, Command: "ls -la"}),
		},
		{
			name:   "a kind no shell has: the title is no command",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"r1","title":"README.md","kind":"read","status":"in_progress"}`,
			want:   one(accum.Observation{ToolCallID: "r1", Shell: accum.ShellNo, Status: accum.StatusRunning}),
		},
		{
			name:   "another tool's call titled with its name is no shell",
			update: `{"sessionUpdate":"tool_call","toolCallId":"g1","title":"grep","kind":"other","status":"pending","rawInput":{"pattern":"x"}}`,
			want:   one(accum.Observation{ToolCallID: "g1", Opens: true, Status: accum.StatusPending}),
		},
		{
			name:   "other tools are not shell output",
			update: `{"sessionUpdate":"tool_call","toolCallId":"r1","title":"read","kind":"read","status":"pending","rawInput":{"path":"a"}}`,
			want:   one(accum.Observation{ToolCallID: "r1", Opens: true, Shell: accum.ShellNo, Status: accum.StatusPending}),
		},
	})
}

func TestPiDetect(t *testing.T) {
	for _, name := range []string{"pi-acp", "pi"} {
		assert.Equal(t, "pi", Detect(name).Info().Name, name)
	}
	assert.Equal(t, GenericName, Detect("pilot").Info().Name)
	f, err := Read(Generic(), []byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"authMethods":[{"id":"pi_terminal_login","name":"Launch pi in the terminal","type":"terminal"}]}}`))
	require.NoError(t, err)
	assert.Equal(t, "pi", f.Sign)
}

// TestPiRollingWindow folds what pi-acp sends for a big output through a
// call: deltas, then whole windows of pi's last 2,000 lines.
func TestPiRollingWindow(t *testing.T) {
	d, _ := Lookup("pi")
	lines := func(from, to int) string {
		var b []byte
		for i := from; i <= to; i++ {
			b = append(b, []byte(itoa(i)+"\n")...)
		}
		return string(b)
	}
	frames := []string{
		`{"sessionUpdate":"tool_call","toolCallId":"p1","title":"seq 1 3000","kind":"execute","status":"pending","content":[{"type":"terminal","terminalId":"p1"}]}`,
		piUpd("in_progress", `{`+piOut(lines(1, 1500))+`}`),
		piUpd("in_progress", `{`+piOut(lines(1501, 1800))+`}`),
		piUpd("in_progress", `{`+piOut(lines(201, 2200))+`}`),  // the window moved: overlaps
		piUpd("in_progress", `{`+piOut(lines(901, 2900))+`}`),  // again
		piUpd("in_progress", `{`+piOut(lines(1001, 3000))+`}`), // again
		piUpd("completed", `{`+piOut("\n\n[Showing lines 1001-3000 of 3000. Full output: /tmp/pi.log]")+`,`+piExit("0")+`}`),
	}
	c := accum.NewCall("p1", 1<<20)
	for _, f := range frames {
		obs, err := readCase(d, f, "")
		require.NoError(t, err)
		for i := range obs {
			c.Apply(&obs[i])
		}
	}
	r, ok := c.Revision()
	require.True(t, ok)
	assert.Equal(t, accum.Succeeded, r.Outcome)
	require.NotNil(t, r.Texts[accum.Combined])
	assert.Equal(t, lines(1, 3000), r.Texts[accum.Combined].Text, "the windows fold into the whole output, once")
}

func itoa(i int) string {
	return string(appendInt(nil, i))
}

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

// TestPiRecording replays the real pi-acp 0.0.34 cancel session.
func TestPiRecording(t *testing.T) {
	d, _ := Lookup("pi")
	const rec = "pi-acp-0.0.34_plain_scenario-dev.ndjson"
	for _, fr := range loadRecording(t, rec) {
		f, err := Read(d, fr.Msg)
		require.NoError(t, err, "line %d", fr.Line)
		if f.AgentName != "" {
			assert.Equal(t, "pi", Detect(f.AgentName).Info().Name)
		}
	}
	calls, _ := replayRecording(t, d, rec)
	require.Len(t, calls, 3)
	assert.Equal(t, "rm -f notes.txt && echo removed", calls[0].command)
	assert.Equal(t, "0", calls[0].exitCode())
	out, _ := calls[0].output(accum.Combined)
	assert.Equal(t, "removed\n", out)

	ticks := calls[1]
	assert.True(t, ticks.final().Cancelled)
	assert.Equal(t, "-", ticks.exitCode(), "terminal_exit 1 is not the exit code of an aborted command")
	out, _ = ticks.output(accum.Combined)
	assert.Equal(t, "tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7\ntick8\ntick9\ntick10\n", out)

	exit4 := calls[2]
	assert.Equal(t, "4", exit4.exitCode())
	out, _ = exit4.output(accum.Combined)
	assert.Equal(t, "after-cancel\n", out)
}

// TestPiKindDrift: pi-acp 0.0.34's recording with every kind `execute`
// made `other` (a build that re-kinds its bash tool) reads as it did: the
// terminal wire's signs say the call is the shell, and its titles are
// the command.
func TestPiKindDrift(t *testing.T) {
	d, _ := Lookup("pi")
	const rec = "agents/pi-acp-0.0.34_plain_full.ndjson"
	frames := loadRecording(t, rec)
	drifted := make([]recFrame, len(frames))
	n := 0
	for i, fr := range frames {
		msg := strings.ReplaceAll(string(fr.Msg), `"kind":"execute"`, `"kind":"other"`)
		if msg != string(fr.Msg) {
			n++
		}
		drifted[i] = recFrame{Line: fr.Line, Msg: []byte(msg)}
	}
	require.NotZero(t, n, "no frame of kind execute")
	base, _ := replayRecording(t, d, rec)
	got, _ := replayFrames(t, d, rec, drifted)
	require.Len(t, got, len(base))
	for i, b := range base {
		g := got[i]
		require.Equal(t, b.id, g.id)
		require.Equal(t, accum.ShellYes, b.shell, b.id)
		assert.Equal(t, b.shell, g.shell, b.id)
		assert.Equal(t, b.command, g.command, b.id)
		assert.Equal(t, b.exitCode(), g.exitCode(), b.id)
		assert.Equal(t, b.signal, g.signal, b.id)
		assert.Equal(t, b.timedOut, g.timedOut, b.id)
		assert.Equal(t, b.final().Cancelled, g.final().Cancelled, b.id)
		wantOut, wantCut := b.output(accum.Combined)
		gotOut, gotCut := g.output(accum.Combined)
		assert.Equal(t, wantOut, gotOut, b.id)
		assert.Equal(t, wantCut, gotCut, b.id)
	}
}

// TestPiContentWire: pi-acp 0.0.23 and 0.0.24 (with pi 0.84.2) send another
// wire than 0.0.34: the call titled with the tool name "bash", kind
// "other", the command in rawInput; pi's text so far as content (a JSON
// dump of an empty result first), and the final text with pi's closing
// words; rawOutput.details.truncation when pi keeps only its window.
func TestPiContentWire(t *testing.T) {
	d, _ := Lookup("pi")
	upd := func(status, text, rawOutput string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"p1","status":"` + status + `","content":[{"type":"content","content":{"type":"text","text":` + jsonString(text) + `}}],"rawOutput":` + rawOutput + `}`
	}
	raw := func(text string) string {
		return `{"content":[{"type":"text","text":` + jsonString(text) + `}],"details":{}}`
	}
	win := func(text string, total int) string {
		return `{"content":[{"type":"text","text":` + jsonString(text) + `}],"details":{"truncation":{"truncated":true,"truncatedBy":"lines","totalLines":60000,"totalBytes":` + strconv.Itoa(total) + `,"outputLines":2000},"fullOutputPath":"/tmp/pi-bash-1.log"}}`
	}
	final := func(s string) accum.Text { return txt(accum.Combined, accum.Final, s) }
	runObsCases(t, d, []obsCase{
		{
			name:   "tool_call: the command from rawInput, the tool name title and kind other are pi's bash",
			update: `{"sessionUpdate":"tool_call","toolCallId":"p1","title":"bash","kind":"other","status":"pending","rawInput":{"command":"ls -la","timeout":2}}`,
			want:   one(accum.Observation{ToolCallID: "p1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "ls -la"}),
		},
		{
			name:   "another tool of kind other is no shell call",
			update: `{"sessionUpdate":"tool_call","toolCallId":"p1","title":"read","kind":"other","status":"pending","rawInput":{"path":"a.txt"}}`,
			want:   one(accum.Observation{ToolCallID: "p1", Opens: true, Status: accum.StatusPending}),
		},
		{
			name:   "the JSON dump of an empty result is not output",
			update: upd("in_progress", "{\n  \"content\": []\n}", `{"content":[]}`),
			want:   one(accum.Observation{ToolCallID: "p1", Status: accum.StatusRunning}),
		},
		{
			name: "the JSON dump of a result whose texts are empty, with pi's details, is not output either",
			update: upd("in_progress", "{\n  \"content\": [\n    {\n      \"type\": \"text\",\n      \"text\": \"\"\n    }\n  ],\n  \"details\": {\n    \"truncation\": {\n      \"content\": \"\",\n      \"truncated\": true,\n      \"totalBytes\": 60001\n    },\n    \"fullOutputPath\": \"/tmp/pi-bash-1.log\"\n  }\n}",
				`{"content":[{"type":"text","text":""}],"details":{"truncation":{"content":"","truncated":true,"totalBytes":60001},"fullOutputPath":"/tmp/pi-bash-1.log"}}`),
			want: one(accum.Observation{ToolCallID: "p1", Status: accum.StatusRunning}),
		},
		{
			name:   "a JSON text the command printed is output",
			update: upd("in_progress", "{\"content\": [{\"type\": \"text\", \"text\": \"a\"}]}\n", raw("{\"content\": [{\"type\": \"text\", \"text\": \"a\"}]}\n")),
			want: one(accum.Observation{ToolCallID: "p1", Status: accum.StatusRunning,
				Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "{\"content\": [{\"type\": \"text\", \"text\": \"a\"}]}\n")}}),
		},
		{
			name:   "live: pi's whole text so far",
			update: upd("in_progress", "tick1\ntick2\n", raw("tick1\ntick2\n")),
			want: one(accum.Observation{ToolCallID: "p1", Status: accum.StatusRunning,
				Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "tick1\ntick2\n")}}),
		},
		{
			name:   "live past pi's limit: its window, truncated, at least the total so far",
			update: upd("in_progress", "58001\n58002", win("58001\n58002", 65536)),
			want: one(accum.Observation{ToolCallID: "p1", Status: accum.StatusRunning,
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Window, Text: "58001\n58002", Truncated: true, TotalBytes: 65536}}}),
		},
		{
			name:   "final: exit N from pi's words, which are not output",
			update: upd("failed", "a\nb\n\n\nCommand exited with code 3", raw("a\nb\n\n\nCommand exited with code 3")),
			want: one(accum.Observation{ToolCallID: "p1", Status: accum.StatusFailed, Exit: ex(3, accum.ExitText, false),
				Texts: []accum.Text{final("a\nb\n")}}),
		},
		{
			name:   "final: a timeout",
			update: upd("failed", "start\n\n\nCommand timed out after 2 seconds", raw("start\n\n\nCommand timed out after 2 seconds")),
			want: one(accum.Observation{ToolCallID: "p1", Status: accum.StatusFailed, TimedOut: true,
				Texts: []accum.Text{final("start\n")}}),
		},
		{
			name:   "final: an abort is the user's cancel",
			update: upd("failed", "tick1\n\n\nCommand aborted", raw("tick1\n\n\nCommand aborted")),
			want: one(accum.Observation{ToolCallID: "p1", Status: accum.StatusFailed, Cancelled: true, CancelNotice: "Command aborted",
				Texts: []accum.Text{final("tick1\n")}}),
		},
		{
			name:   "final past pi's limit: its window without the note, truncated, the whole size",
			update: upd("completed", "59999\n60000\n\n[Showing lines 58001-60000 of 60000. Full output: /tmp/pi-bash-1.log]", win("59999\n60000", 348894)),
			want: one(accum.Observation{ToolCallID: "p1", Status: accum.StatusCompleted,
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Text: "59999\n60000", Truncated: true, TotalBytes: 348894}}}),
		},
		{
			name:   "final completed: words like pi's are output",
			update: upd("completed", "ok\n\nCommand timed out after 2 seconds", raw("ok\n\nCommand timed out after 2 seconds")),
			want: one(accum.Observation{ToolCallID: "p1", Status: accum.StatusCompleted,
				Texts: []accum.Text{final("ok\n\nCommand timed out after 2 seconds")}}),
		},
		{
			name:   "final completed without words: the output, and no exit code (this build also says completed for a shell killed by SIGKILL)",
			update: upd("completed", "before-kill\n", `{"content":[{"type":"text","text":"before-kill\n"}]}`),
			want: one(accum.Observation{ToolCallID: "p1", Status: accum.StatusCompleted,
				Texts: []accum.Text{final("before-kill\n")}}),
		},
		{
			name:   "a replay's tool_call: status not read, the tool name in rawOutput says it is pi's bash",
			update: `{"sessionUpdate":"tool_call","toolCallId":"p1","title":"bash","kind":"other","status":"completed","rawInput":null,"rawOutput":{"role":"toolResult","toolCallId":"p1","toolName":"bash","content":[{"type":"text","text":"a\nb\n\n\nCommand exited with code 3"}],"details":{},"isError":true}}`,
			want:   one(accum.Observation{ToolCallID: "p1", Opens: true, Shell: accum.ShellYes}),
		},
	})
}

// TestPiBuild: pi-acp's agentInfo.version is its own (0.0.x), not pi's.
// pi-acp 0.0.34 names pi's build in its session/new result,
// `_meta.piAcp.startupInfo` ("pi v0.84.4\n---\n"): the frame says it as
// the agent's build, named "pi". pi before 0.86.1 reports a shell a
// signal killed (exitCode null) as a success without words, and pi-acp
// 0.0.34 makes terminal_exit.exit_code up as 0 for it: on those builds a
// completed with terminal_exit 0 is no exit code. pi-acp's own version,
// an unknown build and a newer pi read with the newest rules.
func TestPiBuild(t *testing.T) {
	d, _ := Lookup("pi")
	for _, c := range []struct{ result, want string }{
		{`{"sessionId":"s","_meta":{"piAcp":{"startupInfo":"pi v0.84.4\n---\n"}}}`, "pi v0.84.4"},
		{`{"sessionId":"s","_meta":{"piAcp":{"startupInfo":"pi v1.6.0\n---\n"}}}`, "pi v1.6.0"},
		{`{"sessionId":"s","_meta":{"piAcp":{"startupInfo":"\n"}}}`, ""}, // pi-acp 0.0.24 with pi 0.73.1
		{`{"sessionId":"s","_meta":{"piAcp":{"startupInfo":"pi vnext\n"}}}`, ""},
		{`{"sessionId":"s","_meta":{"piAcp":{"startupInfo":7}}}`, ""},
		{`{"sessionId":"s","_meta":"pi v0.84.4"}`, ""},
		{`{"sessionId":"s"}`, ""},
	} {
		f, err := Read(d, []byte(`{"jsonrpc":"2.0","id":1,"result":`+c.result+`}`))
		require.NoError(t, err, c.result)
		assert.Equal(t, c.want, f.AgentVersion, c.result)
		assert.Empty(t, f.AgentName, c.result)
	}
	// The generic dialect knows nothing of pi-acp's _meta.
	f, err := Read(Generic(), []byte(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s","_meta":{"piAcp":{"startupInfo":"pi v0.84.4\n---\n"}}}}`))
	require.NoError(t, err)
	assert.Empty(t, f.AgentVersion)

	out := piUpd("in_progress", `{`+piOut("before-kill\n")+`}`)
	done := piUpd("completed", `{`+piExit("0")+`}`)
	for _, c := range []struct {
		build string
		exit  bool
	}{
		{"pi v0.84.4", false},
		{"pi v0.85.1", false},
		{"pi v0.73.1", false},
		{"pi v0.86.1", true},
		{"pi v0.87.1", true}, // recorded under pi-acp 0.0.34: 1.6.0's wire
		{"pi v1.0.3", true},  // recorded under pi-acp 0.0.34: 1.6.0's wire
		{"pi v1.6.0", true},
		{"0.0.34", true}, // pi-acp's own build says nothing of pi's
		{"", true},
	} {
		b := Bind(d, ParseVersion(c.build))
		got, err := readCase(b, out, "")
		require.NoError(t, err)
		assert.Equal(t, []accum.Observation{{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusRunning, Texts: []accum.Text{piText("before-kill\n", false)}}},
			withoutProvenance(got), c.build)
		got, err = readCase(b, done, "")
		require.NoError(t, err)
		want := accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusCompleted}
		if c.exit {
			want.Exit = ex(0, accum.ExitTerminal, false)
		} else {
			want.ExitSetAside = true // the reason says the 0 was set aside
		}
		assert.Equal(t, []accum.Observation{want}, withoutProvenance(got), "build %q", c.build)
		// A real exit code pi reports in words is read on every build.
		got, err = readCase(b, piUpd("failed", `{`+piOut("\n\nCommand exited with code 137")+`,`+piExit("1")+`}`), "")
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, ex(137, accum.ExitText, false), withoutProvenance(got)[0].Exit, "build %q", c.build)
	}
}

// TestPiKilledOnOldBuild replays what pi-acp 0.0.34 sent with pi 0.84.4
// for `echo before-kill; kill -9 $$`, binding the dialect as a session
// does: to pi-acp's build on initialize, then to pi's on session/new.
func TestPiKilledOnOldBuild(t *testing.T) {
	d, _ := Lookup("pi")
	upd := func(u string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":` + u + `}}`
	}
	frames := []string{
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"pi-acp","title":"pi ACP adapter","version":"0.0.34"},"authMethods":[{"id":"pi_terminal_login","name":"Launch pi in the terminal","type":"terminal"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s","modes":{"currentModeId":"off"},"_meta":{"piAcp":{"startupInfo":"pi v0.84.4\n---\n"}}}}`,
		upd(`{"sessionUpdate":"tool_call","toolCallId":"p1","title":"echo before-kill; kill -9 $$","kind":"execute","status":"pending","content":[{"type":"terminal","terminalId":"p1"}],"_meta":{"terminal_info":{"terminal_id":"p1","cwd":"/w"}}}`),
		upd(piUpd("in_progress", `{`+piOut("before-kill\n")+`}`)),
		upd(piUpd("completed", `{`+piExit("0")+`}`)),
	}
	c := accum.NewCall("p1", 1<<20)
	reader := d
	var last accum.Revision
	out := ""
	for i, fr := range frames {
		f, err := Read(reader, []byte(fr))
		require.NoError(t, err, "frame %d", i)
		if f.AgentVersion != "" || f.AgentName != "" {
			reader = Bind(d, ParseVersion(f.AgentVersion))
		}
		for j := range f.Observations {
			c.Apply(&f.Observations[j])
			if r, ok := c.Revision(); ok {
				last = r
				if t := r.Texts[accum.Combined]; t != nil {
					out = t.Text
				}
			}
		}
	}
	assert.Equal(t, "pi v0.84.4", VersionOf(reader).Raw())
	assert.Nil(t, last.ExitCode, "pi-acp's terminal_exit 0 for a killed shell is no exit code")
	assert.Equal(t, accum.Unknown, last.Outcome)
	assert.Equal(t, "before-kill\n", out)
}

// TestPiEnvelope: what piEnvelope takes for pi-acp's JSON dump of a
// partial result whose texts are empty (not output), and what it leaves
// as output: anything else, JSON or not.
func TestPiEnvelope(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"{\n  \"content\": []\n}", true},
		{`{"content":[{"type":"text","text":""}]}`, true},
		{"  {\"content\": [{\"type\": \"text\", \"text\": \"\"}, {\"text\": \"\", \"type\": \"text\"}], \"details\": {\"truncation\": {\"content\": \"\", \"truncated\": true}, \"fullOutputPath\": \"/tmp/pi-bash-1.log\"}}\n", true},
		{`{"details":{},"content":[]}`, true},
		{`{"Content":[{"TYPE":"te\u0078t","Text":""}],"DETAILS":{"a":[1,{"b":null}]}}`, true}, // names as encoding/json matches them, escapes read
		// Not JSON, or not all of it.
		{`{"content":[]`, false},
		{`{"content":[{"type":"text","text":""}],"details":{"truncation":{"truncated":tru}}}`, false},
		{`{"content":[]} {"content":[]}`, false},
		{`{"content":[],}`, false},
		{`{'content':[]}`, false},
		{`[{"content":[]}]`, false},
		// JSON the command printed: a text, another member, another type.
		{`{"content":[{"type":"text","text":"a"}]}`, false},
		{`{"content":[{"type":"image","text":""}]}`, false},
		{`{"content":[{"type":"text"}]}`, false},
		{`{"content":[{"type":"text","text":null}]}`, false},
		{`{"content":[{"type":"text","text":"","data":""}]}`, false},
		{`{"content":[null]}`, false},
		{`{"content":[[]]}`, false},
		{`{"content":[{"type":"text","text":{"text":""}}]}`, false},
		{`{"content":{"type":"text","text":""}}`, false},
		{`{"content":null}`, false},
		{`{"details":{}}`, false},
		{`{"content":[],"details":null}`, false},
		{`{"content":[],"details":[]}`, false},
		{`{"content":[],"details":"x"}`, false},
		{`{"content":[],"isError":false}`, false},
		{`{"result":{"content":[]}}`, false},
		// A name twice: JSON.stringify writes none.
		{`{"content":[],"content":[]}`, false},
		{`{"content":[],"details":{},"Details":{}}`, false},
		{`{"content":[{"type":"text","text":"","text":""}]}`, false},
		// Too big to be the dump.
		{`{"content":[],"details":{"p":"` + strings.Repeat("x", piEnvelopeMax) + `"}}`, false},
	} {
		assert.Equal(t, c.want, piEnvelope(c.text), "%.120q", c.text)
	}
}

// TestPiContentWireEmptyWindow folds what pi-acp 0.0.24 sent with pi
// 0.60.0 for a single line of 60,000 x's: pi's window of the line (51,200
// bytes), then, when pi's text was empty, pi-acp's JSON dump of pi's
// partial result, then "(no output)" and pi's truncation note. The output
// is the window, truncated: the dump is pi-acp's envelope, not output.
func TestPiContentWireEmptyWindow(t *testing.T) {
	d, _ := Lookup("pi")
	x := strings.Repeat("x", 51200)
	trunc := `"details":{"truncation":{"content":"","truncated":true,"truncatedBy":"bytes","totalLines":2,"totalBytes":60001,"outputLines":1,"outputBytes":0,"lastLinePartial":false,"firstLineExceedsLimit":false,"maxLines":2000,"maxBytes":51200},"fullOutputPath":"/tmp/pi-bash-5.log"}`
	upd := func(status, text, rawText string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"p1","status":"` + status + `","content":[{"type":"content","content":{"type":"text","text":` + jsonString(text) + `}}],"rawOutput":{"content":[{"type":"text","text":` + jsonString(rawText) + `}],` + trunc + `}}`
	}
	dump := "{\n  \"content\": [\n    {\n      \"type\": \"text\",\n      \"text\": \"\"\n    }\n  ],\n  \"details\": {\n    \"truncation\": {\n      \"content\": \"\",\n      \"truncated\": true,\n      \"truncatedBy\": \"bytes\",\n      \"totalLines\": 2,\n      \"totalBytes\": 60001,\n      \"outputLines\": 1,\n      \"outputBytes\": 0,\n      \"lastLinePartial\": false,\n      \"firstLineExceedsLimit\": false,\n      \"maxLines\": 2000,\n      \"maxBytes\": 51200\n    },\n    \"fullOutputPath\": \"/tmp/pi-bash-5.log\"\n  }\n}"
	final := "(no output)\n\n[Showing lines 2-2 of 2 (50.0KB limit). Full output: /tmp/pi-bash-5.log]"
	frames := []string{
		`{"sessionUpdate":"tool_call","toolCallId":"p1","title":"bash","kind":"other","status":"pending","rawInput":{"command":"head -c 60000 /dev/zero | tr '\\0' x; echo"}}`,
		upd("in_progress", x, x),
		upd("in_progress", dump, ""),
		upd("completed", final, final),
	}
	last, out := foldFrames(t, d, "p1", frames...)
	require.NotNil(t, out)
	assert.Equal(t, accum.Ended, last.State)
	assert.True(t, out.Text == x, "the window of x's, not pi-acp's JSON: got %d bytes, %.80q", len(out.Text), out.Text)
	assert.True(t, out.Truncated)
}

// TestPiContentWireNoOutputWords folds what pi-acp 0.0.24 (pi 0.84.2)
// sent for `printf '(no output)'`: the live text is pi's whole text so
// far, the command's own "(no output)", and the final is the same words,
// which pi also writes for an empty output. The final then says nothing
// of the output, and what was streamed is kept; a command with no output
// at all streams nothing and still ends with none.
func TestPiContentWireNoOutputWords(t *testing.T) {
	d, _ := Lookup("pi")
	upd := func(status, text, rawOutput string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"p1","status":"` + status + `","content":[{"type":"content","content":{"type":"text","text":` + jsonString(text) + `}}],"rawOutput":` + rawOutput + `}`
	}
	open := func(cmd string) string {
		return `{"sessionUpdate":"tool_call","toolCallId":"p1","title":"bash","kind":"other","status":"pending","rawInput":{"command":` + jsonString(cmd) + `}}`
	}
	dump := upd("in_progress", "{\n  \"content\": []\n}", `{"content":[]}`)
	fold := func(frames ...string) (accum.Revision, string) {
		last, out := foldFrames(t, d, "p1", frames...)
		if out == nil {
			return last, ""
		}
		return last, out.Text
	}
	t.Run("the command printed the words", func(t *testing.T) {
		last, out := fold(open("printf '(no output)'"), dump,
			upd("in_progress", "(no output)", `{"content":[{"type":"text","text":"(no output)"}],"details":{}}`),
			upd("completed", "(no output)", `{"content":[{"type":"text","text":"(no output)"}]}`))
		assert.Equal(t, accum.Ended, last.State)
		assert.Equal(t, "(no output)", out)
	})
	t.Run("no output at all", func(t *testing.T) {
		last, out := fold(open("true"), dump,
			upd("completed", "(no output)", `{"content":[{"type":"text","text":"(no output)"}]}`))
		assert.Equal(t, accum.Ended, last.State)
		assert.Equal(t, "", out)
	})
	t.Run("no output and a nonzero exit", func(t *testing.T) {
		last, out := fold(open("false"), dump,
			upd("failed", "(no output)\n\nCommand exited with code 1", `{"content":[{"type":"text","text":"(no output)\n\nCommand exited with code 1"}],"details":{}}`))
		assert.Equal(t, accum.Ended, last.State)
		assert.Equal(t, "", out)
	})
}

// A build that rewords pi's closing line ("Command rc=3", "ExitCode: 3"
// for "Command exited with code 3") on a `failed` final: the text is no
// longer one of pi's, but the output above that line is the command's.
// Only a text of exactly one line (or pi's known error) is pi's message;
// one of several lines is kept whole as output, the exit unknown, and the
// wire change said.
func TestPiRewordedClosingLineKeepsOutput(t *testing.T) {
	d, _ := Lookup("pi")
	content := func(status, text string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"p1","status":"` + status + `","content":[{"type":"content","content":{"type":"text","text":` + jsonString(text) + `}}],"rawOutput":{"content":[{"type":"text","text":` + jsonString(text) + `}],"details":{}}}`
	}
	final := func(s string) accum.Text { return txt(accum.Combined, accum.Final, s) }
	for _, closing := range []string{"Command rc=3", "ExitCode: 3"} {
		// pi-acp 0.0.24's frame of `printf 'a\nb\n'; exit 3`, its closing line reworded.
		text := "a\nb\n\n\n" + closing
		obs, err := readCase(d, content("failed", text), "")
		require.NoError(t, err)
		require.Len(t, obs, 1)
		assert.Equal(t, []accum.Text{final(text)}, obs[0].Texts, "%s: the output is kept, the line with it", closing)
		assert.False(t, obs[0].Failed, closing)
		assert.Empty(t, obs[0].FailNotice, closing)
		assert.Nil(t, obs[0].Exit, closing)
		assert.Equal(t, []accum.Unrecognized{{What: accum.UnrecognizedResult, Field: "content text"}}, obs[0].Unrecognized, closing)

		// Folded after the live text: the call keeps its output and
		// ends FAILED, as pi said, with no exit code.
		r, out := foldFrames(t, d, "p1",
			`{"sessionUpdate":"tool_call","toolCallId":"p1","title":"bash","kind":"other","status":"pending","rawInput":{"command":"printf 'a\\nb\\n'; exit 3"}}`,
			content("in_progress", "a\nb\n"),
			content("failed", text))
		require.NotNil(t, out, closing)
		assert.Equal(t, text, out.Text, closing)
		assert.Equal(t, accum.Failed, r.Outcome, closing)

		// The terminal wire's last delta, when it carries output too.
		obs, err = readCase(d, piUpd("failed", `{`+piOut("tail\n\n"+closing)+`,`+piExit("1")+`}`), "")
		require.NoError(t, err)
		assert.Equal(t, []accum.Text{piText("tail\n\n"+closing, false)}, obs[0].Texts, closing)
		assert.False(t, obs[0].Failed, closing)
	}
	runObsCases(t, d, []obsCase{
		{
			name:   "one line with none of pi's words is pi's message, not output",
			update: content("failed", "spawn /bin/bash ENOENT"),
			want:   one(accum.Observation{ToolCallID: "p1", Status: accum.StatusFailed, Failed: true, FailNotice: "spawn /bin/bash ENOENT", Texts: []accum.Text{final("")}}),
		},
		{
			name:   "pi's error for a missing working directory, two lines, is pi's message",
			update: content("failed", "Working directory does not exist: /gone\nCannot execute bash commands."),
			want:   one(accum.Observation{ToolCallID: "p1", Status: accum.StatusFailed, Failed: true, FailNotice: "Working directory does not exist: /gone", Texts: []accum.Text{final("")}}),
		},
		{
			name:   "the terminal wire: a reworded closing line alone is a notice",
			update: piUpd("failed", `{`+piOut("\n\nCommand rc=3")+`,`+piExit("1")+`}`),
			want:   one(accum.Observation{ToolCallID: "p1", Shell: accum.ShellYes, Status: accum.StatusFailed, Failed: true, FailNotice: "Command rc=3"}),
		},
	})
}

// TestPiKilledBoundaryRecorded replays what pi-acp 0.0.34 sent with pi
// 0.85.1 and 0.86.1 (the harness's `full`), bound as a session binds it:
// to pi's build, which only the session/new result names. 0.85.1 ends
// `kill -9 $$` as it ends `ls`, `completed` with terminal_exit 0 and no
// words, so neither 0 is an exit code there; 0.86.1 says 137 in words.
func TestPiKilledBoundaryRecorded(t *testing.T) {
	d, _ := Lookup("pi")
	for _, c := range []struct {
		build            string
		okExit, killExit string
		killSignal       string
	}{
		{"0.85.1", "-", "-", ""},
		{"0.86.1", "0", "137", "SIGKILL"},
	} {
		rec := "agents/pi-acp-0.0.34+pi." + c.build + "_plain_full.ndjson"
		frames := loadRecording(t, rec)
		named := ""
		for _, fr := range frames {
			f, err := Read(d, fr.Msg)
			require.NoError(t, err, "%s:%d", rec, fr.Line)
			if v := ParseVersion(f.AgentVersion); v.Name() == "pi" {
				named = f.AgentVersion
			}
		}
		require.Equal(t, "pi v"+c.build, named, rec)
		calls, _ := replayFrames(t, Bind(d, ParseVersion(named)), rec, frames)
		ok, kill := findCall(t, calls, "call_ok_"), findCall(t, calls, "call_kill_")
		assert.Equal(t, c.okExit, ok.exitCode(), rec)
		assert.Equal(t, c.killExit, kill.exitCode(), rec)
		assert.Equal(t, c.killSignal, kill.signal, rec)
		assert.Equal(t, c.okExit == "-", ok.final().ExitSetAside, "%s: the 0 set aside, and said", rec)
		out, _ := kill.output(accum.Combined)
		assert.Equal(t, "before-kill\n", out, rec)
		if c.build == "0.85.1" {
			// Read with the newest rules (pi's build unknown), the killed
			// shell's frame would say exit 0: the binding is what keeps it.
			calls, _ = replayFrames(t, d, rec, frames)
			assert.Equal(t, "0", findCall(t, calls, "call_kill_").exitCode(), rec)
		}
	}
}
