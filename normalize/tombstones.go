package normalize

import (
	"container/heap"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// tombstones remembers tool calls that were released from state, so that a
// late frame about one gets a clear error instead of opening a new call
// under the old id (revisions would restart at 1 and an ended outcome could
// flip). It holds at most limit entries, of every namespace together; each
// entry holds two ids (bounded by MaxIDBytes) and a few numbers.
//
// When it is full, the entry that goes is the oldest of the namespace that
// holds the most entries, so that a tenant releasing calls without end
// forgets its own tombstones and never another's: a namespace holding
// fewer than its share (limit over the namespaces holding tombstones)
// keeps all of them.
//
// The marks of closed sessions keep the ENDED revisions of the calls
// their close released (keepFinals): at most maxKeptFinalBytes of texts
// in all, the oldest close's made lost (named when asked for) to make
// room for a newer one's, and each for the grace period (expire).
//
// Full, the tombstones are most of a busy server's live heap, and every
// collection would mark what holds pointers among them. So the entries
// hold none: each is a slot of one slice, its two ids copied into one
// byte arena, found through a map from a hash of the ids to the first
// slot of that hash (the slots of one hash chained, the ids compared in
// full, so a collision never finds another call's entry), and the
// namespaces' queues name slots. Only the finals the marks of closed
// sessions keep are pointers, in a map of their own.
type tombstones struct {
	mu    sync.Mutex
	limit int
	seed  maphash.Seed
	mask  uint64         // of the hashes; tests narrow it to make them collide
	index map[uint64]int // by hash of the ids: the first slot of that hash
	slots []tombSlot     // a slot's seq is 0 while it is free
	free  []int          // the free slots: every other slot holds an entry
	// arena holds each entry's session key then call id; arenaLive is
	// how many of its bytes the entries held use (the rest is what
	// entries gone left, until compactArena).
	arena     []byte
	arenaLive int
	finals    map[int]*keptFinals   // by slot: the finals a mark keeps
	spaces    map[string]*tombQueue // by namespace key prefix; only those holding entries
	heap      tombHeap              // the same queues, the one holding the most first
	seq       uint64
	keptBytes int // of the finals the entries keep
	// keptOrder are the sessions whose marks keep finals, oldest first
	// (some may no longer keep those: see current), keptLive how many
	// marks still keep any.
	keptOrder []keptRef
	keptLive  int
}

// tombSlot is an entry, its ids in the arena at off: the session key's
// sessionLen bytes then the call id's callLen.
type tombSlot struct {
	seq        uint64
	off        int
	after      time.Duration // the tomb's
	applied    uint64        // the tomb's
	sessionLen uint32
	callLen    uint32
	next       int    // the next slot of the same hash, or -1
	revisions  uint32 // the tomb's
	why        released
	outcome    accum.Outcome
	hasFinals  bool // finals holds this slot's
}

// keptRef is a session whose mark kept finals at a time.
type keptRef struct {
	session string
	at      time.Time
}

// hashOf hashes an entry's ids.
func (t *tombstones) hashOf(session, call string) uint64 {
	return (maphash.String(t.seed, session)*0x9e3779b97f4a7c15 ^ maphash.String(t.seed, call)) & t.mask
}

// find returns the slot of the entry of session and call, or -1.
func (t *tombstones) find(session, call string) int {
	h := t.hashOf(session, call)
	i, ok := t.index[h]
	if !ok {
		return -1
	}
	for i >= 0 {
		s := &t.slots[i]
		if int(s.sessionLen) == len(session) && int(s.callLen) == len(call) &&
			string(t.arena[s.off:s.off+len(session)]) == session &&
			string(t.arena[s.off+len(session):s.off+len(session)+len(call)]) == call {
			return i
		}
		i = s.next
	}
	return -1
}

// tombAt returns the tomb of slot i.
func (t *tombstones) tombAt(i int) tomb {
	s := &t.slots[i]
	tb := tomb{seq: s.seq, why: s.why, after: s.after, revisions: s.revisions, outcome: s.outcome, applied: s.applied}
	if s.hasFinals {
		tb.finals = t.finals[i]
	}
	return tb
}

// set makes tb (its seq and finals too) what slot i holds.
func (t *tombstones) set(i int, tb tomb) {
	s := &t.slots[i]
	s.seq = tb.seq
	s.why, s.outcome, s.revisions, s.after, s.applied = tb.why, tb.outcome, tb.revisions, tb.after, tb.applied
	if tb.finals != nil {
		t.finals[i] = tb.finals
		s.hasFinals = true
	} else if s.hasFinals {
		delete(t.finals, i)
		s.hasFinals = false
	}
}

// insert makes a slot for a new entry of session and call and returns it.
func (t *tombstones) insert(session, call string) int {
	var i int
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		i = len(t.slots)
		if len(t.slots) == cap(t.slots) { // doubling, up to the limit
			t.slots = slices.Grow(t.slots, max(1, min(max(len(t.slots), 64), t.limit+1-len(t.slots))))
		}
		t.slots = append(t.slots, tombSlot{})
	}
	if len(t.arena)+len(session)+len(call) > cap(t.arena) && len(t.arena)-t.arenaLive >= t.arenaLive/2 {
		t.compactArena()
	}
	h := t.hashOf(session, call)
	next, ok := t.index[h]
	if !ok {
		next = -1
	}
	t.slots[i] = tombSlot{off: len(t.arena), sessionLen: uint32(len(session)), callLen: uint32(len(call)), next: next}
	t.arena = append(append(t.arena, session...), call...)
	t.arenaLive += len(session) + len(call)
	t.index[h] = i
	return i
}

