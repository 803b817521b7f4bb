package normalize

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/dialect"
	"github.com/acpnorm/acpnorm/internal/wire"
	"github.com/acpnorm/acpnorm/store"
)

// With a Store (WithStore), the sessions a Normalizer holds in memory are a
// cache of the store, and the store is the truth. A request is applied to
// the cached session under the session's lock, and what it changed is
// committed to the store before its revisions are handed on: one round
// trip, compare-and-set on the session's version. When another replica
// committed first (ErrConflict), the cache entry is dropped, the session is
// loaded again and the request is applied again, so every request is
// applied exactly once in the order the store accepted them, and revisions
// go on 1, 2, 3 across replicas. A request that changed nothing commits
// nothing, but asks the store for the session's version (a cache that is
// behind could have missed what the request needed, such as the ask a
// permission answer answers), unless the frame could change nothing in
// any state (see reply.inert). So a request costs one round trip to the
// store, or none; a session that moved costs a load more. The revisions
// of a request are handed on after the session is unlocked, so requests
// of one session on different streams may hand theirs on in either order.
//
// The stored session is:
//   - a header: the dialect, cwd, cancel flag, terminals, unanswered asks,
//     counters, the highest sequence applied (WithSkipApplied), the
//     agent's version, what the client declared in its initialize request
//     and when the session was last used;
//   - a record per call ("c:" and its id): the call's place, revision count
//     and outcome as sent, and its accumulation state (accum.Call's
//     AppendState);
//   - a stream per call and text stream ("<n>:" and the call id), written by
//     appending what was added (accum.Call's TakeSync), so that a frame
//     costs what it adds, not the whole held text;
//   - a record per released call ("t:" and a number), its tombstone, at
//     most MaxCallsPerSession of them, oldest dropped first;
//   - with WithSkipApplied, a record per recent frame ("a:" and its
//     sequence): what it made, for when it is sent again; and after a
//     loss, the floors of the calls the caller holds ("l"). See loss.go.
//
// A close (with WithSkipApplied) also keeps the ENDED revisions of the
// calls it released, apart from the session, in a stored session of
// their own that expires at the grace period (see writeFinals in
// loss.go).
//
// Every key of a session expires twice the TTL after its last commit. A
// session loaded after more than the TTL idle releases its calls to
// tombstones, as the sweeper does without a store; the sweeper itself only
// drops idle sessions from the cache, and releases ended calls past their
// grace period with a commit.

// maxAttempts bounds how often a request is applied again after losing a
// race with another replica (with a growing random pause between, see
// backOff).
const maxAttempts = 12

// storeTimeout bounds a commit or load made without a request's context
// (the sweeper's).
const storeTimeout = 10 * time.Second

// Record formats; see codec.go.
const (
	// headerFormat 2 adds the client terminals, the terminal requests
	// awaiting answers and the replay flag; format 3 the agent's version
	// (agentInfo.version); format 4 what the client declared in its
	// initialize request (clientCapabilities, compact JSON); format 5 the
	// highest sequence a closed session had applied (session.closed);
	// formats 1 to 4 (without them) are still read. A later format, of
	// any record, is a newer build's (a rolling upgrade): its session is
	// left as it is and its requests are not applied here (errNewer), so
	// a build that adds a record kind must raise headerFormat too.
	headerFormat = 5
	entryFormat  = 1
	tombFormat   = 1
)

// errStore marks a failure of the store (not a conflict).
var errStore = errors.New("state store")

// errNotApplied marks a store failure that left the request surely not
// applied: nothing of it was committed (a load or a version check that
// failed, a commit not sent). errUnsure marks one whose outcome is not
// known even when the store's error says it applied nothing (a confirm
// of what an earlier commit applied). See notApplied.
var (
	errNotApplied = errors.New("not applied")
	errUnsure     = errors.New("outcome unknown")
)

// marked is err with a mark (errNotApplied, errUnsure) that errors.Is
// finds, and that its message does not show.
type marked struct{ err, mark error }

func (m marked) Error() string   { return m.err.Error() }
func (m marked) Unwrap() []error { return []error{m.err, m.mark} }

// errDropped: the session's stored state did not decode and was deleted;
// load it again (absent now).
var errDropped = errors.New("stored state dropped")

