package dialect

import (
	"bytes"
	"regexp"
	"slices"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// opencode reads `opencode acp`: the `bash` tool and the newer `shell` tool.
// It also reads Kilo Code CLI (`kilo acp`, agentInfo.name "Kilo"), an
// OpenCode fork with exactly this wire shape: cumulative `in_progress`
// content, 30 KB windows, `completed` for every exit, metadata.exit (137
// for SIGKILL, null on timeout and cancel), the same `<shell_metadata>`
// notices and truncation preamble, and the permission ask BEFORE the
// `tool_call` (the session opens the call from the ask).
//
// What it sends, and what it means here:
//   - `tool_call`: a synthetic `pending` call titled "bash" (newer: "shell"
//     or the command) with `rawInput` `{}` or `{cwd}`. A title that is a tool
//     name is never the command.
//   - live `in_progress` updates: `rawInput {command, description, cwd?,
//     workdir?, timeout?}` and `content[0]` = the WHOLE output so far
//     (stdout and stderr interleaved): a Snapshot. Unchanged output is
//     re-sent without `content`: nothing. The newer shell tool keeps only
//     the last 30 000 chars beyond that size and prefixes "...\n\n": the
//     marker is stripped and the rest is a Window. Older releases kept the
//     head instead, suffixed "\n\n...": the marker is stripped and the rest
//     is a Snapshot. A live text that starts with the truncation header
//     below (Kilo sends it on in_progress frames) is read as on the final:
//     the header is a notice, the rest a Truncated Window. Kilo (7.7)
//     sends the final model-facing text on an in_progress frame before the
//     completed one: its trailing notices (below) and a "(no output)"
//     are kept out of the live text there too, but what a notice says
//     (timeout, abort) is read on the completed frame only, which repeats
//     it: a block the command printed looks the same on a live frame. A
//     live block is a notice only as OpenCode appends it, ending the text.
//   - final: ALWAYS `completed`. `rawOutput {output, metadata {output, exit,
//     description, truncated, outputPath?}}`; `metadata.exitCode` in some
//     releases. The exit is structured evidence; `exit: null` is unknown.
//     The model-facing text (rawOutput.output, else content) is the output
//     after removing what OpenCode adds for the model:
//     a trailing `<shell_metadata>`/`<bash_metadata>` block or an older
//     `(Command timed out after N ms)` / `(Command was aborted)` line
//     (timeout → TimedOut; abort → Cancelled; only on a final whose exit
//     is null, as the builds that wrote it sent it: beside an exit code,
//     or on a live frame, the line is the command's output), a leading
//     `...output truncated...\n\nFull output saved to: F\n\n` header (→
//     Truncated; the rest is only a tail, so it is a Window, never a Final
//     that would wipe streamed output), a trailing note of the tool
//     framework that kept only the head (`\n\n...N lines truncated...\n\n
//     The tool call succeeded but the output was truncated. Full output
//     saved to: F\n...`: Truncated, the rest a Head that never replaces
//     longer streamed text; OpenCode 1.0 instead cut the text to its first
//     30 000 characters and appended a <bash_metadata> block saying so,
//     beside the exit code: see headBlock), and `(no output)`, which
//     stands for empty output. F, in the header or the note, is the
//     agent's own data directory (`.../opencode/tool-output/...`, Kilo's
//     `.../kilo/tool-output/...`): any path is read. A final without real output reports no text, so it
//     keeps what the live snapshots carried.
//   - tool error: `failed` with the error text in content and
//     `rawOutput {error, metadata}`. A user rejection ("The user rejected
//     permission ...", with or without feedback) and an abort are
//     Cancelled; anything else (an exception, a rule in the config that
//     denies the command) is Failed. The error text is not command output
//     (the command did not produce it), so it is not reported as output.
//   - Kilo's background_process tool: a `start` is a shell call gone on
//     in the background, Kilo's summary of it no output; its other
//     actions are no shell (see opencodeBackgroundTool).
type opencode struct {
	// liveIsOutput: the build sends on its live frames only what the
	// command printed, never its final model-facing text, so a live
	// "(no output)" is the command's own (opencodeNoOutput).
	liveIsOutput bool
	// wordsAreOutput: the build never writes opencodeNoOutput (a silent
	// command's text is empty), so the words are the command's wherever
	// they come, on the final too. Such a build sends only output live.
	wordsAreOutput bool
}

func init() { register(opencode{}) }

// forVersion implements versioned: OpenCode's builds (1.x; 1.3.0 to
// 1.18.33 recorded sending no live content for a silent command) send on
// live frames only the command's output, and so does Kilo's 7.0 line
// (7.0.33, which names itself OpenCode and runs an OpenCode 1.x base,
// recorded the same; the registry holds no other 7.0 to 7.4 build). Kilo
// from 7.7 (7.7.2, 7.7.7 and 7.7.9 recorded sending a silent command's
// "(no output)" live) sends its final text there too, and so may a build the
// dialect does not know, or one in between (7.5, 7.6: the registry has
// no linux binary of them, not recorded).
//
// Of those, OpenCode 1.3.0 and 1.3.2 (and 1.0.152 to 1.2.27, recorded
// the same) and Kilo 7.0.33 never write "(no output)" at all (a silent
// command's final text is empty; their binaries hold no such text),
// while OpenCode 1.14.34 and later do: the words are the command's on
// the final too for OpenCode up to 1.3.2 and Kilo's 7.0 line
// (wordsAreOutput). npm has no OpenCode build between
// 1.3.2 and 1.14.34.
func (opencode) forVersion(v Version) Dialect {
	old := v.Before("7.1.0") // false for an unknown build
	kilo70 := old && !v.Before("7.0.0")
	return opencode{liveIsOutput: old, wordsAreOutput: old && (v.Before(opencodeWordsFrom) || kilo70)}
}

// opencodeWordsFrom is the first build after 1.3.2, the newest recorded
// that never writes "(no output)"; the next on npm, 1.14.34, writes it.
const opencodeWordsFrom = "1.3.3"

func (opencode) Info() Info {
	// Auth method signs: opencode-login (OpenCode's, and Kilo's before
	// 7.7, which also names itself OpenCode) and kilo-login (Kilo's from
	// 7.7).
	return Info{
		Name:               "opencode",
		AgentNames:         []string{"opencode", "kilo", "kilo-code", "kilocode", "@kilocode/cli"},
		AuthMethodIDs:      []string{"opencode-login", "kilo-login"},
		Summary:            "OpenCode bash/shell tools: cumulative live snapshots (with the 30 000-char tail window), metadata.exit, <shell_metadata> timeout/abort and truncation markers.",
		ClientCapabilities: richCapabilities,
	}
}

// opencodeInput is OpenCode's bash/shell `rawInput`.
type opencodeInput struct {
	Command     CommandLine `json:"command"`
	Description Str         `json:"description"`
	Cwd         Str         `json:"cwd"`
	Workdir     Str         `json:"workdir"`
	// Action and BackgroundProcess are Kilo's background_process tool's
	// (see opencodeBackgroundStart).
	Action            Str   `json:"action"`
	BackgroundProcess *bool `json:"backgroundProcess"`
}

// opencodeMetadata is `rawOutput.metadata`.
type opencodeMetadata struct {
	// Output is the live text again, read only when the frame has no
	// model-facing text: it is unquoted only then.
	Output      rawText `json:"output"`
	Exit        Code    `json:"exit"`
	ExitCode    Code    `json:"exitCode"`
	Description Str     `json:"description"`
	Truncated   *bool   `json:"truncated"`
	OutputPath  Str     `json:"outputPath"`
	// ProcessID and Status are the metadata of Kilo's background_process
	// results: the process it started (or looked at) and its state then,
	// which is no exit status.
	ProcessID Str `json:"processID"`
	Status    Str `json:"status"`
}

// opencodeOutput is OpenCode's `rawOutput`.
type opencodeOutput struct {
	// Output is the model-facing text, which OpenCode sends on the
	// completed frame only, where it is read; most often it is the text of
	// the frame's content item again. The elided decode decodes it as it
	// validates it, or takes the content text's decode when the bytes are
	// the same (elide:"decoded").
	Output   rawText           `json:"output" elide:"decoded"`
	Error    Str               `json:"error"`
	Metadata *opencodeMetadata `json:"metadata"`
}

// opencodeCall is a tool call frame of OpenCode.
type opencodeCall struct {
	ToolCall
	RawInput  *opencodeInput  `json:"rawInput"`
	RawOutput *opencodeOutput `json:"rawOutput"`
}

func (d opencode) read(msg []byte, scope string) (Frame, error) {
	switch {
	case d.wordsAreOutput:
		return readFrame(msg, scope, observeOpencodeWordsAreOutput, askOpencode)
	case d.liveIsOutput:
		return readFrame(msg, scope, observeOpencodeLiveIsOutput, askOpencode)
	}
	return readFrame(msg, scope, observeOpencode, askOpencode)
}

func observeOpencode(u *opencodeCall) []accum.Observation {
	if u.SessionUpdate != "tool_call" && u.SessionUpdate != "tool_call_update" {
		return nil
	}
	return []accum.Observation{readOpencode(u, opencode{})}
}

// observeOpencodeLiveIsOutput is observeOpencode for a build whose live
// frames carry only the command's output (opencode.liveIsOutput).
func observeOpencodeLiveIsOutput(u *opencodeCall) []accum.Observation {
	if u.SessionUpdate != "tool_call" && u.SessionUpdate != "tool_call_update" {
		return nil
	}
	return []accum.Observation{readOpencode(u, opencode{liveIsOutput: true})}
}

// observeOpencodeWordsAreOutput is observeOpencode for a build that never
// writes "(no output)" (opencode.wordsAreOutput).
func observeOpencodeWordsAreOutput(u *opencodeCall) []accum.Observation {
	if u.SessionUpdate != "tool_call" && u.SessionUpdate != "tool_call_update" {
		return nil
	}
	return []accum.Observation{readOpencode(u, opencode{liveIsOutput: true, wordsAreOutput: true})}
}

func askOpencode(u *opencodeCall) accum.Observation {
	o := u.askBase()
	opencodeInputs(&o, u)
	o.ApprovalReason = u.askReason()
	return o
}

// opencodeToolNames are titles that name the tool, not the command.
var opencodeToolNames = map[string]bool{"bash": true, "shell": true, opencodeBackgroundTool: true}

// opencodeBackgroundTool is Kilo's (7.7) background_process tool
// (kilocode/tool/background-process.ts), rawInput {action: start | list |
// status | logs | stop | restart, command?, id?, workdir?, description?,
// ready?, inherit?, persistent?}, whose ACP frames have the kind "other"
// (Kilo's acp gives execute to bash and shell only) and the title
// "background_process" until the final. `start` asks the bash permission
// (rawInput {command, description, action: "start", backgroundProcess:
// true}) and starts the command as a tracked process, returning at once:
// a shell command gone on in the background (Background). Its completed
// final (no rawInput) is titled "Started: <description or command>", its
// text Kilo's summary of the process ("id: bgp_...\nstatus: running\npid:
// N\ncwd: D\ncommand: C\nlifetime: session\nlast_output: ..."), its
// metadata {processID, status}: Kilo's words, never output, and no exit
// code. The other actions run no command the call names (logs return a
// process's retained output, restart runs its original command again
// under the process's id): no shell (knownTool).
const opencodeBackgroundTool = "background_process"

// opencodeBackgroundStart says whether a frame's rawInput starts a
// background process: its action, or the mark on its bash permission ask.
func opencodeBackgroundStart(in *opencodeInput) bool {
	return in != nil && (in.Action.S == "start" || (in.BackgroundProcess != nil && *in.BackgroundProcess))
}

// knownTool implements knownTools: a background_process action other than
// start (an action named, and it is not start) runs no command the call
// names.
func (u *opencodeCall) knownTool() bool {
	in := u.RawInput
	return in != nil && strings.TrimSpace(in.Action.S) != "" && !opencodeBackgroundStart(in)
}

// opencodeBackgroundResult reads a completed final of background_process,
// which carries no rawInput: one whose metadata names the process (a
// "bgp" id) reports a start, or a look at a process; one titled "Invalid
// background process input" a start Kilo refused before it ran (the
// sandbox is on, a bad ready pattern, ...). Both texts are Kilo's, never
// output; the refusal is Failed. It says whether the frame was one.
func opencodeBackgroundResult(o *accum.Observation, u *opencodeCall) bool {
	refused := u.Title != nil && *u.Title == "Invalid background process input"
	out := u.RawOutput
	started := out != nil && out.Metadata != nil && strings.HasPrefix(out.Metadata.ProcessID.S, "bgp")
	if !refused && !started {
		return false
	}
	o.Src.Notice = "background_process result (Kilo's summary of the process)"
	if refused {
		text, _ := u.Texts()
		o.Failed, o.FailNotice = true, notice(text)
		return true
	}
	o.Background = true
	return true
}

// opencodeInputs reads command, cwd and description.
func opencodeInputs(o *accum.Observation, u *opencodeCall) {
	if u.knownTool() {
		o.Shell = accum.ShellNo // a background_process action that runs nothing
		return
	}
	if opencodeBackgroundStart(u.RawInput) {
		o.Background = true
	}
	if in := u.RawInput; in != nil {
		if in.Command.Line != "" {
			o.Command, o.Src.Command = in.Command.Line, "rawInput.command"
			if o.Shell == accum.ShellUnknown {
				o.Shell = accum.ShellYes
			}
		}
		if in.Description.Set {
			o.Description = in.Description.S
		}
		for _, c := range []Str{in.Workdir, in.Cwd} {
			if c.Set && c.S != "" {
				o.Cwd, o.Src.Cwd = c.S, "rawInput.workdir (or cwd)"
				break
			}
		}
	}
	// The title is the command only before OpenCode has any other word on
	// it: on the opening frame (newer releases title it with the command)
	// and on an ask. Later titles may be the description.
	if o.Command == "" && (o.Opens || o.PermissionAsk) && u.Title != nil && o.Shell == accum.ShellYes {
		if t := strings.TrimSpace(*u.Title); t != "" && !opencodeToolNames[strings.ToLower(t)] {
			o.Command, o.Src.Command = t, "title"
		}
	}
	if out := u.RawOutput; out != nil && out.Metadata != nil && out.Metadata.Description.Set && o.Description == "" {
		o.Description = out.Metadata.Description.S
	}
}

func readOpencode(u *opencodeCall, build opencode) accum.Observation {
	o := u.Base()
	opencodeInputs(&o, u)
	if o.Shell == accum.ShellNo {
		return o
	}
	switch o.Status {
	case accum.StatusFailed:
		opencodeToolError(&o, u)
	case accum.StatusCompleted:
		if opencodeBackgroundResult(&o, u) {
			break
		}
		opencodeFinal(&o, u, build.wordsAreOutput)
	default:
		if text, ok := u.Texts(); ok && text != "" {
			// Kilo sends the final model-facing text on an in_progress
			// frame too: its trailing block is kept out of the live
			// output. What the block says is left to the completed frame,
			// which every build sent next with the same text and exit
			// null: a command can print such a block itself (the final
			// then gives its exit and the block in metadata.output), the
			// live frame cannot tell the two apart, and a timeout or an
			// abort claimed here would stick to the call. Only a block
			// that ends the text as OpenCode writes it is taken out; a
			// text that goes on after it is the command's.
			final := false // the text is the final model-facing one
			if opencodeLiveBlock(text) {
				p := opencodeParsed{oldMarkerIsOutput: true}
				if rest := p.trailingNotices(text); len(rest) < len(text) {
					text, final = rest, true
					o.Src.Notice = "<shell_metadata> block of the live content text"
				}
			}
			if text == opencodeNoOutput && (final || !build.liveIsOutput) && !build.wordsAreOutput {
				// The final text of a command that printed nothing. A
				// build whose live frames carry only output sends none
				// for such a command: there the command printed it.
				text, o.Src.Notice = "", "(no output) of the live content text"
			}
			if text != "" {
				t := opencodeLive(text)
				if t.Truncated && strings.HasPrefix(text, "...") && !strings.HasPrefix(text, opencodeWindowPrefix) {
					o.Src.Notice = "truncation header of the live content text"
				}
				o.Texts = append(o.Texts, t)
				o.Src.Output = "content text"
			}
		}
	}
	return o
}

// opencodeNoOutput is what OpenCode (and Kilo) write for an empty
// output, exactly: no newline, and what they add for the model (the
// truncation header before it, a notice block after it with its own
// blank line) comes off whole. A command that prints these words prints
// them with its own newline ("(no output)\n"): that is output, so the
// word is compared as the agent writes it, never trimmed. One that
// prints them without a newline is told apart only on a live frame of a
// build that sends no final text there (opencode.liveIsOutput); the
// final's word is then its placeholder, and the live text stays, but
// on a build that never writes the placeholder (opencode.wordsAreOutput),
// where the final's word is the command's too.
const opencodeNoOutput = "(no output)"

// opencodeWindowPrefix marks a live snapshot that holds only the tail of
// the output (newer shell tool); opencodeHeadSuffix marks one that holds
// only the head (older bash tool, 30 000 chars).
const (
	opencodeWindowPrefix = "...\n\n"
	opencodeHeadSuffix   = "\n\n..."
	opencodeHeadLen      = 30000
)

// opencodeLive reads one live content text. A window or a head says that
// OpenCode itself dropped part of the output, so it is marked Truncated; a
// window that overlaps what the session already holds loses nothing, and
// accum then keeps the stream untruncated.
//
// A live text can also start with the truncation header the tool writes
// for the model ("...output truncated...\n\nFull output saved to:
// F\n\n"; Kilo sends it on in_progress frames): the header is a notice,
// and the rest is only the tail of the output (a Window). When nothing but
// "(no output)" follows, the frame says only that output was cut.
func opencodeLive(text string) accum.Text {
	if strings.HasPrefix(text, "...") {
		if loc := opencodeTruncHeaderIn(text); loc != nil {
			rest := text[loc[1]:]
			if rest == opencodeNoOutput || rest == "" {
				return accum.Text{Stream: accum.Combined, Kind: accum.Delta, Truncated: true}
			}
			return accum.Text{Stream: accum.Combined, Kind: accum.Window, Text: rest, Truncated: true}
		}
	}
	if rest, ok := strings.CutPrefix(text, opencodeWindowPrefix); ok {
		return accum.Text{Stream: accum.Combined, Kind: accum.Window, Text: rest, Truncated: true}
	}
	if head, ok := strings.CutSuffix(text, opencodeHeadSuffix); ok && utf16Len(head) == opencodeHeadLen {
		return accum.Text{Stream: accum.Combined, Kind: accum.Snapshot, Text: head, Truncated: true}
	}
	return accum.Text{Stream: accum.Combined, Kind: accum.Snapshot, Text: text}
}

// opencodeFinal reads the `completed` frame.
func opencodeFinal(o *accum.Observation, u *opencodeCall, wordsAreOutput bool) {
	var meta opencodeMetadata
	if u.RawOutput != nil && u.RawOutput.Metadata != nil {
		meta = *u.RawOutput.Metadata
	}
	if e := firstKnown(meta.Exit, meta.ExitCode).Exit(accum.ExitStructured, true); e != nil {
		o.Exit, o.Src.Exit = accum.StrongerExit(o.Exit, e), "rawOutput.metadata.exit"
	}

	text, ok := "", false
	if u.RawOutput != nil && u.RawOutput.Output.lit != nil {
		text, ok, o.Src.Output = u.RawOutput.Output.Str().S, true, "rawOutput.output"
	} else {
		text, ok = u.Texts()
		o.Src.Output = "content text"
	}
	if !ok {
		// No model-facing text: metadata.output is the live text as the
		// tool last saw it.
		if out := meta.Output.Str(); out.Set && out.S != "" {
			o.Texts, o.Src.Output = append(o.Texts, opencodeLive(out.S)), "rawOutput.metadata.output"
		}
		if meta.Truncated != nil && *meta.Truncated {
			o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Delta, Truncated: true})
		}
		return
	}
	// The builds that wrote the one-line markers sent them with exit null.
	p := opencodeParsed{oldMarkerIsOutput: o.Exit != nil, wordsAreOutput: wordsAreOutput}
	// Every build sent its metadata block with exit null too, or gave the
	// output without it in metadata.output: beside an exit code, a block
	// metadata.output does not leave out is the command's.
	p.blockIsOutput = o.Exit != nil && opencodeBlockOrUnset(meta.Output)
	// Every build that wrote a truncation note said truncated: true.
	p.notTruncated = meta.Truncated != nil && !*meta.Truncated
	p.parse(text)
	if p.body != text {
		o.Src.Notice = "OpenCode's notes for the model (<shell_metadata>, truncation or timeout notes, (no output)), cut from its text"
	}
	o.TimedOut = o.TimedOut || p.timedOut
	if p.aborted {
		o.Cancelled, o.CancelNotice = true, p.notice
	}
	truncated := p.truncated || (meta.Truncated != nil && *meta.Truncated)
	switch {
	case p.body == "":
		// No real output: keep what the live snapshots carried.
		if truncated {
			o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Delta, Truncated: true})
		}
	case p.head:
		// Only the beginning of the output: it never replaces the fuller
		// text streamed before.
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: p.body, Truncated: true, Head: true})
	case truncated:
		// Only a part of the output: a tail that must not replace the
		// fuller text streamed before.
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Window, Text: p.body, Truncated: true})
	default:
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: p.body})
	}
}

