package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/acpnorm/acpnorm/fold"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// trailerApplied is the trailer in which acpnormd says how many requests
// of a stream it applied (docs/contract.md).
const trailerApplied = "acpnorm-requests-applied"

// Session streams the requests of one ACP session to acpnormd and folds
// what comes back. Its methods are safe for concurrent use; the callbacks
// given by SessionOptions run on one goroutine of the Session, in the
// order the server answered, and must not block for long.
type Session struct {
	c       *Client
	id      string
	dialect string
	cwd     string
	onRev   func(*pb.ShellExec)
	onErr   func(*pb.FrameError)

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // the run goroutine ended
	wake   chan struct{} // a request was queued, or a flush asked (capacity 1)

	mu sync.Mutex
	// The session's requests are numbered from 0: the i-th has sequence
	// base+i+1 (see FirstSequence). The first dropped of them were
	// answered and are no longer kept (see makeRoom); reqs holds the rest,
	// reqs[0] being the dropped-th (Stats().Dropped). confirmed, highSent,
	// lossAt and the indexes a stream uses count every request, dropped or
	// kept.
	base      uint64
	dropped   int
	reqs      []*pb.NormalizeRequest
	bytes     int  // of the messages of reqs
	confirmed int  // the requests before the confirmed-th are answered (see answer)
	closing   bool // SessionClosed is queued; Send is refused
	released  bool // closed and answered: reqs were dropped
	flushing  bool // a waiter wants reqs answered: end the stream once all is sent
	// unanswered is the bytes of the messages of the requests from the
	// confirmed-th, kept in step with confirmed by answer, so that
	// halfUnanswered, asked on every Send, need not add them up.
	unanswered int
	// cycle ends the stream once all is sent, as flushing does, so that
	// its trailer answers requests that made no revision (set when half
	// the bound is unanswered, see queue).
	cycle    bool
	changed  chan struct{} // closed and replaced when confirmed or err change
	err      error         // the Session gave up
	folder   fold.Folder
	seenErrs map[errKey]bool
	errs     []*pb.FrameError
	stats    Stats
	highSent int   // the most requests ever sent, to count those sent again
	lastErr  error // why the last stream failed
	rebuilds int   // DATA_LOSS answers since the session last got past lossAt
	lossAt   int   // confirmed when the last DATA_LOSS came
}

// Stats counts what a Session went through.
type Stats struct {
	// Streams is how many streams were opened, Reconnects how many of
	// them followed one that broke (or failed to open).
	Streams, Reconnects int
	// Resent counts requests sent again on a new stream.
	Resent int
	// NotApplied counts requests refused with UNAVAILABLE (not applied, or
	// with an outcome the store did not know).
	NotApplied int
	// Losses counts DATA_LOSS answers, each followed by a rebuild of the
	// session from its first request, or, once Dropped is above 0, by the
	// Session giving up (ErrCannotRebuild).
	Losses int
	// Duplicates counts revisions received again and folded once.
	Duplicates int
	// Dropped counts the requests no longer kept: answered ones, dropped
	// oldest first so that a new request fits within WithSessionLimits.
	// Once it is above 0 the session can no longer be rebuilt from its
	// first request after a loss.
	Dropped int
}

type errKey struct {
	seq        uint64
	code       int32
	toolCallID string
	message    string
}

// SessionOption configures a Session.
type SessionOption func(*Session)

// Dialect names the dialect of the session's frames ("auto" by default).
func Dialect(name string) SessionOption { return func(s *Session) { s.dialect = name } }

// Cwd gives the session's working directory, for a recording that lacks
// session/new.
func Cwd(dir string) SessionOption { return func(s *Session) { s.cwd = dir } }

// OnRevision is called with each revision folded in, in order: a revision
// received again (after a reconnect) is not given twice. Session.Call
// returns the call's state with it folded in.
func OnRevision(f func(revision *pb.ShellExec)) SessionOption {
	return func(s *Session) { s.onRev = f }
}

