package dialect

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// cline reads Cline CLI (`cline --acp`, npm `cline`; agentInfo.name
// "cline"), tool `run_commands` {commands: [..]}.
//
// What it sends, and what it means here:
//   - frames out of order: a `tool_call_update` (`pending`, title
//     `run_commands: <cmd>`, kind, `rawInput {commands}`) BEFORE any
//     `tool_call`, then the permission ask, then `in_progress`, and only
//     then the `tool_call`, status `pending` again. The session opens the
//     call on the first frame; a later `pending` never takes a running or
//     ended call back (the core's rule), and a frame that changes nothing
//     makes no revision. The title is never the command.
//   - `rawInput.commands[]`: each a command line (a string, or an object
//     `{command, args?}`). One call may carry SEVERAL commands, which
//     Cline starts at once, each in its own shell. Such a call is one
//     ShellExec: its command is the commands one per line, in Cline's
//     order; its output is each command's output in that order; see
//     clineAggregate for its outcome.
//   - no live output and no content. The final `rawOutput` is an array,
//     one entry per command, `{query, result, error?, success}`. `result`
//     is `[Command exited with code N]\n<stdout>` (the bracket line is the
//     exit code, not output) plus `\n[stderr]\n<stderr>` when the command
//     wrote to stderr (the marker, the last one, is not output, the
//     stderr text is: the streams are really separate, so they are
//     reported as stdout and stderr, and the combined output is stdout
//     then stderr). A success
//     states no code: `success: true`, the result only the output. The
//     status stays `completed` for every exit. `query` is the command,
//     but Cline 3 shortens one past 200 chars (see clineQuery): it
//     names a call only while no rawInput has (as a title would).
//   - `success: true` with no bracket line and no error: Cline resolves a
//     command as a success only when its process closed with code 0 (any
//     other code, or none, takes its `Command exited with code N` path; a
//     command moved to the background says so, see below), so it is
//     exit 0, read as a structured field.
//   - a signal reads as code 1 (Cline writes 1 for a process without an
//     exit code): exit 1, nothing more can be known.
//   - errors: `Command failed: Command was aborted` (the user's cancel,
//     `completed`, output lost) is Cancelled; `Command failed: Command
//     timed out after Nms` is TimedOut; any other `Command failed: ...` is
//     Failed, its text in the reason. None is output.
//   - notices in `result`, never output: `[Command is still running.
//     Output will continue in <file>]` (moved to the background:
//     Background), `[Command completed with background processes still
//     running; ...]` (after a "\n", at the very end), and `[... output
//     truncated: N chars total. ...]` between a head and a tail of
//     24,000 chars each (Truncated, at least N bytes, split between the
//     streams as parseClineResult says; see clineCut).
//   - a rejection: `failed`, `rawOutput` a JSON STRING holding
//     `{"error":"User rejected the tool call ..."}`: Cancelled, the error
//     its notice.
//   - session/load replays: `rawOutput` is a JSON string of one entry (or
//     of the array); it is read like the live value.
//
// Cline 2 (2.18.0, the Node build) has the older tool execute_command
// {command, requires_approval}: title `Execute command: <cmd>`, the command
// in `rawInput.command`, and, when the model asked for approval, the marker
// "REQ_APP" glued to the end of both (cut where the title shows it; a
// command that ends in those letters under such a title loses them). It
// sends each call twice (a second id, asked again), runs the command with
// its output in a log file (`rawOutput {output: "📋 Output is being logged
// to: <file>"}`, a notice: no entries, nothing read) and never ends the
// call: no output and no exit code reach the wire.
type cline struct{}

func init() { register(cline{}) }

func (cline) Info() Info {
	return Info{
		Name:               "cline",
		AgentNames:         []string{"cline", "cline-cli"},
		AuthMethodIDs:      []string{"cline", "cline-pass", "cline-oauth"}, // cline-oauth: 2.x builds
		Summary:            "Cline run_commands: out-of-order frames, commands from rawInput.commands[] (several are one call, one per line), the final rawOutput array's [Command exited with code N] and [stderr] markers, success without a code, abort, timeout and rejection errors.",
		ClientCapabilities: richCapabilities,
	}
}

