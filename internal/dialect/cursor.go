package dialect

import (
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// cursor reads `cursor-agent acp`.
//
// What it sends, and what it means here:
//   - `initialize` result: NO agentInfo, so no name to detect it by. Its
//     auth method `cursor_login`, its vendor methods (`cursor/...`) and
//     its tool call shape (matchesShape) identify it instead; see Info and
//     DetectionOrder.
//   - `tool_call`: kind `execute`, `pending`, title = the command in
//     backticks, `rawInput {command}`. The title gives the command only
//     when rawInput has none, and never replaces a command already known
//     (CommandFromTitle).
//   - A bare `{"status":"in_progress"}` update; no live output.
//   - Final `completed` EVEN FOR A NONZERO EXIT with `rawOutput {exitCode,
//     stdout, stderr}`: a structured exit and really separated streams
//     (Stdout and Stderr, Final). Status is never read as the exit.
//   - Spawn failure and rejected permission: `completed` with no rawOutput
//     and no content. Nothing here implies success, so the exit stays
//     unknown; a rejection known from the ask flow is the session's.
//   - Tool call ids may hold a newline; they are kept exactly as sent.
//   - Its permission ask names the real target (`Fetch https://...`) under
//     a different tool call id than the call, with the reason as text
//     content. Permission() reports the ask as it is: the reason, the shell
//     flag only for kind execute (an ask of another kind does not say the
//     call is not a shell), and a command only from a backticked title. The
//     session merges it into the open call. Its ask's toolCall may carry
//     nothing but a backticked title (no rawInput): that title never
//     replaces the command the tool_call gave.
type cursor struct{}

func init() { register(cursor{}) }

func (cursor) Info() Info {
	return Info{
		Name:               "cursor",
		AgentNames:         []string{"cursor-agent", "cursor"},
		AuthMethodIDs:      []string{"cursor_login"},
		MethodPrefixes:     []string{"cursor/"},
		ShapeRule:          "an opening tool_call of kind execute, status pending, whose title is exactly its rawInput.command in backticks, with rawInput holding nothing but that command and no terminal content or _meta",
		Summary:            "Cursor agent: command from rawInput or backticked title, final rawOutput {exitCode, stdout, stderr} even for nonzero exits; no rawOutput means exit unknown.",
		ClientCapabilities: richCapabilities,
	}
}

// cursorInput is Cursor's shell `rawInput`.
type cursorInput struct {
	Command          CommandLine `json:"command"`
	Cwd              Str         `json:"cwd"`
	WorkingDirectory Str         `json:"working_directory"`
}

// cursorOutput is Cursor's final `rawOutput`.
type cursorOutput struct {
	ExitCode      Code `json:"exitCode"`
	ExitCodeSnake Code `json:"exit_code"`
	Stdout        Str  `json:"stdout"`
	Stderr        Str  `json:"stderr"`
}

// cursorCall is a tool call frame of Cursor.
type cursorCall struct {
	ToolCall
	RawInput  *cursorInput  `json:"rawInput"`
	RawOutput *cursorOutput `json:"rawOutput"`
}

func (cursor) read(msg []byte, scope string) (Frame, error) {
	return readFrame(msg, scope, observeCursor, askCursor)
}

func observeCursor(u *cursorCall) []accum.Observation {
	if u.SessionUpdate != "tool_call" && u.SessionUpdate != "tool_call_update" {
		return nil
	}
	o := u.Base()
	cursorInputs(&o, u)
	if o.Shell == accum.ShellNo {
		return []accum.Observation{o}
	}
	ended := o.Status.Ended()
	if out := u.RawOutput; out != nil {
		if e := firstKnown(out.ExitCode, out.ExitCodeSnake).Exit(accum.ExitStructured, ended); e != nil {
			o.Exit = e
		}
		for _, s := range []struct {
			stream accum.Stream
			text   Str
		}{{accum.Stdout, out.Stdout}, {accum.Stderr, out.Stderr}} {
			if s.text.Set && (ended || s.text.S != "") {
				o.Texts = append(o.Texts, accum.Text{Stream: s.stream, Kind: textKind(ended), Text: s.text.S})
			}
		}
	} else if text, ok := u.Texts(); ok && ended && text != "" {
		// Not seen from Cursor: a final with content and no rawOutput is
		// read as the combined output, fence removed.
		if t, fenced := StripFence(text); fenced {
			text = t
		}
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: text})
	}
	if o.Status == accum.StatusFailed && o.Exit == nil {
		o.Failed = true
	}
	return []accum.Observation{o}
}

func askCursor(u *cursorCall) accum.Observation {
	o := u.askBase()
	if o.Shell == accum.ShellNo {
		o.Shell = accum.ShellUnknown
	}
	cursorInputs(&o, u)
	o.ApprovalReason = u.askReason()
	return o
}

// cursorInputs reads command and cwd.
func cursorInputs(o *accum.Observation, u *cursorCall) {
	if in := u.RawInput; in != nil {
		if in.Command.Line != "" {
			o.Command = in.Command.Line
			if o.Shell == accum.ShellUnknown {
				o.Shell = accum.ShellYes
			}
		}
		for _, c := range []Str{in.Cwd, in.WorkingDirectory} {
			if c.Set && c.S != "" {
				o.Cwd = c.S
				break
			}
		}
	}
	if o.Command == "" && u.Title != nil && o.Shell != accum.ShellNo {
		if cmd, ok := backticked(*u.Title); ok {
			o.Command, o.CommandFromTitle = cmd, true
			if u.Kind != nil && *u.Kind == "execute" {
				o.Shell = accum.ShellYes
			}
		}
	}
}

// matchesShape is Cursor's ShapeRule: `cursor-agent acp` sends no
// agentInfo, and no other agent this package knows titles a shell call
// with nothing but its command in backticks.
func (cursor) matchesShape(u *shellUpdate, _ []byte) bool {
	if u.SessionUpdate != "tool_call" || u.Kind == nil || *u.Kind != "execute" || u.Status == nil || *u.Status != "pending" ||
		u.Title == nil || u.Meta != nil || u.TerminalContent() != "" || u.RawOutput.Fields != nil || u.RawOutput.Text.Set {
		return false
	}
	in := u.RawInput
	if in.Cwd.Set || in.Description.Set || in.Command.Line == "" {
		return false
	}
	return *u.Title == "`"+in.Command.Line+"`"
}

// backticked returns s without the one pair of backticks around it.
func backticked(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if len(t) < 2 || t[0] != '`' || t[len(t)-1] != '`' {
		return "", false
	}
	inner := t[1 : len(t)-1]
	if strings.TrimSpace(inner) == "" {
		return "", false
	}
	return inner, true
}
