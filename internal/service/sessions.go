package service

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/dialect"
	"google.golang.org/grpc/codes"
)

// sessions is the state of every ACP session of the process, shared by all
// streams so that a client that reconnects goes on where it left off.
type sessions struct {
	cfg   Config
	m     *Metrics
	now   func() time.Time
	total atomic.Int64 // calls held, all sessions

	mu  sync.Mutex
	all map[string]*session
}

// session is the state of one ACP session. Its mutex serializes the frames
// of the session, whichever stream they arrive on.
type session struct {
	mu        sync.Mutex
	id        string
	gone      bool // removed from sessions.all; look it up again
	dialect   dialect.Dialect
	name      string // the dialect's name, kept to stamp every revision
	explicit  bool   // chosen by name, not detected
	cwd       string
	cwdByHand bool // from AcpFrame.cwd, which beats session/new
	cancel    bool // session/cancel seen in the current turn
	touched   time.Time
	created   uint64
	calls     map[string]*entry
	terminals map[string]string // terminal id -> tool call id
	asks      map[string]ask    // JSON-RPC id -> the ask
}

type entry struct {
	call    *accum.Call
	order   uint64
	touched time.Time
	endedAt time.Time
}

type ask struct {
	callID string
	reject []string
}

func newSessions(cfg Config, m *Metrics) *sessions {
	return &sessions{cfg: cfg, m: m, now: time.Now, all: map[string]*session{}}
}

// lock returns the session, locked, creating it when needed.
func (ss *sessions) lock(id string) *session {
	for {
		ss.mu.Lock()
		s := ss.all[id]
		if s == nil {
			s = &session{id: id, calls: map[string]*entry{}, terminals: map[string]string{}, asks: map[string]ask{}}
			ss.all[id] = s
		}
		ss.mu.Unlock()
		s.mu.Lock()
		if !s.gone {
			s.touched = ss.now()
			return s
		}
		s.mu.Unlock()
	}
}

// reply collects what one request produces.
type reply struct {
	session string
	seq     uint64
	out     []*pb.NormalizeResponse
	m       *Metrics
	stream  *delivered // what the requesting stream has carried; nil: nothing tracked
}

func (r *reply) fail(code codes.Code, callID, format string, args ...any) {
	r.m.frameError(code)
	r.out = append(r.out, &pb.NormalizeResponse{Kind: &pb.NormalizeResponse_FrameError{FrameError: &pb.FrameError{
		SessionId:  r.session,
		Sequence:   r.seq,
		Code:       int32(code),
		Message:    fmt.Sprintf(format, args...),
		ToolCallId: callID,
	}}})
}

// handle applies one request, arrived on a stream that has carried d, and
// returns what it produces.
func (ss *sessions) handle(req *pb.NormalizeRequest, d *delivered) []*pb.NormalizeResponse {
	ss.m.framesIn.Inc()
	var r *reply
	switch k := req.GetKind().(type) {
	case *pb.NormalizeRequest_Frame:
		r = ss.frame(k.Frame, d)
	case *pb.NormalizeRequest_TurnEnded:
		r = ss.control(k.TurnEnded.GetSessionId(), k.TurnEnded.GetSequence(), "turn_ended", d, func(s *session, r *reply) {
			ss.endOpen(s, k.TurnEnded.GetCancelled() || s.cancel, "the prompt turn ended while the call was still open", r)
			s.cancel = false
		})
	case *pb.NormalizeRequest_SessionClosed:
		r = ss.control(k.SessionClosed.GetSessionId(), k.SessionClosed.GetSequence(), "session_closed", d, func(s *session, r *reply) {
			ss.endOpen(s, s.cancel, "the session closed while the call was still open", r)
			ss.drop(s, "session_closed")
		})
	default:
		r = &reply{m: ss.m}
		r.fail(codes.InvalidArgument, "", "request carries neither a frame, turn_ended nor session_closed")
	}
	return r.out
}

func (ss *sessions) control(id string, seq uint64, what string, d *delivered, do func(*session, *reply)) *reply {
	r := &reply{session: id, seq: seq, m: ss.m, stream: d}
	if id == "" {
		r.fail(codes.InvalidArgument, "", "%s %d has no session_id", what, seq)
		return r
	}
	s := ss.lock(id)
	defer s.mu.Unlock()
	do(s, r)
	return r
}

