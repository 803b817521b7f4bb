package dialect

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// pi reads pi (`@earendil-works/pi-coding-agent`) through its ACP adapter
// pi-acp (agentInfo.name "pi-acp"), tool `bash` {command, timeout (s)}.
//
// What it sends, and what it means here:
//   - `tool_call` `pending`, kind `execute`, `title` = the command (while
//     the model is still writing it: the tool name "bash", then the
//     command so far; each later title replaces the earlier), NO
//     `rawInput`, terminal content whose id is the tool call id, and
//     `_meta.terminal_info {terminal_id, cwd}` (those two signs say the
//     call is the shell whatever its kind: see piInputs). Two
//     status-only updates follow. pi never asks permission.
//   - live: `_meta.terminal_output` deltas. pi keeps only the last 2,000
//     lines or 50 KiB of the output, and pi-acp sends the part of pi's
//     text that extends what it sent before, or, when pi's text no longer
//     extends it (the window moved), the WHOLE new text again: a rolling
//     window that restarts. The deltas are read as accum Rolling deltas
//     with those bounds: a delta that would make pi's text longer than
//     2,000 lines or 50 KiB is a new window, aligned with what is held
//     (nothing appended twice; a window past what is held replaces it,
//     truncated).
//   - final: `failed` for any nonzero exit, signal, timeout or cancel,
//     `completed` for exit 0. Its last delta (`_meta.terminal_output`)
//     ends with pi's own words, none of them output:
//     `\n\nCommand exited with code N` (the exit code; 128+n is also read
//     as signal n, as pi reports a process a signal killed),
//     `\n\nCommand timed out after N seconds` (TimedOut; when it adds "The
//     shell exited with code X ..." X is the exit code),
//     `\n\nCommand aborted` (the user's cancel: Cancelled),
//     `\n\nCommand terminated without an exit code` (Failed), and before
//     them a truncation note `\n\n[Showing lines A-C of C. Full output:
//     F]` (pi keeps the tail: lines that do not end at C are the
//     command's own; or `[Showing last X of line N ...]`): Truncated.
//     `(no output)` stands for empty output. A `failed` final whose text
//     has none of these words is pi's error message (e.g. a missing
//     working directory): Failed, the message in the reason, not output;
//     but only a text of one line, or pi's two-line working directory
//     error, is one (piMessage): several lines are output above a
//     closing line a build reworded, kept whole, the exit unknown.
//   - `_meta.terminal_exit.exit_code` is pi-acp's guess, 0 or 1 (1 for
//     every error): 0 on `completed` is exit 0; 1 is never read as an exit
//     code (the words above say what happened); any other value is real.
//     pi before 0.86.1 (0.84.4 and 0.85.1 recorded) reports a shell a
//     signal killed (`kill -9 $$`, SIGTERM) as a success without words,
//     and pi-acp says `completed` with exit_code 0: on those builds 0 is
//     no exit code (UNKNOWN, the output kept). 0.86.1 says "Command exited
//     with code 137" on a `failed` final, and so do 0.87.1, 1.0.3 and
//     1.6.0 (recorded under pi-acp 0.0.34: the same wire).
//   - pi's build: agentInfo.version is pi-acp's own (0.0.x). pi-acp
//     0.0.34 names pi's in its session/new result,
//     `_meta.piAcp.startupInfo` "pi v0.84.4\n---\n": its first line is
//     the frame's AgentVersion (agentBuild), which binds the dialect
//     (forVersion reads only a version named "pi"). Every pi-acp build
//     (0.0.23, 0.0.24, 0.0.34) writes that line from `pi --version` of
//     the pi on PATH (its stdout; 0.0.34 also its stderr), the pi it runs
//     unless PI_ACP_PI_COMMAND names another (then the line names PATH's,
//     which the wire cannot show). pi 0.73.1 prints its version on stderr
//     when its stdin is no terminal, so pi-acp 0.0.24 sent "\n" there:
//     without a word of pi's build, the newest rules. (A "pi v1.6.0"
//     from pi-acp 0.0.24 running pi 0.60.0 was the agents harness's
//     PATH, not pi-acp's.)
//   - session/load replays each call as a `tool_call` titled "bash" that
//     says `completed` whatever the outcome, then one update with the
//     whole final text: the `tool_call`'s status is not read (a live pi
//     `tool_call` never ends a call), the update says how it ended.
//
// pi-acp 0.0.23 and 0.0.24 (studied with pi 0.84.2) send the CONTENT wire
// instead, read by the same words:
//   - `tool_call` titled with the tool's name "bash", kind `other`, the
//     command in `rawInput.command`; its updates name no tool.
//   - live: `content` text that is pi's whole text so far (a Snapshot);
//     when pi's text is empty, pi-acp sends the JSON of pi's partial
//     result instead, not output: first `{"content": []}`, and, with pi
//     0.73.1 and 0.60.0, past pi's byte limit for a single line, an empty
//     text item and pi's details (see piEnvelope). Past pi's limit `rawOutput.details.truncation {truncated,
//     totalBytes}` says the text is only pi's window (a Window, truncated,
//     at least totalBytes).
//   - final: `content` text that is pi's whole final text, closing words
//     and truncation note included (a Final). A success has no words and
//     no `terminal_exit`: a bare `completed`, which this build also sends
//     for a shell killed by SIGKILL, so it is no exit code (UNKNOWN).
//   - session/load replays: a `tool_call` titled "bash", kind `other`,
//     `completed`, `rawInput: null`, `rawOutput {toolName: "bash",
//     content, isError}`, then an update with the status and the final
//     text.
type pi struct {
	// killedIsSuccess: pi before 0.86.1 reports a shell a signal killed
	// (exitCode null) as a success without words (`if (exitCode !== 0 &&
	// exitCode !== null) throw`), and pi-acp makes terminal_exit up as 0
	// for it: a `completed` with terminal_exit 0 is no exit code.
	killedIsSuccess bool
}

