package proxy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	acpclient "github.com/acpnorm/acpnorm/client"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// DefaultBufferBytes bounds the bytes of frames sent to a remote acpnormd
// (Recorder.Remote) that no acpnormd has answered yet.
const DefaultBufferBytes = 64 << 20

// remote sends each ACP session's frames through a client.Session of
// Recorder.Remote, which reconnects, sends again what had no answer and
// rebuilds a session its server lost. Send only queues, so the consumer
// never waits for the server either; what waits for an answer is bounded
// by Recorder.BufferBytes, past which frames are dropped (counted).
type remote struct {
	r     *Recorder
	bound int64

	sessions map[string]*remoteSession // by acpnorm session id; the consumer's only
	order    []*remoteSession

	unanswered int64 // bytes sent and not answered, as last counted plus what was sent since

	outMu sync.Mutex // the record is written by every session's callbacks
	ended bool       // finish returned: Out may be closed (outMu held)
}

// remoteSession is one ACP session on the remote acpnormd.
type remoteSession struct {
	s *acpclient.Session

	mu sync.Mutex
	// off is how many of the session's first requests lines and sum no
	// longer hold (trim): the n-th request (s.FirstSequence()+n-1) is on
	// wire line lines[n-off-1], and sum[i] is the bytes of the requests
	// after the off-th up to the (off+i)-th (sum[0] is 0).
	off   int
	lines []uint64
	sum   []int64
	high  int // the most requests ever answered (a rebuild counts from 0 again)

	flushing atomic.Bool // a Flush asks the server what it applied
}

func (r *Recorder) openRemote() *remote {
	bound := r.BufferBytes
	if bound <= 0 {
		bound = DefaultBufferBytes
	}
	return &remote{r: r, bound: bound, sessions: map[string]*remoteSession{}}
}

// session returns the Session of an acpnorm session id, started on first use.
func (rm *remote) session(id string) *remoteSession {
	if rs := rm.sessions[id]; rs != nil {
		return rs
	}
	rs := &remoteSession{sum: []int64{0}}
	rs.s = rm.r.Remote.Session(id, acpclient.Dialect(rm.r.Dialect),
		acpclient.OnRevision(func(x *pb.ShellExec) { rm.revision(rs, x) }),
		acpclient.OnFrameError(func(fe *pb.FrameError) { rm.r.frameError(rs.line(fe.GetSequence()), fe) }))
	rm.sessions[id] = rs
	rm.order = append(rm.order, rs)
	return rs
}

// line is the wire line of a request of the session.
func (rs *remoteSession) line(seq uint64) uint64 {
	first := rs.s.FirstSequence()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if n := seq - first + 1; seq >= first && n > uint64(rs.off) && n <= uint64(rs.off+len(rs.lines)) {
		return rs.lines[n-uint64(rs.off)-1]
	}
	return seq
}

// pending is the bytes of the session's requests not answered yet, counted
// from the most ever answered: a session being rebuilt after a loss holds
// nothing more than before it.
func (rs *remoteSession) pending() int64 {
	answered := rs.s.Answered()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.high = max(rs.high, min(answered, rs.off+len(rs.lines)))
	return rs.sum[len(rs.lines)] - rs.sum[rs.high-rs.off]
}

// trimEvery is how many requests of a session send queues between two
// looks at what its Session dropped.
const trimEvery = 4096

// trim lets go of the wire lines of the first dropped requests of the
// session, those its Session no longer keeps (it drops the oldest answered
// ones past its bound, client.WithSessionLimits): they are never sent
// again, so no answer names them. Without it a long session would hold 16
// bytes per frame for as long as it lasts. It copies what it keeps only
// once that is at most half, so each request is copied about once.
func (rs *remoteSession) trim(dropped int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	k := min(dropped, rs.high) - rs.off
	if k <= 0 || 2*k < len(rs.lines) {
		return
	}
	base := rs.sum[k]
	rs.lines = append([]uint64(nil), rs.lines[k:]...)
	sum := make([]int64, len(rs.sum)-k)
	for i := range sum {
		sum[i] = rs.sum[k+i] - base
	}
	rs.sum = sum
	rs.off += k
}