// clineCommands is `rawInput.commands`: command lines, from strings or
// `{command, args}` objects. Items of other types are skipped.
type clineCommands []string

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (c *clineCommands) UnmarshalJSON(b []byte) error {
	*c = nil
	jsonlit.EachElement(b, func(val []byte) bool {
		var line CommandLine
		if bytes.HasPrefix(bytes.TrimSpace(val), []byte("{")) {
			var args CommandLine
			jsonlit.EachMember(val, func(key string, v []byte) {
				switch key {
				case "COMMAND":
					line.UnmarshalJSON(v)
				case "ARGS":
					args.UnmarshalJSON(v)
				}
			})
			if line.Line != "" && args.argv != nil {
				line.Line = JoinArgv(append([]string{line.Line}, args.argv...))
			}
		} else {
			line.UnmarshalJSON(val)
		}
		if strings.TrimSpace(line.Line) != "" {
			*c = append(*c, line.Line)
		}
		return len(*c) < 256
	})
	return nil
}

// clineInput is run_commands' `rawInput`, or execute_command's (Cline 2).
type clineInput struct {
	Commands clineCommands `json:"commands"`
	Command  CommandLine   `json:"command"`
}

// clineApproval is the marker Cline 2 glues to the end of its ask text,
// and so to the title and rawInput.command, when the model asked for
// approval (execute_command's requires_approval).
const clineApproval = "REQ_APP"

// clineEntry is one command's result.
type clineEntry struct {
	Query   Str
	Result  Str
	Error   Str
	Success *bool
}

// clineOutput is `rawOutput`: the entries (an array, one object, or a
// JSON string of either), or an error alone (a rejection).
type clineOutput struct {
	Entries []clineEntry
	// Error is the `error` of an object that is no command's result.
	Error string
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (c *clineOutput) UnmarshalJSON(b []byte) error {
	*c = clineOutput{}
	c.read(b, 0)
	return nil
}

func (c *clineOutput) read(b []byte, depth int) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return
	}
	switch b[0] {
	case '"':
		var s Str
		if s.UnmarshalJSON(b); s.Set && depth == 0 {
			inner := bytes.TrimSpace([]byte(s.S))
			if json.Valid(inner) {
				c.read(inner, 1)
			} else if s.S != "" {
				c.Error = s.S
			}
		}
	case '[':
		jsonlit.EachElement(b, func(val []byte) bool {
			if e, ok := readClineEntry(val); ok {
				c.Entries = append(c.Entries, e)
			}
			return len(c.Entries) < 256
		})
	case '{':
		if e, ok := readClineEntry(b); ok {
			if !e.Query.Set && !e.Result.Set && e.Success == nil {
				c.Error = e.Error.S
				return
			}
			c.Entries = append(c.Entries, e)
		}
	}
}

// readClineEntry reads one `{query, result, error, success}` object.
func readClineEntry(b []byte) (clineEntry, bool) {
	var e clineEntry
	ok := false
	jsonlit.EachMember(b, func(key string, val []byte) {
		ok = true
		switch key {
		case "QUERY":
			e.Query.UnmarshalJSON(val)
		case "RESULT":
			e.Result.UnmarshalJSON(val)
		case "ERROR":
			e.Error.UnmarshalJSON(val)
		case "SUCCESS":
			readBool(&e.Success, val)
		}
	})
	return e, ok
}

func (clineOutput) ownFields() []string {
	var f []string
	for _, m := range []string{"query", "result", "error", "success"} {
		f = append(f, m, "[]."+m)
	}
	return f
}

// clineCall is a tool call frame of Cline.
type clineCall struct {
	ToolCall
	RawInput  *clineInput  `json:"rawInput"`
	RawOutput *clineOutput `json:"rawOutput"`
}

// unreadFields: a background command's rawOutput.output is the notice
// of where its output is logged, and a refusal's rawOutput.reason
// restates the status; the content says both.
func (clineCall) unreadFields() []string {
	return []string{"rawOutput.output", "rawOutput.reason"}
}

// neverEchoes: Cline writes each command's stdout and stderr as they
// came, never the command before it (see neverEchoes).
func (cline) neverEchoes() {}

