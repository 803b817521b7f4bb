package accum

import (
	"fmt"
	"slices"
	"strings"
)

// State is where a shell command is in its life.
type State uint8

const (
	// Pending: announced, not yet running.
	Pending State = iota + 1
	// Running: started; output may flow.
	Running
	// Ended: the call is over; Outcome says how.
	Ended
)

// Outcome is how a call ended.
type Outcome uint8

const (
	// OutcomeNone: the call has not ended.
	OutcomeNone Outcome = iota
	// Succeeded: a known exit code 0, or a success proof a dialect documents.
	Succeeded
	// Failed: a known nonzero exit, a signal, a timeout, or a failure the
	// agent reported without an exit code.
	Failed
	// Cancelled: the user rejected or cancelled the command.
	Cancelled
	// Unknown: the call ended with no evidence either way.
	Unknown
)

// Revision is one change of a call, ready to be sent.
type Revision struct {
	Number         uint32
	ToolCallID     string
	TerminalID     string
	Command        string
	Cwd            string
	Description    string
	State          State
	Outcome        Outcome
	OutcomeReason  string
	ExitCode       *int32
	Signal         string
	TimedOut       bool
	Background     bool
	ApprovalReason string
	Awaiting       bool
	// Texts holds, per Stream, what changed; nil means unchanged. On the
	// Ended revision every stream ever seen is whole (Replace).
	Texts [numStreams]*Chunk
	// Changes holds, on an Ended revision only, what changed per Stream
	// since the previous revision, as Texts would on a live one (nil means
	// unchanged), for a client that asked for finals without the whole
	// texts.
	Changes [numStreams]*Chunk
}

// meta is the part of a call that is compared between revisions.
type meta struct {
	terminalID     string
	command        string
	cwd            string
	description    string
	state          State
	outcome        Outcome
	reason         string
	exit           int64 // -1<<40 when unknown
	signal         string
	timedOut       bool
	background     bool
	approvalReason string
	awaiting       bool
}

const noExit = -1 << 40

// Call is the state of one tool call. It is not safe for concurrent use.
type Call struct {
	id        string
	limit     int
	shell     Shell
	cur, sent meta
	revision  uint32

	exit         *Exit
	cancelled    bool
	cancelAsked  bool   // the user cancelled the turn while the call was open
	cancelWhy    string // why the call is cancelled, in words
	notice       string // the agent's own words about a cancel or a failure
	statusFailed bool
	// verdictFailed: the agent's result said failed; exit 0 cannot
	// outweigh it.
	verdictFailed bool
	failed        bool
	succeeded     bool
	// exitSetAside: the agent sent an exit code that is not the
	// command's (Observation.ExitSetAside).
	exitSetAside bool
	// commandRan: the command is the one a client terminal ran (see
	// Observation.CommandRan); nothing replaces it.
	commandRan bool
	// commandFromTitle: the command was read from a title
	// (Observation.CommandFromTitle), and no other frame has named one:
	// a permission ask's command replaces it.
	commandFromTitle bool
	// rawOutput: a client terminal gave the output (Text.Raw); the
	// agent's own texts no longer change it.
	rawOutput bool
	// wordedExit is the exit code last read from words removed from a
	// text (Worded.Exit) that did not prove to be output, and those
	// words, for an observation that says they were (ExitWordsOutput).
	// It is part of the stored state.
	wordedExit *wordedExit
	endReason  string

	// held is what a frame that did not end the call said in words that
	// are the agent's only if it ends the call `failed`
	// (Observation.WordsIfFailed), until it ends; nil when nothing is.
	held *heldWords

	streams [numStreams]*Buffer
	// echoes hold back, per stream, what could still be an echo of the
	// command at the start of its output (see echo.go).
	echoes [numStreams]echoFilter
}

// NewCall returns the state of call id, bounding each text stream to
// limit bytes.
func NewCall(id string, limit int) *Call {
	return &Call{id: id, limit: limit, cur: meta{state: Pending, exit: noExit}, sent: meta{exit: noExit}}
}

// ID returns the tool call id.
func (c *Call) ID() string { return c.id }

