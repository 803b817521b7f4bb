package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// codex reads both Codex ACP adapters.
//
// TypeScript adapter (@agentclientprotocol/codex-acp): rawInput
// {command: string, cwd}; live deltas in `_meta.terminal_output` (client
// opted in) or `_meta.terminal_output_delta` (not opted in); final rawOutput
// {formatted_output, exit_code} beside `_meta.terminal_exit`. When nothing
// was streamed the final frame also carries the whole output in
// terminal_output(_delta): the Final aggregate is then reported and that
// delta dropped, so the output is never doubled.
//
// Rust adapter (zed-industries/codex-acp, agentInfo "codex-acp"): rawInput
// and rawOutput are the whole begin and end events; command is an argv
// (["/bin/bash","-lc","X"] is reported as X). Without the capability the
// output arrives as fenced content text, cumulative (a Snapshot). rawOutput
// has stdout, stderr, aggregated_output and formatted_output; Combined is
// aggregated_output, because formatted_output is abbreviated for the model
// ("Total output lines: N", "…N chars truncated…") and may be prefixed with
// "command timed out after N milliseconds". stdout/stderr are reported as
// separate streams only when really separated: the unified exec tool runs
// commands in a PTY (rawOutput carries process_id, source
// "unified_exec_*"; in 0.4.4 neither, and its output has CRLF line ends)
// and puts everything in stdout, so there only Combined is reported.
//
// Exit evidence: `_meta.terminal_exit` > rawOutput.exit_code. A status of
// `failed` is not an exit code (Codex says failed for any nonzero exit).
// "command timed out after N milliseconds" (Codex reports exit 124, N the
// milliseconds the command ran) opening formatted_output, and not
// aggregated_output, sets TimedOut and keeps 124; the same words in
// aggregated_output are the command's. "execution error: Sandbox(Signal(N))" is Codex's
// own error text, not command output: it names the signal that killed the
// command (N=9 → SIGKILL). An exit code of -1, from either source, is
// Codex's "no exit code" sentinel, not an exit status (the unified exec
// tool reports a SIGKILLed shell as exit -1 with no signal text): the exit
// is left unknown and the call Failed, with the signal when that text
// names one, as ACP's exitStatus {exitCode: null, signal} would say. An
// end event with status "declined" is a rejected command (Cancelled).
//
// session/load replays are poorer than the live frames. The Rust adapter
// replays the model's own calls: `exec_command` (unified exec) as a
// `tool_call` titled "exec_command" with no kind and rawInput {cmd,
// workdir?, ...}; shell_command as a titled `tool_call` with rawInput
// {command, workdir?}; then a `tool_call_update` whose rawOutput is the
// tool's model-facing TEXT ("Chunk ID/Wall time/Process exited with code
// N/.../Output:\n<output>", or "Exit code: N\nWall time: ...\nOutput:\n
// <output>"; "aborted by user" for a stopped command; "execution error:
// Sandbox(Signal(N))" alone for a shell killed by a signal); 0.14.0
// replays a shell_command's result as Codex's JSON for the model instead,
// a string {"output", "metadata": {"exit_code", "duration_seconds"}} (see
// codexJSONShellText). The header (the JSON's exit code)
// is read as a text exit marker and kept out of output (see
// codexModelText); Codex's timeout sentence opening the output (where
// its milliseconds agree with the wall time or duration_seconds stated
// beside it: other words are the command's) and its execution error are
// read as live. The
// TypeScript adapter 2.x replays `_meta.terminal_exit` with no rawOutput;
// its -1 is the sentinel there too, whatever the frame carries. A command
// without a terminal (a lone listing) it replays as a tool_call with its
// final status, then its end event, rawOutput {exit_code}, with the status
// left out as unchanged: an end all the same. 1.x
// replays the same model-facing text as formatted_output and as a
// terminal delta (its header read only when it agrees with exit_code),
// and Codex's words for a command it did not run ("exec_command failed
// ... rejected by user", "aborted by user") as if they were output: with
// no exit code they are a notice (see codexToolNotice).
//
// A call is a shell command, whatever its kind, when it carries a rawInput
// command (or a replayed cmd), the TS 2.x name `exec_command`, terminal
// output or exit, or a command execution's end event as rawOutput
// (exit_code, formatted_output or aggregated_output; see execEnd): Codex
// gives a lone listing, read or search command (ls, cat, rg) kind read or
// search, and the TS adapter sends such a call with no rawInput and no
// terminal, so in 1.x, which has no `name`, its end event may be the only
// sign that it ran. A kind read or search with none of these (Codex's
// image view, a web search) is no shell command. Permission asks arrive
// before the tool_call, under the same id; rawInput.reason, when present,
// is the reason, else the ask's text content.
type codex struct {
	// killedIsOne: the build (the Rust adapter before 0.9.2; 0.4.4, 0.7.4
	// and 0.8.2 recorded) reports a unified exec shell killed by a signal
	// as exit_code 1, the same as a real exit 1, with no signal anywhere:
	// under the PTY an exit 1 of that build is no evidence of an exit
	// status (the call is Failed, its exit unknown). Other codes are
	// truthful there. 0.9.2 (the next build on npm, recorded) and later
	// send -1 (see codexNoExit). The PTY shows in process_id or a source
	// "unified_exec*" from 0.7.4; 0.4.4's end event has neither, and the
	// PTY shows only in CRLF line ends (codexCRLFOnly).
	killedIsOne bool
	// shortAggregate: the build (the Rust adapter before 0.10.0; 0.4.4,
	// 0.8.2, 0.9.2 and 0.9.5 recorded) sends in a unified exec's stdout
	// and aggregated_output the text Codex shortened for the model, past
	// its limit: "Total output lines: N" and a blank line, the head, then
	// "…N tokens truncated…" and the tail; 0.4.4 the same without the
	// header, which opens only its formatted_output (see codexShortened).
	shortAggregate bool
}

func init() { register(codex{}) }

// forVersion implements versioned: the wire of the end event cannot tell
// a killed shell from an exit 1 on builds before 0.9.2, and their
// aggregate may be shortened before 0.10.0. An unknown build reads with
// the newest rules.
func (codex) forVersion(v Version) Dialect {
	return codex{killedIsOne: v.Before("0.9.2"), shortAggregate: v.Before("0.10.0")}
}

