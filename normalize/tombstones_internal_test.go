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
// the bound keeps none, naming each as lost.
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
	ts := newTombstones(3)
	ts.add("a", "", tomb{why: releasedClosed, applied: 5})
	ts.keep("a", kept("c1", "c2"))
	assert.Equal(t, maxKeptFinalBytes/2, ts.keptBytes)
	require.NotNil(t, ts.kept("a"))
	assert.Len(t, ts.kept("a").finals, 2)

	ts.add("b", "", tomb{why: releasedClosed, applied: 5})
	ts.keep("b", kept("d1", "d2", "d3")) // over the bound with a's
	assert.Equal(t, maxKeptFinalBytes/2, ts.keptBytes)
	assert.Empty(t, ts.kept("b").finals)
	assert.Len(t, ts.kept("b").lost, 3)

	ts.keep("nothing", kept("e1")) // no mark: nothing kept
	assert.Nil(t, ts.kept("nothing"))
	assert.Equal(t, maxKeptFinalBytes/2, ts.keptBytes)

	ts.add("a", "", tomb{why: releasedClosed, applied: 9}) // replaced
	assert.Zero(t, ts.keptBytes)
	ts.keep("a", kept("c1"))
	ts.remove("a", "")
	assert.Zero(t, ts.keptBytes)

	ts.keep("b", kept("d1"))
	for _, c := range []string{"x", "y", "z"} {
		ts.add("b", c, tomb{why: releasedClosed}) // evicts the oldest: b's mark
	}
	assert.Nil(t, ts.kept("b"))
	assert.Zero(t, ts.keptBytes)
}
