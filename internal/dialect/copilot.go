package dialect

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// copilot reads GitHub Copilot CLI (`copilot --acp`, `@github/copilot`;
// agentInfo.name "Copilot"), shell tool `bash` {command, description,
// initial_wait}.
//
// What it sends, and what it means here:
//   - `tool_call` `pending`, kind `execute`, `title` = the model's
//     DESCRIPTION, never the command; `rawInput {command, description}`.
//     The permission ask's `rawInput` is `{command, commands: [command]}`.
//     The command is `rawInput.command` (else the first of `commands`);
//     the title is never read as the command.
//   - live: status-less updates whose content text is the WHOLE output so
//     far (stdout and stderr merged, `\r` applied and colours stripped by
//     Copilot): a Snapshot. Past 10,240 characters Copilot keeps only the
//     last 10,240, which may start mid-line: such a text is a Window
//     (aligned with what is held by overlap, never appended twice).
//   - final: `completed` for EVERY exit. Its content is the output plus
//     `\n<shellId: N completed with exit code X>`: the trailer is not
//     output. `rawOutput.contents[]` items of type `shell_exit` carry
//     `exitCode` (structured, the strongest source); without them (a
//     session/load replay, and every final of 1.0.83 and 1.0.86) the
//     trailer's X is the exit code (text). The output before the trailer
//     may have lost the newline that ended it, so the final is a
//     TrimmedEnd Final: it keeps the live text's own ending, and replaces
//     only what it really restates differently.
//   - over ~220 KB (1.0.86: already at 47.7 KB) the final is `Output too
//     large to read at once (N KB). Saved to: <file> ...` then `Preview
//     (first 500 chars):` and the output's head: a notice and a worse
//     restatement. The live text is kept; the output is marked truncated
//     with at least the stated size (N KB, the least it can stand for);
//     the head is used only when nothing was streamed (a Head that never
//     replaces a longer text).
//     Only that shape, with `Saved to:`, is the notice: a command may
//     print its first words, and what it printed is then output.
//   - `failed` with `rawOutput {message, code: "rejected"}` (the user
//     rejected the ask) is Cancelled, the message its notice. Any other
//     `failed` (`code: "failure"`, "Command not executed ...", a policy
//     refusal of e.g. `kill ... $$` without asking) is Failed with an
//     unknown exit code, the message quoted in the outcome reason; no
//     message is output. The code, Copilot's alone, says so under any
//     status (a word none of ACP's).
//   - a cancelled call gets no final frame: the turn's cancel ends it
//     (the core's rule for calls left open).
//   - `rawInput.mode: "async"` (and `detach: true`, "detached") starts the
//     command in the background: Background. Its live text is output as
//     usual, but it is `completed` at once with only `<command started in
//     (detached) background with shellId: N>`, and no trailer: a notice,
//     not output, and no exit code (UNKNOWN, what was streamed kept). A
//     sync command past its initial wait (30 s) is `completed` with the
//     output so far and `<command with shellId: N is still running after
//     30 seconds. ...>`: Background too, the notice not output.
//   - the tools that act on a shell the bash tool started name it by
//     `rawInput.shellId` and carry no command: read_bash (`kind: read`,
//     {shellId, delay}; also the read Copilot makes itself when a
//     background shell ends, under an id of its own) and stop_bash
//     (`kind: execute`, title "Stopping shell session", {shellId}). They
//     run nothing: not shell calls, whatever their kind. A read_bash
//     result has the shape of the bash call's own final: the whole output
//     so far, then the still-running notice or the trailer (with
//     `contents[].exitCode`); a detached command's adds an `Output:`
//     header line and says `<detached command with shellId: N completed
//     with exit code X>` or `still running in detached background`.
//     stop_bash says `<command with id: N stopped>` (the command did not
//     end by itself: a failed Verdict, no exit code) or `... had already
//     stopped>` (nothing about how it ended). As no frame says which tool
//     it is (its update has no kind), every frame that names a shell
//     names it as its terminal, AboutTerminal: the session gives what a
//     frame of another tool says of the command to the call that started
//     the shell, which owns that terminal (from the started or running
//     notice, its final's trailer, or the model's own `rawInput.shellId`).
//
// Older builds, recorded at 1.0.92 (1.0.102's frames), 1.0.89, 1.0.86,
// 1.0.83, 1.0.80, 1.0.75, 1.0.70, 1.0.69, 1.0.65, 1.0.62, 1.0.61, 1.0.57,
// 1.0.20, 1.0.0 and 0.0.399: 1.0.75's and 1.0.80's `shell_exit` also
// has `outputTruncated` on every call (1.0.89's only on an output that was
// cut, as 1.0.102's; 1.0.69's and 1.0.70's never); 1.0.83's and 1.0.86's finals have no
// `rawOutput.contents[]`, nor have those of 1.0.65 and the builds before
// it. From 1.0.70 to 1.0.89 (1.0.69 still ends a big live text with
// copilotDropped's notice, as 1.0.62 and 1.0.65 do),
// an output that passes the live limit between two reads streams as the
// whole output so far, then only its last 128 characters (from mid-line)
// rather than a 10,240-character window: a fragment that never replaces
// the output streamed before it (see copilotLive). 1.0.61 sends
// no `rawOutput.contents[]` (the exit code is the trailer's), runs
// commands in an interactive shell on a pseudo-terminal (its `ls` prints
// columns, and a command whose `exit` ends that shell gets the shell's
// `exit` line before the trailer: for builds before 1.0.62, the range
// studied, a last `exit` line is the shell's and not output, live too; a
// later, unknown or newer build keeps it, since a command may print `exit`
// itself and only the build tells them apart). 1.0.0 and 0.0.399, its
// first ACP build (1.0.20 sends the trailer), send no trailer at all for
// such a command: an empty final, no exit code.
//
// Copilot streams its output in content whatever the client offers and
// never runs commands in client-owned terminals: the shared capabilities
// (no client terminals; `_meta.terminal_output`, which it ignores) suit it.
type copilot struct {
	// shellExitLine: the build's interactive shell prints `exit` when the
	// command's own `exit N` ends it (0.0.399 to 1.0.61 recorded; not
	// from 1.0.62 on).
	shellExitLine bool
	// tailFragment: past its live limit the build sends only the last
	// copilotTail characters of the output (1.0.70 to 1.0.89 recorded;
	// 1.0.62 to 1.0.69 send copilotDropped's head instead, 1.0.61 and
	// 1.0.57 no live text of a big output, 1.0.92 the copilotWindow
	// tail).
	tailFragment bool
}

