package service

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// deliveredModel is delivered's record of calls kept as plain values, one
// map write per change: what delivered's records by pointer, and the one
// it looked up last, must answer as.
type deliveredModel map[callKey]carried

func (m deliveredModel) put(k callKey, c carried, known bool) {
	if !known && len(m) >= maxDelivered {
		clear(m)
	}
	m[k] = c
}

func (m deliveredModel) needsWhole(k callKey, rev uint32) bool {
	c, ok := m[k]
	whole := rev > 1 && (!ok || c.made+1 != rev)
	c.made = rev
	m.put(k, c, ok)
	return whole
}

func (m deliveredModel) handedOn(k callKey, rev uint32) {
	c, ok := m[k]
	c.made, c.sent = max(c.made, rev), max(c.sent, rev)
	m.put(k, c, ok)
}

func (m deliveredModel) again(k callKey, rev uint32, whole bool) bool {
	c, ok := m[k]
	if c.sent > 0 && (c.sent >= rev || !whole && c.sent+1 != rev) {
		return false
	}
	c.made, c.sent = max(c.made, rev), rev
	m.put(k, c, ok)
	return true
}

func (m deliveredModel) discard(session string) {
	for k, c := range m {
		switch {
		case k.session != session || c.made == c.sent:
		case c.sent == 0:
			delete(m, k)
		default:
			c.made = c.sent
			m[k] = c
		}
	}
}

func (m deliveredModel) forget(session string) {
	for k := range m {
		if k.session == session {
			delete(m, k)
		}
	}
}

// Random runs of every operation on a few sessions and calls, past the
// bound, answer as the model does, and hold what it holds.
func TestDeliveredMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 28))
	for run := range 40 {
		d, m := newDelivered(), deliveredModel{}
		calls, steps := 1+rng.IntN(6), 3000
		if run%10 == 0 {
			calls, steps = maxDelivered+50, 20000 // starting over
		}
		startedOver := false
		for step := range steps {
			k := callKey{string(rune('a' + rng.IntN(3))), string(rune('0' + rng.IntN(calls%10+1)))}
			if calls > 10 {
				k.call = string(rune(0x100 + rng.IntN(calls)))
			}
			rev := uint32(1 + rng.IntN(8))
			switch op := rng.IntN(20); {
			case op < 7:
				require.Equal(t, m.needsWhole(k, rev), d.needsWhole(k.session, k.call, rev, false), "run %d step %d needsWhole", run, step)
			case op < 14:
				m.handedOn(k, rev)
				d.handedOn(k.session, k.call, rev)
			case op < 17:
				whole := rng.IntN(2) == 0
				require.Equal(t, m.again(k, rev, whole), d.again(k.session, k.call, rev, whole), "run %d step %d again", run, step)
			case op < 18:
				m.discard(k.session)
				d.discard(k.session)
			case op < 19:
				m.forget(k.session)
				d.forget(k.session)
			default:
				require.Equal(t, m[k].sent, d.carried(k.session, k.call), "run %d step %d carried", run, step)
			}
			require.Equal(t, len(m), len(d.last), "run %d step %d", run, step)
			startedOver = startedOver || len(m) == 1 && calls > 10
		}
		if calls > 10 {
			require.True(t, startedOver, "run %d never passed the bound", run)
		}
		for k, c := range m {
			require.NotNil(t, d.last[k])
			require.Equal(t, c, *d.last[k], "%v", k)
		}
	}
}

// Starting over (as closedGot does when its own map is full) forgets the
// call looked up last too: its next revision is whole.
func TestDeliveredStartOverForgetsRecent(t *testing.T) {
	d := newDelivered()
	require.False(t, d.needsWhole("s", "c", 1, false))
	d.handedOn("s", "c", 1)
	d.startOver()
	require.Zero(t, d.carried("s", "c"))
	require.True(t, d.needsWhole("s", "c", 2, false))
}
