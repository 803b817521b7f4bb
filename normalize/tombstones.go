package normalize

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// tombstones remembers tool calls that were released from state, so that a
// late frame about one gets a clear error instead of opening a new call
// under the old id (revisions would restart at 1 and an ended outcome could
// flip). It holds at most limit entries and drops the oldest first; each
// entry holds two ids (bounded by MaxIDBytes) and a few numbers.
type tombstones struct {
	mu    sync.Mutex
	limit int
	byKey map[tombKey]tomb
	queue []queued // oldest first, from head
	head  int
	seq   uint64
}

type tombKey struct{ session, call string }

type queued struct {
	key tombKey
	seq uint64
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
}

func newTombstones(limit int) *tombstones {
	return &tombstones{limit: limit, byKey: map[tombKey]tomb{}}
}

// add remembers a released call, dropping the oldest entry when full.
func (t *tombstones) add(session, call string, tb tomb) {
	if t.limit <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	tb.seq = t.seq
	k := tombKey{session, call}
	t.byKey[k] = tb
	t.queue = append(t.queue, queued{k, t.seq})
	for len(t.byKey) > t.limit {
		old := t.queue[t.head]
		t.queue[t.head] = queued{}
		t.head++
		if t.byKey[old.key].seq == old.seq {
			delete(t.byKey, old.key)
		}
	}
	if live := len(t.queue) - t.head; t.head > 64 && t.head > live || live > 2*t.limit+64 {
		// Compact, keeping only the entries still current.
		q := make([]queued, 0, len(t.byKey))
		for _, e := range t.queue[t.head:] {
			if t.byKey[e.key].seq == e.seq {
				q = append(q, e)
			}
		}
		t.queue, t.head = q, 0
	}
}

// get returns the tombstone of a call, if it has one.
func (t *tombstones) get(session, call string) (tomb, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tb, ok := t.byKey[tombKey{session, call}]
	return tb, ok
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