// Command returns the command line known so far ("" when unknown).
func (c *Call) Command() string { return c.cur.command }

// IsShell reports whether any observation said the call is a shell
// command. Calls that are not produce no revision.
func (c *Call) IsShell() bool { return c.shell == ShellYes }

// NotShell reports whether the call was said to be some other tool and
// never a shell command.
func (c *Call) NotShell() bool { return c.shell == ShellNo }

// Ended reports whether the call has ended.
func (c *Call) Ended() bool { return c.cur.state == Ended }

// EndedByAgent reports whether the agent itself ended the call (its
// completed or failed final), rather than the end of the turn, the
// session, or a tool call whose command went on in the background.
func (c *Call) EndedByAgent() bool {
	return c.cur.state == Ended && c.endReason == "" && !c.cur.background
}

// Apply folds one observation into the call. Observations that arrive after
// the call ended still add what they know (a late stream, exit evidence
// while the outcome is Unknown, an exit code not known yet) but never
// reopen it, and never change an outcome that is known, nor a known exit
// code: ENDED is final.
func (c *Call) Apply(o *Observation) {
	if c.held != nil && c.cur.state != Ended && o.Status.Ended() {
		// The agent's final says whose the held words are, before what
		// the final itself says applies.
		c.releaseHeld(o.Status == StatusCompleted)
	}
	if o.WordsIfFailed && c.cur.state != Ended && !o.Status.Ended() {
		o = c.holdWords(o)
	}
	if o.WordsIfCancelAsked && !o.Replayed && !c.cancelAsked && c.cur.state != Ended {
		// No cancel was asked: the words are the command's output.
		o = wordsOutput(o)
	}
	// Words a replay removed that the live text held whole are output
	// (and say nothing), before the replay is cut to what it may add.
	o = c.wordsAsOutput(o)
	if o.Replayed {
		r := c.replayed(o)
		o = &r
	}
	if e := o.Exit; e != nil && e.Code == 0 && o.Status.Ended() && (o.Background || c.cur.background) {
		// The tool call ends while its command goes on in the background:
		// a 0 on the frame that ends it is the tool call's (an agent
		// restating its result fills in 0 for any success), not the
		// command's, which has not ended. Only a later frame can say how
		// the command ends.
		cp := *o
		cp.Exit, cp.ExitSetAside = nil, true
		o = &cp
	}
	if o.Shell == ShellYes || (o.Shell == ShellNo && c.shell == ShellUnknown) {
		c.shell = o.Shell
	}
	setIf(&c.cur.terminalID, o.TerminalID)
	// said: the agent itself ended the call (its completed or failed
	// final, not the end of the turn, nor of a tool call whose command
	// went on in the background). What it said then stands: a later frame
	// may add output, or the command that ran, but renames nothing and
	// replaces no output with a text that does not extend it.
	said := c.EndedByAgent() && !o.Background
	switch {
	case o.CommandRan && o.Command != "":
		c.cur.command, c.commandRan, c.commandFromTitle = o.Command, true, false
	case c.commandRan:
		// The command that ran is known; other frames only describe it.
	case said && c.cur.command != "":
		// The agent ended the call under this command: a later frame
		// does not rename it.
	case !(o.PermissionAsk || o.CommandFromTitle) || c.cur.command == "" ||
		(c.commandFromTitle && !o.CommandFromTitle):
		// A permission ask restates the command, sometimes re-quoted, and
		// a title may abbreviate it: either fills in an unknown command
		// but never replaces one, but the ask's replaces a title's (a
		// tool's display name, say, where the agent's title names no
		// command yet).
		if o.Command != "" {
			c.cur.command, c.commandFromTitle = o.Command, o.CommandFromTitle
		}
	}
	setIf(&c.cur.cwd, o.Cwd)
	setIf(&c.cur.description, o.Description)
	setIf(&c.cur.approvalReason, o.ApprovalReason)
	c.cur.background = c.cur.background || o.Background
	if !c.settled() {
		// Evidence about how the command ended; an outcome already known
		// is final and ignores it.
		if o.Signal != "" {
			c.cur.signal = o.Signal
		}
		c.cur.timedOut = c.cur.timedOut || o.TimedOut
		if o.Cancelled {
			c.cancel("")
			if o.CancelNotice != "" && c.notice == "" {
				c.notice = o.CancelNotice
			}
		}
		if o.FailNotice != "" && c.notice == "" && (o.Failed || o.Verdict == VerdictFailed) {
			c.notice = o.FailNotice
		}
		c.failed = c.failed || o.Failed
		c.verdictFailed = c.verdictFailed || o.Verdict == VerdictFailed
		c.succeeded = c.succeeded || o.Succeeded
		c.exitSetAside = c.exitSetAside || o.ExitSetAside
		if e := exitEvidence(o); e != nil {
			c.exit = StrongerExit(c.exit, e)
		}
		c.exitWordsOutput(o)
	} else if e := exitEvidence(o); c.exit == nil && e != nil && (c.cur.outcome != Succeeded || e.Code == 0) {
		// A known outcome may still learn its unknown exit code, which
		// never changes the outcome (a success takes only a 0); the
		// reason follows the code when the outcome stays what it was.
		c.exit = e
		outcome := c.cur.outcome
		if c.resolve(); c.cur.outcome != outcome {
			// Only a failure the agent reported without an exit code
			// resolves otherwise with one (a 0): it stays FAILED, and
			// its reason no longer says that no code came.
			c.cur.outcome, c.cur.reason = outcome, c.failedBeforeExit()
		}
		c.cur.exit = int64(e.Code)
	}
	if o.PermissionAsk && c.cur.state != Ended {
		c.cur.awaiting = true
	}
	for _, t := range o.Texts {
		if t.IfSplit && c.streams[t.Stream] == nil {
			continue
		}
		if !t.Raw && c.rawOutput {
			// The client's terminal said what the command printed: what
			// the agent writes of it is at best a copy, or its own words
			// about the command.
			continue
		}
		if t.Raw {
			c.rawOutput = true
		}
		if t.Raw || o.NoEcho {
			// Straight from the process, or from an agent that never
			// echoes: what was held back as a possible echo is output
			// after all, and nothing of this text is an echo.
			for _, x := range c.echoes[t.Stream].noEcho() {
				x.Stream = t.Stream
				c.applyText(x, false)
			}
		}
		if t.Stream == Stderr || t.Raw || o.NoEcho || c.echoes[t.Stream].passes(t) {
			c.applyText(t, said)
			continue
		}
		for _, x := range c.echoes[t.Stream].filter(t, c.cur.command, c.cur.cwd) {
			c.applyText(x, said)
		}
	}
	if c.cur.state == Ended {
		c.flushEchoes() // late text is never held back
		if c.cur.outcome == Unknown {
			c.resolve() // late evidence may resolve an unknown outcome
		}
		return
	}
	switch o.Status {
	case StatusRunning:
		c.cur.state = Running
		c.cur.awaiting = false
	case StatusCompleted, StatusFailed:
		c.statusFailed = o.Status == StatusFailed
		if c.cancelAsked && !c.finishedClean() && !c.endedSilently() {
			c.cancel("the user cancelled the prompt turn while the command ran")
		}
		c.end("")
		return
	}
	if len(o.Texts) > 0 && c.cur.state == Pending {
		c.cur.state = Running
		c.cur.awaiting = false
	}
}

