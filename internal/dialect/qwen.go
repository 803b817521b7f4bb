package dialect

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// qwen reads `qwen --acp` (Qwen Code, a fork of Gemini CLI), tool
// `run_shell_command`. It shares Gemini's debug-report reading (the
// content of a final frame without rawOutput), and nothing else: Qwen
// sends a structured result Gemini does not.
//
// What it sends, and what it means here:
//   - `tool_call`: `pending`, kind `execute`, title "Shell" (the tool's
//     display name, never the command), empty `rawInput`,
//     `_meta.toolName: "run_shell_command"` (a shell call whatever its
//     kind).
//     Newer releases may title it "Shell: <command> (<description>)" and
//     fill rawInput at once; the "Shell: " is no part of the command.
//   - then a permission ask, or, for an auto-approved command, an
//     `in_progress` update: title "<command> (<description>)", `rawInput
//     {command, description, directory?, is_background?}`. The command and
//     description come from rawInput; the title is read (description and
//     " [in dir]" split off) only when rawInput names no command, and then
//     never replaces a command already known (CommandFromTitle).
//     `directory` is the cwd, relative to the project root; is_background
//     is Background.
//   - No live output. One final update, `completed` (exit 0) or `failed`
//     (nonzero exit, signal, timeout, cancel), whose content is a REPORT
//     for the model ("Command: ...\nDirectory: ...\nOutput: ...\nError:
//     ...\nExit Code: N\nSignal: ...\nProcess Group PGID: N") or a
//     truncation notice, never output (the report's "Command:" names the
//     command of a call no earlier frame named, and never replaces one),
//     beside a structured `rawOutput
//     {type: "shell_result", output, exitCode, signal, outcome, error,
//     truncated, outputFiles, ...}`:
//   - output: rawOutput.output, the combined output (Final). With
//     `truncated: true` it is only a window of the output (Truncated). A
//     "Tool output was too large..." notice or a "... [CONTENT TRUNCATED]
//     ..." separator, should they appear in it, are removed (the text after
//     the separator is the tail that is kept) and mark it Truncated; the
//     separator only in an output said cut (the notice, or `truncated`),
//     the notice only whole: elsewhere they are lines the command printed
//     (none was recorded in rawOutput.output, only in the content);
//     "(run_shell_command completed with no output)" is empty output.
//   - exit: rawOutput.exitCode (ExitStructured) ONLY when no signal is
//     set. Qwen says `exitCode: 0` NEXT TO `signal: 9`/`15` for a killed,
//     timed-out or cancelled command: that 0 is not an exit status, nor
//     is a 0 beside an outcome that is not a success (so a build that
//     moves or renames the signal cannot make a 0 up).
//   - signal: a number or a name (Signal). outcome (applyVerdict): "failed"
//     fails, "timed_out" is TimedOut, "cancelled" is Cancelled.
//     `error`, when not empty, is Qwen's own error: Failed, not output.
//   - A final whose rawOutput is a string (0.10 to 0.23, recorded:
//     0.10.1, 0.12.0 and 0.15.10 end every call `completed`, 0.21.10 and
//     0.23.4 a nonzero exit, a signal, a timeout or a cancel `failed`;
//     0.23.4 sends the plain string as 0.21 does, not 0.24's structured
//     result; a cancelled one's content is only "The tool had already
//     completed; its output was discarded.": Cancelled, in a replay too):
//     that string is the output alone (or, with none, Gemini's markers "Command exited with code: N",
//     "Command terminated by signal: S"), read as Gemini reads a final
//     text. Its trailers are no output: "Output too long and was saved to:
//     PATH" (the output is then a window: Truncated), 0.15's long-run
//     advice ("Note: this foreground command ran for Ns. ..."), 0.21's and
//     0.23's "AI attribution note skipped: ..." after a git commit it could not
//     analyze (both appended after a blank line to the report's last line
//     too, which is how they are told from output: qwenCutAppended), and
//     0.21's first line "Command timed out after Nms before it could
//     complete." (TimedOut). The content is then the only statement of
//     the exit: the model's report, read for its "Exit Code: N" (text
//     evidence), "Signal: N" (0 or "(none)" is none; an Exit Code 0 beside
//     a signal is no exit status) and "Error:" (Qwen's own error:
//     Failed), also when Qwen's truncation notice cut the report's middle;
//     or "Command timed out after Nms before it could complete. ..."
//     (TimedOut) or "Command was cancelled by user before it could
//     complete. ..." (Cancelled, its first line quoted). None of it is
//     output. A report ("Command: ...\nDirectory: ...\nOutput: ...")
//     without its "Exit Code:"/"Signal:" lines, or whose Exit Code is
//     neither a number nor "(none)", is a reworded report: no exit is
//     read from it, and it is said (result_text, "content text").
//   - A `rawOutput` string that is the result object itself as JSON (a
//     build that stringifies it) is read as the object, never as output,
//     unless the report shows it word for word (qwenResultString).
//   - 0.24 with is_background: a `completed` final whose rawOutput is the
//     string "Background shell <id> started (pid N)." and whose content is
//     "Background shell started.\nid: <id>\n..." (the output file, the
//     status file, advice): both are Qwen's notices, never output; the
//     call went on in the background (Background).
//   - 0.24's monitor tool (`_meta.toolName: "monitor"`, kind execute,
//     rawInput {command, description, ...}) starts its command detached
//     and streams its lines to the model as later notifications: a shell
//     call gone on in the background (Background), whose final's content
//     ("Monitor started.\nid: mon_...") and rawOutput ("Monitor started:
//     <description> (mon_...)") are Qwen's notices, never output, with no
//     exit code; a failed or rejected start is Failed, a cancelled one or
//     one whose ask the user refused Cancelled (see qwenMonitorResult).
//   - A final without rawOutput: its content is read as Gemini reads it
//     (debug report fields, exit/signal/cancel markers); on `failed` the
//     text is Qwen's error, not output: "was canceled by the user" (a
//     rejected ask) is Cancelled, anything else Failed.
//   - No `terminal_*` `_meta`; a ~570 KB `available_commands_update` that
//     is skipped like every update that is not about a tool call.
type qwen struct {
	// titleDescribes: the build (before 0.15.6; 0.8.2 and 0.10.1
	// recorded; 0.12.0's asks already carry rawInput, and its report's
	// Command line is rawInput's command; 0.15.6, the next on npm, was
	// recorded reading right with the newest rules) asks permission
	// before any tool_call and without rawInput, titling the call "<command> [timeout: Nms] (<description>)":
	// the title's last parenthesis is the description, unless it holds a
	// shell operator (see cutTitleDescription), and the final report
	// names the command as run (see qwenReportCommand).
	titleDescribes bool
	// screenText: the build (0.12.0 to before 0.15.6; 0.12.0 recorded)
	// sends as the output the buffer of the terminal emulator (a headless
	// xterm, 80 columns) it runs the command in, rendered row by row with
	// xterm's untrimmed translateToString(): see qwenScreenText. 0.10.1,
	// the version before it on npm, runs a command in a terminal only
	// when the user's settings ask for one (`shouldUseNodePtyShell ??
	// false`); 0.12.0 by default (`?? true`); 0.15.6, the next version on
	// npm, renders the buffer trimmed (serializeTerminalToText), as its
	// recordings show (qwen-code-0.15.6_plain_*: no padding, and the
	// tricky `notes` line of over 80 columns comes whole).
	screenText bool
}

