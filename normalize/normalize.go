package normalize

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/dialect"
	"github.com/acpnorm/acpnorm/store"
)

// Normalizer holds the state of every ACP session fed to it. It is safe for
// concurrent use: the requests of one session are applied one at a time, in
// the order they take its lock; different sessions go on in parallel.
type Normalizer struct {
	ss *sessions
	ns namespace // the sessions it serves; see Namespace
}

// config holds the limits of a Normalizer.
type config struct {
	TextLimit          int
	MaxCallsPerSession int
	MaxCalls           int
	MaxSessions        int
	MaxIDBytes         int
	TTL                time.Duration
	Grace              time.Duration
	Tombstones         int
	MemoryBudget       int
	SessionMemory      int
	quota              Quota
	hooks              Hooks
	now                func() time.Time
	store              store.Store
}

// Defaults of the options; they are the acpnormd defaults.
const (
	DefaultTextLimit          = 256 << 10
	DefaultMaxCallsPerSession = 1024
	DefaultMaxCalls           = 65536
	DefaultMaxSessions        = 16384
	DefaultMaxIDBytes         = 256
	DefaultTTL                = 10 * time.Minute
	DefaultGrace              = 30 * time.Second
	DefaultTombstones         = 65536
)

// An Option sets a limit of a Normalizer.
type Option func(*config)

// WithTextLimit bounds each text field of a call (its output streams, and
// its command, cwd and description), in bytes; the most recent tail of an
// output is kept and says Truncated. At least 64; default
// DefaultTextLimit.
func WithTextLimit(bytes int) Option { return func(c *config) { c.TextLimit = bytes } }

// WithMaxCallsPerSession bounds the calls one session holds at once (ended
// calls in their grace period count); a frame opening one more is refused
// with ResourceExhausted. It also bounds the terminal ids and unanswered
// permission asks a session tracks (4 per call). Default
// DefaultMaxCallsPerSession.
func WithMaxCallsPerSession(n int) Option { return func(c *config) { c.MaxCallsPerSession = n } }

// WithMaxCalls bounds the calls of all sessions together. Default
// DefaultMaxCalls.
func WithMaxCalls(n int) Option { return func(c *config) { c.MaxCalls = n } }

// WithMaxSessions bounds the sessions held at once; only a frame that reads
// as a valid ACP message creates one. Default DefaultMaxSessions. With a
// store (WithStore) it bounds the sessions cached in memory instead: when
// the cache is full, the least recently used of a few idle sessions leaves
// it (the store keeps it), and only a cache full of sessions being applied
// refuses one more (ResourceExhausted, for a TurnEnded or CloseSession of
// a session not cached too).
func WithMaxSessions(n int) Option { return func(c *config) { c.MaxSessions = n } }

// WithMaxIDBytes bounds session ids, tool call ids, terminal ids and
// JSON-RPC request ids, in bytes. At least 16; default DefaultMaxIDBytes.
func WithMaxIDBytes(n int) Option { return func(c *config) { c.MaxIDBytes = n } }

// WithTTL is how long a session may go without a frame before Sweep
// releases it with all its calls. Default DefaultTTL.
func WithTTL(d time.Duration) Option { return func(c *config) { c.TTL = d } }

// WithGrace is how long Sweep keeps an ended call to absorb late frames.
// Default DefaultGrace.
func WithGrace(d time.Duration) Option { return func(c *config) { c.Grace = d } }

// WithTombstones bounds how many released calls are remembered, so that a
// late frame about one is refused (FailedPrecondition) instead of opening
// it again with revisions restarting at 1. The bound is for every
// namespace (see Namespace) together; when it is full, the oldest
// tombstone of the namespace holding the most is forgotten first, so a
// namespace holding fewer than its share keeps all of its own.
// Default DefaultTombstones.
func WithTombstones(n int) Option { return func(c *config) { c.Tombstones = n } }

// WithMemoryBudget bounds the bytes of text all calls hold together. An
// update that could take more is not held (ResourceExhausted, and the
// field says Truncated); the call's life (status, exit code, outcome)
// still applies. At least 4096; default DefaultMemoryBudget().
func WithMemoryBudget(bytes int) Option { return func(c *config) { c.MemoryBudget = bytes } }

// WithSessionMemory is the share of the memory budget one session may
// hold; 0 (the default) means an eighth of it.
func WithSessionMemory(bytes int) Option { return func(c *config) { c.SessionMemory = bytes } }

// WithHooks makes the Normalizer report what it counts (for metrics).
func WithHooks(h Hooks) Option { return func(c *config) { c.hooks = h } }

