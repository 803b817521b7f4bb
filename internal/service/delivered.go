package service

import (
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
)

// delivered is what one Normalize stream has carried: the last revision of
// each open call it sent. A revision of a call that does not follow the
// last one the stream carried (the first on a reconnected stream, or after
// revisions that went to another stream) carries every text whole
// (REPLACE), so the client's copy is whole again whatever it missed.
//
// It is used only by the stream's own loop and is bounded: ended calls are
// kept too (a revision after the ENDED one follows it, and an answer
// handed on again must not go back before it, see again); when it holds
// maxDelivered calls it starts over, which costs only extra whole texts.
type delivered struct {
	// last holds each call's record by pointer, so that one lookup finds
	// it to read and to change; recent is the one looked up last (nil:
	// none), as a revision is made for the stream (needsWhole) and then
	// handed on (handedOn) one after the other. A record is changed in
	// place and never replaced, so recent is the map's as long as the map
	// holds it: it is dropped wherever a record is.
	last       map[callKey]*carried
	recent     *carried
	recentCall callKey
	// closed is, per session, the close whose kept ENDED revisions a
	// request sent again handed on to the stream (with a store): sent
	// again, those would all be dropped here as carried, so they are not
	// read from the store again (normalize.WithClosedHandedOn). It goes
	// with what the stream carried of the session's calls.
	closed map[string]normalize.CloseMark
	// finalChanges says the stream asked for ENDED revisions that carry
	// only what changed (StreamOptions FINAL_TEXTS_CHANGES).
	finalChanges bool
	// skipApplied says the stream's requests skip sequences their session
	// already applied (StreamOptions skip_applied_sequences).
	skipApplied bool
}

type callKey struct{ session, call string }

// carried is what a stream did with one call's revisions: made is the
// last revision made for it (needsWhole), sent the last one handed on to
// it, or that its client said it holds (0: none). They differ while a
// request's revisions wait to be handed on: with a store the Normalizer
// hands a request's events on only once it committed, in the order it
// made them, so in a batch the revisions a later frame makes are made
// before the answers of an earlier frame sent again are handed on, yet
// are sent after them. Those answers are weighed against what was sent
// before them (again), not against what was made since, which would
// drop them as going back. Revisions made by a try the Normalizer threw
// away (a commit that conflicted, see discard) are not made: made goes
// back to sent.
type carried struct{ made, sent uint32 }

const maxDelivered = 4096

func newDelivered() *delivered {
	return &delivered{last: map[callKey]*carried{}, closed: map[string]normalize.CloseMark{}}
}

// find returns the record of the call (nil: none).
func (d *delivered) find(session, call string) *carried {
	if c := d.recent; c != nil && d.recentCall.session == session && d.recentCall.call == call {
		return c
	}
	k := callKey{session, call}
	c := d.last[k]
	if c != nil {
		d.recent, d.recentCall = c, k
	}
	return c
}

// add makes a record for a call that has none, starting over when it
// would pass the bound.
func (d *delivered) add(session, call string) *carried {
	if len(d.last) >= maxDelivered {
		d.startOver()
	}
	k := callKey{session, call}
	c := new(carried)
	d.last[k] = c
	d.recent, d.recentCall = c, k
	return c
}

// record returns the record of the call, made when it has none.
func (d *delivered) record(session, call string) *carried {
	if c := d.find(session, call); c != nil {
		return c
	}
	return d.add(session, call)
}

// startOver forgets everything the stream carried.
func (d *delivered) startOver() {
	clear(d.last)
	clear(d.closed)
	d.recent, d.recentCall = nil, callKey{}
}

// carried returns the last revision of the call the stream sent, or that
// its client said it holds (0: none): one handed on again at or below it
// is dropped (see again).
func (d *delivered) carried(session, call string) uint32 {
	if d == nil {
		return 0
	}
	if c := d.find(session, call); c != nil {
		return c.sent
	}
	return 0
}

// closedSeen reports whether the stream was handed what the close c of
// the session kept (see closed).
func (d *delivered) closedSeen(session string, c normalize.CloseMark) bool {
	got, ok := d.closed[session]
	return ok && got == c
}

// closedGot records that the stream was handed what the close c of the
// session kept. It is bounded as last is.
func (d *delivered) closedGot(session string, c normalize.CloseMark) {
	if _, ok := d.closed[session]; !ok && len(d.closed) >= maxDelivered {
		d.startOver()
	}
	d.closed[session] = c
}

