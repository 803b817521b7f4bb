// Package accum folds the neutral observations that dialects read from ACP
// frames into the state of one shell tool call: its command, its bounded
// output streams, its exit evidence and its outcome.
//
// It knows no agent vendor. Dialects decide what a vendor field means (a
// delta, a cumulative snapshot, a final aggregate, an exit code of some
// strength); this package applies those meanings the same way for all.
package accum

// Stream names one text stream of a shell command.
type Stream uint8

const (
	// Combined is the terminal stream: stdout and stderr as the agent
	// interleaved them.
	Combined Stream = iota
	// Stdout is standard output alone, for agents that really separate it.
	Stdout
	// Stderr is standard error alone, for agents that really separate it.
	Stderr

	numStreams
)

// NumStreams is the number of text streams a call has; Stream values are
// below it.
const NumStreams = int(numStreams)

// TextKind says how a piece of text relates to the stream it belongs to.
type TextKind uint8

const (
	// Delta is text produced since the previous observation: it is appended.
	Delta TextKind = iota + 1
	// Snapshot is the whole output so far: it replaces what was held. When it
	// extends what was held only the new part is reported as appended.
	Snapshot
	// Window is the most recent tail of the whole output so far (a producer
	// that keeps only its last N characters). It is matched against what is
	// held by overlap, so that only genuinely new text is appended; with no
	// overlap it replaces.
	Window
	// Final is the complete output at the end of the call. It replaces the
	// live text without duplicating it.
	Final
)

// Text is one observation of one stream.
type Text struct {
	Stream Stream
	Kind   TextKind
	// Text is the observed text when Bytes is nil. It may hold invalid UTF-8,
	// which becomes U+FFFD.
	Text string
	// Bytes, when not nil, is raw output. A UTF-8 sequence split across
	// consecutive Delta observations is reassembled; invalid bytes become
	// U+FFFD.
	Bytes []byte
	// Truncated says the producer itself dropped part of this output.
	Truncated bool
	// Head, with Truncated, says the text is the beginning of the output
	// (a preview the producer cut): it never replaces a longer text held.
	Head bool
	// TotalBytes, when not 0, is the size the producer says the whole
	// output has (a truncation note's "N bytes total"); the stream then
	// reports at least that many bytes.
	TotalBytes int64
	// TrimmedEnd, on a Snapshot or a Final, says the producer may have
	// removed whitespace from the end of the output when it restated it:
	// when the text, without its trailing whitespace, ends with the held
	// text without its own, the held text's trailing whitespace is taken
	// as the output's, so that such a restatement neither wipes a final
	// newline nor replaces a text it only restates.
	TrimmedEnd bool
	// Rolling, on a Delta, describes a producer that keeps only the last
	// Rolling.Lines lines and Rolling.Bytes bytes of the output (0: no
	// bound of that kind) and that, when its new text no longer extends
	// the text it sent before, sends that whole new text instead of a
	// delta. A Delta that would make the producer's text longer than its
	// bounds cannot be a continuation: it is the producer's whole new
	// text, a tail of the output, aligned like a Window (and marking the
	// stream truncated when it overlaps nothing held). Otherwise it is
	// appended. See Buffer.
	Rolling Rolling
	// Raw says the text came straight from the process (a client-owned
	// terminal's output): it is never an echo of the command, so nothing
	// of it is held back or removed as one.
	Raw bool
	// Valid says Text is valid UTF-8 already (its producer decoded it
	// itself, as a JSON string decoder does, and checked every byte), so
	// the Buffer does not read it again to check. Set it only when that is
	// certain: a Buffer holds only valid UTF-8, and one given invalid text
	// marked Valid would hold it. Ignored when Bytes is not nil.
	Valid bool
	// IfSplit marks a Stdout or Stderr text that came without its sibling
	// stream: it updates that stream only when the call already holds it
	// (an earlier observation really separated the streams), and is
	// ignored otherwise, since one named stream alone does not show that
	// the agent separates them.
	IfSplit bool
	// Unheld, on a Delta, is how many bytes of output the stream was sent
	// and does not hold (its update was refused, for memory): they count
	// in its total, which is the text seen before bounding.
	Unheld int64
	// Whole, on a Snapshot or a Final, is the text as the agent sent it,
	// when the dialect removed from it words it took for the agent's own
	// about the command (an exit line, a notice): Text is the rest, maybe
	// empty. When the stream already holds exactly Whole (an earlier
	// source gave this output whole, so the words are what the command
	// printed), Whole applies instead, and the evidence read from the
	// words (Observation.Worded) is dropped; otherwise Text applies, or,
	// when it is empty, nothing.
	Whole string
}

