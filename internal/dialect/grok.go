package dialect

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// grok reads Grok Build (`@xai-official/grok`, `grok agent stdio`), tool
// `run_terminal_command`. Grok Build 1.0.41 sends no `agentInfo`: it is
// detected by its `xai.api_key` auth method and its `_x.ai/` vendor
// methods.
//
// What it sends (recorded from 1.0.41), and what it means here:
//   - `tool_call` with NO kind and no status, title "run_terminal_command"
//     (the tool, never the command), `rawInput {command, description,
//     timeout? (ms)}` (the update adds `variant: "Bash"` and `is_background`,
//     true when the model starts it in the background: Background) and
//     `_meta["x.ai/tool"] = {"name":
//     "run_terminal_command", "kind": "execute"}`: the side channel makes it
//     a shell call on this very first frame, so the session opens one call,
//     never a generic one and then a second.
//   - A status-less update sets kind `execute`, title "Execute `<cmd>`"
//     and puts the DESCRIPTION in content: read as the description, never
//     output.
//   - Live `in_progress` updates each carry the WHOLE output so far twice:
//     as content text and as `rawOutput {type: "Bash", output: [bytes],
//     output_for_prompt, exit_code: 0, signal: null, timed_out, truncated,
//     total_bytes}`. Exactly one source is used per frame, or text would be
//     doubled: the bytes (raw; a UTF-8 character cut between two reads shows
//     as U+FFFD in one snapshot, which the next snapshot replaces), else the
//     content text, else `output_delta` (a Delta). Past 10,000 bytes the
//     live bytes are only the LAST 10,000 (`truncated: true`): a Window,
//     Truncated, of the `total_bytes` Grok states. `exit_code` is 0 while
//     running: a PLACEHOLDER.
//   - Final `completed` for every exit code, `rawOutput` as above with the
//     real `exit_code` and `output_for_prompt: "exit: N\n<output>"`; that
//     first line is metadata, never output (the exit code when no
//     structured one is sent). A big output's final holds the first and
//     last 10,000 bytes joined by "\n\n... (output truncated) ...\n\n",
//     its exit line adds "[truncated: showing first/last 19.6 KB of 340.7
//     KB - full output at: F]": only the part after the marker is read
//     (a Window that the live tail already holds), Truncated, with
//     total_bytes as the real size.
//   - A command killed by a signal: `failed`, `exit_code: -1`, `signal:
//     "signal 9"`, exit line "exit: killed (signal 9)". -1 is Grok's "no
//     exit code" (never an exit status); the signal is SIGKILL.
//   - A command past its timeout is moved to the background, not stopped:
//     `completed`, title "[bg] <cmd> (<id>)", content and
//     `rawOutput.summary` the notice "... has been automatically moved to
//     background ... Process is still running." and `rawOutput {type:
//     "BackgroundTaskStarted", status: "running", pid}`. That notice is not
//     output; the call is Background, TimedOut stays false (nothing was
//     stopped) and, with no exit code, its outcome is UNKNOWN: it is still
//     running. When Grok later reports the task's end
//     (`_x.ai/task_completed`, `task_snapshot {task_id: <the tool call
//     id>, exit_code, signal, output, truncated, output_total_bytes}`;
//     for a command the model put in the background itself, `task_id` is
//     an id of Grok's, given in the BackgroundTaskStarted rawOutput,
//     which the call shows as its terminal id),
//     that is the command's real result: it resolves the UNKNOWN outcome
//     (accum lets late evidence resolve an unknown outcome, never change a
//     known one). Late `in_progress` snapshots of a backgrounded call carry
//     its real output.
//   - A rejection: `failed`, no rawOutput, content "User rejected the
//     execution for tool `run_terminal_command`": Cancelled with the
//     notice; any other `failed` without rawOutput is Failed. Neither text
//     is output. A cancelled call gets no final frame (the session's
//     cancel handling ends it).
//   - `session/load` replays one `tool_call` per call with its final state
//     (status, content, rawOutput); a cancelled call is not replayed.
type grok struct{}

func init() { register(grok{}) }

