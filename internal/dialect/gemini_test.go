package dialect

import (
	"fmt"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/require"
)

func TestGeminiUpdate(t *testing.T) {
	d, ok := Lookup("gemini")
	if !ok {
		t.Fatal("gemini not registered")
	}
	final := func(text string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"completed","title":"make","kind":"execute","content":[{"type":"content","content":{"type":"text","text":` + text + `}}]}`
	}
	base := accum.Observation{ToolCallID: "g1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "make"}
	with := func(f func(o *accum.Observation)) []accum.Observation {
		o := base
		f(&o)
		return []accum.Observation{o}
	}
	runObsCases(t, d, []obsCase{
		{
			name:   "tool_call: banner gives cwd and description, not output",
			update: `{"sessionUpdate":"tool_call","toolCallId":"g1","status":"in_progress","title":"ls","content":[{"type":"content","content":{"type":"text","text":"[current working directory /home/dev/p] (Run step 0 (ls))"}}],"locations":[],"kind":"execute"}`,
			want: []accum.Observation{{ToolCallID: "g1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusRunning, Command: "ls",
				Cwd: "/home/dev/p", Description: "Run step 0 (ls)"}},
		},
		{
			name:   "banner without description",
			update: `{"sessionUpdate":"tool_call","toolCallId":"g1","status":"in_progress","title":"ls","content":[{"type":"content","content":{"type":"text","text":"[current working directory /x]"}}],"kind":"execute"}`,
			want:   []accum.Observation{{ToolCallID: "g1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusRunning, Command: "ls", Cwd: "/x"}},
		},
		{
			name:   "banner with [in dir] and [background]",
			update: `{"sessionUpdate":"tool_call","toolCallId":"g1","status":"in_progress","title":"npm run dev","content":[{"type":"content","content":{"type":"text","text":"[in web] (Start the dev server) [background]"}}],"kind":"execute"}`,
			want: []accum.Observation{{ToolCallID: "g1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusRunning, Command: "npm run dev",
				Cwd: "web", Description: "Start the dev server", Background: true}},
		},
		{
			name:   "older title holding command and banner",
			update: `{"sessionUpdate":"tool_call","toolCallId":"g1","status":"in_progress","title":"ls -la [current working directory /x] (List files)","kind":"execute"}`,
			want: []accum.Observation{{ToolCallID: "g1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusRunning, Command: "ls -la",
				Cwd: "/x", Description: "List files"}},
		},
		{
			name:   "a call replayed (0.36's session/load) under the tool's name: no command",
			update: `{"sessionUpdate":"tool_call","toolCallId":"g1","status":"completed","title":"Shell","content":[{"type":"content","content":{"type":"text","text":"a\nb"}}],"kind":"execute"}`,
			want: []accum.Observation{{ToolCallID: "g1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusCompleted,
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "a\nb")}}},
		},
		{
			name:   "completed with empty content: exit unknown",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"completed","title":"make","content":[],"locations":[],"kind":"execute"}`,
			want:   []accum.Observation{base},
		},
		{
			name:   "completed with output and no marker: combined Final, exit unknown (no success proof)",
			update: final(`"a\nb\n"`),
			want:   with(func(o *accum.Observation) { o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "a\nb\n")} }),
		},
		{
			name:   "Command exited with code: N → ExitText, not output",
			update: final(`"Command exited with code: 3"`),
			want:   with(func(o *accum.Observation) { o.Exit = ex(3, accum.ExitText, false) }),
		},
		{
			name:   "Command terminated by signal → Signal, not output",
			update: final(`"Command terminated by signal: SIGKILL"`),
			want:   with(func(o *accum.Observation) { o.Signal = "SIGKILL" }),
		},
		{
			name:   "bare signal name normalized",
			update: final(`"Command terminated by signal: 15"`),
			want:   with(func(o *accum.Observation) { o.Signal = "SIGTERM" }),
		},
		{
			// 0.36.0 shows a command's output itself where the notice
			// goes: the notice is Gemini's only after the user's cancel
			// (tricky-cancel's k_gemini_cancel printed it).
			name:   "cancelled by user: the agent's only if a cancel was asked",
			update: final(`"Command cancelled by user."`),
			want: with(func(o *accum.Observation) {
				o.Cancelled, o.CancelNotice = true, "Command cancelled by user."
				o.Worded.Cancelled, o.WordsIfCancelAsked = true, true
				o.Texts = []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Whole: "Command cancelled by user."}}
			}),
		},
		{
			name:   "cancelled by user: the output before the cancellation is output",
			update: final(`"Command cancelled by user.\n\nOutput before cancellation:\ntick1\ntick2"`),
			want: with(func(o *accum.Observation) {
				o.Cancelled, o.CancelNotice = true, "Command cancelled by user."
				o.Worded.Cancelled, o.WordsIfCancelAsked = true, true
				t := txt(accum.Combined, accum.Final, "tick1\ntick2")
				t.Whole = "Command cancelled by user.\n\nOutput before cancellation:\ntick1\ntick2"
				o.Texts = []accum.Text{t}
			}),
		},
		{
			// Gemini writes its cancel and timeout notices alone, or
			// followed by "Output before cancellation:" and the output
			// (0.36.0, 0.45.2); words after them in any other shape are
			// the command's (tricky-cancel, 0.36.0 plain shows the output
			// itself).
			name:   "the cancel notice with more on its line is output",
			update: final(`"Command cancelled by user. Retrying."`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "Command cancelled by user. Retrying.")}
			}),
		},
		{
			name:   "the cancel notice over other lines is output",
			update: final(`"Command cancelled by user.\ntick1"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "Command cancelled by user.\ntick1")}
			}),
		},
		{
			name:   "the timeout notice over other lines is output",
			update: final(`"Command was automatically cancelled because it exceeded the timeout of 5.0 minutes without output.\nstart"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "Command was automatically cancelled because it exceeded the timeout of 5.0 minutes without output.\nstart")}
			}),
		},
		{
			name:   "the timeout notice alone",
			update: final(`"Command was automatically cancelled because it exceeded the timeout of 0.5 minutes without output."`),
			want:   with(func(o *accum.Observation) { o.TimedOut = true }),
		},
		{
			name:   "the debug cancel notice with no output before it",
			update: final(`"Command was cancelled by user before it could complete. There was no output before it was cancelled."`),
			want: with(func(o *accum.Observation) {
				o.Cancelled = true
				o.CancelNotice = "Command was cancelled by user before it could complete. There was no output before it was cancelled."
				o.Worded.Cancelled, o.WordsIfCancelAsked = true, true
				o.Texts = []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Whole: "Command was cancelled by user before it could complete. There was no output before it was cancelled."}}
			}),
		},
		{
			name:   "the debug cancel head with other words after it is output",
			update: final(`"Command was cancelled by user before it could complete. Retrying"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "Command was cancelled by user before it could complete. Retrying")}
			}),
		},
		{
			name:   "Command failed: spawn error",
			update: final(`"Command failed: spawn bash ENOENT"`),
			want:   with(func(o *accum.Observation) { o.Failed = true }),
		},
		{
			// Gemini writes its markers only for an empty output, so a
			// marker that begins a longer text is a line the command printed.
			name:   "Command failed: on the first of several lines is output",
			update: final(`"Command failed: npm run build\nlerna ERR! build exited 1"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "Command failed: npm run build\nlerna ERR! build exited 1")}
			}),
		},
		{
			name:   "running in background on the first of several lines is output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"completed","title":"make","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"Command running in background: pid 42\nall good"}}]}`,
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "Command running in background: pid 42\nall good")}
			}),
		},
		{
			// A debug report begins with its first field; output that only
			// holds such lines further down is the command's.
			name:   "Output: and Exit Code: lines inside the output are output",
			update: final(`"Running case 1\nOutput: hello\nExit Code: 1\nRunning case 2\nOutput: world\nExit Code: 0"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "Running case 1\nOutput: hello\nExit Code: 1\nRunning case 2\nOutput: world\nExit Code: 0")}
			}),
		},
		{
			// 0.36.0 (tricky-more m_claude_bg): its display is the output
			// itself; Gemini's own notice is only "Command moved to
			// background (PID: N). ...".
			name:   "another agent's background words alone are output",
			update: final(`"Command running in background with ID: bash_1\n"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "Command running in background with ID: bash_1\n")}
			}),
		},
		{
			name:   "started in the background, alone, is output",
			update: final(`"Command started in the background"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "Command started in the background")}
			}),
		},
		{
			// The report that opens with Output (0.36 on) writes a field
			// only with a value: Exit Code only when nonzero, never
			// "(none)". 0.36.0 plain (tricky report_words) shows the
			// command's own text, here such lines.
			name:   "Output-first text: an Exit Code 0 or a (none) field is output, no exit",
			update: final(`"Output: x\nCommand: y\nDirectory: z\nExit Code: 0\nSignal: (none)\nProcess Group PGID: 1"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "x\nCommand: y\nDirectory: z\nExit Code: 0\nSignal: (none)")}
			}),
		},
		{
			name:   "Output-first debug report: the command's own Exit Code 0 line is output",
			update: final(`"Output: x\nExit Code: 0\nProcess Group PGID: 4242"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "x\nExit Code: 0")}
			}),
		},
		{
			name:   "Output-first debug report: a nonzero Exit Code is the field",
			update: final(`"Output: x\nExit Code: 0\nExit Code: 3\nProcess Group PGID: 4242"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "x\nExit Code: 0")}
				o.Exit = ex(3, accum.ExitText, false)
			}),
		},
		{
			name:   "moved to background without the Ctrl+B hint: Background, not output",
			update: final(`"Command moved to background (PID: 77). Output hidden."`),
			want:   with(func(o *accum.Observation) { o.Background = true }),
		},
		{
			name:   "moved to background: Background, not output",
			update: final(`"Command moved to background (PID: 1948). Output hidden. Press Ctrl+B to view."`),
			want:   with(func(o *accum.Observation) { o.Background = true }),
		},
		{
			// Gemini writes the pid it got, "undefined" when it got none.
			name:   "moved to background with no pid: Background, not output",
			update: final(`"Command moved to background (PID: undefined). Output hidden. Press Ctrl+B to view."`),
			want:   with(func(o *accum.Observation) { o.Background = true }),
		},
		{
			// 0.45.2's is_background command still running after its
			// delay: the display Gemini sends as the content.
			name:   "a background process started: Background, not output",
			update: final(`"Background process started with PID 4242."`),
			want:   with(func(o *accum.Observation) { o.Background = true }),
		},
		{
			name:   "the same words with more after them: output",
			update: final(`"Background process started with PID 4242.\nand then"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "Background process started with PID 4242.\nand then")}
			}),
		},
		{
			name:   "debug mode: Output combined, Exit Code ExitText, Error none",
			update: final(`"Command: make\nDirectory: (root)\nOutput: a\nError: boom\nb\nError: (none)\nExit Code: 2\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "a\nError: boom\nb")}
				o.Exit = ex(2, accum.ExitText, false)
			}),
		},
		{
			// "(none)" is written only by the reports that open with
			// Command (the one that opens with Output leaves the field out).
			name:   "debug mode: empty output, signal",
			update: final(`"Command: kill -9 $$\nDirectory: (root)\nOutput: (empty)\nError: (none)\nExit Code: (none)\nSignal: 9"`),
			want:   with(func(o *accum.Observation) { o.Signal = "SIGKILL" }),
		},
		{
			name:   "debug mode: Error is Gemini's failure, not stderr",
			update: final(`"Output: (empty)\nError: spawn ENOENT\nExit Code: (none)\nSignal: (none)"`),
			want:   with(func(o *accum.Observation) { o.Failed = true }),
		},
		{
			name:   "older debug mode: Stdout and Stderr really separated",
			update: final(`"Command: make\nDirectory: (root)\nStdout: ok\nStderr: warn\nError: (none)\nExit Code: 0\nSignal: (none)"`),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Stdout, accum.Final, "ok"), txt(accum.Stderr, accum.Final, "warn")}
				o.Exit = ex(0, accum.ExitText, false)
			}),
		},
		{
			name:   "failed: could not spawn",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"failed","title":"make","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"Error: spawn /bin/bash ENOENT"}}]}`,
			want:   []accum.Observation{{ToolCallID: "g1", Shell: accum.ShellYes, Status: accum.StatusFailed, Command: "make", Failed: true}},
		},
		{
			name:   "failed without content",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"failed"}`,
			want:   []accum.Observation{{ToolCallID: "g1", Status: accum.StatusFailed, Failed: true}},
		},
		{
			name:   "failed because the user cancelled",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"Tool \"run_shell_command\" was cancelled by the user."}}]}`,
			want:   []accum.Observation{{ToolCallID: "g1", Status: accum.StatusFailed, Cancelled: true, CancelNotice: `Tool "run_shell_command" was cancelled by the user.`}},
		},
		{
			name:   "other kinds: the title is not a command",
			update: `{"sessionUpdate":"tool_call","toolCallId":"r1","status":"in_progress","title":"README.md","kind":"read"}`,
			want:   []accum.Observation{{ToolCallID: "r1", Opens: true, Shell: accum.ShellNo, Status: accum.StatusRunning}},
		},
		{
			name:   "not a tool call",
			update: `{"sessionUpdate":"available_commands_update","availableCommands":[]}`,
		},
	})
}