func init() { register(pi{}) }

// forVersion implements versioned: pi's own build, as pi-acp names it
// (agentBuild), says whether a completed's terminal_exit 0 may be a
// killed shell. pi-acp's build (a version that names no program) says
// nothing of pi's; an unknown build reads with the newest rules.
func (pi) forVersion(v Version) Dialect {
	return pi{killedIsSuccess: v.Name() == "pi" && v.Before("0.86.1")}
}

func (pi) Info() Info {
	return Info{
		Name:               "pi",
		AgentNames:         []string{"pi-acp", "pi"},
		AuthMethodIDs:      []string{"pi_terminal_login"},
		Summary:            "pi through pi-acp: command from the title, _meta.terminal_output deltas with pi's restarting 2,000-line window, the real exit code, timeout, abort and truncation from pi's last line (terminal_exit says only 0 or 1).",
		ClientCapabilities: richCapabilities,
	}
}

// piWindow bounds the text pi keeps of a running command's output.
var piWindow = accum.Rolling{Lines: 2000, Bytes: 50 * 1024}

// piTool is the tool name pi-acp titles a call with before it knows the
// command, and in replays.
const piTool = "bash"

// piCall is a tool call frame of pi-acp.
type piCall struct {
	ToolCall
	Meta      *TerminalMeta `json:"_meta"`
	RawInput  *piInput      `json:"rawInput"`
	RawOutput *piOutput     `json:"rawOutput"`
}

// piInput is the `rawInput` of the content wire (pi-acp 0.0.23, 0.0.24):
// pi's bash tool arguments.
type piInput struct {
	Command CommandLine `json:"command"`
}

// piOutput is the `rawOutput` of the content wire: the tool's name in a
// replay, and pi's truncation of a big output.
type piOutput struct {
	ToolName Str
	// Truncated says pi kept only its window of the output; TotalBytes is
	// the size pi says the output has so far (0: not said).
	Truncated  bool
	TotalBytes int64
}