func (ss *sessions) frame(f *pb.AcpFrame, d *delivered) *reply {
	r := &reply{session: f.GetSessionId(), seq: f.GetSequence(), m: ss.m, stream: d}
	if f.GetSessionId() == "" {
		r.fail(codes.InvalidArgument, "", "frame %d has no session_id", f.GetSequence())
		return r
	}
	if len(f.GetMessage()) == 0 {
		r.fail(codes.InvalidArgument, "", "frame %d of session %q has an empty message", f.GetSequence(), f.GetSessionId())
		return r
	}
	var chosen dialect.Dialect
	if name := strings.TrimSpace(f.GetDialect()); name != "" && !strings.EqualFold(name, dialect.Auto) {
		d, ok := dialect.Lookup(name)
		if !ok {
			r.fail(codes.InvalidArgument, "", "frame %d of session %q names unknown dialect %q; ListDialects lists the dialects of this build", f.GetSequence(), f.GetSessionId(), name)
			return r
		}
		chosen = d
	}
	if cwd := f.GetCwd(); cwd != "" && !filepath.IsAbs(cwd) {
		r.fail(codes.InvalidArgument, "", "frame %d of session %q has a cwd that is not absolute: %q", f.GetSequence(), f.GetSessionId(), cwd)
		return r
	}

	s := ss.lock(f.GetSessionId())
	defer s.mu.Unlock()
	if chosen != nil {
		s.use(chosen)
		s.explicit = true
	}
	if cwd := f.GetCwd(); cwd != "" {
		s.cwd, s.cwdByHand = filepath.Clean(cwd), true
	}
	read, err := dialect.Read(s.reader(), f.GetMessage())
	if err != nil {
		r.fail(codes.InvalidArgument, "", "frame %d of session %q: %v", f.GetSequence(), f.GetSessionId(), err)
		return r
	}
	if read.AgentName != "" && !s.explicit {
		s.use(dialect.Detect(read.AgentName))
	}
	if read.SessionCwd != "" && !s.cwdByHand && filepath.IsAbs(read.SessionCwd) {
		s.cwd = filepath.Clean(read.SessionCwd)
	}
	for i := range read.Observations {
		id := ss.observe(s, &read.Observations[i], r)
		if read.Ask != nil && read.Observations[i].PermissionAsk && id != "" {
			s.asks[read.Ask.RequestID] = ask{callID: id, reject: read.Ask.RejectOptions}
		}
	}
	if a := read.Answer; a != nil {
		if pending, ok := s.asks[a.RequestID]; ok {
			delete(s.asks, a.RequestID)
			if e := s.calls[pending.callID]; e != nil {
				e.call.Answer(a.Cancelled || slices.Contains(pending.reject, a.OptionID))
				ss.emit(s, e, r)
			}
		}
	}
	if read.Cancelled && !read.TurnEnded {
		s.cancel = true
	}
	if read.TurnEnded {
		ss.endOpen(s, read.Cancelled || s.cancel, "the prompt turn ended while the call was still open", r)
		s.cancel = false
	}
	return r
}

// reader is the dialect frames are read with: the chosen or detected one,
// else the generic one.
func (s *session) reader() dialect.Dialect {
	if s.dialect != nil {
		return s.dialect
	}
	return dialect.Generic()
}

// use makes d the session's dialect.
func (s *session) use(d dialect.Dialect) { s.dialect, s.name = d, d.Info().Name }

// dialectName is the name of reader().
func (s *session) dialectName() string {
	if s.dialect != nil {
		return s.name
	}
	return dialect.GenericName
}

// observe applies one observation and returns the id of the call it went
// to ("" when it was refused).
func (ss *sessions) observe(s *session, o *accum.Observation, r *reply) string {
	id := o.ToolCallID
	if id == "" && o.TerminalID != "" {
		id = s.terminals[o.TerminalID]
		if id == "" {
			r.fail(codes.FailedPrecondition, "", "frame %d of session %q is about terminal %q, which no tool call has shown as its terminal content", r.seq, s.id, o.TerminalID)
			return ""
		}
	}
	if id == "" {
		r.fail(codes.InvalidArgument, "", "frame %d of session %q updates a tool call without a toolCallId", r.seq, s.id)
		return ""
	}
	e := s.calls[id]
	if e == nil && o.PermissionAsk {
		// An ask under an id never seen is either about the one open call
		// (some agents ask under another id) or the first sight of a new
		// call (others ask before, or instead of, their tool_call). It can
		// be the open call only when it does not name another command.
		if other := s.onlyOpen(o.Shell); other != nil && sameCommand(o.Command, other.call.Command()) {
			// The ask names a call under another id: keep only what the
			// ask says about approval.
			e, id = other, other.call.ID()
			*o = accum.Observation{ToolCallID: id, PermissionAsk: true, ApprovalReason: o.ApprovalReason}
		}
	}
	if e == nil {
		if n := len(s.calls); n >= ss.cfg.MaxCallsPerSession {
			r.fail(codes.ResourceExhausted, id, "frame %d of session %q opens tool call %q, but the session already holds %d calls (the limit)", r.seq, s.id, id, n)
			return ""
		}
		if ss.total.Add(1) > int64(ss.cfg.MaxCalls) {
			ss.total.Add(-1)
			r.fail(codes.ResourceExhausted, id, "frame %d of session %q opens tool call %q, but the service already holds %d calls (the limit)", r.seq, s.id, id, ss.cfg.MaxCalls)
			return ""
		}
		s.created++
		e = &entry{call: accum.NewCall(id, ss.cfg.TextLimit), order: s.created}
		s.calls[id] = e
		ss.m.openCalls.Inc()
	}
	if o.Cwd != "" && !filepath.IsAbs(o.Cwd) && s.cwd != "" {
		o.Cwd = filepath.Join(s.cwd, o.Cwd)
	}
	if o.Shell == accum.ShellNo && !e.call.IsShell() {
		o.Texts = nil // output of other tools is not ours to hold
	}
	if o.TerminalID != "" {
		s.terminals[o.TerminalID] = id
	}
	wasEnded := e.call.Ended()
	e.call.Apply(o)
	e.touched = ss.now()
	if !wasEnded && e.call.Ended() {
		e.endedAt = e.touched
	}
	ss.emit(s, e, r)
	return id
}