// drop frees slot i, which holds an entry.
func (t *tombstones) drop(i int) {
	s := &t.slots[i]
	// The ids as strings over the arena, without a copy: only hashed,
	// while the arena does not change.
	ids := unsafe.String(unsafe.SliceData(t.arena[s.off:]), int(s.sessionLen)+int(s.callLen))
	h := t.hashOf(ids[:s.sessionLen], ids[s.sessionLen:])
	if head := t.index[h]; head == i {
		if s.next < 0 {
			delete(t.index, h)
		} else {
			t.index[h] = s.next
		}
	} else {
		for p := head; ; p = t.slots[p].next {
			if t.slots[p].next == i {
				t.slots[p].next = s.next
				break
			}
		}
	}
	if s.hasFinals {
		delete(t.finals, i)
	}
	t.arenaLive -= int(s.sessionLen) + int(s.callLen)
	*s = tombSlot{next: -1}
	t.free = append(t.free, i)
}

// compactArena copies the ids of the entries held into a new arena, half
// again as large as they are, leaving out what entries gone left. insert
// calls it when the arena is full and at least a third of it is left
// over, so the arena stays within about twice the ids held (while they do
// not grow), and the bytes copied are at most twice those released since
// the last copy.
func (t *tombstones) compactArena() {
	arena := make([]byte, 0, t.arenaLive+t.arenaLive/2+4096)
	for i := range t.slots {
		s := &t.slots[i]
		if s.seq == 0 {
			continue
		}
		n := int(s.sessionLen) + int(s.callLen)
		off := len(arena)
		arena = append(arena, t.arena[s.off:s.off+n]...)
		s.off = off
	}
	t.arena = arena
}

// current returns the mark ref names and whether it still keeps the
// finals ref was made for.
func (t *tombstones) current(ref keptRef) (tomb, bool) {
	i := t.find(ref.session, "")
	if i < 0 {
		return tomb{}, false
	}
	o := t.tombAt(i)
	return o, o.finals != nil && len(o.finals.finals) > 0 && o.finals.at.Equal(ref.at)
}

// maxKeptFinalBytes bounds the texts of the ENDED revisions the marks of
// closed sessions keep, of every namespace together.
const maxKeptFinalBytes = 64 << 20

// keep adds to the mark of the closed session with key session (it must
// have one: see closedAt) the ENDED revisions of the calls its close
// released (keepFinals), making the oldest close's lost to stay within
// maxKeptFinalBytes, and these lost when they alone are over it.
func (t *tombstones) keep(session string, k *keptFinals) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.find(session, "")
	if i < 0 {
		return
	}
	tb := t.tombAt(i)
	t.unkeep(tb)
	tb.finals = nil
	t.set(i, tb)
	for len(t.keptOrder) > 0 && t.keptBytes+k.bytes > maxKeptFinalBytes {
		t.loseOldest()
	}
	if t.keptBytes+k.bytes > maxKeptFinalBytes {
		k = k.lose()
	}
	tb.finals = k
	t.keptBytes += k.bytes
	if len(k.finals) > 0 {
		t.keptLive++
		t.keptOrder = append(t.keptOrder, keptRef{session, k.at})
		if len(t.keptOrder) > 2*t.keptLive+64 {
			live := t.keptOrder[:0]
			for _, ref := range t.keptOrder {
				if _, ok := t.current(ref); ok {
					live = append(live, ref)
				}
			}
			t.keptOrder = live
		}
	}
	t.set(i, tb)
}