// replayed is what a replayed observation (Observation.Replayed) may
// still say to this call: the command, cwd, description, approval reason
// and terminal only when the call knows none (the description and the
// approval reason only while it is open); background only while it is
// open; text only for streams it never saw; no exit the dialect says is
// evidence only live (Observation.ExitLiveOnly). Exit evidence and status
// stay: a call that ended with a known outcome ignores them anyway
// (Apply), and one that did not is better for them.
func (c *Call) replayed(o *Observation) Observation {
	r := *o
	r.Replayed = false
	if r.ExitLiveOnly {
		// The agent made this exit up for the replay.
		r.Exit, r.ExitLiveOnly = nil, false
	}
	if c.cur.command != "" {
		r.Command, r.CommandRan = "", false
	}
	if c.cur.cwd != "" {
		r.Cwd = ""
	}
	if c.cur.description != "" || c.cur.state == Ended {
		// Of an ended call, what a replay says about the command is no
		// reason for a revision.
		r.Description = ""
	}
	if c.cur.approvalReason != "" || c.cur.state == Ended {
		r.ApprovalReason = ""
	}
	if c.cur.state == Ended {
		// The live frames said whether the command went on in the
		// background when the call ended; a replay's words cannot send a
		// command that ended there.
		r.Background = false
	}
	if c.cur.terminalID != "" {
		r.TerminalID = ""
	}
	r.Texts = nil
	for _, t := range o.Texts {
		if c.streams[t.Stream] == nil && (t.Stream != Combined || c.streams[Stdout] == nil && c.streams[Stderr] == nil) {
			r.Texts = append(r.Texts, t)
		}
	}
	return r
}