// OnFrameError is called with each FrameError the server answered about
// a request of the session (once, even when the request was sent again).
// Those the Session handles itself (ALREADY_EXISTS for a request sent
// again, UNAVAILABLE, DATA_LOSS) are not given.
func OnFrameError(f func(*pb.FrameError)) SessionOption {
	return func(s *Session) { s.onErr = f }
}

// Session starts a session with this id. Nothing is sent until Send.
func (c *Client) Session(id string, opts ...SessionOption) *Session {
	s := &Session{c: c, id: id, dialect: "auto", done: make(chan struct{}), wake: make(chan struct{}, 1),
		changed: make(chan struct{}), seenErrs: map[errKey]bool{}, base: firstSequence()}
	for _, o := range opts {
		o(s)
	}
	s.ctx, s.cancel = context.WithCancel(c.ctx)
	if err := s.invalid(); err != nil {
		// Every request would carry it, and gRPC refuses to marshal
		// a string that is not UTF-8 on every stream: say so at once.
		s.err = err
		s.cancel()
		close(s.done)
		return s
	}
	go s.run()
	return s
}

// invalid says which of the fields every request carries is not valid
// UTF-8, as a protobuf string must be (a Linux path may be any bytes).
func (s *Session) invalid() error {
	for _, f := range []struct{ what, v string }{{"session id", s.id}, {"dialect", s.dialect}, {"working directory", s.cwd}} {
		if !utf8.ValidString(f.v) {
			return fmt.Errorf("%w: the %s %q is not valid UTF-8, so no request of it can be sent", ErrInvalid, f.what, f.v)
		}
	}
	return nil
}

// Send queues one JSON-RPC message of the session (dir says which way it
// went; DIRECTION_UNSPECIFIED when unknown) and returns: it is sent, and
// sent again until answered, in the background. The Session keeps msg
// until it is closed or msg is dropped (see WithSessionLimits): do not
// change it. Send fails when the Session gave up, was closed, or holds
// its bound of requests not answered yet (ErrSessionFull).
func (s *Session) Send(ctx context.Context, dir pb.Direction, msg []byte) error {
	return s.queue(ctx, len(msg), func(seq uint64) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
			SessionId: s.id, Dialect: s.dialect, Cwd: s.cwd, Sequence: seq, Direction: dir, Message: msg}}}
	}, false)
}

// TurnEnded says the prompt turn ended (cancelled: after session/cancel),
// for agents whose turn end the session's frames do not show.
func (s *Session) TurnEnded(ctx context.Context, cancelled bool) error {
	return s.queue(ctx, 0, func(seq uint64) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{
			SessionId: s.id, Cancelled: cancelled, Sequence: seq}}}
	}, false)
}

// Close sends SessionClosed, waits until every request was answered, and
// releases what the Session kept to rebuild. It returns the error the
// Session gave up with, if it did, or ctx's when ctx ended first (the
// Session then gives up). Calls and FrameErrors stay readable.
func (s *Session) Close(ctx context.Context) error {
	err := s.queue(ctx, 0, func(seq uint64) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{
			SessionId: s.id, Sequence: seq}}}
	}, true)
	if err != nil && !errors.Is(err, ErrClosed) {
		return err
	}
	return s.Flush(ctx)
}

// Flush waits until every request queued so far was answered, or the
// Session gave up, or ctx ends (then the Session gives up: use a ctx
// that ends only when waiting is pointless).
func (s *Session) Flush(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.err != nil {
			err := s.err
			if s.released {
				err = nil // closed, every request answered
			}
			s.mu.Unlock()
			return err
		}
		if s.confirmed == s.total() {
			if s.closing {
				s.release()
			}
			s.mu.Unlock()
			return nil
		}
		s.flushing = true
		ch := s.changed
		s.mu.Unlock()
		s.poke()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			last := s.lastErr
			s.mu.Unlock()
			err := fmt.Errorf("acpnorm client: session %q: waiting for answers: %w", s.id, ctx.Err())
			if last != nil {
				err = fmt.Errorf("%w (the last stream: %v)", err, last)
			}
			s.giveUp(err)
			return err
		}
	}
}