func init() { register(copilot{}) }

// forVersion implements versioned: only the build tells the shell's
// `exit` line from a command that printed `exit`, and a live tail
// fragment from the whole output so far.
func (copilot) forVersion(v Version) Dialect {
	return copilot{
		shellExitLine: v.Before(copilotNoShellExitLine),
		tailFragment:  !v.Before(copilotTailFragmentFrom) && v.Before(copilotNoTailFragment),
	}
}

// copilotNoShellExitLine is the first build after the studied 1.0.61
// whose last `exit` line is read as the command's: 1.0.62 (the next on
// npm), 1.0.69 and 1.0.80 were recorded without the shell's line
// (`tricky`'s exitline_last).
const copilotNoShellExitLine = "1.0.62"

// copilotTailFragmentFrom is the first build recorded that sends the
// copilotTail fragment; 1.0.69, the build before it, sends
// copilotDropped's head, and so do 1.0.65 and 1.0.62.
const copilotTailFragmentFrom = "1.0.70"

// copilotNoTailFragment is the first build recorded that sends the
// copilotWindow tail of a big live output rather than a copilotTail
// fragment (1.0.89, the build before it, sends the fragment).
const copilotNoTailFragment = "1.0.92"

func (copilot) Info() Info {
	return Info{
		Name:               "copilot",
		AgentNames:         []string{"copilot", "copilot-cli", "github copilot", "github-copilot", "@github/copilot"},
		AuthMethodIDs:      []string{"copilot-login"},
		Summary:            "GitHub Copilot CLI bash tool: command from rawInput (the title is the description), cumulative content with a 10,240-char tail window, shellId trailer stripped, exit from rawOutput.contents[].exitCode, rejection and policy-refusal messages, read_bash/stop_bash results given to the call that started the shell.",
		ClientCapabilities: richCapabilities,
	}
}