func TestGeminiPermission(t *testing.T) {
	d, _ := Lookup("gemini")
	runObsCases(t, d, []obsCase{
		{
			name: "the ask is the first sight of the call: a full observation",
			ask:  `{"toolCallId":"g2","status":"pending","title":"printf 'a\\nb\\n'; exit 3","content":[{"type":"content","content":{"type":"text","text":"[current working directory /home/dev/p] (Run step 1 (exit3))"}}],"locations":[],"kind":"execute"}`,
			want: []accum.Observation{{ToolCallID: "g2", Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true,
				Command: "printf 'a\\nb\\n'; exit 3", Cwd: "/home/dev/p", Description: "Run step 1 (exit3)"}},
		},
		{
			name: "text beyond the banner is the reason",
			ask:  `{"toolCallId":"g2","status":"pending","title":"rm -rf /tmp/x","content":[{"type":"content","content":{"type":"text","text":"[current working directory /p] (Clean)\nCommand not in allowlist: rm"}}],"kind":"execute"}`,
			want: []accum.Observation{{ToolCallID: "g2", Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true,
				Command: "rm -rf /tmp/x", Cwd: "/p", Description: "Clean", ApprovalReason: "Command not in allowlist: rm"}},
		},
		{
			name: "background banner on an ask",
			ask:  `{"toolCallId":"g2","status":"pending","title":"sleep 6","content":[{"type":"content","content":{"type":"text","text":"[current working directory /p] (wait) [background]"}}],"kind":"execute"}`,
			want: []accum.Observation{{ToolCallID: "g2", Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true,
				Command: "sleep 6", Cwd: "/p", Description: "wait", Background: true}},
		},
	})
}