// Rolling bounds the text a rolling producer keeps (see Text.Rolling).
// The zero value is no rolling producer.
type Rolling struct {
	// Lines is the most lines the producer's text holds: newlines, plus a
	// last line without one.
	Lines int
	// Bytes is the most UTF-8 bytes the producer's text holds.
	Bytes int
}

// Status is the ACP tool call status as the agent sent it. It is evidence of
// where the call is, never of how the command ended.
type Status uint8

const (
	// StatusNone: the frame did not carry a status.
	StatusNone Status = iota
	// StatusPending is ACP `pending`.
	StatusPending
	// StatusRunning is ACP `in_progress`.
	StatusRunning
	// StatusCompleted is ACP `completed`: the tool call ended. It says nothing
	// about the exit code.
	StatusCompleted
	// StatusFailed is ACP `failed`: the tool call ended and the agent calls it
	// a failure.
	StatusFailed
)

// Ended reports whether the status ends the tool call.
func (s Status) Ended() bool { return s == StatusCompleted || s == StatusFailed }

// ExitSource ranks where an exit code was read, weakest first. A stronger
// source is never overridden by a weaker one.
type ExitSource uint8

const (
	// ExitNone: no exit code.
	ExitNone ExitSource = iota
	// ExitText: a marker in text (`Exit code N`, `<return-code>`, ...).
	ExitText
	// ExitStructured: a structured rawOutput field (`exit_code`, `exitCode`,
	// `metadata.exit`, ...).
	ExitStructured
	// ExitStatus: the ACP v2 terminal `exitStatus`.
	ExitStatus
	// ExitTerminal: the `_meta.terminal_exit` convention.
	ExitTerminal
	// ExitClient: the exit status of a client-owned terminal, which the
	// client itself saw (ACP `terminal/output` exitStatus,
	// `terminal/wait_for_exit`): the strongest source.
	ExitClient
)

// Exit is one piece of exit evidence.
type Exit struct {
	Code   int32
	Source ExitSource
	// Placeholder marks a value sent while the command was still running
	// (some agents send exit 0 on every live frame). A Call never reports a
	// placeholder: only a value that is not one becomes the exit code, so a
	// call that ends without one has an unknown exit.
	Placeholder bool
}

// StrongerExit returns the stronger of two pieces of exit evidence: a value
// that is not a placeholder beats one that is, then the stronger source
// wins, then b (the later one).
func StrongerExit(a, b *Exit) *Exit {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.Placeholder != b.Placeholder:
		if a.Placeholder {
			return b
		}
		return a
	case a.Source > b.Source:
		return a
	}
	return b
}

// Verdict is what an agent's own structured result says of how the
// command ended, beside (or instead of) its exit code, when it says the
// command failed without saying how. A result that says timed out or
// cancelled sets Observation.TimedOut or Cancelled instead. Dialects map
// the agent's words; the Call applies the same meaning for every agent.
type Verdict uint8

const (
	// VerdictNone: the frame names no such word (or a word of success).
	VerdictNone Verdict = iota
	// VerdictFailed: the result says the command failed.
	VerdictFailed
)

// Worded says which of an observation's evidence was read from words the
// dialect removed from a text (Text.Whole). Failed: the words were the
// agent's error message (Observation.Failed, FailNotice).
type Worded struct {
	Exit, Signal, TimedOut, Cancelled, Background, Failed bool
}

// Shell says whether a frame shows the call to be a shell command.
type Shell uint8