func (codex) Info() Info {
	// Auth method signs: the Rust adapter offers chatgpt and
	// codex-api-key (beside openai-api-key), the TypeScript one chat-gpt
	// (beside api-key, which is all it offers when ChatGPT login is off:
	// no sign, as any agent may offer it; its shell calls are, see
	// matchesShape).
	return Info{
		Name:               "codex",
		AgentNames:         []string{"codex-acp", "codex", "@zed-industries/codex-acp", "@agentclientprotocol/codex-acp"},
		AuthMethodIDs:      []string{"chatgpt", "codex-api-key", "chat-gpt"},
		ShapeRule:          `an opening tool_call whose name is "exec_command"`,
		Summary:            "Codex ACP adapters (TypeScript and Rust): _meta terminal deltas, argv commands, fenced cumulative content, end-event rawOutput with stdout/stderr/aggregated_output.",
		ClientCapabilities: richCapabilities,
	}
}

type codexInput struct {
	ShellInput
	Reason Str `json:"reason"`
	// Workdir is the model's own argument, which the Rust adapter replays
	// as rawInput on session/load (beside `cmd` or `command`).
	Workdir Str `json:"workdir"`
	// Arguments is a tool's arguments: the TypeScript adapter's rawInput
	// of an MCP tool call {server, tool, arguments} and of a dynamic
	// tool call {arguments} (see codexOtherTool).
	Arguments codexPresent `json:"arguments"`
}

// codexPresent records whether a member was there at all (even null).
type codexPresent struct{ Present bool }

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (p *codexPresent) UnmarshalJSON([]byte) error {
	p.Present = true
	return nil
}

// codexMeta is an update's `_meta`: the terminal convention, and the TS
// adapter's mark of an MCP tool call's tool_call.
type codexMeta struct {
	TerminalMeta
	IsMCPToolCall lenientBool `json:"is_mcp_tool_call"`
}

// matchesShape is Codex's ShapeRule, for a session that has not seen its
// agentInfo: the TypeScript adapter from 1.13 (1.13.1 and 2.6.0 recorded)
// opens a shell call with the member `name` "exec_command", Codex's own
// tool's name, which no other agent this package knows sends.
func (codex) matchesShape(u *shellUpdate, msg []byte) bool {
	if u.SessionUpdate != "tool_call" {
		return false
	}
	name, ok := updateString(msg, "NAME")
	return ok && name == "exec_command"
}

// codexOutputFields is the end-event rawOutput. Its exit code is
// exit_code, in both adapters' every recorded build: an exit code under
// another name is a wire change, said (unrecognized), not read.
type codexOutputFields struct {
	ExitCode codexCode `json:"exit_code"`
	Stderr   Str       `json:"stderr"`
	Output   Str       `json:"output"`
	// AggregatedOutput, Stdout and FormattedOutput are the same output up
	// to three times (stdout is all of it under a PTY). aggregated_output
	// is read in every frame that has it, and stdout too except under a
	// PTY beside aggregated_output, so the elided decode decodes both as
	// it validates them (elide:"decoded"): stdout comes first, and
	// aggregated_output, as a rule the same bytes, takes its text without
	// reading them again. FormattedOutput is unquoted only when read.
	AggregatedOutput rawText `json:"aggregated_output" elide:"decoded"`
	Stdout           rawText `json:"stdout" elide:"decoded"`
	FormattedOutput  rawText `json:"formatted_output"`
	TimedOut         *bool   `json:"timed_out"`
	Status           Str     `json:"status"`
	Source           Str     `json:"source"`
	ProcessID        rawAny  `json:"process_id"`
}

// Exit is the exit code of the end event.
func (f *codexOutputFields) Exit() Code { return f.ExitCode.Code }

// execEnd says whether rawOutput is a command execution's end event.
// Only that event carries exit_code (even null), formatted_output or
// aggregated_output, in either adapter: the TypeScript adapter sends
// {formatted_output, exit_code} for a command execution item and for no
// other tool, the Rust adapter the whole ExecCommandEndEvent; its other
// end events (patch apply: stdout, stderr, success; MCP and dynamic
// tools: their results) have none of the three. So it is a shell call
// whatever kind the tool_call gave it: Codex classifies a lone listing,
// read or search command (ls, cat, rg) as kind read or search, which the
// TypeScript adapter opens with no rawInput and no terminal, and when
// nothing was streamed the end event is the only sign that it ran.
// stdout and stderr alone are no such sign.
func (f *codexOutputFields) execEnd() bool {
	return f.ExitCode.Present || f.FormattedOutput.lit != nil || f.AggregatedOutput.lit != nil
}

// codexCode is rawOutput.exit_code, and whether the member was there at
// all (even null or of another type).
type codexCode struct {
	Code
	Present bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (c *codexCode) UnmarshalJSON(b []byte) error {
	c.Present = true
	return c.Code.UnmarshalJSON(b)
}

// stdout unquotes stdout, given aggregated_output unquoted.
func (f *codexOutputFields) stdout(agg Str) Str {
	if agg.Set && bytes.Equal(f.Stdout.lit, f.AggregatedOutput.lit) {
		return agg
	}
	return f.Stdout.Str()
}

// toolName is the unstable schema's `name`: the string, and whether the
// member was there at all (even null or of another type).
type toolName struct {
	S       Str
	Present bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (n *toolName) UnmarshalJSON(b []byte) error {
	n.Present = true
	return n.S.UnmarshalJSON(b)
}

// rawAny records whether a field was present with a non-null value.
type rawAny struct{ Present bool }

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (r *rawAny) UnmarshalJSON(b []byte) error {
	r.Present = !isNull(b)
	return nil
}

// codexRawOutput is `rawOutput`: the end-event object (Obj), or a string
// (Text): what the Rust adapter replays on session/load, the tool's
// model-facing text. Another JSON type reads as absent.
type codexRawOutput struct {
	codexOutputFields
	Obj  bool
	Text Str
}

// UnmarshalJSONFrom implements the one-pass decoder's streaming
// unmarshaler; encoding/json calls UnmarshalJSON.
func (r *codexRawOutput) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '{':
		r.Obj = true
		return jsonv2.UnmarshalDecode(dec, &r.codexOutputFields)
	case '"':
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		return r.Text.UnmarshalJSON(v)
	}
	return dec.SkipValue()
}

// UnmarshalJSONFast implements jsonlit.FastUnmarshaler: UnmarshalJSON in
// the fast decoder's pass, the object decoded field by field by its plan.
// It says no (the frame is decoded otherwise) where UnmarshalJSON would
// meet a type error in the object.
func (r *codexRawOutput) UnmarshalJSONFast(d *jsonlit.Dec) bool {
	*r = codexRawOutput{}
	switch d.Kind() {
	case '{':
		r.Obj = true
		return d.Decode(&r.codexOutputFields)
	case '"':
		v, ok := d.Value()
		r.Text.UnmarshalJSON(v)
		return ok
	}
	_, ok := d.Value()
	return ok
}