// settled reports an ended call whose outcome is known. Nothing changes it
// any more; only an Unknown outcome can still be resolved by late evidence.
func (c *Call) settled() bool { return c.cur.state == Ended && c.cur.outcome != Unknown }

// exitEvidence is o's exit code when it is evidence, else nil: not a
// placeholder, and not a 0 that the same observation contradicts with a
// signal (a process that a signal killed has no exit status, and
// certainly not 0, whatever field says so). A nonzero code next to a
// signal is kept: shells report 128+n. A 0 next to a timeout or a failed
// verdict is kept too, but the outcome is FAILED all the same.
func exitEvidence(o *Observation) *Exit {
	if e := o.Exit; e != nil && !e.Placeholder && !(e.Code == 0 && o.Signal != "") {
		return e
	}
	return nil
}

// Answer records the user's answer to a permission ask: a rejection or a
// cancelled turn cancels the command, unless it already ended with a known
// outcome.
func (c *Call) Answer(rejected bool) {
	c.cur.awaiting = false
	if rejected && !c.settled() {
		c.cancel("the user rejected the permission ask")
		if c.cur.state == Ended {
			c.resolve()
		}
	}
}

// End ends a call that is still open because its turn or session ended;
// cancelled says the user cancelled it. why is the readable reason used when
// nothing better is known. It does nothing to a call that already ended.
func (c *Call) End(cancelled bool, why string) {
	if c.cur.state == Ended {
		return
	}
	if h := c.held; h != nil {
		// No final came: the held words are the agent's, but for an
		// error message that says nothing else (onlyFailed). Only a
		// `failed` final would have made such a text the agent's; with
		// none, nothing says the command did not run, and the text is
		// output.
		c.releaseHeld(h.onlyFailed())
	}
	if cancelled {
		c.cancel("the user cancelled the prompt turn before the command ended")
	}
	c.end(why)
}

// CancelRequested records that the user cancelled the prompt turn while
// the call was open (ACP `session/cancel`). However the call ends from now
// on (a `failed` final, a `completed` final without a clean exit, or no
// final at all before the turn's result) it ended because of that cancel:
// Cancelled, keeping a known exit code. Only a `completed` final with a
// known exit 0 and no signal or timeout shows that the command finished
// before the cancel took hold. It does nothing to a call that already
// ended: a call never changes its outcome because of a later cancel.
func (c *Call) CancelRequested() {
	if c.cur.state != Ended {
		c.cancelAsked = true
	}
}

// cancel marks the call cancelled; the first non-empty why is kept. The
// outcome reason adds the agent's notice (Observation.CancelNotice).
func (c *Call) cancel(why string) {
	c.cancelled = true
	if c.cancelWhy == "" {
		c.cancelWhy = why
	}
}

// finishedClean reports a clean end: a known exit 0 without a signal, a
// timeout or a failed verdict, under a status other than failed.
func (c *Call) finishedClean() bool {
	return c.exit != nil && c.exit.Code == 0 && !c.statusFailed && !c.verdictFailed && c.cur.signal == "" && !c.cur.timedOut
}

