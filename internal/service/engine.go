package service

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
	"google.golang.org/grpc/codes"
)

// sessions is the service's side of the session state, which lives in a
// normalize.Normalizer shared by all streams (so that a client that
// reconnects goes on where it left off): it turns requests into calls of
// the Normalizer and what they produce into responses, and counts them.
type sessions struct {
	n   *normalize.Normalizer
	m   *Metrics
	now func() time.Time // the Normalizer's clock; tests replace it
	rel *releaser        // hands memory back after a large release
	// store says whether the store answers (readiness; see storeHealth).
	store *storeHealth
	// loss logs the DATA_LOSS answers (nil: not logged).
	loss *lossLog
	// maxID bounds the ids a stream remembers of what its client says it
	// holds (Config.MaxIDBytes), and maxHeld the calls of a claim it
	// remembers (2 × Config.MaxCallsPerSession, what the Normalizer
	// checks of one).
	maxID, maxHeld int
}

// newSessions returns the sessions of a Service that counts into m and
// logs wire changes to log (nil: not logged).
func newSessions(cfg Config, m *Metrics, log *slog.Logger) *sessions {
	ss := &sessions{m: m, now: time.Now, rel: newReleaser(), maxID: cfg.MaxIDBytes, maxHeld: 2 * cfg.MaxCallsPerSession}
	hooks := m.hooks()
	ss.store = newStoreHealth(cfg.Store, cmp.Or(log, slog.New(slog.DiscardHandler)))
	hooks.StoreError = func(string, error) { ss.store.failed() }
	if log != nil {
		hooks.UnrecognizedField = newWireLog(log).changed
		ss.loss = newLossLog(log, time.Now)
		sl, op := newStoreLog(log, time.Now), hooks.StoreOp
		hooks.StoreError = func(o string, err error) { sl.failure(o, err); ss.store.failed() }
		hooks.StoreOp = func(o, result string, took time.Duration) { op(o, result, took); sl.result(result) }
	}
	opened, held := hooks.CallsOpened, hooks.HeldBytes
	hooks.CallsOpened = func(delta int) { opened(delta); ss.rel.callsOpened(delta) }
	hooks.HeldBytes = func(total int64) { held(total); ss.rel.heldBytes(total) }
	ss.n = normalize.New(append(cfg.limits(),
		normalize.WithHooks(hooks),
		normalize.WithClock(func() time.Time { return ss.now() }),
	)...)
	return ss
}

// handle applies one request and hands each response it produces to emit
// as soon as it is made, so that a request producing many (a TurnEnded
// ending every open call) never holds more than one: emit may block on a
// full send queue, and that is the backpressure. When emit returns an error
// (the stream is gone) the request is still applied, nothing more is
// built or sent, and handle returns that error; it returns ctx's error when
// ctx ends while it waits for another request of the same session.
func (ss *sessions) handle(ctx context.Context, req *pb.NormalizeRequest, emit func(*pb.NormalizeResponse) error) error {
	_, err := ss.newFeeder(ctx, nil, emit).handle(req, nil)
	return err
}

// feeder applies the requests of one stream that has carried d (see
// delivered; nil for none), handing what they produce to emit as handle
// does. The options every request of the stream shares (its context,
// where revisions go, which revisions must be whole) are built once, so a
// request makes only its own (sequence, dialect, cwd, read-ahead).
type feeder struct {
	ss     *sessions
	n      *normalize.Normalizer // the stream identity's view (see normalize.Normalizer.Namespace)
	ns     string                // n's namespace ("" the default), for the metrics' identity label
	d      *delivered
	emit   func(*pb.NormalizeResponse) error
	shared []normalize.FeedOption
	next   string                 // set by Feed through nextOpt
	nextOf normalize.FeedOption   // WithNextReader, made once
	opts   []normalize.FeedOption // reused by each request
	frames []normalize.Frame      // reused by each batch
	// notApplied says a FrameError of the request said it was not
	// applied (UNAVAILABLE, DATA_LOSS): the stream's trailer stops
	// counting there.
	notApplied bool
	// made is the response emit was last given that holds a revision of
	// the Normalizer: its texts are normalize.Text's, valid UTF-8 by that
	// type's contract (see madeHere).
	made    *pb.NormalizeResponse
	refused map[string]refusal // see inorder.go
	// refusedOrder is the sessions of refused, oldest first (it may hold
	// some lifted since).
	refusedOrder []refusedAt
	refusals     uint64
}

