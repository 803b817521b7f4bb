package normalize

import (
	"container/heap"
	"sync"
	"time"
)

// modelTombstones is the tombstones as they were before their entries
// were kept out of the collector's marking (a Go map of two strings and
// a pointer an entry): the model TestTombstonesMatchModel holds the
// tombstones to, operation by operation.
type modelTombstones struct {
	mu        sync.Mutex
	limit     int
	byKey     map[modelKey]tomb
	spaces    map[string]*modelQueue // by namespace key prefix; only those holding entries
	heap      modelHeap              // the same queues, the one holding the most first
	seq       uint64
	keptBytes int // of the finals the entries keep
	// keptOrder are the sessions whose marks keep finals, oldest first
	// (some may no longer keep those: see current), keptLive how many
	// marks still keep any.
	keptOrder []keptRef
	keptLive  int
}

// current returns the mark ref names and whether it still keeps the
// finals ref was made for.
func (t *modelTombstones) current(ref keptRef) (tomb, bool) {
	o, ok := t.byKey[modelKey{ref.session, ""}]
	return o, ok && o.finals != nil && len(o.finals.finals) > 0 && o.finals.at.Equal(ref.at)
}

// keep adds to the mark of the closed session with key session (it must
// have one: see closedAt) the ENDED revisions of the calls its close
// released (keepFinals), making the oldest close's lost to stay within
// maxKeptFinalBytes, and these lost when they alone are over it.
func (t *modelTombstones) keep(session string, k *keptFinals) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := modelKey{session, ""}
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
func (t *modelTombstones) expire(before time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.keptOrder) > 0 && t.keptOrder[0].at.Before(before) {
		t.loseOldest()
	}
}

// loseOldest makes what the oldest close in keptOrder kept lost (named
// only), if its mark still keeps it, and takes it out of keptOrder.
func (t *modelTombstones) loseOldest() {
	ref := t.keptOrder[0]
	t.keptOrder = t.keptOrder[1:]
	if o, ok := t.current(ref); ok {
		t.unkeep(o)
		o.finals = o.finals.lose()
		t.byKey[modelKey{ref.session, ""}] = o
	}
}

// kept returns the ENDED revisions the mark of the closed session with
// key session keeps (nil: none).
func (t *modelTombstones) kept(session string) *keptFinals {
	tb, _ := t.get(session, "")
	return tb.finals
}

// unkeep forgets the bytes tb's finals count, as tb leaves or is
// replaced.
func (t *modelTombstones) unkeep(tb tomb) {
	if tb.finals != nil {
		t.keptBytes -= tb.finals.bytes
		if len(tb.finals.finals) > 0 {
			t.keptLive--
		}
	}
}

type modelKey struct{ session, call string }

type modelQueued struct {
	key modelKey
	seq uint64
}

// modelQueue is one namespace's entries, oldest first from head; queue may
// hold entries replaced since (their seq no longer the current one).
type modelQueue struct {
	space string
	queue []modelQueued
	head  int
	live  int // entries of byKey in this namespace
	index int // in modelTombstones.heap
}

// modelHeap is a max-heap of queues by live entries.
type modelHeap []*modelQueue

func (h modelHeap) Len() int           { return len(h) }
func (h modelHeap) Less(i, j int) bool { return h[i].live > h[j].live }
func (h modelHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *modelHeap) Push(x any) {
	q := x.(*modelQueue)
	q.index = len(*h)
	*h = append(*h, q)
}
func (h *modelHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return q
}

func newModelTombstones(limit int) *modelTombstones {
	return &modelTombstones{limit: limit, byKey: map[modelKey]tomb{}, spaces: map[string]*modelQueue{}}
}

// add remembers a released call of the session with key session, making
// room when full (see modelTombstones).
func (t *modelTombstones) add(session, call string, tb tomb) {
	if t.limit <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	tb.seq = t.seq
	k := modelKey{session, call}
	space := spaceOfKey(session)
	q := t.spaces[space]
	if q == nil {
		q = &modelQueue{space: space}
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
	q.queue = append(q.queue, modelQueued{k, t.seq})
	for len(t.byKey) > t.limit {
		t.evict(t.heap[0])
	}
	q.compact(t.byKey)
}

// evict drops the oldest current entry of q.
func (t *modelTombstones) evict(q *modelQueue) {
	for q.head < len(q.queue) {
		old := q.queue[q.head]
		q.queue[q.head] = modelQueued{}
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
func (q *modelQueue) compact(byKey map[modelKey]tomb) {
	if pending := len(q.queue) - q.head; !(q.head > 64 && q.head > pending || pending > 2*q.live+64) {
		return
	}
	kept := make([]modelQueued, 0, q.live)
	for _, e := range q.queue[q.head:] {
		if byKey[e.key].seq == e.seq {
			kept = append(kept, e)
		}
	}
	q.queue, q.head = kept, 0
}

// get returns the tombstone of a call, if it has one.
func (t *modelTombstones) get(session, call string) (tomb, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tb, ok := t.byKey[modelKey{session, call}]
	return tb, ok
}

// anyOf reports whether a call of the session has a tombstone. It looks
// at every entry: only for the rare check of a session that restarted
// (see sessions.lost).
func (t *modelTombstones) anyOf(session string) bool {
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
// bounded and evicted with the modelTombstones.
func (t *modelTombstones) closedAt(session string) uint64 {
	tb, _ := t.get(session, "")
	return tb.applied
}

// remove forgets the tombstone of a call, if it has one.
func (t *modelTombstones) remove(session, call string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := modelKey{session, call}
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

func (t *modelTombstones) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
}

// finalsHeld counts the slots whose finals the finals map holds (tests).
func (t *tombstones) finalsHeld() int {
	n := 0
	for _, s := range t.slots {
		if s.seq != 0 && s.hasFinals {
			n++
		}
	}
	return n
}
