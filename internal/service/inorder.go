package service

import (
	"fmt"
	"slices"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
	"google.golang.org/grpc/codes"
)

// A stream whose client numbers its requests (skip_applied_sequences)
// applies each session's requests in order: once one of them is refused
// (UNAVAILABLE: not applied, or with an outcome the store does not know;
// DATA_LOSS), the requests of that session the client sent after it on
// the stream, before it could read that answer, are not applied either,
// and are answered with the same code.
// Applying them would put them into a session that misses the refused one
// (or, after DATA_LOSS, into the older state the store went back to), and
// their sequences would then make the server skip the refused request,
// and after DATA_LOSS the whole rebuild, as already applied. A request of
// the session at or below the refused sequence (the client sending again
// from there) lifts the refusal.

// A stream remembers the refusals of at most maxRefused sessions: a
// client that has more sessions refused at once and sends none of them
// again (a hostile one) makes the stream forget the oldest first. The
// client has read that answer long since, in all likelihood, and would
// send again from it; if it did not, the requests it sends of that
// session are applied as on a stream without sequences.
const maxRefused = 4096

// limitRefusedSessions is the limit label of acpnorm_limit_refusals_total
// counting a refusal a stream forgot (past maxRefused sessions).
const limitRefusedSessions = "stream_refused_sessions"

// refusal is the first request of a session a stream did not apply.
type refusal struct {
	seq  uint64
	code normalize.Code
	nth  uint64 // the stream's count of refusals when it was made
}

// refusedAt is an entry of feeder.refusedOrder.
type refusedAt struct {
	session string
	nth     uint64
}

// current says whether the entry is still the session's refusal (not
// lifted, nor replaced by a later one).
func (f *feeder) current(e refusedAt) bool {
	r, ok := f.refused[e.session]
	return ok && r.nth == e.nth
}

// refuse records that request seq of the session was not applied.
func (f *feeder) refuse(session string, seq uint64, code normalize.Code) {
	if !f.d.wantsSkipApplied() || seq == 0 {
		return
	}
	if _, ok := f.refused[session]; ok {
		return
	}
	if f.refused == nil {
		f.refused = map[string]refusal{}
	}
	for len(f.refused) >= maxRefused && len(f.refusedOrder) > 0 {
		if e := f.refusedOrder[0]; f.current(e) {
			delete(f.refused, e.session)
			f.ss.m.refusedIn(f.ss.m.label(f.ns), limitRefusedSessions)
		}
		f.refusedOrder = f.refusedOrder[1:]
	}
	f.refusals++
	f.refused[session] = refusal{seq, code, f.refusals}
	f.refusedOrder = append(f.refusedOrder, refusedAt{session, f.refusals})
	if len(f.refusedOrder) > 2*maxRefused { // lifted ones linger in the order
		f.refusedOrder = slices.DeleteFunc(f.refusedOrder, func(e refusedAt) bool { return !f.current(e) })
	}
}

// behindRefusal answers a request that comes after a refused one of its
// session, and reports whether it did (then it is not applied).
func (f *feeder) behindRefusal(req *pb.NormalizeRequest) (bool, error) {
	if len(f.refused) == 0 {
		return false, nil
	}
	session, seq := requestSession(req)
	r, ok := f.refused[session]
	if !ok {
		return false, nil
	}
	if seq != 0 && seq <= r.seq {
		delete(f.refused, session)
		return false, nil
	}
	f.notApplied = true
	f.ss.m.frameError(codes.Code(r.code))
	return true, f.emit(frameErrorResponse(&normalize.FrameError{SessionID: session, Sequence: seq, Code: r.code,
		Message: fmt.Sprintf("request %d of session %q was not applied: request %d of the session before it on this stream was refused (%s); send again from %d", seq, session, r.seq, codes.Code(r.code), r.seq)}))
}

// requestSession is the session and sequence of a frame, TurnEnded or
// SessionClosed ("" for another request).
func requestSession(req *pb.NormalizeRequest) (string, uint64) {
	switch k := req.GetKind().(type) {
	case *pb.NormalizeRequest_Frame:
		return k.Frame.GetSessionId(), k.Frame.GetSequence()
	case *pb.NormalizeRequest_TurnEnded:
		return k.TurnEnded.GetSessionId(), k.TurnEnded.GetSequence()
	case *pb.NormalizeRequest_SessionClosed:
		return k.SessionClosed.GetSessionId(), k.SessionClosed.GetSequence()
	}
	return "", 0
}
