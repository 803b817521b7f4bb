package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TrailerRequestsApplied is the trailer that ends every Normalize stream
// the server ends: how many of the requests the client sent on the stream
// were applied, counted in the order sent. Each applied request was
// answered before the trailer. A client that sees the stream end (on
// shutdown, say) resends the requests after that count on a new stream.
const TrailerRequestsApplied = "acpnorm-requests-applied"

// errDraining ends streams when the server shuts down.
var errDraining = status.Error(codes.Unavailable, "acpnormd is shutting down; reconnect and resend the requests after the "+TrailerRequestsApplied+" trailer's count (session state is shared)")

// Normalize implements pb.NormalizerServiceServer. One goroutine reads
// requests off the wire (their frames are decoded on a few goroutines at
// once, see readAhead), the handler's goroutine applies them in order, and
// a third sends the responses, with a bounded queue between the last two:
// when a client reads slowly the queue fills, the loop stops applying and
// reading, and HTTP/2 flow control pushes back on the client instead of
// memory growing here. A client that reads nothing for SendTimeout is cut
// off. Every channel operation of the three can give up when the stream
// ends, so no stream outlives its client or a forced stop.
func (s *Service) Normalize(stream pb.NormalizerService_NormalizeServer) error {
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	ctx, counts := withStreamStats(ctx)
	s.sessions.m.openStreams.Inc()
	defer s.sessions.m.openStreams.Dec()

	if d := s.cfg.StreamIdleTimeout; d > 0 {
		idle := newIdleStream(stream, d, func() {
			s.sessions.m.streamRefused("stream_idle")
			cancel(errIdle(d))
		})
		defer idle.stop()
		stream = idle
	}
	out := make(chan outgoing, s.cfg.SendQueue)
	q := newSendBytes(s.cfg.SendQueueBytes, &s.sessions.m.queuedBytes)
	sent := make(chan struct{})
	stalled := make(chan struct{})
	go func() {
		defer close(sent)
		s.sendLoop(ctx, cancel, stalled, stream, out, q, counts)
	}()
	applied, marks, err := s.recvLoop(ctx, stream, out, q)
	defer counts.annotate(stream.Context(), applied)
	close(out)
	if err != nil && err != errDraining {
		cancel(err)
	}
	// Wait until what the applied requests produced is sent (on a normal
	// end or a drain), or the send loop stopped. A Send stuck on a client
	// that reads nothing ends when the send timeout fires, so this wait
	// is bounded.
	select {
	case <-sent:
	case <-stalled:
	}
	if ctx.Err() != nil && (err == nil || err == errDraining) {
		err = s.endCause(ctx)
	}
	// A request counts only once its answers were sent: those queued
	// when the stream was cut (a client that stopped reading) never
	// reached it, and the client sends their requests again.
	applied = marks.answered(applied, counts.responses())
	stream.SetTrailer(metadata.Pairs(TrailerRequestsApplied, strconv.FormatUint(applied, 10)))
	return err
}

// errStalled ends a stream whose client read nothing for SendTimeout.
type errStalled time.Duration

func (e errStalled) Error() string {
	return fmt.Sprintf("the client read no response for %v (the send timeout); the stream was ended so it holds no memory; reconnect to go on (session state is shared)", time.Duration(e))
}

// errIdle ends a stream that waited d for a request.
func errIdle(d time.Duration) error {
	return status.Errorf(codes.Unavailable, "no request for %v (the stream idle timeout); the stream was ended to free its slot; send again on a new stream (session state is shared)", d)
}

// idleStream times how long its reader waits for each request, and calls
// fire when one wait lasts d. Between requests (while one is being read
// ahead or applied, and while the reader waits for room: backpressure) no
// wait is timed: only a client's silence counts.
type idleStream struct {
	pb.NormalizerService_NormalizeServer
	clock *waitClock
}

func newIdleStream(stream pb.NormalizerService_NormalizeServer, d time.Duration, fire func()) *idleStream {
	return &idleStream{NormalizerService_NormalizeServer: stream, clock: newWaitClock(d, fire)}
}

