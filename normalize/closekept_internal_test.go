package normalize

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func closeKeptFrame(id, out string) []string {
	return []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"` + id + `","kind":"execute","title":"cat f","status":"in_progress","rawInput":{"command":"cat f"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"` + out + `"}}]}}}`,
	}
}

// With a store, what a close kept is a stored session of its own: the
// closed session's state does not carry it (a load of it, for each
// request sent again, stays small), and it goes from the store with the
// grace period, not with the closed session's keys (twice the TTL).
func TestClosedFinalsStoredApartForTheGrace(t *testing.T) {
	st := store.NewMemory()
	n := New(WithStore(st), WithGrace(time.Second))
	out := strings.Repeat("x", 10000)
	seq := uint64(0)
	for _, id := range []string{"c1", "c2"} {
		for _, f := range closeKeptFrame(id, out) {
			seq++
			_, err := n.Feed("S", []byte(f), WithSequence(seq), WithSkipApplied())
			require.NoError(t, err)
		}
	}
	_, err := n.CloseSession("S", WithSequence(seq+1), WithSkipApplied())
	require.NoError(t, err)

	ctx := context.Background()
	closed, err := st.Load(ctx, "S")
	require.NoError(t, err)
	require.NotZero(t, closed.Version)
	assert.Empty(t, closed.Streams, "the closed session holds no texts")
	kept, err := st.Load(ctx, finalsKey("S", seq+1))
	require.NoError(t, err)
	require.NotZero(t, kept.Version)
	k := n.ss.finalsOf(kept)
	require.NotNil(t, k)
	assert.Len(t, k.finals, 2)
	assert.Equal(t, out, k.finals[0].Output.Text)

	time.Sleep(1100 * time.Millisecond)
	kept, err = st.Load(ctx, finalsKey("S", seq+1))
	require.NoError(t, err)
	assert.Zero(t, kept.Version, "gone with the grace")
	closed, err = st.Load(ctx, "S")
	require.NoError(t, err)
	assert.NotZero(t, closed.Version, "the closed session stays")
}

// finalsRefused is the memory store, except that it refuses to keep
// what a close kept while armed.
type finalsRefused struct {
	store.Store
	armed atomic.Bool
}

func (f *finalsRefused) Commit(ctx context.Context, session string, base uint64, c *store.Change) (uint64, error) {
	if f.armed.Load() && strings.HasPrefix(session, "\xff\x00\x00") {
		return 0, errors.New("store down")
	}
	return f.Store.Commit(ctx, session, base, c)
}

// A close whose ENDED revisions the store cannot keep is not applied
// (UNAVAILABLE: it may be sent again), rather than applied with them
// lost.
func TestCloseNotAppliedWhenItsFinalsCannotBeKept(t *testing.T) {
	st := &finalsRefused{Store: store.NewMemory()}
	n := New(WithStore(st))
	seq := uint64(0)
	for _, f := range closeKeptFrame("c1", "ok") {
		seq++
		_, err := n.Feed("S", []byte(f), WithSequence(seq), WithSkipApplied())
		require.NoError(t, err)
	}
	st.armed.Store(true)
	_, err := n.CloseSession("S", WithSequence(seq+1), WithSkipApplied())
	var fe *FrameError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, Unavailable, fe.Code, fe.Message)
	stats, ok := n.SessionStats("S")
	require.True(t, ok, "not closed")
	assert.Equal(t, 1, stats.Calls)

	st.armed.Store(false)
	revs, err := n.CloseSession("S", WithSequence(seq+1), WithSkipApplied())
	require.NoError(t, err)
	require.Len(t, revs, 1)
	assert.Equal(t, StateEnded, revs[0].State)
	_, ok = n.SessionStats("S")
	assert.False(t, ok, "closed")
}
