package normalize

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpnorm/acpnorm/internal/wire"
	"github.com/acpnorm/acpnorm/store"
)

// Losses and answers kept with the session.
//
// A store can lose commits it confirmed: a Redis replica promoted while
// behind its master holds an older state of the session, or none. Versions
// alone cannot tell: a store that counts them gives the lost numbers to
// new commits again (the Redis store does not, but an acpnormd that never
// cached the session has no number to compare). What can tell is what was
// handed on: the revisions a caller
// holds of each call (WithHeld), or the revisions this Normalizer handed
// on from its cache before a conflict made it load the session again.
// When the session holds fewer revisions of a call than that (and the call
// was not released, leaving a tombstone), the session went back: the
// request gives a FrameError DataLoss and is not applied, the session
// remembers, per call, the revision the caller holds (its floor), and the
// Hooks.DataLoss counter counts it. Revisions at or below a call's floor
// are then not handed on again, but for an ENDED one, which is renumbered
// above the floor (a skew kept for the call's later revisions); the first
// revision handed on above it carries every text whole. So a caller that
// rebuilds the session by sending its frames again from the first sees
// no call go back, and ends with the same finals. An ENDED revision
// numbered exactly at the floor is the one the caller holds (the same
// frames make the same revisions) and is not handed on again either; the
// answers kept for frames the store still has (sent again, see below)
// hand on nothing at or below a floor.
//
// Answers: with WithSkipApplied and a store, the events each frame made
// (its revisions and FrameErrors) are committed with the frame, as records
// of the session, so that a frame sent again after it was applied is
// answered with them, in order, by any Normalizer sharing the store,
// instead of AlreadyExists with none (within maxAnswers frames and
// maxAnswerBytes per session, and the session's own expiry).
//
// Both live in records of their own: "l" (the floors) and "a:" and a
// sequence (one frame's answer), so the session header is unchanged.

// Bounds of the answers kept per session, and of a held claim.
const (
	maxAnswers     = 64
	maxAnswerBytes = 256 << 10
	lossFormat     = 1
	answerFormat   = 1
	answerRemade   = 2 // an answer too large to keep: see remade
	recordOfLoss   = "l"
	answerPrefix   = "a:"
	maxLossNamed   = 16 // calls a DataLoss message names one by one
)

// MaxHeldRevision is the highest revision number a caller may say it
// holds of a call (WithHeld). No call gets near it, and it leaves room
// above any floor for the revisions that follow it, so a revision handed
// on never wraps around to 0 and goes back.
const MaxHeldRevision = 1 << 31

// floor is what a caller is known to hold of a call whose stored state
// went back: revisions numbered at or below floor are not handed on again
// (floor 0: passed), and skew is added to the call's own revision numbers
// (see lift).
type floor struct {
	floor, skew uint32
}

// extra is the state of a session that most sessions never need: its
// floors, and the sequences whose answers the store keeps.
type extra struct {
	floors map[string]floor
	// unkept says that a DataLoss could not keep the floors of some of
	// the calls it named (past a bound, see floorRoom): the next claim
	// is not refused again for them (see lost).
	unkept      bool
	floorsDirty bool // to commit
	floorsKept  bool // the store has a record of them
	answers     []answerRef
	answerBytes int
	newAnswers  []answerRef // to commit, with their bytes
	// stale lists answers of a closed session started again (see
	// reopen), whose records the next commit deletes.
	stale []answerRef
}

type answerRef struct {
	seq  uint64
	size int
	data []byte // only until committed
}

func (s *session) more() *extra {
	if s.x == nil {
		s.x = &extra{}
	}
	return s.x
}

func recordOfAnswer(seq uint64) string { return answerPrefix + strconv.FormatUint(seq, 10) }

// heldOf is the highest revision of call id that s knows was handed on:
// its revisions, its tombstone's, or its floor.
func (ss *sessions) heldOf(s *session, id string) (uint32, bool) {
	var n uint32
	known := false
	if e := s.calls[id]; e != nil {
		n, known = e.revisions, true
	}
	if tb, ok := ss.tombOf(s, id); ok {
		n, known = max(n, tb.revisions), true
	}
	if s.x != nil {
		if f, ok := s.x.floors[id]; ok && f.floor > 0 {
			n, known = max(n, f.floor), true
		}
	}
	return n, known
}

// released reports whether a call s knows nothing of may be one it
// released so long ago that its tombstone is gone (the session keeps at
// most MaxCallsPerSession): then a missing call proves no loss.
func (s *session) released() bool { return s.tombFirst > 0 }