// UnmarshalJSON implements json.Unmarshaler. A member of another JSON
// type inside the object reads as absent and does not stop the frame's
// decode, as without this method.
func (r *codexRawOutput) UnmarshalJSON(b []byte) error {
	*r = codexRawOutput{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '{':
		r.Obj = true
		var typeErr *json.UnmarshalTypeError
		if err := json.Unmarshal(b, &r.codexOutputFields); err != nil && !errors.As(err, &typeErr) {
			return err
		}
		return nil
	case '"':
		return r.Text.UnmarshalJSON(b)
	}
	return nil
}

type codexUpdate struct {
	ToolCall
	// Name is the unstable schema's programmatic tool name, with whether
	// the member is there at all (even null): the TypeScript adapter 2.x
	// sends one, older adapters do not.
	Name     toolName   `json:"name"`
	RawInput codexInput `json:"rawInput"`
	// RawOutput is the end-event object in both adapters' live frames,
	// decoded in the frame's one pass, or the model-facing text of a
	// replayed call (Rust adapter, session/load).
	RawOutput *codexRawOutput `json:"rawOutput"`
	Meta      *codexMeta      `json:"_meta"`
	// mcpApproval: the permission ask this toolCall is of says in its
	// own `_meta` (setAskMeta) that it asks for an MCP tool's approval.
	mcpApproval bool
}

// setAskMeta implements askMetas: the TypeScript adapter marks an ask
// for an MCP tool's approval only in the request's `_meta`
// ({is_mcp_tool_approval: true}), its toolCall being the bare
// {toolCallId, kind: "execute", status: "pending"} of the call it
// approves (every build: 1.1.4 CodexElicitationHandler
// .buildPermissionRequest, 1.13.1 and 2.6.0 buildMcpPermissionRequest).
// A command ask's `_meta` never has it: 1.1.4 sends {codex: {params}}
// (CodexApprovalHandler.buildCommandPermissionRequest), 1.13.1
// {permission}, 2.6.0 none.
func (u *codexUpdate) setAskMeta(meta []byte) {
	u.mcpApproval = false
	if len(meta) == 0 || meta[0] != '{' {
		return
	}
	if v := valueAt(meta, "IS_MCP_TOOL_APPROVAL"); len(v) > 0 {
		u.mcpApproval = string(v[:jsonlit.ValueEnd(v, 0)]) == "true"
	}
}

// knownTool implements knownTools: a call of the TypeScript adapter the
// dialect knows is no shell, though its kind is execute (codexOtherTool).
func (u *codexUpdate) knownTool() bool { return codexOtherTool(u) }

// codexOtherTool says whether a frame is of a call that runs no command
// though the TypeScript adapter gives it kind execute (every build: 1.1.4
// and 1.13.1 createExecuteToolCallUpdate, 2.6.0 McpToolReporter.started
// and DynamicToolReporter.started):
//   - an MCP tool call, titled "mcp.<server>.<tool>", whose tool_call
//     has `_meta.is_mcp_tool_call` (createMcpToolCallUpdate; 2.6.0
//     AcpToolCallRenderer's mcpMeta) and rawInput {server, tool,
//     arguments}, as its end (completeItemEvent) has too;
//   - a dynamic tool call, titled with the tool's name, rawInput
//     {arguments} (createDynamicToolCallUpdate);
//   - the ask for an MCP tool's approval (setAskMeta).
//
// Taken for a shell, such a call became a ShellExec whose command was its
// title and whose output its result. A frame with a command (rawInput
// command or cmd), the shell tool's name or a terminal is never one: a
// command's own frames have no `arguments`.
func codexOtherTool(u *codexUpdate) bool {
	in := &u.RawInput
	if in.Command.Line != "" || in.Cmd.Line != "" || u.Name.S.S == "exec_command" || u.TerminalContent() != "" {
		return false
	}
	if m := u.Meta; m != nil && (m.TerminalInfo != nil || m.TerminalOutput != nil || m.TerminalOutputDelta != nil || m.TerminalExit != nil) {
		return false
	}
	return u.mcpApproval || u.Meta != nil && u.Meta.IsMCPToolCall.True || in.Arguments.Present
}

func (d codex) read(msg []byte, scope string) (Frame, error) {
	switch {
	case d.killedIsOne:
		return readFrame(msg, scope, observeCodex08, askCodex)
	case d.shortAggregate:
		return readFrame(msg, scope, observeCodex09, askCodex)
	}
	return readFrame(msg, scope, observeCodex, askCodex)
}

func observeCodex(u *codexUpdate) []accum.Observation { return observeCodexFor(u, codex{}) }

// observeCodex09 reads the builds before 0.10.0, observeCodex08 those
// before 0.9.2.
func observeCodex09(u *codexUpdate) []accum.Observation {
	return observeCodexFor(u, codex{shortAggregate: true})
}

func observeCodex08(u *codexUpdate) []accum.Observation {
	return observeCodexFor(u, codex{killedIsOne: true, shortAggregate: true})
}

// observeCodexFor reads a frame of build b (see codex's fields).
func observeCodexFor(u *codexUpdate, b codex) []accum.Observation {
	switch u.SessionUpdate {
	case "tool_call", "tool_call_update":
		return []accum.Observation{readCodex(u, b)}
	case "terminal_update", "terminal_output_chunk":
		if o, ok := readTerminalUpdate(&u.ToolCall); ok {
			return []accum.Observation{o}
		}
	}
	return nil
}

var (
	codexSandboxSignal = regexp.MustCompile(`Signal\((\d+)\)`)
	// codexTimedOut is Codex's timeout sentence; it names the command's
	// run time in milliseconds (Codex measures it, it is not the limit).
	codexTimedOut = regexp.MustCompile(`^command timed out after (\d+) milliseconds\n?`)
	// codexTimedOutPrefix is what every codexTimedOut match starts with.
	codexTimedOutPrefix = "command timed out after "
	codexTotalLines     = regexp.MustCompile(`^Total output lines: \d+\n\n`)
	codexElided         = regexp.MustCompile(`…\d+ (chars|tokens|lines) truncated…|\[\.\.\. omitted \d+ of \d+ lines \.\.\.\]`)
)

// codexNoExit drops Codex's -1 "no exit code" sentinel from an ended
// frame: the exit is unknown and the command failed (a killed process, or
// one Codex could not run), unless the frame says it was declined.
func codexNoExit(o *accum.Observation) {
	if o.Exit == nil || o.Exit.Code != -1 || o.Exit.Placeholder {
		return
	}
	o.Exit = nil
	if !o.Cancelled {
		o.Failed = true
	}
}