// send queues one frame of the session; a frame past the bound, or one the
// Session refuses, is counted as dropped or unsent.
func (rm *remote) send(x routed) {
	r := rm.r
	n := int64(len(x.msg))
	if rm.unanswered+n > rm.bound/2 {
		// A frame counts as answered once a later one made a revision,
		// or its stream ended: past half the bound, end the streams, so
		// that the server says what it applied, before frames that make
		// nothing (an agent's messages) look unanswered.
		rm.recount()
		if rm.unanswered+n > rm.bound/2 {
			rm.flush()
		}
		if rm.unanswered+n > rm.bound {
			r.dropped.Add(1)
			r.droppedBytes.Add(n)
			r.firstDropped.CompareAndSwap(0, x.seq)
			r.lastDropped.Store(x.seq)
			r.dropOnce.Do(func() {
				r.say("%s has not answered %d bytes of frames, and a frame of %d more (wire line %d) would pass --buffer-bytes %d: frames are dropped from normalization until it answers, never from the relay (counted; the total and the lines are printed at exit)",
					r.Service, rm.unanswered, n, x.seq, rm.bound)
			})
			return
		}
	}
	rs := rm.session(x.session)
	rs.mu.Lock()
	rs.lines = append(rs.lines, x.seq)
	rs.sum = append(rs.sum, rs.sum[len(rs.sum)-1]+n)
	queued := rs.off + len(rs.lines) // requests of the session, this one too
	rs.mu.Unlock()
	// The Session keeps its own copy of what it sends: the message's
	// buffer goes back to the pool once the frame is handled.
	msg := append([]byte(nil), x.msg...)
	if err := rs.s.Send(context.Background(), x.dir, msg); err != nil {
		rs.mu.Lock()
		rs.lines = rs.lines[:len(rs.lines)-1]
		rs.sum = rs.sum[:len(rs.sum)-1]
		rs.mu.Unlock()
		r.unsent.Add(1)
		rm.failed(err)
		return
	}
	rm.unanswered += n
	if queued%trimEvery == 0 {
		rs.trim(rs.s.Stats().Dropped)
	}
}

// recount counts exactly what waits for an answer.
func (rm *remote) recount() {
	rm.unanswered = 0
	for _, rs := range rm.order {
		rm.unanswered += rs.pending()
	}
}

// flush asks each session with frames unanswered to end its stream once
// all is sent, for the server's count of what it applied; one Flush at a
// time per session, in the background (it waits while no server answers,
// until the session is closed).
func (rm *remote) flush() {
	for _, rs := range rm.order {
		if rs.pending() == 0 || !rs.flushing.CompareAndSwap(false, true) {
			continue
		}
		go func() {
			defer rs.flushing.Store(false)
			_ = rs.s.Flush(context.Background())
		}()
	}
}

// failed says once why a frame was not taken.
func (rm *remote) failed(err error) {
	r := rm.r
	if errors.Is(err, acpclient.ErrSessionFull) {
		r.fullOnce.Do(func() {
			r.say("%v; a frame refused so is not normalized (counted), the relay goes on", err)
		})
		return
	}
	r.downOnce.Do(func() {
		msg := err.Error()
		if s, ok := status.FromError(err); ok {
			msg = s.Code().String() + ": " + s.Message()
		}
		r.say("normalization stopped: %s: %s; the relay goes on, later frames are not normalized (counted)", r.Service, msg)
	})
}

// finish closes every session (SessionClosed at one past the last wire
// line, as replay does at the end of a recording) and waits, until ctx
// ends, for every answer.
func (rm *remote) finish(ctx context.Context, lastLine uint64) {
	r := rm.r
	var wg sync.WaitGroup
	for _, rs := range rm.order {
		rs.mu.Lock()
		rs.lines = append(rs.lines, lastLine+1)
		rs.sum = append(rs.sum, rs.sum[len(rs.sum)-1])
		rs.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := rs.s.Close(ctx)
			if err == nil {
				return
			}
			if cause := context.Cause(ctx); cause != nil {
				r.downOnce.Do(func() {
					r.say("normalization was cut short: %v; what %s had not answered is not in the record", cause, r.Service)
				})
				return
			}
			rm.failed(err)
		}()
	}
	wg.Wait()
	// A Session that gave up may still hand on a revision: the record
	// ends here, before the caller closes Out.
	rm.outMu.Lock()
	rm.ended = true
	rm.outMu.Unlock()
	for _, rs := range rm.order {
		st := rs.s.Stats()
		r.reconnects.Add(int64(st.Reconnects))
		r.resent.Add(int64(st.Resent))
		r.losses.Add(int64(st.Losses))
	}
}

// revision writes one revision the Session folded in (once, in order) to
// the record, numbered by its wire line.
func (rm *remote) revision(rs *remoteSession, x *pb.ShellExec) {
	r := rm.r
	r.revisions.Add(1)
	if r.Out == nil {
		return
	}
	if !r.AllRevisions {
		if x.GetState() != pb.ShellState_SHELL_STATE_ENDED {
			return
		}
		if last := rs.s.Call(x.GetToolCallId()); last != nil {
			x = last
		}
	}
	x = proto.Clone(x).(*pb.ShellExec)
	x.Sequence = rs.line(x.GetSequence())
	b, err := protojson.Marshal(x)
	rm.outMu.Lock()
	defer rm.outMu.Unlock()
	if rm.ended {
		return
	}
	if err == nil {
		_, err = r.Out.Write(append(b, '\n'))
	}
	if err != nil {
		r.outOnce.Do(func() { r.say("writing the record: %v (the relay goes on)", err) })
		return
	}
	r.written.Add(1)
}

// frameError counts a FrameError the service answered, and says the first.
func (r *Recorder) frameError(line uint64, fe *pb.FrameError) {
	r.frameErrors.Add(1)
	r.frameErrOnce.Do(func() {
		r.say("frame error at frame %d: code %d: %s (later frame errors are counted)", line, fe.GetCode(), fe.GetMessage())
	})
}