// opencodeParsed is the model-facing text of a final frame taken apart.
type opencodeParsed struct {
	body      string
	truncated bool
	head      bool // truncated, and body is the beginning of the output
	timedOut  bool
	aborted   bool
	notice    string // the abort note, for the outcome reason
	// oldMarkerIsOutput: an older one-line marker at the end of the text
	// is the command's own output. The builds that wrote it sent it on
	// the final frame, with exit null: on a live frame, or beside an
	// exit code, it is what the command printed.
	oldMarkerIsOutput bool
	// blockIsOutput: a <shell_metadata>/<bash_metadata> block at the end
	// of the text is the command's own output.
	blockIsOutput bool
	// notTruncated: the frame said the text was not cut, so a truncation
	// note in it is the command's own output.
	notTruncated bool
	// wordsAreOutput: the build never writes opencodeNoOutput, so a
	// text of those words is the command's (opencode.wordsAreOutput).
	wordsAreOutput bool
}

// opencodeLiveBlock says whether text ends in a metadata block as
// OpenCode appends it: "\n\n<shell_metadata>\n...\n</shell_metadata>"
// (or bash_metadata), nothing after the closing tag.
func opencodeLiveBlock(text string) bool {
	for i, closing := range opencodeCloseTags {
		if strings.HasSuffix(text, "\n"+closing) {
			j := strings.LastIndex(text, opencodeOpenTags[i]+"\n")
			return j >= 0 && strings.HasSuffix(text[:j], "\n\n")
		}
	}
	return false
}