// WithClock replaces time.Now for the TTL and grace periods (for tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// Hooks receive what a Normalizer counts, so that a program can export it
// as metrics without this package depending on a metrics library. Every
// field may be nil. They are called while a session is locked: keep them
// quick and do not call the Normalizer from them.
type Hooks struct {
	// Refused is called each time a limit refuses a frame or a field of
	// one, with the limit's name (one of the Limit constants).
	Refused func(limit string)
	// RefusedIn is called with Refused (each may be nil), with the
	// namespace of the request refused as well (see Namespace; "" is the
	// default one).
	RefusedIn func(namespace, limit string)
	// LateFrame is called when an update about a released call is
	// refused.
	LateFrame func()
	// CallsOpened is called when a call is opened (delta 1) and when calls
	// are released (delta -n).
	CallsOpened func(delta int)
	// Released is called when n calls are released, with why: "ttl",
	// "grace" or "session_closed".
	Released func(reason string, n int)
	// Sessions is called when a session is created (1) or released (-1).
	Sessions func(delta int)
	// HeldBytes is called with the bytes of text all calls hold, each time
	// it changes.
	HeldBytes func(total int64)
	// StoreOp is called after each operation on the store (see
	// WithStore), with what it was ("load", "commit", "version",
	// "confirm" of a request answered as applied before, with a store
	// that confirms commits (store.Confirmer: Redis waiting for
	// replicas), or "delete" of a stored state that did not decode), how
	// it went ("ok", "conflict" or "error") and how long it took.
	StoreOp func(op, result string, took time.Duration)
	// StoreError is called with the error of each operation on the store
	// that StoreOp says "error" of, for a log: what failed, not only
	// that it did.
	StoreError func(op string, err error)
	// Unrecognized is called when a session first shows a kind of thing
	// its dialect does not read: something a frame carried about a shell
	// call that looks like a result, an agent name no dialect knows, or a
	// shell call of an agent that named itself nowhere and showed no sign
	// of its dialect.
	// It is a sign that the agent's wire changed (acpnormd replay
	// --explain names the frame and the field). what is one of the
	// Unrecognized kinds below, each said once per session while the
	// session is in memory (again after it was let go and loaded); dialect
	// is the session's dialect; agentVersion is the agent's build as the
	// dialect reads it ("0.70.1"; "agent 1.2.3", with the agent's name,
	// for the build an adapter names of the agent behind it), at most 32
	// bytes, or "unknown". None of them holds text of the frame.
	Unrecognized func(dialect, agentVersion, what string)
	// UnrecognizedIn is called with Unrecognized (each may be nil), with
	// the session's namespace as well (see Namespace; "" is the default
	// one).
	UnrecognizedIn func(namespace, dialect, agentVersion, what string)
	// UnrecognizedField is called with Unrecognized, with where the
	// thing was: a path into the frame's update ("rawOutput.metadata.exit_status",
	// "status", "content text"), "agentInfo.name" or "agentInfo.name
	// (absent)" (see UnrecognizedAgentName), at most 128 bytes. It
	// names fields, never holds their values (but a member's name, which
	// the agent chose).
	UnrecognizedField func(dialect, agentVersion, what, field string)
	// DataLoss is called each time a session is found older than what a
	// caller holds (see WithHeld) or than what this Normalizer handed on
	// of it: its store lost commits.
	DataLoss func()
}

// The kinds of Hooks.Unrecognized.
const (
	// UnrecognizedExitField: a member under rawOutput or _meta the
	// dialect does not read, named like an exit code, status or signal,
	// with a number, a numeric string or a signal name.
	UnrecognizedExitField = accum.UnrecognizedExit
	// UnrecognizedOutputField: a member under rawOutput or _meta the
	// dialect does not read, named like output, stdout, stderr, data,
	// text, out, result, chunk, body, log or content, with a sizeable
	// string or an array.
	UnrecognizedOutputField = accum.UnrecognizedOutput
	// UnrecognizedResultText: a text that reads like a result block
	// (`Exit Code: N`, `Process exited with code N`, a first line
	// `exit status N`) on a frame that ends the call, from which the
	// dialect read no exit, or an agent's failure notice that reads like
	// one (field "failure notice"); or, when a shell call ends, an exit
	// line left as the first or last line of its output (field
	// "output"): `exit status N`, `[Command exited with status N]`,
	// `<... completed with exit status N>`, `Return code: N` (a last line
	// `exit status N` only when the call has no exit code: Go programs
	// print it there). The record keeps what the dialect read.
	UnrecognizedResultText = accum.UnrecognizedResult
	// UnrecognizedStatusValue: a shell call's `status` that is none of
	// ACP's four; the call is not taken to have ended.
	UnrecognizedStatusValue = accum.UnrecognizedStatus
	// UnrecognizedContentType: a shell call's content item of a type ACP
	// does not define, which no dialect reads, or a text block without a
	// string `text` (field "content[].content.text").
	UnrecognizedContentType = accum.UnrecognizedContent
	// UnrecognizedAgentName: the agent's initialize result names an
	// agent no dialect knows (field "agentInfo.name"), or names none and
	// the agent showed no sign of its dialect before a shell call (field
	// "agentInfo.name (absent)"), so the generic dialect reads the
	// session.
	UnrecognizedAgentName = "agent_name"
	// UnrecognizedShellUnread: a frame that opens a tool call carries
	// signs of a shell call (the kind `execute`, a terminal content item,
	// a string `rawInput.command` or `rawInput.cmd`, a tool call id whose
	// words name a shell) that its dialect did not take for one, so the
	// call gives no record: a renamed or re-kinded shell tool.
	UnrecognizedShellUnread = accum.UnrecognizedShell
)

