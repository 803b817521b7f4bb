package normalize

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/require"
)

// The tombstones, whose entries hold no pointers, do what the map of two
// strings they replaced did (modelTombstones), operation by operation:
// adds past the bound in namespaces of different appetites, calls added
// again, removes, the finals marks keep and lose, expiry. After each one
// both hold the same entries (what get returns of each, the count), the
// same finals' bytes and order, and the same queues by namespace, so
// evictions went the same way. With every hash narrowed to three bits,
// entries share hashes throughout and must still be told apart by their
// ids.
func TestTombstonesMatchModel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limit   int
		collide bool
	}{
		{"small", 40, false},
		{"small colliding", 40, true},
		{"one", 1, false},
		{"larger colliding", 300, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkTombstonesAgainstModel(t, tc.limit, tc.collide, min(20000, 2_400_000/tc.limit), uint64(tc.limit))
		})
	}
}

func checkTombstonesAgainstModel(t *testing.T, limit int, collide bool, ops int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 29))
	ts, m := newTombstones(limit), newModelTombstones(limit)
	if collide {
		ts.mask = 7
	}
	spaces := []namespace{newNamespace(""), newNamespace("a"), newNamespace("b"), newNamespace("tenant-c")}
	session := func() string {
		ns := spaces[r.IntN(len(spaces))]
		if r.IntN(4) > 0 {
			ns = spaces[r.IntN(2)] // two namespaces release the most
		}
		return ns.key(fmt.Sprintf("ses_%d", r.IntN(3*limit/2+2)))
	}
	call := func() string {
		switch r.IntN(6) {
		case 0:
			return "" // a closed session's mark
		case 1:
			return strings.Repeat("x", r.IntN(300)) // long, or empty
		default:
			return fmt.Sprintf("toolu_%d", r.IntN(40))
		}
	}
	t0 := time.Unix(5000, 0)
	now := t0
	var marks []string // sessions given a mark, to keep finals on
	finals := func() *keptFinals {
		k := &keptFinals{at: now}
		for j := range r.IntN(3) {
			x := &ShellExec{ToolCallID: fmt.Sprint("f", j), Revision: uint32(1 + r.IntN(5))}
			k.finals = append(k.finals, x)
		}
		k.bytes = len(k.finals) * (1 + r.IntN(maxKeptFinalBytes/3))
		if r.IntN(5) == 0 {
			k.lost = []lostFinal{{"gone", 2}}
		}
		return k
	}
	for op := range ops {
		now = now.Add(time.Duration(r.IntN(1000)) * time.Millisecond)
		s, c := session(), call()
		what := ""
		switch x := r.IntN(20); {
		case x < 10:
			tb := tomb{why: released(1 + r.IntN(3)), after: time.Duration(r.IntN(1e6)) * time.Millisecond, revisions: uint32(r.IntN(100)), outcome: accum.Outcome(r.IntN(5)), applied: uint64(r.IntN(50))}
			ts.add(s, c, tb)
			m.add(s, c, tb)
			if c == "" {
				marks = append(marks, s)
			}
			what = fmt.Sprintf("add(%q, %q)", s, c)
		case x < 12:
			ts.remove(s, c)
			m.remove(s, c)
			what = fmt.Sprintf("remove(%q, %q)", s, c)
		case x < 15 && len(marks) > 0:
			s = marks[r.IntN(len(marks))]
			k := finals()
			ts.keep(s, k)
			m.keep(s, k)
			what = fmt.Sprintf("keep(%q)", s)
		case x < 16:
			before := now.Add(-time.Duration(r.IntN(200)) * time.Second)
			ts.expire(before)
			m.expire(before)
			what = "expire"
		case x < 17:
			require.Equal(t, m.anyOf(s), ts.anyOf(s), "op %d: anyOf(%q)", op, s)
			what = "anyOf"
		default:
			got, gok := ts.get(s, c)
			want, wok := m.get(s, c)
			require.Equal(t, wok, gok, "op %d: get(%q, %q) found", op, s, c)
			require.Equal(t, want, got, "op %d: get(%q, %q)", op, s, c)
			require.Equal(t, m.closedAt(s), ts.closedAt(s), "op %d: closedAt(%q)", op, s)
			require.Equal(t, m.kept(s), ts.kept(s), "op %d: kept(%q)", op, s)
			what = "get"
		}
		requireSameTombstones(t, m, ts, fmt.Sprintf("op %d, %s", op, what))
	}
}

// requireSameTombstones fails unless ts holds what m holds.
func requireSameTombstones(t *testing.T, m *modelTombstones, ts *tombstones, at string) {
	t.Helper()
	require.Equal(t, m.len(), ts.len(), "%s: entries", at)
	require.LessOrEqual(t, ts.len(), ts.limit, "%s: over the limit", at)
	for k, want := range m.byKey {
		got, ok := ts.get(k.session, k.call)
		require.True(t, ok, "%s: (%q, %q) held by the model only", at, k.session, k.call)
		require.Equal(t, want, got, "%s: (%q, %q)", at, k.session, k.call)
	}
	require.Equal(t, m.keptBytes, ts.keptBytes, "%s: kept bytes", at)
	require.Equal(t, m.keptLive, ts.keptLive, "%s: marks keeping finals", at)
	require.Equal(t, m.keptOrder, ts.keptOrder, "%s: kept order", at)
	require.Len(t, ts.spaces, len(m.spaces), "%s: namespaces", at)
	for space, mq := range m.spaces {
		q := ts.spaces[space]
		require.NotNil(t, q, "%s: namespace %q", at, space)
		require.Equal(t, mq.live, q.live, "%s: namespace %q's entries", at, space)
		var want, got []uint64
		for _, e := range mq.queue[mq.head:] {
			if m.byKey[e.key].seq == e.seq {
				want = append(want, e.seq)
			}
		}
		for _, e := range q.queue[q.head:] {
			if ts.queuedHeld(e) {
				got = append(got, e.seq)
			}
		}
		require.Equal(t, want, got, "%s: namespace %q's queue, oldest first", at, space)
	}
	require.Len(t, ts.finals, ts.finalsHeld(), "%s: finals of slots not holding any", at)
}
