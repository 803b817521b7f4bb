package normalize

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

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
type tombstones struct {
	mu        sync.Mutex
	limit     int
	byKey     map[tombKey]tomb
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

// keptRef is a session whose mark kept finals at a time.
type keptRef struct {
	session string
	at      time.Time
}

// current returns the mark ref names and whether it still keeps the
// finals ref was made for.
func (t *tombstones) current(ref keptRef) (tomb, bool) {
	o, ok := t.byKey[tombKey{ref.session, ""}]
	return o, ok && o.finals != nil && len(o.finals.finals) > 0 && o.finals.at.Equal(ref.at)
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
	key := tombKey{session, ""}
	tb, ok := t.byKey[key]
	if !ok {
		return
	}
	t.unkeep(tb)
	tb.finals = nil
	t.byKey[key] = tb
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
	t.byKey[key] = tb
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
		t.byKey[tombKey{ref.session, ""}] = o
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

type tombKey struct{ session, call string }

type queued struct {
	key tombKey
	seq uint64
}

// tombQueue is one namespace's entries, oldest first from head; queue may
// hold entries replaced since (their seq no longer the current one).
type tombQueue struct {
	space string
	queue []queued
	head  int
	live  int // entries of byKey in this namespace
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
	return &tombstones{limit: limit, byKey: map[tombKey]tomb{}, spaces: map[string]*tombQueue{}}
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
	k := tombKey{session, call}
	space := spaceOfKey(session)
	q := t.spaces[space]
	if q == nil {
		q = &tombQueue{space: space}
		t.spaces[space] = q
		heap.Push(&t.heap, q)
	}
	if old, again := t.byKey[k]; !again {
		q.live++
		heap.Fix(&t.heap, q.index)
	} else {
		t.unkeep(old)
	}
	t.byKey[k] = tb
	q.queue = append(q.queue, queued{k, t.seq})
	for len(t.byKey) > t.limit {
		t.evict(t.heap[0])
	}
	q.compact(t.byKey)
}

// evict drops the oldest current entry of q.
func (t *tombstones) evict(q *tombQueue) {
	for q.head < len(q.queue) {
		old := q.queue[q.head]
		q.queue[q.head] = queued{}
		q.head++
		if tb := t.byKey[old.key]; tb.seq == old.seq {
			t.unkeep(tb)
			delete(t.byKey, old.key)
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
	q.compact(t.byKey)
}

// compact keeps q's queue within a constant factor of its live entries.
func (q *tombQueue) compact(byKey map[tombKey]tomb) {
	if pending := len(q.queue) - q.head; !(q.head > 64 && q.head > pending || pending > 2*q.live+64) {
		return
	}
	kept := make([]queued, 0, q.live)
	for _, e := range q.queue[q.head:] {
		if byKey[e.key].seq == e.seq {
			kept = append(kept, e)
		}
	}
	q.queue, q.head = kept, 0
}

// get returns the tombstone of a call, if it has one.
func (t *tombstones) get(session, call string) (tomb, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tb, ok := t.byKey[tombKey{session, call}]
	return tb, ok
}

// anyOf reports whether a call of the session has a tombstone. It looks
// at every entry: only for the rare check of a session that restarted
// (see sessions.lost).
func (t *tombstones) anyOf(session string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.byKey {
		if k.session == session {
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
	k := tombKey{session, call}
	tb, ok := t.byKey[k]
	if !ok {
		return
	}
	t.unkeep(tb)
	delete(t.byKey, k)
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
	q.compact(t.byKey)
}

func (t *tombstones) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
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