// expire makes lost (named only) the revisions the closes before the
// time before kept: they are kept for a client that comes back soon
// after its stream broke, as an ended call is kept for its grace period
// (sessions.sweep calls it with the same), not for ever.
func (t *tombstones) expire(before time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.keptOrder) > 0 && t.keptOrder[0].at.Before(before) {
		t.loseOldest()
	}
}

// loseOldest makes what the oldest close in keptOrder kept lost (named
// only), if its mark still keeps it, and takes it out of keptOrder.
func (t *tombstones) loseOldest() {
	ref := t.keptOrder[0]
	t.keptOrder = t.keptOrder[1:]
	if o, ok := t.current(ref); ok {
		t.unkeep(o)
		o.finals = o.finals.lose()
		t.set(t.find(ref.session, ""), o)
	}
}

// lose returns k with every revision it keeps made lost (named only).
func (k *keptFinals) lose() *keptFinals {
	out := &keptFinals{lost: slices.Clip(k.lost), at: k.at}
	for _, x := range k.finals {
		out.lost = append(out.lost, lostFinal{x.ToolCallID, x.Revision})
	}
	return out
}

// kept returns the ENDED revisions the mark of the closed session with
// key session keeps (nil: none).
func (t *tombstones) kept(session string) *keptFinals {
	tb, _ := t.get(session, "")
	return tb.finals
}

// unkeep forgets the bytes tb's finals count, as tb leaves or is
// replaced.
func (t *tombstones) unkeep(tb tomb) {
	if tb.finals != nil {
		t.keptBytes -= tb.finals.bytes
		if len(tb.finals.finals) > 0 {
			t.keptLive--
		}
	}
}

// queued is an entry as its namespace's queue holds it: the slot, and the
// seq it had then (the slot holds another entry, or this one added again,
// when its seq is no longer that: seqs only grow).
type queued struct {
	slot int
	seq  uint64
}

// tombQueue is one namespace's entries, oldest first from head; queue may
// hold entries replaced since (their seq no longer the current one).
type tombQueue struct {
	space string
	queue []queued
	head  int
	live  int // entries held of this namespace
	index int // in tombstones.heap
}

// tombHeap is a max-heap of queues by live entries.
type tombHeap []*tombQueue

func (h tombHeap) Len() int           { return len(h) }
func (h tombHeap) Less(i, j int) bool { return h[i].live > h[j].live }
func (h tombHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *tombHeap) Push(x any) {
	q := x.(*tombQueue)
	q.index = len(*h)
	*h = append(*h, q)
}
func (h *tombHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return q
}

// why a call was released
type released uint8

const (
	releasedIdle   released = iota + 1 // its session was idle past the TTL
	releasedGrace                      // it ended and its grace period passed
	releasedClosed                     // its session was closed
)

type tomb struct {
	seq       uint64
	why       released
	after     time.Duration // the TTL or grace that passed
	revisions uint32        // revisions sent before release
	outcome   accum.Outcome // OutcomeNone when it had not ended
	// applied: under the call id "", the mark of a closed session (see
	// closedAt), the highest sequence it had applied; finals, the ENDED
	// revisions of the calls its close released (see keepFinals).
	applied uint64
	finals  *keptFinals
}

func newTombstones(limit int) *tombstones {
	return &tombstones{limit: limit, seed: maphash.MakeSeed(), mask: ^uint64(0), index: map[uint64]int{}, finals: map[int]*keptFinals{}, spaces: map[string]*tombQueue{}}
}

// add remembers a released call of the session with key session, making
// room when full (see tombstones).
func (t *tombstones) add(session, call string, tb tomb) {
	if t.limit <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	tb.seq = t.seq
	space := spaceOfKey(session)
	q := t.spaces[space]
	if q == nil {
		q = &tombQueue{space: strings.Clone(space)}
		t.spaces[space] = q
		heap.Push(&t.heap, q)
	}
	i := t.find(session, call)
	if i < 0 {
		i = t.insert(session, call)
		q.live++
		heap.Fix(&t.heap, q.index)
	} else {
		t.unkeep(t.tombAt(i))
	}
	t.set(i, tb)
	q.queue = append(q.queue, queued{i, t.seq})
	for t.held() > t.limit {
		t.evict(t.heap[0])
	}
	t.compact(q)
}