func readCodex(u *codexUpdate, b codex) accum.Observation {
	o := u.Base()
	ended := o.Status.Ended()
	if u.Meta != nil {
		u.Meta.ApplyTerminalMeta(&o)
	}
	applyShellInput(&o, &u.ToolCall, &u.RawInput.ShellInput)
	if u.RawInput.Command.Line == "" && o.Command != "" {
		// A title: Codex's own display of the command (2.x unwraps a
		// wrapper the model wrote, or shortens it), never what replaces
		// a command rawInput gave.
		o.CommandFromTitle = true
	}
	codexCommand(&o, &u.RawInput.Command, u.Name.Present, false)
	codexExecName(&o, u)
	codexReplayedCall(&o, u)
	if codexOtherTool(u) {
		o.Shell = accum.ShellNo // its kind execute says nothing
	}
	applyContentOutput(&o, &u.ToolCall, &u.RawInput.ShellInput)

	f := u.RawOutput
	if f == nil || !f.Obj {
		if f != nil && f.Text.Set && o.Status.Ended() {
			codexModelText(&o, f.Text.S)
			if len(o.Texts) > 0 {
				o.Src.Output = "rawOutput (the model-facing text)"
			}
		}
		codexNoExit(&o)
		return o
	}
	if f.execEnd() {
		o.Shell = accum.ShellYes
	}
	if o.Status == accum.StatusNone && f.ExitCode.Present {
		// The end event with its status left out: the TypeScript adapter
		// 2.x drops a field that did not change since the call's last
		// report, and its session/load replay opens a call with its
		// final status, so the replayed end says none. It sends rawOutput
		// {exit_code} only from a command's end (commandEndRawOutput, in
		// a completion or a replayed one), and no build of either
		// adapter sends exit_code before the end: the exit code is the
		// command's, no placeholder. A frame that says it still runs
		// keeps the placeholder rule.
		ended = true
	}
	if e := f.Exit().Exit(accum.ExitStructured, ended); e != nil {
		o.Exit = accum.StrongerExit(o.Exit, e)
	}
	if f.Status.S == "declined" {
		o.Cancelled = true
	}
	if ended && (o.Exit == nil || o.Exit.Code == -1) && codexMaybeToolNotice(&f.FormattedOutput) {
		// The TypeScript adapter's replay of a command Codex did not run
		// (or could not) carries Codex's text to the model as its output,
		// in formatted_output and in the terminal delta beside it.
		if codexToolNotice(&o, f.FormattedOutput.Str().S) {
			o.Texts, o.Exit = nil, nil
			o.Src.Notice = "Codex's words about the command in rawOutput.formatted_output and the terminal delta"
			return o
		}
	}
	agg := f.AggregatedOutput.Str()
	if ended && !agg.Set && !f.Output.Set && codexMaybeHeadedText(&f.FormattedOutput) {
		// The TypeScript adapter 1.x replays a command's model-facing
		// text as formatted_output and as the terminal delta beside it.
		// Its header is read only when it agrees with the exit code the
		// frame states; then it is no output.
		var h accum.Observation
		if codexHeadedText(&h, f.FormattedOutput.Str().S) && (h.Exit == nil || o.Exit == nil || h.Exit.Code == o.Exit.Code) {
			if o.Exit == nil {
				o.Exit, o.Src.Exit = h.Exit, "header of rawOutput.formatted_output"
			}
			o.TimedOut = o.TimedOut || h.TimedOut
			o.Texts = append(dropDeltas(o.Texts), h.Texts...)
			o.Src.Output, o.Src.Notice = "rawOutput.formatted_output", "header of rawOutput.formatted_output and the terminal delta"
			codexNoExit(&o)
			return o
		}
	}
	if ended && !agg.Set && f.FormattedOutput.lit == nil && f.Output.Set && o.Exit == nil &&
		(codexHeadedText(&o, f.Output.S) || codexToolNotice(&o, f.Output.S)) {
		// The TypeScript adapter 1.x replays a command it ran without a
		// terminal (a lone listing, read or search, see execEnd) as
		// rawOutput {output: <the tool's model-facing text>}: its header
		// is Codex's statement (a text exit marker), not output. This
		// alone is no sign of a shell call: write_stdin's text has the
		// same form.
		o.Src.Output = "rawOutput.output (the model-facing text)"
		codexNoExit(&o)
		return o
	}
	if notice, ok := codexRejected(&f.codexOutputFields, agg); ok {
		// Older builds (0.7.x) send no status "declined": the end event
		// of a rejected command carries Codex's refusal as its only text.
		o.Cancelled, o.CancelNotice, o.Exit = true, notice, nil
		o.Src.Notice = "refusal in rawOutput.stderr/aggregated_output"
		return o
	}
	codexNoExit(&o)
	if f.TimedOut != nil && *f.TimedOut {
		o.TimedOut = true
	}
	// Codex's timeout sentence comes beside the exit 124 it reports (or
	// none): beside an exit of 0 the words are the command's output. In
	// formatted_output it is Codex's only beside aggregated_output (the
	// Rust adapter's model-facing text); without it, formatted_output is
	// the TypeScript adapter 1.x's raw output (see codexCombined). Codex
	// writes it before the output, in formatted_output alone: every
	// recorded timeout (0.4.4 to 0.16.0) has it there and not in
	// aggregated_output, stdout or stderr, which are the command's. So
	// when aggregated_output opens with the same sentence, the words are
	// the command's own (test/agents codex-timeout: k_codex_timeout
	// prints it and exits 124, and formatted_output is the output
	// unchanged).
	if ec := f.Exit(); (!ec.Known || ec.Value != 0) && agg.Set && f.FormattedOutput.HasPrefix(codexTimedOutPrefix) {
		if sentence := codexTimedOut.FindString(f.FormattedOutput.Str().S); sentence != "" && !strings.HasPrefix(agg.S, sentence) {
			o.TimedOut = true
		}
	}

	// "execution error: ..." is Codex's report that it could not run or
	// finish the command; it is not the command's output.
	if execErr, ok := codexExecError(&f.codexOutputFields, agg); ok {
		if m := codexSandboxSignal.FindStringSubmatch(execErr); m != nil {
			o.Signal = NormalizeSignal(m[1])
		} else {
			o.Failed = true
		}
		return o
	}

	pty := f.ProcessID.Present || strings.HasPrefix(f.Source.S, "unified_exec")
	if !pty && b.shortAggregate && !f.ProcessID.Present && !f.Source.Set {
		// An end event with neither member (0.4.4) names no tool: the
		// unified exec tool's PTY shows only in its line ends (see
		// codexCRLFOnly). Under pipes (shell_command) a command's own
		// CRLF-only output is read so too; then its exit 1 is left
		// unknown (killedIsOne; still Failed, and no wrong code is ever
		// reported: that variant reports a killed shell by its signal),
		// and a text is read as shortened only with Codex's marker in
		// it and Codex's header opening formatted_output.
		text := agg
		if !text.Set {
			text = f.stdout(agg)
		}
		pty = codexCRLFOnly(text.S)
	}
	if b.killedIsOne && pty && ended && o.Exit != nil && o.Exit.Code == 1 {
		o.Exit, o.Failed = nil, true
		o.Src.Notice = "exit_code 1 of a PTY command (this build says 1 for a killed shell)"
	}
	// Each present stream is a snapshot of that stream; one that is
	// omitted keeps its earlier text.
	if !pty {
		lone := f.Stdout.lit == nil || !f.Stderr.Set
		if f.Stdout.lit != nil {
			o.Texts = codexStream(o.Texts, accum.Stdout, f.stdout(agg).S, ended, lone)
		}
		if f.Stderr.Set {
			o.Texts = codexStream(o.Texts, accum.Stderr, f.Stderr.S, ended, lone)
		}
	}
	if pty && f.Stdout.lit != nil && !agg.Set {
		// Under the PTY stdout is the whole combined output: it comes
		// before formatted_output, which is cut for the model.
		agg = f.stdout(agg)
	}
	shortened := false
	if b.shortAggregate && pty && agg.Set {
		headed := f.FormattedOutput.HasPrefix("Total output lines: ") && codexTotalLines.MatchString(f.FormattedOutput.Str().S)
		agg.S, shortened = codexShortened(agg.S, headed)
	}
	if text, truncated, ok := codexCombined(&f.codexOutputFields, agg); ok && text != "" {
		kind := textKind(ended)
		if shortened {
			// Only the tail: it never replaces a fuller text streamed
			// before.
			kind, truncated = accum.Window, true
		}
		if ended {
			o.Texts = dropDeltas(o.Texts)
		}
		o.Texts = append(o.Texts, codexText(accum.Combined, kind, text, truncated))
	}
	return o
}