// release drops the requests kept to rebuild a closed session (s.mu held).
func (s *Session) release() {
	if !s.released {
		// dropped stays what Stats().Dropped says; what release lets go
		// is not counted there.
		s.reqs, s.confirmed, s.bytes, s.unanswered = nil, 0, 0, 0
		s.released = true
		s.err = ErrClosed
		s.cancel()
	}
}

// Calls returns the folded state of every call of the session, in the
// order each was first seen. The messages are shared: read them only.
func (s *Session) Calls() []*pb.ShellExec {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*pb.ShellExec
	for _, k := range s.folder.Calls() {
		out = append(out, s.folder.State(k))
	}
	return out
}

// Call returns the folded state of one call, or nil when none of its
// revisions arrived. The message is shared: read it only.
func (s *Session) Call(toolCallID string) *pb.ShellExec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.folder.State(fold.Key{SessionID: s.id, ToolCallID: toolCallID})
}

// FrameErrors returns the FrameErrors OnFrameError was given, in order.
func (s *Session) FrameErrors() []*pb.FrameError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*pb.FrameError(nil), s.errs...)
}

// Stats returns what the Session went through so far.
func (s *Session) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Dropped = s.dropped
	return st
}

// Answered returns how many of the session's requests were answered so
// far: every request before the first one still waiting for an answer. It
// goes back to 0 while the session is rebuilt after a loss (DATA_LOSS),
// and after Close released the requests.
func (s *Session) Answered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confirmed
}

// Err returns the error the Session gave up with, or nil.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(s.err, ErrClosed) {
		return nil
	}
	return s.err
}

func (s *Session) queue(ctx context.Context, size int, make func(seq uint64) *pb.NormalizeRequest, last bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	switch {
	case s.err != nil:
		err := s.err
		s.mu.Unlock()
		return err
	case s.closing:
		s.mu.Unlock()
		return fmt.Errorf("%w: session %q was closed", ErrClosed, s.id)
	case !last && !s.makeRoom(size):
		// The closing request is never refused: it releases the rest.
		// The stream ends once all is sent (cycle), so that its trailer
		// answers what made no revision, and the caller's next try fits.
		// The unanswered requests are what fill the bound (answered ones
		// would have been dropped): name them, not every request kept.
		n, b := s.total()-s.confirmed, s.unanswered
		s.cycle = true
		s.mu.Unlock()
		s.poke()
		return fmt.Errorf("%w: session %q has %d requests not answered yet (%d bytes of messages), and with this one of %d bytes they would pass the bound of %d requests, %d bytes (client.WithSessionLimits); try again once answers come, or raise the bound",
			ErrSessionFull, s.id, n, b, size, s.c.cfg.maxFrames, s.c.cfg.maxBytes)
	}
	s.reqs = append(s.reqs, make(s.base+uint64(s.total()+1)))
	s.bytes += size
	s.unanswered += size
	s.closing = last
	if !s.cycle && s.halfUnanswered() {
		s.cycle = true
	}
	s.mu.Unlock()
	s.poke()
	return nil
}

// total is how many requests the session has, dropped or kept (s.mu held).
func (s *Session) total() int { return s.dropped + len(s.reqs) }

// req is the session's i-th request, from 0 (s.mu held; i >= s.dropped).
func (s *Session) req(i int) *pb.NormalizeRequest { return s.reqs[i-s.dropped] }

// msgSize is what a request counts in the byte bound.
func msgSize(r *pb.NormalizeRequest) int { return len(r.GetFrame().GetMessage()) }

