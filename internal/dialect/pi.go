package dialect

import (
	"regexp"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// pi reads pi (`@earendil-works/pi-coding-agent`) through its ACP adapter
// pi-acp (agentInfo.name "pi-acp"), tool `bash` {command, timeout (s)}.
//
// What it sends, and what it means here:
//   - `tool_call` `pending`, kind `execute`, `title` = the command (while
//     the model is still writing it: the tool name "bash", then the
//     command so far; each later title replaces the earlier), NO
//     `rawInput`, terminal content whose id is the tool call id, and
//     `_meta.terminal_info {terminal_id, cwd}`. Two status-only updates
//     follow. pi never asks permission.
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
//     them a truncation note `\n\n[Showing lines A-B of C. Full output:
//     F]` (or `[Showing last X of line N ...]`): Truncated. `(no output)`
//     stands for empty output. A `failed` final whose text has none of
//     these words is pi's error message (e.g. a missing working
//     directory): Failed, the message in the reason, not output.
//   - `_meta.terminal_exit.exit_code` is pi-acp's guess, 0 or 1 (1 for
//     every error): 0 on `completed` is exit 0; 1 is never read as an exit
//     code (the words above say what happened); any other value is real.
//   - session/load replays each call as a `tool_call` titled "bash" that
//     says `completed` whatever the outcome, then one update with the
//     whole final text: the `tool_call`'s status is not read (a live pi
//     `tool_call` never ends a call), the update says how it ended.
type pi struct{}

func init() { register(pi{}) }

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
	Meta *TerminalMeta `json:"_meta"`
}

func (pi) read(msg []byte) (Frame, error) {
	return readFrame(msg, observePi, askPi)
}

func observePi(u *piCall) []accum.Observation {
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
	if m == nil {
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
		piFinal(&o, data, m)
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

// piInputs reads the command from the title of an execute call.
func piInputs(o *accum.Observation, u *piCall) {
	if u.Kind == nil || *u.Kind != "execute" || u.Title == nil {
		return
	}
	o.Shell = accum.ShellYes
	if t := strings.TrimSpace(*u.Title); t != "" && t != piTool {
		o.Command = t
	}
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
	piTruncNote = regexp.MustCompile(`(?:^|\n\n)\[Showing (?:lines \d+-\d+ of \d+(?: \([^)\n]*\))?|last [^\n\]]*? of line \d+ \(line is [^)\n]*\))\. Full output: [^\n\]]*\]\s*$`)
)

// piNoOutput is what pi says instead of an empty output.
const piNoOutput = "(no output)"

// piFinal reads the frame that ends a call: its last delta with pi's
// closing words, and the terminal exit.
func piFinal(o *accum.Observation, data string, m *TerminalMeta) {
	said := false // pi's words said how the command ended
	if loc := piExited.FindStringSubmatchIndex(data); loc != nil {
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
	if loc := piTruncNote.FindStringIndex(data); loc != nil {
		truncated = true
		data = data[:loc[0]]
	}
	if data == piNoOutput {
		data = ""
	}
	if te := m.TerminalExit; te != nil && o.Exit == nil && te.ExitCode.Known {
		switch c := te.ExitCode.Value; {
		case c == 0 && o.Status == accum.StatusCompleted:
			o.Exit = te.ExitCode.Exit(accum.ExitTerminal, true)
		case c != 0 && c != 1:
			o.Exit = te.ExitCode.Exit(accum.ExitTerminal, true)
		}
	}
	if o.Status == accum.StatusFailed && !said && !truncated {
		// pi's error message, not the command's output.
		if o.Exit == nil {
			o.Failed, o.FailNotice = true, notice(data)
		}
		data = ""
	}
	if data != "" || truncated {
		o.Texts = append(o.Texts, piText(data, truncated))
	}
}