// UnmarshalJSON implements json.Unmarshaler; it never fails. Only an
// object is read.
func (p *piOutput) UnmarshalJSON(b []byte) error {
	*p = piOutput{}
	jsonlit.EachMember(b, func(key string, val []byte) {
		switch key {
		case "TOOLNAME":
			p.ToolName.UnmarshalJSON(val)
		case "DETAILS":
			jsonlit.EachMember(val, func(key string, val []byte) {
				if key != "TRUNCATION" {
					return
				}
				jsonlit.EachMember(val, func(key string, val []byte) {
					switch key {
					case "TRUNCATED":
						var t *bool
						readBool(&t, val)
						p.Truncated = t != nil && *t
					case "TOTALBYTES":
						if c := ParseCode(val); c.Known && c.Value > 0 {
							p.TotalBytes = int64(c.Value)
						}
					}
				})
			})
		}
	})
	return nil
}

// ownFields: pi's truncation is read whole (truncated and totalBytes; its
// other members say nothing of the exit).
func (piOutput) ownFields() []string { return []string{"toolName", "details.truncation"} }

// unreadFields: the message pi's tool returned restates, in content and
// isError, what the ACP content and status say; role, timestamp and
// toolCallId are its envelope; the file holding the whole output says
// nothing of the exit.
func (piCall) unreadFields() []string {
	return []string{"rawOutput.content", "rawOutput.isError", "rawOutput.role", "rawOutput.timestamp", "rawOutput.toolCallId",
		"rawOutput.details.fullOutputPath"}
}

// neverEchoes: pi writes the command's output as it came, never the
// command before it (see neverEchoes).
func (pi) neverEchoes() {}

func (p pi) read(msg []byte, scope string) (Frame, error) {
	if p.killedIsSuccess {
		return readFrame(msg, scope, observePiKilledIsSuccess, askPi)
	}
	return readFrame(msg, scope, observePi, askPi)
}

// agentBuild implements agentBuilds: pi-acp's session/new result names
// pi's build in `_meta.piAcp.startupInfo` ("pi v0.84.4\n---\n"): its
// first line, when it is "pi" and a version.
func (*piCall) agentBuild(meta []byte) string {
	var info Str
	jsonlit.EachMember(meta, func(key string, val []byte) {
		if key == "PIACP" {
			jsonlit.EachMember(val, func(key string, val []byte) {
				if key == "STARTUPINFO" {
					info.UnmarshalJSON(val)
				}
			})
		}
	})
	line, _, _ := strings.Cut(info.S, "\n")
	line = strings.TrimSpace(line)
	if v := ParseVersion(line); v.Known() && v.Name() == "pi" {
		return line
	}
	return ""
}

func observePi(u *piCall) []accum.Observation { return observePiFor(u, false) }

func observePiKilledIsSuccess(u *piCall) []accum.Observation { return observePiFor(u, true) }

// observePiFor reads an update; killedIsSuccess: see pi.
func observePiFor(u *piCall, killedIsSuccess bool) []accum.Observation {
	if u.SessionUpdate != "tool_call" && u.SessionUpdate != "tool_call_update" {
		return nil
	}
	o := u.Base()
	if o.Opens && o.Status.Ended() {
		o.Status = accum.StatusNone // a replay's header: see pi
	}
	piInputs(&o, u)
	if o.Shell == accum.ShellNo {
		return []accum.Observation{o}
	}
	m := u.Meta
	if m == nil || (m.TerminalInfo == nil && m.TerminalExit == nil && m.TerminalOutput == nil && m.TerminalOutputDelta == nil) {
		if o.Shell != accum.ShellNo {
			piContent(&o, u) // its updates name no tool: the call's opening frame did
		}
		return []accum.Observation{o}
	}
	if ti := m.TerminalInfo; ti != nil {
		o.Shell = accum.ShellYes
		if ti.TerminalID != "" {
			o.TerminalID = ti.TerminalID
		}
		if ti.Cwd != "" {
			o.Cwd = ti.Cwd
		}
	}
	if m.TerminalExit != nil {
		o.Shell = accum.ShellYes
	}
	data := ""
	for _, td := range []*TerminalData{m.TerminalOutput, m.TerminalOutputDelta} {
		if td != nil {
			o.Shell = accum.ShellYes
			data += td.Data.S
		}
	}
	if o.Status.Ended() {
		piEnd(&o, data, m, false, nil, killedIsSuccess)
	} else if data != "" {
		o.Texts = append(o.Texts, piText(data, false))
	}
	return []accum.Observation{o}
}