// copilotInput is the bash tool's `rawInput`, and that of its companion
// tools, which name a shell it started by `shellId` and run no command.
type copilotInput struct {
	Command     CommandLine `json:"command"`
	Commands    []Str       `json:"commands"`
	Description Str         `json:"description"`
	ShellID     Str         `json:"shellId"`
	// Mode "async" (with or without Detach) starts the command in the
	// background ("sync", the default, waits for it).
	Mode   Str   `json:"mode"`
	Detach *bool `json:"detach"`
}

// copilotOutput is Copilot's `rawOutput`: the final result or a refusal.
type copilotOutput struct {
	Message Str
	Code    Str
	Exit    Code
}

// UnmarshalJSON implements json.Unmarshaler; it never fails. Only an
// object is read; the exit code is the first `shell_exit` item's.
func (c *copilotOutput) UnmarshalJSON(b []byte) error {
	*c = copilotOutput{}
	jsonlit.EachMember(b, func(key string, val []byte) {
		switch key {
		case "MESSAGE":
			c.Message.UnmarshalJSON(val)
		case "CODE":
			c.Code.UnmarshalJSON(val)
		case "CONTENTS":
			jsonlit.EachElement(val, func(item []byte) bool {
				var typ Str
				var code Code
				jsonlit.EachMember(item, func(key string, val []byte) {
					switch key {
					case "TYPE":
						typ.UnmarshalJSON(val)
					case "EXITCODE":
						code = ParseCode(val)
					}
				})
				if typ.S == "shell_exit" && code.Known {
					c.Exit = code
					return false
				}
				return true
			})
		}
	})
	return nil
}

func (copilotOutput) ownFields() []string {
	return []string{"message", "code", "contents[].type", "contents[].exitCode"}
}

// copilotCall is a tool call frame of Copilot.
type copilotCall struct {
	ToolCall
	RawInput  *copilotInput  `json:"rawInput"`
	RawOutput *copilotOutput `json:"rawOutput"`
}

// knownTool implements knownTools: read_bash and stop_bash (`kind:
// execute`) name a shell by its shellId and run no command: no shell
// call, though stop_bash's kind is a shell's.
func (u *copilotCall) knownTool() bool {
	in := u.RawInput
	return in != nil && in.ShellID.Set && in.Command.Line == "" && len(in.Commands) == 0
}

// unreadFields: rawOutput's content and detailedContent restate the
// content the output is read from (with the trailer); a shell_exit item's
// cwd, shellId and output file or preview say nothing of the exit.
func (copilotCall) unreadFields() []string {
	return []string{"rawOutput.content", "rawOutput.detailedContent", "rawOutput.contents[].cwd", "rawOutput.contents[].shellId",
		"rawOutput.contents[].outputFilePath", "rawOutput.contents[].outputPreview", "rawOutput.contents[].outputTruncated"}
}

func (c copilot) read(msg []byte, scope string) (Frame, error) {
	switch {
	case c.shellExitLine:
		return readFrame(msg, scope, observeCopilotShellExitLine, askCopilot)
	case c.tailFragment:
		return readFrame(msg, scope, observeCopilotTailFragment, askCopilot)
	}
	return readFrame(msg, scope, observeCopilot, askCopilot)
}

// observeCopilotShellExitLine reads a build whose shell prints `exit`
// before the trailer (see copilot.shellExitLine); it is older than
// copilotTailFragmentFrom too.
func observeCopilotShellExitLine(u *copilotCall) []accum.Observation {
	return observeCopilotBuild(u, copilot{shellExitLine: true})
}

// observeCopilotTailFragment reads a build that sends a tail fragment
// past its live limit (see copilot.tailFragment).
func observeCopilotTailFragment(u *copilotCall) []accum.Observation {
	return observeCopilotBuild(u, copilot{tailFragment: true})
}

func observeCopilot(u *copilotCall) []accum.Observation {
	return observeCopilotBuild(u, copilot{})
}

