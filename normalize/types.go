package normalize

import "fmt"

// State is where a shell command is in its life (the proto's ShellState,
// with the same numbers).
type State int32

const (
	// StatePending: announced, not yet running (for example waiting for
	// approval).
	StatePending State = 1
	// StateRunning: running.
	StateRunning State = 2
	// StateEnded: ended; Outcome says how. A later revision only absorbs
	// late frames within the grace period, and a known outcome never
	// changes.
	StateEnded State = 3
)

func (s State) String() string {
	switch s {
	case StatePending:
		return "PENDING"
	case StateRunning:
		return "RUNNING"
	case StateEnded:
		return "ENDED"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// Outcome is how a shell command ended (the proto's ShellOutcome, with the
// same numbers). It is never read from the ACP status alone: agents say
// completed for failed commands.
type Outcome int32

const (
	// OutcomeNone: the call has not ended.
	OutcomeNone Outcome = 0
	// Succeeded: a known exit code 0, or a success proof a dialect
	// documents.
	Succeeded Outcome = 1
	// Failed: a known nonzero exit code (whatever the agent's status said),
	// a signal, a timeout, or the agent's failed status without an exit
	// code.
	Failed Outcome = 2
	// Cancelled: the user rejected or cancelled the command; a known exit
	// code (such as 130) is kept.
	Cancelled Outcome = 3
	// Unknown: the call ended with no evidence either way. Never read as 0.
	Unknown Outcome = 4
)

func (o Outcome) String() string {
	switch o {
	case OutcomeNone:
		return "NONE"
	case Succeeded:
		return "SUCCEEDED"
	case Failed:
		return "FAILED"
	case Cancelled:
		return "CANCELLED"
	case Unknown:
		return "UNKNOWN"
	}
	return fmt.Sprintf("Outcome(%d)", int32(o))
}

// TextMode says how a Text applies to what the consumer already holds (the
// proto's TextMode, with the same numbers).
type TextMode int32

const (
	// Append: Text is new text to add to what earlier revisions carried.
	Append TextMode = 1
	// Replace: Text is the whole (bounded) text: drop what you had.
	Replace TextMode = 2
)

func (m TextMode) String() string {
	switch m {
	case Append:
		return "APPEND"
	case Replace:
		return "REPLACE"
	}
	return fmt.Sprintf("TextMode(%d)", int32(m))
}

// Text is one text stream of a shell command in one revision.
type Text struct {
	// Text is valid UTF-8: in a live revision the text since the previous
	// revision (Append) or the whole bounded text (Replace); in the ENDED
	// revision always the whole bounded text (Replace). Bytes that were not
	// valid UTF-8 are U+FFFD.
	Text string
	// Mode says how Text applies to what earlier revisions carried.
	Mode TextMode
	// Truncated is true when the whole text is longer than what is kept
	// (the most recent tail, cut on a character boundary, is kept), or when
	// the agent itself said it dropped output.
	Truncated bool
	// TotalBytes is the length in UTF-8 bytes of the whole text seen for
	// the stream so far, before bounding.
	TotalBytes int64
}

// Apply folds t into held, the text a consumer holds for the stream, and
// returns the result: Append adds to it, Replace replaces it, and a nil t
// (the stream did not change) leaves it as it was.
func (t *Text) Apply(held string) string {
	switch {
	case t == nil:
		return held
	case t.Mode == Replace:
		return t.Text
	}
	return held + t.Text
}

// ShellExec is one revision of one shell tool call: what ran, where, its
// output and how it ended. It mirrors the proto's ShellExec field for field
// (the service converts one into the other). Every scalar field is set on
// every revision; the three Text fields are nil when they did not change
// (and set, whole, on the ENDED revision when the stream was ever seen).
type ShellExec struct {
	// SessionID is the session the frame was fed under.
	SessionID string
	// ToolCallID is the agent's tool call id, exactly as sent.
	ToolCallID string
	// Revision is 1, 2, 3, ... per (SessionID, ToolCallID), with no gap and
	// no restart.
	Revision uint32
	// Dialect is the dialect that read the call.
	Dialect string
	// AgentVersion is the agent's build as its `initialize` result's
	// agentInfo.version said it (trimmed, a control character kept as
	// U+FFFD; a longer text than 64 bytes is cut and ends with "…", and is
	// read as an unknown build), or, for an
	// agent behind an adapter that names the agent's own build after it
	// (in a session/new result, say), that build with the agent's name
	// first ("agent v1.2.3"); the dialect reads the call as that build
	// sends it. Empty when the agent did not say.
	AgentVersion string
	// Command is the command line as the agent reports it, without a shell
	// wrapper such as bash -lc. Empty until known.
	Command string
	// Cwd is the absolute working directory, resolved against the
	// session's; empty when unknown.
	Cwd string
	// Description is what the agent said the command is for. Never output.
	Description string
	// State is where the command is in its life.
	State State
	// Outcome is OutcomeNone until State is StateEnded.
	Outcome Outcome
	// OutcomeReason says, in words, why the outcome is what it is.
	OutcomeReason string
	// ExitCode is the exit code when known; nil when unknown, never 0 by
	// default.
	ExitCode *int32
	// Signal is the signal that ended the command (for example SIGKILL).
	Signal   string
	TimedOut bool
	// Output is the combined terminal stream; Stdout and Stderr are set
	// only when the agent really separates them.
	Output, Stdout, Stderr *Text
	// ApprovalReason is why the agent asked the user to approve the
	// command; AwaitingApproval is true while that ask is open.
	ApprovalReason   string
	AwaitingApproval bool
	// Background is true for a command the agent left running in the
	// background.
	Background bool
	// Sequence is the sequence number of the frame (or control message)
	// that produced the revision (see WithSequence).
	Sequence uint64
	// TerminalID is the ACP terminal the call showed, if any.
	TerminalID string
}

// Code classifies a FrameError. Its values are the gRPC status codes the
// service reports (the package does not import gRPC).
type Code uint32

const (
	// InvalidArgument: the frame, or a field of it, cannot be used as sent.
	InvalidArgument Code = 3
	// AlreadyExists: the request was applied before and is skipped (see
	// WithSkipApplied).
	AlreadyExists Code = 6
	// ResourceExhausted: a limit refused the frame or part of it.
	ResourceExhausted Code = 8
	// FailedPrecondition: the frame is about something unknown or released
	// (a terminal no call showed, a call past its grace period).
	FailedPrecondition Code = 9
	// Unavailable: the state store (see WithStore) could not take the
	// frame. The message says which: it was not applied, and may be sent
	// again; or the store failed before it answered, and the frame may or
	// may not have been applied (a timeout), to be sent again with
	// WithSkipApplied, which answers it as applied if it was (without,
	// it may be applied twice).
	Unavailable Code = 14
	// DataLoss: the session's state is older than what the caller holds
	// (WithHeld): the store lost commits. The frame was not applied.
	DataLoss Code = 15
)

func (c Code) String() string {
	switch c {
	case InvalidArgument:
		return "InvalidArgument"
	case AlreadyExists:
		return "AlreadyExists"
	case ResourceExhausted:
		return "ResourceExhausted"
	case FailedPrecondition:
		return "FailedPrecondition"
	case Unavailable:
		return "Unavailable"
	case DataLoss:
		return "DataLoss"
	}
	return fmt.Sprintf("Code(%d)", uint32(c))
}

// FrameError is what the Normalizer reports about a frame, or a part of
// one, that it could not use. A bad frame never disturbs the session's other
// calls or later frames, and nothing already accepted is lost.
type FrameError struct {
	SessionID string // empty when the session id itself was refused
	Sequence  uint64
	Code      Code
	Message   string // names the problem, and the limit when one refused it
	// ToolCallID is the call the error is about, when there is one.
	ToolCallID string
	// Revision is the revision of that call the error is about, when it
	// is about one: an ENDED revision that cannot be handed on again
	// (FailedPrecondition). A consumer that holds that revision of the
	// call, or said so already, drops the error.
	Revision uint32 `json:",omitempty"`
}

func (e *FrameError) Error() string { return e.Message }

// Event is one thing a request produces, in order: a revision or a
// FrameError (exactly one is set).
type Event struct {
	ShellExec *ShellExec
	Error     *FrameError
	// Again marks an event handed on again: the answer kept for a frame
	// applied before and sent again (see WithSkipApplied). A consumer
	// that already handed on a later revision of the call drops it.
	Again bool `json:"-"`
}