// WithStore keeps every session's state in st (see package store), so that
// several Normalizers, in one process or on several machines, can serve the
// same sessions and any of them can go on where another stopped. Without it
// (the default) a Normalizer's own memory is the only state. With it, a
// request's revisions are handed on once the store has accepted its
// changes (WithEmit then holds them until then), and a request the store
// cannot take gives a FrameError with code Unavailable. Its message says
// whether it was not applied (it may be sent again), or the store failed
// before it answered and it may or may not have been applied (a timeout:
// see store.ErrNotApplied), when it is sent again with WithSkipApplied,
// which answers it as applied if it was: sent again without, it may be
// applied twice.
func WithStore(st store.Store) Option { return func(c *config) { c.store = st } }

// storedTomb is a tombstone waiting for the next commit.
type storedTomb struct {
	call string
	tomb tomb
}

func recordOfCall(id string) string { return "c:" + id }

func streamName(id string, stream int) string { return strconv.Itoa(stream) + ":" + id }

func recordOfTomb(seq uint64) string { return "t:" + strconv.FormatUint(seq, 10) }

// load fills a placeholder session (locked) from the store. It reports
// whether the store had it.
func (ss *sessions) load(ctx context.Context, s *session) (bool, error) {
	start := time.Now()
	var snap *store.Snapshot
	var err error
	p, parts := ss.store.(store.PartLoader)
	if parts {
		// Without the answers kept (up to maxAnswerBytes): a request sent
		// again reads its own (storedAnswer).
		snap, err = p.LoadWithout(ctx, s.key, answerPrefix)
	} else {
		snap, err = ss.store.Load(ctx, s.key)
	}
	ss.hooks.storeOp("load", start, err)
	if err != nil {
		return false, fmt.Errorf("%w: loading session %q: %w", errStore, s.id, err)
	}
	s.needLoad, s.loaded = false, true
	if snap.Version == 0 {
		return false, nil
	}
	if err := ss.restore(s, snap); err != nil {
		if s.x != nil {
			s.x.floors = nil // not counted: see below
		}
		ss.uncache(s)
		if errors.Is(err, errCorrupt) {
			// Stored state that does not decode (a bug, a store that mixed
			// two histories) would refuse every request as not applied,
			// for ever: it is deleted, and the session's next request is
			// told the session lost it (see lost), so that the client
			// sends its frames again from the first. State a newer build
			// wrote (errNewer) is not corrupt: it is left for that build,
			// and the request is refused as not applied (Unavailable), to
			// be sent again to a replica that reads it.
			start := time.Now()
			derr := ss.store.Delete(ctx, s.key, snap.Version)
			ss.hooks.storeOp("delete", start, derr)
			if derr == nil {
				ss.handed.putDropped(s.key, err.Error(), ss.now())
				return false, errDropped
			}
		}
		return false, fmt.Errorf("%w: session %q: %w", errStore, s.id, err)
	}
	if s.x != nil {
		ss.countFloors(s, len(s.x.floors)) // given back when it leaves the cache (remove)
	}
	if !parts && s.x != nil && len(s.x.answers) > 0 {
		s.loadedRecords = snap.Records // the answers, which a frame sent again reads
	}
	return true, nil
}

