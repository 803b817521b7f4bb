package normalize

import (
	"strings"
	"testing"

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