// held is how many entries the tombstones hold: the slots not free.
func (t *tombstones) held() int { return len(t.slots) - len(t.free) }

// queuedHeld reports whether e is still an entry held.
func (t *tombstones) queuedHeld(e queued) bool { return t.slots[e.slot].seq == e.seq }

// evict drops the oldest current entry of q.
func (t *tombstones) evict(q *tombQueue) {
	for q.head < len(q.queue) {
		old := q.queue[q.head]
		q.queue[q.head] = queued{}
		q.head++
		if t.queuedHeld(old) {
			t.unkeep(t.tombAt(old.slot))
			t.drop(old.slot)
			q.live--
			break
		}
	}
	if q.live == 0 {
		heap.Remove(&t.heap, q.index)
		delete(t.spaces, q.space)
		return
	}
	heap.Fix(&t.heap, q.index)
	t.compact(q)
}

// compact keeps q's queue within a constant factor of its live entries.
func (t *tombstones) compact(q *tombQueue) {
	if pending := len(q.queue) - q.head; !(q.head > 64 && q.head > pending || pending > 2*q.live+64) {
		return
	}
	kept := make([]queued, 0, q.live)
	for _, e := range q.queue[q.head:] {
		if t.queuedHeld(e) {
			kept = append(kept, e)
		}
	}
	q.queue, q.head = kept, 0
}

// get returns the tombstone of a call, if it has one.
func (t *tombstones) get(session, call string) (tomb, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.find(session, call)
	if i < 0 {
		return tomb{}, false
	}
	return t.tombAt(i), true
}

// anyOf reports whether a call of the session has a tombstone. It looks
// at every entry: only for the rare check of a session that restarted
// (see sessions.lost).
func (t *tombstones) anyOf(session string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.slots {
		s := &t.slots[i]
		if s.seq != 0 && int(s.sessionLen) == len(session) && string(t.arena[s.off:s.off+len(session)]) == session {
			return true
		}
	}
	return false
}

// closedAt returns the highest sequence the closed session with key
// session had applied, as its mark says (0: none). Without a store a
// closed session leaves this mark, under the call id "" (which no call
// has), so that its requests sent again are answered as applied; it is
// bounded and evicted with the tombstones.
func (t *tombstones) closedAt(session string) uint64 {
	tb, _ := t.get(session, "")
	return tb.applied
}

// remove forgets the tombstone of a call, if it has one.
func (t *tombstones) remove(session, call string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.find(session, call)
	if i < 0 {
		return
	}
	t.unkeep(t.tombAt(i))
	t.drop(i)
	q := t.spaces[spaceOfKey(session)]
	if q == nil {
		return
	}
	q.live--
	if q.live == 0 {
		heap.Remove(&t.heap, q.index)
		delete(t.spaces, q.space)
		return
	}
	heap.Fix(&t.heap, q.index)
	t.compact(q)
}

func (t *tombstones) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.held()
}

// explain says why a late frame about a released call is refused.
func (tb tomb) explain(call string) string {
	var what string
	switch tb.why {
	case releasedIdle:
		what = fmt.Sprintf("was evicted after %s idle (its session had no frame for that long)", shortDuration(tb.after))
	case releasedGrace:
		what = fmt.Sprintf("ended and was released %s later (the grace period)", shortDuration(tb.after))
	default:
		what = "was released when its session was closed"
	}
	state := "it had not ended"
	if tb.outcome != accum.OutcomeNone {
		state = "it ended " + outcomeNames[tb.outcome]
	}
	return fmt.Sprintf("tool call %q %s; %s after %d revisions, and a released call is never reopened", call, what, state, tb.revisions)
}

var outcomeNames = map[accum.Outcome]string{
	accum.Succeeded: "SUCCEEDED",
	accum.Failed:    "FAILED",
	accum.Cancelled: "CANCELLED",
	accum.Unknown:   "UNKNOWN",
}

// shortDuration writes 10m rather than 10m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