// The feeder serves the default namespace; a stream of another identity
// sets n to its view.
func (ss *sessions) newFeeder(ctx context.Context, d *delivered, emit func(*pb.NormalizeResponse) error) *feeder {
	f := &feeder{ss: ss, n: ss.n, d: d, emit: emit}
	f.shared = []normalize.FeedOption{normalize.WithContext(ctx), normalize.WithEmit(f.event)}
	if d != nil {
		f.shared = append(f.shared, normalize.WithWhole(d.needsWhole), normalize.WithDiscarded(d.discard),
			normalize.WithCarried(d.carried), normalize.WithClosedHandedOn(d.closedSeen, d.closedGot))
	}
	f.nextOf = normalize.WithNextReader(func(reader string) { f.next = reader })
	return f
}

// event turns what the Normalizer produced into a response and emits it.
func (f *feeder) event(ev normalize.Event) error {
	if e := ev.Error; e != nil && e.Revision > 0 && e.ToolCallID != "" && !f.d.again(e.SessionID, e.ToolCallID, e.Revision, true) {
		// An ENDED revision that cannot be handed on again, which the
		// client holds (its claim on this stream, or the stream carried
		// it) or was told of on this stream already.
		return nil
	}
	if ev.Error != nil {
		switch ev.Error.Code {
		case normalize.Unavailable:
			// The request's revisions were dropped, not sent.
			f.d.forget(ev.Error.SessionID)
			f.notApplied = true
			f.refuse(ev.Error.SessionID, ev.Error.Sequence, ev.Error.Code)
		case normalize.DataLoss:
			f.notApplied = true
			f.refuse(ev.Error.SessionID, ev.Error.Sequence, ev.Error.Code)
			if f.ss.loss != nil {
				f.ss.loss.note(f.ss.m.label(f.ns), ev.Error)
			}
		}
		f.ss.m.frameError(codes.Code(ev.Error.Code))
		return f.emit(frameErrorResponse(ev.Error))
	}
	if x := ev.ShellExec; ev.Again {
		if !f.d.again(x.SessionID, x.ToolCallID, x.Revision, wholeTexts(x)) {
			return nil // it would go back, or leave a hole in the client's text
		}
	} else if x != nil {
		f.d.handedOn(x.SessionID, x.ToolCallID, x.Revision)
	}
	f.ss.m.execsOut.Inc()
	r := shellExecResponse(ev.ShellExec)
	f.made = r
	err := f.emit(r)
	f.made = nil
	return err
}

// madeHere says whether r, which emit is being given, is the feeder's own
// response to a revision of the Normalizer, whose texts need no UTF-8
// check (see outgoing.textsValid).
func (f *feeder) madeHere(r *pb.NormalizeResponse) bool { return r != nil && r == f.made }

// wholeTexts says whether every text x carries replaces what the client
// holds (none appends).
func wholeTexts(x *normalize.ShellExec) bool {
	for _, t := range []*normalize.Text{x.Output, x.Stdout, x.Stderr} {
		if t != nil && t.Mode == normalize.Append {
			return false
		}
	}
	return true
}

// handle applies one request that may have been read ahead (ahead is nil
// when not). It also returns the dialect the request's session reads its
// next frame with, when the request was a frame that was read (else "").
func (f *feeder) handle(req *pb.NormalizeRequest, ahead *normalize.Prepared) (string, error) {
	ss := f.ss
	ss.m.framesIn.Inc()
	opts := f.start()
	if refused, err := f.behindRefusal(req); refused {
		f.done(opts)
		return "", err
	}
	var err error
	switch k := req.GetKind().(type) {
	case *pb.NormalizeRequest_Frame:
		fr := k.Frame
		// The frame's own options are FeedFrame's Frame: building them
		// as options would make five closures per frame.
		opts = append(opts, f.nextOf)
		if h := fr.GetHeldRevisions(); len(h) > 0 {
			// A larger claim (a long session's, naming the calls it
			// released too) is applied, but the stream remembers none of
			// it: one larger than its memory would make it start over
			// (see delivered), every next revision whole.
			if len(h) <= ss.maxHeld {
				f.d.holds(fr.GetSessionId(), h, ss.maxID)
			}
			opts = append(opts, normalize.WithHeld(h))
		}
		if q := fr.GetHeldSequence(); q > 0 {
			opts = append(opts, normalize.WithHeldSequence(q))
		}
		_, err = f.n.FeedFrame(fr.GetSessionId(), normalize.Frame{Message: fr.GetMessage(), Sequence: fr.GetSequence(), Dialect: fr.GetDialect(), Cwd: fr.GetCwd(), Direction: direction(fr.GetDirection()), Prepared: ahead}, opts...)
	case *pb.NormalizeRequest_TurnEnded:
		t := k.TurnEnded
		_, err = f.n.TurnEnded(t.GetSessionId(), t.GetCancelled(), append(opts, normalize.WithSequence(t.GetSequence()))...)
	case *pb.NormalizeRequest_SessionClosed:
		c := k.SessionClosed
		_, err = f.n.CloseSession(c.GetSessionId(), append(opts, normalize.WithSequence(c.GetSequence()))...)
	case *pb.NormalizeRequest_Options:
		if ft := k.Options.GetFinalTexts(); pb.FinalTexts_name[int32(ft)] == "" {
			ss.m.frameError(codes.InvalidArgument)
			err = f.emit(frameErrorResponse(&normalize.FrameError{Code: normalize.InvalidArgument,
				Message: fmt.Sprintf("StreamOptions: final_texts %d is no FinalTexts value this server knows (FINAL_TEXTS_WHOLE, FINAL_TEXTS_CHANGES); the stream keeps its options", int32(ft))}))
			break
		}
		f.d.setOptions(k.Options)
	default:
		ss.m.frameError(codes.InvalidArgument)
		err = f.emit(frameErrorResponse(&normalize.FrameError{Code: normalize.InvalidArgument, Message: "request carries neither a frame, turn_ended, session_closed nor options"}))
	}
	f.done(opts)
	return f.next, err
}