func init() { register(qwen{}) }

// forVersion implements versioned: only the build says whether an ask's
// title ends with the description, and whether the output is a
// terminal's screen text.
func (qwen) forVersion(v Version) Dialect {
	return qwen{titleDescribes: v.Before("0.15.6"), screenText: !v.Before("0.12.0") && v.Before("0.15.6")}
}

func (qwen) Info() Info {
	// Auth method sign: qwen-oauth, offered by builds before 0.21; later
	// ones offer only openai, which any agent may offer, but open every
	// tool call with `_meta.provenance` (matchesShape).
	return Info{
		Name:               "qwen",
		AgentNames:         []string{"qwen-code", "qwen", "@qwen-code/qwen-code"},
		AuthMethodIDs:      []string{"qwen-oauth"},
		ShapeRule:          "an opening tool_call whose _meta has toolName and provenance members",
		Summary:            "Qwen Code run_shell_command: command from rawInput (never the title with its description), rawOutput shell_result output/exitCode/signal/outcome/truncated; exit 0 beside a signal is no exit status; the content report is never output.",
		ClientCapabilities: richCapabilities,
	}
}

// qwenInput is Qwen's run_shell_command `rawInput`.
type qwenInput struct {
	Command      CommandLine `json:"command"`
	Description  Str         `json:"description"`
	Directory    Str         `json:"directory"`
	Cwd          Str         `json:"cwd"`
	IsBackground *bool       `json:"is_background"`
}

// matchesShape is Qwen's ShapeRule, for a session that has not seen its
// agentInfo: from 0.21 Qwen offers only the auth method openai, but opens
// every tool call with `_meta {toolName, provenance: "builtin", ...}`,
// which no other agent this package knows sends.
func (qwen) matchesShape(u *shellUpdate, msg []byte) bool {
	return u.SessionUpdate == "tool_call" && metaHas(msg, "TOOLNAME", "PROVENANCE")
}

// qwenOutput is Qwen's structured `rawOutput` of a shell call.
type qwenOutput struct {
	Type      Str    `json:"type"`
	Output    Str    `json:"output"`
	ExitCode  Code   `json:"exitCode"`
	Signal    Signal `json:"signal"`
	Outcome   Str    `json:"outcome"`
	Error     Str    `json:"error"`
	Truncated *bool  `json:"truncated"`
	// FileDiff: the result is the display of a file edit Qwen made itself
	// in place of the command (see qwenOwnEdit), not a shell result.
	FileDiff Str `json:"fileDiff"`
}

// qwenRaw is Qwen's `rawOutput`, the tool's display result: the
// structured shell_result object, or, from releases that display the
// shell result as text (as Gemini CLI does), a string.
type qwenRaw struct {
	Text Str
	Obj  *qwenOutput
}

// UnmarshalJSON implements json.Unmarshaler; it never fails. Other JSON
// types read as absent.
func (r *qwenRaw) UnmarshalJSON(b []byte) error {
	*r = qwenRaw{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '"':
		r.Text.UnmarshalJSON(b)
	case '{':
		r.Obj = new(qwenOutput)
		r.Obj.read(b)
	}
	return nil
}

// ownFields implements ownFields: the members of the shell_result object
// read. Its exit code is `exitCode` only (every recorded build): an exit
// code under another name is a wire change, said and not read.
func (qwenRaw) ownFields() []string {
	return []string{"type", "output", "exitCode", "signal", "outcome", "error", "truncated", "fileDiff"}
}

// read fills o from the members of the object b, leniently.
func (o *qwenOutput) read(b []byte) {
	jsonlit.EachMember(b, func(key string, val []byte) {
		switch key {
		case "TYPE":
			o.Type.UnmarshalJSON(val)
		case "OUTPUT":
			o.Output.UnmarshalJSON(val)
		case "EXITCODE":
			o.ExitCode = ParseCode(val)
		case "SIGNAL":
			o.Signal.UnmarshalJSON(val)
		case "OUTCOME":
			o.Outcome.UnmarshalJSON(val)
		case "ERROR":
			o.Error.UnmarshalJSON(val)
		case "TRUNCATED":
			readBool(&o.Truncated, val)
		case "FILEDIFF":
			o.FileDiff.UnmarshalJSON(val)
		}
	})
}