// codexText is one rawOutput text, with Codex's byte-order-mark sniffing
// undone: Codex decodes output that starts with the bytes FF FE (or FE FF)
// as UTF-16 and drops them, so `printf '\xff\xfe ok\n'` arrives as "漠੫".
// When a text has no ASCII character at all and re-encodes to UTF-16 bytes
// that are plain text with whitespace, those bytes (behind the dropped mark)
// are the real output; it is then reported as bytes, so the invalid mark
// becomes U+FFFD as in the live deltas. Real non-Latin output keeps at
// least a newline in ASCII and is never touched.
func codexText(stream accum.Stream, kind accum.TextKind, text string, truncated bool) accum.Text {
	t := accum.Text{Stream: stream, Kind: kind, Text: text, Truncated: truncated}
	if b, ok := undoUTF16Sniff(text); ok {
		t.Text, t.Bytes = "", b
	}
	return t
}

func undoUTF16Sniff(s string) ([]byte, bool) {
	// A text that opens with an ASCII byte is never one (the loop below
	// refuses it at its first rune, valid or not): an output is not read
	// once more only to find that.
	if s == "" || s[0] < utf8.RuneSelf || !utf8.ValidString(s) {
		return nil, false
	}
	for _, r := range s {
		if r < 0x80 || r > 0xFFFF || r == utf8.RuneError || utf16.IsSurrogate(r) {
			return nil, false
		}
	}
	units := utf16.Encode([]rune(s))
	for _, le := range []bool{true, false} {
		b := make([]byte, 0, 2+2*len(units))
		if le {
			b = append(b, 0xFF, 0xFE)
		} else {
			b = append(b, 0xFE, 0xFF)
		}
		for _, u := range units {
			if le {
				b = append(b, byte(u), byte(u>>8))
			} else {
				b = append(b, byte(u>>8), byte(u))
			}
		}
		if plausibleText(b[2:]) {
			return b, true
		}
	}
	return nil, false
}

// plausibleText: valid UTF-8, no control bytes other than tab, CR and LF,
// and at least one space or newline.
func plausibleText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	space := false
	for _, c := range b {
		switch {
		case c == ' ' || c == '\n':
			space = true
		case c == '\t' || c == '\r' || c >= 0x20 && c != 0x7f:
		default:
			return false
		}
	}
	return space
}

// codexRejectedText is Codex's text for a command the user rejected.
const codexRejectedText = "exec command rejected by user"

// codexRejected reports an end event whose only text is Codex's refusal
// (exec command rejected by user) beside the -1 "no exit code" sentinel:
// the command never ran. A command cannot exit -1, so its own output of
// the same words is never taken for the refusal.
func codexRejected(f *codexOutputFields, agg Str) (string, bool) {
	if !f.Exit().Known || f.Exit().Value != -1 {
		return "", false
	}
	for _, s := range []Str{agg, f.Stderr} {
		if strings.TrimSpace(s.S) == codexRejectedText {
			return codexRejectedText, true
		}
	}
	return "", false
}

// codexExecErrorPrefix opens Codex's text for a command it could not run
// or finish (a shell killed by a signal among them).
const codexExecErrorPrefix = "execution error: "

// codexExecError returns Codex's "execution error: ..." text when that is
// what the end event carries instead of output: beside the -1 "no exit
// code" sentinel (or no exit code at all), as Codex sends it. Beside a
// real exit code the words are the command's output.
func codexExecError(f *codexOutputFields, agg Str) (string, bool) {
	if ec := f.Exit(); ec.Known && ec.Value != -1 {
		return "", false
	}
	for _, s := range []Str{f.Stderr, agg} {
		if strings.HasPrefix(s.S, codexExecErrorPrefix) {
			return s.S, true
		}
	}
	if f.FormattedOutput.HasPrefix(codexExecErrorPrefix) {
		return f.FormattedOutput.Str().S, true
	}
	return "", false
}

