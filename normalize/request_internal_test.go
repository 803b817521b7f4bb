package normalize

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request goes back to the pool zeroed: the next call, whatever its
// namespace and options, starts from nothing of the one before (its
// namespace, context, callbacks, claims, read-ahead, reply).
func TestRequestRecycledZeroed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := []FeedOption{
		WithContext(ctx), WithSequence(7), WithDialect("codex"), WithCwd("/w"), WithDirection(FromAgent),
		WithEmit(func(Event) error { return nil }), WithWhole(func(string, string, uint32, bool) bool { return true }), WithDiscarded(func(string) {}),
		WithFinalChanges(), WithSkipApplied(), WithHeld(map[string]uint32{"c": 3}), WithHeldSequence(9),
		WithPrepared(&Prepared{name: "codex"}), WithNextDialect(func(string) {}), WithNextReader(func(string) {}),
	}
	reused := 0
	for range 100 {
		r := newRequest(newNamespace("a"), opts)
		r.collect = append(r.collect, &ShellExec{ToolCallID: "c"})
		rep := newTestReply(r)
		rep.held = append(rep.held, Event{ShellExec: &ShellExec{ToolCallID: "c"}})
		revs, err := r.done(nil)
		require.NoError(t, err)
		require.Len(t, revs, 1, "what the call made is handed back")

		next := newRequest(newNamespace("b"), nil)
		if next == r {
			reused++
		}
		assert.Equal(t, request{ns: newNamespace("b"), ctx: context.Background()}, *next)
		_, _ = next.done(nil)
	}
	t.Logf("%d of 100 requests came back from the pool", reused)
}

func newTestReply(r *request) *reply {
	return (&sessions{}).newReply(r, 0)
}

// A call's callbacks end with it: a Feed without WithEmit after one with
// it returns its revisions instead of handing them to the earlier emit,
// and one in another namespace does not find the earlier's sessions.
func TestRecycledRequestKeepsNothing(t *testing.T) {
	n := New()
	a, b := n.Namespace("a"), n.Namespace("b")
	call := func(id string) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"` + id + `","kind":"execute","title":"ls","rawInput":{"command":"ls"}}}}`)
	}
	var emitted []Event
	for i := range 50 {
		emitted = emitted[:0]
		id := string(rune('a'+i%26)) + string(rune('0'+i/26))
		revs, err := a.Feed("s", call(id), WithEmit(func(ev Event) error { emitted = append(emitted, ev); return nil }))
		require.NoError(t, err)
		require.Empty(t, revs)
		require.Len(t, emitted, 1)

		revs, err = b.Feed("s", call(id))
		require.NoError(t, err)
		require.Len(t, emitted, 1, "the earlier call's emit got the later call's revision")
		require.Len(t, revs, 1)
		assert.Equal(t, uint32(1), revs[0].Revision, "namespace b's call %s starts at revision 1", id)
	}
	st, ok := a.SessionStats("s")
	require.True(t, ok)
	assert.Equal(t, 50, st.Calls)
	st, ok = b.SessionStats("s")
	require.True(t, ok)
	assert.Equal(t, 50, st.Calls)
}