// agentNameAbsent is the field of an UnrecognizedAgentName said for an
// agent that named nothing.
const agentNameAbsent = "agentInfo.name (absent)"

// unrecognizedKinds are the kinds of Hooks.Unrecognized, in the order of
// the bits of session.unrecognized.
var unrecognizedKinds = [...]string{
	UnrecognizedExitField, UnrecognizedOutputField, UnrecognizedResultText,
	UnrecognizedStatusValue, UnrecognizedContentType, UnrecognizedAgentName,
	UnrecognizedShellUnread,
}

// maxVersionLabel bounds the agentVersion of Hooks.Unrecognized.
const maxVersionLabel = 32

// Names of the limits passed to Hooks.Refused.
const (
	LimitSessions        = "max_sessions"
	LimitCalls           = "max_calls"
	LimitCallsPerSession = "max_calls_per_session"
	LimitIDBytes         = "id_bytes"
	LimitTextBytes       = "text_bytes"
	LimitMemory          = "memory_budget"
	LimitSessionMemory   = "session_memory"
	LimitQuotaSessions   = "quota_sessions" // see WithQuota
	LimitQuotaCalls      = "quota_calls"
	LimitQuotaMemory     = "quota_memory"
	// LimitSessionState: what a session keeps besides its calls (its cwd,
	// the reject options of its asks, its client terminals' commands,
	// cwds and output) would pass 4 × WithTextLimit, at least 4 MiB. With
	// a store every commit of the session writes all of it.
	LimitSessionState = "session_state"
	// LimitLossFloors: what a DataLoss leaves of a claim (WithHeld), the
	// revision held of one call, was not kept because the cached sessions
	// hold 4 × WithMaxCalls of them already and the session's namespace
	// its share of them (or all twice that). Counted once per call.
	LimitLossFloors = "loss_floors"
	// LimitLossFloorsPerSession: the same, because the session holds 4 ×
	// WithMaxCallsPerSession of them already.
	LimitLossFloorsPerSession = "loss_floors_per_session"
)

func (c *config) validate() error {
	switch {
	case c.TextLimit < 64:
		return fmt.Errorf("text limit %d is below 64 bytes", c.TextLimit)
	case c.MaxCallsPerSession < 1:
		return fmt.Errorf("max calls per session %d is below 1", c.MaxCallsPerSession)
	case c.MaxCalls < c.MaxCallsPerSession:
		return fmt.Errorf("max calls %d is below max calls per session %d", c.MaxCalls, c.MaxCallsPerSession)
	case c.MaxSessions < 1:
		return fmt.Errorf("max sessions %d is below 1", c.MaxSessions)
	case c.MaxIDBytes < 16:
		return fmt.Errorf("max id bytes %d is below 16", c.MaxIDBytes)
	case c.TTL <= 0:
		return fmt.Errorf("ttl %v is not positive", c.TTL)
	case c.Grace < 0:
		return fmt.Errorf("grace %v is negative", c.Grace)
	case c.Tombstones < 0:
		return fmt.Errorf("tombstones %d is negative", c.Tombstones)
	case c.MemoryBudget < 4096:
		return fmt.Errorf("memory budget %d is below 4096 bytes", c.MemoryBudget)
	case c.store != nil && c.TextLimit > accum.MaxStateLimit:
		return fmt.Errorf("text limit %d is over %d bytes, the most a call kept in a store may hold", c.TextLimit, accum.MaxStateLimit)
	case c.SessionMemory < 0 || c.SessionMemory > c.MemoryBudget:
		return fmt.Errorf("session memory %d is not between 0 (an eighth of the budget) and the memory budget %d", c.SessionMemory, c.MemoryBudget)
	case c.quota.Sessions < 0 || c.quota.Calls < 0 || c.quota.Memory < 0:
		return fmt.Errorf("quota %+v is negative", c.quota)
	}
	return nil
}