// qwenOwnEdit says whether a structured rawOutput is the display of an
// edit Qwen made itself instead of running the command: from 0.21 (0.21.2,
// 0.21.10, 0.23.0, 0.23.4 and 0.24.4 recorded, commit-note c_edit) a
// `sed -i` it can simulate on a file the session has read is asked for as
// an edit, then written by Qwen, and the call ends with {fileDiff,
// fileName, filePath, originalContent, newContent, diffStat} and a diff
// content item. A shell result (`type` or `output` set) never is.
func qwenOwnEdit(out *qwenOutput) bool {
	return out.FileDiff.Set && !out.Type.Set && !out.Output.Set
}

// qwenCall is a tool call frame of Qwen Code.
type qwenCall struct {
	ToolCall
	RawInput  *qwenInput `json:"rawInput"`
	RawOutput qwenRaw    `json:"rawOutput"`
	Meta      *struct {
		ToolName Str `json:"toolName"`
	} `json:"_meta"`
}

// qwenOtherTools are the tools of Qwen Code that are no shell but have
// the kind execute, named in `_meta.toolName` on every frame: image_gen
// (0.24.4, chunks/image-gen-UIN6FN2N.js: ImageGenTool, "execute" /*
// Execute */, parameters {prompt, size}) makes a picture.
var qwenOtherTools = map[string]bool{"image_gen": true}

// knownTool implements knownTools: a tool of Qwen's the dialect knows is
// no shell, though its kind is execute (qwenOtherTools), or any tool
// `_meta.toolName` names other than the shell and monitor whose frame says
// a kind other than execute: an MCP or discovered tool (kind other or
// read) whose own arguments may well include a `command`, which names no
// shell command. Every recorded frame that carries rawInput carries its
// kind too. A tool of kind execute under another name is still read as a
// shell (a renamed shell tool), and a frame without a kind or a toolName
// (a 0.15 ask) is read by its signs.
func (u *qwenCall) knownTool() bool {
	if u.Meta == nil || u.Meta.ToolName.S == "" {
		return false
	}
	switch name := u.Meta.ToolName.S; {
	case qwenOtherTools[name]:
		return true
	case name == qwenToolName || name == qwenMonitorTool:
		return false
	}
	return u.Kind != nil && ReadKind(u.Kind) != accum.ShellYes
}

// unreadFields: 0.24's rawOutput.text restates rawOutput.output for
// display (cut in the middle "for ACP transport"); notices, pid,
// directory, version and outputFiles say nothing about the exit or the
// output.
//
// The display of an edit Qwen made itself (qwenOwnEdit) names the file
// and holds its content before and after and counts of the change: about
// a file, never the command's output or exit.
func (qwenCall) unreadFields() []string {
	return []string{"rawOutput.text", "rawOutput.notices", "rawOutput.pid", "rawOutput.directory", "rawOutput.version", "rawOutput.outputFiles",
		"rawOutput.fileName", "rawOutput.filePath", "rawOutput.originalContent", "rawOutput.newContent", "rawOutput.diffStat"}
}

func (q qwen) read(msg []byte, scope string) (Frame, error) {
	switch {
	case q.screenText:
		return readFrame(msg, scope, observeQwenScreen, askQwenOld)
	case q.titleDescribes:
		return readFrame(msg, scope, observeQwenOld, askQwenOld)
	}
	return readFrame(msg, scope, observeQwen, askQwen)
}

func observeQwen(u *qwenCall) []accum.Observation { return observeQwenFor(u, false) }

func observeQwenOld(u *qwenCall) []accum.Observation { return observeQwenFor(u, true) }

// qwenScreenRows is how many rows the terminal of a screenText build
// holds: xterm's default scrollback of 1,000 lines (`scrollback: 1e3` in
// its dist; the Terminal is made without one) and the 30 rows of the
// screen (`terminalHeight ?? 30`: the ACP session runs a tool with no
// shell execution config).
const qwenScreenRows = 1000 + 30

// observeQwenScreen reads a frame of a screenText build (whose asks are
// titled as titleDescribes says): its output texts are screen text.
func observeQwenScreen(u *qwenCall) []accum.Observation {
	obs := observeQwenFor(u, true)
	for i := range obs {
		for j := range obs[i].Texts {
			qwenScreenText(&obs[i].Texts[j])
		}
	}
	return obs
}