// lost checks a locked session against what the request says is held of
// it (WithHeld), and what this Normalizer handed on of it before a
// conflict or a store error made it load the session again.
// When the session went back it answers DataLoss, records the floors, and
// reports true: the frame is not applied.
func (ss *sessions) lost(s *session, r *reply, what string) bool {
	if r.lossFound {
		r.fail(DataLoss, "", "%s %d of session %q was not applied: the session lost state (see the DATA_LOSS before it)", what, r.seq, s.id)
		return true
	}
	if r.claimRefused {
		r.fail(InvalidArgument, "", "%s %d of session %q was not applied: what it says it holds was refused (see the INVALID_ARGUMENT before it)", what, r.seq, s.id)
		return true
	}
	if r.lossChecked || len(r.req.held) == 0 && r.req.heldSeq == 0 && len(r.req.before) == 0 && r.req.beforeSeq == 0 && s.handed == nil {
		return false
	}
	r.lossChecked = true
	dropped := "" // why the session's stored state was deleted (see load)
	if h := s.handed; h != nil {
		// Kept with the request: a later attempt (after a conflict) checks
		// it again.
		s.handed = nil
		r.req.before = mergeHeld(r.req.before, h.revs)
		r.req.beforeSeq = max(r.req.beforeSeq, h.applied)
		dropped = h.dropped
	}
	if id, n, ok := beyondHeld(r.req.held, ss.cfg.MaxIDBytes); ok {
		r.fail(InvalidArgument, "", "%s %d of session %q says it holds revision %d of call %q, more than a call can have (at most %d); it was not applied", what, r.seq, s.id, n, id, uint32(MaxHeldRevision))
		r.claimRefused = true // the rest of a batch is not applied either
		return true
	}
	held, unchecked := ss.checkedClaims(s, r.req.held)
	type gone struct {
		id         string
		held, have uint32
		known      bool
	}
	var lost []gone
	// After a DataLoss that could not keep the floors of some calls, the
	// claims of calls without a floor are taken as they are, once (until
	// a check passes): they are the rebuild's, which states the same claim
	// again on its first frame, and no floor can ever say they were
	// handed on. Refused, the session could never be repaired (the
	// session clients give up after a few DataLoss in a row); the
	// DataLoss said that their revisions may be sent again.
	excused := 0
	check := func(claims map[string]uint32) {
		for id, n := range claims {
			if n == 0 || len(id) > ss.cfg.MaxIDBytes {
				continue
			}
			if have, known := ss.heldOf(s, id); have < n && (known || !s.released()) {
				if _, floored := s.x.floorOf(id); s.x != nil && s.x.unkept && !floored {
					excused++
					continue
				}
				lost = append(lost, gone{id, n, have, known})
			}
		}
	}
	check(held)
	check(r.req.before)
	// The sequences answered: a session that applied fewer lost commits,
	// even ones that made no revision (WithHeldSequence). It counts them
	// only with skipped applied sequences. A session closed keeps the
	// sequence it had applied (closed): a claim at or below it is no loss.
	// One expired (past its TTL) starts afresh, at applied 0: one that
	// released calls so (it has tombstones) is no loss, as its released
	// calls count as held; one that never had a call cannot tell (a client
	// states the sequence only of sessions it has not closed).
	// The same holds for the sequence this process had committed of the
	// session, before a conflict or a store error made it load it again.
	claim := r.req.beforeSeq
	if r.req.skipApplied {
		claim = max(claim, r.req.heldSeq)
	}
	// A closed session's sequences count as applied (see skip).
	seqLost := claim > s.applied && claim > s.closed && (s.applied > 0 || s.tombNext == 0 && !ss.tombs.anyOf(s.key))
	if len(lost) == 0 && !seqLost && dropped == "" {
		if s.x != nil && s.x.unkept && (excused > 0 || len(r.req.held) > 0) {
			s.x.unkept, s.x.floorsDirty = false, true // a claim passed: the next is checked whole
		}
		return false
	}
	// The same call can be named twice (by the caller and the cache): the
	// higher claim counts.
	slices.SortFunc(lost, func(a, b gone) int {
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return int(int64(b.held) - int64(a.held))
	})
	lost = slices.CompactFunc(lost, func(a, b gone) bool { return a.id == b.id })
	x := s.more()
	if x.floors == nil {
		x.floors = map[string]floor{}
	}
	notKept := 0
	for _, l := range lost {
		f, ok := x.floors[l.id]
		if !ok && len(x.floors) >= 4*ss.cfg.MaxCallsPerSession {
			notKept++
			ss.refused(r, LimitLossFloorsPerSession)
			continue
		}
		if !ok && !ss.floorRoom(s) {
			notKept++
			ss.refused(r, LimitLossFloors)
			continue
		}
		if !ok && !s.gone {
			ss.countFloors(s, 1)
		}
		f.floor = l.held
		x.floors[l.id] = f
		x.floorsDirty = true
	}
	if notKept > 0 {
		x.unkept, x.floorsDirty = true, true // see check
	}
	var b strings.Builder
	if dropped != "" {
		// Whatever the caller holds, the session lost it: its claims
		// above are the floors.
		fmt.Fprintf(&b, "its stored state did not decode (%s) and was deleted", dropped)
		if len(lost) > 0 || seqLost {
			b.WriteString("; ")
		}
	}
	for i, l := range lost {
		if i == maxLossNamed {
			fmt.Fprintf(&b, "; and %d more calls", len(lost)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		have := "none (the call is missing)"
		if l.known {
			have = "revision " + strconv.FormatUint(uint64(l.have), 10)
		}
		fmt.Fprintf(&b, "call %q: revision %d was handed on, the session has %s", l.id, l.held, have)
	}
	if seqLost {
		if len(lost) > 0 {
			b.WriteString("; ")
		}
		have := "no sequence (the session is missing or lost every frame)"
		if s.applied > 0 {
			have = "applied sequences up to " + strconv.FormatUint(s.applied, 10)
		}
		fmt.Fprintf(&b, "sequence %d was answered, the session has %s", claim, have)
	}
	if unchecked > 0 {
		fmt.Fprintf(&b, "; %d more calls the claim names were not checked (a claim is checked for at most %d calls, 2 × --max-calls-per-session: the ones the session has first, then by id), and their revisions at or below it may be sent again", unchecked, 2*ss.cfg.MaxCallsPerSession)
	}
	if notKept > 0 {
		fmt.Fprintf(&b, "; the numbers of %d of these calls were not kept (a session keeps them for at most %d calls, 4 × --max-calls-per-session, and the process for %d, 4 × --max-calls, each identity its share of them): their revisions at or below them may be sent again, and the next claim of them (the rebuild's first frame) is taken as it is", notKept, 4*ss.cfg.MaxCallsPerSession, ss.maxFloors())
	}
	r.lossFound = true
	head, tail := "lost state in the store", ""
	if ss.store == nil {
		head, tail = "holds less than the client says was handed on", ", and this process keeps sessions in its memory only (no store), which a restart empties"
	}
	r.fail(DataLoss, "", "session %q %s (%s)%s; %s %d was not applied. Send the session's frames again from the first, with skipped applied sequences, to rebuild it: revisions of these calls at or below those numbers are not sent again", s.id, head, b.String(), tail, what, r.seq)
	return true
}

// checkedClaims returns the part of a claim (WithHeld) that lost checks,
// and how many calls it names that are left out. A conforming caller
// names every call it holds, the released ones too (they count as held),
// so its claim grows with the session's history, past the calls a
// session holds at once: refused, its frame was not applied, and a
// caller that took the refusal for an answer (as for any frame applied)
// lost the frame. A claim is checked for at most 2 × MaxCallsPerSession
// calls, which bounds the work and the floors one claim makes: the calls
// the session has, or keeps a floor of, first (a loss shows in them),
// then the others by id, so that every Normalizer checks the same ones.
// The others are calls the session released (which count as held) or
// never had: when it lost everything, the ones checked show the loss, and
// the DataLoss says how many were not checked.
//
// The others are selected with a heap of the bound smallest ids seen, not
// by sorting them all: a claim of n calls costs O(n log bound), and what
// it keeps is bounded whatever n (the service bounds n too).
func (ss *sessions) checkedClaims(s *session, claims map[string]uint32) (map[string]uint32, int) {
	bound := 2 * ss.cfg.MaxCallsPerSession
	if len(claims) <= bound {
		return claims, 0
	}
	var own []string // at most the session's calls and floors
	others := make(idHeap, 0, bound)
	named := 0
	for id, n := range claims {
		if n == 0 || len(id) > ss.cfg.MaxIDBytes {
			continue // names no call (see lost)
		}
		named++
		if _, floored := s.x.floorOf(id); s.calls[id] != nil || floored {
			own = append(own, id)
		} else {
			others.keep(id, bound)
		}
	}
	if named <= bound {
		return claims, 0
	}
	slices.Sort(own)
	ids := own[:min(len(own), bound)]
	if need := bound - len(ids); need > 0 {
		slices.Sort(others)
		ids = append(ids, others[:need]...)
	}
	checked := make(map[string]uint32, bound)
	for _, id := range ids {
		checked[id] = claims[id]
	}
	return checked, named - bound
}

// idHeap is a max-heap of ids: the largest first. It goes through
// container/heap's Init and Fix only, never Push or Pop, which would box
// each id in an interface (an allocation per id of a claim).
type idHeap []string

func (h idHeap) Len() int           { return len(h) }
func (h idHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h idHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *idHeap) Push(any)          { panic("idHeap: Push") }
func (h *idHeap) Pop() any          { panic("idHeap: Pop") }

// keep adds id to h when h holds fewer than bound ids, or in place of
// its largest when id is smaller: h then holds the bound smallest ids
// it was given (a heap once it holds bound of them).
func (h *idHeap) keep(id string, bound int) {
	if len(*h) < bound {
		*h = append(*h, id)
		if len(*h) == bound {
			heap.Init(h)
		}
		return
	}
	if bound == 0 || id >= (*h)[0] {
		return
	}
	(*h)[0] = id
	heap.Fix(h, 0)
}

// beyondHeld finds a claim of a revision above MaxHeldRevision (the
// first by call id, for a message that does not depend on map order),
// among the calls whose ids could be ones (at most maxID bytes; longer
// ones name no call and are passed over).
func beyondHeld(claims map[string]uint32, maxID int) (string, uint32, bool) {
	var id string
	var n uint32
	found := false
	for c, k := range claims {
		if k > MaxHeldRevision && len(c) <= maxID && (!found || c < id) {
			id, n, found = c, k, true
		}
	}
	return id, n, found
}

// maxFloors bounds the floors the cached sessions hold together: a
// hostile client stating that it holds calls none of its sessions has
// makes each session keep a floor per call it names (up to 4 ×
// MaxCallsPerSession), which no other limit counts.
func (ss *sessions) maxFloors() int { return 4 * ss.cfg.MaxCalls }

// floorRoom reports whether session s may keep a floor more: while the
// cached sessions hold fewer than maxFloors, and past it while its
// namespace holds fewer than its share (maxFloors over the namespaces
// holding floors, its own counted) and the process fewer than twice
// maxFloors. So one namespace (an identity of the service) that fills
// the floors with claims of calls that never existed never keeps another
// from its share, as with the tombstones (see tombstones), which evict;
// floors are kept in their sessions, which another request cannot
// change, so the share is kept by going past the bound instead, up to
// twice it.
func (ss *sessions) floorRoom(s *session) bool {
	limit := int64(ss.maxFloors())
	total := ss.floors.Load()
	if total < limit {
		return true
	}
	mine, spaces := s.space.floors.Load(), ss.floorSpaces.Load()
	if mine == 0 {
		spaces++
	}
	return total < 2*limit && mine < limit/max(spaces, 1)
}

// countFloors adds n to the floors counted for the cached session s: for
// the process, and for its namespace (see floorRoom).
func (ss *sessions) countFloors(s *session, n int) {
	if n == 0 {
		return
	}
	ss.floors.Add(int64(n))
	now := s.space.floors.Add(int64(n))
	switch was := now - int64(n); {
	case was <= 0 && now > 0:
		ss.floorSpaces.Add(1)
	case was > 0 && now <= 0:
		ss.floorSpaces.Add(-1)
	}
}

// floorOf returns the floor of call id, if x keeps one.
func (x *extra) floorOf(id string) (floor, bool) {
	if x == nil {
		return floor{}, false
	}
	f, ok := x.floors[id]
	return f, ok
}

// lift applies a call's floor and skew to the number of the revision
// about to be handed on, and reports whether it is (false: the caller
// holds it already) and whether it must carry every text whole.
func (ss *sessions) lift(s *session, e *entry, number *uint32, ended bool) (send, whole bool) {
	id := e.call.ID()
	f, ok := s.x.floors[id]
	if !ok {
		return true, false
	}
	n := *number + f.skew
	*number = n
	if f.floor > 0 {
		if n <= f.floor && !ended {
			return false, false
		}
		if n == f.floor { // the ENDED revision the caller holds: a rebuild makes the same revisions
			f.floor = 0
			s.x.floors[id] = f
			s.x.floorsDirty = true
			return false, false
		}
		if n < f.floor { // an end the caller has not seen: above what it holds
			f.skew += f.floor + 1 - n
			n = f.floor + 1
		}
		f.floor, whole = 0, true // passed: this revision is the first above it
		s.x.floorsDirty = true
		if f.skew == 0 {
			delete(s.x.floors, id)
			if !s.gone {
				ss.countFloors(s, -1)
			}
		} else {
			s.x.floors[id] = f
		}
	}
	*number = n
	return true, whole
}

// ackedRevisions lists the revisions of each call of s as last committed:
// what was handed on of it.
func (s *session) ackedRevisions() map[string]uint32 {
	m := make(map[string]uint32, len(s.calls))
	for id, e := range s.calls {
		if e.acked > 0 {
			m[id] = e.acked
		}
	}
	return m
}

// encodeFloors writes the floors, and unkept (see extra) as a floor 0 of
// the call id "", which no call has: a build that predates it reads a
// floor that changes nothing.
func encodeFloors(fs map[string]floor, unkept bool) []byte {
	b := []byte{lossFormat}
	n := len(fs)
	if unkept {
		n++
		b = wire.AppendUvarint(b, uint64(n))
		b = wire.AppendString(b, "")
		b = wire.AppendUvarint(wire.AppendUvarint(b, 0), 0)
	} else {
		b = wire.AppendUvarint(b, uint64(n))
	}
	for _, id := range slices.Sorted(maps.Keys(fs)) {
		f := fs[id]
		b = wire.AppendString(b, id)
		b = wire.AppendUvarint(wire.AppendUvarint(b, uint64(f.floor)), uint64(f.skew))
	}
	return b
}

func decodeFloors(rec []byte) (map[string]floor, bool, error) {
	d := newReader(rec, "record of lost calls", lossFormat)
	fs := map[string]floor{}
	unkept := false
	for n := d.Count("calls"); n > 0 && d.Err == nil; n-- {
		id := d.String("call id")
		f := floor{floor: uint32(d.Size("floor", 1<<32-1)), skew: uint32(d.Size("skew", 1<<32-1))}
		if id == "" {
			unkept = true
			continue
		}
		fs[id] = f
	}
	if d.Err != nil {
		return nil, false, corrupt(d.Err)
	}
	return fs, unkept, nil
}

// restoreExtra reads a record of this file into s; it reports false for
// a record that is not one.
func restoreExtra(s *session, name string, rec []byte) (bool, error) {
	switch {
	case name == recordOfLoss:
		fs, unkept, err := decodeFloors(rec)
		if err != nil {
			return true, err
		}
		x := s.more()
		x.floors, x.unkept, x.floorsKept = fs, unkept, true
		return true, nil
	case strings.HasPrefix(name, answerPrefix):
		return restoreAnswer(s, name, len(rec))
	}
	return false, nil
}

// restoreAnswer restores the reference to an answer kept (a record
// named answerPrefix and the frame's sequence, of size bytes), and
// reports whether name is one.
func restoreAnswer(s *session, name string, size int) (bool, error) {
	if !strings.HasPrefix(name, answerPrefix) {
		return false, nil
	}
	seq, err := strconv.ParseUint(name[len(answerPrefix):], 10, 64)
	if err != nil {
		return true, fmt.Errorf("%w: record %q", errCorrupt, name)
	}
	x := s.more()
	x.answers = append(x.answers, answerRef{seq: seq, size: size})
	x.answerBytes += size
	return true, nil
}

// sortAnswers orders the answers restored (map order) by sequence.
func (s *session) sortAnswers() {
	if s.x != nil {
		slices.SortFunc(s.x.answers, func(a, b answerRef) int { return cmpU64(a.seq, b.seq) })
	}
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// keepAnswers takes, from the events a request made, one answer per
// frame it applied (fresh: their sequences, in order) for the next
// commit: the events of the frame, or none (a record of one byte), so
// that a frame sent again is answered as it was.
func (s *session) keepAnswers(events []Event, fresh []uint64) {
	byFrame := map[uint64][]Event{}
	for _, ev := range events {
		q := eventSeq(ev)
		if ev.Error != nil && (ev.Error.Code == AlreadyExists || ev.Error.Code == DataLoss || ev.Error.Code == Unavailable) {
			continue
		}
		byFrame[q] = append(byFrame[q], ev)
	}
	x := s.more()
	for _, q := range fresh {
		rec := []byte{answerFormat}
		if evs := byFrame[q]; len(evs) > 0 {
			data, err := json.Marshal(evs)
			if err == nil && len(data)+1 > maxAnswerBytes {
				// Too large (a long output, whole in an ENDED revision):
				// kept as what to make again from the calls' state.
				rec = []byte{answerRemade}
				data, err = json.Marshal(remadeOf(evs))
			}
			if err != nil || len(data)+1 > maxAnswerBytes {
				continue // not kept: sent again, it is ALREADY_EXISTS
			}
			rec = append(rec, data...)
		}
		x.newAnswers = append(x.newAnswers, answerRef{seq: q, size: len(rec), data: rec})
	}
}

func eventSeq(ev Event) uint64 {
	if ev.ShellExec != nil {
		return ev.ShellExec.Sequence
	}
	if ev.Error != nil {
		return ev.Error.Sequence
	}
	return 0
}

// persistExtra adds what this file keeps to a commit's records.
func (s *session) persistExtra(records map[string][]byte) {
	x := s.x
	if x == nil {
		return
	}
	if x.floorsDirty {
		if len(x.floors) == 0 && !x.unkept {
			if x.floorsKept {
				records[recordOfLoss] = nil
			}
		} else {
			records[recordOfLoss] = encodeFloors(x.floors, x.unkept)
		}
	}
	for _, a := range x.newAnswers {
		records[recordOfAnswer(a.seq)] = a.data
	}
	// The oldest answers go when the new ones pass the bounds, the new
	// ones too when they pass them by themselves (a batch of frames with
	// large answers): such a one is not written, as committedExtra drops
	// it (the same walk), and a record written but not listed would stay
	// in the store, past the bounds, until the session goes.
	n, bytes := len(x.answers)+len(x.newAnswers), x.answerBytes
	for _, a := range x.newAnswers {
		bytes += a.size
	}
	for i := 0; i < len(x.answers)+len(x.newAnswers) && (n > maxAnswers || bytes > maxAnswerBytes); i++ {
		if i < len(x.answers) {
			a := x.answers[i]
			records[recordOfAnswer(a.seq)] = nil
			n--
			bytes -= a.size
			continue
		}
		a := x.newAnswers[i-len(x.answers)]
		delete(records, recordOfAnswer(a.seq))
		n--
		bytes -= a.size
	}
	for _, a := range x.stale {
		if _, written := records[recordOfAnswer(a.seq)]; !written {
			records[recordOfAnswer(a.seq)] = nil // not one of the new ones
		}
	}
}

// committedExtra records that the commit persistExtra added to was made.
func (s *session) committedExtra() {
	x := s.x
	if x == nil {
		return
	}
	if x.floorsDirty {
		x.floorsKept, x.floorsDirty = len(x.floors) > 0 || x.unkept, false
	}
	for _, a := range x.newAnswers {
		x.answers = append(x.answers, answerRef{seq: a.seq, size: a.size})
		x.answerBytes += a.size
	}
	x.newAnswers = x.newAnswers[:0]
	x.stale = nil
	drop := 0
	for drop < len(x.answers) && (len(x.answers)-drop > maxAnswers || x.answerBytes > maxAnswerBytes) {
		x.answerBytes -= x.answers[drop].size
		drop++
	}
	x.answers = slices.Delete(x.answers, 0, drop)
}

// maxKeptErrors bounds the FrameErrors a session without a store keeps
// to answer again (keepErrors).
const maxKeptErrors = 64

// keepErrors keeps the FrameErrors the frame r applied to s made, when
// there is no store to keep its answer (see storedAnswer): a frame sent
// again after its answer was lost (a connection cut) is answered with
// them again, not only AlreadyExists, so that what was wrong with it is
// still said. The last maxKeptErrors are kept.
func (ss *sessions) keepErrors(s *session, r *reply) {
	if ss.store != nil || len(r.errs) == 0 {
		return
	}
	s.keptErrs = append(s.keptErrs, r.errs...)
	if n := len(s.keptErrs) - maxKeptErrors; n > 0 {
		s.keptErrs = slices.Delete(s.keptErrs, 0, n)
	}
	r.errs = r.errs[:0]
}

// keptErrors hands on again the FrameErrors kept for frame r.seq of s.
func keptErrors(s *session, r *reply) {
	for _, fe := range s.keptErrs {
		if fe.Sequence == r.seq {
			r.send(Event{Error: fe, Again: true})
		}
	}
}

// storedAnswer hands on the answer the store keeps for frame seq of s (a
// frame applied before), and reports whether there was one.
func (ss *sessions) storedAnswer(s *session, r *reply) bool {
	if ss.store == nil || s.x == nil {
		return false
	}
	i := slices.IndexFunc(s.x.answers, func(a answerRef) bool { return a.seq == r.seq })
	if i < 0 {
		return false
	}
	if s.x.answers[i].size == 1 {
		return true // it made nothing: answered so, with no round trip
	}
	name := recordOfAnswer(r.seq)
	var rec []byte
	var err error
	switch p, ok := ss.store.(store.PartLoader); {
	case ok:
		rec, err = p.LoadRecord(r.req.ctx, s.key, name) // that answer alone
	case s.loadedRecords != nil:
		rec = s.loadedRecords[name] // loaded by this request (or batch): read once
	default:
		var snap *store.Snapshot
		if snap, err = ss.store.Load(r.req.ctx, s.key); err == nil {
			rec = snap.Records[name]
		}
	}
	if err != nil {
		r.fail(Unavailable, "", "%s %d of session %q was applied before, but its answer could not be read from the store: %v; it may be sent again", cmp.Or(r.what, "frame"), r.seq, s.id, err)
		return true
	}
	if len(rec) > 1 && rec[0] == answerRemade {
		return ss.remadeAnswer(s, r, rec[1:])
	}
	if len(rec) == 0 || rec[0] != answerFormat {
		return false
	}
	if len(rec) == 1 {
		return true // it made nothing
	}
	var evs []Event
	if err := json.Unmarshal(rec[1:], &evs); err != nil {
		return false
	}
	for _, ev := range evs {
		if x := ev.ShellExec; x != nil && s.x.floors[x.ToolCallID].floor >= x.Revision {
			continue // the caller holds it (see lost)
		}
		ev.Again = true
		r.send(ev)
	}
	return true
}

// remade is an answer kept without its texts, too large to keep whole:
// its FrameErrors, and the ENDED revisions it made, to be made again from
// their calls' state. (Its live revisions are not: the call's next
// revision on the stream the frame is sent again on carries every text
// whole.)
type remade struct {
	Error    *FrameError `json:",omitempty"`
	Call     string      `json:",omitempty"`
	Revision uint32      `json:",omitempty"`
}

func remadeOf(evs []Event) []remade {
	var out []remade
	for _, ev := range evs {
		switch {
		case ev.Error != nil:
			out = append(out, remade{Error: ev.Error})
		case ev.ShellExec != nil && ev.ShellExec.State == StateEnded:
			out = append(out, remade{Call: ev.ShellExec.ToolCallID, Revision: ev.ShellExec.Revision})
		}
	}
	return out
}

// remadeAnswer hands on a remade answer: each ENDED revision made again
// from its call, when the call is still held and made no revision since,
// or, for a call the session's close released, as the close kept it
// (see keepFinals).
func (ss *sessions) remadeAnswer(s *session, r *reply, data []byte) bool {
	var items []remade
	if err := json.Unmarshal(data, &items); err != nil {
		return false
	}
	var closed *keptFinals // loaded once, when a call was released
	loaded := false
	for _, it := range items {
		if it.Error != nil {
			r.send(Event{Error: it.Error, Again: true})
			continue
		}
		if r.holds(it.Call, it.Revision) || s.x.floors[it.Call].floor >= it.Revision {
			continue // the caller holds it
		}
		e := s.calls[it.Call]
		if e == nil {
			// Released since: by the session's close, which kept its
			// ENDED revision, or past its grace period (or the close
			// could not keep it): its final state went with it. Said,
			// not left for the caller to wait on.
			if !loaded && s.closed > 0 {
				loaded = true
				var err error
				if closed, err = ss.loadFinals(r.req.ctx, s.key, s.closed); err != nil {
					r.fail(Unavailable, "", "request %d of session %q was applied before, but what its close kept could not be read from the store: %v; it may be sent again", r.seq, s.id, err)
					return true
				}
			}
			if x := closed.find(it.Call, it.Revision); x != nil {
				c := *x
				c.Sequence = r.seq
				r.send(Event{ShellExec: &c, Again: true})
				continue
			}
			r.failRevision(it.Call, it.Revision, "the ENDED revision %d of tool call %q answered request %d of session %q, but the call has been released since (its session closed, or its grace period passed), an answer over %d bytes is kept only as what to make again from the call, and a close keeps the ENDED revisions it releases only for the grace period, at most %d bytes of them: it cannot be handed on again", it.Revision, it.Call, r.seq, s.id, maxAnswerBytes, maxClosedFinalBytes)
			continue
		}
		if e.revisions != it.Revision {
			continue // changed since: its next revision carries it
		}
		rev, ok := e.call.Final()
		if !ok {
			continue
		}
		rev.Number = e.revisions // as handed on (see lift)
		r.send(Event{ShellExec: s.toExec(&rev, r.seq), Again: true})
	}
	return true
}

// handOnMissed hands on again, for a frame applied before whose answer
// is not kept (the caller lost it: the stream broke after the frame was
// applied), the ENDED revision of the calls the frame is about (those a
// turn's end ended, for a turn's end sent again), and,
// when the caller says what it holds (WithHeld, or WithHeldSequence: a
// caller that had seen no revision yet names no call), of every other
// call of the session it holds an earlier revision of or does not name:
// nothing else would carry them again. A call the caller holds that
// revision of gets nothing, nor does a live call: its next revision, the
// first on the caller's new stream, carries every text whole. The calls
// go in the order they were opened; a revision handed on twice (by two
// frames sent again) is marked Again, and a consumer drops the second.
func (ss *sessions) handOnMissed(s *session, r *reply) {
	var missed []*entry
	seen := map[*entry]bool{} // a frame's call is the session's too
	add := func(id string, e *entry) {
		if held, named := r.req.held[id]; e != nil && !seen[e] && e.revisions > 0 && (!named || e.revisions > held) && e.call.Ended() {
			seen[e] = true
			missed = append(missed, e)
		}
	}
	for i := range r.frameObs {
		add(r.frameObs[i].ToolCallID, s.calls[r.frameObs[i].ToolCallID])
	}
	if r.seq != 0 && len(r.frameObs) == 0 {
		// A turn's end sent again: the calls it ended are what it is
		// about (a client sends no claims with it, only with a frame).
		for id, e := range s.calls {
			if e.endedBy == r.seq {
				add(id, e)
			}
		}
	}
	if (len(r.req.held) > 0 || r.req.heldSeq > 0) && !r.missedSent {
		r.missedSent = true
		for id, e := range s.calls {
			add(id, e)
		}
	}
	slices.SortFunc(missed, func(a, b *entry) int { return cmp.Compare(a.order, b.order) })
	for _, e := range missed {
		rev, ok := e.call.Final()
		if !ok {
			continue
		}
		rev.Number = e.revisions // as handed on (see lift)
		r.send(Event{ShellExec: s.toExec(&rev, r.seq), Again: true})
	}
}

// keptFinals are the ENDED revisions of the calls a session's close
// released, kept for the close or a frame of the session sent again:
// the close cannot know which of them reached the caller (a revision
// handed on may still die in the stream's queue with the stream, as may
// those of the turn's end before it), and the calls go with the session,
// so nothing else could make them again. Without a store they are kept
// with the closed session's mark (tombstones.keep); with one, apart (see
// writeFinals), for a request sent again whose answer is not kept whole
// (an answer over maxAnswerBytes is kept only as what to make again from
// the calls, which the close released). lost names the calls whose revision
// is not kept (over maxClosedFinalBytes, or, without a store, pushed out
// by later closes: see tombstones.keep), each with that revision's
// number.
type keptFinals struct {
	finals []*ShellExec
	lost   []lostFinal
	bytes  int       // of the finals' texts
	at     time.Time // when the close kept them (see tombstones.expire)
}

type lostFinal struct {
	call     string
	revision uint32
}

// maxClosedFinalBytes bounds the texts one close keeps (keptFinals).
const maxClosedFinalBytes = 8 << 20

// keepFinals returns what a close keeps of the ENDED revisions of the
// calls it releases: those it could not hand on first, then the others,
// the latest ended first (nil without a sequence to be sent again
// under, or with a store and no grace period to keep them for).
func (ss *sessions) keepFinals(s *session, r *reply) *keptFinals {
	if s.applied == 0 || ss.store != nil && ss.cfg.Grace <= 0 {
		return nil
	}
	ended := s.inOrder(func(e *entry) bool { return e.revisions > 0 && e.call.Ended() && e.call.IsShell() })
	slices.SortFunc(ended, func(a, b *entry) int {
		// The calls one request ended share its time: the last opened
		// first among them, the first most likely handed on before a
		// cut.
		if c := b.endedAt.Compare(a.endedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.order, a.order)
	})
	ended = append(slices.Clip(r.undelivered), ended...)
	k := &keptFinals{at: ss.now()}
	seen := map[*entry]bool{}
	for _, e := range ended {
		if seen[e] {
			continue
		}
		seen[e] = true
		rev, ok := e.call.Final()
		if !ok {
			continue
		}
		rev.Number = e.revisions // as handed on (see lift)
		x := s.toExec(&rev, r.seq)
		n := execTextBytes(x)
		if k.bytes+n > maxClosedFinalBytes {
			k.lost = append(k.lost, lostFinal{x.ToolCallID, x.Revision})
			continue
		}
		k.bytes += n
		k.finals = append(k.finals, x)
	}
	return k
}

// execTextBytes is the bytes of x's texts.
func execTextBytes(x *ShellExec) int {
	n := len(x.Command) + len(x.Cwd) + len(x.Description)
	for _, t := range []*Text{x.Output, x.Stdout, x.Stderr} {
		if t != nil {
			n += len(t.Text)
		}
	}
	return n
}

// handOnClosed hands on again, once per request, the ENDED revisions a
// closed session kept (keepFinals) that the caller does not say it holds,
// and names those it could not keep. With a store it reads them from the
// store (one load, for a request sent again whose answer is not kept,
// and none when the consumer was handed them already: see
// WithClosedHandedOn); mark names the close.
func (ss *sessions) handOnClosed(key string, mark CloseMark, r *reply) {
	if r.closedSent {
		return
	}
	r.closedSent = true
	var k *keptFinals
	if ss.store == nil {
		k = ss.tombs.kept(key)
	} else {
		if r.req.closedSeen != nil && r.req.closedSeen(r.session, mark) {
			return // every one of them reached the consumer, or was dropped as held
		}
		var err error
		if k, err = ss.loadFinals(r.req.ctx, key, mark.Sequence); err != nil {
			r.fail(Unavailable, "", "request %d of session %q was applied before the session was closed, but what its close kept could not be read from the store: %v; it may be sent again", r.seq, r.session, err)
			return
		}
		r.closedGot = &mark // told the consumer once handed on (see attempt)
	}
	if k == nil {
		return
	}
	for _, x := range k.finals {
		if r.holds(x.ToolCallID, x.Revision) {
			continue
		}
		c := *x
		c.Sequence = r.seq
		r.send(Event{ShellExec: &c, Again: true})
	}
	all := ""
	if ss.store == nil {
		all = fmt.Sprintf(", and all closes together %d bytes, the oldest going first", maxKeptFinalBytes)
	}
	for _, l := range k.lost {
		r.failRevision(l.call, l.revision, "the ENDED revision %d of tool call %q, made when session %q was closed, is not kept to be handed on again: a close keeps such revisions for its grace period, at most %d bytes of them%s", l.revision, l.call, r.session, maxClosedFinalBytes, all)
	}
}

// With a store, what a close kept (keepFinals) is a stored session of its
// own (finalsKey), one stream (streamOfFinals), written before the close's
// commit and expiring at the grace period: the closed session's keys live
// twice the TTL, and a load of them (a request sent again) does not carry
// it.
const (
	streamOfFinals = "f"
	finalsFormat   = 1
)

// finalsKey is the store key of what the close at sequence closed of the
// session with key key kept. It starts with 0xFF 0 0, as no session's key
// does (see namespace.key: after 0xFF 0 comes 0xFF), and names the
// close, so that a session closed again (started again since) keeps its
// own.
func finalsKey(key string, closed uint64) string {
	b := binary.AppendUvarint([]byte{keyMark, 0, 0}, closed)
	return string(append(b, key...))
}

// errFinalsNotKept (wrapped) says the store did not confirm that it
// keeps what a close keeps (writeFinals: an error, a timeout, a write
// not acknowledged): the close is not applied (see reply.notTaken).
var errFinalsNotKept = errors.New("the store did not confirm it keeps the ENDED revisions the close keeps for a client that sends requests again")

// writeFinals stores what the close of s (locked, closed) kept, for the
// grace period: new, or over what a close of the same sequence kept
// before (a conflict with another replica applying it, or a session
// started again and closed at the same sequence).
func (ss *sessions) writeFinals(ctx context.Context, s *session) error {
	key := finalsKey(s.key, s.closed)
	// At least a second, which a store keeps expiries to; finalsOf hands
	// nothing on past the grace.
	ch := &store.Change{Streams: []store.StreamOp{{Name: streamOfFinals, Data: encodeFinals(s.finals)}}, TTL: max(ss.cfg.Grace, time.Second)}
	var base uint64
	for attempt := 0; ; attempt++ {
		start := time.Now()
		_, err := ss.store.Commit(ctx, key, base, ch)
		ss.hooks.storeOp("commit", start, err)
		if !errors.Is(err, store.ErrConflict) || attempt == 2 {
			return err
		}
		start = time.Now()
		base, err = ss.store.Version(ctx, key)
		ss.hooks.storeOp("version", start, err)
		if err != nil {
			return err
		}
	}
}

// loadFinals returns what the close at sequence closed of the session with
// key key kept (see finalsOf).
func (ss *sessions) loadFinals(ctx context.Context, key string, closed uint64) (*keptFinals, error) {
	start := time.Now()
	snap, err := ss.store.Load(ctx, finalsKey(key, closed))
	ss.hooks.storeOp("load", start, err)
	if err != nil {
		return nil, err
	}
	return ss.finalsOf(snap), nil
}

// storedFinals is keptFinals as streamOfFinals holds it.
type storedFinals struct {
	At     int64 // when the close kept them, in Unix nanoseconds
	Finals []*ShellExec
	Lost   []storedLost `json:",omitempty"`
}

type storedLost struct {
	Call     string
	Revision uint32
}

func encodeFinals(k *keptFinals) []byte {
	sf := storedFinals{At: k.at.UnixNano(), Finals: k.finals}
	for _, l := range k.lost {
		sf.Lost = append(sf.Lost, storedLost{l.call, l.revision})
	}
	data, err := json.Marshal(sf)
	if err != nil {
		// A ShellExec always encodes: only lost calls are said then.
		data, _ = json.Marshal(storedFinals{At: sf.At, Lost: sf.Lost})
	}
	return append([]byte{finalsFormat}, data...)
}

// finalsOf returns what a close stored as snap kept (nil when nothing,
// or when it does not decode), every revision made lost (named only) once
// the grace period after the close passed (the store may keep it a little
// longer).
func (ss *sessions) finalsOf(snap *store.Snapshot) *keptFinals {
	data := snap.Streams[streamOfFinals]
	if len(data) < 2 || data[0] != finalsFormat {
		return nil
	}
	var sf storedFinals
	if err := json.Unmarshal(data[1:], &sf); err != nil {
		return nil
	}
	k := &keptFinals{finals: sf.Finals, at: time.Unix(0, sf.At)}
	for _, l := range sf.Lost {
		k.lost = append(k.lost, lostFinal{l.Call, l.Revision})
	}
	if ss.now().Sub(k.at) > ss.cfg.Grace {
		k = k.lose()
	}
	return k
}

// find returns the revision revision of call that k keeps, or nil.
func (k *keptFinals) find(call string, revision uint32) *ShellExec {
	if k == nil {
		return nil
	}
	for _, x := range k.finals {
		if x.ToolCallID == call && x.Revision == revision {
			return x
		}
	}
	return nil
}

// holds says whether the caller says (WithHeld) it holds revision
// revision of call, or a later one, or was handed it (WithCarried).
func (r *reply) holds(call string, revision uint32) bool {
	if held, named := r.req.held[call]; named && held >= revision {
		return true
	}
	// Or the consumer carried it already (WithCarried), and would drop it.
	return r.req.carried != nil && r.req.carried(r.session, call) >= revision
}

// failRevision says that the ENDED revision of call cannot be handed on
// again (FailedPrecondition), unless the caller says it holds it.
func (r *reply) failRevision(call string, revision uint32, format string, args ...any) {
	if r.holds(call, revision) {
		return
	}
	r.raise(&FrameError{Code: FailedPrecondition, Message: fmt.Sprintf(format, args...), ToolCallID: call, Revision: revision})
}

// mergeHeld adds b's claims to a, keeping the higher of two.
func mergeHeld(a, b map[string]uint32) map[string]uint32 {
	if a == nil {
		return b
	}
	for id, n := range b {
		a[id] = max(a[id], n)
	}
	return a
}

// maxHanded bounds the sessions handedOn remembers, oldest dropped first.
const maxHanded = 4096

// handedOn remembers, for sessions dropped from the cache because the
// store failed or to make room for others (evictIdle), the revisions
// handed on of each call: the store may come back older (a replica
// promoted in a dying master's place), and the next request of the
// session checks what it loads against them, once.
type handedOn struct {
	n     atomic.Int64 // entries, so that a request takes no lock while there are none
	mu    sync.Mutex
	m     map[string]handedRevs
	order []string // keys, oldest first (may hold some taken already)
}

type handedRevs struct {
	revs    map[string]uint32
	applied uint64    // the highest sequence committed (see WithSkipApplied)
	at      time.Time // when the cache let the session go
	// dropped says why the session's stored state was deleted (it did
	// not decode): the next request of the session is told it was lost.
	dropped string
}

func (h *handedOn) put(key string, revs map[string]uint32, applied uint64, now time.Time) {
	if len(revs) == 0 && applied == 0 {
		return
	}
	h.add(key, handedRevs{revs: revs, applied: applied, at: now})
}

// putDropped remembers that the stored state of session key was deleted,
// and why.
func (h *handedOn) putDropped(key, why string, now time.Time) {
	h.add(key, handedRevs{at: now, dropped: why})
}

func (h *handedOn) add(key string, e handedRevs) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]handedRevs{}
	}
	if old, ok := h.m[key]; ok {
		at := e.at
		if old.at.After(at) {
			at = old.at
		}
		h.m[key] = handedRevs{mergeHeld(old.revs, e.revs), max(old.applied, e.applied), at, cmp.Or(e.dropped, old.dropped)}
		return
	}
	h.m[key] = e
	h.order = append(h.order, key)
	for len(h.m) > maxHanded {
		delete(h.m, h.order[0])
		h.order = h.order[1:]
	}
	if len(h.order) > 2*maxHanded {
		h.order = slices.DeleteFunc(h.order, func(k string) bool { _, ok := h.m[k]; return !ok })
	}
	h.n.Store(int64(len(h.m)))
}

// takeHanded takes, for a session just loaded, what this Normalizer
// remembered of it when it let it go (see handedOn): the next request
// checks it (lost), whichever request that is. Only a session loaded can
// have an entry, so a request of a cached one takes no lock for it.
func (s *session) takeHanded(ss *sessions) {
	if h, ok := ss.handed.take(s.key, ss.now().Add(-ss.cfg.TTL)); ok {
		s.handed = &h
	}
}

// take returns and forgets what was remembered of session key, unless
// it was remembered before since (the session may have expired from the
// store since, as sessions do).
func (h *handedOn) take(key string, since time.Time) (handedRevs, bool) {
	if h.n.Load() == 0 {
		return handedRevs{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.m[key]
	if !ok {
		return handedRevs{}, false
	}
	delete(h.m, key)
	h.n.Store(int64(len(h.m)))
	if e.at.Before(since) {
		return handedRevs{}, false
	}
	return e, true
}
