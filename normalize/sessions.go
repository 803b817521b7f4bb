package normalize

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/dialect"
	"github.com/acpnorm/acpnorm/store"
)

// sessions is the state of every ACP session of the process, shared by all
// streams so that a client that reconnects goes on where it left off.
type sessions struct {
	cfg   config
	store store.Store // nil: memory is the only state
	// confirm is store, when it confirms commits only once they are
	// durable enough (see release); else nil.
	confirm store.Confirmer
	hooks   Hooks
	now     func() time.Time
	total   atomic.Int64 // calls held, all sessions
	held    atomic.Int64 // bytes of text held, all sessions (see memory.go)
	tombs   *tombstones  // calls released, so late frames cannot reopen them
	// handed remembers what was handed on of sessions dropped from the
	// cache after a store error (see loss.go).
	handed handedOn
	// floors counts the floors of lost calls the cached sessions hold,
	// bounded by maxFloors, and floorSpaces the namespaces holding any
	// (see floorRoom in loss.go).
	floors      atomic.Int64
	floorSpaces atomic.Int64

	mu     sync.Mutex
	spaces map[string]*space // by namespace name; see namespace.go
	count  int               // sessions held, all namespaces
}

// session is the state of one ACP session. Its busy token serializes the
// requests of the session, whichever stream they arrive on.
type session struct {
	busy      chan struct{} // holds a token while a request of the session is applied
	id        string        // as the client names it
	key       string        // the id in its namespace: what tombstones and the store know it by
	space     *space        // its namespace's state
	gone      bool          // removed from its space; look it up again
	dialect   dialect.Dialect
	name      string // the dialect's name, kept to stamp every revision
	explicit  bool   // chosen by name, not detected
	named     bool   // detected from agentInfo.name; signs no longer count
	cwd       string
	cwdByHand bool   // from AcpFrame.cwd, which beats session/new
	cancel    bool   // session/cancel seen in the current turn
	applied   uint64 // the highest sequence applied (see WithSkipApplied)
	// closed is the highest sequence the session had applied when it was
	// closed (with skipped applied sequences), until a request starts it
	// again: a frame or close sent again after the close is answered as
	// applied (see skip).
	closed       uint64
	ackedApplied uint64 // applied as of the last commit or load (with a store): answered
	touched      time.Time
	created      uint64
	held         int // bytes of text the session's calls and its own state hold
	state        int // of held, what its own state holds (see holdState)
	termOutput   int // of held, the output its client terminals hold (see holdTermOutput)
	calls        map[string]*entry
	terminals    map[string]string // terminal id -> tool call id
	asks         map[string]ask    // JSON-RPC id -> the ask
	// Client-owned terminals (see terminals.go): by terminal id, the
	// requests awaiting an answer by JSON-RPC id, and the counter that
	// orders both.
	terms    map[string]*clientTerm
	termReqs map[string]termReq
	termSeq  uint64
	// keptErrs are the last FrameErrors of frames applied, kept without a
	// store to answer a frame sent again (see keepErrors).
	keptErrs []*FrameError
	// replay: a session/load request was seen and no session/prompt
	// since, so every tool call frame restates history (the agent replays
	// the loaded session before it answers the load, or, some agents,
	// after: no live tool call can come before the next prompt). A
	// prompt's result, a permission ask or a terminal request (only a live
	// turn sends them) ends it too. Its
	// observations are accum.Observation.Replayed (they fill in only what
	// a call does not know), and one about a released call is dropped
	// without a FrameError.
	replay bool

	// agent is the agent's build from its initialize result's
	// agentInfo.version (unknown until one says it); dialect is bound to
	// it. readerKey is readerID, once made.
	agent     dialect.Version
	readerKey string
	// unrecognized has bit i set once Hooks.Unrecognized said
	// unrecognizedKinds[i] for the session.
	unrecognized uint8
	// client is what the client declared in its initialize request's
	// clientCapabilities (the zero Client until one is seen); dialect is
	// bound to it too.
	client dialect.Client

	// With a store (see persist.go): the version the cached state is
	// at, whether it still has to be loaded (or was by this request),
	// which calls have records in the store, the header as last
	// committed (body) and when it said the session was last used, the
	// numbers of the oldest and next tombstone records, and the
	// tombstones the next commit writes.
	version  uint64
	needLoad bool
	loaded   bool // by the request under way: it is current
	// loadedRecords are the records the request under way loaded
	// (loaded) from a store that is no store.PartLoader, when the
	// session keeps answers: a frame sent again reads its own there
	// (storedAnswer) rather than load the session again. Dropped when
	// the request ends (release).
	loadedRecords       map[string][]byte
	handed              *handedRevs // what this Normalizer handed on of it when it let it go, until a request checks it (see lost)
	stored              map[string]bool
	body                []byte
	scratch             []byte // the next commit's header is encoded here (see persist)
	recScratch          []byte // and its calls' records
	storedTouched       time.Time
	tombFirst, tombNext uint64
	newTombs            []storedTomb
	x                   *extra // floors of lost calls, kept answers; see loss.go
	// finals are the ENDED revisions a close kept (see keepFinals), for
	// its commit to write first (see writeFinals).
	finals *keptFinals
}

func newSession(id string, sp *space) *session {
	return &session{id: id, key: sp.ns.key(id), space: sp, busy: make(chan struct{}, 1), calls: map[string]*entry{}, terminals: map[string]string{}, asks: map[string]ask{},
		terms: map[string]*clientTerm{}, termReqs: map[string]termReq{}, stored: map[string]bool{}}
}

// reset forgets what a session learned (its dialect, cwd, terminals and
// asks) when its calls were released, as a new session would start.
func (s *session) reset() {
	s.dialect, s.name, s.explicit, s.named, s.agent, s.readerKey = nil, "", false, false, dialect.Version{}, ""
	s.client = dialect.Client{}
	s.cwd, s.cwdByHand, s.cancel, s.applied = "", false, false, 0
	s.terminals, s.asks = map[string]string{}, map[string]ask{}
	s.terms, s.termReqs, s.termSeq, s.replay = map[string]*clientTerm{}, map[string]termReq{}, 0, false
}

type entry struct {
	call      *accum.Call
	order     uint64
	endedAt   time.Time
	size      int           // bytes of text charged for the call
	revisions uint32        // revisions sent
	outcome   accum.Outcome // outcome of the last revision sent
	dirty     bool          // changed since the last commit (with a store)
	acked     uint32        // revisions as of the last commit: handed on (with a store)
	// endedBy is the sequence of the turn's end or the close that ended
	// the call (0: none, or a frame did): see handOnMissed.
	endedBy uint64
}

type ask struct {
	callID string
	reject []string
}

func newSessions(cfg config) *sessions {
	ss := &sessions{cfg: cfg, store: cfg.store, hooks: cfg.hooks, now: cfg.now, spaces: map[string]*space{}, tombs: newTombstones(cfg.Tombstones)}
	if c, ok := cfg.store.(store.Confirmer); ok && c.Confirms() {
		ss.confirm = c
	}
	return ss
}

// errTooManySessions and errQuotaSessions say that a session cannot be
// created: the Normalizer, or its namespace, holds as many as it may.
var (
	errTooManySessions = errors.New("too many sessions")
	errQuotaSessions   = errors.New("too many sessions in the namespace")
	// errNotCached: with a store, a session that is not cached could not
	// be loaded without creating it, as the cache is full of sessions
	// being applied.
	errNotCached = errors.New("session not cached, and the cache is full")
)

// remove takes a session out of its space (which goes when it holds no
// more), under ss.mu. It reports whether the session was there.
func (ss *sessions) remove(s *session) bool {
	sp := s.space
	if sp.all[s.id] != s {
		return false
	}
	delete(sp.all, s.id)
	ss.count--
	if s.x != nil {
		ss.countFloors(s, -len(s.x.floors))
	}
	if len(sp.all) == 0 && ss.spaces[sp.ns.name] == sp {
		delete(ss.spaces, sp.ns.name)
	}
	return true
}