// makeRoom makes a request of size bytes fit within the bound, dropping
// the oldest answered requests (s.mu held). A long session would
// otherwise end at its bound however healthy; what is dropped cannot be
// sent again, so a later loss (DATA_LOSS) cannot be rebuilt (see
// ErrCannotRebuild). It reports false, and drops nothing, when the
// requests not answered yet leave no room: that is backpressure.
func (s *Session) makeRoom(size int) bool {
	n, b := len(s.reqs), s.bytes
	k := 0
	for n-k >= s.c.cfg.maxFrames || b+size > s.c.cfg.maxBytes {
		if s.dropped+k >= s.confirmed {
			return false
		}
		b -= msgSize(s.reqs[k])
		k++
	}
	if k > 0 {
		clear(s.reqs[:k]) // the messages can go now
		s.reqs, s.bytes = s.reqs[k:], b
		s.dropped += k
	}
	return true
}

// halfUnanswered says whether the requests not answered yet take half the
// bound, of requests or of bytes (s.mu held). A stream answers a request
// when a later one made a revision, or in its trailer: frames that make
// no revision (an agent streaming message chunks) are answered only when
// the stream ends, so the Session ends it then (cycle), and what it
// answers can be dropped.
func (s *Session) halfUnanswered() bool {
	return 2*(s.total()-s.confirmed) >= s.c.cfg.maxFrames || 2*s.unanswered >= s.c.cfg.maxBytes
}

// answer sets confirmed to n, the requests before the n-th being answered
// (s.mu held), and keeps unanswered in step: each request is passed over
// once as confirmed moves on, and again only after a rebuild (a DATA_LOSS
// sets it back to 0 while nothing is dropped). Adding up the unanswered
// requests on every Send instead made a stretch of frames without
// revisions quadratic once the Session kept near its byte bound.
func (s *Session) answer(n int) {
	// Only kept requests are counted: confirmed never goes below dropped
	// while requests are kept (makeRoom drops answered ones only).
	lo, hi := max(min(s.confirmed, n), s.dropped), min(max(s.confirmed, n), s.total())
	b := 0
	for i := lo; i < hi; i++ {
		b += msgSize(s.req(i))
	}
	if n > s.confirmed {
		s.unanswered -= b
	} else {
		s.unanswered += b
	}
	s.confirmed = n
}

func (s *Session) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// notify wakes every waiter (s.mu held).
func (s *Session) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Session) giveUp(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
		s.notify()
	}
	s.mu.Unlock()
	s.cancel()
}

// run sends the session's requests, on one stream after another, until the
// session is closed and answered, or it gives up.
func (s *Session) run() {
	defer close(s.done)
	failures, addr := 0, 0
	for {
		s.mu.Lock()
		work := s.err == nil && s.confirmed < s.total()
		stop := s.err != nil
		s.mu.Unlock()
		if stop {
			return
		}
		if !work {
			select {
			case <-s.wake:
				continue
			case <-s.ctx.Done():
				s.giveUp(fmt.Errorf("acpnorm client: session %q: %w", s.id, ErrClosed))
				return
			}
		}
		progress, err := s.stream(addr)
		if err == nil {
			failures = 0
			continue
		}
		if s.ctx.Err() != nil {
			s.giveUp(fmt.Errorf("acpnorm client: session %q: %w", s.id, ErrClosed))
			return
		}
		if fatal(err) && !s.leaveOutTooLarge(err) {
			s.giveUp(fmt.Errorf("acpnorm client: session %q: %s: %w", s.id, s.c.target(addr), err))
			return
		}
		if progress {
			failures = 0
		}
		s.mu.Lock()
		s.stats.Reconnects++
		s.lastErr = fmt.Errorf("%s: %w", s.c.target(addr), err)
		s.mu.Unlock()
		addr++ // a stream that broke moves to the next address
		if s.c.wait(s.ctx, failures) != nil {
			s.giveUp(fmt.Errorf("acpnorm client: session %q: %w (last error: %v)", s.id, ErrClosed, err))
			return
		}
		failures++
	}
}