func TestGeminiDetect(t *testing.T) {
	for _, name := range []string{"gemini-cli", "Gemini CLI", "gemini"} {
		if got := Detect(name).Info().Name; got != "gemini" {
			t.Errorf("Detect(%q) = %s", name, got)
		}
	}
}

// TestGeminiRecording replays the real Gemini CLI 0.61.0 session: calls
// first seen in asks, banners, completed for every exit, no output at all.
func TestGeminiRecording(t *testing.T) {
	d, _ := Lookup("gemini")
	for _, fr := range loadRecording(t, "gemini-cli-0.61.0_plain.ndjson") {
		f, err := Read(d, fr.Msg)
		if err != nil {
			t.Fatalf("line %d: %v", fr.Line, err)
		}
		if f.AgentName != "" && Detect(f.AgentName).Info().Name != "gemini" {
			t.Errorf("agent %q not detected as gemini", f.AgentName)
		}
	}
	calls, _ := replayRecording(t, d, "gemini-cli-0.61.0_plain.ndjson")
	commands := []string{"ls", "printf 'a\\nb\\n'; exit 3", "echo to-stdout; echo to-stderr >&2; echo more-stdout",
		"ls /nonexistent-dir-xyz", "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done", "seq 1 40000",
		`printf '\xff\xfe ok\n'`, "echo start; sleep 6; echo finished-late", "echo before-kill; kill -9 $$"}
	if len(calls) != len(commands) {
		t.Fatalf("calls = %d, want %d", len(calls), len(commands))
	}
	for i, c := range calls {
		first := c.obs[0]
		// Steps 0 and 5 open with a tool_call; every other one with an ask.
		wantAsk := i != 0 && i != 5
		if first.PermissionAsk != wantAsk || first.Opens == wantAsk {
			t.Errorf("%s: first sight ask=%v opens=%v", c.id, first.PermissionAsk, first.Opens)
		}
		if first.Shell != accum.ShellYes || first.Command != commands[i] || first.Cwd != "/home/dev/work/proj-PSH3jo" ||
			!strings.HasPrefix(first.Description, "Run step ") || first.ApprovalReason != "" {
			t.Errorf("%s: first observation %+v", c.id, first)
		}
		f := c.final()
		if f.Status != accum.StatusCompleted || f.Exit != nil || f.Failed || f.Succeeded || f.Cancelled {
			t.Errorf("%s: final %+v", c.id, f)
		}
		for _, tx := range c.texts {
			t.Errorf("%s: unexpected output %q", c.id, tx.Text)
		}
		if (first.Background || f.Background) != (i == 7) {
			t.Errorf("%s: background first=%v final=%v", c.id, first.Background, f.Background)
		}
	}
}