func askPi(u *piCall) accum.Observation {
	o := u.askBase()
	piInputs(&o, u)
	o.ApprovalReason = u.askReason()
	return o
}

// piInputs reads the command from the title of a call on the terminal
// wire, or, on the content wire, from rawInput of the call titled with
// the tool's name (kind "other"; in a replay rawOutput.toolName names the
// tool).
//
// On the terminal wire (pi-acp 0.0.34, dist/index.js emitBashToolCall and
// session/load's replay) the call of pi's bash tool, and only it, has the
// kind execute, its title the command (or the tool's name while the model
// has not written it), and its opening frame a terminal content item and
// `_meta.terminal_info` naming the call; every other tool's call is
// titled with the tool's name and its updates carry no title. So a call
// that opens with those signs is the shell whatever its kind, and an
// update's title is the command whatever its kind, unless the kind is one
// no shell has: a build that gives its bash tool another kind (as 0.0.24
// gave it `other`) keeps its commands.
func piInputs(o *accum.Observation, u *piCall) {
	shell := (u.Kind != nil && *u.Kind == "execute") || piTerminalCall(u)
	if shell {
		o.Shell = accum.ShellYes
	}
	titled := shell || (u.SessionUpdate == "tool_call_update" && ReadKind(u.Kind) != accum.ShellNo)
	if titled && u.Title != nil {
		if t := strings.TrimSpace(*u.Title); t != "" && t != piTool {
			o.Command = t
		}
	}
	bash := u.Title != nil && *u.Title == piTool && (u.Kind == nil || *u.Kind == "other" || *u.Kind == "execute")
	if u.RawOutput != nil && u.RawOutput.ToolName.S == piTool {
		bash = true
	}
	if !bash {
		return
	}
	if in := u.RawInput; in != nil && strings.TrimSpace(in.Command.Line) != "" {
		o.Command = in.Command.Line
		o.Shell = accum.ShellYes
	} else if in != nil || u.RawOutput != nil {
		o.Shell = accum.ShellYes
	}
}

// piTerminalCall says whether u opens a call with the terminal wire's
// signs: a terminal content item and `_meta.terminal_info`, each naming
// the call (pi-acp's terminal id is the tool call id).
func piTerminalCall(u *piCall) bool {
	return u.SessionUpdate == "tool_call" && u.ToolCallID != "" && u.TerminalContent() == u.ToolCallID &&
		u.Meta != nil && u.Meta.TerminalInfo != nil && u.Meta.TerminalInfo.TerminalID == u.ToolCallID
}

// piEnvelopeMax bounds the text piEnvelope parses: the dump of a result
// whose texts are empty is small (its details hold pi's truncation,
// whose content is the empty text, and a file path).
const piEnvelopeMax = 4 << 10

// piEnvelope says whether a live content-wire text is pi-acp's JSON dump
// of pi's partial result (`JSON.stringify(result, null, 2)`, which pi-acp
// sends when the result's text is empty), not output: an object whose
// `content` is an array of only empty text items (or none, the first
// live text `{"content": []}`), with at most `details` beside it (pi's
// truncation and full output file, which rawOutput carries too), an
// object. Member names match as encoding/json matches them to fields
// (case-insensitively); any other member, a member of another type, or
// a member named twice (JSON.stringify writes none) makes it output.
func piEnvelope(text string) bool {
	t := strings.TrimSpace(text)
	if len(t) > piEnvelopeMax || !strings.HasPrefix(t, "{") {
		return false
	}
	b := []byte(t)
	// jsonlit's walks read JSON that is valid: json.Valid scans it, and
	// nothing is decoded.
	if !json.Valid(b) {
		return false
	}
	ok, content, details := true, false, false
	jsonlit.EachMember(b, func(key string, val []byte) {
		switch {
		case key == "CONTENT" && !content:
			content = true
			ok = ok && piEmptyTexts(val)
		case key == "DETAILS" && !details:
			details = true
			ok = ok && val[0] == '{'
		default:
			ok = false
		}
	})
	return ok && content
}