// fatal says whether a stream's error is one reconnecting cannot cure.
func fatal(err error) bool {
	var lost *lostError
	if errors.As(err, &lost) {
		return lost.fatal || lost.dropped > 0
	}
	if errors.Is(err, errRetry) {
		return false
	}
	st := status.Convert(err)
	if st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), tooLargeWords) {
		return true // the same request would be too large again
	}
	switch st.Code() {
	case codes.Unavailable, codes.Aborted, codes.Canceled, codes.DeadlineExceeded, codes.Internal, codes.Unknown, codes.ResourceExhausted:
		// ResourceExhausted: a stream cut off as stalled, or a process
		// at its stream limit; Internal and Unknown: a connection cut
		// mid-message.
		return false
	}
	return true
}

// tooLargeWords is how gRPC words the end of a stream whose message was
// over the server's limit; tooLarge reads the message's size and the
// limit, in bytes, after them.
const tooLargeWords = "larger than max"

var tooLarge = regexp.MustCompile(regexp.QuoteMeta(tooLargeWords) + ` \((\d+) vs\. (\d+)\)`)

// leftOut is the message sent in place of a frame over the server's
// limit: a notification of a method no agent sends, which acpnormd reads
// as nothing (every method it does not know is skipped without an error).
var leftOut = []byte(`{"jsonrpc":"2.0","method":"$/acpnorm/left_out"}`)

// leaveOutTooLarge handles a stream gRPC ended because a request was over
// the server's message limit (docs/contract.md: the client resends the
// rest, leaving that one out). The first unanswered frame over the limit
// is reported as a FrameError RESOURCE_EXHAUSTED naming its sequence, and
// sent as leftOut instead, so that the requests after it are applied. It
// reports whether it found one; without one the error is fatal.
func (s *Session) leaveOutTooLarge(err error) bool {
	st := status.Convert(err)
	m := tooLarge.FindStringSubmatch(st.Message())
	if st.Code() != codes.ResourceExhausted || m == nil {
		return false
	}
	limit, perr := strconv.Atoi(m[2])
	if perr != nil {
		return false
	}
	s.mu.Lock()
	for i := s.confirmed; i < s.total(); i++ {
		f := s.req(i).GetFrame()
		if f == nil {
			continue
		}
		size := proto.Size(s.req(i))
		if size <= limit {
			continue
		}
		s.bytes += len(leftOut) - len(f.GetMessage())
		s.unanswered += len(leftOut) - len(f.GetMessage()) // i >= confirmed
		c := proto.Clone(f).(*pb.AcpFrame)
		c.Message = leftOut
		s.reqs[i-s.dropped] = &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: c}}
		s.mu.Unlock()
		s.report(&pb.FrameError{SessionId: s.id, Sequence: f.GetSequence(), Code: int32(codes.ResourceExhausted),
			Message: fmt.Sprintf("request %d (a frame of %d bytes) is larger than the server's limit of %d bytes (acpnormd --max-message-bytes): it was not applied, and the Session sends the requests after it without it", f.GetSequence(), size, limit)})
		return true
	}
	s.mu.Unlock()
	return false
}

// errRetry ends a stream that should be opened again at once or after a
// wait (a request was not applied, or the trailer counted fewer requests).
var errRetry = errors.New("acpnorm client: stream ended with requests unanswered")

type lostError struct {
	fe *pb.FrameError
	// fatal: lost too many times in a row.
	fatal bool
	// dropped is how many requests were no longer kept: the session
	// cannot be rebuilt from its first, which is fatal too.
	dropped             int
	maxFrames, maxBytes int
}

func (e *lostError) Error() string {
	if e.dropped > 0 {
		return fmt.Sprintf("the server lost the session, and it cannot be rebuilt: its first %d requests were no longer kept (answered, then dropped to stay within the bound of %d requests, %d bytes; client.WithSessionLimits raises it); the server said: %s",
			e.dropped, e.maxFrames, e.maxBytes, e.fe.GetMessage())
	}
	if e.fatal {
		return "the session was lost in the store too many times in a row, last: " + e.fe.GetMessage()
	}
	return e.fe.GetMessage()
}