const (
	// ShellUnknown: this frame does not say.
	ShellUnknown Shell = iota
	// ShellYes: the call runs a shell command.
	ShellYes
	// ShellNo: the call is some other tool (a read, an edit, a fetch).
	ShellNo
)

// Observation is everything one frame says about one tool call, in neutral
// terms. Zero values mean "not said": a string field that is empty leaves the
// call's value unchanged.
type Observation struct {
	// ToolCallID names the call. It may be empty when only TerminalID is
	// known (ACP v2 terminal updates); the session then finds the call that
	// owns the terminal.
	ToolCallID string
	// TerminalID is the terminal the call's output flows through, if any.
	TerminalID string
	// AboutTerminal says that what the observation says of a command
	// (its output and how it ended: see TakeEvidence) is about the
	// command of TerminalID, whichever call started it. Some agents
	// report on a command that went on in the background through
	// another tool (one that reads or stops it) whose result has the
	// shape of the command's own final, so the dialect cannot tell
	// which call a frame is about. When the frame's call is not known
	// as a shell command and another call owns TerminalID, the session
	// gives that part to the owner; the frame's call keeps the rest
	// (its status, a cancel of that tool) and never takes the terminal.
	AboutTerminal bool

	// Opens is true for frames that announce a call (`tool_call`). Dialects
	// use it (an opening frame's content is not output); the session opens
	// a call on the first frame that names it, whatever this says.
	Opens bool
	// Shell says whether the call is a shell command.
	Shell Shell

	Command string
	// CommandFromTitle says Command was read from a title, which may
	// abbreviate or decorate the command: it names the call only while no
	// other frame has named its command, and never replaces one.
	CommandFromTitle bool
	// CommandRan says Command is the command line that was run (a
	// client-owned terminal's terminal/create): it replaces any other,
	// and no other replaces it.
	CommandRan  bool
	Cwd         string // may be relative; the session resolves it
	Description string
	Status      Status

	// Texts are output observations, applied in order.
	Texts []Text

	// Exit is exit evidence, if any. An exit code of 0 in an observation
	// that also reports a Signal is not an exit status (a process that a
	// signal killed did not exit 0): the Call ignores it.
	Exit *Exit
	// ExitSetAside says the frame carried an exit code that the dialect
	// does not take as the command's (the agent fills the field with a
	// value of its own): it is no exit evidence, but when the call ends
	// with no other, its outcome reason says an exit code was sent and
	// set aside rather than that none was sent.
	ExitSetAside bool
	// Signal names the signal that ended the command ("SIGKILL").
	Signal string
	// TimedOut says the command was stopped by a timeout.
	TimedOut bool
	// Cancelled says the user rejected or cancelled the command.
	Cancelled bool
	// CancelNotice, with Cancelled, is the agent's own words about it (a
	// refusal or cancel notice, shortened), said in the outcome reason;
	// such a notice is never output.
	CancelNotice string
	// Background says the command was started in the background. The
	// frame that ends such a call cannot know how the command ends: an
	// exit code 0 on it is no exit evidence (see Call.Apply).
	Background bool
	// FailNotice is the agent's own words about a failure it reports
	// without an exit code (Failed or a failed Verdict), shortened; the
	// outcome reason quotes it. Such a notice is never output.
	FailNotice string
	// Succeeded is an agent-specific proof of success that a dialect
	// documents (used only when no exit code is known).
	Succeeded bool
	// Failed says the agent reports a failure that is not an exit code (a
	// spawn error, a tool error).
	Failed bool
	// Verdict is the agent's own word that the command failed: the call
	// never ends SUCCEEDED, whatever exit code 0 says.
	Verdict Verdict

	// Worded is the evidence the dialect read from words it removed from a
	// text (see Text.Whole), dropped when those words prove to be output.
	Worded Worded
	// ExitWordsOutput says the frame shows that the agent wrote no exit
	// line over this call's output: it ends the call as one the agent
	// writes such a line for only when the command failed, and says it
	// did not. An exit code an earlier frame read from words removed from
	// a text (Worded.Exit) was then the command's own output: the call
	// drops that code and, when the stream still holds exactly what the
	// text left and those words were all that was removed, puts the text
	// back whole.
	ExitWordsOutput bool
	// WordsIfFailed, on a frame that does not end the call, says the words
	// the dialect removed from its texts (Text.Whole) are the agent's only
	// if the agent then ends the call `failed`: the agent sends them where,
	// and as, a command's output comes, and only its final tells the two
	// apart. The call holds those texts, and the evidence read from the
	// words (Worded), until it ends: a `completed` final makes the words
	// output (Whole applies, and that evidence is dropped); a `failed`
	// final, or an end without a final, makes them the agent's (as if the
	// flag were not set), but for words that are the agent's error message
	// and say nothing else (Worded.Failed alone): only a `failed` final
	// makes those the agent's, and an end without one makes them output.
	// Words the stream already holds whole are output at once, as without
	// the flag.
	WordsIfFailed bool
	// WordsIfCancelAsked, on a live frame, says the words the dialect
	// removed from its texts (Text.Whole) are the agent's only if the
	// user cancelled the prompt turn while the call was open (ACP
	// `session/cancel`, Call.CancelRequested): the agent writes them
	// where, and as, a command's output comes, and only after a cancel.
	// Without that cancel they are output (Whole applies, and the
	// evidence read from them, Worded, is dropped). A replayed frame is
	// read as if the flag were not set: a replay carries no cancel.
	WordsIfCancelAsked bool

	// Replayed says the observation restates history (an agent replaying
	// a loaded session, ACP `session/load`), which is often poorer than
	// what the live frames said. It only fills in what the call does not
	// know: a command, cwd or description it has none of, output for a
	// stream it never saw, and exit evidence or an end it lacks; it never
	// replaces or worsens what the call holds.
	Replayed bool
	// ExitLiveOnly says Exit is evidence only on a live frame: the agent
	// fills that value in itself when it replays a session, so on a
	// Replayed observation it says nothing of the exit.
	ExitLiveOnly bool
	// NoEcho says the agent never writes the command before its output:
	// no text of the observation is held back or cut as an echo of the
	// command (see echo.go), so a command that itself prints
	// "$ <command>" first keeps that line.
	NoEcho bool

	// PermissionAsk is true for `session/request_permission`.
	PermissionAsk bool
	// ApprovalReason is the text the agent gave for its permission ask.
	ApprovalReason string

	// Src says which fields of the frame this observation's values were
	// read from. It is for people (acpnormd replay --explain), never
	// for the call's state: a dialect sets a label, a constant string,
	// next to the assignment it describes.
	Src Sources
	// Unrecognized is what the frame carried about the call that its
	// dialect does not read but that looks like a result (an exit code,
	// output, a result block): a sign that the agent's wire changed. It
	// changes nothing in the call; the session counts it and explain
	// prints it.
	Unrecognized []Unrecognized
}