// codexCombined picks the combined output: aggregated_output, then output,
// then formatted_output with Codex's decorations removed, where they are
// Codex's: a "Total output lines" header only above Codex's elision
// marker (the text is then truncated), the two together as Codex shortens
// a text for the model (see codexShortened). The TypeScript adapter 1.x,
// the one build family that sends formatted_output without
// aggregated_output, sends there the raw output (1.1.4: all 348,894 bytes
// of `seq 1 60000`, no header; its exec_command has no timeout): Codex's
// timeout sentence there, beside an exit 0 or Codex's own 124, a header
// over no marker, or a marker alone are the command's own (tricky-more's
// m_codex_timedout, m_codex_total, m_codex_elided; tricky-cancel's
// k_codex_timeout), kept whole and not cut.
func codexCombined(f *codexOutputFields, agg Str) (string, bool, bool) {
	if agg.Set {
		return agg.S, false, true
	}
	if f.Output.Set {
		return f.Output.S, false, true
	}
	if formatted := f.FormattedOutput.Str(); formatted.Set {
		s, truncated := codexHeaderCut(formatted.S)
		return s, truncated, true
	}
	return "", false, false
}

// codexHeaderCut takes Codex's "Total output lines: N" header off s when
// an elision marker follows it (Codex cut the output for the model), and
// says so.
func codexHeaderCut(s string) (string, bool) {
	if loc := codexTotalLines.FindStringIndex(s); loc != nil && codexElided.MatchString(s[loc[1]:]) {
		return s[loc[1]:], true
	}
	return s, false
}

// codexShortened reads an aggregate that Codex shortened for the model
// (codex.shortAggregate): "Total output lines: N" and a blank line, the
// head, "…N tokens truncated…", the tail. 0.4.4 sends the header only
// at the start of formatted_output (headed), the aggregate being the
// head, the marker and the tail, cut wherever the limit fell (inside a
// line, or between CR and LF: "1018\r…398894 tokens truncated…\r\n59287").
// The header and the marker are Codex's; of the output, as of
// every bounded text here, the tail (the most recent) is kept, and the
// text is marked truncated. A text without both (the header here or in
// formatted_output, and the marker) is the output as it is.
func codexShortened(s string, headed bool) (string, bool) {
	start := 0
	if loc := codexTotalLines.FindStringIndex(s); loc != nil {
		start = loc[1]
	} else if !headed {
		return s, false
	}
	m := codexElided.FindAllStringIndex(s[start:], -1)
	if len(m) == 0 {
		return s, false
	}
	return s[start+m[len(m)-1][1]:], true
}

// codexCRLFOnly says whether s has lines and ends every one with CRLF,
// as a PTY's line discipline writes a command's output (a bare LF
// becomes CRLF): the unified exec tool's sign where the end event names
// no tool. A cut Codex made for the model may fall between CR and LF,
// so its markers are left out first.
func codexCRLFOnly(s string) bool {
	lf := strings.Count(s, "\n")
	if lf == 0 {
		return false
	}
	crlf := strings.Count(s, "\r\n")
	if lf != crlf && strings.Contains(s, " truncated…") {
		s = codexElided.ReplaceAllString(s, "")
		lf, crlf = strings.Count(s, "\n"), strings.Count(s, "\r\n")
	}
	return lf == crlf
}

// dropDeltas removes Combined deltas: on a final frame they repeat what the
// Final aggregate of the same frame says.
func dropDeltas(ts []accum.Text) []accum.Text {
	out := ts[:0]
	for _, t := range ts {
		if t.Stream == accum.Combined && t.Kind == accum.Delta {
			continue
		}
		out = append(out, t)
	}
	return out
}

// codexStream appends the snapshot of one separate stream (stdout or
// stderr), when it says anything or the call ended; lone marks a stream
// sent without its sibling (accum.Text.IfSplit).
func codexStream(ts []accum.Text, s accum.Stream, text string, ended, lone bool) []accum.Text {
	if !ended && text == "" {
		return ts
	}
	t := codexText(s, textKind(ended), text, false)
	t.IfSplit = lone
	return append(ts, t)
}

// codexCommand removes the adapter's own shell wrapper from a rawInput
// command, once: the Rust adapter's argv ["/bin/bash","-lc",X] and the
// older TypeScript adapter's "/bin/zsh -lc '...'" (its shell by absolute
// path, as the adapter runs it). The TypeScript adapter 2.x (ts2: its
// frames have a `name`) sends the command as the model wrote it: a
// `bash -lc '...'` there, as anywhere, is the command. A permission ask's
// command that is one quoted shell word (the TS 2.x ask re-quotes the
// command that way) is unquoted; a tool call's is what the model wrote
// ('./run tests.sh' runs a file whose name has a space). A wrapper the
// model wrote inside X is the command.
func codexCommand(o *accum.Observation, c *CommandLine, ts2, ask bool) {
	if c.Line == "" {
		return
	}
	cmd := c.Line
	if c.argv != nil || !ts2 && strings.HasPrefix(strings.TrimSpace(c.Line), "/") {
		cmd = c.Unwrapped()
	}
	if ask && cmd == c.Line && c.argv == nil {
		cmd = UnquoteWord(cmd)
	}
	if strings.TrimSpace(cmd) != "" {
		o.Command = cmd
	}
}

// codexExecName reads the TS 2.x tool name: `exec_command` is the shell
// tool, whatever the kind. A lone listing command arrives as kind `read`,
// title "List files" and no rawInput: it is still a shell command, whose
// command is not on the wire (left empty; the title, which describes it,
// becomes the description).
//
// The TypeScript adapter 1.x sends no `name`: there a kind read or search
// with no rawInput is not yet known to be a command (Codex's image view
// looks alike), and becomes one by its terminal output or its end event
// (codexOutputFields.execEnd). Its title describes it all the same, and
// is its description; on a call that is no shell it is never reported.
func codexExecName(o *accum.Observation, u *codexUpdate) {
	exec := u.Name.S.S == "exec_command"
	if exec {
		o.Shell = accum.ShellYes
	}
	if (exec || !u.Name.Present && isReadKind(u.Kind)) && u.RawInput.Command.Line == "" && u.RawInput.Cmd.Line == "" &&
		u.Kind != nil && *u.Kind != "execute" && u.Title != nil {
		o.Description = strings.TrimSpace(*u.Title)
	}
}

// codexReplayedCall reads a call the Rust adapter replays on session/load
// from the model's own function call: the unified exec tool's
// `exec_command` arrives titled with the tool name, with no kind and the
// model's arguments as rawInput {cmd, workdir?, yield_time_ms?, ...}
// (the live begin event's argv is not replayed). cmd is the command as
// the model wrote it, which Codex then ran under the user's shell.
// shell_command replays rawInput {command, workdir?}: its command is read
// as any rawInput command; workdir is its cwd when nothing else says one.
func codexReplayedCall(o *accum.Observation, u *codexUpdate) {
	in := &u.RawInput
	if in.Command.Line == "" && in.Cmd.Line != "" && u.Title != nil && strings.TrimSpace(*u.Title) == "exec_command" &&
		(u.Kind == nil || *u.Kind == "other" || *u.Kind == "execute") {
		o.Shell = accum.ShellYes
		o.Command, o.CommandFromTitle = in.Cmd.Line, false
		o.Src.Command = "rawInput.cmd"
	}
	if o.Cwd == "" && in.Workdir.Set && strings.TrimSpace(in.Workdir.S) != "" && (in.Command.Line != "" || o.Shell == accum.ShellYes) {
		o.Cwd = in.Workdir.S
		o.Src.Cwd = "rawInput.workdir"
	}
}