// endedSilently reports an end under `completed` that says nothing of
// how the command ended: no exit code, signal, timeout, failure or
// cancel. After the user's cancel such a final is no sign of it (the
// cancel is a failed final, a completed one with the agent's abort
// notice, or no final before the turn's result): an agent that let the
// command run to its end says just that.
func (c *Call) endedSilently() bool {
	return c.exit == nil && !c.statusFailed && !c.verdictFailed && !c.failed && c.cur.signal == "" && !c.cur.timedOut && !c.cancelled
}

func (c *Call) end(why string) {
	c.cur.state = Ended
	c.cur.awaiting = false
	c.endReason = why
	c.flushEchoes()
	for _, b := range c.streams {
		if b != nil {
			b.Flush()
		}
	}
	c.resolve()
}

// resolve derives the outcome of an ended call from its evidence. The ACP
// status is used only when there is no exit code, signal or timeout. No
// call that a signal, a timeout or a failed verdict was reported for ever
// resolves SUCCEEDED.
func (c *Call) resolve() {
	c.cur.exit = noExit
	if c.exit != nil {
		c.cur.exit = int64(c.exit.Code)
	}
	switch {
	case c.cancelled:
		c.cur.outcome, c.cur.reason = Cancelled, c.cancelWhy
		if c.cur.reason == "" {
			c.cur.reason = "the user rejected or cancelled the command"
		}
		if c.notice != "" {
			c.cur.reason += "; the agent said: " + c.notice
		}
	case c.cur.signal != "":
		c.cur.outcome, c.cur.reason = Failed, "killed by "+c.cur.signal
	case c.cur.timedOut:
		c.cur.outcome, c.cur.reason = Failed, "timed out"
	case c.exit != nil && c.exit.Code != 0:
		c.cur.outcome, c.cur.reason = Failed, fmt.Sprintf("exit code %d", c.exit.Code)
	case c.verdictFailed:
		c.cur.outcome, c.cur.reason = Failed, "the agent's result says the command failed"+c.quoted()
	case c.exit != nil:
		c.cur.outcome, c.cur.reason = Succeeded, "exit code 0"
	case c.failed:
		c.cur.outcome, c.cur.reason = Failed, "the agent reported a failure without an exit code"+c.quoted()
	case c.statusFailed:
		c.cur.outcome, c.cur.reason = Failed, "the agent said failed"+c.noExit()
	case c.succeeded:
		c.cur.outcome, c.cur.reason = Succeeded, "the agent proved success without an exit code"
	case c.cur.background && c.cur.state == Ended && c.endReason == "":
		// The tool call ended while the command went on: it is not known
		// yet how the command ends (late evidence may still resolve it).
		c.cur.outcome, c.cur.reason = Unknown, "the command went on in the background; how it ends is not known"
	case c.endReason != "":
		c.cur.outcome, c.cur.reason = Unknown, c.endReason
	case c.exitSetAside:
		c.cur.outcome, c.cur.reason = Unknown, "the agent said completed"+c.noExit()
	default:
		c.cur.outcome, c.cur.reason = Unknown, "the agent said completed but sent no exit code"
	}
}

// noExit is how the outcome reason of a call with no exit code, after the
// agent's status, says why: none was sent, or the one sent was set aside.
func (c *Call) noExit() string {
	if c.exitSetAside {
		return "; the exit code it sent is not the command's and was set aside"
	}
	return " and sent no exit code"
}

// failedBeforeExit is the outcome reason of a call the agent reported
// failed without an exit code once its exit code came after the end.
func (c *Call) failedBeforeExit() string {
	late := fmt.Sprintf("; exit code %d came after the call ended", c.exit.Code)
	if c.failed {
		return "the agent reported a failure" + late + c.quoted()
	}
	return "the agent said failed" + late
}

// quoted is the agent's notice as the outcome reason quotes it ("" when
// there is none).
func (c *Call) quoted() string {
	if c.notice == "" {
		return ""
	}
	return "; the agent said: " + c.notice
}

