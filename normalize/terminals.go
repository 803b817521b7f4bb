package normalize

import (
	"cmp"
	"math"
	"slices"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/dialect"
	"github.com/acpnorm/acpnorm/internal/wire"
)

// Client-owned terminals (ACP v1 `terminal/*`): the agent asks the client
// to run a command, and the command, its output and its real exit status
// then travel as the agent's requests and the client's answers. The
// dialect reads each message (dialect.TerminalRequest, dialect.Response);
// this file keeps, per session, what they say:
//
//   - the requests awaiting their answer (terminal/create,
//     terminal/output, terminal/wait_for_exit), by JSON-RPC id. A response
//     answers one only when its id matches and its shape fits the method
//     (a `terminalId` for create, an `output` for output, an `exitCode` or
//     `signal` for wait_for_exit, or an error), since the client's own
//     requests to the agent share the id space;
//   - every terminal a create's answer named, with the command that runs
//     (which beats any title or rawInput: it is what ran), its cwd, and
//     until a tool call names it in its content
//     (`{"type":"terminal","terminalId"}`) its latest output snapshot and
//     exit status. Either may come first: what the terminal learned before
//     the tool call named it is applied to the call when it does, and
//     what it learns after goes to the call at once.
//
// An output answer is a snapshot (it replaces); `truncated` says the
// client cut the output from its beginning. An `exitStatus` in an output
// answer, or a wait_for_exit answer, is the command's real exit status,
// the strongest evidence there is (accum.ExitClient); the first one known
// is kept. terminal/kill is recorded but is not an outcome: a kill after
// the exit is known changes nothing, and one before it is a signal only
// when the exit status that follows says so (the process may have exited
// on its own first). terminal/release changes nothing either. A create
// that gets an error response never started: the open call running that
// command, when exactly one does, FAILED. A terminal id that no create's
// answer named (agents put their own ids in terminal content) changes
// nothing.
//
// Both maps are bounded by 4 per call of WithMaxCallsPerSession; at the
// bound the oldest entry is forgotten (a FrameError says so), so a client
// that never answers cannot grow them. The output a terminal holds before
// a tool call names it, and the ids, command and cwd of each request and
// terminal, are charged to the memory budget like a call's text.

// clientTerm is one client-owned terminal of a session.
type clientTerm struct {
	order        uint64
	call         string // the tool call that names it, "" until one does
	command, cwd string
	// Until a call names it: the latest output snapshot and whether it
	// was cut.
	output    string
	hasOutput bool
	truncated bool
	exit      *dialect.TerminalExit // the exit status, once known
	killed    bool                  // the agent had it killed before its exit was known
	released  bool
}

// termReq is a terminal request awaiting the client's answer.
type termReq struct {
	order        uint64
	method       string
	terminal     string // "" for create
	command, cwd string // create's
}

// terminalRequest records an agent's request about a client terminal.
func (ss *sessions) terminalRequest(s *session, t *dialect.TerminalRequest, r *reply) {
	switch t.Method {
	case dialect.MethodTerminalCreate:
		if t.RequestID == "" {
			return
		}
		req := termReq{method: t.Method, command: t.Command, cwd: t.Cwd}
		for _, f := range []struct {
			name string
			v    *string
		}{{"command", &req.command}, {"cwd", &req.cwd}} {
			if n := len(*f.v); n > ss.cfg.TextLimit {
				*f.v = ""
				ss.refused(r, LimitTextBytes)
				r.fail(InvalidArgument, "", "frame %d of session %q creates a terminal with a %s of %d bytes, over the text limit of %d bytes (WithTextLimit, acpnormd --text-limit); it is left out", r.seq, s.id, f.name, n, ss.cfg.TextLimit)
			}
		}
		ss.awaitTerminal(s, t.RequestID, req, r)
	case dialect.MethodTerminalOutput, dialect.MethodTerminalWait:
		if t.RequestID != "" && s.terms[t.TerminalID] != nil {
			ss.awaitTerminal(s, t.RequestID, termReq{method: t.Method, terminal: t.TerminalID}, r)
		}
	case dialect.MethodTerminalKill:
		if ct := s.terms[t.TerminalID]; ct != nil && ct.exit == nil {
			ct.killed = true
		}
	case dialect.MethodTerminalRelease:
		if ct := s.terms[t.TerminalID]; ct != nil {
			ct.released = true
		}
	}
}