// piEmptyTexts says whether the valid JSON val is an array of only text
// items whose text is empty, each an object of `type` "text" and `text`
// "" and nothing else.
func piEmptyTexts(val []byte) bool {
	if val[0] != '[' {
		return false
	}
	ok := true
	jsonlit.EachElement(val, func(item []byte) bool {
		var typ, text *string
		jsonlit.EachMember(item, func(key string, val []byte) {
			s, isStr := (*string)(nil), val[0] == '"'
			if isStr {
				u, _ := jsonlit.Unquote(val)
				s = &u
			}
			switch {
			case key == "TYPE" && typ == nil && isStr:
				typ = s
			case key == "TEXT" && text == nil && isStr:
				text = s
			default:
				ok = false
			}
		})
		ok = ok && typ != nil && *typ == "text" && text != nil && *text == ""
		return ok
	})
	return ok
}

// piContent reads the content wire's texts: live, pi's whole text so far,
// or, once pi keeps only its window (rawOutput.details.truncation), that
// window; the final, pi's whole text with its closing words (piEnd).
func piContent(o *accum.Observation, u *piCall) {
	if o.Opens {
		return // a replay's tool_call: its update says the rest
	}
	text, ok := u.Texts()
	if !ok {
		return
	}
	out := u.RawOutput
	if out == nil {
		out = &piOutput{}
	}
	if o.Status.Ended() {
		piEnd(o, text, nil, true, out, false) // no terminal_exit on this wire
		return
	}
	if strings.TrimSpace(text) == "" || piEnvelope(text) {
		return
	}
	t := accum.Text{Stream: accum.Combined, Kind: accum.Snapshot, Text: text}
	if out.Truncated {
		t.Kind, t.Truncated, t.TotalBytes = accum.Window, true, out.TotalBytes
	}
	o.Texts = append(o.Texts, t)
}

// piText is pi's output text as a rolling delta.
func piText(s string, truncated bool) accum.Text {
	return accum.Text{Stream: accum.Combined, Kind: accum.Delta, Text: s, Rolling: piWindow, Truncated: truncated}
}

var (
	piExited    = regexp.MustCompile(`(?:^|\n\n)Command exited with code (-?\d+)\s*$`)
	piTimedOut  = regexp.MustCompile(`(?:^|\n\n)Command timed out after [0-9.]+ seconds?(?:\. The shell exited with code (-?\d+) after [^\n]*)?\s*$`)
	piAborted   = regexp.MustCompile(`(?:^|\n\n)(Command aborted)\s*$`)
	piNoCode    = regexp.MustCompile(`(?:^|\n\n)(Command terminated without an exit code)\s*$`)
	piTruncNote = regexp.MustCompile(`(?:^|\n\n)\[Showing (?:lines \d+-(\d+) of (\d+)(?: \([^)\n]*\))?|last [^\n\]]*? of line \d+ \(line is [^)\n]*\))\. Full output: [^\n\]]*\]\s*$`)
)

// piNoteIsPis says whether the note piTruncNote found (loc, its submatch
// indexes in data; the groups are B and C of "lines A-B of C") can be
// pi's: pi keeps the TAIL of the output, so its note shows lines up to
// the last one, "lines A-C of C" (every note recorded, from every pi
// build, is so). A "[Showing lines 1-2 of 9 ...]"
// line ending the text is the command's own output.
func piNoteIsPis(data string, loc []int) bool {
	return loc[2] < 0 || data[loc[2]:loc[3]] == data[loc[4]:loc[5]]
}

// piCwdError is pi's error for a working directory that does not exist,
// its one message of two lines (pi 0.84.2's bash tool).
var piCwdError = regexp.MustCompile(`^Working directory does not exist: [^\n]*\nCannot execute bash commands\.$`)

// piMessage says whether a `failed` final's text with none of pi's
// closing words is pi's own message (a spawn error, an invalid timeout, a
// missing working directory): a single line, or piCwdError. pi writes a
// command's output only with a closing line below it (or a truncation
// note), so a text of several lines is output with a closing line pi's
// build reworded.
func piMessage(data string) bool {
	t := strings.TrimSpace(data)
	return !strings.Contains(t, "\n") || piCwdError.MatchString(t)
}

// piNoOutput is what pi says instead of an empty output.
const piNoOutput = "(no output)"