func (cline) read(msg []byte, scope string) (Frame, error) {
	return readFrame(msg, scope, observeCline, askCline)
}

func observeCline(u *clineCall) []accum.Observation {
	if u.SessionUpdate != "tool_call" && u.SessionUpdate != "tool_call_update" {
		return nil
	}
	o := u.Base()
	clineInputs(&o, u)
	if o.Shell == accum.ShellNo || u.RawOutput == nil {
		return []accum.Observation{o}
	}
	out := u.RawOutput
	if len(out.Entries) == 0 {
		if out.Error != "" {
			if clineRejected.MatchString(out.Error) {
				o.Cancelled, o.CancelNotice = true, notice(out.Error)
			} else {
				o.Failed, o.FailNotice = true, notice(out.Error)
			}
		}
		return []accum.Observation{o}
	}
	if o.Shell == accum.ShellUnknown {
		o.Shell = accum.ShellYes
	}
	if o.Command == "" {
		// A final names its commands only by `query`, which Cline 3
		// shortens past clineQueryMax chars: like a title, it names a call
		// whose command is not known yet, and never renames one that
		// rawInput named (accum: CommandFromTitle).
		var queries []string
		for _, e := range out.Entries {
			if q := clineQuery(e.Query.S); q != "" {
				queries = append(queries, q)
			}
		}
		o.Command = strings.Join(queries, "\n")
		o.CommandFromTitle = o.Command != ""
	}
	clineAggregate(&o, out.Entries)
	return []accum.Observation{o}
}

func askCline(u *clineCall) accum.Observation {
	o := u.askBase()
	clineInputs(&o, u)
	o.ApprovalReason = u.askReason()
	return o
}

// clineQueryMax is the length, in UTF-16 units, past which Cline 3 cuts
// an entry's `query` (its bundle: `${cmd.slice(0,200)} ... [command
// truncated: ${n} more chars; full command is in the tool call input]`).
const clineQueryMax = 200

var clineQueryCut = regexp.MustCompile(`^([\s\S]*) \.\.\. \[command truncated: \d+ more chars; full command is in the tool call input\]$`)

// clineQuery is the command a query names: a shortened one's first
// clineQueryMax chars, without Cline's note (the rest is lost: the
// contract has no mark for a cut command, so the head stands for it
// until a frame with rawInput names the whole one). The note's words
// after a head of any other length are the command's own.
func clineQuery(q string) string {
	if m := clineQueryCut.FindStringSubmatch(q); m != nil && utf16Len(m[1]) == clineQueryMax {
		return m[1]
	}
	return q
}

// clineInputs reads the command: the commands, one per line, or Cline 2's
// execute_command line without its approval marker (cut only where the
// title "Execute command: <line>" shows that Cline put it there).
func clineInputs(o *accum.Observation, u *clineCall) {
	in := u.RawInput
	if in == nil {
		return
	}
	switch {
	case len(in.Commands) > 0:
		o.Command = strings.Join(in.Commands, "\n")
	case strings.TrimSpace(in.Command.Line) != "":
		o.Command = in.Command.Line
		if u.Title != nil && *u.Title == "Execute command: "+o.Command {
			o.Command = strings.TrimSuffix(o.Command, clineApproval)
		}
	default:
		return
	}
	if o.Shell == accum.ShellUnknown {
		o.Shell = accum.ShellYes
	}
}

var (
	clineExitLine  = regexp.MustCompile(`^\[Command exited with code (-?\d+)\](?:\n|$)`)
	clineExitError = regexp.MustCompile(`^Command exited with code (-?\d+)$`)
	clineRunning   = regexp.MustCompile(`^\[Command is still running\. Output will continue in [^\n\]]*\](?:\n|$)`)
	// Cline appends this note as "<output>\n<note>", nothing after it
	// (`${output}\n${note}` in its bundle): a line with its words ended
	// by "\n", or with no "\n" before it, is the command's.
	clineBgNote    = regexp.MustCompile(`\n\[Command completed with background processes still running; their output is no longer captured\]$`)
	clineTruncNote = regexp.MustCompile(`^\n\[\.\.\. output truncated: (\d+) chars total\.[^\n]*\.\.\.\]\n`)
	clineRejected  = regexp.MustCompile(`(?i)\buser rejected\b|\brejected the tool call\b|\bdenied\b`)
	clineAborted   = regexp.MustCompile(`(?i)\bCommand was aborted\b`)
	clineTimedOut  = regexp.MustCompile(`(?i)\btimed out after\b`)
)