// Revision returns the next revision when anything changed since the
// previous one. Live revisions carry only new text; the first Ended
// revision, and any after it, carry every stream whole.
func (c *Call) Revision() (Revision, bool) {
	changed := c.cur != c.sent
	var texts [numStreams]*Chunk
	for s, b := range c.streams {
		if b == nil {
			continue
		}
		if ch, ok := b.Take(); ok {
			texts[s] = &ch
			changed = true
		}
	}
	if !changed {
		return Revision{}, false
	}
	var changes [numStreams]*Chunk
	if c.cur.state == Ended {
		// Ended revisions carry every stream whole, and what changed.
		changes = texts
		for s, b := range c.streams {
			if b != nil {
				w := b.Whole()
				texts[s] = &w
			}
		}
	}
	c.sent = c.cur
	c.revision++
	return c.revisionOf(c.revision, texts, changes), true
}

// Final returns the call's ENDED revision again, numbered as it was
// taken, with every text whole: for a caller that lost it. It is false
// when the call has not ended, or changed since that revision was taken.
func (c *Call) Final() (Revision, bool) {
	if c.cur.state != Ended || c.revision == 0 || c.cur != c.sent {
		return Revision{}, false
	}
	var texts [numStreams]*Chunk
	for s, b := range c.streams {
		if b != nil {
			w := b.Whole()
			texts[s] = &w
		}
	}
	return c.revisionOf(c.revision, texts, [numStreams]*Chunk{}), true
}

// revisionOf is the call's current state as revision number.
func (c *Call) revisionOf(number uint32, texts, changes [numStreams]*Chunk) Revision {
	r := Revision{
		Number:         number,
		ToolCallID:     c.id,
		TerminalID:     c.cur.terminalID,
		Command:        c.cur.command,
		Cwd:            c.cur.cwd,
		Description:    c.cur.description,
		State:          c.cur.state,
		Outcome:        c.cur.outcome,
		OutcomeReason:  c.cur.reason,
		Signal:         c.cur.signal,
		TimedOut:       c.cur.timedOut,
		Background:     c.cur.background,
		ApprovalReason: c.cur.approvalReason,
		Awaiting:       c.cur.awaiting,
		Texts:          texts,
		Changes:        changes,
	}
	if c.cur.exit != noExit {
		code := int32(c.cur.exit)
		r.ExitCode = &code
	}
	return r
}

// flushEchoes releases what the echo filters hold back: the output is
// over, so what could still have been an echo is decided now.
func (c *Call) flushEchoes() {
	for s := range c.echoes {
		for _, t := range c.echoes[s].flush(c.cur.command, c.cur.cwd) {
			t.Stream = Stream(s)
			c.applyText(t, false)
		}
	}
}

// wordedExit is an exit code read from words a dialect removed from a
// text, with what it needs to undo that (see Observation.ExitWordsOutput):
// the words themselves, never the text they were removed from, so that it
// costs the call (and its stored state) only their size.
type wordedExit struct {
	code   int32
	stream Stream
	// restore: the exit words were all that was removed, from the start
	// (head) or the end (tail) of the text; what was left of it was
	// leftLen bytes with the checksum leftSum.
	restore    bool
	head, tail string
	leftLen    int
	leftSum    uint64
}

// newWordedExit records the exit code removed with the words of t (whole
// as sent, t.Text what was left); restore says those words were all that
// was removed and the text was not cut.
func newWordedExit(code int32, t *Text, whole string, restore bool) *wordedExit {
	w := &wordedExit{code: code, stream: t.Stream}
	switch words := len(whole) - len(t.Text); {
	case !restore || words > maxExitWords || len(t.Text) > MaxStateLimit:
		// Longer words are no exit line (they are kept out of the state),
		// and a longer text no stream holds.
		return w
	case strings.HasSuffix(whole, t.Text):
		w.head = whole[:words]
	case strings.HasPrefix(whole, t.Text):
		w.tail = whole[len(t.Text):]
	default:
		return w
	}
	w.restore, w.leftLen, w.leftSum = true, len(t.Text), checksum(t.Text)
	return w
}