// piEnd reads the frame that ends a call: pi's closing words off the end
// of data, a last delta (the terminal wire), or, when whole, pi's whole
// final text (the content wire, whose rawOutput out says whether pi cut
// it); and the terminal exit m (killedIsSuccess: see pi).
func piEnd(o *accum.Observation, data string, m *TerminalMeta, whole bool, out *piOutput, killedIsSuccess bool) {
	said := false // pi's words said how the command ended
	// pi says how a command ended only on a failed final (any nonzero
	// exit, signal, timeout or cancel): on a completed one, words like
	// its own are what the command printed.
	if o.Status != accum.StatusFailed {
		// no words to read
	} else if loc := piExited.FindStringSubmatchIndex(data); loc != nil {
		said = true
		code := CodeFromString(data[loc[2]:loc[3]])
		o.Exit = code.Exit(accum.ExitText, true)
		if code.Known && code.Value > 128 && code.Value < 160 {
			if name, ok := signalNames[int(code.Value-128)]; ok {
				o.Signal = name
			}
		}
		data = data[:loc[0]]
	} else if loc := piTimedOut.FindStringSubmatchIndex(data); loc != nil {
		said = true
		o.TimedOut = true
		if loc[2] >= 0 {
			o.Exit = CodeFromString(data[loc[2]:loc[3]]).Exit(accum.ExitText, true)
		}
		data = data[:loc[0]]
	} else if loc := piAborted.FindStringSubmatchIndex(data); loc != nil {
		said = true
		o.Cancelled, o.CancelNotice = true, data[loc[2]:loc[3]]
		data = data[:loc[0]]
	} else if loc := piNoCode.FindStringSubmatchIndex(data); loc != nil {
		said = true
		o.Failed, o.FailNotice = true, data[loc[2]:loc[3]]
		data = data[:loc[0]]
	}
	truncated := false
	if loc := piTruncNote.FindStringSubmatchIndex(data); loc != nil && piNoteIsPis(data, loc) {
		truncated = true
		data = data[:loc[0]]
	}
	noOutput := data == piNoOutput
	if noOutput {
		data = ""
	}
	if m == nil {
		m = &TerminalMeta{}
	}
	if te := m.TerminalExit; te != nil && o.Exit == nil && te.ExitCode.Known {
		switch c := te.ExitCode.Value; {
		case c == 0 && o.Status == accum.StatusCompleted && killedIsSuccess:
			o.ExitSetAside = true // it may be a killed shell's
		case c == 0 && o.Status == accum.StatusCompleted:
			o.Exit = te.ExitCode.Exit(accum.ExitTerminal, true)
		case c != 0 && c != 1:
			o.Exit = te.ExitCode.Exit(accum.ExitTerminal, true)
		}
	}
	if o.Status == accum.StatusFailed && !said && !truncated {
		if piMessage(data) {
			// pi's error message, not the command's output.
			if o.Exit == nil {
				o.Failed, o.FailNotice = true, notice(data)
			}
			data = ""
		} else {
			// Several lines with none of pi's closing words: output
			// under a closing line a build reworded ("Command rc=3"),
			// which cannot be told from the output's own last line.
			// All of it is kept; the exit is unknown, and said.
			field := "_meta.terminal_output.data"
			if whole {
				field = "content text"
			}
			addUnrecognized(&o.Unrecognized, accum.UnrecognizedResult, field)
		}
	}
	if whole {
		t := accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: data, Truncated: truncated || out.Truncated}
		if t.Truncated {
			t.TotalBytes = out.TotalBytes
		}
		if noOutput {
			// pi's words for an empty output, and also the whole output
			// of a command that printed them, which pi's live text has
			// shown as it ran (an empty output streams nothing): the
			// final says nothing of the output, and what was streamed is
			// kept.
			t.Kind = accum.Delta
		}
		o.Texts = append(o.Texts, t)
		return
	}
	if data != "" || truncated {
		o.Texts = append(o.Texts, piText(data, truncated))
	}
}

// endsWordedFailed: pi says how a command ended only on a `failed` final
// (see piEnd and endsWordedFailed).
func (*piCall) endsWordedFailed() {}