var (
	// codexExecText is the unified exec tool's model-facing text (what
	// the Rust adapter replays as rawOutput for exec_command): a header
	// of "Command" (0.11.1: the command as run, possibly over several
	// lines), "Chunk ID", "Wall time", "Process exited with code N" (only once
	// the process ended), "Process running with session ID N" (still
	// running when the tool returned), "Original token count" lines, then
	// "Output:" and the output.
	codexExecText = regexp.MustCompile(`^(?:Command: (?s:.*?)\n)?(?:Chunk ID: [^\n]*\n)?Wall time: [^\n]*\n(?:Process exited with code (-?\d+)\n)?(Process running with session ID [^\n]*\n)?(?:Original token count: \d+\n)?Output:\n`)
	// codexShellText is the shell tools' model-facing text: "Exit code:
	// N", "Wall time", an optional "Total output lines: N" (the output
	// was cut for the model), then "Output:" and the output.
	// codexAbortedText is Codex's whole text for a command the user
	// stopped (a cancel, or a rejection before it ran): "aborted by user
	// after 2.0s" (unified exec), "Wall time: 2.0 seconds\naborted by
	// user" (shell tools).
	codexAbortedText = regexp.MustCompile(`^(?:Wall time: [^\n]*\n)?aborted by user(?: after [^\n]*)?\s*$`)
	codexShellText   = regexp.MustCompile(`^Exit code: (-?\d+)\nWall time: ([^\n]*)\n(Total output lines: \d+\n)?Output:\n`)
	// codexWallSeconds is the shell tools' wall time ("1 seconds", "2.3
	// seconds"): the command's run time, rounded to a tenth of a second.
	codexWallSeconds = regexp.MustCompile(`^(\d+(?:\.\d+)?) seconds$`)
)

// codexModelText reads a replayed text rawOutput: the tool's model-facing
// text. Its header is Codex's own statement, not output: the exit code is
// a text marker (ExitText; -1 is still the "no exit code" sentinel); the
// rest is the output as the model saw it (cut, with an elision marker,
// when it was long: then it is truncated). A process still running when
// the tool returned has no exit and only the output so far; one killed
// at its timeout has Codex's timeout sentence before its output (TimedOut,
// not output). "execution error: ..." is Codex's report that the command
// was killed by a signal or could not run (codexReplayedExecError), and
// "aborted by user" says the user stopped it (Cancelled); neither is
// output. A text of any other form (an error of the tool) says nothing
// about the command's output or exit and is not read.
func codexModelText(o *accum.Observation, text string) {
	if !codexHeadedText(o, text) && !codexJSONShellText(o, text) && !codexReplayedExecError(o, text) {
		codexToolNotice(o, text)
	}
}

// codexJSONShell is the shell tools' result as Codex gives it to the
// model in JSON: codex-acp 0.14.0 replays a shell_command's result so, a
// string holding {"output": ..., "metadata": {"exit_code": N,
// "duration_seconds": S}}, where 0.11.1 and 0.16.0 replay the text form
// (codexShellText).
type codexJSONShell struct {
	Output   *string `json:"output"`
	Metadata *struct {
		ExitCode *json.Number `json:"exit_code"`
		Duration *float64     `json:"duration_seconds"`
	} `json:"metadata"`
}

// codexJSONShellText reads a replayed text in the JSON form
// (codexJSONShell): exactly those members, an exit code and a duration.
// Its output is read as the text form's section after "Output:": Codex's
// timeout sentence beside a nonzero exit says the call timed out, and a
// "Total output lines: N" header with a blank line is Codex's only above
// its elision marker (the output is then truncated). It reports whether
// text had that form.
func codexJSONShellText(o *accum.Observation, text string) bool {
	if !strings.HasPrefix(text, `{"output":`) {
		return false
	}
	var v codexJSONShell
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if dec.Decode(&v) != nil || dec.More() || v.Output == nil || v.Metadata == nil || v.Metadata.ExitCode == nil || v.Metadata.Duration == nil {
		return false
	}
	c := CodeFromString(v.Metadata.ExitCode.String())
	if !c.Known {
		return false
	}
	rest, cut := codexHeaderCut(*v.Output)
	o.Src.Notice = "the model-facing JSON"
	codexModelOutput(o, &c, rest, false, cut, true, *v.Metadata.Duration, true)
	return true
}

// codexReplayedExecError reads Codex's "execution error: ..." text, which
// the Rust adapter replays alone where a command's model-facing text
// would be (a shell_command killed by a signal replays "execution error:
// Sandbox(Signal(15))"). Live, the same words are the end event's text
// beside the -1 "no exit code" sentinel (codexExecError), and they are
// read the same way here: the signal that killed the command, else
// Codex's report that it could not run or finish it; a failure either
// way, with no exit code, and never output (a command's own output comes
// after a header, codexHeadedText). It reports whether text was such an
// error.
func codexReplayedExecError(o *accum.Observation, text string) bool {
	if !strings.HasPrefix(text, codexExecErrorPrefix) {
		return false
	}
	o.Failed = true
	if m := codexSandboxSignal.FindStringSubmatch(text); m != nil {
		o.Signal = NormalizeSignal(m[1])
	} else {
		o.FailNotice = notice(text)
	}
	o.Src.Notice = "Codex's execution error in the model-facing text"
	return true
}

// codexHeadedText reads a text in one of the tools' model-facing forms
// (codexExecText, codexShellText) into o: the header's exit code (a text
// marker) and the rest as output. It reports whether text had that form.
func codexHeadedText(o *accum.Observation, text string) bool {
	code, rest, running, cut, shell := "", "", false, false, false
	wall, wallOK := 0.0, false
	if m := codexExecText.FindStringSubmatchIndex(text); m != nil {
		if m[2] >= 0 {
			code = text[m[2]:m[3]]
		}
		running = m[4] >= 0
		rest = text[m[1]:]
	} else if m := codexShellText.FindStringSubmatchIndex(text); m != nil {
		code = text[m[2]:m[3]]
		if w := codexWallSeconds.FindStringSubmatch(text[m[4]:m[5]]); w != nil {
			if v, err := strconv.ParseFloat(w[1], 64); err == nil {
				wall, wallOK = v, true
			}
		}
		cut = m[6] >= 0
		rest = text[m[1]:]
		shell = true
	} else {
		return false
	}
	var c *Code
	if code != "" && !running {
		parsed := CodeFromString(code)
		c = &parsed
	}
	o.Src.Notice = "header of the model-facing text"
	codexModelOutput(o, c, rest, running, cut, shell, wall, wallOK)
	return true
}