// maxExitWords bounds the removed words a wordedExit keeps to put back.
const maxExitWords = 1024

// checksum is FNV-1a of s: what a wordedExit keeps to know the text it
// left, which the stream must still hold exactly to take the words back.
func checksum[S ~string | ~[]byte](s S) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// exitWordsOutput undoes a wordedExit when o says the agent wrote no exit
// line (Observation.ExitWordsOutput): the call's exit code, when it is
// still the one read from the words, is dropped, and the text applies
// whole when its stream holds exactly what was left of it.
func (c *Call) exitWordsOutput(o *Observation) {
	w := c.wordedExit
	if !o.ExitWordsOutput || w == nil {
		return
	}
	c.wordedExit = nil
	if e := c.exit; e != nil && e.Source == ExitText && e.Code == w.code {
		c.exit = nil // else other evidence decided: it stays
	}
	// The words were output, whatever decided the exit.
	if !w.restore {
		return
	}
	var held []byte
	if b := c.streams[w.stream]; b != nil {
		if b.truncated() {
			return
		}
		held = b.held()
	}
	if len(held) == w.leftLen && checksum(held) == w.leftSum {
		c.applyText(Text{Stream: w.stream, Kind: Snapshot, Text: w.head + string(held) + w.tail}, false)
	}
}

// wordsAsOutput returns o, or a copy of it in which each text whose Whole
// the call's stream already holds applies whole, without the evidence
// read from the words removed from it (see Text.Whole); a text with words
// removed and nothing else is left out when it does not.
func (c *Call) wordsAsOutput(o *Observation) *Observation {
	if !slices.ContainsFunc(o.Texts, func(t Text) bool { return t.Whole != "" }) {
		return o
	}
	cp := *o
	cp.Texts = make([]Text, 0, len(o.Texts))
	output := false // words proved to be output
	var worded *wordedExit
	for _, t := range o.Texts {
		if whole := t.Whole; whole != "" && t.Bytes == nil && (t.Kind == Snapshot || t.Kind == Final) {
			t.Whole = ""
			if b := c.streams[t.Stream]; b != nil && !b.truncated() && string(b.held()) == whole {
				t.Text, output = whole, true
			} else {
				if o.Worded.Exit && o.Exit != nil && o.Exit.Source == ExitText {
					worded = newWordedExit(o.Exit.Code, &t, whole, o.Worded == Worded{Exit: true} && !t.Truncated && t.TotalBytes == 0)
				}
				if t.Text == "" && !t.Truncated && t.TotalBytes == 0 {
					continue // words and nothing else
				}
			}
		}
		cp.Texts = append(cp.Texts, t)
	}
	if !output && worded != nil {
		c.wordedExit = worded
	}
	if output {
		cp.dropWorded()
	}
	cp.Worded = Worded{}
	return &cp
}

// dropWorded takes out of o the evidence read from words a dialect
// removed (Worded), when those words proved to be output.
func (o *Observation) dropWorded() {
	w := o.Worded
	if w.Exit && o.Exit != nil && o.Exit.Source == ExitText {
		o.Exit = nil
	}
	o.TimedOut = o.TimedOut && !w.TimedOut
	o.Background = o.Background && !w.Background
	if w.Signal {
		o.Signal = ""
	}
	if w.Cancelled {
		o.Cancelled, o.CancelNotice = false, ""
	}
	if w.Failed {
		o.Failed, o.FailNotice = false, ""
	}
}

// wordsOutput returns o with the words removed from its texts put back
// (each Whole text whole) and the evidence read from them (Worded)
// dropped: they proved to be output.
func wordsOutput(o *Observation) *Observation {
	cp := *o
	cp.Texts = make([]Text, 0, len(o.Texts))
	for _, t := range o.Texts {
		if t.Whole != "" && t.Bytes == nil && (t.Kind == Snapshot || t.Kind == Final) {
			t.Text, t.Whole = t.Whole, ""
		}
		cp.Texts = append(cp.Texts, t)
	}
	cp.dropWorded()
	cp.Worded, cp.WordsIfCancelAsked = Worded{}, false
	return &cp
}