// awaitTerminal remembers a request until its answer, forgetting the
// oldest one at the bound.
func (ss *sessions) awaitTerminal(s *session, id string, req termReq, r *reply) {
	if n := len(id); n > ss.cfg.MaxIDBytes {
		ss.refused(r, LimitIDBytes)
		r.fail(InvalidArgument, "", "frame %d of session %q sends %s under a JSON-RPC id of %d bytes, over the %d-byte limit for ids (WithMaxIDBytes, acpnormd --max-id-bytes); its answer will not be read", r.seq, s.id, req.method, n, ss.cfg.MaxIDBytes)
		return
	}
	if _, known := s.termReqs[id]; !known && len(s.termReqs) >= ss.maxRefs() {
		oldest := ""
		for k, q := range s.termReqs {
			if oldest == "" || q.order < s.termReqs[oldest].order {
				oldest = k
			}
		}
		ss.refused(r, LimitCallsPerSession)
		r.fail(ResourceExhausted, "", "frame %d of session %q: the session already awaits %d answers to terminal requests (4 per call of WithMaxCallsPerSession, acpnormd --max-calls-per-session); the oldest, %s under id %s, is forgotten and its answer will not be read", r.seq, s.id, len(s.termReqs), s.termReqs[oldest].method, oldest)
		ss.unholdState(s, s.termReqs[oldest].size(oldest))
		delete(s.termReqs, oldest)
	}
	if limit := ss.holdState(s, req.size(id)); limit != "" {
		n := len(req.command) + len(req.cwd)
		req.command, req.cwd = "", ""
		if again := ss.holdState(s, req.size(id)); again != "" {
			ss.stateRefused(r, s, "", again, "the ids of a "+req.method+" request", req.size(id), "it is not kept, and its answer will not be read")
			return
		}
		ss.stateRefused(r, s, "", limit, "the command and cwd of a terminal/create", n, "they are left out, and the terminal is tracked without them")
	}
	if old, known := s.termReqs[id]; known {
		ss.unholdState(s, old.size(id))
	}
	s.termSeq++
	req.order = s.termSeq
	s.termReqs[id] = req
}

// answers reports whether a response can be the answer to req: its shape
// fits the method (see the top of this file).
func answers(req termReq, resp *dialect.Response) bool {
	if resp.Error {
		return true
	}
	switch req.method {
	case dialect.MethodTerminalCreate:
		return resp.TerminalID != ""
	case dialect.MethodTerminalOutput:
		return resp.HasOutput
	case dialect.MethodTerminalWait:
		return resp.HasExit
	}
	return false
}

// terminalResponse applies the client's answer to a terminal request, if
// the response is one.
func (ss *sessions) terminalResponse(s *session, resp *dialect.Response, r *reply) {
	req, ok := s.termReqs[resp.RequestID]
	if !ok || !answers(req, resp) {
		return
	}
	delete(s.termReqs, resp.RequestID)
	ss.unholdState(s, req.size(resp.RequestID))
	if req.method == dialect.MethodTerminalCreate && !resp.Error {
		ss.created(s, resp.TerminalID, req, r)
		return
	}
	switch {
	case req.method == dialect.MethodTerminalCreate && resp.Error:
		ss.createFailed(s, req, r)
	case resp.Error:
		// The client could not report on it: nothing is learned.
	default:
		ct := s.terms[req.terminal]
		if ct == nil {
			return // forgotten meanwhile (its call was released)
		}
		if req.method == dialect.MethodTerminalOutput {
			ss.supersede(s, req)
		}
		var o accum.Observation
		if resp.HasOutput {
			o.Texts = []accum.Text{{Stream: accum.Combined, Kind: accum.Snapshot, Text: resp.Output, Truncated: resp.Truncated, Raw: true}}
		}
		exit := resp.ExitStatus
		if req.method == dialect.MethodTerminalWait {
			exit = &resp.Exit
		}
		// An exit status with neither a code nor a signal says nothing of
		// how the command ended: a later one still can.
		if exit != nil && ct.exit == nil && (exit.Code.Known || exit.Signal != "" || exit.OddSignal) {
			e := *exit
			ct.exit = &e
			ct.killed = false // it exited: the status says how
		}
		if ct.exit != nil {
			ct.exit.Observe(&o)
		}
		if ct.call != "" {
			ss.toCall(s, ct, req.terminal, o, r)
			return
		}
		if resp.HasOutput {
			ss.holdTermOutput(s, ct, resp.Output, resp.Truncated, r)
		}
	}
}