func (grok) Info() Info {
	return Info{
		Name:               "grok",
		AgentNames:         []string{"grok", "grok-cli", "grok-build", "@xai-official/grok"},
		AuthMethodIDs:      []string{"xai.api_key"},
		MethodPrefixes:     []string{"_x.ai/"},
		Summary:            "Grok Build run_terminal_command: shell from _meta x.ai/tool on the first frame, description content, cumulative byte-array snapshots (a 10 KB tail window past that), placeholder exit_code, final exit_code/signal/truncated, background tasks and their _x.ai/task_completed result.",
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
	// IsBackground is the model asking to start the command in the
	// background.
	IsBackground *bool `json:"is_background"`
}

// grokOutput is `rawOutput`, live and final.
type grokOutput struct {
	Type        Str      `json:"type"`
	TaskID      Str      `json:"task_id"`
	Output      rawBytes `json:"output"`
	OutputDelta rawBytes `json:"output_delta"`
	// OutputForPrompt repeats the output for the model, and is read only
	// on an ending frame or when no other output stands for it: it is
	// unquoted only then.
	OutputForPrompt rawText `json:"output_for_prompt"`
	ExitCode        Code    `json:"exit_code"`
	Signal          Str     `json:"signal"`
	TimedOut        *bool   `json:"timed_out"`
	Truncated       *bool   `json:"truncated"`
	TotalBytes      Code    `json:"total_bytes"`
	CurrentDir      Str     `json:"current_dir"`
}

// grokMeta is the `_meta` of a Grok tool call.
type grokMeta struct {
	Tool *struct {
		Name Str `json:"name"`
		Kind Str `json:"kind"`
	} `json:"x.ai/tool"`
}

// grokTask is the `task_snapshot` of a `task_completed` update.
type grokTask struct {
	TaskID           Str   `json:"task_id"`
	ExitCode         Code  `json:"exit_code"`
	Signal           Str   `json:"signal"`
	Output           Str   `json:"output"`
	Truncated        *bool `json:"truncated"`
	OutputTotalBytes Code  `json:"output_total_bytes"`
	Completed        *bool `json:"completed"`
}

// grokCall is a tool call frame of Grok (or, for `_x.ai/` methods, the
// update of a task notification).
type grokCall struct {
	ToolCall
	RawInput     *grokInput  `json:"rawInput"`
	RawOutput    *grokOutput `json:"rawOutput"`
	Meta         *grokMeta   `json:"_meta"`
	TaskSnapshot *grokTask   `json:"task_snapshot"`
}

func (grok) read(msg []byte, scope string) (Frame, error) {
	return readFrame(msg, scope, observeGrok, askGrok)
}

// observeUnder reads an update under an `_x.ai/...` method
// (methodUpdates) whose kind is `task_completed`: the end of a command
// Grok had moved to the background. It names the call by its task id and
// says nothing about shell-ness, so a task that is not a known call opens
// nothing that is reported.
func (u *grokCall) observeUnder(method string) []accum.Observation {
	if signOfMethod(method) != "grok" {
		return nil
	}
	t := u.TaskSnapshot
	if u.SessionUpdate != "task_completed" || t == nil || t.TaskID.S == "" || (t.Completed != nil && !*t.Completed) {
		return nil
	}
	// The task id is the tool call's id when Grok moved the command to
	// the background at its timeout, and an id of its own when the model
	// asked for the background; then the call showed it as its terminal
	// (see observeGrok), by which the session finds the call.
	o := accum.Observation{ToolCallID: t.TaskID.S}
	if e := t.ExitCode.Exit(accum.ExitStructured, true); e != nil && e.Code != -1 {
		o.Exit = e
	}
	if sig := grokSignal(t.Signal.S); sig != "" {
		o.Signal = sig
	} else {
		// A task the model killed (explicitly_killed) says signal
		// "killed", naming no signal: it did not end by itself.
		applyVerdict(&o, t.Signal.S)
	}
	truncated := t.Truncated != nil && *t.Truncated
	if t.Output.Set {
		txt := accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: t.Output.S}
		if truncated {
			_, tail := grokCutMarker(t.Output.S)
			txt = accum.Text{Stream: accum.Combined, Kind: accum.Window, Text: tail, Truncated: true}
		}
		if n := t.OutputTotalBytes; n.Known && truncated && int(n.Value) > len(t.Output.S) {
			txt.TotalBytes = int64(n.Value)
		}
		o.Texts = append(o.Texts, txt)
	}
	return []accum.Observation{o}
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
	if out != nil && out.Type.S == "BackgroundTaskStarted" {
		// Moved to (or started in) the background: the content and the
		// summary are Grok's notice, not output; the command goes on. A
		// task id other than the call's names the command from now on
		// (its task_completed), as a terminal id would.
		o.Background = true
		if id := out.TaskID.S; id != "" && id != o.ToolCallID {
			o.TerminalID = id
		}
		return []accum.Observation{o}
	}
	if out == nil {
		grokNoOutput(&o, u)
		return []accum.Observation{o}
	}
	// The content text is the whole output again: it is unquoted only when
	// the byte array is missing.
	text, hasText := "", false
	if !out.Output.Set {
		text, hasText = u.Texts()
	}
	grokOutputs(&o, out, text, hasText && !(o.Opens && !o.Status.Ended()))
	return []accum.Observation{o}
}