func observeCopilotBuild(u *copilotCall, build copilot) []accum.Observation {
	if u.SessionUpdate != "tool_call" && u.SessionUpdate != "tool_call_update" {
		return nil
	}
	o := u.Base()
	copilotInputs(&o, u)
	if o.Shell == accum.ShellNo {
		return []accum.Observation{o}
	}
	switch {
	case o.Status == accum.StatusFailed || u.RawOutput != nil && u.RawOutput.Code.S != "":
		// Copilot's own code says the user rejected the call, or that
		// Copilot did not run it, under whatever status (a word none of
		// ACP's, see unknownStatus): its message is no output.
		copilotFailed(&o, u)
	case o.Status == accum.StatusCompleted:
		copilotFinal(&o, u, build.shellExitLine)
	default:
		if o.Opens {
			break // the opening frame's content is never output
		}
		if text, ok := u.Texts(); ok && text != "" {
			t := copilotLive(text, build.tailFragment)
			if build.shellExitLine && t.Kind == accum.Snapshot && !t.Truncated {
				// The shell's `exit` line ends the live text too when the
				// command's own `exit N` ended the shell (whose final,
				// on 0.0.399 and 1.0.0, then says nothing: no trailer, no
				// output). The text as sent stays beside it (Whole).
				line := strings.TrimSuffix(text, "\n")
				if rest := cutShellExitLine(&o, line); rest != line {
					if rest != "" {
						rest += "\n"
					}
					t.Text, t.Whole = rest, text
				}
			}
			o.Texts = append(o.Texts, t)
		}
	}
	return []accum.Observation{o}
}

func askCopilot(u *copilotCall) accum.Observation {
	o := u.askBase()
	copilotInputs(&o, u)
	o.ApprovalReason = u.askReason()
	return o
}

// copilotInputs reads the command and the description from rawInput.
func copilotInputs(o *accum.Observation, u *copilotCall) {
	in := u.RawInput
	if in == nil {
		return
	}
	cmd := in.Command.Line
	if cmd == "" {
		for _, c := range in.Commands {
			if c.Set && c.S != "" {
				cmd = c.S
				break
			}
		}
	}
	if cmd != "" {
		o.Command = cmd
		if o.Shell == accum.ShellUnknown {
			o.Shell = accum.ShellYes
		}
	} else if in.ShellID.Set {
		// stop_bash (`kind: execute`) and read_bash act on a shell the
		// bash tool started, named by its shellId: they run nothing, and
		// their texts ("<command with id: N stopped>") are not output.
		o.Shell = accum.ShellNo
	}
	if in.Description.Set {
		o.Description = in.Description.S
	}
	if in.Mode.S == "async" || (in.Detach != nil && *in.Detach) {
		o.Background = true
	}
	if cmd != "" && in.ShellID.S != "" {
		// The model named the shell itself: the call owns it from the
		// start (a shellId used again names the newer command).
		o.TerminalID = in.ShellID.S
	}
}

// copilotWindow is the length, in JavaScript characters, of the tail that
// Copilot keeps of a big live output.
const copilotWindow = 10240

// copilotDropped ends the live text of builds 1.0.62 to 1.0.69 (1.0.62,
// 1.0.65 and 1.0.69 recorded) once the output passed their limit: the text is
// then only the head of it.
var copilotDropped = regexp.MustCompile(`^\n<output too long - dropped \d+ lines? from the end>\n?$`)

// copilotTail is the length, in JavaScript characters, of the fragment
// that the builds from copilotTailFragmentFrom to before
// copilotNoTailFragment send of an output that passed their live limit
// between two reads: its last 128 characters, which may start mid-line
// (`seq 1 60000` on 1.0.70, 1.0.75, 1.0.80, 1.0.83, 1.0.86 and 1.0.89;
// `seq 1 30000` and `seq 1 10000` on 1.0.86). The text before
// it is the whole output so far (the first read, 8,192 characters of
// these; for `seq 1 2000` a text of 8,893 characters, the whole output,
// came next).
// The rule that makes it was not read: 1.0.89 writes its ACP updates
// from its native runtime (runtime.node), not from its JavaScript.
const copilotTail = 128

