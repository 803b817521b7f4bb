package dialect

import (
	"bytes"
	"encoding/base64"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// generic reads plain ACP v1 tool calls, the `_meta` terminal convention
// and the ACP v2 draft terminal updates. It is the fallback for agents no
// other dialect claims, and its helpers are the building blocks of the
// vendor dialects:
//
//   - shellUpdate / readShellUpdate: a tool call frame with the common
//     rawInput, rawOutput and `_meta` shapes, decoded leniently in one pass;
//   - applyShellInput, applyContentOutput, applyShellOutput: the three
//     generic readings of a tool call, each usable on its own;
//   - readTerminalUpdate: the ACP v2 `terminal_update` and
//     `terminal_output_chunk` variants;
//   - readPermission / askObservation: a `session/request_permission`.
type generic struct{}

func init() { register(generic{}) }

func (generic) Info() Info {
	return Info{
		Name:               GenericName,
		Summary:            "Plain ACP tool calls, the _meta terminal convention (terminal_info/terminal_output/terminal_exit) and ACP v2 terminal_update/terminal_output_chunk.",
		ClientCapabilities: richCapabilities,
	}
}

// ShellInput is the common shape of a shell call's `rawInput`. Agents add
// siblings freely; only these are read.
type ShellInput struct {
	Command     CommandLine `json:"command"`
	Cwd         Str         `json:"cwd"`
	Description Str         `json:"description"`
	// Cmd is `rawInput.cmd`; the generic reading does not take it for the
	// command, it is only a sign (see the docker-agent dialect's ShapeRule).
	Cmd CommandLine `json:"cmd"`
}

// OutputMetadata is `rawOutput.metadata` as some agents send it.
type OutputMetadata struct {
	Exit     Code `json:"exit"`
	ExitCode Code `json:"exitCode"`
	Output   Str  `json:"output"`
}

// OutputFields are the common fields of an object `rawOutput`.
type OutputFields struct {
	ExitCode         Code            `json:"exit_code"`
	ExitCodeCamel    Code            `json:"exitCode"`
	Metadata         *OutputMetadata `json:"metadata"`
	Stdout           Str             `json:"stdout"`
	Stderr           Str             `json:"stderr"`
	Output           Str             `json:"output"`
	AggregatedOutput Str             `json:"aggregated_output"`
	FormattedOutput  Str             `json:"formatted_output"`
	Signal           Signal          `json:"signal"`
	TimedOut         *bool           `json:"timed_out"`
	TimedOutCamel    *bool           `json:"timedOut"`
	// Outcome is the agent's word for how the command ended.
	Outcome Str `json:"outcome"`
}

// ShellOutput is `rawOutput`, which agents send as a plain string or as an
// object. Other JSON types read as absent.
type ShellOutput struct {
	// Text is set when rawOutput is a JSON string.
	Text Str
	// Fields is set when rawOutput is a JSON object.
	Fields *OutputFields
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (s *ShellOutput) UnmarshalJSON(b []byte) error {
	*s = ShellOutput{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '"':
		return s.Text.UnmarshalJSON(b)
	case '{':
		s.Fields = new(OutputFields)
		s.Fields.read(b)
	}
	return nil
}

// read fills f from the members of the object b, as encoding/json would:
// a member of another JSON type leaves its field unset, or, for metadata
// and timed_out, allocated and empty.
func (f *OutputFields) read(b []byte) {
	jsonlit.EachMember(b, func(key string, val []byte) {
		switch key {
		case "EXIT_CODE":
			f.ExitCode = ParseCode(val)
		case "EXITCODE":
			f.ExitCodeCamel = ParseCode(val)
		case "STDOUT":
			f.Stdout.UnmarshalJSON(val)
		case "STDERR":
			f.Stderr.UnmarshalJSON(val)
		case "OUTPUT":
			f.Output.UnmarshalJSON(val)
		case "AGGREGATED_OUTPUT":
			f.AggregatedOutput.UnmarshalJSON(val)
		case "FORMATTED_OUTPUT":
			f.FormattedOutput.UnmarshalJSON(val)
		case "SIGNAL":
			f.Signal.UnmarshalJSON(val)
		case "OUTCOME":
			f.Outcome.UnmarshalJSON(val)
		case "TIMED_OUT":
			readBool(&f.TimedOut, val)
		case "TIMEDOUT":
			readBool(&f.TimedOutCamel, val)
		case "METADATA":
			if isNull(val) {
				f.Metadata = nil
				break
			}
			if f.Metadata == nil {
				f.Metadata = new(OutputMetadata)
			}
			m := f.Metadata
			jsonlit.EachMember(val, func(key string, val []byte) {
				switch key {
				case "EXIT":
					m.Exit = ParseCode(val)
				case "EXITCODE":
					m.ExitCode = ParseCode(val)
				case "OUTPUT":
					m.Output.UnmarshalJSON(val)
				}
			})
		}
	})
}

// readBool reads a *bool member as encoding/json does: null clears it, a
// boolean sets it, another type leaves it allocated and unchanged.
func readBool(dst **bool, val []byte) {
	switch {
	case isNull(val):
		*dst = nil
	case string(val) == "true" || string(val) == "false":
		t := string(val) == "true"
		*dst = &t
	case *dst == nil:
		*dst = new(bool)
	}
}

// Exit returns the structured exit code of an object rawOutput: exit_code,
// exitCode, metadata.exit, metadata.exitCode, first known wins.
func (f *OutputFields) Exit() Code {
	c, _ := f.exitField()
	return c
}

// exitField is Exit and the field it was read from.
func (f *OutputFields) exitField() (Code, string) {
	var m OutputMetadata
	if f.Metadata != nil {
		m = *f.Metadata
	}
	for i, c := range [...]Code{f.ExitCode, f.ExitCodeCamel, m.Exit, m.ExitCode} {
		if c.Known {
			return c, [...]string{"rawOutput.exit_code", "rawOutput.exitCode", "rawOutput.metadata.exit", "rawOutput.metadata.exitCode"}[i]
		}
	}
	return Code{}, ""
}

// Combined returns the combined output of an object rawOutput:
// aggregated_output, output, formatted_output, metadata.output, first
// present wins (formatted_output comes late because writers abbreviate it).
func (f *OutputFields) Combined() (string, bool) {
	s, _, ok := f.combinedField()
	return s, ok
}

// combinedField is Combined and the field it was read from.
func (f *OutputFields) combinedField() (string, string, bool) {
	for i, s := range [...]Str{f.AggregatedOutput, f.Output, f.FormattedOutput} {
		if s.Set {
			return s.S, [...]string{"rawOutput.aggregated_output", "rawOutput.output", "rawOutput.formatted_output"}[i], true
		}
	}
	if f.Metadata != nil && f.Metadata.Output.Set {
		return f.Metadata.Output.S, "rawOutput.metadata.output", true
	}
	return "", "", false
}

// shellUpdate is a `tool_call` / `tool_call_update` (or a permission ask's
// `toolCall`) with the common typed rawInput, rawOutput and `_meta`.
type shellUpdate struct {
	ToolCall
	RawInput  ShellInput    `json:"rawInput"`
	RawOutput ShellOutput   `json:"rawOutput"`
	Meta      *TerminalMeta `json:"_meta"`
}

// read is readFrame with observeGeneric; it also notes an opening tool
// call whose shape identifies an agent that gave no name (Frame.Sign), as
// only the generic dialect reads such agents.
func (generic) read(msg []byte, scope string) (Frame, error) {
	sign := ""
	f, err := readFrame(msg, scope, func(u *shellUpdate) []accum.Observation {
		if u.SessionUpdate == "tool_call" {
			sign = signOfShape(u, msg)
		}
		return observeGeneric(u)
	}, askGeneric)
	if err == nil && f.Sign == "" {
		f.Sign = sign
	}
	return f, err
}

func observeGeneric(u *shellUpdate) []accum.Observation {
	switch u.SessionUpdate {
	case "tool_call", "tool_call_update":
		return []accum.Observation{readShellUpdate(u)}
	case "terminal_update", "terminal_output_chunk":
		if o, ok := readTerminalUpdate(&u.ToolCall); ok {
			return []accum.Observation{o}
		}
	}
	return nil
}

// readShellUpdate is the whole generic reading of a tool call frame.
func readShellUpdate(u *shellUpdate) accum.Observation {
	o := u.Base()
	u.Meta.ApplyTerminalMeta(&o)
	applyShellInput(&o, &u.ToolCall, &u.RawInput)
	applyContentOutput(&o, &u.ToolCall, &u.RawInput)
	applyShellOutput(&o, &u.RawOutput)
	return o
}

// applyShellInput reads the command, cwd and description from rawInput.
// A rawInput command makes the call a shell call unless its kind says it is
// an edit, move, delete, fetch or the like (agents classify read-only shell
// commands as read or search). The title is the command only for kind
// execute and only when rawInput has none.
func applyShellInput(o *accum.Observation, tc *ToolCall, in *ShellInput) {
	if in.Command.Line != "" {
		o.Command, o.Src.Command = in.Command.Line, "rawInput.command"
		if o.Shell == accum.ShellUnknown || isReadKind(tc.Kind) {
			o.Shell = accum.ShellYes
		}
	} else if tc.Kind != nil && *tc.Kind == "execute" && tc.Title != nil {
		o.Command, o.Src.Command = strings.TrimSpace(*tc.Title), "title"
	}
	if in.Cwd.Set && in.Cwd.S != "" && o.Cwd == "" {
		o.Cwd, o.Src.Cwd = in.Cwd.S, "rawInput.cwd"
	}
	if in.Description.Set {
		o.Description = in.Description.S
	}
}

func isReadKind(k *string) bool {
	return k != nil && (*k == "read" || *k == "search")
}

// applyContentOutput reads the text content of a shell call that has no
// terminal as its output: the whole output so far (a Snapshot), or the
// Final output on a frame that ends the call. One Markdown fence around it
// is removed. Not output: the content of the opening `tool_call` frame
// while the call has not ended (agents put the description or a banner
// there), text equal to the description or the command, and anything on a
// call known not to be a shell.
func applyContentOutput(o *accum.Observation, tc *ToolCall, in *ShellInput) {
	if o.Shell == accum.ShellNo || o.TerminalID != "" || tc.TerminalContent() != "" {
		return
	}
	text, ok := tc.Texts()
	if !ok || (o.Opens && !o.Status.Ended()) {
		return
	}
	if (in.Description.Set && text == in.Description.S) || (o.Command != "" && text == o.Command) {
		o.Src.Notice = "content text (the description or the command again)"
		return
	}
	if t, fenced := StripFence(text); fenced {
		text = t
	}
	o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: textKind(o.Status.Ended()), Text: text})
	o.Src.Output = "content text"
}