// restore decodes a stored session into s.
func (ss *sessions) restore(s *session, snap *store.Snapshot) error {
	s.version = snap.Version
	d := newReader(snap.Header, "session header", headerFormat, 1, 2, 3, 4)
	if d.Err != nil { // an empty header has no format byte to branch on below
		return corrupt(d.Err)
	}
	format := snap.Header[0]
	if name := d.String("dialect"); name != "" {
		if dl, ok := dialect.Lookup(name); ok {
			s.use(dl)
		}
	}
	s.explicit, s.named, s.cwdByHand, s.cancel = d.Bool("explicit"), d.Bool("named"), d.Bool("cwd by hand"), d.Bool("cancel")
	s.cwd = d.String("cwd")
	s.created = d.Uvarint("calls created")
	s.tombFirst, s.tombNext = d.Uvarint("first tombstone"), d.Uvarint("next tombstone")
	s.applied = d.Uvarint("sequence applied")
	s.ackedApplied = s.applied
	for n := d.Count("terminals"); n > 0 && d.Err == nil; n-- {
		t, c := d.String("terminal id"), d.String("terminal's call")
		s.terminals[t] = c
	}
	for n := d.Count("asks"); n > 0 && d.Err == nil; n-- {
		id, a := d.String("ask id"), ask{callID: d.String("ask's call")}
		for m := d.Count("reject options"); m > 0 && d.Err == nil; m-- {
			a.reject = append(a.reject, d.String("reject option"))
		}
		s.asks[id] = a
	}
	if format >= 2 {
		ss.restoreTerms(s, d)
	}
	if format >= 3 {
		// The dialect is bound to the build again.
		s.learnVersion(d.String("agent version"))
	}
	if format >= 4 {
		// And to the client.
		caps := d.String("client capabilities")
		c, err := dialect.ParseClient([]byte(caps))
		if err != nil && d.Err == nil {
			return corrupt(err)
		}
		s.learnClient(c)
	}
	if format >= 5 {
		s.closed = d.Uvarint("sequence applied when closed")
	}
	if d.Err != nil {
		return corrupt(d.Err)
	}
	s.body = snap.Header[:len(snap.Header)-len(d.B)]
	s.touched = time.Unix(0, d.Varint("last used"))
	if d.Err != nil {
		return corrupt(d.Err)
	}
	if len(d.B) != 0 {
		return fmt.Errorf("%w: session header: %d bytes left over", errCorrupt, len(d.B))
	}
	s.storedTouched = s.touched
	ss.chargeState(s)

	type buried struct {
		seq  uint64
		call string
		tomb tomb
	}
	var tombs []buried
	for name, rec := range snap.Records {
		switch {
		case strings.HasPrefix(name, "c:"):
			id := name[2:]
			e, err := decodeEntry(id, rec, snap.Streams)
			if err != nil {
				clear(s.calls) // nothing was counted yet
				return err
			}
			s.calls[id] = e
			s.stored[id] = true
		case strings.HasPrefix(name, "t:"):
			seq, err := strconv.ParseUint(name[2:], 10, 64)
			if err != nil {
				clear(s.calls)
				return fmt.Errorf("%w: record %q", errCorrupt, name)
			}
			call, tb, err := decodeTomb(rec)
			if err != nil {
				clear(s.calls)
				return err
			}
			tombs = append(tombs, buried{seq, call, tb})
		default:
			if ok, err := restoreExtra(s, name, rec); ok { // see loss.go
				if err != nil {
					clear(s.calls)
					return err
				}
				continue
			}
			clear(s.calls)
			return fmt.Errorf("%w: unknown record %q", errCorrupt, name)
		}
	}
	for name, size := range snap.Sizes {
		if ok, err := restoreAnswer(s, name, size); !ok || err != nil {
			clear(s.calls)
			return cmp.Or(err, fmt.Errorf("%w: unknown record %q", errCorrupt, name))
		}
	}
	s.sortAnswers()
	// The tombstone records are numbered tombFirst, tombFirst+1, ...,
	// tombNext-1: anything else is corrupt (and would make persist's
	// trimming loop over numbers no record has).
	slices.SortFunc(tombs, func(a, b buried) int { return cmp.Compare(a.seq, b.seq) })
	if len(tombs) == 0 && s.tombFirst > s.tombNext ||
		len(tombs) > 0 && (tombs[0].seq != s.tombFirst || tombs[len(tombs)-1].seq+1 != s.tombNext || uint64(len(tombs)) != s.tombNext-s.tombFirst) {
		clear(s.calls)
		return fmt.Errorf("%w: the session's tombstones are not numbered %d to %d", errCorrupt, s.tombFirst, s.tombNext)
	}
	if len(tombs) == 0 {
		s.tombFirst = s.tombNext
	}
	n := len(s.calls)
	ss.total.Add(int64(n))
	s.space.calls.Add(int64(n))
	ss.hooks.callsOpened(n)
	for _, e := range s.calls {
		ss.settle(s, e, 0)
	}
	for _, t := range tombs {
		ss.tombs.add(s.key, t.call, t.tomb)
	}
	return nil
}