// codexModelOutput reads what a model-facing text (codexHeadedText,
// codexJSONShellText) says: its exit code c, when it states one, and the
// output rest, cut for the model when cut says so or an elision marker
// shows it; running: the process was still running (the output so far);
// shell: one of the shell tools, whose output opens with Codex's timeout
// sentence when the command was killed at its timeout; wall: the run
// time in seconds that the text states beside it (wallOK: it states one).
func codexModelOutput(o *accum.Observation, c *Code, rest string, running, cut, shell bool, wall float64, wallOK bool) {
	var exit *accum.Exit
	if c != nil {
		if exit = c.Exit(accum.ExitText, true); exit != nil {
			o.Exit = accum.StrongerExit(o.Exit, exit)
			o.Src.Exit = "exit line of the model-facing text"
		}
	}
	if shell && (exit == nil || exit.Code != 0) && strings.HasPrefix(rest, codexTimedOutPrefix) {
		// The shell tools' output section opens with Codex's timeout
		// sentence when the command was killed at its timeout (exit
		// 124), as formatted_output does live (see readCodex): it says
		// the call timed out and is no output. Beside an exit of 0 the
		// words are the command's own, and so are they where they name
		// another run time than the wall time beside them: Codex's
		// sentence states the milliseconds the command ran, the wall
		// time the same in tenths of a second (test/agents
		// codex-timeout: "command timed out after 1004 milliseconds"
		// beside "Wall time: 1 seconds"; k_codex_timeout's printed
		// "2000 milliseconds" beside "0 seconds"). A command that
		// prints the sentence after running as long as it says replays
		// the same bytes as a timeout: read alone, its replay is taken
		// for one (an agent limit; live, formatted_output tells them
		// apart).
		if m := codexTimedOut.FindStringSubmatchIndex(rest); m != nil && wallOK && codexRunTimeAgrees(rest[m[2]:m[3]], wall) {
			rest = rest[m[1]:]
			o.TimedOut = true
			o.Src.Notice += " and Codex's timeout sentence"
		}
	}
	cut = cut || codexElided.MatchString(rest)
	kind := accum.Final
	if running {
		kind = accum.Snapshot
	}
	if rest != "" || cut {
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: kind, Text: rest, Truncated: cut})
	}
}

// codexRunTimeAgrees says whether the milliseconds ms of Codex's timeout
// sentence name the run time that the wall time (seconds, rounded to a
// tenth) states: they differ by at most the rounding.
func codexRunTimeAgrees(ms string, wall float64) bool {
	n, err := strconv.ParseFloat(ms, 64)
	return err == nil && math.Abs(n/1000-wall) <= 0.06
}

// codexMaybeHeadedText says cheaply whether a formatted_output may be in
// a model-facing form (codexHeadedText), before it is unquoted.
func codexMaybeHeadedText(t *rawText) bool {
	return t.HasPrefix("Chunk ID: ") || t.HasPrefix("Wall time: ") || t.HasPrefix("Command: ") || t.HasPrefix("Exit code: ")
}

// codexMaybeToolNotice says cheaply whether a formatted_output may be one
// of Codex's texts about a command (codexToolNotice), before it is
// unquoted.
func codexMaybeToolNotice(t *rawText) bool {
	return t.HasPrefix("exec_command failed") || t.HasPrefix("exec command rejected") ||
		t.HasPrefix("aborted by user") || t.HasPrefix("Wall time: ")
}

// codexToolNotice reads Codex's own text about a command that it did not
// run or could not finish, which replays (and some finals) carry where the
// output would be: "aborted by user ..." (the user stopped or rejected
// it), "exec_command failed for `...`: CreateProcess { message:
// \"Rejected(\\\"rejected by user\\\")\" }" (rejected) or another
// "exec_command failed ..." (it could not run). It is never output. It
// reports whether text was such a notice.
func codexToolNotice(o *accum.Observation, text string) bool {
	switch {
	case codexAbortedText.MatchString(text):
		o.Cancelled, o.CancelNotice = true, "aborted by user"
	case strings.HasPrefix(text, codexRejectedText):
		o.Cancelled, o.CancelNotice = true, codexRejectedText
	case strings.HasPrefix(text, "exec_command failed"):
		if strings.Contains(text, "rejected by user") {
			o.Cancelled, o.CancelNotice = true, "rejected by user"
		} else {
			o.Failed, o.FailNotice = true, notice(text)
		}
	default:
		return false
	}
	o.Src.Notice = "Codex's words about the command"
	return true
}

func askCodex(tc *codexUpdate) accum.Observation {
	o := askObservation(&tc.ToolCall, &tc.RawInput.ShellInput)
	if codexOtherTool(tc) {
		o.Shell = accum.ShellNo // an MCP tool's approval (setAskMeta)
	}
	codexCommand(&o, &tc.RawInput.Command, tc.Name.Present, true)
	o.ApprovalReason = codexAskReason(o.ApprovalReason)
	if r := strings.TrimSpace(tc.RawInput.Reason.S); r != "" {
		o.ApprovalReason = r
	}
	return o
}

// codexAskSections are the sections the Rust adapter writes after the
// reason in an exec ask's text, each a header line whose value may go on
// over the following lines; drop says the section describes the options
// (the execpolicy amendment "always allow" would add, the decisions), not
// why Codex asks.
var codexAskSections = []struct {
	header string
	drop   bool
}{
	{"Proposed Amendment: ", true},
	{"Network Approval Context: ", false},
	{"Additional Permissions: ", false},
	{"Available Decisions: ", true},
	{"Proposed Network Policy Amendments: ", true},
}

// codexAskReason is an ask's text without the adapter's sections that
// describe the options (codexAskSections); a text without any section is
// kept whole.
func codexAskReason(text string) string {
	if !strings.Contains(text, "Proposed Amendment: ") && !strings.Contains(text, "Available Decisions: ") {
		return text
	}
	var keep []string
	drop := false
	for _, line := range strings.Split(text, "\n") {
		for _, s := range codexAskSections {
			if strings.HasPrefix(line, s.header) {
				drop = s.drop
				break
			}
		}
		if !drop {
			keep = append(keep, line)
		}
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}
