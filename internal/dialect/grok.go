package dialect

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// grok reads `grok agent stdio` (xAI Grok CLI), tool `run_terminal_command`.
//
// What it sends, and what it means here:
//   - `tool_call` with NO kind and no status, title "run_terminal_command"
//     (the tool, never the command), `rawInput {command, description,
//     timeout?}` and `_meta["x.ai/tool"] = {"name":"run_terminal_command",
//     "kind":"execute"}`: the side channel makes it a shell call on this very
//     first frame, so the session opens one call, never a generic one and
//     then a second.
//   - A status-less update sets kind `execute`, title "Execute `<cmd>`"
//     and puts the DESCRIPTION in content: read as the description, never
//     output.
//   - Live `in_progress` updates (about ten a second) each carry the WHOLE
//     output so far twice: as content text and as `rawOutput.output`, a
//     byte array. Exactly one source is used per frame, or text would be
//     doubled: the bytes (a Snapshot of raw bytes; they may hold invalid
//     UTF-8), else the content text (a Snapshot), else
//     `rawOutput.output_delta` (a Delta of raw bytes). `exit_code` is 0
//     while running: a PLACEHOLDER, real only on the frame that ends the
//     call.
//   - Final `completed` even for a nonzero exit: `rawOutput {exit_code
//     (structured), signal (string|null → Signal), timed_out (→ TimedOut),
//     truncated (→ Truncated), total_bytes, output: [bytes],
//     output_for_prompt: "exit: N\n<output>"}`. The output is the bytes,
//     else the content (stdout, CRLF on some hosts), else output_for_prompt
//     without its first line. That `exit: N` line is metadata, never output;
//     it is the exit code when no structured one is sent (ExitText).
//   - `failed` with content "User rejected the execution for tool
//     `run_terminal_command`" is a rejection or cancellation: Cancelled; any
//     other `failed` is Failed. That text is the agent's, not output.
//   - `_x.ai/session/update` notifications are another method: never read.
type grok struct{}

func init() { register(grok{}) }

func (grok) Info() Info {
	return Info{
		Name:               "grok",
		AgentNames:         []string{"grok", "grok-cli"},
		Summary:            "Grok run_terminal_command: shell from _meta x.ai/tool on the first frame, description content, cumulative byte-array output snapshots, placeholder exit_code, final exit_code/signal/timed_out/truncated.",
		ClientCapabilities: richCapabilities,
	}
}

// grokTool is the `run_terminal_command` tool name.
const grokTool = "run_terminal_command"

// grokInput is `rawInput` of run_terminal_command.
type grokInput struct {
	Command     CommandLine `json:"command"`
	Description Str         `json:"description"`
	Cwd         Str         `json:"cwd"`
}

// grokOutput is `rawOutput`, live and final.
type grokOutput struct {
	Output          rawBytes `json:"output"`
	OutputDelta     rawBytes `json:"output_delta"`
	OutputForPrompt Str      `json:"output_for_prompt"`
	ExitCode        Code     `json:"exit_code"`
	Signal          Str      `json:"signal"`
	TimedOut        *bool    `json:"timed_out"`
	Truncated       *bool    `json:"truncated"`
	CurrentDir      Str      `json:"current_dir"`
}

// grokMeta is the `_meta` of a Grok tool call.
type grokMeta struct {
	Tool *struct {
		Name Str `json:"name"`
		Kind Str `json:"kind"`
	} `json:"x.ai/tool"`
}

// grokCall is a tool call frame of Grok.
type grokCall struct {
	ToolCall
	RawInput  *grokInput  `json:"rawInput"`
	RawOutput *grokOutput `json:"rawOutput"`
	Meta      *grokMeta   `json:"_meta"`
}

func (grok) read(msg []byte) (Frame, error) {
	return readFrame(msg, observeGrok, askGrok)
}

func observeGrok(u *grokCall) []accum.Observation {
	if u.SessionUpdate != "tool_call" && u.SessionUpdate != "tool_call_update" {
		return nil
	}
	o := u.Base()
	grokInputs(&o, u)
	if o.Shell == accum.ShellNo {
		return []accum.Observation{o}
	}
	out := u.RawOutput
	// The content text is the whole output again when the byte array is
	// there: unquote it only when it may be read.
	text, hasText := "", u.HasTexts()
	if out == nil || !out.Output.Set || o.Status == accum.StatusFailed {
		text, hasText = u.Texts()
	}
	switch {
	case o.Status == accum.StatusNone && out == nil:
		// The status-less update that names the command: its content is
		// the description.
		if hasText && o.Description == "" {
			o.Description = strings.TrimSpace(text)
		}
	case o.Status == accum.StatusFailed:
		if grokRejected.MatchString(text) {
			o.Cancelled, o.CancelNotice = true, notice(text)
		} else {
			o.Failed = true
		}
		if out != nil {
			grokOutputs(&o, out, "", false)
		}
	case o.Status.Ended():
		grokOutputs(&o, out, text, hasText)
	default:
		grokOutputs(&o, out, text, hasText && !o.Opens)
	}
	return []accum.Observation{o}
}