// qwenScreenText reads an output of a screenText build, which is the
// buffer of the terminal the command ran in (getFullBufferText in its
// dist): every row rendered untrimmed, joined with "\n", and the whole
// trimmed at its end. Every line but the last is so padded with spaces
// to the terminal's width: the terminal's blank cells, which the command
// never wrote, and no output. They are removed. A command's own trailing
// spaces on such a line cannot be told from the padding (a cell it wrote
// a space to is a blank cell), and go with it; the last line's were
// already trimmed by Qwen. This holds for whichever text carries the
// output: the displayed rawOutput string, or the report's Output field
// (the same buffer text) when there is none; the build sends no live
// output. A line longer than the terminal's width comes wrapped onto the
// next row, split by a "\n" the command did not write: that is left as
// it is, as a line the command ended at exactly the width cannot be told
// from a wrapped one.
//
// The buffer holds qwenScreenRows rows: an output that needs more loses
// its first rows, and nothing on the frame says so. A text of all of them
// but the cursor's row (which, empty after an output's last newline, Qwen
// trimmed: `seq 1 60000` came as rows 58972..60000, 1,029 rows) is read
// as what it may be, a tail window of the output: Truncated. An output of
// exactly that many rows, not cut, is then said truncated too: it cannot
// be told from one that was.
func qwenScreenText(t *accum.Text) {
	if strings.Count(t.Text, "\n")+1 >= qwenScreenRows-1 {
		t.Truncated = true
	}
	if !strings.Contains(t.Text, "\n") {
		return
	}
	lines := strings.Split(t.Text, "\n")
	for i := range lines[:len(lines)-1] {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	t.Text = strings.Join(lines, "\n")
}

func askQwen(u *qwenCall) accum.Observation { return askQwenFor(u, false) }

func askQwenOld(u *qwenCall) accum.Observation { return askQwenFor(u, true) }

func observeQwenFor(u *qwenCall, titleDescribes bool) []accum.Observation {
	if u.SessionUpdate != "tool_call" && u.SessionUpdate != "tool_call_update" {
		return nil
	}
	o := u.Base()
	qwenInputs(&o, u, titleDescribes)
	if o.Shell == accum.ShellNo {
		return []accum.Observation{o}
	}
	ended := o.Status.Ended()
	if qwenIsMonitor(u) {
		if ended {
			text, _ := u.Texts()
			qwenMonitorResult(&o, text, u.RawOutput.Text.S)
		}
		return []accum.Observation{o}
	}
	if o.Command == "" && ended {
		if text, ok := u.Texts(); ok {
			if cmd, ok := qwenReportCommand(text); ok {
				// The report's Command line is the command as run. A build
				// that named the call only in its ask's title (see
				// qwen.titleDescribes) has it replace what that title gave.
				o.Command, o.CommandFromTitle = cmd, !titleDescribes
			}
		}
	}
	out := u.RawOutput.Obj
	if out == nil && u.RawOutput.Text.Set {
		out = qwenResultString(u)
	}
	if out != nil {
		if qwenOwnEdit(out) {
			// No process ran: no output, no exit status.
			o.Src.Notice = "rawOutput.fileDiff: Qwen made the edit itself, no process ran"
			return []accum.Observation{o}
		}
		qwenResult(&o, out, ended)
		return []accum.Observation{o}
	}
	if !ended {
		// No live output: text on an unfinished frame describes the call.
		return []accum.Observation{o}
	}
	text, hasText := u.Texts()
	switch display := u.RawOutput.Text; {
	case display.Set && qwenBackgroundStarted(display.S, text):
		// 0.24 started the command in the background (is_background):
		// the display and the content are Qwen's notices of that, and the
		// command's output goes to a file, never to this call.
		o.Background, o.Src.Notice = true, "background shell notices of rawOutput and the content text"
	case display.Set:
		// A release that displays the result as text (0.15): that text is
		// the output or Gemini's markers; the content is the model's
		// report, which states the exit code and the signal.
		if o.Status == accum.StatusFailed && qwenUserCancel.MatchString(display.S) {
			o.Cancelled, o.CancelNotice = true, notice(display.S)
		} else {
			switch {
			case o.Status == accum.StatusFailed && strings.TrimSpace(text) == qwenCancelledAfterRun:
				// The user cancelled the command; the display is what it
				// printed before. Live, the cancelled turn says so too; a
				// session/load replay has only this frame.
				o.Cancelled, o.CancelNotice = true, notice(text)
			case hasText:
				qwenReport(&o, text)
			}
			n := len(o.Texts)
			shown := display.S
			if hasText {
				shown = qwenCutAppended(text, shown)
			}
			if out, ok := qwenShownOutput(text, shown); ok {
				// The report shows the display's output word for word: it
				// is the output, whatever it reads like.
				o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: out})
			} else {
				qwenFinalText(&o, shown)
			}
			if len(o.Texts) > n {
				o.Src.Output = "rawOutput (the displayed text)"
			}
		}
	case o.Status == accum.StatusFailed:
		// Qwen's error (the user's refusal, a spawn error, a policy that
		// denies the command), never output.
		if qwenUserCancel.MatchString(text) {
			o.Cancelled, o.CancelNotice = true, notice(text)
		} else {
			o.Failed = true
		}
	case hasText:
		qwenFinalText(&o, text)
	}
	return []accum.Observation{o}
}

// qwenResultString reads a `rawOutput` string that is Qwen's result
// object as JSON (a build that stringifies it): an object with `type`
// "shell_result", or with both `output` and `exitCode`. That is the
// result, not 0.15's displayed output: nil when the string is no such
// object, or when the content's report shows it word for word as its
// Output (a command that printed it: 0.15's display is then output).
func qwenResultString(u *qwenCall) *qwenOutput {
	b := []byte(strings.TrimSpace(u.RawOutput.Text.S))
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return nil
	}
	out, hasExit := new(qwenOutput), false
	jsonlit.EachMember(b, func(key string, _ []byte) { hasExit = hasExit || key == "EXITCODE" })
	out.read(b)
	if out.Type.S != qwenResultType && !(out.Output.Set && hasExit) {
		return nil
	}
	if text, ok := u.Texts(); ok {
		if _, shown := qwenShownOutput(text, qwenCutAppended(text, u.RawOutput.Text.S)); shown {
			return nil
		}
	}
	return out
}

// qwenResultType is the `type` of Qwen's structured shell result.
const qwenResultType = "shell_result"

func askQwenFor(u *qwenCall, titleDescribes bool) accum.Observation {
	o := u.askBase()
	qwenInputs(&o, u, titleDescribes)
	// Content of an ask, if any, is the reason for asking.
	o.ApprovalReason = u.askReason()
	return o
}

// qwenBackgroundDisplay is 0.24's display of a command started in the
// background ("Background shell bg_c7e7d7af started (pid 15517)."; the pid
// only when known); qwenBackgroundContent opens its notice to the model
// ("Background shell started.\nid: bg_c7e7d7af\npid: 15517\noutput file:
// ...").
var qwenBackgroundDisplay = mustAnchored(`^Background shell (\S+) started(?: \(pid \d+\))?\.$`)