// textKind is Final on a frame that ends the call, else Snapshot.
func textKind(ended bool) accum.TextKind {
	if ended {
		return accum.Final
	}
	return accum.Snapshot
}

// applyShellOutput reads rawOutput. A string is the combined output. An
// object gives the structured exit code (a placeholder unless the frame
// ends the call), stdout and stderr (each present one a snapshot of that
// stream; an omitted one keeps its text; one alone is not a split and
// only updates a stream already split, accum.Text.IfSplit), the combined
// output, a signal (a name or a number), a timeout flag and an outcome
// word (`failed`, `timed_out`, `cancelled`; see applyVerdict). Empty
// combined text is not reported (it would
// wipe streamed output); empty split streams are, on the final frame.
func applyShellOutput(o *accum.Observation, out *ShellOutput) {
	ended := o.Status.Ended()
	if out.Text.Set && out.Text.S != "" {
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: textKind(ended), Text: out.Text.S})
		o.Src.Output = "rawOutput"
	}
	f := out.Fields
	if f == nil {
		return
	}
	code, src := f.exitField()
	takeExit(o, code.Exit(accum.ExitStructured, ended), src)
	// Each present stream is a snapshot of that stream; one that is
	// omitted keeps its earlier text (never worse).
	lone := f.Stdout.Set != f.Stderr.Set
	for _, s := range []struct {
		stream accum.Stream
		text   Str
	}{{accum.Stdout, f.Stdout}, {accum.Stderr, f.Stderr}} {
		if s.text.Set && (ended || s.text.S != "") {
			o.Texts = append(o.Texts, accum.Text{Stream: s.stream, Kind: textKind(ended), Text: s.text.S, IfSplit: lone})
			o.Src.Output = "rawOutput.stdout, rawOutput.stderr"
		}
	}
	if text, src, ok := f.combinedField(); ok && text != "" {
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: textKind(ended), Text: text})
		o.Src.Output = src
	}
	if o.Signal == "" {
		if f.Signal.Reported() && o.Src.Exit == "" {
			o.Src.Exit = "rawOutput.signal"
		}
		f.Signal.apply(o)
	}
	if (f.TimedOut != nil && *f.TimedOut) || (f.TimedOutCamel != nil && *f.TimedOutCamel) {
		o.TimedOut = true
	}
	applyVerdict(o, f.Outcome.S)
}