// copilotLive reads one live content text: the whole output so far, or,
// at exactly copilotWindow characters, only its tail, or, ending with
// copilotDropped, only its head. With tailFragment (the build's), a text
// of exactly copilotTail characters may be the fragment of a big output's
// end: it is marked a cut text that never replaces a longer one (Head),
// so that the whole output so far, sent before, is kept. Only where it
// holds nothing longer is it used, and then the stream is said to be
// truncated until a later text that extends it, or the final, restates
// the output; that is the price of a text the build sends in both
// meanings. A fragment is never joined to the text held, since nothing
// says what lies between them.
func copilotLive(text string, tailFragment bool) accum.Text {
	if strings.HasSuffix(strings.TrimSuffix(text, "\n"), " from the end>") {
		// Only the notice's line is matched, not the whole text.
		if i := strings.LastIndex(text, "\n<output too long - "); i >= 0 && copilotDropped.MatchString(text[i:]) {
			return accum.Text{Stream: accum.Combined, Kind: accum.Snapshot, Text: text[:i+1], Truncated: true}
		}
	}
	switch n := utf16Len(text); {
	case n == copilotWindow:
		return accum.Text{Stream: accum.Combined, Kind: accum.Window, Text: text, Truncated: true}
	case n == copilotTail && tailFragment:
		return accum.Text{Stream: accum.Combined, Kind: accum.Snapshot, Text: text, Truncated: true, Head: true}
	}
	return accum.Text{Stream: accum.Combined, Kind: accum.Snapshot, Text: text}
}

var (
	// copilotTrailer ends a final content: "\n<shellId: N completed with
	// exit code X>" (1.0.60 on), "\n<exited with exit code X>" before;
	// "\n<detached command with shellId: N completed with exit code X>"
	// for a detached command. Groups: 1 "detached ", 2 the shellId, 3 X.
	copilotTrailer = regexp.MustCompile(`\n?<(?:(detached command with )?shellId: ([^>\n]*?) completed with|exited with) exit code (-?\d+)>\s*$`)
	// copilotRunning ends the content of a result given while the command
	// still runs: a sync bash call past its initial wait, or a read_bash.
	// Groups: 1 the shellId, 2 "in detached background " for a detached
	// command.
	copilotRunning = regexp.MustCompile(`\n?<command with shellId: ([^>\n]*?) is still running (in detached background )?after [0-9.]+ ?s(?:econds?)?\.[^>\n]*>\s*$`)
	// copilotStopped is the whole result of stop_bash: "<command with id:
	// N stopped>", or "had already stopped" when the command had ended.
	// Groups: 1 the shellId, 2 "had already ".
	copilotStopped = mustAnchored(`^<command with id: ([^>\n]*?) (had already )?stopped>$`)
	// copilotTooLarge opens the final of an output too big to send. Every
	// build recorded (0.0.399 to 1.0.102) names the file it saved the
	// output to: a command that prints only the first words is not it.
	copilotTooLarge = regexp.MustCompile(`^Output too large to read at once \(([0-9]+(?:\.[0-9]+)?) ?([KMG]?i?B)\)\. Saved to: `)
	// copilotPreview introduces the head of such an output.
	copilotPreview = regexp.MustCompile(`Preview \(first \d+ chars\):\n`)
	// copilotStarted is the whole final of a command started in async
	// mode: "<command started in background with shellId: N>", or "in
	// detached background" with `detach`.
	copilotStarted = mustAnchored(`^<command started in (?:detached )?background with shellId: ([^>\n]*)>$`)
)