// opencodeHasBlock says whether text holds a metadata block's opening tag.
func opencodeHasBlock(text string) bool {
	return slices.ContainsFunc(opencodeOpenTags, func(tag string) bool { return strings.Contains(text, tag) })
}

// opencodeBlockOrUnset is !out.Set || opencodeHasBlock(out.S) for out =
// r.Str(), r a literal the decoder validated (as UnmarshalJSON and TakeLit
// are given), mostly without unquoting it: metadata.output repeats the
// whole output, and every final of a command with an exit code asks.
// A tag found in the literal is in its text (a tag holds no backslash, and
// neither its first byte, '<', nor its last, '>', can be part of an
// escape); a tag that is not there can be in the text only through a \u
// escape (the others stand for a quote, a backslash, '/' or a control
// byte, none of them in a tag), so only a literal with one is unquoted.
func opencodeBlockOrUnset(r rawText) bool {
	if r.decoded {
		return opencodeHasBlock(r.text)
	}
	if r.lit == nil {
		return true // Str: not set
	}
	for _, tag := range opencodeOpenTags {
		if bytes.Contains(r.lit, []byte(tag)) {
			return true
		}
	}
	if !bytes.Contains(r.lit, []byte(`\u`)) {
		return false
	}
	out := r.Str()
	return !out.Set || opencodeHasBlock(out.S)
}