// sortedKeys returns the keys of m in order, in buf's array when they fit.
func sortedKeys[V any](m map[string]V, buf []string) []string {
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// maxScratch bounds each array a session keeps between commits to encode
// the next one into (see persist): a bigger header or set of records (a
// client terminal's output, a long command) is encoded afresh each time
// rather than held, so the arrays add at most 8 KiB to a cached session
// (the headers and records of the recordings are a few hundred bytes).
const maxScratch = 4 << 10

// keepScratch is b's array to encode into again, or nil when it is too
// big to hold between commits.
func keepScratch(b []byte) []byte {
	if cap(b) > maxScratch {
		return nil
	}
	return b[:0]
}

// encodeBody writes the session header but for its last field, when the
// session was last used.
func (s *session) encodeBody(b []byte) []byte {
	b = append(b, headerFormat)
	name := ""
	if s.dialect != nil {
		name = s.name
	}
	b = wire.AppendString(b, name)
	b = wire.AppendBool(b, s.explicit)
	b = wire.AppendBool(b, s.named)
	b = wire.AppendBool(b, s.cwdByHand)
	b = wire.AppendBool(b, s.cancel)
	b = wire.AppendString(b, s.cwd)
	b = wire.AppendUvarint(b, s.created)
	b = wire.AppendUvarint(b, s.tombFirst)
	b = wire.AppendUvarint(b, s.tombNext)
	b = wire.AppendUvarint(b, s.applied)
	// In key order, so that the same state encodes to the same bytes (a
	// request that changed nothing then commits nothing).
	var buf [16]string // sorted keys, without an allocation when they fit
	b = wire.AppendUvarint(b, uint64(len(s.terminals)))
	for _, t := range sortedKeys(s.terminals, buf[:]) {
		b = wire.AppendString(wire.AppendString(b, t), s.terminals[t])
	}
	b = wire.AppendUvarint(b, uint64(len(s.asks)))
	for _, id := range sortedKeys(s.asks, buf[:]) {
		a := s.asks[id]
		b = wire.AppendString(wire.AppendString(b, id), a.callID)
		b = wire.AppendUvarint(b, uint64(len(a.reject)))
		for _, o := range a.reject {
			b = wire.AppendString(b, o)
		}
	}
	b = s.appendTerms(b)
	b = wire.AppendString(b, s.agent.Raw())
	b = wire.AppendString(b, s.client.Raw())
	return wire.AppendUvarint(b, s.closed)
}

func encodeEntry(b []byte, e *entry) []byte {
	b = append(b, entryFormat)
	b = wire.AppendUvarint(b, e.order)
	var ended int64
	if !e.endedAt.IsZero() {
		ended = e.endedAt.UnixNano()
	}
	b = wire.AppendVarint(b, ended)
	b = wire.AppendUvarint(b, uint64(e.revisions))
	b = append(b, byte(e.outcome))
	return e.call.AppendState(b)
}

func decodeEntry(id string, rec []byte, streams map[string][]byte) (*entry, error) {
	d := newReader(rec, "record of tool call "+strconv.Quote(id), entryFormat)
	e := &entry{order: d.Uvarint("order")}
	if ended := d.Varint("ended at"); ended != 0 {
		e.endedAt = time.Unix(0, ended)
	}
	e.revisions = uint32(d.Size("revisions", math.MaxUint32))
	e.outcome = accum.Outcome(d.Byte("outcome"))
	if d.Err != nil {
		return nil, corrupt(d.Err)
	}
	var texts [accum.NumStreams][]byte
	for i := range texts {
		texts[i] = streams[streamName(id, i)]
	}
	call, err := accum.RestoreCall(d.B, texts)
	if err != nil {
		return nil, corrupt(fmt.Errorf("tool call %q: %w", id, err))
	}
	if call.ID() != id {
		return nil, fmt.Errorf("%w: record of tool call %q holds call %q", errCorrupt, id, call.ID())
	}
	e.call = call
	e.acked = e.revisions
	return e, nil
}

func encodeTomb(b []byte, call string, tb tomb) []byte {
	b = append(b, tombFormat)
	b = wire.AppendString(b, call)
	b = append(b, byte(tb.why), byte(tb.outcome))
	b = wire.AppendVarint(b, int64(tb.after))
	return wire.AppendUvarint(b, uint64(tb.revisions))
}

func decodeTomb(rec []byte) (string, tomb, error) {
	d := newReader(rec, "tombstone", tombFormat)
	call := d.String("call id")
	tb := tomb{why: released(d.Byte("why")), outcome: accum.Outcome(d.Byte("outcome"))}
	tb.after = time.Duration(d.Varint("after"))
	tb.revisions = uint32(d.Size("revisions", math.MaxUint32))
	if d.Err != nil {
		return "", tomb{}, corrupt(d.Err)
	}
	return call, tb, nil
}

// persist commits what the request changed in s (locked). It reports
// whether there was something to commit.
func (ss *sessions) persist(ctx context.Context, s *session) (bool, error) {
	ch := store.Change{TTL: 2 * ss.cfg.TTL}
	records := map[string][]byte{}
	// The calls' records are encoded one after the other into the
	// session's scratch array, which the store is done with once Commit
	// returns, as the header's (see below).
	recs := s.recScratch[:0]
	for id, e := range s.calls {
		if !e.dirty && s.stored[id] {
			continue
		}
		start := len(recs)
		recs = encodeEntry(recs, e)
		records[recordOfCall(id)] = recs[start:len(recs):len(recs)]
		for i, sy := range e.call.TakeSync() {
			if sy.Changed {
				ch.Streams = append(ch.Streams, store.StreamOp{Name: streamName(id, i), Data: sy.Data, Append: !sy.Replace})
			}
		}
	}
	for id := range s.stored {
		if s.calls[id] == nil {
			records[recordOfCall(id)] = nil
			for i := range accum.NumStreams {
				ch.Streams = append(ch.Streams, store.StreamOp{Name: streamName(id, i), Delete: true})
			}
		}
	}
	for _, t := range s.newTombs {
		records[recordOfTomb(s.tombNext)] = encodeTomb(nil, t.call, t.tomb)
		s.tombNext++
	}
	for s.tombNext-s.tombFirst > uint64(ss.cfg.MaxCallsPerSession) {
		records[recordOfTomb(s.tombFirst)] = nil
		s.tombFirst++
	}
	s.persistExtra(records)
	if s.finals != nil {
		// Before the close's commit: once it is applied, what it kept is
		// there to hand on.
		if err := ss.writeFinals(ctx, s); err != nil {
			return true, marked{fmt.Errorf("%w: %w (%w)", errStore, errFinalsNotKept, err), errNotApplied}
		}
		s.finals = nil
	}
	// The header is encoded into the session's scratch array, which the
	// store is done with once Commit returns (store: a Change's bytes are
	// copied or sent by then); body, the header but for its last field,
	// is kept (in s.body) only when it was committed.
	body := s.encodeBody(s.scratch[:0])
	header := wire.AppendVarint(body, s.touched.UnixNano())
	s.scratch, s.recScratch = keepScratch(header), keepScratch(recs)
	if len(records) == 0 && len(ch.Streams) == 0 && bytes.Equal(body, s.body) && s.touched.Sub(s.storedTouched) < ss.cfg.TTL/4 && s.version != 0 {
		return false, nil // nothing changed, and the store knows the session is in use
	}
	ch.Header, ch.Records = header, records
	start := time.Now()
	v, err := ss.store.Commit(ctx, s.key, s.version, &ch)
	ss.hooks.storeOp("commit", start, err)
	if errors.Is(err, store.ErrConflict) {
		return true, err
	}
	if err != nil {
		return true, fmt.Errorf("%w: committing session %q: %w", errStore, s.id, err)
	}
	s.version, s.body, s.storedTouched = v, append(s.body[:0], body...), s.touched
	s.ackedApplied = s.applied
	for id := range s.stored {
		if s.calls[id] == nil {
			delete(s.stored, id)
		}
	}
	for id, e := range s.calls {
		e.dirty, e.acked = false, e.revisions
		s.stored[id] = true
	}
	s.committedExtra()
	for _, t := range s.newTombs {
		ss.tombs.add(s.key, t.call, t.tomb)
	}
	s.newTombs = s.newTombs[:0]
	return true, nil
}

// current checks that the cached state of s, which a request used without
// changing it, was the store's: another replica may have changed the
// session since, and then the request is applied again on the new state.
func (ss *sessions) current(ctx context.Context, s *session) error {
	start := time.Now()
	v, err := ss.store.Version(ctx, s.key)
	if err == nil && v != s.version {
		err = store.ErrConflict
	}
	ss.hooks.storeOp("version", start, err)
	switch {
	case errors.Is(err, store.ErrConflict):
		return err
	case err != nil:
		return marked{fmt.Errorf("%w: checking session %q: %w", errStore, s.id, err), errNotApplied}
	}
	return nil
}

// uncache drops a session (locked) from the cache without touching the
// store: the next request of the session loads it again.
func (ss *sessions) uncache(s *session) {
	if s.gone {
		return
	}
	ss.mu.Lock()
	ss.remove(s)
	ss.mu.Unlock()
	ss.hooks.sessions(-1)
	s.gone = true
	if h := s.handed; h != nil {
		ss.handed.add(s.key, *h) // no request checked it: the next load does
	}
	for _, e := range s.calls {
		ss.unhold(s, e)
	}
	n := len(s.calls)
	s.calls = map[string]*entry{}
	ss.unholdKept(s)
	if n > 0 {
		ss.total.Add(int64(-n))
		s.space.calls.Add(int64(-n))
		ss.hooks.callsOpened(-n)
	}
}

// release ends a request of a locked session: with a store it commits
// what the request changed first (see persist), and unlocks the session.
// Within a batch it keeps the session for the batch's next frame.
func (ss *sessions) release(s *session, r *reply) {
	if r.batch {
		r.kept = s // the batch's next frame goes on with it; see batch
		return
	}
	defer s.unlock()
	if ss.store == nil {
		return
	}
	s.loadedRecords = nil // what this request loaded: the next loads its own
	if !s.gone {
		ss.buryPast(s, ss.now())
	}
	if len(r.fresh) > 0 {
		s.keepAnswers(r.held, r.fresh) // committed with the request (see loss.go)
	}
	committed, err := ss.persist(r.req.ctx, s)
	if !committed && !s.loaded && !r.inert {
		err = ss.current(r.req.ctx, s)
	}
	if err == nil && !committed && r.again && ss.confirm != nil {
		// Answered as applied from what the store holds, with no commit
		// of its own (whose acknowledgement would cover the earlier
		// ones): the commit that applied it may be one the store did
		// not acknowledge (the request was refused then, and is sent
		// again), which a failover would lose. It is answered only once
		// the store confirms it, and refused as the first time else.
		start := time.Now()
		err = ss.confirm.Confirm(r.req.ctx, s.key)
		ss.hooks.storeOp("confirm", start, err)
		if err != nil {
			err = marked{fmt.Errorf("%w: confirming session %q, which applied it before: %w", errStore, s.id, err), errUnsure}
		}
	}
	loaded := s.loaded
	s.loaded = false
	switch {
	case err == nil:
		if !s.gone {
			ss.letGoClosed(s, r)
		}
		if s.gone {
			return
		}
	case errors.Is(err, store.ErrConflict):
		r.conflict = true
		if ss.now().Sub(s.storedTouched) < ss.cfg.TTL {
			// What this cache handed on: the state loaded next must not
			// be older (see loss.go).
			r.req.before = mergeHeld(r.req.before, s.ackedRevisions())
			r.req.beforeSeq = max(r.req.beforeSeq, s.ackedApplied)
		}
	default:
		r.storeFailed(err)
	}
	if err != nil {
		if !errors.Is(err, store.ErrConflict) && ss.now().Sub(s.storedTouched) < ss.cfg.TTL {
			// The store failed (a master dying, say): what comes back may
			// be older than what this cache handed on (see loss.go).
			revs, applied := s.ackedRevisions(), s.ackedApplied
			if loaded {
				// Loaded by this request, which hands nothing on: the
				// cache handed on what it knew before (checked against
				// the store by lost; what no request checked goes back
				// with the session, see uncache), not what it loaded,
				// which may hold commits the store never acknowledged.
				// A failover that loses those loses nothing answered.
				revs, applied = maps.Clone(r.req.before), r.req.beforeSeq
			}
			ss.handed.put(s.key, revs, applied, ss.now())
		}
		ss.uncache(s)
	}
}

// buryPast releases the ended calls of s past their grace period, leaving
// a tombstone for each.
func (ss *sessions) buryPast(s *session, now time.Time) {
	past := ss.pastGrace(s, now)
	for _, e := range past {
		ss.bury(s, e.call.ID(), e, releasedGrace)
		ss.unhold(s, e)
		ss.forgetCall(s, e.call.ID())
	}
	ss.forget(s, len(past), "grace")
}

// expireLoaded releases every call of a session loaded after more than the
// TTL idle, as the sweeper does without a store, and starts it afresh.
func (ss *sessions) expireLoaded(s *session) {
	list := s.inOrder(func(*entry) bool { return true })
	for _, e := range list {
		ss.bury(s, e.call.ID(), e, releasedIdle)
		ss.unhold(s, e)
	}
	s.calls = map[string]*entry{}
	ss.unholdKept(s)
	s.reset()
	ss.forget(s, len(list), "ttl")
}