func (e *lostError) Unwrap() error {
	if e.dropped > 0 {
		return ErrCannotRebuild
	}
	return nil
}

// stream runs one stream to the addr-th address: it sends every request
// from the first unanswered one, folds what comes back, and returns nil
// when it ended with every request sent answered (a flush), or why it
// ended. progress says whether any request got answered on it.
func (s *Session) stream(addr int) (progress bool, err error) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.mu.Lock()
	s.stats.Streams++
	answered := s.confirmed
	from := s.heldFrom()
	earlier := s.sentBefore() // requests sent on earlier streams
	s.mu.Unlock()
	st, err := s.c.stub(addr).Normalize(ctx)
	if err != nil {
		return false, err
	}
	recv := make(chan error, 1)
	var sent int // requests sent, after the options
	var closedSend bool
	go func() { recv <- s.receive(st, earlier, cancel) }()
	sendErr := func() error {
		if err := st.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{SkipAppliedSequences: true}}}); err != nil {
			return err
		}
		heldSent := false
		for {
			s.mu.Lock()
			i := from + sent
			if i < s.dropped {
				// Requests answered before this stream started, sent
				// again to state what is held (heldFrom), were dropped
				// meanwhile: go on from the first kept, as if the stream
				// had started there (the trailer counts from from).
				from += s.dropped - i
				i = s.dropped
			}
			var req *pb.NormalizeRequest
			switch {
			case s.err != nil:
				s.mu.Unlock()
				return nil
			case i < s.total():
				req = s.req(i)
				if f := req.GetFrame(); f != nil && !heldSent {
					// The first frame on a stream states what is held:
					// the calls' revisions, and the highest sequence
					// answered (reqs[:confirmed] are; after a DATA_LOSS
					// the rebuild starts again from 0), which finds a
					// loss of frames that made no revision.
					heldSent = true
					if held := s.heldLocked(); len(held) > 0 || s.confirmed > 0 {
						c := proto.Clone(f).(*pb.AcpFrame)
						c.HeldRevisions = held
						if s.confirmed > 0 {
							c.HeldSequence = s.base + uint64(s.confirmed)
						}
						req = &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: c}}
					}
				}
				if i < s.sentBefore() {
					s.stats.Resent++
				}
			case s.flushing || s.cycle:
				s.mu.Unlock()
				closedSend = true
				return st.CloseSend()
			}
			s.mu.Unlock()
			if req == nil {
				select {
				case <-s.wake:
					continue
				case <-ctx.Done():
					return nil
				}
			}
			if err := st.Send(req); err != nil {
				return err // io.EOF: the receive side says why
			}
			sent++
			s.mu.Lock()
			s.markSent(from + sent)
			s.mu.Unlock()
		}
	}()
	if errors.Is(sendErr, io.EOF) {
		// The stream broke: Recv says why.
	} else if sendErr != nil || !closedSend {
		// Nothing more will be sent: end the stream unless the server
		// is ending it (after CloseSend).
		cancel()
	}
	rerr := <-recv
	s.mu.Lock()
	defer s.mu.Unlock()
	progress = s.confirmed > answered
	var lost *lostError
	if (rerr == nil && closedSend) || (rerr != nil && !errors.As(rerr, &lost) && !errors.Is(rerr, errRetry)) {
		// A stream the server ended (normally, or on shutdown): its
		// trailer counts the requests it applied and answered, the
		// options first, stopping at one not applied.
		if n, err := strconv.Atoi(first(st.Trailer().Get(trailerApplied))); err == nil && n >= 1 {
			if to := min(from+n-1, from+sent); to > s.confirmed {
				s.answer(to)
				progress = true
			}
		}
	}
	if rerr == nil && closedSend {
		s.cycle = false
		if s.confirmed >= from+sent {
			s.flushing = s.flushing && s.confirmed < s.total()
			s.notify()
			return progress, nil
		}
		s.notify()
		return progress, errRetry
	}
	s.notify()
	if rerr == nil {
		rerr = errRetry
	}
	return progress, rerr
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// maxHeld bounds the calls held_revisions names: acpnormd checks up to
// 2 × --max-calls-per-session of them (2048 by default), the calls the
// session has first, and applies the frame for a claim of up to 64 ×
// --max-calls-per-session calls (a build before that bound took any
// number; one older still refused a claim of more than it checks).
const maxHeld = 1024