// RecvMsg waits for a request, timed.
func (i *idleStream) RecvMsg(m any) error {
	i.clock.begin()
	err := i.NormalizerService_NormalizeServer.RecvMsg(m)
	i.clock.end()
	return err
}

func (i *idleStream) Recv() (*pb.NormalizeRequest, error) {
	m := new(pb.NormalizeRequest)
	if err := i.RecvMsg(m); err != nil {
		return nil, err
	}
	return m, nil
}

// stop stops the timer for good.
func (i *idleStream) stop() { i.clock.stop() }

// endCause is the status a stream whose context is done ends with.
func (s *Service) endCause(ctx context.Context) error {
	cause := context.Cause(ctx)
	var stalled errStalled
	switch {
	case errors.As(cause, &stalled):
		return status.Error(codes.ResourceExhausted, stalled.Error())
	case errors.Is(cause, context.Canceled), errors.Is(cause, context.DeadlineExceeded):
		return status.FromContextError(ctx.Err()).Err()
	}
	if st, ok := status.FromError(cause); ok {
		return st.Err()
	}
	return status.Error(codes.Unavailable, cause.Error())
}

// sendLoop sends the queued responses until the queue is closed and empty
// or the stream ends. A Send that does not finish within SendTimeout (the
// client stopped reading) ends the stream, as does a failed Send. It takes
// each response's bytes off q once Send returns, and those of the
// responses left on out when the stream ended.
func (s *Service) sendLoop(ctx context.Context, cancel context.CancelCauseFunc, stalled chan<- struct{}, stream pb.NormalizerService_NormalizeServer, out <-chan outgoing, q *sendBytes, counts *streamStats) {
	defer func() {
		for it := range out { // closed once the stream's loop returns
			q.sent(it.n)
		}
	}()
	stall := newWaitClock(s.cfg.SendTimeout, func() {
		s.sessions.m.streamRefused("send_stalled")
		cancel(errStalled(s.cfg.SendTimeout))
		close(stalled)
	})
	defer stall.stop()
	// msg is what SendMsg is given, one for the stream: gRPC encodes it
	// before SendMsg returns.
	msg := new(sized)
	for {
		// A response already queued is taken without the select (which
		// locks both channels), once the stream is seen not to have ended:
		// a load.
		var it outgoing
		var ok, got bool
		if ctx.Err() == nil {
			it, ok, got = tryReceive(out)
		}
		if !got {
			select {
			case it, ok = <-out:
			case <-ctx.Done():
				return
			}
		}
		if !ok {
			return
		}
		r := it.r
		*msg = it.sized()
		stall.begin()
		err := stream.SendMsg(msg)
		*msg = sized{}
		q.sent(it.n)
		if stall.end() && err == nil {
			return // the timer fired: the stream is being ended as stalled
		}
		if err != nil {
			cancel(err)
			return
		}
		counts.sent(r)
	}
}