// supersede forgets the output requests of req's terminal sent before
// req, whose answers have not come: req's answer, a later snapshot of
// the output, is applied, and theirs would take the output back.
func (ss *sessions) supersede(s *session, req termReq) {
	for k, q := range s.termReqs {
		if q.method == dialect.MethodTerminalOutput && q.terminal == req.terminal && q.order < req.order {
			delete(s.termReqs, k)
			ss.unholdState(s, q.size(k))
		}
	}
}

// created records a terminal a create's answer named. When a tool call
// already names it, the command and cwd go to the call now. The terminal
// is charged what it holds (req's command and cwd, its id and its call's).
func (ss *sessions) created(s *session, id string, req termReq, r *reply) {
	if n := len(id); n > ss.cfg.MaxIDBytes {
		ss.refused(r, LimitIDBytes)
		r.fail(InvalidArgument, "", "frame %d of session %q names a terminalId of %d bytes, over the %d-byte limit for ids (WithMaxIDBytes, acpnormd --max-id-bytes); the terminal is not tracked", r.seq, s.id, n, ss.cfg.MaxIDBytes)
		return
	}
	if old := s.terms[id]; old != nil {
		// The client reused an id: the new terminal is another command,
		// not the call the old one went to (which may have ended).
		if old.call != "" && s.terminals[id] == old.call {
			delete(s.terminals, id)
			ss.unholdState(s, termRef(id, old.call))
		}
		ss.dropTerm(s, id)
	}
	if len(s.terms) >= ss.maxRefs() {
		oldest := ""
		for k, t := range s.terms {
			if oldest == "" || termOlder(t, s.terms[oldest]) {
				oldest = k
			}
		}
		ss.refused(r, LimitCallsPerSession)
		r.fail(ResourceExhausted, "", "frame %d of session %q creates terminal %q, but the session already tracks %d client terminals (4 per call of WithMaxCallsPerSession, acpnormd --max-calls-per-session); terminal %q is forgotten", r.seq, s.id, id, len(s.terms), oldest)
		ss.dropTerm(s, oldest)
	}
	ct := &clientTerm{command: req.command, cwd: req.cwd}
	if call, ok := s.terminals[id]; ok && s.calls[call] != nil {
		ct.call = call
	}
	if limit := ss.holdState(s, ct.size(id)); limit != "" {
		n := len(ct.command) + len(ct.cwd)
		ct.command, ct.cwd = "", ""
		if again := ss.holdState(s, ct.size(id)); again != "" {
			ss.stateRefused(r, s, ct.call, again, "the id of the terminal a terminal/create's answer names, with its call's", ct.size(id), "the terminal is not tracked")
			return
		}
		ss.stateRefused(r, s, ct.call, limit, "the command and cwd of a terminal/create", n, "they are left out, and the terminal is tracked without them")
	}
	s.termSeq++
	ct.order = s.termSeq
	s.terms[id] = ct
	if ct.call != "" {
		ss.toCall(s, ct, id, ct.named(id), r)
	}
}

// termOlder orders terminals for forgetting: released ones first, then
// the oldest.
func termOlder(a, b *clientTerm) bool {
	if a.released != b.released {
		return a.released
	}
	return a.order < b.order
}

// createFailed applies a create's error answer: the command never
// started. The one open shell call running that command, if there is
// exactly one, FAILED.
func (ss *sessions) createFailed(s *session, req termReq, r *reply) {
	if req.command == "" {
		return
	}
	var found *entry
	for _, e := range s.calls {
		if e.call.Ended() || !e.call.IsShell() || e.call.Command() != req.command {
			continue
		}
		if found != nil {
			return // which one is not known
		}
		found = e
	}
	if found != nil {
		o := accum.Observation{ToolCallID: found.call.ID(), Failed: true}
		ss.observe(s, &o, r)
	}
}

// named is what a terminal learned before a tool call named it: applied
// to the call when one does.
func (ct *clientTerm) named(id string) accum.Observation {
	o := accum.Observation{TerminalID: id, Cwd: ct.cwd}
	if ct.command != "" {
		o.Command, o.CommandRan = ct.command, true
	}
	if ct.hasOutput {
		o.Texts = []accum.Text{{Stream: accum.Combined, Kind: accum.Snapshot, Text: ct.output, Truncated: ct.truncated, Raw: true}}
	}
	if ct.exit != nil {
		ct.exit.Observe(&o)
	}
	return o
}