// readTerminalUpdate reads the ACP v2 draft terminal updates. They name
// only the terminal; the session maps it to the call whose content holds
// `{"type":"terminal","terminalId"}`.
//
//   - terminal_update: an upsert. `output.data` (base64) is an
//     authoritative replacement snapshot, `output: null` clears it, an
//     absent `output` leaves it unchanged; `exitStatus` is exit evidence of
//     source ExitStatus; `command` and `cwd` describe the command.
//   - terminal_output_chunk: `data` (base64) is appended.
//
// Data that is not base64 is dropped rather than guessed at.
func readTerminalUpdate(tc *ToolCall) (accum.Observation, bool) {
	if tc.TerminalID == "" {
		return accum.Observation{}, false
	}
	o := accum.Observation{TerminalID: tc.TerminalID, Shell: accum.ShellYes}
	switch tc.SessionUpdate {
	case "terminal_output_chunk":
		if tc.Data != nil {
			if b, ok := decodeBase64(*tc.Data); ok && len(b) > 0 {
				o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Delta, Bytes: b})
				o.Src.Output = "terminal_output_chunk data"
			}
		}
	case "terminal_update":
		if tc.Command != nil {
			o.Command, o.Src.Command = *tc.Command, "terminal_update command"
		}
		if tc.Cwd != nil {
			o.Cwd, o.Src.Cwd = *tc.Cwd, "terminal_update cwd"
		}
		if out := tc.Output; out.Null {
			o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Snapshot, Bytes: []byte{}})
			o.Src.Output = "terminal_update output: null"
		} else if out.Data.Set {
			if b, ok := decodeBase64(out.Data.S); ok {
				o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Snapshot, Bytes: b})
				o.Src.Output = "terminal_update output.data"
			}
		}
		if es := tc.ExitStatus; es != nil {
			if e := es.ExitCode.Exit(accum.ExitStatus, true); e != nil {
				o.Exit, o.Src.Exit = e, "terminal_update exitStatus.exitCode"
			} else if es.Signal.Reported() {
				o.Src.Exit = "terminal_update exitStatus.signal"
			}
			es.Signal.apply(&o)
		}
	default:
		return accum.Observation{}, false
	}
	return o, true
}

// decodeBase64 decodes base64 in the standard or the URL-safe alphabet,
// padded or not. It always returns
// a non-nil slice on success.
func decodeBase64(s string) ([]byte, bool) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if b == nil {
				b = []byte{}
			}
			return b, true
		}
	}
	return nil, false
}

// askGeneric reads a permission ask the generic way; see askObservation.
func askGeneric(tc *shellUpdate) accum.Observation {
	return askObservation(&tc.ToolCall, &tc.RawInput)
}

// askObservation reads the `toolCall` of a permission ask: the call id,
// kind, status, title and rawInput as for updates, and its text content as
// the reason for asking (never output).
func askObservation(tc *ToolCall, in *ShellInput) accum.Observation {
	o := tc.askBase()
	applyShellInput(&o, tc, in)
	o.ApprovalReason = tc.askReason()
	return o
}