// sameCommand reports whether an ask naming command ask can be about a
// call whose command is call: either is unknown, or they are equal.
func sameCommand(ask, call string) bool {
	return ask == "" || call == "" || strings.TrimSpace(ask) == strings.TrimSpace(call)
}

// onlyOpen returns the single open call of the given kind, or nil when
// there is none or more than one.
func (s *session) onlyOpen(kind accum.Shell) *entry {
	var found *entry
	for _, e := range s.calls {
		if e.call.Ended() {
			continue
		}
		if kind == accum.ShellNo && !e.call.NotShell() || kind != accum.ShellNo && !e.call.IsShell() {
			continue
		}
		if found != nil {
			return nil
		}
		found = e
	}
	return found
}

// emit appends the call's next revision, if it is a shell call and changed.
func (ss *sessions) emit(s *session, e *entry, r *reply) {
	if !e.call.IsShell() {
		return
	}
	rev, ok := e.call.Revision()
	if !ok {
		return
	}
	if r.stream.needsWhole(s.id, rev.ToolCallID, rev.Number, rev.State == accum.Ended) {
		e.call.Whole(&rev)
	}
	r.out = append(r.out, &pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: s.toProto(&rev, r.seq)}})
	ss.m.execsOut.Inc()
}

// endOpen ends every open call of the session, in the order they opened.
func (ss *sessions) endOpen(s *session, cancelled bool, why string, r *reply) {
	open := make([]*entry, 0, len(s.calls))
	for _, e := range s.calls {
		if !e.call.Ended() {
			open = append(open, e)
		}
	}
	slices.SortFunc(open, func(a, b *entry) int { return int(a.order) - int(b.order) })
	now := ss.now()
	for _, e := range open {
		e.call.End(cancelled, why)
		e.endedAt = now
		ss.emit(s, e, r)
	}
}

// drop removes a locked session and all its calls.
func (ss *sessions) drop(s *session, reason string) {
	ss.mu.Lock()
	delete(ss.all, s.id)
	ss.mu.Unlock()
	s.gone = true
	n := len(s.calls)
	s.calls = map[string]*entry{}
	ss.forget(n, reason)
}

func (ss *sessions) forget(n int, reason string) {
	if n == 0 {
		return
	}
	ss.total.Add(int64(-n))
	ss.m.openCalls.Sub(float64(n))
	ss.m.evictions.WithLabelValues(reason).Add(float64(n))
}

// sweep evicts calls idle for longer than the TTL, ended calls past their
// grace period, and sessions idle and empty for longer than the TTL.
func (ss *sessions) sweep() {
	now := ss.now()
	ss.mu.Lock()
	list := make([]*session, 0, len(ss.all))
	for _, s := range ss.all {
		list = append(list, s)
	}
	ss.mu.Unlock()
	for _, s := range list {
		s.mu.Lock()
		var idle, ended int
		for id, e := range s.calls {
			switch {
			case e.call.Ended() && now.Sub(e.endedAt) > ss.cfg.Grace:
				ended++
			case !e.call.Ended() && now.Sub(e.touched) > ss.cfg.TTL:
				idle++
			default:
				continue
			}
			s.forgetCall(id)
		}
		ss.forget(idle, "ttl")
		ss.forget(ended, "grace")
		if len(s.calls) == 0 && now.Sub(s.touched) > ss.cfg.TTL && !s.gone {
			ss.drop(s, "ttl")
		}
		s.mu.Unlock()
	}
}

// forgetCall removes a call and everything that points at it.
func (s *session) forgetCall(id string) {
	delete(s.calls, id)
	for t, c := range s.terminals {
		if c == id {
			delete(s.terminals, t)
		}
	}
	for k, a := range s.asks {
		if a.callID == id {
			delete(s.asks, k)
		}
	}
}