// toCall applies what terminal id says to the call that names it.
func (ss *sessions) toCall(s *session, ct *clientTerm, id string, o accum.Observation, r *reply) {
	o.ToolCallID, o.TerminalID, o.Shell = ct.call, id, accum.ShellYes
	ss.observe(s, &o, r)
}

// tieTerminal is called when a tool call names terminal id in its
// content: a client terminal that no call named yet becomes this call's,
// and what it learned so far is returned, to apply before the frame's own
// observation.
func (ss *sessions) tieTerminal(s *session, id, call string, r *reply) (accum.Observation, bool) {
	ct := s.terms[id]
	if ct == nil || ct.call != "" {
		return accum.Observation{}, false
	}
	if limit := ss.holdState(s, len(call)); limit != "" {
		ss.stateRefused(r, s, call, limit, "the id of the call that names client terminal "+quoteShort(id), len(call), "the terminal is not tied to the call yet: what it ran and printed reaches the call when a later frame names it within the limit")
		return accum.Observation{}, false
	}
	ct.call = call
	o := ct.named(id)
	o.ToolCallID, o.Shell = call, accum.ShellYes
	ss.unholdTerm(s, ct)
	return o, true
}

// holdTermOutput keeps the latest output of a terminal no call names yet,
// within the memory budget; what the budget refuses is not held (the
// terminal says truncated).
func (ss *sessions) holdTermOutput(s *session, ct *clientTerm, out string, truncated bool, r *reply) {
	if len(out) > ss.cfg.TextLimit {
		out, truncated = tail(out, ss.cfg.TextLimit), true
	}
	ss.unholdTerm(s, ct)
	limit := ""
	if len(out) > 0 && s.state+s.termOutput+len(out) > ss.cfg.stateLimit() {
		limit = LimitSessionState
	} else {
		limit = ss.reserve(s, len(out))
	}
	if limit != "" {
		ss.refused(r, limit)
		r.fail(ResourceExhausted, "", "frame %d of session %q: the output of a client terminal no tool call names yet (%d bytes) is over a memory limit (%s); it is not held and the terminal says truncated", r.seq, s.id, len(out), limit)
		ct.output, ct.hasOutput, ct.truncated = "", true, true
		return
	}
	s.termOutput += len(out)
	ss.hooks.heldBytes(ss.held.Load())
	ct.output, ct.hasOutput, ct.truncated = out, true, truncated
}

// unholdTerm gives back what a terminal's held output was charged.
func (ss *sessions) unholdTerm(s *session, ct *clientTerm) {
	if n := len(ct.output); n > 0 {
		s.termOutput -= n
		s.held -= n
		s.space.held.Add(int64(-n))
		ss.hooks.heldBytes(ss.held.Add(int64(-n)))
		ct.output = ""
	}
}

// dropTerm forgets a terminal.
func (ss *sessions) dropTerm(s *session, id string) {
	if ct := s.terms[id]; ct != nil {
		ss.unholdTerm(s, ct)
		ss.unholdState(s, ct.size(id))
		delete(s.terms, id)
	}
}

// tail is the last n bytes of s, starting on a rune.
func tail(s string, n int) string {
	i := len(s) - n
	for i < len(s) && i > 0 && s[i]&0xC0 == 0x80 {
		i++
	}
	return s[i:]
}

// termsInOrder lists the terminal ids in the order they were created.
func (s *session) termsInOrder(buf []string) []string {
	ids := buf[:0]
	for id := range s.terms {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(s.terms[a].order, s.terms[b].order) })
	return ids
}

// unholdKept gives back what the session's own state holds: the output
// its terminals hold and its state (see holdState), when it all goes.
func (ss *sessions) unholdKept(s *session) {
	for _, ct := range s.terms {
		ss.unholdTerm(s, ct)
	}
	ss.unholdState(s, s.state)
}

// Bits of a stored terminal's flags.
const (
	termHasOutput = 1 << iota
	termTruncated
	termHasExit
	termExitKnown
	termOddSignal
	termKilled
	termReleased
)