// grokNoOutput reads a frame without rawOutput: the status-less update
// that names the command (its content is the description), a rejection or
// tool error (`failed`: its content is Grok's notice), or a frame whose
// content is the output (older builds).
func grokNoOutput(o *accum.Observation, u *grokCall) {
	text, hasText := u.Texts()
	switch {
	case o.Status == accum.StatusNone:
		if hasText && o.Description == "" {
			o.Description = strings.TrimSpace(text)
		}
	case o.Status == accum.StatusFailed:
		if grokRejected.MatchString(text) {
			o.Cancelled, o.CancelNotice = true, notice(text)
		} else {
			o.Failed = true
		}
	case hasText && !(o.Opens && !o.Status.Ended()):
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: textKind(o.Status.Ended()), Text: text})
	}
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
	grokTitle = regexp.MustCompile("(?s)^\\s*Execute `(.*)`\\s*$")
	// grokRejected is Grok's refusal of a call the user rejected (or that
	// was cancelled before it ran); it is matched only on a `failed` frame
	// without rawOutput, where no command output can be.
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
		if in.IsBackground != nil && *in.IsBackground {
			o.Background = true
		}
	}
	if o.Command == "" && u.Title != nil {
		if m := grokTitle.FindStringSubmatch(*u.Title); m != nil {
			o.Command, o.CommandFromTitle = m[1], true
			if o.Shell == accum.ShellUnknown {
				o.Shell = accum.ShellYes
			}
		}
	}
	if out := u.RawOutput; out != nil && out.CurrentDir.Set && out.CurrentDir.S != "" {
		o.Cwd = out.CurrentDir.S
	}
}

// maxExitLine is how much of output_for_prompt is decoded to read the
// exit line at its head when the output comes from elsewhere: an exit
// line longer than that (as sent) has the whole prompt decoded.
const maxExitLine = 512

var (
	// grokExitLine is the first line of output_for_prompt on a final
	// frame: "exit: 3", "exit: killed (signal 9)", "exit: 0 [truncated:
	// ...]".
	grokExitLine = regexp.MustCompile(`^exit: ?([^\n\[]*?) *(\[truncated:[^\n]*\])?\r?(?:\n|$)`)
	// grokSignalText is a signal as Grok writes it: "signal 9", "killed
	// (signal 9)", "SIGKILL", "9".
	grokSignalText = regexp.MustCompile(`(?i)^(?:killed\s*\(\s*)?(?:signal\s*:?\s*)?(SIG[A-Z0-9+-]+|[A-Z][A-Z0-9]*|\d{1,3})\s*\)?$`)
)

// grokSignalNames are the bare signal names (without SIG) read as signals.
var grokSignalNames = map[string]bool{
	"HUP": true, "INT": true, "QUIT": true, "ILL": true, "TRAP": true, "ABRT": true, "BUS": true, "FPE": true,
	"KILL": true, "USR1": true, "SEGV": true, "USR2": true, "PIPE": true, "ALRM": true, "TERM": true, "XCPU": true, "XFSZ": true,
}