const qwenBackgroundContent = "Background shell started.\nid: "

// qwenBackgroundStarted says whether a final's displayed text and content
// are Qwen's notices of a command it started in the background. Both are
// needed, naming the same shell: a build that displays the output as text
// (0.15, 0.21) sends a report as the content, so a command that printed
// the display line alone is still output.
func qwenBackgroundStarted(display, content string) bool {
	m := qwenBackgroundDisplay.FindStringSubmatch(display)
	return m != nil && strings.HasPrefix(content, qwenBackgroundContent+m[1]+"\n")
}

// qwenMonitorTool is 0.24's monitor tool (chunks/monitor-XCEGKLFN.js,
// MonitorTool, kind "execute", rawInput {command, description?,
// max_events?, idle_timeout_ms?, directory?}). It spawns `bash -c
// <command>` detached and returns at once; each line the command prints
// reaches the model later as a notification, never this call. It is a
// shell command the user would see run, gone on in the background
// (Background), whose result is only ever Qwen's notice of it: no output,
// no exit code.
const qwenMonitorTool = "monitor"

// qwenIsMonitor says whether a frame is of the monitor tool, which every
// frame names in `_meta.toolName`.
func qwenIsMonitor(u *qwenCall) bool { return u.Meta != nil && u.Meta.ToolName.S == qwenMonitorTool }

// qwenMonitorFailed and qwenMonitorCancelled open the monitor's results
// that say no command runs: "Monitor failed to start: E" (display
// "Monitor failed: E"), "Cannot start monitor: maximum concurrent monitors
// (N) reached. ..." ("Monitor rejected: too many concurrent monitors."),
// and "Monitor was cancelled before it could start." ("Monitor
// cancelled."). The tool returns them as a success: the status says
// completed.
var (
	qwenMonitorFailed    = regexp.MustCompile(`^(?:Monitor failed\b|Cannot start monitor\b|Monitor rejected\b)`)
	qwenMonitorCancelled = regexp.MustCompile(`^Monitor (?:was )?cancell?ed\b`)
)

// qwenMonitorResult reads a monitor's final: its content (the notice to
// the model: "Monitor started.\nid: mon_...\ncommand: ...") and its
// display (rawOutput, "Monitor started: <description> (mon_...)") are
// Qwen's words, never output, as the command's output goes elsewhere. A
// start that failed or that Qwen rejected (too many monitors) is Failed;
// one cancelled before it started is Cancelled, as is one whose ask the
// user refused (a `failed` final whose text is Qwen's error `Tool
// "monitor" was canceled by the user.`, see qwenUserCancel); each with
// its notice.
func qwenMonitorResult(o *accum.Observation, content, display string) {
	text := strings.TrimSpace(content)
	if text == "" {
		text = strings.TrimSpace(display)
	}
	o.Src.Notice = "monitor notices of the content text and rawOutput"
	failed := qwenMonitorFailed.MatchString(text) || qwenMonitorFailed.MatchString(display)
	switch {
	case qwenMonitorCancelled.MatchString(text) || qwenMonitorCancelled.MatchString(display):
		o.Cancelled, o.CancelNotice = true, notice(text)
	case o.Status == accum.StatusFailed && !failed && qwenUserCancel.MatchString(text):
		// The user refused the ask: Qwen's error `Tool "monitor" was
		// canceled by the user.`, as for run_shell_command.
		o.Cancelled, o.CancelNotice = true, notice(text)
	case o.Status == accum.StatusFailed || failed:
		o.Failed, o.FailNotice = true, notice(text)
	}
}

// qwenCancelledAfterRun is the whole content of a `failed` frame whose
// command the user cancelled after it had started (0.21.10 to 0.23.4:
// Qwen's TOOL_POST_EXECUTION_CANCELLED_MESSAGE), the output before the
// cancel in rawOutput. A command's own output never stands alone there:
// the content is then the report, its output inside the Output field.
const qwenCancelledAfterRun = "The tool had already completed; its output was discarded."

// qwenUserCancel is the text of a call the user refused or cancelled
// (`Tool "run_shell_command" was canceled by the user.`); a denial by a
// policy or any other error is not.
var qwenUserCancel = regexp.MustCompile(`(?i)\bcancell?ed by (?:the )?user\b|\b(?:rejected|denied|declined) by (?:the )?user\b|\baborted\b`)

// qwenToolName is the shell tool's programmatic name.
const qwenToolName = "run_shell_command"

// qwenInputs reads shell-ness, command, cwd, description and background.
func qwenInputs(o *accum.Observation, u *qwenCall, titleDescribes bool) {
	if u.Meta != nil && u.Meta.ToolName.S == qwenToolName {
		o.Shell = accum.ShellYes
	}
	monitor := qwenIsMonitor(u)
	if monitor {
		// Its command runs detached, reported only to the model.
		o.Shell, o.Background = accum.ShellYes, true
	}
	if u.knownTool() {
		o.Shell = accum.ShellNo // its kind execute says nothing
		return
	}
	if in := u.RawInput; in != nil {
		if in.Command.Line != "" {
			o.Command = in.Command.Line
			if o.Shell == accum.ShellUnknown {
				o.Shell = accum.ShellYes
			}
		}
		if in.Description.Set {
			o.Description = in.Description.S
		}
		for _, c := range []Str{in.Directory, in.Cwd} {
			if c.Set && strings.TrimSpace(c.S) != "" {
				o.Cwd = strings.TrimSpace(c.S)
				break
			}
		}
		if in.IsBackground != nil && *in.IsBackground {
			o.Background = true
		}
	}
	// A monitor's title ("Monitor: Monitor: <description>") names no
	// command; its rawInput always does (command is required).
	if o.Command == "" && !monitor && o.Shell == accum.ShellYes && u.Title != nil && o.Status != accum.StatusCompleted && o.Status != accum.StatusFailed {
		if cmd := qwenTitleCommand(*u.Title, o, titleDescribes && u.RawInput == nil); cmd != "" {
			o.Command, o.CommandFromTitle = cmd, true
		}
	}
}