// New returns a Normalizer with the default limits changed by opts. It
// panics, naming the option, when an option's value cannot work (a
// programming error, like a bad regexp for regexp.MustCompile).
func New(opts ...Option) *Normalizer {
	c := newConfig(opts)
	if err := c.validate(); err != nil {
		panic("normalize.New: " + err.Error())
	}
	return &Normalizer{ss: newSessions(c)}
}

// Check reports, as an error naming the limit, what New would panic on for
// these options: a program that takes limits from its user (acpnormd's
// flags) checks them first.
func Check(opts ...Option) error {
	c := newConfig(opts)
	return c.validate()
}

// newConfig is the default configuration changed by opts.
func newConfig(opts []Option) config {
	c := config{
		TextLimit:          DefaultTextLimit,
		MaxCallsPerSession: DefaultMaxCallsPerSession,
		MaxCalls:           DefaultMaxCalls,
		MaxSessions:        DefaultMaxSessions,
		MaxIDBytes:         DefaultMaxIDBytes,
		TTL:                DefaultTTL,
		Grace:              DefaultGrace,
		Tombstones:         DefaultTombstones,
		MemoryBudget:       DefaultMemoryBudget(),
		now:                time.Now,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// request is one frame or control message with its options.
type request struct {
	ns          namespace
	ctx         context.Context
	seq         uint64
	dialect     string
	cwd         string
	direction   Direction
	whole       func(session, call string, rev uint32, ended bool) bool
	carried     func(session, call string) uint32          // see WithCarried
	closedSeen  func(session string, close CloseMark) bool // see WithClosedHandedOn
	closedGot   func(session string, close CloseMark)
	discarded   func(session string) // see WithDiscarded
	finalDeltas bool
	skipApplied bool
	held        map[string]uint32 // see WithHeld
	heldSeq     uint64            // see WithHeldSequence
	before      map[string]uint32 // see sessions.release: revisions handed on from the cache, after a conflict
	beforeSeq   uint64            // likewise, the sequence the cache had committed (answered)
	prepared    *Prepared
	nextDialect func(name string)
	nextReader  func(reader string)
	emit        func(Event) error
	collect     []*ShellExec
	problems    []error
	// rep is the reply of the request's current attempt (see
	// sessions.newReply): one allocation with the request.
	rep reply
}

// A FeedOption qualifies one Feed, TurnEnded or CloseSession call.
type FeedOption func(*request)

// WithSequence is the caller's number for the frame, echoed in the
// revisions and FrameErrors it produces.
func WithSequence(seq uint64) FeedOption { return func(r *request) { r.seq = seq } }

// WithDialect names the dialect that reads the session's frames ("auto" or
// "" detects it, the default); see Dialects. An unknown name refuses the
// frame. Only Feed uses it.
func WithDialect(name string) FeedOption { return func(r *request) { r.dialect = name } }

// WithCwd gives the session's absolute working directory, which beats the
// one the agent's session/new names. A Windows drive or UNC path (the
// client's host's) is absolute too, and kept as written. One that is not
// absolute, or is over the text limit, is left out with a FrameError
// InvalidArgument: the frame applies without it, and the session keeps
// the directory it had. Only Feed uses it.
func WithCwd(dir string) FeedOption { return func(r *request) { r.cwd = dir } }

// Direction says which way a frame travelled on the ACP wire.
type Direction uint8

const (
	// DirectionUnknown: not said; what the message is says enough.
	DirectionUnknown Direction = iota
	// FromAgent: sent by the agent to the client.
	FromAgent
	// FromClient: sent by the client to the agent.
	FromClient
)

// WithDirection says which way the frame travelled. It is optional: it
// keeps a response from being taken for the answer to a request of the
// same side (the agent and the client number their requests
// independently, so their JSON-RPC ids collide), which the shape of the
// answer otherwise decides, and a client's frame from naming the agent or
// its build. Only Feed uses it.
func WithDirection(d Direction) FeedOption { return func(r *request) { r.direction = d } }

// WithContext bounds how long the call waits for another call of the same
// session to finish; when ctx ends first the call returns ctx's error and
// applies nothing.
func WithContext(ctx context.Context) FeedOption { return func(r *request) { r.ctx = ctx } }

// WithEmit hands each revision and FrameError to emit as soon as it is
// made, in order, instead of collecting them: the call then returns no
// revisions, and an error only when emit (or the context) failed. When emit
// returns an error the request is still applied, nothing more is built,
// and the call returns that error. A request that ends many calls never
// holds more than one revision at a time this way.
func WithEmit(emit func(Event) error) FeedOption { return func(r *request) { r.emit = emit } }

// WithWhole is for a consumer that can miss revisions (a client that
// reconnects): whole is asked about every revision before it is handed on,
// and when it returns true the revision carries every text whole (Replace),
// so the consumer's copy is whole again whatever it missed.
//
// With a store, whole is asked as a revision is made, before the commit:
// a request that loses a race with another replica is applied again, and
// the revisions its first try made, which whole was asked about, are
// never handed on (see WithDiscarded).
func WithWhole(whole func(sessionID, toolCallID string, revision uint32, ended bool) bool) FeedOption {
	return func(r *request) { r.whole = whole }
}

// WithDiscarded is for a consumer that keeps what whole (WithWhole) was
// asked: with a store, when a request's commit conflicts (another replica
// changed the session first) and the request is applied again, discarded
// is called with the session's id before the next try. The revisions the
// thrown-away try made of the session's calls were never handed on, and
// the next try may number them again, or differently (its session holds
// the other replica's revisions too): the consumer weighs what comes next
// against what it was handed, not against them.
func WithDiscarded(discarded func(sessionID string)) FeedOption {
	return func(r *request) { r.discarded = discarded }
}

// WithCarried is for a consumer that drops what it already carried (a
// stream): carried returns the highest revision of the session's call it
// was handed or was told its client holds (0: none). A revision handed on
// again (marked Again), or a FrameError naming one, at or below it is
// then not made at all; in particular, an ENDED revision a close kept is
// not read from the store for it (see WithSkipApplied).
func WithCarried(carried func(sessionID, toolCallID string) uint32) FeedOption {
	return func(r *request) { r.carried = carried }
}

// CloseMark names one close of a session, as a store keeps it: the
// sequence it closed at and the closed session's stored version (a
// session started again and closed at the same sequence has another).
type CloseMark struct{ Sequence, Version uint64 }

// WithClosedHandedOn is for a consumer that drops what it already carried
// (a stream, see WithCarried), with a store: a request of a closed
// session sent again hands on the ENDED revisions its close kept (see
// WithSkipApplied), read from the store, unless seen reports that they
// were handed to this consumer already, for the same close; got is called
// once they were (after the request's events were handed on). The
// consumer forgets a mark when it forgets what it carried of the
// session's calls, so that what it drops as carried is never more than
// it was handed.
func WithClosedHandedOn(seen func(sessionID string, close CloseMark) bool, got func(sessionID string, close CloseMark)) FeedOption {
	return func(r *request) { r.closedSeen, r.closedGot = seen, got }
}

// WithFinalChanges is for a consumer that folds every revision: the
// final (StateEnded) revision then carries only what changed since the
// previous one, like a live revision (nil texts when nothing changed),
// instead of every text whole, so that output an agent re-sends whole is
// not handed on twice. A revision that whole asks to be whole (see
// WithWhole) still is.
func WithFinalChanges() FeedOption { return func(r *request) { r.finalDeltas = true } }

// WithSkipApplied is for a caller that numbers each session's requests
// with increasing sequences (WithSequence), across streams and processes:
// a request whose sequence is not above the highest one its session
// applied is not applied again. Sequence 0 is never skipped. With a
// store, the highest sequence is shared by every Normalizer using it, and
// what each frame made (its revisions and FrameErrors) is committed with
// it: a frame sent again is answered with those events, marked Again, in
// the order they were made, by any Normalizer using the store (the last
// 64 frames of each session, within 256 KiB). A frame whose answer is not
// kept (without a store, or past those bounds), or that made nothing,
// gives a FrameError with code AlreadyExists, after the ENDED revision,
// marked Again, of each ended call it is about and, with WithHeld or
// WithHeldSequence, of each other ended call the caller holds an earlier
// revision of or does not name: what the lost answers carried. A caller that lost the
// answers to requests (a process died, a commit was not acknowledged) can
// then send them again.
//
// A session closed (CloseSession) keeps the highest sequence it had
// applied, so its requests sent again after the close are answered as
// applied too (with a store, in the session's header, for as long as it
// lives there; without one, as a tombstone, bounded by WithTombstones). A
// request that is applied starts the session again: sequence 1, one above
// that, or one without WithSkipApplied. The close keeps the ENDED revision
// of each call it released, at most 8 MiB of texts (without a store, 64
// MiB for every close together, the oldest close's going first), for the
// grace period (WithGrace): a request of the session sent again whose
// answer does not carry them whole (an answer over 256 KiB, kept only as
// what to make again from the calls) hands them on, and names in a
// FrameError FailedPrecondition each call whose revision is not kept.
func WithSkipApplied() FeedOption { return func(r *request) { r.skipApplied = true } }

// WithHeld says what the caller holds of the frame's session: for each
// tool call id, the highest revision number it was handed. Give it with
// the first frame of a session the caller sends after a reconnect. When
// the session's state is older (a call has fewer revisions, or is
// missing: the store lost commits), the frame is not applied and gives a
// FrameError with code DataLoss naming the calls; from then on no
// revision of those calls numbered at or below what the caller holds is
// handed on again (the next one carries every text whole), so the caller
// can send the session's frames again from the first (WithSkipApplied)
// to rebuild it. A released call counts as held, so a long session's
// claim names more calls than a session holds at once: a claim is checked
// for at most 2 × WithMaxCallsPerSession calls, the ones the session has
// (or keeps a floor of) first, then the others by id (a DataLoss says how
// many were not checked), and the frame is applied unless they show a
// loss. A claim of a revision above MaxHeldRevision is refused
// (InvalidArgument; the frame is not applied).
// What a DataLoss leaves of a claim (a floor per call) is kept for at most
// 4 × WithMaxCallsPerSession calls per session and, for new floors, 4 ×
// WithMaxCalls in all cached sessions, shared between namespaces (past
// it, a namespace holding fewer than its share still keeps new ones, up
// to twice the bound in all); the DataLoss says how many were not kept,
// and the session's next claim is not refused for calls without a floor
// (the rebuild's first frame). Only Feed uses it.
func WithHeld(revisions map[string]uint32) FeedOption { return func(r *request) { r.held = revisions } }

// WithHeldSequence says the highest sequence of the frame's session the
// caller had answered (applied, or skipped as applied: AlreadyExists or
// an answer kept). Give it, with WithSkipApplied, with the first frame of
// a session the caller sends after a reconnect, next to WithHeld. When the
// session has applied less (or is missing: the store lost commits, even
// ones that made no revision, such as the frames that name the agent), the
// frame is not applied and gives a FrameError with code DataLoss naming
// both sequences, so the caller can send the session's frames again from
// the first. A session closed keeps the sequence it had applied (see
// WithSkipApplied): a claim at or below it is no loss. One expired (past
// its TTL) starts afresh at no applied sequence; when it had calls (released, leaving tombstones) it
// is no loss, as its released calls count as held; one that never had a
// call cannot be told from a lost one: give it only for a session the
// caller has not closed. Without WithSkipApplied the session counts no sequences and the claim is
// not checked. Only Feed uses it.
func WithHeldSequence(seq uint64) FeedOption { return func(r *request) { r.heldSeq = seq } }

// requests recycles the requests of Feed, FeedFrame, FeedBatch, TurnEnded
// and CloseSession, each with its reply, which would otherwise be two
// allocations per frame. A request goes back only once its call returned,
// nothing holds it then (the events it handed on do not refer to it), and
// it goes back zeroed, so nothing of one call (its namespace, context,
// callbacks, claims or read-ahead) reaches the next.
var requests = sync.Pool{New: func() any { return new(request) }}

func newRequest(ns namespace, opts []FeedOption) *request {
	r := requests.Get().(*request)
	r.ns, r.ctx = ns, context.Background()
	for _, o := range opts {
		o(r)
	}
	return r
}

// done hands back what the request made and recycles the request: r is
// not used after it.
func (r *request) done(err error) ([]*ShellExec, error) {
	revs, err := r.result(err)
	*r = request{}
	requests.Put(r)
	return revs, err
}

// give hands one event on: to emit, or into the results.
func (r *request) give(ev Event) error {
	if r.emit != nil {
		return r.emit(ev)
	}
	if ev.ShellExec != nil {
		r.collect = append(r.collect, ev.ShellExec)
	} else {
		r.problems = append(r.problems, ev.Error)
	}
	return nil
}

// result is what a call without WithEmit returns.
func (r *request) result(err error) ([]*ShellExec, error) {
	if err != nil {
		return r.collect, err
	}
	return r.collect, errors.Join(r.problems...)
}

// Feed applies one JSON-RPC message of session sessionID's ACP wire (either
// direction, in wire order) and returns the revisions it produced, in
// order. A frame, or part of one, that cannot be used gives a *FrameError
// (several are joined with errors.Join; errors.As finds the first); the
// revisions that the rest of the frame produced are still returned, and
// the session goes on.
func (n *Normalizer) Feed(sessionID string, frame []byte, opts ...FeedOption) ([]*ShellExec, error) {
	r := newRequest(n.ns, opts)
	return r.done(n.ss.frame(sessionID, frame, r))
}

// FeedFrame is Feed for a caller that feeds many frames: the frame's own
// options are f's fields (Sequence, Dialect, Cwd, Direction, Prepared, as
// WithSequence, WithDialect, WithCwd, WithDirection and WithPrepared give
// them, which it ignores), so that the options the frames share are built
// once and a frame builds none.
func (n *Normalizer) FeedFrame(sessionID string, f Frame, opts ...FeedOption) ([]*ShellExec, error) {
	r := newRequest(n.ns, opts)
	r.seq, r.dialect, r.cwd, r.direction, r.prepared = f.Sequence, f.Dialect, f.Cwd, f.Direction, f.Prepared
	return r.done(n.ss.frame(sessionID, f.Message, r))
}

// Frame is one frame of a batch; see FeedBatch and FeedFrame. Its fields are what
// Feed's WithSequence, WithDialect, WithCwd and WithPrepared give.
type Frame struct {
	Message   []byte
	Sequence  uint64
	Dialect   string
	Cwd       string
	Direction Direction
	Prepared  *Prepared
}

// FeedBatch applies frames of one session in order, as feeding them to
// Feed one by one would, and returns what they produced, in order. It
// takes the session's lock once, and with a store (WithStore) commits the
// changes of all of them at once, before any of their revisions is handed
// on: a caller that holds several frames of a session (a stream that read
// ahead) saves a round trip to the store per frame. When the store cannot
// take them, none is applied, and each gets a FrameError Unavailable of
// its own, in order.
// Feed's per-frame options (WithSequence, WithDialect, WithCwd,
// WithDirection, WithPrepared) are ignored; the Frame fields give them. WithNextDialect
// reports the dialect after the last frame.
func (n *Normalizer) FeedBatch(sessionID string, frames []Frame, opts ...FeedOption) ([]*ShellExec, error) {
	if len(frames) == 0 {
		return nil, nil
	}
	r := newRequest(n.ns, opts)
	return r.done(n.ss.batch(sessionID, frames, r))
}

// TurnEnded says that the session's prompt turn ended (its session/prompt
// result arrived) when the orchestrator knows it without feeding that
// frame: every call still open ends, UNKNOWN, or CANCELLED when cancelled
// is true or the turn was cancelled. It returns the final revisions. With
// WithSkipApplied and a sequence above 1, a session that is not held and
// left no mark of its close (see WithSkipApplied) gives a FrameError
// FailedPrecondition saying so: the request may be one sent again whose
// answer cannot be made again.
func (n *Normalizer) TurnEnded(sessionID string, cancelled bool, opts ...FeedOption) ([]*ShellExec, error) {
	r := newRequest(n.ns, opts)
	return r.done(n.ss.turnEnded(sessionID, cancelled, r))
}

// CloseSession ends every call of the session still open and releases the
// session and its calls (late frames about them are refused). It returns
// the final revisions. A session that is not held gives a FrameError as
// for TurnEnded.
func (n *Normalizer) CloseSession(sessionID string, opts ...FeedOption) ([]*ShellExec, error) {
	r := newRequest(n.ns, opts)
	return r.done(n.ss.closeSession(sessionID, r))
}

// Sweep releases the state nobody needs any more: every session idle for
// longer than the TTL with all its calls, and each ended call past its
// grace period. Run calls it periodically; a program that does not use Run
// calls it itself.
func (n *Normalizer) Sweep() { n.ss.sweep() }

// Run calls Sweep periodically until ctx is done.
func (n *Normalizer) Run(ctx context.Context) {
	cfg := n.ss.cfg
	t := time.NewTicker(min(cfg.TTL, max(cfg.Grace, time.Second)) / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.Sweep()
		}
	}
}

// Stats is what a Normalizer holds.
type Stats struct {
	Sessions   int   // sessions held
	Calls      int   // calls held, all sessions
	HeldBytes  int64 // bytes of text held, counted against the memory budget
	Tombstones int   // released calls remembered (and closed sessions' sequences, without a store)
}

// Stats returns what the Normalizer holds now, in every namespace.
func (n *Normalizer) Stats() Stats {
	n.ss.mu.Lock()
	sessions := n.ss.count
	n.ss.mu.Unlock()
	return Stats{Sessions: sessions, Calls: int(n.ss.total.Load()), HeldBytes: n.ss.held.Load(), Tombstones: n.ss.tombs.len()}
}

// SessionStats is what one session holds.
type SessionStats struct {
	Calls     int // calls held (open, or ended within their grace period)
	Terminals int // terminal ids tracked
	Asks      int // permission asks awaiting their answer
	HeldBytes int // bytes of text its calls hold
}

// SessionStats returns what session id (of n's namespace, see Namespace)
// holds, and false when it is not held. It waits while a request of the session is applied.
func (n *Normalizer) SessionStats(id string) (SessionStats, bool) {
	s, err := n.ss.lock(context.Background(), n.ns, id, false)
	if err != nil || s == nil {
		return SessionStats{}, false
	}
	defer s.unlock()
	if closedOnly(s) {
		n.ss.uncache(s) // loaded from the store: a closed session is not held
		return SessionStats{}, false
	}
	return SessionStats{Calls: len(s.calls), Terminals: len(s.terminals), Asks: len(s.asks), HeldBytes: s.held}, true
}

// Dialect describes one dialect of this build.
type Dialect struct {
	Name           string   // what WithDialect takes
	AgentNames     []string // agentInfo.name values that select it
	Summary        string
	AuthMethodIDs  []string // authMethods ids that are its sign
	MethodPrefixes []string // JSON-RPC method prefixes that are its sign
	DetectionRules []string // how it is detected, in words
}

// Dialects lists the dialects of this build, and says in words how a
// session's dialect is chosen (by name, or detected).
func Dialects() (dialects []Dialect, detection string) {
	for _, d := range dialect.All() {
		info := d.Info()
		dialects = append(dialects, Dialect{
			Name:           info.Name,
			AgentNames:     info.AgentNames,
			Summary:        info.Summary,
			AuthMethodIDs:  info.AuthMethodIDs,
			MethodPrefixes: info.MethodPrefixes,
			DetectionRules: dialect.DetectionRules(d),
		})
	}
	return dialects, dialect.DetectionOrder
}

// ClientCapabilities returns the JSON clientCapabilities fragment an
// orchestrator should send in ACP initialize so that the agent reports its
// richest shell output, and the dialect it is for (name "" or "auto": the
// generic one). It never asks for client-owned terminals.
func ClientCapabilities(name string) (capabilitiesJSON, dialectName string, err error) {
	name = strings.TrimSpace(name)
	d := dialect.Generic()
	if name != "" && !strings.EqualFold(name, dialect.Auto) {
		var ok bool
		if d, ok = dialect.Lookup(name); !ok {
			return "", "", fmt.Errorf("unknown dialect %s; Dialects (ListDialects over gRPC) lists the dialects of this build", quoteShort(name))
		}
	}
	info := d.Info()
	return info.ClientCapabilities, info.Name, nil
}

func (h Hooks) refused(ns namespace, limit string) {
	if h.Refused != nil {
		h.Refused(limit)
	}
	if h.RefusedIn != nil {
		h.RefusedIn(ns.name, limit)
	}
}

// unrecognized says what, found at field, once for session s (see
// Hooks.Unrecognized).
func (h Hooks) unrecognized(s *session, what, field string) {
	if h.Unrecognized == nil && h.UnrecognizedIn == nil && h.UnrecognizedField == nil {
		return
	}
	for i, k := range unrecognizedKinds {
		if k == what {
			if s.unrecognized&(1<<i) != 0 {
				return
			}
			s.unrecognized |= 1 << i
		}
	}
	dialectName, v := s.dialectName(), s.agent
	label := v.String()
	if len(label) > maxVersionLabel {
		label = label[:maxVersionLabel]
	}
	if h.Unrecognized != nil {
		h.Unrecognized(dialectName, label, what)
	}
	if h.UnrecognizedIn != nil {
		h.UnrecognizedIn(s.space.ns.name, dialectName, label, what)
	}
	if h.UnrecognizedField != nil {
		h.UnrecognizedField(dialectName, label, what, field)
	}
}

func (h Hooks) lateFrame() {
	if h.LateFrame != nil {
		h.LateFrame()
	}
}

func (h Hooks) callsOpened(delta int) {
	if h.CallsOpened != nil {
		h.CallsOpened(delta)
	}
}

func (h Hooks) released(reason string, n int) {
	if h.Released != nil {
		h.Released(reason, n)
	}
}

func (h Hooks) sessions(delta int) {
	if h.Sessions != nil {
		h.Sessions(delta)
	}
}

func (h Hooks) storeOp(op string, start time.Time, err error) {
	result := "ok"
	switch {
	case errors.Is(err, store.ErrConflict):
		result = "conflict"
	case err != nil:
		result = "error"
		if h.StoreError != nil {
			h.StoreError(op, err)
		}
	}
	if h.StoreOp != nil {
		h.StoreOp(op, result, time.Since(start))
	}
}

func (h Hooks) heldBytes(total int64) {
	if h.HeldBytes != nil {
		h.HeldBytes(total)
	}
}

func (h Hooks) dataLoss() {
	if h.DataLoss != nil {
		h.DataLoss()
	}
}