// clineStderr separates stdout from stderr in a result. Cline writes
// `<stdout>` + clineStderr + `<stderr>` (only when there was stderr), so
// its marker is the LAST one: a "[stderr]" line the command printed to
// stdout comes before it and is output. A stderr that itself holds such a
// line is cut at that line instead; and when there was no stderr, a
// "[stderr]" line in stdout reads as Cline's marker: the wire cannot tell
// those apart, and a command's stderr is more often the text Cline
// appended than a stdout line that looks like its marker.
const clineStderr = "\n[stderr]\n"

// clineResult is one command's result taken apart.
type clineResult struct {
	exit           Code
	stdout, stderr string
	// outCut and errCut say which stream Cline's truncation note cut;
	// outTotal and errTotal are then at least that stream's size (0:
	// unknown), and total the size the note states of both.
	outCut, errCut     bool
	outTotal, errTotal int64
	total              int64
	background         bool
}

// parseClineResult removes Cline's markers and notices from a result.
func parseClineResult(e clineEntry) clineResult {
	var r clineResult
	s := e.Result.S
	// Cline writes the bracket line only for a process that did not close
	// with code 0: under `success: true` such a line is the command's.
	if m := clineExitLine.FindStringSubmatchIndex(s); m != nil && (e.Success == nil || !*e.Success) {
		r.exit = CodeFromString(s[m[2]:m[3]])
		s = s[m[1]:]
	} else if m := clineExitError.FindStringSubmatch(e.Error.S); m != nil {
		r.exit = CodeFromString(m[1])
	}
	if m := clineRunning.FindStringIndex(s); m != nil {
		r.background = true
		s = s[m[1]:]
	}
	if m := clineBgNote.FindStringIndex(s); m != nil {
		s = s[:m[0]]
	}
	cut := clineCut(s) // where the truncation note was, in s without it
	if cut >= 0 {
		m := clineTruncNote.FindStringSubmatchIndex(s[cut:])
		if c := CodeFromString(s[cut+m[2] : cut+m[3]]); c.Known && c.Value > 0 {
			r.total = int64(c.Value)
		}
		s = s[:cut] + s[cut+m[1]:]
	}
	if cut < 0 {
		if i := strings.LastIndex(s, clineStderr); i >= 0 {
			r.stdout, r.stderr = s[:i], s[i+len(clineStderr):]
		} else {
			r.stdout = s
		}
		return r
	}
	// Cline keeps each stream's first and last 24,000 chars, then the
	// first and last 24,000 of stdout, marker and stderr, its note
	// between them (the note's total counts both streams, in UTF-16
	// units, which never exceed UTF-8 bytes; utf16Len counts them). A marker is looked for on
	// either side of the note, never across it: one after the note shows
	// stdout was cut and the stderr after it is whole; one before it, that
	// stdout is whole and stderr was cut. With none in sight, the text is
	// stdout (the common case: no stderr), stated whole, and stderr is
	// unknown: a long one can have been cut out with the marker.
	if i := strings.LastIndex(s[cut:], clineStderr); i >= 0 {
		i += cut
		r.stdout, r.stderr = s[:i], s[i+len(clineStderr):]
		r.outCut, r.outTotal = true, r.total-int64(utf16Len(r.stderr))
	} else if i := strings.LastIndex(s[:cut], clineStderr); i >= 0 {
		r.stdout, r.stderr = s[:i], s[i+len(clineStderr):]
		r.errCut, r.errTotal = true, r.total-int64(utf16Len(r.stdout))
	} else {
		r.stdout = s
		r.outCut, r.errCut, r.outTotal = true, true, r.total
	}
	return r
}