// lock returns the session, locked. When it does not exist, lock creates it
// if create is true (or fails with errTooManySessions at the limit), and
// returns nil otherwise. It gives up when ctx is done while another request
// of the session is being applied. With a store, a session not in the
// cache is loaded from it (an error wrapping errStore when that fails).
func (ss *sessions) lock(ctx context.Context, ns namespace, id string, create bool) (*session, error) {
	for {
		ss.mu.Lock()
		sp := ss.spaces[ns.name]
		var s *session
		if sp != nil {
			s = sp.all[id]
		}
		if s == nil {
			if !create && ss.store == nil {
				ss.mu.Unlock()
				return nil, nil
			}
			quota := sp != nil && ss.cfg.quota.Sessions > 0 && len(sp.all) >= ss.cfg.quota.Sessions
			if quota || ss.count >= ss.cfg.MaxSessions {
				ss.mu.Unlock()
				from := (*space)(nil) // any namespace's
				if quota {
					from = sp
				}
				if ss.store != nil && ss.evictIdle(from) {
					continue // there is room in the cache now
				}
				switch {
				case !create && quota:
					return nil, fmt.Errorf("%w: %w", errNotCached, errQuotaSessions) // a frame goes on to create it, which says why not
				case !create:
					return nil, fmt.Errorf("%w: %w", errNotCached, errTooManySessions)
				case quota:
					return nil, errQuotaSessions
				}
				return nil, errTooManySessions
			}
			if sp == nil {
				sp = &space{ns: ns, all: map[string]*session{}}
				ss.spaces[ns.name] = sp
			}
			s = newSession(id, sp)
			s.needLoad = ss.store != nil
			if ss.store == nil {
				s.closed = ss.tombs.closedAt(s.key) // else its header says
			}
			sp.all[id] = s
			ss.count++
			ss.hooks.sessions(1)
		}
		ss.mu.Unlock()
		// A session no other request is applying is taken at once (a
		// one-case select with a default locks one channel, where the
		// select that can also give up locks two); only a wait selects.
		select {
		case s.busy <- struct{}{}:
		default:
			select {
			case s.busy <- struct{}{}:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if s.gone {
			s.unlock()
			continue
		}
		if s.needLoad {
			found, err := ss.load(ctx, s)
			if errors.Is(err, errDropped) {
				s.unlock() // load let it go: a new placeholder loads it again
				continue
			}
			if err != nil || !found && !create && len(s.calls) == 0 {
				ss.uncache(s)
				s.unlock()
				return nil, err
			}
			s.takeHanded(ss) // the session stays cached: its requests check it
			if found && ss.now().Sub(s.touched) > ss.cfg.TTL {
				ss.expireLoaded(s)
			}
		}
		s.touched = ss.now()
		return s, nil
	}
}

// evictIdle makes room in a full cache when a store holds every session:
// of a few cached sessions of space from (nil: of any namespace) that no
// request is applying, it drops the one used least recently (the store
// keeps it; its next request loads it). It reports whether it dropped one.
func (ss *sessions) evictIdle(from *space) bool {
	const sample = 8
	ss.mu.Lock()
	cands := make([]*session, 0, sample)
	take := func(all map[string]*session) {
		for _, s := range all { // map order: a different sample each time
			if len(cands) == sample {
				return
			}
			cands = append(cands, s)
		}
	}
	if from != nil {
		if ss.spaces[from.ns.name] == from {
			take(from.all)
		}
	} else {
		for _, sp := range ss.spaces {
			take(sp.all)
			if len(cands) == sample {
				break
			}
		}
	}
	ss.mu.Unlock()
	var oldest *session
	for _, s := range cands {
		if !s.tryLock() {
			continue
		}
		if s.gone || oldest != nil && !s.touched.Before(oldest.touched) {
			s.unlock()
			continue
		}
		if oldest != nil {
			oldest.unlock()
		}
		oldest = s
	}
	if oldest == nil {
		return false
	}
	if ss.now().Sub(oldest.storedTouched) < ss.cfg.TTL {
		// The store may lose commits while the session is out of the
		// cache (a replica promoted in a dying master's place): the
		// next request that loads it checks it against what this cache
		// handed on (see loss.go).
		ss.handed.put(oldest.key, oldest.ackedRevisions(), oldest.ackedApplied, ss.now())
	}
	ss.uncache(oldest)
	oldest.unlock()
	return true
}

// unlock releases a session taken with lock.
func (s *session) unlock() { <-s.busy }

// tryLock takes the session when no request of it is being applied.
func (s *session) tryLock() bool {
	select {
	case s.busy <- struct{}{}:
		return true
	default:
		return false
	}
}

// reply hands what one request produces on, one event at a time, as it is
// produced.
type reply struct {
	session string
	seq     uint64
	req     *request
	err     error // the first error handing on returned; nothing is handed on after it
	// With a store, the events wait in held until the request's changes
	// are committed (see release); conflict says another replica
	// committed first, and the request is to be applied again.
	hold     bool
	held     []Event
	conflict bool
	retry    bool // a later attempt: frames are read again
	inert    bool // the frames applied change nothing, whatever the state
	frames   int  // frames applied
	// A batch (see batch) keeps its session locked from frame to frame,
	// and commits and unlocks it once, after the last.
	batch bool
	kept  *session
	// batchFrames are the batch's frames, and at the index of the one
	// under way: a batch not applied answers each of them (see
	// notTaken).
	batchFrames []Frame
	at          int
	// stop says the batch's session could not be taken (the store
	// failed): its later frames are not applied either.
	stop bool
	// ahead is the frame read ahead of its turn (see Prepare), if any;
	// next is the dialect the frame's session reads its next frame with.
	ahead    *Prepared
	next     dialect.Dialect
	nextName string // next's name
	// nextReader is next with the build it is bound to (see
	// WithNextReader).
	nextReader string
	// See loss.go: what the request holds was checked against the
	// session, and found lost, or the revisions it missed were handed
	// on; fresh lists the sequences it applied (with skipped applied
	// sequences), whose answers are kept.
	lossChecked, lossFound, claimRefused, missedSent bool
	// undelivered are the calls whose ENDED revision the request made
	// but did not hand on (a send failed before or at it); closedSent
	// says the ENDED revisions a closed session kept were handed on
	// (see handOnClosed).
	undelivered []*entry
	closedSent  bool
	// closedGot is the close whose kept revisions the request hands on,
	// read from the store: the consumer is told once they were (see
	// WithClosedHandedOn); failed says the store failed the request, and
	// what it held was dropped.
	closedGot *CloseMark
	failed    bool
	// what names a request that is not a frame ("turn_ended",
	// "session_closed"), for what the request is told.
	what string
	// frameObs is what the frame under way says, read before its
	// sequence is checked: the calls whose revisions it made, if it was
	// applied before.
	frameObs []accum.Observation
	fresh    []uint64
	// again says a request was answered as applied before (see skip):
	// from the state the store holds, which release confirms when the
	// store confirms commits.
	again bool
	// errs are the FrameErrors of the frame under way, kept with a
	// session that has no store to answer it again (see keepErrors).
	errs []*FrameError
}

// send hands one event on, unless an earlier one failed.
func (r *reply) send(ev Event) {
	switch {
	case r.err != nil:
	case r.hold:
		r.held = append(r.held, ev)
	default:
		r.err = r.req.give(ev)
	}
}

// flush hands on the events held until the commit.
func (r *reply) flush() {
	r.hold = false
	for _, ev := range r.held {
		r.send(ev)
	}
	r.held = nil
}

// storeFailed drops what the request produced, which the store did not
// take, and says so: for a batch, to each of its frames.
func (r *reply) storeFailed(err error) {
	r.held = r.held[:0]
	r.failed = true
	var frames []Frame
	if r.frames > 1 {
		frames = r.batchFrames[:r.frames]
	}
	r.notTaken(err, frames, "it came in, committed as one,")
}

// notTaken answers the request, or each of the frames of a batch (in
// order), with a FrameError Unavailable of its own, saying that the store
// did not take it (err): a client that matches answers to its requests by
// sequence finds one for each. how says which frames of the batch were
// not taken.
//
// It says the request was not applied only when that is known (see
// notApplied); a commit whose outcome the store does not know (a
// timeout: the store may still apply it) is said to be so, with how to
// send it again without applying it twice.
func (r *reply) notTaken(err error, frames []Frame, how string) {
	what, rest, then := "was not applied", "nor was", "it may be sent again"
	switch {
	case errors.Is(err, errFinalsNotKept):
		// Whatever the store did with them (not acknowledged, timed
		// out), the close was not committed: it is sent again, and
		// applied then.
		r.fail(Unavailable, "", "%s %d of session %q was not applied: %v; a close writes them before it commits, so it did not, and the session is not closed: the calls it was to end are held as they were, and what it made was not handed on. Send it again: it is applied then, and hands on the ENDED revisions of the calls it ends", r.what, r.seq, r.session, err)
		return
	case errors.Is(err, store.ErrUnacknowledged) && r.what == "session_closed":
		what, then = "not acknowledged", "the store may keep or lose it, so send it again (with skipped applied sequences): kept, the session is closed, and the close is answered as applied, with the ENDED revisions it made (what it kept of them for the grace period); lost, the session is not closed, and the close is applied then"
	case errors.Is(err, store.ErrUnacknowledged):
		// Applied in the store, but it may yet be lost there: the caller
		// sends it again, and WithSkipApplied tells it whether it was kept.
		what, then = "not acknowledged", "the store may keep or lose it, so send it again (with skipped applied sequences, if it was kept this process answers it with what it made, and another says ALREADY_EXISTS)"
	case !notApplied(err):
		what, rest, then = "may or may not have been applied", "and so may", "the store failed before it answered, and may apply it still: send it again with skipped applied sequences, which answer it as applied if it was (this process with what it made, another with ALREADY_EXISTS); sent again without them, it may be applied twice"
	}
	if len(frames) < 2 {
		kind := cmp.Or(r.what, "frame")
		r.fail(Unavailable, "", "%s %d of session %q %s: %v; %s", kind, r.seq, r.session, what, err, then)
		return
	}
	first, last := frames[0].Sequence, frames[len(frames)-1].Sequence
	for _, f := range frames {
		msg := fmt.Sprintf("frame %d of session %q %s: %v; %s the rest of the batch of frames %d to %d %s each of them answered so; %s", f.Sequence, r.session, what, err, rest, first, last, how, then)
		r.raiseAt(f.Sequence, &FrameError{Code: Unavailable, Message: msg})
	}
}

// notApplied reports whether a store error (for notTaken) leaves the
// request surely not applied: it failed before the request's commit was
// sent (errNotApplied: a load, a version check, conflicts), or the store
// says the commit was not applied (store.ErrNotApplied), and nothing
// marks the outcome unknown (errUnsure). Anything else, a commit that
// timed out above all, may have been applied.
func notApplied(err error) bool {
	return !errors.Is(err, errUnsure) && (errors.Is(err, errNotApplied) || errors.Is(err, store.ErrNotApplied))
}

// newReply starts an attempt at a request: the first reads the frame read
// ahead, if any; a later one (after a conflict) reads it again, since
// applying changes what was read. The reply is the request's own (one
// allocation with it): an attempt's reply replaces the one before, which
// nothing uses once its attempt is over.
func (ss *sessions) newReply(req *request, attempt int) *reply {
	r := &req.rep
	*r = reply{req: req, hold: ss.store != nil, retry: attempt > 0}
	if attempt == 0 {
		r.ahead = req.prepared
	}
	return r
}

// attempt applies a request until it is not undone by a conflict (with a
// store), at most maxAttempts times, then hands on what it produced.
func (ss *sessions) attempt(req *request, apply func(r *reply) error) (*reply, error) {
	for n := 0; ; n++ {
		r := ss.newReply(req, n)
		err := apply(r)
		if r.conflict {
			if n+1 < maxAttempts && err == nil && backOff(req.ctx, n) {
				if req.discarded != nil {
					req.discarded(r.session)
				}
				continue
			}
			r.storeFailed(marked{fmt.Errorf("%w: other replicas changed the session %d times while it was applied", errStore, maxAttempts), errNotApplied})
		}
		if r.lossFound {
			ss.hooks.dataLoss()
		}
		r.flush()
		if m := r.closedGot; m != nil && r.err == nil && !r.failed && req.closedGot != nil {
			req.closedGot(r.session, *m)
		}
		return r, err
	}
}

func (r *reply) fail(code Code, callID, format string, args ...any) {
	r.raise(&FrameError{Code: code, Message: fmt.Sprintf(format, args...), ToolCallID: callID})
}

// raise hands on fe, a FrameError of the request under way.
func (r *reply) raise(fe *FrameError) { r.raiseAt(r.seq, fe) }

// raiseAt hands on fe, a FrameError of the request (of a batch, the
// frame) of sequence seq.
func (r *reply) raiseAt(seq uint64, fe *FrameError) {
	fe.SessionID, fe.Sequence = r.session, seq
	r.errs = append(r.errs, fe)
	r.send(Event{Error: fe})
}

// The requests apply one frame or control message and hand each event it
// produces on as soon as it is made (see WithEmit), so that a request
// producing many (a TurnEnded ending every open call) never holds more than
// one: handing on may block, and that is the backpressure. When it fails
// (the consumer is gone) the request is still applied, nothing more is
// built or handed on, and the request returns that error; it returns the
// context's error when the context ends while it waits for another request
// of the same session.

func (ss *sessions) turnEnded(id string, cancelled bool, req *request) error {
	r, err := ss.attempt(req, func(r *reply) error {
		return ss.control(req.ctx, id, req.seq, "turn_ended", r, func(s *session) {
			ss.endOpen(s, cancelled || s.cancel, "the prompt turn ended while the call was still open", r)
			s.cancel = false
		})
	})
	if err != nil {
		return err
	}
	return r.err
}

func (ss *sessions) closeSession(id string, req *request) error {
	r, err := ss.attempt(req, func(r *reply) error {
		return ss.control(req.ctx, id, req.seq, "session_closed", r, func(s *session) {
			ss.endOpen(s, s.cancel, "the session closed while the call was still open", r)
			kept := ss.keepFinals(s, r)
			ss.drop(s, releasedClosed, "session_closed")
			switch {
			case kept == nil:
			case ss.store == nil:
				ss.tombs.keep(s.key, kept)
			default:
				s.finals = kept // committed with the close (see persist)
			}
		})
	})
	if err != nil {
		return err
	}
	return r.err
}

func (ss *sessions) frame(id string, msg []byte, req *request) error {
	r, err := ss.attempt(req, func(r *reply) error {
		return ss.applyFrame(req.ctx, frameIn{id, req.dialect, req.cwd, req.seq, msg, req.direction}, r)
	})
	r.reportNext(req)
	if err != nil {
		return err
	}
	return r.err
}

// backOff waits before attempt n+1 of a request that lost a race with
// another replica: a random time up to 100µs·2ⁿ (at most 25 ms), so that
// replicas racing on one session spread out instead of colliding again.
// It reports false when ctx ended first.
func backOff(ctx context.Context, n int) bool {
	d := time.Duration(rand.Int64N(int64(min(100*time.Microsecond<<n, 25*time.Millisecond))))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// lockFor is lock, for a request that may hold the session already (a
// batch).
func (ss *sessions) lockFor(ctx context.Context, r *reply, id string, create bool) (*session, error) {
	if r.kept != nil {
		return r.kept, nil
	}
	return ss.lock(ctx, r.req.ns, id, create)
}

// batch applies frames of one session in order, under one taking of its
// lock and, with a store, one commit (see Normalizer.FeedBatch).
func (ss *sessions) batch(id string, frames []Frame, req *request) error {
	r, err := ss.attempt(req, func(r *reply) error {
		r.batch, r.batchFrames = true, frames
		defer func() {
			if s := r.kept; s != nil {
				r.batch, r.kept = false, nil
				ss.release(s, r)
			}
		}()
		for i, f := range frames {
			r.at = i
			r.ahead = nil // a later attempt reads every frame again
			if !r.retry {
				r.ahead = f.Prepared
			}
			if err := ss.applyFrame(req.ctx, frameIn{id, f.Dialect, f.Cwd, f.Sequence, f.Message, f.Direction}, r); err != nil {
				return err
			}
			if r.stop {
				break // see locked
			}
		}
		return nil
	})
	r.reportNext(req)
	if err != nil {
		return err
	}
	return r.err
}

// locked reports a failure to take a session: a store failure is the
// request's FrameError (the request was not applied); anything else (the
// context ended) is the request's error.
//
// In a batch, the frames after the refused one are not applied either,
// even when the store answers again by then: applied behind it, they
// would take the session's applied sequence past it, and the refused
// frame, sent again, would be skipped as applied (WithSkipApplied). Each
// of them gets its FrameError. The frames before it keep their answers:
// the session is taken by the first frame that needs it, so they were
// refused without it, and would be again.
func (r *reply) locked(err error) error {
	if !errors.Is(err, errStore) {
		return err
	}
	err = marked{err, errNotApplied} // nothing of the request was committed
	if r.batch {
		r.stop = true
		r.notTaken(err, r.batchFrames[r.at:], "(from the first frame that needed the session),")
		return nil
	}
	r.storeFailed(err)
	return nil
}

// frameIn is one frame as fed.
type frameIn struct {
	sessionID, dialect, cwd string
	sequence                uint64
	message                 []byte
	direction               Direction
}

func (f frameIn) GetSessionId() string { return f.sessionID }
func (f frameIn) GetDialect() string   { return f.dialect }
func (f frameIn) GetCwd() string       { return f.cwd }
func (f frameIn) GetSequence() uint64  { return f.sequence }
func (f frameIn) GetMessage() []byte   { return f.message }

func (ss *sessions) control(ctx context.Context, id string, seq uint64, what string, r *reply, do func(*session)) error {
	r.session, r.seq, r.what = id, seq, what
	if !ss.validSessionID(id, what, r) {
		return nil
	}
	s, err := ss.lock(ctx, r.req.ns, id, false)
	switch {
	case errors.Is(err, errQuotaSessions):
		ss.refused(r, LimitQuotaSessions)
		r.fail(ResourceExhausted, "", "%s %d of session %q was not applied: the session could not be loaded, as its namespace (acpnormd: the identity) holds %d sessions cached, all being applied (its quota: WithQuota, acpnormd --quota-sessions); it may be sent again", what, r.seq, id, ss.cfg.quota.Sessions)
		return nil
	case errors.Is(err, errNotCached):
		ss.refused(r, LimitSessions)
		r.fail(ResourceExhausted, "", "%s %d of session %q was not applied: the session could not be loaded, as the %d sessions cached (WithMaxSessions, acpnormd --max-sessions) are all being applied; it may be sent again", what, r.seq, id, ss.cfg.MaxSessions)
		return nil
	}
	if err == nil && s == nil && (ss.closedMark(what, r) || ss.noSession(what, r)) {
		return nil
	}
	if err != nil || s == nil {
		return r.locked(err) // a session never seen (or released) has nothing to end
	}
	defer ss.release(s, r)
	if !ss.skip(s, r, what) {
		do(s)
	}
	return nil
}

// closedMark answers a request of a session that is not held, sent again
// after the session was closed, as applied, and reports whether it was
// one: without a store a closed session is not kept, only its mark (see
// tombstones.closedAt), and a request sent again makes no session.
func (ss *sessions) closedMark(what string, r *reply) bool {
	if ss.store != nil || !r.req.skipApplied || r.seq <= 1 {
		return false
	}
	key := r.req.ns.key(r.session)
	closed := ss.tombs.closedAt(key)
	if r.seq > closed {
		return false
	}
	ss.handOnClosed(key, CloseMark{Sequence: closed}, r)
	r.fail(AlreadyExists, "", "%s %d of session %q was applied before the session was closed (it had applied sequences up to %d); it is not applied again", what, r.seq, r.session, closed)
	return true
}

// noSession answers a turn's end or a close, which may be sent again
// (WithSkipApplied, a sequence above 1), of a session that is not held
// and left no mark: a FrameError FailedPrecondition, not silence, so that
// a client whose stream broke while the close (or the turn's end) handed
// on its ENDED revisions learns they cannot be handed on again. Not
// AlreadyExists: nothing says the request was applied (the session may
// never have been opened), and a client drops an AlreadyExists of a
// request it sent again as answered, so what was lost would go unsaid.
// Not DataLoss: nothing the store was to keep was lost (the mark and the
// session's keys are bounded and expire by design), and a client
// rebuilds a session on DataLoss by sending its frames again from the
// first, which would apply a closed session's frames again.
func (ss *sessions) noSession(what string, r *reply) bool {
	if !r.req.skipApplied || r.seq <= 1 {
		return false // a request that is no one's sent again: nothing to end
	}
	why := "it was never opened, was released after WithTTL (acpnormd --ttl) without a frame, or was closed and the mark that answers its requests sent again is no longer kept (WithTombstones, acpnormd --tombstones)"
	if ss.store != nil {
		why = "it was never opened, or its keys expired from the store (twice WithTTL, acpnormd --ttl, after its last commit; a closed session's too)"
	} else if closed := ss.tombs.closedAt(r.req.ns.key(r.session)); closed > 0 {
		why = fmt.Sprintf("it was closed after applying sequence %d, and a turn's end or close after that does not start it again", closed)
	}
	r.fail(FailedPrecondition, "", "%s %d of session %q finds no session: %s; nothing is applied, and if the request was applied before, what it made cannot be handed on again", what, r.seq, r.session, why)
	return true
}

// letGoClosed lets a closed session go from the cache once a request sent
// again was answered from it as applied (see skip): it holds nothing, and
// the store keeps it, so it is not left until the idle TTL.
func (ss *sessions) letGoClosed(s *session, r *reply) {
	if r.again && closedOnly(s) {
		ss.uncache(s)
	}
}

// closedOnly reports whether s is a closed session that nothing started
// again: what a store keeps of a close.
func closedOnly(s *session) bool {
	return s.closed > 0 && s.applied == 0 && len(s.calls) == 0
}

func (ss *sessions) applyFrame(ctx context.Context, f frameIn, r *reply) error {
	inert := false // see below
	defer func() {
		r.inert = inert && (r.frames == 0 || r.inert)
		r.frames++
	}()
	r.session, r.seq = f.GetSessionId(), f.GetSequence()
	if !ss.validSessionID(f.GetSessionId(), "frame", r) {
		return nil
	}
	if len(f.GetMessage()) == 0 {
		r.fail(InvalidArgument, "", "frame %d of session %q has an empty message", f.GetSequence(), f.GetSessionId())
		return nil
	}
	var chosen dialect.Dialect
	var chosenName string // its name, which Info would allocate for
	if name := strings.TrimSpace(f.GetDialect()); name != "" && !strings.EqualFold(name, dialect.Auto) {
		d, ok := dialect.Lookup(name)
		if !ok {
			r.fail(InvalidArgument, "", "frame %d of session %q names unknown dialect %s; ListDialects lists the dialects of this build", f.GetSequence(), f.GetSessionId(), quoteShort(name))
			return nil
		}
		chosen, chosenName = d, lookedUp(name)
	}

	// A session is created only by a frame that reads as a valid message,
	// so it is read first with the dialect a new session would use.
	s, err := ss.lockFor(ctx, r, f.GetSessionId(), false)
	if err != nil && !errors.Is(err, errNotCached) {
		return r.locked(err)
	}
	with, withName := dialect.Generic(), dialect.GenericName
	if chosen != nil {
		with, withName = chosen, chosenName
	}
	if s != nil {
		with, withName = s.readerFor(chosen, chosenName)
	}
	read, err := r.readWith(with, withName, f.GetMessage())
	if err != nil {
		if s != nil {
			ss.release(s, r)
		}
		r.fail(InvalidArgument, "", "frame %d of session %q: %v", f.GetSequence(), f.GetSessionId(), err)
		return nil
	}
	if s == nil && ss.closedMark("frame", r) {
		return nil
	}
	if s == nil {
		s, err = ss.lockFor(ctx, r, f.GetSessionId(), true)
		switch {
		case errors.Is(err, errTooManySessions):
			ss.refused(r, LimitSessions)
			r.fail(ResourceExhausted, "", "frame %d opens session %q, but the service already holds %d sessions (the limit: WithMaxSessions, acpnormd --max-sessions)", f.GetSequence(), f.GetSessionId(), ss.cfg.MaxSessions)
			return nil
		case errors.Is(err, errQuotaSessions):
			ss.refused(r, LimitQuotaSessions)
			r.fail(ResourceExhausted, "", "frame %d opens session %q, but its namespace (acpnormd: the identity) already holds %d sessions (its quota: WithQuota, acpnormd --quota-sessions)", f.GetSequence(), f.GetSessionId(), ss.cfg.quota.Sessions)
			return nil
		}
		if err != nil {
			return r.locked(err)
		}
		if again, againName := s.readerFor(chosen, chosenName); againName != withName || !sameBinding(again, with) {
			// Another stream made the session meanwhile (or the store
			// held it) and knows its dialect, its agent's build or its
			// client: read the frame the way the session reads.
			if read, err = dialect.ReadIn(again, f.GetMessage(), r.space()); err != nil {
				ss.release(s, r)
				r.fail(InvalidArgument, "", "frame %d of session %q: %v", f.GetSequence(), f.GetSessionId(), err)
				return nil
			}
		}
	}
	defer ss.release(s, r)
	r.frameObs = read.Observations // the calls it is about (see handOnMissed)
	if ss.skip(s, r, "frame") {
		return nil
	}
	r.errs = r.errs[:0]
	defer ss.keepErrors(s, r)
	if chosen != nil {
		s.useNamed(chosen, chosenName)
		s.explicit = true
	}
	// A cwd the frame cannot give is left out, as a call's is: the rest
	// of the frame applies and the session keeps the cwd it had.
	switch cwd := f.GetCwd(); {
	case cwd == "":
	case controlChar(cwd) != "":
		r.fail(InvalidArgument, "", "frame %d of session %q has a cwd holding a control character (%s), which is no path: %s; the frame applies without it", r.seq, s.id, controlChar(cwd), quoteShort(cwd))
	case !absDir(cwd):
		r.fail(InvalidArgument, "", "frame %d of session %q has a cwd that is not absolute: %s; the frame applies without it", r.seq, s.id, quoteShort(cwd))
	case len(cwd) > ss.cfg.TextLimit:
		ss.refused(r, LimitTextBytes)
		r.fail(InvalidArgument, "", "frame %d of session %q has a cwd of %d bytes, over the text limit of %d bytes (WithTextLimit, acpnormd --text-limit); the frame applies without it", r.seq, s.id, len(cwd), ss.cfg.TextLimit)
	default:
		if ss.setCwd(s, cleanDir(cwd), r) {
			s.cwdByHand = true
		}
	}
	if f.direction == FromClient {
		// The agent's name and build are the agent's to say: a client's
		// frame that reads like an initialize result says neither.
		read.AgentVersion, read.AgentName = "", ""
	}
	if read.AgentVersion != "" || read.AgentName != "" {
		// Also when the dialect was chosen by name: it reads this build.
		// An initialize result that names the agent and no version says
		// the build is unknown (it may have restarted as another).
		s.learnVersion(read.AgentVersion)
	}
	if c := read.Client; c != nil && f.direction != FromAgent {
		// The client's initialize request: what it declared binds the
		// dialect, whichever dialect reads the session now or later.
		if read.ClientErr != nil {
			if errors.Is(read.ClientErr, dialect.ErrClientTooLarge) {
				ss.refused(r, LimitTextBytes)
			}
			r.fail(InvalidArgument, "", "frame %d of session %q: %v", r.seq, s.id, read.ClientErr)
		}
		s.learnClient(*c)
	}
	if read.AgentName != "" && !s.explicit {
		d := dialect.Detect(read.AgentName)
		s.use(d)
		s.named = true
		if d == dialect.Generic() {
			ss.hooks.unrecognized(s, UnrecognizedAgentName, "agentInfo.name")
		}
	} else if read.Sign != "" && !s.explicit && !s.named && (s.dialect == nil || s.unnamed()) {
		// An agent that gave no name, recognised by what it sends; the
		// frame that showed it is read again with its dialect.
		if d, ok := dialect.Lookup(read.Sign); ok {
			s.use(d)
			if again, err := dialect.ReadIn(s.reader(), f.GetMessage(), r.space()); err == nil {
				read = again
			}
		}
	} else if read.Unnamed && !s.explicit && !s.named && s.dialect == nil {
		// An initialize result that names no agent and shows no sign:
		// the generic dialect reads the session until a sign shows. It
		// is made the session's dialect, kept in the store too, so that
		// the session knows nothing chose it and says so when it reads a
		// shell call (see unnamed).
		s.use(dialect.Generic())
	}
	r.next, r.nextName, r.nextReader = s.reader(), s.dialectName(), s.readerID()
	// A frame that says nothing the session could use, read with a
	// dialect that no later frame replaces but an explicit choice, changes
	// nothing whatever the session's state: with a store it needs no check
	// that the cached state is current (see release).
	inert = chosen == nil && f.GetCwd() == "" && (s.named || s.explicit) &&
		len(read.Observations) == 0 && read.Answer == nil && read.Ask == nil && !read.Cancelled && !read.TurnEnded &&
		read.AgentName == "" && read.AgentVersion == "" && read.Client == nil && read.Sign == "" && read.SessionCwd == "" &&
		read.Terminal == nil && read.Response == nil && !read.Load && !read.Prompt
	if c := read.SessionCwd; c != "" && !s.cwdByHand && absDir(c) {
		if len(c) > ss.cfg.TextLimit {
			ss.refused(r, LimitTextBytes)
			r.fail(InvalidArgument, "", "frame %d of session %q gives a session cwd of %d bytes, over the text limit of %d bytes (WithTextLimit, acpnormd --text-limit); the session keeps its cwd", r.seq, s.id, len(c), ss.cfg.TextLimit)
		} else if ch := controlChar(c); ch != "" {
			r.fail(InvalidArgument, "", "frame %d of session %q gives a session cwd holding a control character (%s), which is no path: %s; the session keeps its cwd", r.seq, s.id, ch, quoteShort(c))
		} else {
			ss.setCwd(s, cleanDir(c), r)
		}
	}
	if read.Prompt || read.Load {
		// A turn (or a load) begins: a cancel that came before it was
		// for an earlier turn, which already ended.
		s.cancel = false
	}
	switch {
	case read.Load:
		s.replay = true
	case read.Prompt || read.TurnEnded || read.Ask != nil || read.Terminal != nil:
		// A turn, or what only a live turn sends: the replay is over.
		s.replay = false
	}
	for i := range read.Observations {
		id := ss.observe(s, &read.Observations[i], r)
		if read.Ask != nil && read.Observations[i].PermissionAsk && id != "" {
			ss.keepAsk(s, read.Ask, id, r)
		}
	}
	// The agent asks, the client answers: a direction that says
	// otherwise rules the message out (see WithDirection).
	if t := read.Terminal; t != nil && f.direction != FromClient {
		ss.terminalRequest(s, t, r)
	}
	if resp := read.Response; resp != nil && f.direction != FromAgent {
		ss.terminalResponse(s, resp, r)
	}
	if a := read.Answer; a != nil {
		if pending, ok := s.asks[a.RequestID]; ok {
			delete(s.asks, a.RequestID)
			ss.unholdState(s, pending.size(a.RequestID))
			if e := s.calls[pending.callID]; e != nil {
				e.call.Answer(a.Cancelled || slices.Contains(pending.reject, a.OptionID))
				ss.emit(s, e, r)
			}
		}
	}
	// Cancelled turns: after session/cancel, every call that ends before
	// or with the turn's result ended because of it (accum.Call's
	// CancelRequested); a call that ended before keeps its outcome.
	if read.Cancelled && !read.TurnEnded {
		s.cancel = true
	}
	if read.TurnEnded {
		ss.endOpen(s, read.Cancelled || s.cancel, "the prompt turn ended while the call was still open", r)
		s.cancel = false
	}
	return nil
}

// setCwd makes dir the session's cwd, charged as held text. When a limit
// refuses it, the session keeps the cwd it had and setCwd reports false.
func (ss *sessions) setCwd(s *session, dir string, r *reply) bool {
	if dir == s.cwd {
		return true
	}
	if limit := ss.holdState(s, len(dir)); limit != "" {
		ss.stateRefused(r, s, "", limit, "its cwd", len(dir), "the session keeps the cwd it had")
		return false
	}
	ss.unholdState(s, len(s.cwd))
	s.cwd = dir
	return true
}

// keepAsk remembers a permission ask about call until its answer: its
// reject options, which tell a rejection from an approval, bounded in
// number (the dialect reads at most dialect.MaxAskRejects distinct ones)
// and length, and charged as held text.
func (ss *sessions) keepAsk(s *session, a *dialect.Ask, call string, r *reply) {
	if n := len(a.RequestID); n > ss.cfg.MaxIDBytes {
		ss.refused(r, LimitIDBytes)
		r.fail(InvalidArgument, call, "frame %d of session %q asks permission under a JSON-RPC id of %d bytes, over the %d-byte limit for ids (WithMaxIDBytes, acpnormd --max-id-bytes); its answer will not be matched", r.seq, s.id, n, ss.cfg.MaxIDBytes)
		return
	}
	old, known := s.asks[a.RequestID]
	if !known && len(s.asks) >= ss.maxRefs() {
		ss.refused(r, LimitCallsPerSession)
		r.fail(ResourceExhausted, call, "frame %d of session %q asks permission, but the session already has %d unanswered asks (4 per call of WithMaxCallsPerSession, acpnormd --max-calls-per-session); its answer will not be matched", r.seq, s.id, len(s.asks))
		return
	}
	var reject []string
	long, longest := 0, 0
	for _, o := range a.RejectOptions {
		if len(o) > ss.cfg.MaxIDBytes {
			long, longest = long+1, max(longest, len(o))
			continue
		}
		reject = append(reject, o)
	}
	if long > 0 {
		ss.refused(r, LimitIDBytes)
		r.fail(InvalidArgument, call, "frame %d of session %q asks permission with %d reject options whose optionId is over the %d-byte limit for ids (the longest: %d bytes; WithMaxIDBytes, acpnormd --max-id-bytes); they are not kept, and an answer choosing one is not read as a rejection", r.seq, s.id, long, ss.cfg.MaxIDBytes, longest)
	}
	if over := a.UnreadRejects; over > 0 {
		r.fail(InvalidArgument, call, "frame %d of session %q asks permission with %d more reject options than the %d distinct ones an ask reads; they are not read, and an answer choosing one is not read as a rejection", r.seq, s.id, over, dialect.MaxAskRejects)
	}
	k := ask{callID: call, reject: reject}
	if limit := ss.holdState(s, k.size(a.RequestID)); limit != "" {
		ss.stateRefused(r, s, call, limit, "its permission ask (its id, its call's and its reject options)", k.size(a.RequestID), "the ask is not kept and its answer will not be matched")
		return
	}
	if known {
		ss.unholdState(s, old.size(a.RequestID))
	}
	s.asks[a.RequestID] = k
}

// reader is the dialect frames are read with: the chosen or detected one,
// else the generic one.
func (s *session) reader() dialect.Dialect {
	if s.dialect != nil {
		return s.dialect
	}
	return dialect.Generic()
}

// readerFor is the dialect a frame of the session is read with, and its
// name: the session's own, or chosen (named by the frame, when not nil)
// bound to the build and the client the session knows, as a detected
// dialect is.
func (s *session) readerFor(chosen dialect.Dialect, chosenName string) (dialect.Dialect, string) {
	if chosen == nil || s.dialect != nil && s.name == chosenName {
		return s.reader(), s.dialectName()
	}
	return dialect.BindPeers(chosen, s.agent, s.client), chosenName
}

// sameBinding says whether a and b are bound to the same build and client.
func sameBinding(a, b dialect.Dialect) bool {
	return dialect.VersionOf(a) == dialect.VersionOf(b) && dialect.ClientOf(a) == dialect.ClientOf(b)
}

// use makes d, bound to the agent's build, the session's dialect. A
// session that reads with d already keeps its bound value: a dialect named
// on every frame is bound once.
func (s *session) use(d dialect.Dialect) { s.useNamed(d, d.Info().Name) }

// useNamed is use for a dialect whose name (its Info().Name) is known.
func (s *session) useNamed(d dialect.Dialect, name string) {
	if s.dialect != nil && s.name == name {
		return
	}
	s.dialect, s.name, s.readerKey = dialect.BindPeers(d, s.agent, s.client), name, ""
}

// readerID names the dialect frames are read with and the build and the
// client it is bound to, for Prepare (see WithNextReader): the dialect's
// name; once the agent said its version, a newline and the version text;
// once the client declared capabilities, a newline (after the version,
// which may be empty) and their compact JSON, which holds no newline.
func (s *session) readerID() string {
	if s.dialect == nil {
		return dialect.GenericName
	}
	if s.readerKey == "" {
		s.readerKey = s.name
		v, c := s.agent.Raw(), s.client.Raw()
		if v != "" || c != "" {
			s.readerKey += "\n" + v
		}
		if c != "" {
			s.readerKey += "\n" + c
		}
	}
	return s.readerKey
}

// learnVersion keeps the agent's build as its initialize result says it
// and binds the session's dialect to it. A build an adapter named for the
// agent behind it (one with a program name) stays over the adapter's own
// build said again: the adapter's next initialize (a reconnect, whose
// session/load may not name the agent's build again) does not say that
// the agent changed, and reading an older agent build with the newest
// rules could take a number it made up for its exit code.
func (s *session) learnVersion(raw string) {
	if raw == s.agent.Raw() {
		return
	}
	v := dialect.ParseVersion(raw)
	if s.agent.Name() != "" && v.Known() && v.Name() == "" {
		return
	}
	s.agent, s.readerKey = v, ""
	if s.dialect != nil {
		s.dialect = dialect.BindPeers(s.dialect, s.agent, s.client)
	}
}

// learnClient keeps what the client declared in its initialize request
// and binds the session's dialect to it.
func (s *session) learnClient(c dialect.Client) {
	if c == s.client {
		return
	}
	s.client, s.readerKey = c, ""
	if s.dialect != nil {
		s.dialect = dialect.BindPeers(s.dialect, s.agent, s.client)
	}
}

// unnamed says whether the session reads with the generic dialect because
// its agent's initialize result named no agent and the agent showed no
// sign of its dialect (see Frame.Unnamed): a sign still picks a dialect,
// and a shell call read meanwhile is said (UnrecognizedAgentName), since
// a known agent may be misread.
func (s *session) unnamed() bool {
	return s.dialect != nil && s.name == dialect.GenericName && !s.explicit && !s.named
}

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
	ss.resolveCwd(s, o, r)
	if !ss.boundObservation(s, o, r) {
		return ""
	}
	id := o.ToolCallID
	if id == "" && o.TerminalID != "" {
		id = s.terminals[o.TerminalID]
		if id == "" {
			r.fail(FailedPrecondition, "", "frame %d of session %q is about terminal %q, which no tool call has shown as its terminal content", r.seq, s.id, o.TerminalID)
			return ""
		}
	}
	if id == "" {
		r.fail(InvalidArgument, "", "frame %d of session %q updates a tool call without a toolCallId", r.seq, s.id)
		return ""
	}
	e := s.calls[id]
	if e == nil && !o.Opens {
		// An id no call has that a call showed as its terminal: a handle
		// the dialect cannot tell a call's id from a terminal's (an
		// agent's background task id). That call is the one meant.
		if t := s.terminals[id]; t != "" {
			id, e = t, s.calls[t]
		}
	}
	if t := o.TerminalID; o.AboutTerminal && t != "" && (e == nil || !e.call.IsShell()) {
		// A tool that is no shell command reports on the command of a
		// terminal another call owns (it read or stopped a command that
		// went on in the background): what it says of that command is the
		// owner's, and the tool's own call keeps only the rest.
		if owner := s.terminals[t]; owner != "" && owner != id && s.calls[owner] != nil {
			ev := o.TakeEvidence()
			ss.observe(s, &ev, r)
		}
	}
	if e == nil {
		if tb, ok := ss.tombOf(s, id); ok {
			if s.replay {
				return "" // history replayed about a call already released: it has said all it will
			}
			ss.hooks.lateFrame()
			r.fail(FailedPrecondition, id, "frame %d of session %q: %s", r.seq, s.id, tb.explain(id))
			return ""
		}
	}
	if e == nil && o.PermissionAsk {
		// An ask under an id never seen is either about the one open call
		// (some agents ask under another id) or the first sight of a new
		// call (others ask before, or instead of, their tool_call). It can
		// be an open call only when it does not name another command (see
		// askedOpen).
		if other := s.askedOpen(o); other != nil {
			// The ask names a call under another id: keep only what the
			// ask says about approval.
			e, id = other, other.call.ID()
			*o = accum.Observation{ToolCallID: id, PermissionAsk: true, ApprovalReason: o.ApprovalReason}
		}
	}
	if e == nil {
		if n := len(s.calls); n >= ss.cfg.MaxCallsPerSession {
			ss.refused(r, LimitCallsPerSession)
			r.fail(ResourceExhausted, id, "frame %d of session %q opens tool call %q, but the session already holds %d calls (the limit: WithMaxCallsPerSession, acpnormd --max-calls-per-session)", r.seq, s.id, id, n)
			return ""
		}
		if held, q := s.space.calls.Add(1), ss.cfg.quota.Calls; q > 0 && held > int64(q) {
			s.space.calls.Add(-1)
			ss.refused(r, LimitQuotaCalls)
			r.fail(ResourceExhausted, id, "frame %d of session %q opens tool call %q, but its namespace (acpnormd: the identity) already holds %d calls (its quota: WithQuota, acpnormd --quota-calls)", r.seq, s.id, id, q)
			return ""
		}
		if ss.total.Add(1) > int64(ss.cfg.MaxCalls) {
			ss.total.Add(-1)
			s.space.calls.Add(-1)
			ss.refused(r, LimitCalls)
			r.fail(ResourceExhausted, id, "frame %d of session %q opens tool call %q, but the service already holds %d calls (the limit: WithMaxCalls, acpnormd --max-calls)", r.seq, s.id, id, ss.cfg.MaxCalls)
			return ""
		}
		s.created++
		e = &entry{call: accum.NewCall(id, ss.cfg.TextLimit), order: s.created}
		s.calls[id] = e
		ss.hooks.callsOpened(1)
	}
	if e.call.Ended() && (o.Opens || (o.PermissionAsk && e.call.EndedByAgent())) && !o.Replayed && !s.replay && !sameCommand(o.Command, o.CommandFromTitle, e.call.Command()) {
		// A tool_call (or a permission ask) for another command under the
		// id of a call that ended: the agent used the id again. It is not
		// a new call (revisions never restart) nor more of the ended one.
		// But a call the end of a turn ended may still be running: an
		// agent that asks to act on it (before it writes to the command's
		// stdin, say, naming the write) asks about the same call, whose
		// late frames still count.
		what := "opens tool call %q for another command"
		if o.PermissionAsk {
			what = "asks permission to run another command as tool call %q"
		}
		r.fail(FailedPrecondition, id, "frame %d of session %q "+what+", but tool call %q ended (at revision %d) and is held for late frames; an id is never a second call", r.seq, s.id, id, id, e.revisions)
		return ""
	}
	if o.Shell == accum.ShellNo && !e.call.IsShell() {
		o.Texts = nil // output of other tools is not ours to hold
	}
	if t := o.TerminalID; t != "" && s.terminals[t] != id {
		old, known := s.terminals[t]
		switch {
		case !known && len(s.terminals) >= ss.maxRefs():
			ss.refused(r, LimitCallsPerSession)
			r.fail(ResourceExhausted, id, "frame %d of session %q shows terminal %q, but the session already tracks %d terminals (4 per call of WithMaxCallsPerSession, acpnormd --max-calls-per-session); output sent by terminal id alone will not reach the call", r.seq, s.id, t, len(s.terminals))
		default:
			if limit := ss.holdState(s, termRef(t, id)); limit != "" {
				ss.stateRefused(r, s, id, limit, "the id of the terminal it shows, with its call's", termRef(t, id), "output sent by terminal id alone will not reach the call")
				break
			}
			if known {
				ss.unholdState(s, termRef(t, old))
			}
			s.terminals[t] = id
		}
	}
	// A client terminal that this call's content names for the first
	// time: what it learned so far applies first.
	var pre accum.Observation
	tied := false
	if t := o.TerminalID; t != "" && s.terminals[t] == id {
		pre, tied = ss.tieTerminal(s, t, id, r)
		ss.resolveCwd(s, &pre, r)
	}
	o.Replayed = o.Replayed || s.replay
	wasEnded := e.call.Ended()
	if s.cancel {
		e.call.CancelRequested() // see cancelled turns in frame
	}
	if tied {
		rp := ss.budget(s, e, &pre, r)
		e.call.Apply(&pre)
		ss.settle(s, e, rp)
	}
	reserved := ss.budget(s, e, o, r)
	e.call.Apply(o)
	ss.settle(s, e, reserved)
	if s.unnamed() && e.call.IsShell() {
		// First: what the generic reading of a known agent's wire does
		// not understand follows from it.
		ss.hooks.unrecognized(s, UnrecognizedAgentName, agentNameAbsent)
	}
	for _, u := range o.Unrecognized {
		// What a shell call carries that its dialect does not read is
		// said of shell calls; a shell the dialect did not take for one
		// is said of a call that is none.
		if e.call.IsShell() != (u.What == accum.UnrecognizedShell) {
			ss.hooks.unrecognized(s, u.What, u.Field)
		}
	}
	if !wasEnded && e.call.Ended() {
		e.endedAt = ss.now()
		ss.exitLineLeft(s, e)
	} else if wasEnded && len(o.Texts) > 0 {
		// Output that comes after the end: a session/load replaying
		// the call's history, a late stream.
		ss.exitLineLeft(s, e)
	}
	ss.emit(s, e, r)
	return id
}

// exitLineLeft says, for a shell call that has just ended, an exit line
// its dialect left in its output (accum.Call.ExitLineHeld): an agent's
// words about how the command ended that a build reworded, so that they
// became output and the exit they gave may be lost. It costs a look at
// the first and last line of each text the call holds, once per call and
// once per frame that brings it output after its end.
func (ss *sessions) exitLineLeft(s *session, e *entry) {
	if e.call.IsShell() && e.call.ExitLineHeld() {
		ss.hooks.unrecognized(s, UnrecognizedResultText, "output")
	}
}

// refused counts a refusal by limit of request r.
func (ss *sessions) refused(r *reply, limit string) { ss.hooks.refused(r.req.ns, limit) }

// maxRefs bounds the terminal ids and unanswered asks a session tracks.
func (ss *sessions) maxRefs() int { return 4 * ss.cfg.MaxCallsPerSession }

// validSessionID refuses a request without a session id or with one over
// the id limit.
func (ss *sessions) validSessionID(id, what string, r *reply) bool {
	switch {
	case id == "":
		r.fail(InvalidArgument, "", "%s %d has no session_id", what, r.seq)
		return false
	case len(id) > ss.cfg.MaxIDBytes:
		r.session = "" // never echo an over-long id
		ss.refused(r, LimitIDBytes)
		r.fail(InvalidArgument, "", "%s %d has a session_id of %d bytes, over the %d-byte limit for ids (WithMaxIDBytes, acpnormd --max-id-bytes)", what, r.seq, len(id), ss.cfg.MaxIDBytes)
		return false
	}
	return true
}

// boundObservation applies the length limits to what an observation
// names. An over-long id refuses the observation (false). An over-long
// command, cwd, description or approval reason is left out with a
// FrameError naming it, and the rest (the output) still applies; so is a
// cwd holding a control character.
func (ss *sessions) boundObservation(s *session, o *accum.Observation, r *reply) bool {
	for _, f := range []struct{ name, v string }{{"toolCallId", o.ToolCallID}, {"terminalId", o.TerminalID}} {
		if len(f.v) > ss.cfg.MaxIDBytes {
			ss.refused(r, LimitIDBytes)
			r.fail(InvalidArgument, "", "frame %d of session %q names a %s of %d bytes, over the %d-byte limit for ids (WithMaxIDBytes, acpnormd --max-id-bytes); the update is refused", r.seq, s.id, f.name, len(f.v), ss.cfg.MaxIDBytes)
			return false
		}
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"command", &o.Command}, {"cwd", &o.Cwd}, {"description", &o.Description}, {"approval reason", &o.ApprovalReason}, {"cancel notice", &o.CancelNotice}, {"fail notice", &o.FailNotice}, {"signal", &o.Signal}} {
		if n := len(*f.v); n > ss.cfg.TextLimit {
			*f.v = ""
			ss.refused(r, LimitTextBytes)
			r.fail(InvalidArgument, o.ToolCallID, "frame %d of session %q gives tool call %q a %s of %d bytes, over the text limit of %d bytes (WithTextLimit, acpnormd --text-limit); it is left out and the rest of the update applies", r.seq, s.id, o.ToolCallID, f.name, n, ss.cfg.TextLimit)
		}
	}
	if ch := controlChar(o.Cwd); ch != "" {
		r.fail(InvalidArgument, o.ToolCallID, "frame %d of session %q gives tool call %q a cwd holding a control character (%s), which is no path: %s; it is left out and the rest of the update applies", r.seq, s.id, o.ToolCallID, ch, quoteShort(o.Cwd))
		o.Cwd = ""
	}
	return true
}

// sameCommand reports whether an ask naming command ask can be about a
// call whose command is call: either is unknown, or they are equal, or,
// for an ask whose command was read from a title (fromTitle), the title
// shortened the call's command: to its first line, or to a head cut off
// with an ellipsis.
func sameCommand(ask string, fromTitle bool, call string) bool {
	a, c := strings.TrimSpace(ask), strings.TrimSpace(call)
	if a == "" || c == "" || a == c {
		return true
	}
	if !fromTitle {
		return false
	}
	if first, _, multi := strings.Cut(c, "\n"); multi && strings.TrimSpace(first) == a {
		return true
	}
	for _, ellipsis := range []string{"…", "..."} {
		if head, cut := strings.CutSuffix(a, ellipsis); cut && strings.TrimSpace(head) != "" && strings.HasPrefix(c, strings.TrimSpace(head)) {
			return true
		}
	}
	return false
}

// askedOpen returns the open call an ask under an id never seen is
// about: the single open call of its kind, when the ask names no other
// command; else, of several open calls, the one call whose command the
// ask names (and names it exactly, or as a title shortens it). nil when
// it can be none of them, or more than one.
func (s *session) askedOpen(o *accum.Observation) *entry {
	if only := s.onlyOpen(o.Shell); only != nil {
		if sameCommand(o.Command, o.CommandFromTitle, only.call.Command()) {
			return only
		}
		return nil
	}
	if o.Shell == accum.ShellNo || strings.TrimSpace(o.Command) == "" {
		return nil
	}
	var found *entry
	for _, e := range s.calls {
		if e.call.Ended() || !e.call.IsShell() || strings.TrimSpace(e.call.Command()) == "" ||
			!sameCommand(o.Command, o.CommandFromTitle, e.call.Command()) {
			continue
		}
		if found != nil {
			return nil
		}
		found = e
	}
	return found
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
// After a failed send a live change waits for the call's next revision;
// an ENDED one, which has no next, is still made and counted, though not
// sent: the caller sends the request again, saying what it holds, and is
// handed it then (handOnMissed).
func (ss *sessions) emit(s *session, e *entry, r *reply) {
	e.dirty = true
	if !e.call.IsShell() || r.err != nil && !e.call.Ended() {
		return
	}
	rev, ok := e.call.Revision()
	if !ok {
		return
	}
	lifted := false
	if s.x != nil && len(s.x.floors) > 0 {
		var send bool
		if send, lifted = ss.lift(s, e, &rev.Number, rev.State == accum.Ended); !send {
			e.revisions, e.outcome = rev.Number, rev.Outcome
			return // the caller holds it already (see loss.go)
		}
	}
	if r.req.whole != nil && r.req.whole(s.id, rev.ToolCallID, rev.Number, rev.State == accum.Ended) || lifted {
		e.call.Whole(&rev)
	} else if rev.State == accum.Ended && r.req.finalDeltas {
		rev.Texts = rev.Changes
	}
	e.revisions, e.outcome = rev.Number, rev.Outcome
	r.send(Event{ShellExec: s.toExec(&rev, r.seq)})
	if r.err != nil && rev.State == accum.Ended {
		r.undelivered = append(r.undelivered, e)
	}
}

// inOrder returns the calls that keep says to keep, in the order they
// opened.
func (s *session) inOrder(keep func(*entry) bool) []*entry {
	n := 0
	for _, e := range s.calls {
		if keep(e) {
			n++
		}
	}
	if n == 0 {
		return nil // most turns end with every call ended: no list to make
	}
	list := make([]*entry, 0, n)
	for _, e := range s.calls {
		if keep(e) {
			list = append(list, e)
		}
	}
	slices.SortFunc(list, func(a, b *entry) int { return cmp.Compare(a.order, b.order) })
	return list
}

// endOpen ends every open call of the session, in the order they opened.
func (ss *sessions) endOpen(s *session, cancelled bool, why string, r *reply) {
	open := s.inOrder(func(e *entry) bool { return !e.call.Ended() })
	now := ss.now()
	for _, e := range open {
		e.call.End(cancelled, why)
		ss.settle(s, e, 0)
		e.endedAt, e.endedBy = now, r.seq
		ss.exitLineLeft(s, e)
		ss.emit(s, e, r)
	}
}

// drop removes a locked session and all its calls, leaving a tombstone for
// each.
func (ss *sessions) drop(s *session, why released, reason string) {
	applied := s.applied
	if why == releasedClosed && applied > 0 && ss.store == nil {
		// Its requests sent again are answered as applied (see skip);
		// marked before it goes, for a request that makes it anew.
		ss.tombs.add(s.key, "", tomb{why: releasedClosed, applied: applied})
	}
	ss.mu.Lock()
	ss.remove(s)
	ss.mu.Unlock()
	ss.hooks.sessions(-1)
	s.gone = true
	for _, e := range s.inOrder(func(*entry) bool { return true }) {
		ss.bury(s, e.call.ID(), e, why)
		ss.unhold(s, e)
	}
	if why == releasedClosed && applied > 0 && ss.store == nil && len(s.calls) > 0 {
		// Marked again, after its calls: the newest of the tombstones,
		// it is the last of them to make room for others (with it go
		// the ENDED revisions its close keeps, see keepFinals).
		ss.tombs.add(s.key, "", tomb{why: releasedClosed, applied: applied})
	}
	n := len(s.calls)
	s.calls = map[string]*entry{}
	ss.unholdKept(s)
	s.reset() // with a store, what is committed is a new session with the tombstones
	if why == releasedClosed && applied > 0 {
		s.closed = applied // with a store, its header keeps it
	}
	ss.forget(s, n, reason)
}

// bury leaves the tombstone of a call that is being released.
func (ss *sessions) bury(s *session, id string, e *entry, why released) {
	after := ss.cfg.TTL
	if why == releasedGrace {
		after = ss.cfg.Grace
	}
	tb := tomb{why: why, after: after, revisions: e.revisions, outcome: e.outcome}
	if ss.store != nil {
		s.newTombs = append(s.newTombs, storedTomb{id, tb}) // remembered once committed
		return
	}
	ss.tombs.add(s.key, id, tb)
}

// forget counts n calls of s released.
func (ss *sessions) forget(s *session, n int, reason string) {
	if n == 0 {
		return
	}
	ss.total.Add(int64(-n))
	s.space.calls.Add(int64(-n))
	ss.hooks.callsOpened(-n)
	ss.hooks.released(reason, n)
}

// sweep releases the state nobody needs any more: every session idle for
// longer than the TTL, with all its calls, and in the other sessions each
// ended call past its grace period. Expiry follows the session, not the
// call: a call that is quiet while its session goes on keeps its state (the
// per-session call limit bounds them). A session busy applying a frame is
// not idle and is skipped, so that the sweeper never waits on a stream.
func (ss *sessions) sweep() {
	now := ss.now()
	ss.tombs.expire(now.Add(-ss.cfg.Grace))
	ss.mu.Lock()
	list := make([]*session, 0, ss.count)
	for _, sp := range ss.spaces {
		for _, s := range sp.all {
			list = append(list, s)
		}
	}
	ss.mu.Unlock()
	for _, s := range list {
		if !s.tryLock() {
			continue
		}
		switch {
		case s.gone:
			s.unlock()
		case now.Sub(s.touched) > ss.cfg.TTL && ss.store != nil:
			ss.uncache(s) // the store keeps it; a later load releases its calls
			s.unlock()
		case now.Sub(s.touched) > ss.cfg.TTL:
			ss.drop(s, releasedIdle, "ttl")
			s.unlock()
		case ss.store != nil && len(ss.pastGrace(s, now)) == 0:
			s.unlock()
		case ss.store != nil:
			ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
			ss.release(s, &reply{req: &request{ctx: ctx}, session: s.id}) // buries what is past its grace
			cancel()
		default:
			ss.buryPast(s, now)
			s.unlock()
		}
	}
}

// skip reports that the request is not applied: the session lost state
// (see loss.go), or it already applied the request's sequence when the
// caller asked for that (WithSkipApplied). The latter is answered with
// what the request made when it was applied, when the store keeps it, and
// else with a FrameError AlreadyExists; with a store that confirms
// commits, only once it confirmed the session's (see release). It
// records the sequence as applied otherwise.
func (ss *sessions) skip(s *session, r *reply, what string) bool {
	if ss.lost(s, r, what) {
		return true
	}
	if !r.req.skipApplied || r.seq == 0 {
		ss.reopen(s)
		return false
	}
	// A closed session's requests sent again (the answers were lost) are
	// applied; sequence 1 starts the session again.
	sentAgain := s.closed > 0 && r.seq > 1 && r.seq <= s.closed
	if r.seq <= s.applied || sentAgain {
		r.again = true
		if ss.storedAnswer(s, r) {
			return true // what it made, kept with its commit (see loss.go)
		}
		keptErrors(s, r)
		ss.handOnMissed(s, r)
		if sentAgain {
			ss.handOnClosed(s.key, CloseMark{Sequence: s.closed, Version: s.version}, r)
			r.fail(AlreadyExists, "", "%s %d of session %q was applied before the session was closed (it had applied sequences up to %d); it is not applied again", what, r.seq, s.id, s.closed)
			return true
		}
		r.fail(AlreadyExists, "", "%s %d of session %q was applied before (the session has applied sequences up to %d); it is not applied again", what, r.seq, s.id, s.applied)
		return true
	}
	ss.reopen(s)
	s.applied = r.seq
	r.fresh = append(r.fresh, r.seq)
	return false
}

// reopen forgets that a session was closed: a request is applied to it,
// which starts it again.
func (ss *sessions) reopen(s *session) {
	if s.closed == 0 {
		return
	}
	s.closed = 0
	if ss.store == nil {
		ss.tombs.remove(s.key, "")
		return
	}
	if x := s.x; x != nil {
		// The answers of the closed session's frames go: the session
		// started again numbers its frames from the start.
		x.stale = append(x.stale, x.answers...)
		x.answers, x.answerBytes = nil, 0
	}
}

// tombOf returns the tombstone of a released call of s: one the next
// commit writes, or one remembered.
func (ss *sessions) tombOf(s *session, id string) (tomb, bool) {
	for i := len(s.newTombs) - 1; i >= 0; i-- {
		if s.newTombs[i].call == id {
			return s.newTombs[i].tomb, true
		}
	}
	return ss.tombs.get(s.key, id)
}

// pastGrace lists the ended calls of s past their grace period, in the
// order they opened.
func (ss *sessions) pastGrace(s *session, now time.Time) []*entry {
	past := func(e *entry) bool { return e.call.Ended() && now.Sub(e.endedAt) > ss.cfg.Grace }
	for _, e := range s.calls {
		if past(e) {
			return s.inOrder(past)
		}
	}
	return nil // the common case, with a store on every request: no list built
}

// forgetCall removes a call and everything that points at it.
func (ss *sessions) forgetCall(s *session, id string) {
	delete(s.calls, id)
	for t, c := range s.terminals {
		if c == id {
			delete(s.terminals, t)
			ss.unholdState(s, termRef(t, c))
		}
	}
	for k, a := range s.asks {
		if a.callID == id {
			delete(s.asks, k)
			ss.unholdState(s, a.size(k))
		}
	}
	for t, ct := range s.terms {
		if ct.call == id {
			delete(s.terms, t) // a terminal a call names holds no output of its own
			ss.unholdState(s, ct.size(t))
			for k, q := range s.termReqs {
				if q.terminal == t {
					delete(s.termReqs, k)
					ss.unholdState(s, q.size(k))
				}
			}
		}
	}
}

// maxQuoted is the most bytes of a client's string that a FrameError
// quotes (quoteShort).
const maxQuoted = 64

// quoteShort quotes s for a FrameError: whole when short, else its first
// maxQuoted bytes (cut on a character boundary) and its length, so that a
// client's string of any size is never echoed whole.
func quoteShort(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}
