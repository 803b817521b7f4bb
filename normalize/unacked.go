package normalize

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Bounds of the events kept for requests the store applied but did not
// acknowledge (see unacked): for all sessions together.
const (
	maxUnackedRequests = 4096
	maxUnackedBytes    = 8 << 20
)

// unacked keeps the events of requests whose commit the store applied but
// could not acknowledge (store.ErrUnacknowledged: a Redis master whose
// replicas did not confirm it in time). Such a request is refused
// (UNAVAILABLE) and its events are not handed on; the caller sends it
// again, and when it was kept, that is a request the session applied
// before. With skipped applied sequences, the request sent again is then
// answered with the events it made, once, instead of ALREADY_EXISTS with
// none, so that no revision (an ENDED one above all) is lost; the other
// frames of a batch that was kept so are answered with nothing, as they
// were the first time. Only this process can answer so: another replica
// that gets the request sent again answers ALREADY_EXISTS. The events are
// kept until the last frame of the request has come again, until a
// request of the session is applied anew (see applied), or until the
// bounds push them out, oldest first.
type unacked struct {
	// held counts the kept requests that made revisions, so that applied,
	// called for every frame applied with skipped sequences, takes no lock
	// while there are none (nearly always).
	held  atomic.Int64
	mu    sync.Mutex
	byKey map[string][]*unackedReply // by session key, oldest first
	all   []*unackedReply            // every one, oldest first (may hold forgotten ones)
	n     int                        // kept (in byKey)
	bytes int
}

// unackedReply is one such request: the frames first to last of the
// session with key key, and what they made.
type unackedReply struct {
	key         string
	first, last uint64
	events      []Event
	size        int
	revisions   bool // some of its events are revisions
	answered    bool // its events were handed on, to the first of its frames sent again
	gone        bool // forgotten
}

// put keeps the events of frames first to last of session key.
func (u *unacked) put(key string, first, last uint64, events []Event) {
	e := &unackedReply{key: key, first: first, last: last, events: events, size: len(key) + 64*len(events)}
	for _, ev := range events {
		e.size += eventBytes(ev)
		e.revisions = e.revisions || ev.ShellExec != nil
	}
	if e.size > maxUnackedBytes {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byKey == nil {
		u.byKey = map[string][]*unackedReply{}
	}
	u.byKey[key] = append(u.byKey[key], e)
	u.all = append(u.all, e)
	u.n++
	if e.revisions {
		u.held.Add(1)
	}
	u.bytes += e.size
	for u.n > maxUnackedRequests || u.bytes > maxUnackedBytes {
		old := u.all[0]
		u.all[0] = nil
		u.all = u.all[1:]
		if !old.gone {
			u.forget(old)
		}
	}
	if len(u.all) > 2*u.n+64 { // drop the forgotten ones from the queue
		kept := make([]*unackedReply, 0, u.n)
		for _, x := range u.all {
			if !x.gone {
				kept = append(kept, x)
			}
		}
		u.all = kept
	}
}

// find returns the kept request of session key whose frames hold seq,
// and whether its events were handed on already.
func (u *unacked) find(key string, seq uint64) (e *unackedReply, answered bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, e := range u.byKey[key] {
		if e.first <= seq && seq <= e.last {
			return e, e.answered
		}
	}
	return nil, false
}

// sent records that frame seq of e, sent again, was answered: e's events
// were handed on (with the first of its frames to come again). e is
// forgotten once its last frame has come again.
func (u *unacked) sent(e *unackedReply, seq uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	e.answered = true
	if seq >= e.last && !e.gone {
		u.forget(e)
	}
}

// applied forgets the kept requests of session key that made revisions:
// one of its requests is applied anew. Either the store lost them (their
// sequences are being applied again), or a later request went on after
// them, and their revisions handed on now would come after newer ones of
// the same calls. A kept request that made no revision is kept: answered
// late, it hands on nothing out of order.
func (u *unacked) applied(key string) {
	if u.held.Load() == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, e := range slices.Clone(u.byKey[key]) {
		if e.revisions {
			u.forget(e)
		}
	}
}

// forget removes e (not yet gone) from byKey and the counts; u.mu is held.
func (u *unacked) forget(e *unackedReply) {
	e.gone = true
	u.n--
	if e.revisions {
		u.held.Add(-1)
	}
	u.bytes -= e.size
	list := u.byKey[e.key]
	kept := list[:0]
	for _, x := range list {
		if x != e {
			kept = append(kept, x)
		}
	}
	clear(list[len(kept):])
	if len(kept) == 0 {
		delete(u.byKey, e.key)
		return
	}
	u.byKey[e.key] = kept
}

// eventBytes is about what an event holds in text.
func eventBytes(ev Event) int {
	n := 0
	if x := ev.ShellExec; x != nil {
		n += len(x.SessionID) + len(x.ToolCallID) + len(x.Dialect) + len(x.Command) + len(x.Cwd) + len(x.Description) + len(x.OutcomeReason) + len(x.Signal) + len(x.ApprovalReason)
		for _, t := range []*Text{x.Output, x.Stdout, x.Stderr} {
			if t != nil {
				n += len(t.Text)
			}
		}
	}
	if fe := ev.Error; fe != nil {
		n += len(fe.SessionID) + len(fe.Message) + len(fe.ToolCallID)
	}
	return n
}