// appendTerms writes the client terminals, the terminal requests awaiting
// an answer and the replay flag, in a fixed order (so that the same state
// encodes to the same bytes).
func (s *session) appendTerms(b []byte) []byte {
	b = wire.AppendBool(b, s.replay)
	b = wire.AppendUvarint(b, s.termSeq)
	b = wire.AppendUvarint(b, uint64(len(s.terms)))
	var buf [16]string // the ids, without an allocation when they fit
	for _, id := range s.termsInOrder(buf[:]) {
		ct := s.terms[id]
		b = wire.AppendString(b, id)
		b = wire.AppendUvarint(b, ct.order)
		b = wire.AppendString(b, ct.call)
		b = wire.AppendString(b, ct.command)
		b = wire.AppendString(b, ct.cwd)
		b = wire.AppendString(b, ct.output)
		var flags uint64
		set := func(bit uint64, on bool) {
			if on {
				flags |= bit
			}
		}
		set(termHasOutput, ct.hasOutput)
		set(termTruncated, ct.truncated)
		set(termHasExit, ct.exit != nil)
		set(termExitKnown, ct.exit != nil && ct.exit.Code.Known)
		set(termOddSignal, ct.exit != nil && ct.exit.OddSignal)
		set(termKilled, ct.killed)
		set(termReleased, ct.released)
		b = wire.AppendUvarint(b, flags)
		if ct.exit != nil {
			b = wire.AppendVarint(b, int64(ct.exit.Code.Value))
			b = wire.AppendString(b, ct.exit.Signal)
		}
	}
	b = wire.AppendUvarint(b, uint64(len(s.termReqs)))
	for _, id := range sortedKeys(s.termReqs, buf[:]) {
		q := s.termReqs[id]
		b = wire.AppendString(b, id)
		b = wire.AppendUvarint(b, q.order)
		b = wire.AppendString(b, q.method)
		b = wire.AppendString(b, q.terminal)
		b = wire.AppendString(b, q.command)
		b = wire.AppendString(b, q.cwd)
	}
	return b
}

// restoreTerms reads what appendTerms wrote, charging the output held to
// the memory budget as it was when stored.
func (ss *sessions) restoreTerms(s *session, d *wire.Reader) {
	s.replay = d.Bool("replay")
	s.termSeq = d.Uvarint("terminal counter")
	for n := d.Count("client terminals"); n > 0 && d.Err == nil; n-- {
		id := d.String("terminal id")
		ct := &clientTerm{order: d.Uvarint("terminal order")}
		ct.call = d.String("terminal's call")
		ct.command = d.String("terminal command")
		ct.cwd = d.String("terminal cwd")
		ct.output = d.String("terminal output")
		flags := d.Uvarint("terminal flags")
		if d.Err == nil && flags >= termReleased<<1 {
			d.Fail("unknown terminal flags %#x", flags)
		}
		ct.hasOutput, ct.truncated = flags&termHasOutput != 0, flags&termTruncated != 0
		ct.killed, ct.released = flags&termKilled != 0, flags&termReleased != 0
		if flags&termHasExit != 0 {
			code := d.Varint("terminal exit code")
			if d.Err == nil && (code < math.MinInt32 || code > math.MaxInt32) {
				d.Fail("terminal exit code %d is out of range", code)
			}
			e := &dialect.TerminalExit{Signal: d.String("terminal signal"), OddSignal: flags&termOddSignal != 0}
			e.Code = dialect.Code{Value: int32(code), Known: flags&termExitKnown != 0}
			ct.exit = e
		}
		if d.Err == nil && len(ct.output) > ss.cfg.TextLimit {
			d.Fail("terminal %q holds %d bytes, over the text limit", id, len(ct.output))
		}
		if d.Err != nil {
			return
		}
		s.held += len(ct.output)
		s.termOutput += len(ct.output)
		s.space.held.Add(int64(len(ct.output)))
		ss.hooks.heldBytes(ss.held.Add(int64(len(ct.output))))
		s.terms[id] = ct
	}
	for n := d.Count("terminal requests"); n > 0 && d.Err == nil; n-- {
		id := d.String("request id")
		q := termReq{order: d.Uvarint("request order")}
		q.method = d.String("request method")
		q.terminal = d.String("request terminal")
		q.command = d.String("request command")
		q.cwd = d.String("request cwd")
		s.termReqs[id] = q
	}
}