// copilotFinal reads the `completed` frame.
func copilotFinal(o *accum.Observation, u *copilotCall, shellExitLine bool) {
	if out := u.RawOutput; out != nil {
		if e := out.Exit.Exit(accum.ExitStructured, true); e != nil {
			o.Exit = e
		}
	}
	text, ok := u.Texts()
	if !ok {
		return
	}
	m := copilotTrailer.FindStringSubmatchIndex(text)
	// A command that ended always has the trailer, so one that printed
	// the words of a notice below is not taken for it.
	if m == nil {
		trimmed := strings.TrimSpace(text)
		if n := copilotStarted.FindStringSubmatch(trimmed); n != nil {
			// An async command's final says only that it went on in the
			// background: not output (what was streamed before stays),
			// and no exit yet.
			o.Background = true
			copilotShell(o, n[1])
			o.Src.Notice = "the notice that the command started in the background"
			return
		}
		if n := copilotStopped.FindStringSubmatch(trimmed); n != nil {
			// stop_bash's result. "stopped": the command did not end by
			// itself (a failure; no exit code is given). "had already
			// stopped": it had ended, and this says nothing of how.
			o.Src.Notice = "stop_bash's notice"
			if n[2] == "" {
				copilotShell(o, n[1])
				o.Verdict, o.FailNotice = accum.VerdictFailed, notice(text)
			}
			return
		}
		if r := copilotRunning.FindStringSubmatchIndex(text); r != nil {
			// The command runs on (a sync bash call past its initial
			// wait, a read_bash before the end): the output so far, the
			// notice not output, no exit yet.
			o.Background = true
			copilotShell(o, text[r[2]:r[3]])
			o.Src.Notice = "the notice that the command is still running"
			text = text[:r[0]]
			if r[4] >= 0 {
				text = copilotCutHeader(text)
			}
			if text != "" {
				o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: text, TrimmedEnd: true})
			}
			return
		}
	}
	if m != nil {
		if e := CodeFromString(text[m[6]:m[7]]).Exit(accum.ExitText, true); e != nil {
			o.Exit = accum.StrongerExit(o.Exit, e)
		}
		if m[4] >= 0 {
			copilotShell(o, text[m[4]:m[5]])
		}
		detached := m[2] >= 0
		text = text[:m[0]]
		if detached {
			text = copilotCutHeader(text)
		}
		if shellExitLine {
			text = cutShellExitLine(o, text)
		}
	}
	if m := copilotTooLarge.FindStringSubmatch(text); m != nil {
		t := accum.Text{Stream: accum.Combined, Kind: accum.Final, Truncated: true, Head: true, TotalBytes: copilotLeast(m[1], m[2])}
		if loc := copilotPreview.FindStringIndex(text); loc != nil {
			t.Text = text[loc[1]:]
		}
		if t.Text == "" {
			t.Kind = accum.Delta // only the flags: keep what was streamed
		}
		o.Texts = append(o.Texts, t)
		return
	}
	if text == "" {
		return // no output in the final: keep what was streamed
	}
	o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: text, TrimmedEnd: true})
}

// copilotShell says that the frame names the shell the bash tool started,
// by its shellId. The bash call's own final and the result of read_bash
// (or stop_bash, or the read Copilot makes itself when a background shell
// ends) have one shape, so what the frame says of the command is about
// that shell: the session gives it to the call that started the shell
// when the frame is another tool's (accum.Observation.AboutTerminal).
func copilotShell(o *accum.Observation, id string) {
	if id != "" {
		o.TerminalID, o.AboutTerminal = id, true
	}
}

// copilotCutHeader removes the "Output:" line that opens what Copilot
// says of a detached command's output: a header, not output.
func copilotCutHeader(text string) string {
	if text == "Output:" {
		return ""
	}
	return strings.TrimPrefix(text, "Output:\n")
}

// cutShellExitLine removes the `exit` line the shell of an older build
// printed last (in a final, last before the trailer, which is already
// cut), and says so as a notice.
func cutShellExitLine(o *accum.Observation, text string) string {
	rest, ok := strings.CutSuffix(text, "exit")
	if !ok || (rest != "" && !strings.HasSuffix(rest, "\n")) {
		return text
	}
	o.Src.Notice = "the shell's exit line, last in the text"
	return strings.TrimSuffix(rest, "\n")
}

// copilotLeast is the least number of bytes a size such as "340.7 KB" can
// stand for, rounded as it was written (0 when it cannot be read).
func copilotLeast(num, unit string) int64 {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0
	}
	half := 0.5
	if i := strings.IndexByte(num, '.'); i >= 0 {
		for range len(num) - i - 1 {
			half /= 10
		}
	}
	// Copilot's KB are KiB: 348,894 bytes are "340.7 KB".
	return leastBytes(f, half, unit)
}

var copilotRejected = regexp.MustCompile(`(?i)\brejected\b|\bdenied by the user\b|\bcancell?ed\b`)

// copilotFailed reads a `failed` frame: a rejection (code "rejected") is
// Cancelled; anything else is a failure without an exit code. The message
// is never output.
func copilotFailed(o *accum.Observation, u *copilotCall) {
	msg, code := "", ""
	if out := u.RawOutput; out != nil {
		msg, code = out.Message.S, out.Code.S
		if e := out.Exit.Exit(accum.ExitStructured, true); e != nil {
			o.Exit = e
		}
	}
	if msg == "" {
		msg, _ = u.Texts()
	}
	if code == "rejected" || (code == "" && copilotRejected.MatchString(msg)) {
		o.Cancelled, o.CancelNotice = true, notice(msg)
		return
	}
	o.Failed, o.FailNotice = true, notice(msg)
}