// opencodeEndsBlock says whether text, trailing blanks cut, ends with a
// metadata block's closing tag.
func opencodeEndsBlock(text string) bool {
	return slices.ContainsFunc(opencodeCloseTags, func(tag string) bool { return strings.HasSuffix(text, tag) })
}

var (
	// opencodeOpenTags and opencodeCloseTags are the tags of the metadata
	// block OpenCode appends for the model (bash_metadata in older
	// builds), in the same order; opencodeMetaBlockIn finds either.
	opencodeOpenTags  = []string{"<shell_metadata>", "<bash_metadata>"}
	opencodeCloseTags = []string{"</shell_metadata>", "</bash_metadata>"}
	// opencodeOldMarker is the older one-line form.
	opencodeOldMarker = regexp.MustCompile(`(?:\n\n)?\((Command timed out after \d+ ?ms|Command was aborted)\)\s*$`)
	// opencodeTruncHeader is the header of an output that was cut and
	// saved to a file: "...output truncated...\n\nFull output saved to: F\n\n".
	opencodeTruncHeader = mustAnchored(`^\.\.\.[^\n]*truncated[^\n]*\.\.\.\n\n(?:[^\n]*(?:saved to|Full output)[^\n]*\n(?:[^\n]+\n)*?\n)?`).withLine("truncated")
	// opencodeTruncTrailer is the note the tool framework appends when it
	// keeps the HEAD of an output: "\n\n...N lines truncated...\n\nThe
	// tool call succeeded but the output was truncated. Full output saved
	// to: F\nUse Grep ...". F is the agent's own data directory
	// (".../opencode/tool-output/...", Kilo's ".../kilo/tool-output/...").
	opencodeTruncTrailer = regexp.MustCompile(`^\n\n\.\.\.\d+ (?:lines|bytes|chars|characters) truncated\.\.\.\n\n[^\n]*(?:saved to|Full output)[^\n]*(?:\n[^\n]+)*\s*$`)
	opencodeTimeoutText  = mustFolded(`(?i)exceed(?:ed|ing)? (?:the )?timeout|timed out`, "timeout", "timed out")
	opencodeAbortText    = mustFolded(`(?i)\babort(?:ed)?\b|\bcancel(?:l?ed)?\b`, "abort", "cancel")
)