// start begins a request: the stream's options, and those its
// StreamOptions ask for.
func (f *feeder) start() []normalize.FeedOption {
	f.next, f.notApplied = "", false
	opts := append(f.opts[:0], f.shared...)
	if f.d.wantsFinalChanges() {
		opts = append(opts, normalize.WithFinalChanges())
	}
	if f.d.wantsSkipApplied() {
		opts = append(opts, normalize.WithSkipApplied())
	}
	return opts
}

// done keeps the grown option list for the next request, but not what
// this one referred to (its read-ahead may be large).
func (f *feeder) done(opts []normalize.FeedOption) {
	clear(opts[:cap(opts)][len(f.shared):])
	f.opts = opts[:0]
}

// handleBatch applies frames of one session that the stream read
// together (see recvLoop), as handle would one by one, but with one taking
// of the session and, with a store, one commit for all of them
// (normalize.FeedBatch). reads holds each frame's read-ahead (or nil).
func (f *feeder) handleBatch(reqs []*pb.NormalizeRequest, reads []*normalize.Prepared) (string, error) {
	if _, ok := f.refused[reqs[0].GetFrame().GetSessionId()]; ok {
		// Behind a refused request: one by one (see inorder.go).
		var next string
		for i, req := range reqs {
			var err error
			if next, err = f.handle(req, reads[i]); err != nil {
				return next, err
			}
		}
		return next, nil
	}
	f.ss.m.framesIn.Add(float64(len(reqs)))
	opts := append(f.start(), f.nextOf)
	frames := f.frames[:0]
	for i, req := range reqs {
		fr := req.GetFrame()
		frames = append(frames, normalize.Frame{Message: fr.GetMessage(), Sequence: fr.GetSequence(), Dialect: fr.GetDialect(), Cwd: fr.GetCwd(), Direction: direction(fr.GetDirection()), Prepared: reads[i]})
	}
	_, err := f.n.FeedBatch(reqs[0].GetFrame().GetSessionId(), frames, opts...)
	clear(frames)
	f.frames = frames[:0]
	f.done(opts)
	return f.next, err
}

// direction is the frame's direction in normalize's terms.
func direction(d pb.Direction) normalize.Direction {
	switch d {
	case pb.Direction_DIRECTION_AGENT_TO_CLIENT:
		return normalize.FromAgent
	case pb.Direction_DIRECTION_CLIENT_TO_AGENT:
		return normalize.FromClient
	}
	return normalize.DirectionUnknown
}

// sweep releases expired state (see normalize.Normalizer.Sweep).
func (ss *sessions) sweep() { ss.n.Sweep() }

func frameErrorResponse(e *normalize.FrameError) *pb.NormalizeResponse {
	return &pb.NormalizeResponse{Kind: &pb.NormalizeResponse_FrameError{FrameError: &pb.FrameError{
		SessionId:  e.SessionID,
		Sequence:   e.Sequence,
		Code:       int32(e.Code),
		Message:    e.Message,
		ToolCallId: e.ToolCallID,
	}}}
}