// heldLocked lists the revision held of each call (s.mu held): every open
// call, then the ended ones, latest first, up to maxHeld.
func (s *Session) heldLocked() map[string]uint32 {
	keys := s.folder.Calls()
	if len(keys) == 0 {
		return nil
	}
	held := make(map[string]uint32, min(len(keys), maxHeld))
	for _, ended := range []bool{false, true} {
		for i := len(keys) - 1; i >= 0 && len(held) < maxHeld; i-- {
			x := s.folder.State(keys[i])
			if (x.GetState() == pb.ShellState_SHELL_STATE_ENDED) == ended {
				held[keys[i].ToolCallID] = x.GetRevision()
			}
		}
	}
	return held
}

// heldFrom is the index of the request a new stream starts from (s.mu
// held): the first one not answered, or, when that one is a turn end or a
// close (they carry no held fields) after answered requests, the last
// frame before it, sent again to state what is held. Without it a stream
// that starts with a turn end or a close after the server lost the session
// (restarted without a store, a failover) would apply them to an empty
// session: the open calls would never end, and nobody would know.
func (s *Session) heldFrom() int {
	from := s.confirmed
	if from == 0 || from >= s.total() || s.req(from).GetFrame() != nil {
		return from
	}
	// A frame dropped (makeRoom) is not there to send: as when none is
	// found.
	for k := from - 1; k >= s.dropped && from-k <= maxHeldBack; k-- {
		if s.req(k).GetFrame() != nil {
			return k
		}
	}
	return from
}

// maxHeldBack bounds how far back heldFrom looks for a frame.
const maxHeldBack = 64

// sentBefore is the most requests ever sent (s.mu held).
func (s *Session) sentBefore() int { return s.highSent }

func (s *Session) markSent(n int) { s.highSent = max(s.highSent, n) }

// receive folds the answers of a stream until it ends: nil when the
// server ended it normally (io.EOF). sentBefore is how many requests
// earlier streams had sent.
func (s *Session) receive(st pb.NormalizerService_NormalizeClient, sentBefore int, cancel context.CancelFunc) error {
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			cancel()
			return err
		}
		if x := r.GetShellExec(); x != nil {
			s.confirm(x.GetSequence())
			s.apply(x)
			continue
		}
		fe := r.GetFrameError()
		if fe == nil {
			continue
		}
		if c := codes.Code(fe.GetCode()); c != codes.DataLoss && c != codes.Unavailable {
			// Not for a request not applied: an older server answered a
			// batch it could not apply with one FrameError, of the
			// sequence of its last frame (each frame gets its own now).
			s.confirm(fe.GetSequence())
		}
		switch codes.Code(fe.GetCode()) {
		case codes.AlreadyExists:
			s.mu.Lock()
			fresh := s.upTo(fe.GetSequence()) > sentBefore
			s.mu.Unlock()
			if !fresh {
				// A request sent again that was applied before; what it
				// made came then, or comes whole with the next revisions.
				continue
			}
			// Sent for the first time, yet applied before: another
			// Session numbered this session's requests alike (a process
			// whose clock was behind an earlier one's, see
			// firstSequence). The request was not applied: say so.
			fe = proto.Clone(fe).(*pb.FrameError)
			fe.Message += "; this Session had not sent it before, so another Session (or process) of the same session id numbered its requests alike (a clock behind the earlier one's?) and this request was not applied"
		case codes.Unavailable:
			// Not applied: send it again, after a wait, maybe elsewhere.
			s.mu.Lock()
			s.stats.NotApplied++
			s.mu.Unlock()
			cancel()
			return errRetry
		case codes.DataLoss:
			s.mu.Lock()
			s.stats.Losses++
			if s.dropped > 0 {
				// The session's first requests are no longer kept: it
				// cannot be rebuilt, and a rebuild from what is kept would
				// miss what named the agent (initialize, session/new).
				lost := &lostError{fe: fe, dropped: s.dropped, maxFrames: s.c.cfg.maxFrames, maxBytes: s.c.cfg.maxBytes}
				s.mu.Unlock()
				cancel()
				return lost
			}
			s.rebuilds++
			s.lossAt = max(s.lossAt, s.upTo(fe.GetSequence()))
			s.answer(0) // rebuild: everything again from the first
			fatal := s.rebuilds > s.c.cfg.maxRebuilds
			s.mu.Unlock()
			cancel()
			return &lostError{fe: fe, fatal: fatal}
		}
		s.report(fe)
	}
}

