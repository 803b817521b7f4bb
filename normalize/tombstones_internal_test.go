package normalize

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ENDED revisions the marks of closed sessions keep count against
// one bound of every namespace together: a mark replaced, evicted or
// removed gives its bytes back, and a close that would take them over
// the bound makes the oldest close's lost (named only) to make room.
func TestTombstonesKeepFinalsBounded(t *testing.T) {
	final := func(call string, n int) *ShellExec {
		return &ShellExec{ToolCallID: call, Revision: 2, Output: &Text{Text: strings.Repeat("x", n)}}
	}
	kept := func(calls ...string) *keptFinals {
		k := &keptFinals{}
		for _, c := range calls {
			x := final(c, maxKeptFinalBytes/4)
			k.finals = append(k.finals, x)
			k.bytes += execTextBytes(x)
		}
		return k
	}
	lost := func(k *keptFinals) []string {
		var ids []string
		for _, l := range k.lost {
			ids = append(ids, l.call)
		}
		return ids
	}
	ts := newTombstones(3)
	ts.add("a", "", tomb{why: releasedClosed, applied: 5})
	ts.keep("a", kept("c1", "c2"))
	assert.Equal(t, maxKeptFinalBytes/2, ts.keptBytes)
	require.NotNil(t, ts.kept("a"))
	assert.Len(t, ts.kept("a").finals, 2)

	ts.add("b", "", tomb{why: releasedClosed, applied: 5})
	ts.keep("b", kept("d1", "d2", "d3")) // over the bound with a's: a's go
	assert.Equal(t, 3*maxKeptFinalBytes/4, ts.keptBytes)
	assert.Len(t, ts.kept("b").finals, 3)
	assert.Empty(t, ts.kept("a").finals)
	assert.Equal(t, []string{"c1", "c2"}, lost(ts.kept("a")), "named when asked for")

	ts.keep("b", kept("d1", "d2", "d3", "d4", "d5")) // more than the bound alone
	assert.Zero(t, ts.keptBytes)
	assert.Len(t, ts.kept("b").lost, 5)

	ts.keep("nothing", kept("e1")) // no mark: nothing kept
	assert.Nil(t, ts.kept("nothing"))
	assert.Zero(t, ts.keptBytes)

	ts.keep("a", kept("c1"))
	ts.add("a", "", tomb{why: releasedClosed, applied: 9}) // replaced
	assert.Zero(t, ts.keptBytes)
	ts.keep("a", kept("c1"))
	ts.keep("a", kept("c1", "c2")) // kept again: the first one's bytes given back
	assert.Equal(t, maxKeptFinalBytes/2, ts.keptBytes)
	ts.remove("a", "")
	assert.Zero(t, ts.keptBytes)

	ts.keep("b", kept("d1"))
	for _, c := range []string{"x", "y", "z"} {
		ts.add("b", c, tomb{why: releasedClosed}) // evicts the oldest: b's mark
	}
	assert.Nil(t, ts.kept("b"))
	assert.Zero(t, ts.keptBytes)
	assert.Zero(t, ts.keptLive)
}

// The revisions a close kept go (named only) once they are older than
// what expire is given: the sweep's grace period.
func TestTombstonesKeptFinalsExpire(t *testing.T) {
	t0 := time.Unix(1000, 0)
	kept := func(at time.Time, call string) *keptFinals {
		x := &ShellExec{ToolCallID: call, Revision: 2, Output: &Text{Text: "out\n"}}
		return &keptFinals{finals: []*ShellExec{x}, bytes: execTextBytes(x), at: at}
	}
	ts := newTombstones(16)
	for _, s := range []string{"a", "b"} {
		ts.add(s, "", tomb{why: releasedClosed, applied: 3})
	}
	ts.keep("a", kept(t0, "c1"))
	ts.keep("b", kept(t0.Add(10*time.Second), "d1"))
	ts.keep("a", kept(t0.Add(20*time.Second), "c2")) // a closed again later

	ts.expire(t0.Add(15 * time.Second))
	assert.Empty(t, ts.kept("b").finals, "b's close is past it")
	require.Len(t, ts.kept("b").lost, 1)
	assert.Equal(t, "d1", ts.kept("b").lost[0].call)
	require.Len(t, ts.kept("a").finals, 1, "a's latest close is not")
	assert.Equal(t, "c2", ts.kept("a").finals[0].ToolCallID)
	assert.Equal(t, execTextBytes(ts.kept("a").finals[0]), ts.keptBytes)
	assert.Equal(t, 1, ts.keptLive)

	ts.expire(t0.Add(time.Minute))
	assert.Empty(t, ts.kept("a").finals)
	assert.Zero(t, ts.keptBytes)
	assert.Zero(t, ts.keptLive)
	assert.Empty(t, ts.keptOrder)
}