// grokTruncMarker joins the head and the tail of a big final output.
const grokTruncMarker = "\n\n... (output truncated) ...\n\n"

// grokCutMarker splits a head+tail output at Grok's marker; without it
// the whole text is the tail.
func grokCutMarker(s string) (head, tail string) {
	if i := lastMarkerString(s); i >= 0 {
		return s[:i], s[i+len(grokTruncMarker):]
	}
	return "", s
}

// lastMarker is bytes.LastIndex(out, grokTruncMarker), found by forward
// searches for the marker from its '(' on: output has few of them, so the
// search runs at memchr speed where LastIndex's backward hash reads every
// byte (30 to 70 times faster on 100 KiB of output without parentheses,
// as fast on one with a '(' on every line). Each occurrence of the marker
// has its own '(', so every one is met, the last one last.
// TestLastMarkerIsLastIndex holds it to LastIndex.
func lastMarker(out []byte) int {
	return lastMarkerIn(out, func(b []byte) int { return bytes.Index(b, grokMarkerTail) })
}

// lastMarkerString is lastMarker of a string.
func lastMarkerString(out string) int {
	return lastMarkerIn(out, func(s string) int { return strings.Index(s, grokTruncMarker[grokMarkerHead:]) })
}

// lastMarkerIn is lastMarker over bytes or a string, with tail the
// forward search for the marker's tail (from its '(') in that type.
func lastMarkerIn[T string | []byte](out T, tail func(T) int) int {
	last := -1
	for from := grokMarkerHead; from <= len(out); {
		i := tail(out[from:])
		if i < 0 {
			return last
		}
		i += from
		if string(out[i-grokMarkerHead:i]) == grokTruncMarker[:grokMarkerHead] {
			last = i - grokMarkerHead
		}
		from = i + 1
	}
	return last
}

// grokMarkerHead is where the '(' of grokTruncMarker is; grokMarkerTail is
// the marker from there.
const grokMarkerHead = len("\n\n... ")

var grokMarkerTail = []byte(grokTruncMarker[grokMarkerHead:])

// grokSignal reads a signal as Grok writes it ("" for none).
func grokSignal(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "null") || strings.EqualFold(s, "none") {
		return ""
	}
	m := grokSignalText.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	w := strings.ToUpper(m[1])
	if w[0] >= '0' && w[0] <= '9' || strings.HasPrefix(w, "SIG") || grokSignalNames[w] {
		return NormalizeSignal(w)
	}
	return ""
}

// grokOutputs reads the output and exit evidence of a frame with a Bash
// rawOutput. useText says whether the content text may stand for the
// output (there are no bytes).
func grokOutputs(o *accum.Observation, out *grokOutput, text string, useText bool) {
	ended := o.Status.Ended()
	truncated := out.Truncated != nil && *out.Truncated
	if e := out.ExitCode.Exit(accum.ExitStructured, ended); e != nil {
		o.Exit = e
	}
	if ended {
		if sig := grokSignal(out.Signal.S); sig != "" {
			o.Signal = sig
		} else if out.Signal.Set && out.Signal.S != "" {
			o.Verdict = accum.VerdictFailed // a signal Grok names oddly
		}
		if out.TimedOut != nil && *out.TimedOut {
			o.TimedOut = true
		}
	}
	// The literal was validated by the decoder: it is a string, and
	// unquotes, exactly when it is there.
	hasPrompt := len(out.OutputForPrompt.lit) > 0
	// Of an ending frame whose output is the bytes or the content text,
	// only an exit line at the head of output_for_prompt is read: a
	// prompt that does not start with "exit:" is not decoded.
	exitLine := hasPrompt && ended && out.OutputForPrompt.HasPrefix("exit:")
	var prompt string
	switch {
	case hasPrompt && !out.Output.Set && !useText: // it stands for the output
		prompt = out.OutputForPrompt.Str().S
	case exitLine:
		// Only the exit line is read: decoded alone when it is short
		// (the prompt can hold the whole output after it).
		var ok bool
		if prompt, ok = out.OutputForPrompt.firstLine(maxExitLine); !ok {
			prompt = out.OutputForPrompt.Str().S
		}
	}
	if exitLine {
		grokExitLineIn(o, &prompt, &truncated)
	}
	if ended && o.Exit != nil && o.Exit.Code == -1 {
		// Grok's "no exit code" (a killed process): not an exit status.
		o.Exit = nil
		if o.Signal == "" && !o.Cancelled {
			o.Failed = true
		}
	}
	var total int64
	if n := out.TotalBytes; truncated && n.Known && n.Value > 0 {
		total = int64(n.Value)
	}
	t := accum.Text{Stream: accum.Combined, Kind: textKind(ended), Truncated: truncated, TotalBytes: total}
	switch {
	case out.Output.Set:
		t.Bytes = out.Output.B
	case useText:
		t.Text = text
	case hasPrompt && (ended || prompt != ""):
		t.Text = prompt
	case out.OutputDelta.Set && !ended && len(out.OutputDelta.B) > 0:
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Delta, Bytes: out.OutputDelta.B, Truncated: truncated, TotalBytes: total})
		return
	case truncated:
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Delta, Truncated: true, TotalBytes: total})
		return
	default:
		return
	}
	if truncated {
		// Only a part of the output: the live tail, or the head and the
		// tail of the final joined by a marker, of which the tail is kept.
		// A Window never replaces the fuller text held before.
		t.Kind = accum.Window
		if t.Bytes != nil {
			if i := lastMarker(t.Bytes); i >= 0 {
				t.Bytes = t.Bytes[i+len(grokTruncMarker):]
			}
		} else {
			_, t.Text = grokCutMarker(t.Text)
		}
	}
	o.Texts = append(o.Texts, t)
}