// firstSequence is the sequence before a new Session's first request:
// the microseconds since 1970. The server skips the sequences of a
// session it applied before (skip_applied_sequences), so a Session that
// numbered from 1 again, in a process started after one that used the
// same session id and died, would have its new frames skipped as sent
// before. Numbered from the clock, a later Session's requests come after
// an earlier one's, unless it sent more than one request a microsecond
// or the clock was set back. Microseconds keep every sequence exact in a
// JavaScript number too.
func firstSequence() uint64 { return uint64(time.Now().UnixMicro()) }

// FirstSequence returns the sequence number of the Session's first
// request; the n-th has FirstSequence()+n-1. Every FrameError and
// ShellExec carries the sequence of the request that caused it.
func (s *Session) FirstSequence() uint64 { return s.base + 1 }

// upTo is how many of the Session's requests have a sequence up to seq
// (s.mu held).
func (s *Session) upTo(seq uint64) int {
	if seq <= s.base {
		return 0
	}
	return int(min(seq-s.base, uint64(s.total())))
}

// confirm records that the requests before sequence seq were answered
// (a stream answers its requests in order).
func (s *Session) confirm(seq uint64) {
	if seq <= s.base {
		return
	}
	s.mu.Lock()
	if n := s.upTo(seq - 1); n > s.confirmed {
		s.answer(n)
		if n > s.lossAt {
			s.rebuilds = 0 // the rebuild got past where the loss was found
		}
		s.notify()
	}
	s.mu.Unlock()
}

// apply folds one revision in, once.
func (s *Session) apply(x *pb.ShellExec) {
	s.mu.Lock()
	k := fold.KeyOf(x)
	if held, ok := s.folder.Revision(k); ok && x.GetRevision() <= held {
		s.stats.Duplicates++
		s.mu.Unlock()
		return
	}
	err := s.folder.Apply(x)
	s.mu.Unlock()
	var fe *fold.Error
	if err != nil && (!errors.As(err, &fe) || !fe.Applied) {
		// Not folded: a gap with appended text (revisions missed that
		// the server did not make whole) or a malformed revision.
		s.report(&pb.FrameError{SessionId: x.GetSessionId(), Sequence: x.GetSequence(), ToolCallId: x.GetToolCallId(),
			Code: int32(codes.DataLoss), Message: err.Error()})
		return
	}
	if s.onRev != nil {
		s.onRev(x)
	}
}

// report hands a FrameError on once.
func (s *Session) report(fe *pb.FrameError) {
	k := errKey{fe.GetSequence(), fe.GetCode(), fe.GetToolCallId(), fe.GetMessage()}
	s.mu.Lock()
	if s.seenErrs[k] {
		s.mu.Unlock()
		return
	}
	s.seenErrs[k] = true
	s.errs = append(s.errs, fe)
	s.mu.Unlock()
	if s.onErr != nil {
		s.onErr(fe)
	}
}