// qwenTitleCommand reads the command from a title "<command> [in
// <dir>] (<description>)". The tool's display name is no command. The
// description is split off only when rawInput named it, so that a command
// that ends in parentheses keeps them, or when the build titles every
// call so (described: qwen.titleDescribes, and no rawInput), with its
// " [timeout: Nms]" before it.
func qwenTitleCommand(title string, o *accum.Observation, described bool) string {
	t := strings.TrimSpace(title)
	if strings.EqualFold(t, "shell") || t == qwenToolName {
		return ""
	}
	// Newer releases title a call "<display name>: <description of the
	// invocation>".
	for _, p := range []string{"Shell: ", qwenToolName + ": "} {
		if len(t) > len(p) && strings.EqualFold(t[:len(p)], p) {
			t = strings.TrimSpace(t[len(p):])
			break
		}
	}
	if o.Description != "" {
		t = strings.TrimSpace(strings.TrimSuffix(t, " ("+o.Description+")"))
	} else if described {
		if cmd, desc, ok := cutTitleDescription(t); ok {
			t, o.Description = cmd, desc
		}
		if m := qwenTitleTimeout.FindStringIndex(t); m != nil {
			t = strings.TrimSpace(t[:m[0]])
		}
	}
	if i := strings.LastIndex(t, " [in "); i >= 0 && strings.HasSuffix(t, "]") {
		if o.Cwd == "" {
			o.Cwd = strings.TrimSpace(t[i+len(" [in ") : len(t)-1])
		}
		t = strings.TrimSpace(t[:i])
	}
	return t
}

// qwenFinalText reads a final text the way Gemini does (a debug report's
// fields, exit/signal/cancel markers, else the output), after removing
// Qwen's truncation notices, which mark the output truncated, and its
// advice to the model about long-running commands.
func qwenFinalText(o *accum.Observation, text string) {
	text = qwenCutLongRunHint(text)
	saved := false
	if loc := qwenSavedNotice.FindStringIndex(text); loc != nil {
		text, saved = text[:loc[0]], true
	}
	body, truncated := qwenClean(text, false)
	truncated = truncated || saved
	if loc := qwenTimedOutDisplay.FindStringIndex(body); loc != nil {
		// "Command timed out after Nms." stands where the output goes when
		// there was none (0.15); 0.21 puts "Command timed out after Nms
		// before it could complete." on a line before the output.
		o.TimedOut = true
		body = body[loc[1]:]
	}
	n := len(o.Texts)
	geminiFinal(o, body)
	if truncated && len(o.Texts) == n {
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Delta, Truncated: true})
	}
	for i := n; i < len(o.Texts); i++ {
		o.Texts[i].Truncated = o.Texts[i].Truncated || truncated
	}
}

var (
	// qwenSavedNotice is what 0.15 appends to the displayed output when
	// the model's copy was cut and the whole output saved to a file; the
	// displayed output is then a window of the whole.
	qwenSavedNotice = regexp.MustCompile(`(?:^|\n)Output too long and was saved to: [^\n]*\s*$`)
	// qwenLongRunHint is 0.15's advice to the model after a foreground
	// command that ran long, appended after a blank line.
	qwenLongRunHint = regexp.MustCompile(`(?s)(?:^|\n\n)Note: this foreground command ran for \d+s\. Next time .*$`)
	// qwenTimedOutDisplay is the displayed result of a command that timed
	// out without output (0.15), or the line before the output of one that
	// printed some (0.21).
	qwenTimedOutDisplay = regexp.MustCompile(`^Command timed out after \d+ ?ms(?: before it could complete)?\.(?:\n|$)`)
	// qwenTimedOut and qwenCancelled are the model's text of a command
	// that timed out or was cancelled (0.15): "Command timed out after
	// 2000ms before it could complete. Below is the output ..."; the output
	// itself is the displayed rawOutput.
	qwenTimedOut  = regexp.MustCompile(`^Command timed out after \d+ ?ms before it could complete\.`)
	qwenCancelled = regexp.MustCompile(`^Command was cancell?ed by (?:the )?user before it could complete\.`)
	// qwenReportTail is the end of the model's report (0.15): its last
	// "Exit Code:" and "Signal:" lines, before "Process Group PGID:".
	qwenReportTail = regexp.MustCompile(`\nExit Code: ([^\n]*)\nSignal: ([^\n]*)\n(?:Background PIDs: [^\n]*\n)?Process Group PGID: [^\n]*`)
)

// qwenShownOutput finds the output in a displayed text (0.10 to 0.23)
// by the model's report beside it: Qwen builds both from one output, the
// report as "Command: ...\nDirectory: ...\nOutput: <output>\nError:
// ...", the display as the output itself, then, after a blank line, its
// long-run advice (qwenLongRunHint) when the command ran long. A display
// that the report's Output field holds whole, or holds but for that
// advice, is the command's output, whatever its words: the notes Qwen
// appends to the display are never in the report's Output. A report that
// Qwen cut, a debug report (the display is then the report itself) or an
// empty output ("(empty)" in the report) shows no such field: ok is
// false, and the display is read by its words (qwenFinalText).
func qwenShownOutput(content, display string) (string, bool) {
	if display == "" || !strings.HasPrefix(content, "Command: ") {
		return "", false
	}
	if qwenOutputField(content, display) {
		return display, true
	}
	// The advice follows the output after a blank line: try each blank
	// line that opens it, the last first (the output may hold the same
	// words).
	for rest := display; ; {
		i := strings.LastIndex(rest, qwenHintStart)
		if i < 0 {
			return "", false
		}
		if out := display[:i]; out != "" && qwenLongRunHint.FindStringIndex(display[i:]) != nil && qwenOutputField(content, out) {
			return out, true
		}
		rest = display[:i]
	}
}