// opencodeTruncHeaderIn is opencodeTruncHeader.FindStringIndex(text),
// run on as much of text as a match can take: up to its first blank line,
// which ends the header's first line, and the next one, which ends the
// note after it (its lines are not empty). The regexp package steps
// through a text longer than a few KiB with its slower engine, however
// short the match (a cut output's header on its whole 12 KB text was 0.8%
// of the server's samples on the opencode load at c=8).
func opencodeTruncHeaderIn(text string) []int {
	if i := strings.Index(text, "\n\n"); i >= 0 {
		if j := strings.Index(text[i+2:], "\n\n"); j >= 0 {
			text = text[:i+2+j+2]
		}
	}
	return opencodeTruncHeader.FindStringIndex(text)
}

// opencodeMetaBlockIn finds the trailing metadata block OpenCode appends
// for the model, with the blank line before it: what
//
//	findFrom(regexp.MustCompile(`(?s)(?:\n\n)?<(shell|bash)_metadata>\n?(.*?)\n?</(?:shell|bash)_metadata>\s*$`), text, opencodeOpenTags...)
//
// gives (the pattern, opencodeMetaBlock, is kept in the tests, which hold
// this to it), without the regexp: a match costs it several µs on a
// 240-byte block. Only whitespace follows the closing tag, so it is the
// one that ends the text trimmed of what \s matches, and no opening tag
// can overlap it or come after it: the match starts at the first opening
// tag (with the "\n\n" before it, if any), and its lazy capture runs
// from after the tag (and a line break, which \n? takes first) up to the
// closing tag, less a line break right before it.
func opencodeMetaBlockIn(text string) []int {
	end := strings.TrimRight(text, "\t\n\f\r ")
	closing := -1
	for _, tag := range opencodeCloseTags {
		if strings.HasSuffix(end, tag) {
			closing = len(end) - len(tag)
			break
		}
	}
	if closing < 0 {
		return nil
	}
	open, tagLen := -1, 0 // the first opening tag, and its length
	for i := 0; i < closing; {
		k := strings.IndexByte(text[i:closing], '<')
		if k < 0 {
			break
		}
		i += k
		for _, tag := range opencodeOpenTags {
			if strings.HasPrefix(text[i:], tag) {
				open, tagLen = i, len(tag)
				break
			}
		}
		if open >= 0 {
			break
		}
		i++
	}
	if open < 0 {
		return nil
	}
	start := open
	if strings.HasSuffix(text[:open], "\n\n") {
		start -= 2
	}
	from := open + tagLen
	if from < closing && text[from] == '\n' {
		from++
	}
	to := closing
	if to > from && text[to-1] == '\n' {
		to--
	}
	return []int{start, len(text), open + 1, open + tagLen - len("_metadata>"), from, to}
}