// Sources names where an observation's values were read, as paths into
// the update or toolCall of the frame: "rawInput.command",
// "rawOutput.metadata.exit", "_meta.terminal_exit.exit_code",
// "content text", "rawOutput.output". Empty: not said (explain then
// names only the dialect that read the value). Labels are constants:
// setting one costs a store, never an allocation.
type Sources struct {
	// Command is where Command was read.
	Command string
	// Cwd is where Cwd was read.
	Cwd string
	// Exit is where Exit (or Signal) was read.
	Exit string
	// Output is where the output texts were read (the last one, when
	// several fields gave texts).
	Output string
	// Notice says what the dialect kept out of output as a notice (a
	// description, banner, exit line, truncation note, agent notice),
	// and from which field: "exit line of the content text",
	// "<shell_metadata> block of rawOutput.output".
	Notice string
}

// Unrecognized is one thing a frame carried that its dialect does not
// read (see Observation.Unrecognized).
type Unrecognized struct {
	// What is one of the Unrecognized* kinds: a fixed, small set, fit for
	// a metric label.
	What string
	// Field is where it was: a path into the update ("rawOutput.metadata.exit_status",
	// "content text"), at most MaxFieldPath bytes. It names fields, never
	// holds their values.
	Field string
}

// The kinds of Unrecognized.What.
const (
	// UnrecognizedExit: a member the dialect does not read whose name
	// says exit, code, status or signal, with a number (or a numeric
	// string, or a signal name); or one the dialect reads as an exit code
	// (or an object or array holding one) sent with another JSON type, or
	// with a number no exit code is (a fraction, one over int32).
	UnrecognizedExit = "exit_field"
	// UnrecognizedOutput: a member the dialect does not read whose name
	// says output, stdout, stderr, data, text, out, result, chunk, body,
	// log or content, with a sizeable string or a byte array; or one the
	// dialect reads as output (or an object or array holding it) sent
	// with another JSON type.
	UnrecognizedOutput = "output_field"
	// UnrecognizedResult: text that reads like a result block (a line
	// `Exit Code: N`, `Process exited with code N`, a first line `exit
	// status N`) on a frame that ends the call, from which the dialect
	// read no exit, or an agent's failure notice that reads like an exit
	// line; or an exit line (ExitLineIn) left at either end of a shell
	// call's output when it ends (Call.ExitLineHeld, said by the session).
	UnrecognizedResult = "result_text"
	// UnrecognizedStatus: a `status` that is none of ACP's four
	// (pending, in_progress, completed, failed): the call is not taken
	// to have ended, but the output and exit code beside it are read as
	// the dialect reads a final's (an aggregate as live text).
	UnrecognizedStatus = "status_value"
	// UnrecognizedContent: a content item of a type ACP does not define
	// (or a content block of one), which no dialect reads, or a text
	// block without a string `text`.
	UnrecognizedContent = "content_type"
	// UnrecognizedShell: a frame that opens a tool call carries signs of
	// a shell call (the kind `execute`, a terminal content item, a
	// `rawInput.command`, a tool call id naming a shell) that its dialect
	// did not take for one: the call is left out, as any other tool's.
	UnrecognizedShell = "shell_unread"
)