// qwenCutAppended removes from a displayed text (0.15 to 0.23) the notes
// Qwen appended to both the model's report and the display: its long-run
// advice and, from 0.21 (0.21.2 to 0.23.4 recorded), its "AI attribution
// note skipped: ..." warning
// after a git commit it could not analyze. Qwen joins each note to the
// report after its last line ("Process Group PGID: N") and to the display
// after the output, each after a blank line ("\n\n"); with no output the
// display is the notes alone, without the first blank line. The notes are
// what the report holds after that last line, which no command writes (its
// output is the report's Output field, before the Error, Exit Code and
// Signal lines): a display that ends with the same text loses it. A
// display that does not, or a report without such a tail, is left as it
// is.
func qwenCutAppended(content, display string) string {
	i := strings.LastIndex(content, "\nProcess Group PGID: ")
	if i < 0 {
		return display
	}
	j := i + 1 + strings.IndexByte(content[i+1:]+"\n", '\n')
	if j >= len(content) {
		return display
	}
	notes := content[j:]
	if !strings.HasPrefix(notes, "\n\n") || len(notes) == 2 {
		return display
	}
	switch {
	case strings.HasSuffix(display, notes):
		return display[:len(display)-len(notes)]
	case display == notes[2:]:
		return ""
	}
	return display
}

// qwenOutputField says whether the report content's Output field is out:
// "\nOutput: <out>\nError: " on the line after the report's Directory
// line. A command of several lines may hold such lines itself; the
// field is the one after a line that starts "Directory: ".
func qwenOutputField(content, out string) bool {
	field := "\nOutput: " + out + "\nError: "
	for from := 0; ; {
		i := strings.Index(content[from:], field)
		if i < 0 {
			return false
		}
		i += from
		if line := content[strings.LastIndexByte(content[:i], '\n')+1 : i]; strings.HasPrefix(line, "Directory: ") {
			return true
		}
		from = i + 1
	}
}

// qwenHintStart opens Qwen's long-run advice after the output.
const qwenHintStart = "\n\nNote: this foreground command ran for "

// qwenCutLongRunHint removes the long-run advice from a text.
func qwenCutLongRunHint(text string) string {
	if loc := qwenLongRunHint.FindStringIndex(text); loc != nil {
		return text[:loc[0]]
	}
	return text
}

// qwenReport reads the model's text of a 0.15 final, whose displayed
// rawOutput holds the output alone: the report's "Exit Code: N" (unless a
// signal is named: Qwen writes 0 beside the signal of a killed process),
// "Signal: N" (0 or "(none)" is no signal) and "Error:" (Qwen's own
// error, Failed), or the notice of a timeout or a cancel. The report may
// come cut by Qwen's truncation notice: its end, which holds these fields,
// is kept. Nothing of it is output. A report whose end is not these
// fields, or whose Exit Code is no number, is said (see qwenReportHead).
func qwenReport(o *accum.Observation, text string) {
	text = strings.TrimSpace(text)
	if i := strings.LastIndex(text, "\nProcess Group PGID: "); i >= 0 {
		// The advice Qwen appends after the report's last line; the same
		// words inside the report's Output are the command's.
		j := i + 1 + strings.IndexByte(text[i+1:]+"\n", '\n')
		if loc := qwenLongRunHint.FindStringIndex(text[j:]); loc != nil && loc[0] == 0 {
			text = text[:j]
		}
	} else {
		text = qwenCutLongRunHint(text)
	}
	switch {
	case qwenTimedOut.MatchString(text):
		o.TimedOut = true
		return
	case qwenCancelled.MatchString(text):
		o.Cancelled, o.CancelNotice = true, notice(text[:strings.IndexByte(text+"\n", '\n')])
		return
	}
	if !strings.HasPrefix(text, "Command: ") && !strings.HasPrefix(text, qwenTruncNotice) {
		return
	}
	all := qwenReportTail.FindAllStringSubmatchIndex(text, -1)
	if all == nil {
		if qwenReportHead(text) {
			// Every report of 0.15 and 0.21 that was recorded (every call
			// that ran, exit 0 too) ends in its Exit Code and Signal lines:
			// a report without them comes from a build that reworded or
			// dropped them, whose exit goes unread. Said, never guessed.
			addUnrecognized(&o.Unrecognized, accum.UnrecognizedResult, "content text")
		}
		return
	}
	m := all[len(all)-1]
	o.Src.Notice = "the model's report in the content text"
	code, sig := trimBlank(text[m[2]:m[3]]), trimBlank(text[m[4]:m[5]])
	if sig != "" && sig != "0" && sig != "(none)" {
		o.Signal = NormalizeSignal(sig)
	}
	c := CodeFromString(code)
	if c.Known && !(o.Signal != "" && c.Value == 0) {
		o.Exit = c.Exit(accum.ExitText, true)
		o.Src.Exit = "Exit Code line of the content report"
	} else if o.Signal != "" {
		o.Src.Exit = "Signal line of the content report"
	}
	if !c.Known && code != "(none)" {
		// An Exit Code that is neither a number nor Qwen's "(none)": a
		// reworded value, read as no exit, and said.
		addUnrecognized(&o.Unrecognized, accum.UnrecognizedResult, "content text")
	}
	head := text[:m[0]]
	if i := strings.LastIndex(head, "\nError: "); i >= 0 {
		if e := strings.TrimSpace(head[i+len("\nError: "):]); e != "" && e != "(none)" {
			o.Failed = true
		}
	}
}