func askGrok(u *grokCall) accum.Observation {
	o := u.askBase()
	grokInputs(&o, u)
	if t := u.askReason(); t != o.Description {
		o.ApprovalReason = t
	}
	return o
}

var (
	grokTitle    = regexp.MustCompile("(?s)^\\s*Execute `(.*)`\\s*$")
	grokRejected = regexp.MustCompile(`(?i)\buser rejected\b|\brejected the execution\b|\bcancell?ed\b|\binterrupted\b|\baborted\b`)
)

// grokInputs reads shell-ness, command, description and cwd.
func grokInputs(o *accum.Observation, u *grokCall) {
	if m := u.Meta; m != nil && m.Tool != nil {
		if m.Tool.Kind.S == "execute" || m.Tool.Name.S == grokTool {
			o.Shell = accum.ShellYes
		}
	}
	if u.Title != nil && strings.TrimSpace(*u.Title) == grokTool {
		o.Shell = accum.ShellYes
	}
	if in := u.RawInput; in != nil {
		if in.Command.Line != "" {
			o.Command = in.Command.Line
		}
		if in.Description.Set {
			o.Description = in.Description.S
		}
		if in.Cwd.Set && in.Cwd.S != "" {
			o.Cwd = in.Cwd.S
		}
	}
	if o.Command == "" && u.Title != nil {
		if m := grokTitle.FindStringSubmatch(*u.Title); m != nil {
			o.Command = m[1]
			if o.Shell == accum.ShellUnknown {
				o.Shell = accum.ShellYes
			}
		}
	}
	if out := u.RawOutput; out != nil && out.CurrentDir.Set && out.CurrentDir.S != "" {
		o.Cwd = out.CurrentDir.S
	}
}

var grokExitLine = regexp.MustCompile(`^exit: ?(\S*)\r?\n?`)

// grokOutputs reads the output and exit evidence of a live or final frame.
// useText says whether the content text may stand for the output.
func grokOutputs(o *accum.Observation, out *grokOutput, text string, useText bool) {
	ended := o.Status.Ended()
	kind := textKind(ended)
	truncated := false
	if out != nil {
		truncated = out.Truncated != nil && *out.Truncated
		if e := out.ExitCode.Exit(accum.ExitStructured, ended); e != nil {
			o.Exit = e
		}
		if ended {
			if out.Signal.Set && out.Signal.S != "" {
				o.Signal = NormalizeSignal(out.Signal.S)
			}
			if out.TimedOut != nil && *out.TimedOut {
				o.TimedOut = true
			}
		}
	}
	var prompt string
	var hasPrompt bool
	if out != nil && out.OutputForPrompt.Set {
		prompt, hasPrompt = out.OutputForPrompt.S, true
		if m := grokExitLine.FindStringSubmatchIndex(prompt); m != nil {
			if ended {
				if e := CodeFromString(prompt[m[2]:m[3]]).Exit(accum.ExitText, true); e != nil {
					o.Exit = accum.StrongerExit(o.Exit, e)
				}
			}
			prompt = prompt[m[1]:]
		}
	}
	switch {
	case out != nil && out.Output.Set:
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: kind, Bytes: out.Output.B, Truncated: truncated})
	case useText:
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: kind, Text: text, Truncated: truncated})
	case hasPrompt && (ended || prompt != ""):
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: kind, Text: prompt, Truncated: truncated})
	case out != nil && out.OutputDelta.Set && !ended && len(out.OutputDelta.B) > 0:
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Delta, Bytes: out.OutputDelta.B, Truncated: truncated})
	case truncated:
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Delta, Truncated: true})
	}
}

// rawBytes is output as raw bytes: a JSON array of byte values (the usual
// form), or a string (its UTF-8 bytes). Anything else, including an array
// with a value that is not a byte, leaves it unset. B is never nil when
// Set.
type rawBytes struct {
	B   []byte
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails. Arrays are
// read by hand: outputs of hundreds of kilobytes arrive ten times a second.
func (r *rawBytes) UnmarshalJSON(b []byte) error {
	*r = rawBytes{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '"':
		var s Str
		if s.UnmarshalJSON(b); s.Set {
			r.B, r.Set = []byte(s.S), true
		}
	case '[':
		out := make([]byte, 0, len(b)/3)
		i := skipSpace(b, 1)
		if i < len(b) && b[i] == ']' {
			r.B, r.Set = out, true
			return nil
		}
		for {
			i = skipSpace(b, i)
			n, digits := 0, 0
			for i < len(b) && b[i] >= '0' && b[i] <= '9' && digits < 4 {
				n = n*10 + int(b[i]-'0')
				i++
				digits++
			}
			if digits == 0 || n > 255 {
				return nil
			}
			if i < len(b) && b[i] == '.' { // 10.0: integral floats
				i++
				for i < len(b) && b[i] == '0' {
					i++
				}
			}
			out = append(out, byte(n))
			i = skipSpace(b, i)
			if i >= len(b) {
				return nil
			}
			if b[i] == ']' {
				r.B, r.Set = out, true
				return nil
			}
			if b[i] != ',' {
				return nil
			}
			i++
		}
	}
	return nil
}