// MaxFieldPath bounds Unrecognized.Field.
const MaxFieldPath = 128

// TakeEvidence moves what o says of how a command ran and ended (its
// output, exit evidence, signal, timeout, failure, verdict, background,
// with their sources) into an observation that names only o's terminal,
// for the call that owns it (see AboutTerminal). o keeps what it says of
// its own call: identity, status, a permission ask, a cancel, and no
// terminal.
func (o *Observation) TakeEvidence() Observation {
	ev := Observation{
		TerminalID: o.TerminalID, Texts: o.Texts, Exit: o.Exit, ExitSetAside: o.ExitSetAside, ExitLiveOnly: o.ExitLiveOnly,
		Signal: o.Signal, TimedOut: o.TimedOut, Background: o.Background, FailNotice: o.FailNotice,
		Succeeded: o.Succeeded, Failed: o.Failed, Verdict: o.Verdict, Worded: o.Worded, ExitWordsOutput: o.ExitWordsOutput, WordsIfFailed: o.WordsIfFailed, WordsIfCancelAsked: o.WordsIfCancelAsked,
		Replayed: o.Replayed, NoEcho: o.NoEcho, Unrecognized: o.Unrecognized,
		Src: Sources{Exit: o.Src.Exit, Output: o.Src.Output, Notice: o.Src.Notice},
	}
	o.TerminalID, o.AboutTerminal, o.Texts, o.Exit, o.ExitSetAside, o.ExitLiveOnly = "", false, nil, nil, false, false
	o.Signal, o.TimedOut, o.Background, o.FailNotice = "", false, false, ""
	o.Succeeded, o.Failed, o.Verdict, o.Worded, o.WordsIfFailed, o.Unrecognized = false, false, VerdictNone, Worded{}, false, nil
	o.ExitWordsOutput, o.WordsIfCancelAsked = false, false
	o.Src.Exit, o.Src.Output, o.Src.Notice = "", "", ""
	return ev
}