// qwenReportHead says whether text opens as the model's report
// ("Command: ...\nDirectory: ...\nOutput: ..."), also after Qwen's
// truncation notice: a text that is a report whatever its last lines say.
func qwenReportHead(text string) bool {
	if strings.HasPrefix(text, qwenTruncNotice) {
		i := strings.Index(text, qwenTruncPart)
		if i < 0 {
			return false
		}
		text = text[i+len(qwenTruncPart):]
	}
	rest, ok := strings.CutPrefix(text, "Command: ")
	if !ok {
		return false
	}
	d := strings.Index(rest, "\nDirectory: ")
	return d >= 0 && strings.Contains(rest[d:], "\nOutput: ")
}

// qwenTitleTimeout ends the command part of an older build's title.
var qwenTitleTimeout = regexp.MustCompile(` \[timeout: \d+ ?ms\]$`)

// cutTitleDescription splits "<command> (<description>)" at the " (" that
// opens the title's last, balanced, parenthesis. A description is words
// about the command: a parenthesis holding a shell operator (a subshell,
// "(echo failed; exit 3)") is the command's own, as the build writes no
// description when the model gave none; the final report then names the
// command as run.
func cutTitleDescription(t string) (cmd, desc string, ok bool) {
	if !strings.HasSuffix(t, ")") {
		return "", "", false
	}
	depth := 0
	for i := len(t) - 1; i > 0; i-- {
		switch t[i] {
		case ')':
			depth++
		case '(':
			if depth--; depth > 0 {
				continue
			}
			cmd, desc = strings.TrimSpace(t[:i]), t[i+1:len(t)-1]
			if t[i-1] != ' ' || cmd == "" || strings.ContainsAny(desc, ";|&$`<>") {
				return "", "", false
			}
			return cmd, desc, true
		}
	}
	return "", "", false
}

// qwenReportCommand reads the command from a final report ("Command:
// <command>\nDirectory: ..."), for a call whose command no other frame
// named: like a title, it never replaces one, but on a build whose ask
// named the call only in its title (qwen.titleDescribes), where the
// caller lets it replace what that title gave.
func qwenReportCommand(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "Command: ")
	if !ok {
		return "", false
	}
	end := strings.Index(rest, "\nDirectory: ")
	if end < 0 {
		return "", false
	}
	cmd := strings.TrimSpace(rest[:end])
	return cmd, cmd != ""
}

// qwenResult reads the structured rawOutput.
func qwenResult(o *accum.Observation, out *qwenOutput, ended bool) {
	sig := out.Signal
	sig.apply(o)
	applyVerdict(o, out.Outcome.S)
	if e := out.ExitCode.Exit(accum.ExitStructured, ended); e != nil {
		// Qwen writes exitCode 0 for a process that did not exit: beside
		// a signal, and beside an outcome that is not a success (a
		// timeout, a cancel, a failure), whatever member holds the signal.
		notSuccess := o.Verdict == accum.VerdictFailed || o.TimedOut || o.Cancelled
		switch {
		case sig.Reported():
		case e.Code == 0 && notSuccess:
			o.ExitSetAside = true
		default:
			o.Exit = e
		}
	}
	if out.Error.Set && strings.TrimSpace(out.Error.S) != "" {
		o.Failed = true
	}
	truncated := out.Truncated != nil && *out.Truncated
	if !out.Output.Set {
		if truncated {
			o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Delta, Truncated: true})
		}
		return
	}
	body, cut := qwenClean(out.Output.S, truncated)
	truncated = truncated || cut
	if !ended && body == "" {
		return
	}
	o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: textKind(ended), Text: body, Truncated: truncated})
}

// Texts Qwen puts around an output for the model.
const (
	qwenTruncNotice  = "Tool output was too large and has been truncated"
	qwenTruncPart    = "Truncated part of the output:\n"
	qwenTruncMarker  = "... [CONTENT TRUNCATED] ..."
	qwenSavedTo      = "\nThe full output has been saved to: "
	qwenNoOutputText = "(" + qwenToolName + " completed with no output)"
)

// qwenClean removes what Qwen adds to an output for the model: a leading
// truncation notice (up to "Truncated part of the output:", or the blank
// line that ends it when Qwen said it cut the text or the notice names
// the file the whole output was saved to), and a "... [CONTENT TRUNCATED] ..." separator
// between a head and a tail, of which only the tail is kept (the most
// recent output, as every bounded text here). Either marks the text
// truncated. The separator is Qwen's only in a text it said it cut (the
// notice, or said, the result's truncated flag): elsewhere it is a line
// the command printed, as are the notice's words without the rest of the
// notice. The no-output marker is empty output.
func qwenClean(text string, said bool) (string, bool) {
	truncated := false
	if strings.HasPrefix(text, qwenTruncNotice) {
		if i := strings.Index(text, qwenTruncPart); i >= 0 {
			text, truncated = text[i+len(qwenTruncPart):], true
		} else if i := strings.Index(text, "\n\n"); i >= 0 && (said || strings.Contains(text[:i], qwenSavedTo)) {
			text, truncated = text[i+2:], true
		}
	}
	if i := strings.LastIndex(text, qwenTruncMarker); i >= 0 && (truncated || said) {
		truncated = true
		tail := text[i+len(qwenTruncMarker):]
		tail = strings.TrimPrefix(tail, "\n")
		tail = strings.TrimPrefix(tail, "---\n")
		tail = strings.TrimPrefix(tail, "\n")
		text = tail
	}
	if strings.TrimSpace(text) == qwenNoOutputText {
		text = ""
	}
	return text, truncated
}