// opencodeMetaBlockIf is opencodeMetaBlockIn(text) when may is true, and
// nil otherwise (findFromIf).
func opencodeMetaBlockIf(may bool, text string) []int {
	if !may {
		return nil
	}
	return opencodeMetaBlockIn(text)
}

// parse removes what OpenCode adds to the output for the model from
// text, reports what those additions say in p, and leaves the rest in
// p.body; p's fields that say what is output are set by the caller.
func (p *opencodeParsed) parse(text string) {
	text = p.trailingNotices(text)
	if p.notTruncated {
		// The notes below are OpenCode's only in a text it cut.
	} else if loc := opencodeTruncHeaderIn(text); loc != nil {
		p.truncated = true
		text = text[loc[1]:]
	} else if at := opencodeTrailerAt(text); at >= 0 {
		p.truncated, p.head = true, true
		text = text[:at]
	}
	if text == opencodeNoOutput && !p.wordsAreOutput {
		text = ""
	}
	p.body = text
}

// trailingNotices removes the notices OpenCode appends for the model (the
// <shell_metadata>/<bash_metadata> block, the older one-line markers) from
// the end of text, records what they say in p, and returns the rest.
//
// Each notice ends the text (both patterns end in `\s*$`), so a text that
// does not end as one does is not searched: a live snapshot of a long
// output would otherwise be searched whole on every update.
func (p *opencodeParsed) trailingNotices(text string) string {
	for {
		end := strings.TrimRight(text, "\t\n\f\r ") // the text but what \s*$ matches
		metaEnd := (!p.blockIsOutput || p.headBlock(text)) && opencodeEndsBlock(end)
		if m := opencodeMetaBlockIf(metaEnd, text); m != nil {
			note := text[m[4]:m[5]]
			if !p.notTruncated && opencodeHeadNote.MatchString(note) && utf16Len(text[:m[0]]) == opencodeHeadLen {
				p.truncated, p.head = true, true
			}
			p.timedOut = p.timedOut || opencodeTimeoutText.MatchString(note)
			if opencodeAbortText.MatchString(note) {
				p.aborted, p.notice = true, notice(note)
			}
			text = text[:m[0]]
			continue
		}
		// The marker ends in ")" and holds no "(" but its first byte: it
		// starts at the last "(" of the text.
		oldEnd := !p.oldMarkerIsOutput && strings.HasSuffix(end, ")") && strings.HasPrefix(end[max(strings.LastIndexByte(end, '('), 0):], "(Command ")
		if m := findFromIf(oldEnd, opencodeOldMarker, text, "(Command "); m != nil {
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

// headBlock says whether text ends with the block OpenCode 1.0 appends
// to an output it cut to its first opencodeHeadLen characters ("\n\n
// <bash_metadata>\nbash tool truncated output as it exceeded 30000 char
// limit\n</bash_metadata>", beside the command's exit code, metadata
// .output holding the block too): exactly that many characters before
// the block, a note that says truncated, nothing after the closing tag.
// A command that prints such a block after exactly 30 000 characters is
// the only one read wrong.
func (p *opencodeParsed) headBlock(text string) bool {
	if p.notTruncated || !opencodeLiveBlock(text) {
		return false
	}
	for _, open := range opencodeOpenTags {
		j := strings.LastIndex(text, "\n\n"+open+"\n")
		if j >= 0 && utf16Len(text[:j]) == opencodeHeadLen {
			return opencodeHeadNote.MatchString(text[j:])
		}
	}
	return false
}

// opencodeHeadNote is the note of a block that says OpenCode kept only
// the head of the output (headBlock).
var opencodeHeadNote = regexp.MustCompile(`(?i)\btruncated output\b`)

// opencodeTrailerAt is where a head-truncation note (opencodeTruncTrailer)
// starts at the end of text, or -1. Only the last note is looked at, and
// the pattern runs on that tail alone.
func opencodeTrailerAt(text string) int {
	i := strings.LastIndex(text, " truncated...\n\n")
	if i < 0 {
		return -1
	}
	j := strings.LastIndex(text[:i], "\n\n...")
	if j < 0 || strings.IndexByte(text[j+2:i], '\n') >= 0 || !opencodeTruncTrailer.MatchString(text[j:]) {
		return -1
	}
	return j
}

var (
	opencodeRejected = regexp.MustCompile(`(?i)\brejected\b|\bdenied by the user\b|\buser (?:declined|dismissed)\b`)
	opencodeAborted  = regexp.MustCompile(`(?i)\babort(?:ed)?\b|\bcancel(?:l?ed)?\b|\binterrupted\b`)
)

// opencodeToolError reads a `failed` frame: the tool itself failed, so
// there is no exit code. The text decides between a user rejection or
// abort (Cancelled) and any other failure (Failed, including a config rule
// that denies the command: the user was not asked).
func opencodeToolError(o *accum.Observation, u *opencodeCall) {
	text, _ := u.Texts()
	if out := u.RawOutput; out != nil {
		if out.Error.Set && out.Error.S != "" {
			text = out.Error.S
		}
		if m := out.Metadata; m != nil {
			if e := firstKnown(m.Exit, m.ExitCode).Exit(accum.ExitStructured, true); e != nil {
				o.Exit = e
			}
		}
	}
	if opencodeRejected.MatchString(text) || opencodeAborted.MatchString(text) {
		o.Cancelled, o.CancelNotice = true, notice(text)
		return
	}
	o.Failed = true
}