// clineKeep is how much of a result Cline 3 keeps on each side of its
// truncation note, in UTF-16 units: its limit is 48,000 (the CLI sets no
// other), and it keeps the first ceil(48,000/2) and the last 48,000 less
// those (3.0.61's bundle: `${t.slice(0,X)}\n[... output truncated:
// ${total} chars total. ...]\n` + t.slice(-W); every recorded build,
// 3.0.57 and 3.0.65 too, shows 24,000 and 24,000).
const clineKeep = 24000

// clineCut is where Cline's truncation note starts in s, or -1: it writes
// one only over a text it cut, so exactly clineKeep UTF-16 units stand
// before it and clineKeep after it. The note's words anywhere else (a
// short output, say) are the command's.
func clineCut(s string) int {
	at := utf16Index(s, clineKeep)
	if at < 0 {
		return -1
	}
	m := clineTruncNote.FindStringIndex(s[at:])
	if m == nil || utf16Len(s[at+m[1]:]) != clineKeep {
		return -1
	}
	return at
}

// clineAggregate reads the entries of a final: one per command. The
// call's output is every command's stdout then stderr, in order; its
// stdout and stderr streams are the commands' streams, in order. Of
// several commands, an abort makes the call Cancelled, a timeout TimedOut,
// another error a failure; its exit code is the last stated nonzero one
// (a command that failed); only when every command succeeded is the call
// a success, proved by Cline's word and without an exit code.
func clineAggregate(o *accum.Observation, entries []clineEntry) {
	var combined, stdout, stderr strings.Builder
	allOK := true
	outCut, errCut, said := false, false, false
	// Each stream's size, at least: what is shown, or what Cline's note
	// says of a stream it cut.
	var total, outTotal, errTotal int64
	for _, e := range entries {
		r := parseClineResult(e)
		o.Background = o.Background || r.background
		if r.exit.Known && (r.exit.Value != 0 || o.Exit == nil) {
			o.Exit = r.exit.Exit(accum.ExitText, true)
		}
		ok := e.Success != nil && *e.Success && !r.background
		lost := false // the command's output is lost, not empty
		switch msg := e.Error.S; {
		case msg == "" || clineExitError.MatchString(msg):
		case clineAborted.MatchString(msg):
			o.Cancelled = true
			if o.CancelNotice == "" {
				o.CancelNotice = notice(msg)
			}
			ok, lost = false, e.Result.S == ""
		case clineTimedOut.MatchString(msg):
			o.TimedOut, ok, lost = true, false, e.Result.S == ""
		default:
			o.Failed, ok, lost = true, false, e.Result.S == ""
			if o.FailNotice == "" {
				o.FailNotice = notice(msg)
			}
		}
		allOK = allOK && ok
		if lost {
			continue
		}
		said = true
		combined.WriteString(r.stdout)
		combined.WriteString(r.stderr)
		stdout.WriteString(r.stdout)
		stderr.WriteString(r.stderr)
		outCut, errCut = outCut || r.outCut, errCut || r.errCut
		total += max(int64(len(r.stdout)+len(r.stderr)), r.total)
		outTotal += max(int64(len(r.stdout)), r.outTotal)
		errTotal += max(int64(len(r.stderr)), r.errTotal)
	}
	if allOK && o.Exit == nil {
		// Every command closed with code 0 (see cline): exit 0.
		o.Exit = &accum.Exit{Code: 0, Source: accum.ExitStructured}
	}
	if !said {
		return
	}
	kind := textKind(o.Status.Ended())
	// A size is stated only for a text Cline cut.
	sized := func(cut bool, n int64) int64 {
		if !cut {
			return 0
		}
		return n
	}
	truncated := outCut || errCut
	o.Texts = append(o.Texts,
		accum.Text{Stream: accum.Combined, Kind: kind, Text: combined.String(), Truncated: truncated, TotalBytes: sized(truncated, total)},
		accum.Text{Stream: accum.Stdout, Kind: kind, Text: stdout.String(), Truncated: outCut, TotalBytes: sized(outCut, outTotal)},
		accum.Text{Stream: accum.Stderr, Kind: kind, Text: stderr.String(), Truncated: errCut, TotalBytes: sized(errCut, errTotal)})
}