// TestGeminiDebugReport reads finals as Gemini CLI 0.45.2 sent them with
// --debug (test/testdata/recordings/agents/gemini-cli-0.45.2_debug_full.ndjson):
// the report names only the fields that have a value, so a success is
// "Output: ...\nProcess Group PGID: N" with no exit code line.
func TestGeminiDebugReport(t *testing.T) {
	d, _ := Lookup("gemini")
	C, F := accum.Combined, accum.Final
	final := func(text string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"completed","title":"make","content":[{"type":"content","content":{"type":"text","text":` + jsq(text) + `}}],"locations":[],"kind":"execute"}`
	}
	base := accum.Observation{ToolCallID: "g1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "make"}
	with := func(f func(o *accum.Observation)) []accum.Observation {
		o := base
		f(&o)
		return []accum.Observation{o}
	}
	runObsCases(t, d, []obsCase{
		{name: "a success names no exit code: the output, and no exit (UNKNOWN, never a 0 from a missing line)",
			update: final("Output: alpha.txt  beta.md  gamma.go  notes.txt\nProcess Group PGID: 19498"),
			want: with(func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(C, F, "alpha.txt  beta.md  gamma.go  notes.txt")}
			})},
		{name: "a nonzero exit",
			update: final("Output: a\nb\nExit Code: 3\nProcess Group PGID: 19514"),
			want: with(func(o *accum.Observation) {
				o.Exit = ex(3, accum.ExitText, false)
				o.Texts = []accum.Text{txt(C, F, "a\nb")}
			})},
		{name: "a signal",
			update: final("Output: before-kill\nSignal: 9\nProcess Group PGID: 20249"),
			want: with(func(o *accum.Observation) {
				o.Signal = "SIGKILL"
				o.Texts = []accum.Text{txt(C, F, "before-kill")}
			})},
		{name: "a cancel: the notice is quoted, the output below it is the output",
			update: final("Command was cancelled by user before it could complete. Below is the output before it was cancelled:\ntick1\ntick2"),
			want: with(func(o *accum.Observation) {
				o.Cancelled = true
				o.CancelNotice = "Command was cancelled by user before it could complete. Below is the output before it was cancelled:"
				o.Worded.Cancelled, o.WordsIfCancelAsked = true, true
				t := txt(C, F, "tick1\ntick2")
				t.Whole = "Command was cancelled by user before it could complete. Below is the output before it was cancelled:\ntick1\ntick2"
				o.Texts = []accum.Text{t}
			})},
		{name: "an inactivity timeout: timed out, the output after the marker",
			update: final("Command was automatically cancelled because it exceeded the timeout of 5.0 minutes without output.\n\nOutput before cancellation:\nstart"),
			want: with(func(o *accum.Observation) {
				o.TimedOut = true
				o.Texts = []accum.Text{txt(C, F, "start")}
			})},
		{name: "a line the command printed that looks like a later field is output",
			update: final("Output: a\nSignal: 9\nb\nExit Code: 3\nProcess Group PGID: 1"),
			want: with(func(o *accum.Observation) {
				o.Exit = ex(3, accum.ExitText, false)
				o.Texts = []accum.Text{txt(C, F, "a\nSignal: 9\nb")}
			})},
		{name: "a report ending in a newline",
			update: final("Output: a\nExit Code: 3\nProcess Group PGID: 1\n"),
			want: with(func(o *accum.Observation) {
				o.Exit = ex(3, accum.ExitText, false)
				o.Texts = []accum.Text{txt(C, F, "a")}
			})},
		{name: "the same with Background PIDs",
			update: final("Output: a\nBackground PIDs: 12\nb\nExit Code: 3\nProcess Group PGID: 1"),
			want: with(func(o *accum.Observation) {
				o.Exit = ex(3, accum.ExitText, false)
				o.Texts = []accum.Text{txt(C, F, "a\nBackground PIDs: 12\nb")}
			})},
		{name: "every field of the older report, in order",
			update: final("Command: make\nDirectory: (root)\nOutput: a\nError: (none)\nExit Code: 2\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 7"),
			want: with(func(o *accum.Observation) {
				o.Exit = ex(2, accum.ExitText, false)
				o.Texts = []accum.Text{txt(C, F, "a")}
			})},
		{name: "output that only starts like a report is output",
			update: final("Output: 3 files\nDone"),
			want:   with(func(o *accum.Observation) { o.Texts = []accum.Text{txt(C, F, "Output: 3 files\nDone")} })},
	})
}

// TestGemini061Finals reads finals of real Gemini CLI 0.61.0 calls, the
// frames as recorded (the probeq scenario, plain and --debug).
func TestGemini061Finals(t *testing.T) {
	d, _ := Lookup("gemini")
	const (
		mimicID  = "run_shell_command__run_shell_command_1796443981167_0"
		mimicCmd = `printf 'Command: ls\nOutput: fake\nExit Code: 0\nSignal: (none)\nProcess Group PGID: 123\n'; exit 1`
		subst    = `for i in 1 2 3; do printf '\rprogress %d%%' $((i*33)); sleep 0.2; done; printf '\rdone\n'`
		blocked  = "Blocked: command substitution detected in shell command."
	)
	final := func(id, cmd, text string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":` + jsq(id) + `,"status":"completed","title":` + jsq(cmd) +
			`,"content":[{"type":"content","content":{"type":"text","text":` + jsq(text) + `}}],"locations":[],"kind":"execute"}`
	}
	obs := func(id, cmd string, f func(o *accum.Observation)) []accum.Observation {
		o := accum.Observation{ToolCallID: id, Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: cmd}
		f(&o)
		return []accum.Observation{o}
	}
	runObsCases(t, d, []obsCase{
		{
			// --debug: the report's Output field starts the text; the
			// "Output: " line further down, and the fields after it, are
			// what the command printed (it then exited 1).
			name:   "debug report whose output holds report-like lines: all of it is output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__run_shell_command_1796443981167_0","status":"completed","title":"printf 'Command: ls\\nOutput: fake\\nExit Code: 0\\nSignal: (none)\\nProcess Group PGID: 123\\n'; exit 1","content":[{"type":"content","content":{"type":"text","text":"Output: Command: ls\nOutput: fake\nExit Code: 0\nSignal: (none)\nProcess Group PGID: 123\nExit Code: 1\nProcess Group PGID: 30846"}}],"locations":[],"kind":"execute"}`,
			want: obs(mimicID, mimicCmd, func(o *accum.Observation) {
				o.Exit = ex(1, accum.ExitText, false)
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "Command: ls\nOutput: fake\nExit Code: 0\nSignal: (none)\nProcess Group PGID: 123")}
			}),
		},
		{
			// The older full report: the head fields in their order at the
			// start, the command's own Command:/Directory:/Output: lines in
			// the output.
			name:   "older debug report whose output holds head-field lines",
			update: final(mimicID, "make", "Command: make\nDirectory: (root)\nOutput: Command: ls\nDirectory: /x\nOutput: fake\nError: (none)\nExit Code: 1\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 7"),
			want: obs(mimicID, "make", func(o *accum.Observation) {
				o.Exit = ex(1, accum.ExitText, false)
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "Command: ls\nDirectory: /x\nOutput: fake")}
			}),
		},
		{
			// 0.45 and 0.61 write Output alone: lines of it that look like
			// the older releases' Stdout and Stderr fields are output.
			name:   "Stdout: and Stderr: lines in the output of a report with Output",
			update: final(mimicID, "make", "Output: a\nStdout: b\nStderr: c\nExit Code: 2\nProcess Group PGID: 7"),
			want: obs(mimicID, "make", func(o *accum.Observation) {
				o.Exit = ex(2, accum.ExitText, false)
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "a\nStdout: b\nStderr: c")}
			}),
		},
		{
			name:   "older report with Stdout and Stderr holding field-like lines",
			update: final(mimicID, "make", "Command: make\nDirectory: (root)\nStdout: Command: x\nStdout: ok\nStderr: warn\nError: (none)\nExit Code: 0\nSignal: (none)"),
			want: obs(mimicID, "make", func(o *accum.Observation) {
				o.Exit = ex(0, accum.ExitText, false)
				o.Texts = []accum.Text{txt(accum.Stdout, accum.Final, "Command: x\nStdout: ok"), txt(accum.Stderr, accum.Final, "warn")}
			}),
		},
		{
			// 0.61 refuses a command with $(...), backticks or <(...) and
			// says so in place of an output (--debug and plain alike): the
			// command never ran.
			name:   "blocked command substitution (--debug): failed, no output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__run_shell_command_1796443981412_0","status":"completed","title":"for i in 1 2 3; do printf '\\rprogress %d%%' $((i*33)); sleep 0.2; done; printf '\\rdone\\n'","content":[{"type":"content","content":{"type":"text","text":"Blocked: command substitution detected in shell command."}}],"locations":[],"kind":"execute"}`,
			want: obs("run_shell_command__run_shell_command_1796443981412_0", subst, func(o *accum.Observation) {
				o.Failed, o.FailNotice = true, blocked
			}),
		},
		{
			name:   "blocked command substitution (plain): failed, no output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__run_shell_command_1796443988500_0","status":"completed","title":"for i in 1 2 3; do printf '\\rprogress %d%%' $((i*33)); sleep 0.2; done; printf '\\rdone\\n'","content":[{"type":"content","content":{"type":"text","text":"Blocked: command substitution detected in shell command."}}],"locations":[],"kind":"execute"}`,
			want: obs("run_shell_command__run_shell_command_1796443988500_0", subst, func(o *accum.Observation) {
				o.Failed, o.FailNotice = true, blocked
			}),
		},
		{
			// Gemini writes the refusal only in place of an output, alone:
			// with other lines it is what the command printed.
			name:   "the refusal sentence printed with other output is output",
			update: final(mimicID, "cat notes.txt", blocked+"\nsee the docs"),
			want: obs(mimicID, "cat notes.txt", func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, blocked+"\nsee the docs")}
			}),
		},
		{
			name:   "the refusal sentence after other output is output",
			update: final(mimicID, "cat notes.txt", "note:\n"+blocked+"\n"),
			want: obs(mimicID, "cat notes.txt", func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, "note:\n"+blocked+"\n")}
			}),
		},
		{
			// Gemini blocks only a command with "(" or a backtick in it.
			name:   "the refusal sentence alone from a command without substitution is output",
			update: final(mimicID, "echo '"+blocked+"'", blocked+"\n"),
			want: obs(mimicID, "echo '"+blocked+"'", func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, blocked+"\n")}
			}),
		},
		{
			// In --debug the command's output is in the report's Output
			// field: the sentence there is output.
			name:   "the refusal sentence as a debug report's output is output",
			update: final(mimicID, "cat notes.txt", "Output: "+blocked+"\nProcess Group PGID: 9"),
			want: obs(mimicID, "cat notes.txt", func(o *accum.Observation) {
				o.Texts = []accum.Text{txt(accum.Combined, accum.Final, blocked)}
			}),
		},
	})
}

// TestGeminiNoticesByBuild holds each of Gemini's one-line notices to the
// builds that write it. 0.36.0 shows a command's output itself as the text
// of the `completed` final, so a line a build never writes is the
// command's, however much it reads like a later build's notice:
// "Background process started with PID N." is Gemini's from 0.38.0 on and
// "Blocked: command substitution ..." from 0.40.0 on (the bundles of
// 0.36.0, 0.37.2 and 0.39.1 hold neither). A build not known reads with
// the newest rules.
func TestGeminiNoticesByBuild(t *testing.T) {
	d, _ := Lookup("gemini")
	const (
		started = "Background process started with PID 42."
		blocked = "Blocked: command substitution detected in shell command."
	)
	final := func(cmd, text string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"completed","title":` + jsq(cmd) +
			`,"content":[{"type":"content","content":{"type":"text","text":` + jsq(text) + `}}],"locations":[],"kind":"execute"}`
	}
	startedCmd := "echo '" + started + "'"
	blockedCmd := "echo '" + blocked + "' # (a note)"
	output := func(cmd, text string) []accum.Observation {
		return []accum.Observation{{ToolCallID: "g1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: cmd,
			Texts: []accum.Text{txt(accum.Combined, accum.Final, text)}}}
	}
	background := []accum.Observation{{ToolCallID: "g1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: startedCmd, Background: true}}
	refused := []accum.Observation{{ToolCallID: "g1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: blockedCmd,
		Failed: true, FailNotice: blocked}}
	for _, tc := range []struct {
		version          string
		started, blocked []accum.Observation
	}{
		{"0.36.0", output(startedCmd, started+"\n"), output(blockedCmd, blocked+"\n")},
		{"0.37.2", output(startedCmd, started+"\n"), output(blockedCmd, blocked+"\n")},
		{"0.38.0", background, output(blockedCmd, blocked+"\n")},
		{"0.39.1", background, output(blockedCmd, blocked+"\n")},
		{"0.40.0", background, refused},
		{"0.61.0", background, refused},
		{"", background, refused},
	} {
		t.Run("build "+tc.version, func(t *testing.T) {
			runObsCases(t, Bind(d, ParseVersion(tc.version)), []obsCase{
				{name: "background notice", update: final(startedCmd, started+"\n"), want: tc.started},
				{name: "refusal", update: final(blockedCmd, blocked+"\n"), want: tc.blocked},
			})
		})
	}
}

// TestGeminiMarkerSpelling holds the exit and signal markers, and the
// inactivity-timeout notice, to the one spelling Gemini CLI's shell tool
// writes, in every bundle from 0.20 to 0.61: "Command exited with code:
// N" and "Command terminated by signal: S", no closing period, and
// "Command was automatically cancelled ...". 0.36.0 shows a command's output itself as the
// text in the same place, so a line spelled otherwise ("... code 7", as
// other agents and Gemini's own interactive shell mode write it) is what
// the command printed, on every build.
func TestGeminiMarkerSpelling(t *testing.T) {
	d, _ := Lookup("gemini")
	final := func(text string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"completed","title":"make","kind":"execute","content":[{"type":"content","content":{"type":"text","text":` + jsq(text) + `}}]}`
	}
	base := accum.Observation{ToolCallID: "g1", Shell: accum.ShellYes, Status: accum.StatusCompleted, Command: "make"}
	with := func(f func(o *accum.Observation)) []accum.Observation {
		o := base
		f(&o)
		return []accum.Observation{o}
	}
	output := func(text string) []accum.Observation {
		return with(func(o *accum.Observation) { o.Texts = []accum.Text{txt(accum.Combined, accum.Final, text)} })
	}
	timedOut := func(cancelled string) string {
		return "Command was automatically " + cancelled + " because it exceeded the timeout of 5.0 minutes without output."
	}
	for _, v := range []string{"0.36.0", "0.61.0", ""} {
		t.Run("build "+v, func(t *testing.T) {
			runObsCases(t, Bind(d, ParseVersion(v)), []obsCase{
				{name: "Gemini's exit marker", update: final("Command exited with code: 7"),
					want: with(func(o *accum.Observation) { o.Exit = ex(7, accum.ExitText, false) })},
				{name: "Gemini's signal marker", update: final("Command terminated by signal: SIGTERM"),
					want: with(func(o *accum.Observation) { o.Signal = "SIGTERM" })},
				{name: "exit line without the colon is output", update: final("Command exited with code 7\n"), want: output("Command exited with code 7\n")},
				{name: "exit line with a period is output", update: final("Command exited with code: 7."), want: output("Command exited with code: 7.")},
				{name: "signal line with a period is output", update: final("Command terminated by signal: SIGTERM.\n"), want: output("Command terminated by signal: SIGTERM.\n")},
				{name: "signal line without the colon is output", update: final("Command terminated by signal 15"), want: output("Command terminated by signal 15")},
				{name: "Gemini's timeout notice", update: final(timedOut("cancelled")),
					want: with(func(o *accum.Observation) { o.TimedOut = true })},
				{name: "the timeout notice spelled 'canceled' is output", update: final(timedOut("canceled") + "\n"), want: output(timedOut("canceled") + "\n")},
			})
		})
	}
}

// TestGeminiCancelledOutputBefore033 reads the frames Gemini CLI 0.32.1
// sent for a command the client's session/cancel stopped after it printed
// eight lines (test/testdata/recordings/agents/gemini-cli-0.32.1_plain_full.ndjson,
// step cancel, and the session/load replay of _load). Builds before 0.33.0
// display such a command as its output alone, `completed`, with no
// "Command cancelled by user." (their bundles write that only for an empty
// output): after a cancel the live final is the stopped command's, so the
// call is CANCELLED, its output kept. Without a cancel the same frame is a
// command that ended by itself; 0.33.0 on write the notice for every
// stopped command, so there (and on a build not known) a final without it
// is one the cancel did not stop. A replay (`tool_call`, titled "Shell")
// carries no cancel and says nothing of one.
func TestGeminiCancelledOutputBefore033(t *testing.T) {
	d, _ := Lookup("gemini")
	const (
		ask    = `{"toolCallId":"run_shell_command-1796560131563","status":"pending","title":"for i in $(seq 1 20); do echo tick$i; sleep 1; done [current working directory /home/dev/work/proj] (Run step 11 (cancel))","content":[],"locations":[],"kind":"execute"}`
		live   = `{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command-1796560131563","status":"completed","content":[{"type":"content","content":{"type":"text","text":"tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7\ntick8"}}]}`
		replay = `{"sessionUpdate":"tool_call","toolCallId":"run_shell_command-1796560131563","status":"completed","title":"Shell","content":[{"type":"content","content":{"type":"text","text":"tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7\ntick8"}}],"kind":"execute"}`
		ticks  = "tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7\ntick8"
	)
	// fold reads the ask (the call's first sight), then, after the
	// client's cancel when cancel is set, the frames: the call's last
	// revision and the last combined text one carried.
	fold := func(t *testing.T, b Dialect, cancel bool, frames ...string) (accum.Revision, *accum.Chunk) {
		t.Helper()
		f := newCallFold("run_shell_command-1796560131563")
		f.read(t, b, "", ask)
		if cancel {
			f.c.CancelRequested()
		}
		for _, fr := range frames {
			f.read(t, b, fr, "")
		}
		return f.last, f.out
	}
	for _, tc := range []struct {
		version string
		cancel  bool
		frames  []string
		want    accum.Outcome
	}{
		{"0.32.1", true, []string{live}, accum.Cancelled},
		{"0.32.1", false, []string{live}, accum.Unknown},
		{"0.32.1", false, []string{replay}, accum.Unknown},
		{"0.33.0", true, []string{live}, accum.Unknown},
		{"0.36.0", true, []string{live}, accum.Unknown},
		{"", true, []string{live}, accum.Unknown},
	} {
		t.Run(fmt.Sprintf("build %q cancel %v", tc.version, tc.cancel), func(t *testing.T) {
			r, out := fold(t, Bind(d, ParseVersion(tc.version)), tc.cancel, tc.frames...)
			require.Equal(t, tc.want, r.Outcome, r.OutcomeReason)
			require.Nil(t, r.ExitCode)
			require.NotNil(t, out)
			require.Equal(t, ticks, out.Text)
		})
	}
}