// needsWhole records that revision rev of the call is made for the stream
// and reports whether it must carry every text whole.
func (d *delivered) needsWhole(session, call string, rev uint32, ended bool) bool {
	if d == nil {
		return false
	}
	c := d.find(session, call)
	whole := rev > 1 && (c == nil || c.made+1 != rev)
	if c == nil {
		c = d.add(session, call)
	}
	c.made = rev
	return whole
}

// handedOn records that revision rev of the call, made for the stream
// (needsWhole), is sent on it.
func (d *delivered) handedOn(session, call string, rev uint32) {
	if d == nil {
		return
	}
	c := d.record(session, call)
	c.made, c.sent = max(c.made, rev), max(c.sent, rev)
}

// again reports whether revision rev of the call, handed on again (the
// answer kept for a frame sent again), may be sent: not when the stream
// sent a later one, which it would come after, nor when it appends
// text (whole is false: it was kept as it was first sent) and does not
// follow what the stream sent or the client said it holds, which
// would leave a hole in the client's text (the call's next revision is
// then whole). It records what it lets through.
func (d *delivered) again(session, call string, rev uint32, whole bool) bool {
	if d == nil {
		return true
	}
	c := d.find(session, call)
	if c != nil && c.sent > 0 && (c.sent >= rev || !whole && c.sent+1 != rev) {
		return false
	}
	if c == nil {
		c = d.add(session, call)
	}
	c.made, c.sent = max(c.made, rev), rev
	return true
}

// holds records what the client says it holds of a session's calls
// (AcpFrame.held_revisions), as if the stream had carried it: answers
// handed on again at or below it are not sent (see again). Ids longer
// than maxID name no session or call (the request is refused, or the
// claim passed over) and are not kept, so that a hostile claim cannot pin
// megabytes of ids to the stream; nor is a claim the Normalizer refuses
// (above normalize.MaxHeldRevision).
func (d *delivered) holds(session string, held map[string]uint32, maxID int) {
	if d == nil || len(session) > maxID {
		return
	}
	for call, rev := range held {
		if len(d.last) >= maxDelivered {
			return
		}
		if len(call) > maxID || rev == 0 || rev > normalize.MaxHeldRevision {
			continue
		}
		c := d.record(session, call)
		c.made, c.sent = max(c.made, rev), max(c.sent, rev)
	}
}

// discard forgets the revisions of the session's calls made for the
// stream (needsWhole) and not handed on: with a store, a request whose
// commit conflicted is applied again, and its thrown-away try's
// revisions never reach the client (normalize.WithDiscarded). The next
// try's are weighed against what the stream sent, as they follow that
// or must be whole: counted as made, a revision the retry numbers after
// them (the other replica made some in between) would append after one
// the client never got. Rare (a race between replicas), so a walk over
// the bounded map.
func (d *delivered) discard(session string) {
	if d == nil {
		return
	}
	d.recent, d.recentCall = nil, callKey{}
	for k, c := range d.last {
		switch {
		case k.session != session || c.made == c.sent:
		case c.sent == 0:
			delete(d.last, k)
		default:
			c.made = c.sent
		}
	}
}

// forget drops what the stream carried of the session's calls: their
// revisions a request made were recorded (needsWhole) but then not sent,
// because the store did not take the request (UNAVAILABLE). The next
// revision of each then carries every text whole. Rare, so a walk over
// the bounded map.
func (d *delivered) forget(session string) {
	if d == nil {
		return
	}
	delete(d.closed, session)
	d.recent, d.recentCall = nil, callKey{}
	for k := range d.last {
		if k.session == session {
			delete(d.last, k)
		}
	}
}

// setOptions applies a StreamOptions request to the stream.
func (d *delivered) setOptions(o *pb.StreamOptions) {
	if d != nil {
		d.finalChanges = o.GetFinalTexts() == pb.FinalTexts_FINAL_TEXTS_CHANGES
		d.skipApplied = o.GetSkipAppliedSequences()
	}
}

// wantsSkipApplied says whether the stream's requests skip sequences
// their session already applied.
func (d *delivered) wantsSkipApplied() bool { return d != nil && d.skipApplied }

// wantsFinalChanges says whether ENDED revisions on the stream carry only
// what changed.
func (d *delivered) wantsFinalChanges() bool { return d != nil && d.finalChanges }