// heldWords is what Call.held holds: the texts whose words are in
// question, each with Whole (the text as sent) and Text (the rest), and
// the evidence read from the words.
type heldWords struct {
	texts                []Text
	cancelled            bool
	notice               string
	timedOut, background bool
	signal               string
	exit                 *Exit
	failed               bool
	failNotice           string
}

// holdWords sets aside, until the call ends, the texts of o from which
// the dialect removed words, and the evidence it read from them (see
// Observation.WordsIfFailed), and returns the rest of o. When a stream
// already holds such a text whole, its words are output now
// (wordsAsOutput), and o is returned as it is.
func (c *Call) holdWords(o *Observation) *Observation {
	var h heldWords
	rest := *o
	rest.Texts, rest.WordsIfFailed = nil, false
	for _, t := range o.Texts {
		if t.Whole == "" || t.Bytes != nil || (t.Kind != Snapshot && t.Kind != Final) {
			rest.Texts = append(rest.Texts, t)
			continue
		}
		if b := c.streams[t.Stream]; b != nil && !b.truncated() && string(b.held()) == t.Whole {
			return o
		}
		h.texts = append(h.texts, t)
	}
	if len(h.texts) == 0 {
		return &rest
	}
	w := o.Worded
	if w.Cancelled {
		h.cancelled, h.notice, rest.Cancelled, rest.CancelNotice = o.Cancelled, o.CancelNotice, false, ""
	}
	if w.TimedOut {
		h.timedOut, rest.TimedOut = o.TimedOut, false
	}
	if w.Background {
		h.background, rest.Background = o.Background, false
	}
	if w.Signal {
		h.signal, rest.Signal = o.Signal, ""
	}
	if w.Exit && o.Exit != nil && o.Exit.Source == ExitText {
		h.exit, rest.Exit = o.Exit, nil
	}
	if w.Failed {
		h.failed, h.failNotice, rest.Failed, rest.FailNotice = o.Failed, o.FailNotice, false, ""
	}
	rest.Worded = Worded{}
	c.held = &h
	return &rest
}

// onlyFailed says whether the held words are an agent's error message and
// nothing more: a failure, with no cancel, timeout, background move,
// signal or exit code read from them. Such words are the agent's only by
// the text's shape (a line where the agent would write its message), not
// by anything they say.
func (h *heldWords) onlyFailed() bool {
	return h.failed && !h.cancelled && !h.timedOut && !h.background && h.signal == "" && h.exit == nil
}

// releaseHeld applies what the call holds (Call.held): as output, the
// texts whole and no evidence; else as the agent's words, the rest of each
// text and the evidence read from the words.
func (c *Call) releaseHeld(output bool) {
	h := c.held
	c.held = nil
	var o Observation
	for _, t := range h.texts {
		if output {
			t.Text = t.Whole
		}
		t.Whole = ""
		if t.Text == "" && !t.Truncated && t.TotalBytes == 0 {
			continue // words and nothing else
		}
		o.Texts = append(o.Texts, t)
	}
	if !output {
		o.Cancelled, o.CancelNotice, o.TimedOut, o.Background, o.Signal, o.Exit = h.cancelled, h.notice, h.timedOut, h.background, h.signal, h.exit
		o.Failed, o.FailNotice = h.failed, h.failNotice
	}
	c.Apply(&o)
}

// applyText folds one text into its stream's buffer; with addOnly, only
// what adds to the text held (Buffer.apply).
func (c *Call) applyText(t Text, addOnly bool) {
	b := c.streams[t.Stream]
	if b == nil {
		b = NewBuffer(c.limit)
		c.streams[t.Stream] = b
	}
	b.apply(t, addOnly)
}

// Whole sets every text stream of r, a revision just taken from the call,
// to the whole bounded text (Replace), as the Ended revision carries them:
// for a client that did not get the earlier revisions (a new stream).
func (c *Call) Whole(r *Revision) {
	for s, b := range c.streams {
		if b != nil {
			w := b.Whole()
			r.Texts[s] = &w
		}
	}
}

func setIf(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}