// grokExitLineIn reads the exit line at the head of an ending frame's
// output_for_prompt (grokExitLine): the exit code or signal it names, and
// whether it says the output was truncated; the prompt is cut after it.
func grokExitLineIn(o *accum.Observation, prompt *string, truncated *bool) {
	m := grokExitLine.FindStringSubmatchIndex(*prompt)
	if m == nil {
		return
	}
	word := trimBlank((*prompt)[m[2]:m[3]])
	if c := CodeFromString(word); c.Known {
		o.Exit = accum.StrongerExit(o.Exit, c.Exit(accum.ExitText, true))
	} else if sig := grokSignal(word); sig != "" && o.Signal == "" {
		o.Signal = sig
	}
	if m[4] >= 0 {
		*truncated = true
	}
	*prompt = (*prompt)[m[1]:]
}

// rawBytes is output as raw bytes: a JSON array of byte values (the usual
// form), or a string (its UTF-8 bytes). Anything else, including an array
// with a value that is not a byte, leaves it unset. B is never nil when
// Set.
type rawBytes struct {
	B   []byte
	Set bool
}

// TakeLit implements jsonlit.LitTaker: an array the elided decode took
// out of the frame, decoded.
func (r *rawBytes) TakeLit(l *jsonlit.Lit) bool {
	if l.Bytes == nil {
		return false
	}
	*r = rawBytes{B: l.Bytes, Set: true}
	return true
}

// UnmarshalJSONFast implements jsonlit.FastUnmarshaler: UnmarshalJSON in
// the fast decoder's pass, an array of plain byte values (FuzzRawBytes
// holds UnmarshalJSON to DecodeByteArray on them) or a string decoded
// where the decoder validates it; any other array read by UnmarshalJSON
// from the bytes the decoder validated.
func (r *rawBytes) UnmarshalJSONFast(d *jsonlit.Dec) bool {
	switch d.Kind() {
	case '[':
		if out, ok := d.ByteArray(); ok {
			*r = rawBytes{B: out, Set: true}
			return true
		}
	case '"':
		s, ok := d.Str()
		*r = rawBytes{B: []byte(s), Set: true}
		return ok
	}
	v, ok := d.Value()
	if ok {
		r.UnmarshalJSON(v)
	}
	return ok
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
		i := jsonlit.SkipSpace(b, 1)
		if i < len(b) && b[i] == ']' {
			r.B, r.Set = out, true
			return nil
		}
		for {
			i = jsonlit.SkipSpace(b, i)
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
			i = jsonlit.SkipSpace(b, i)
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