// recvLoop applies requests in order and queues what they produce. It
// returns how many requests it applied, and nil when the client closed its
// side, errDraining on shutdown, or the error that ended the stream.
//
// On shutdown it applies the next request the reader queued, if any, and
// stops: requests still in flight are not applied, and the trailer's count
// tells the client which ones were.
func (s *Service) recvLoop(ctx context.Context, stream pb.NormalizerService_NormalizeServer, out chan<- outgoing, q *sendBytes) (uint64, *answered, error) {
	counts, _ := ctx.Value(streamStatsKey{}).(*streamStats)
	if counts == nil {
		counts = &streamStats{}
	}
	// The reader starts reading each frame (see readAhead) before it
	// queues the request, so frames of one stream are read in parallel
	// while the loop applies them in the order they came. It closes in
	// when it stops, after every request it read was queued.
	id := identityOf(stream.Context())
	ahead := newReadAhead(aheadWorkers(), id.namespace())
	in := make(chan pending, aheadDepth(aheadWorkers(), s.cfg.SendQueue))
	// The reader's error is set before readerDone and in close, and is
	// never dropped: it says why the stream ended (io.EOF: the client
	// closed its side, after every request was queued).
	readerDone := make(chan struct{})
	var readErr error
	go func() {
		defer close(readerDone)
		defer close(in)
		defer ahead.stop()
		var r received // one for the stream: RecvMsg's argument escapes
		var spare *pb.NormalizeRequest
		for {
			if spare == nil {
				spare = new(pb.NormalizeRequest)
			}
			r.NormalizeRequest, r.buf = spare, nil
			if err := stream.RecvMsg(&r); err != nil {
				readErr = err
				return
			}
			req := r.NormalizeRequest
			if req == spare {
				spare = nil // decoded there; a frame's request is made by the codec (see received)
			}
			if req.GetFrame() != nil {
				counts.frames.Add(1)
			}
			p, ok := ahead.start(ctx, req)
			if !ok {
				return
			}
			p.buf = r.buf
			if !trySend(in, p) {
				select {
				case in <- p:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	ended := func() error {
		switch {
		case readErr == nil: // the reader stopped because the stream ended
			return s.endCause(ctx)
		case errors.Is(readErr, io.EOF):
			return nil
		}
		return s.recvFailed(readErr)
	}
	var applied uint64
	// queued counts the responses put on out; marks ties the requests
	// counted to it (see answered).
	var queued uint64
	marks := &answered{}
	d := newDelivered()
	// queueFailed says the current request's answers could not all be
	// queued (the stream ended meanwhile).
	queueFailed := false
	rev := newRevocation(id, s.recheck)
	// A request's answers are queued while its session is locked. Those
	// the queue has no room for (in number or in bytes, see sendBytes)
	// wait in held (up to as many again, and as many bytes again) and are
	// queued by flush once the request is applied, with the lock
	// released: a client that stops reading then stalls its own stream,
	// not the other streams of its sessions. Only a request that answers
	// more than that waits with the lock held.
	var held []outgoing
	var heldBytes int64
	// queue queues a response counted by q.held, once the queue has room
	// for it; on failure it is dropped.
	queue := func(it outgoing) error {
		if err := q.wait(ctx, it.n); err != nil {
			q.dropped(it.n)
			queueFailed = true
			return err
		}
		q.queued(it.n)
		select {
		case out <- it:
			queued++
			return nil
		case <-ctx.Done():
			q.sent(it.n)
			queueFailed = true
			return ctx.Err()
		}
	}
	flush := func() error {
		var err error
		for i, it := range held {
			if err = queue(it); err != nil {
				for _, rest := range held[i+1:] {
					q.dropped(rest.n)
				}
				break
			}
		}
		clear(held)
		held, heldBytes = held[:0], 0
		return err
	}
	var feed *feeder
	feed = s.sessions.newFeeder(ctx, d, func(r *pb.NormalizeResponse) error {
		it := toSendMade(r, feed.madeHere(r))
		q.held(it.n)
		if len(held) == 0 && q.fits(it.n) {
			q.queued(it.n)
			if trySend(out, it) {
				queued++
				return nil
			}
			q.queued(-it.n)
		}
		if len(held) == 0 || (len(held) < cap(out) && heldBytes+it.n <= q.max) {
			held = append(held, it)
			heldBytes += it.n
			return nil
		}
		if err := flush(); err != nil {
			q.dropped(it.n)
			return err
		}
		return queue(it)
	})
	feed.n, feed.ns = s.sessions.n.Namespace(id.namespace()), id.namespace()
	// count counts n requests applied, in the order sent: the count stops
	// at the first request answered as not applied (UNAVAILABLE,
	// DATA_LOSS), so that a client that sends again what comes after the
	// trailer's count sends that one again.
	frozen := false
	count := func(ok bool, n int) {
		if feed.notApplied {
			frozen = true
		}
		if ok && !frozen {
			applied += uint64(n)
		}
		marks.add(applied, queued, counts.responses())
	}
	// apply applies one request and queues what it produces. A request
	// whose answers could not all be queued (the stream ended meanwhile)
	// still counts as applied: its changes are in the shared state. The
	// trailer counts it only if its answers were sent (see answered): the
	// client sends it again, and what it missed comes again (an ENDED
	// revision, see normalize.WithSkipApplied) or whole with the call's
	// next revision. One the session lock was never taken for does not.
	apply := func(p pending) error {
		req := p.req
		read, ok := p.wait(ctx)
		if !ok {
			return errStopped
		}
		if refusal := codecRefusal(req, s.sessions.maxID, maxClaim(s.cfg.MaxCallsPerSession)); refusal != nil {
			s.sessions.m.frameError(codes.InvalidArgument)
			it := toSend(refusal)
			q.held(it.n)
			if queue(it) != nil {
				return s.endCause(ctx)
			}
			count(true, 1)
			return nil
		}
		queueFailed = false
		next, err := feed.handle(req, read)
		if ferr := flush(); err == nil {
			err = ferr
		}
		count(err == nil || queueFailed, 1)
		ahead.learn(req, next)
		p.release()
		if err != nil {
			if ctx.Err() != nil {
				return s.endCause(ctx)
			}
			return status.FromContextError(err).Err()
		}
		return nil
	}
	// stopped is the error the stream ends with when ctx is done.
	stopped := func() error {
		// gRPC ends a stream whose message it cannot read (too large,
		// not valid protobuf) before Recv returns that error: prefer
		// the error to the bare cancel when the reader has it. The
		// reader returns at once then, as the stream is over.
		if stream.Context().Err() != nil {
			wait := time.NewTimer(time.Second)
			defer wait.Stop()
			select {
			case <-readerDone:
				if readErr != nil && !errors.Is(readErr, io.EOF) && status.Code(readErr) != codes.Canceled {
					return s.recvFailed(readErr)
				}
			case <-wait.C:
			}
		}
		return s.endCause(ctx)
	}
	// With a shared store, frames of one session that the reader has
	// already queued are applied as one batch: one commit to the store
	// instead of one per frame. gather takes, after first, the queued
	// requests that are frames of the same session, up to maxBatch in all;
	// rest is a request it took that is not (it is applied next), when
	// more says there is one.
	batching := s.cfg.Store != nil
	var batch []pending
	var reads []*normalize.Prepared
	gather := func(first pending) (rest pending, more bool) {
		batch = append(batch[:0], first)
		if !batching || !batchable(first.req) {
			return pending{}, false
		}
		for len(batch) < maxBatch {
			select {
			case p, ok := <-in:
				if !ok {
					return pending{}, false // the loop sees in closed next
				}
				if !batchable(p.req) || p.req.GetFrame().GetSessionId() != first.req.GetFrame().GetSessionId() {
					return p, true
				}
				batch = append(batch, p)
			default:
				return pending{}, false
			}
		}
		return pending{}, false
	}
	// applyBatch applies what gather took, as apply applies one request.
	applyBatch := func() error {
		if len(batch) == 1 {
			return apply(batch[0])
		}
		reads = reads[:0]
		for _, p := range batch {
			read, ok := p.wait(ctx)
			if !ok {
				return errStopped
			}
			reads = append(reads, read)
		}
		queueFailed = false
		reqs := make([]*pb.NormalizeRequest, len(batch))
		for i, p := range batch {
			reqs[i] = p.req
		}
		next, err := feed.handleBatch(reqs, reads)
		if ferr := flush(); err == nil {
			err = ferr
		}
		clear(reads)
		count(err == nil || queueFailed, len(batch))
		ahead.learn(batch[len(batch)-1].req, next)
		for _, p := range batch {
			p.release()
		}
		if err != nil {
			if ctx.Err() != nil {
				return s.endCause(ctx)
			}
			return status.FromContextError(err).Err()
		}
		return nil
	}
	run := func(p pending) error {
		if err := rev.revoked(); err != nil {
			s.sessions.m.streamRefused("revoked")
			return err
		}
		for more := true; more; {
			var rest pending
			rest, more = gather(p)
			err := applyBatch()
			clear(batch)
			if err == errStopped {
				return stopped()
			}
			if err != nil {
				return err
			}
			p = rest
		}
		return nil
	}
	for {
		// A request already queued is taken without the three-way select
		// (which locks all three channels), once the two that end the
		// loop are seen not to: each look is a load, and the loop sees
		// them before every request, where the select chose at random
		// among those ready.
		if ctx.Err() == nil && !closed(s.draining) {
			if p, ok, got := tryReceive(in); got {
				if !ok {
					return applied, marks, ended()
				}
				if err := run(p); err != nil {
					return applied, marks, err
				}
				continue
			}
		}
		select {
		case p, ok := <-in:
			if !ok {
				return applied, marks, ended()
			}
			if err := run(p); err != nil {
				return applied, marks, err
			}
		case <-ctx.Done():
			return applied, marks, stopped()
		case <-s.draining:
			select {
			case p, ok := <-in:
				if ok {
					if err := run(p); err != nil {
						return applied, marks, err
					}
				}
			default:
			}
			s.log.Info("stream drained for shutdown", "applied", applied)
			return applied, marks, errDraining
		}
	}
}

// trySend sends v on ch when that does not block, and says whether it
// did. A send that must wait is then made in a select that can also give
// up; this one, a single case with a default, takes one channel's lock
// where the select takes both (and orders them first).
func trySend[T any](ch chan<- T, v T) bool {
	select {
	case ch <- v:
		return true
	default:
		return false
	}
}

// tryReceive receives from ch when that does not block: got says it did,
// ok as a receive's second value.
func tryReceive[T any](ch <-chan T) (v T, ok, got bool) {
	select {
	case v, ok = <-ch:
		return v, ok, true
	default:
		return v, false, false
	}
}

// closed says whether ch, which is only ever closed, is; it never blocks.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// maxBatch bounds the frames of one session a stream applies together
// (with a shared store; see recvLoop).
const maxBatch = 8

// batchable says whether req is a frame that may be applied in a batch.
func batchable(req *pb.NormalizeRequest) bool {
	f := req.GetFrame()
	return f != nil && f.GetSessionId() != "" && !codecMarked(req) && len(f.GetHeldRevisions()) == 0 && f.GetHeldSequence() == 0
}

// errStopped says a request was not applied because the stream ended
// while its frame was still being read.
var errStopped = errors.New("stream ended before the request was read")

// recvFailed logs and counts a request gRPC could not read, and returns
// the status it ended the stream with.
func (s *Service) recvFailed(err error) error {
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.ResourceExhausted:
		s.sessions.m.streamRefused("message_too_large")
	case codes.Internal, codes.InvalidArgument:
		s.sessions.m.streamRefused("unreadable_message")
	}
	return st.Err()
}

// answered ties the requests a stream counted as applied to the responses
// it had queued by then, for the requests still waiting for the send loop:
// a mark says that once queued responses are sent, applied requests are
// answered. It holds the marks whose responses may not be sent yet (the
// queue, the answers waiting outside a session's lock, the one being
// sent), so it stays small.
type answered struct {
	m []answeredMark
}

type answeredMark struct{ applied, queued uint64 }

// add records that applied requests were answered once queued responses
// are sent; sent is how many were sent so far.
func (a *answered) add(applied, queued, sent uint64) {
	if n := len(a.m); n > 0 && a.m[n-1].queued == queued {
		a.m[n-1].applied = applied // no response since: the same mark
	} else {
		a.m = append(a.m, answeredMark{applied, queued})
	}
	drop := 0
	for drop+1 < len(a.m) && a.m[drop+1].queued <= sent {
		drop++ // a later mark is answered too
	}
	a.m = a.m[drop:]
}

// answered returns how many of the applied requests were answered, when
// sent responses reached the client: the requests of the last mark whose
// responses were all sent (all of them when nothing is left unsent).
func (a *answered) answered(applied, sent uint64) uint64 {
	n := uint64(0)
	for _, m := range a.m {
		if m.queued > sent {
			return min(n, applied)
		}
		n = m.applied
	}
	return applied
}
