package normalize_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/acpnorm/acpnorm/store/redisstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stream cut while a turn's end or a session's close ends several open
// calls (the first ENDED revision sent, the rest lost with the stream):
// the client sends the request again on a new stream, saying what it
// holds, and is handed the ENDED revision of every call it missed, or is
// told which it cannot have. No call is left open on the client with
// nothing said; on every store, and with outputs too large to keep an
// answer whole (which are made again from the calls' state, or, for the
// calls a close released, from what it kept): within the bounds here,
// every one is handed on.
func TestEndingRequestCutHandsOnEveryEnded(t *testing.T) {
	stores := map[string]func(t *testing.T) store.Store{
		"no store":     func(*testing.T) store.Store { return nil },
		"memory store": func(*testing.T) store.Store { return store.NewMemory() },
		"redis": func(t *testing.T) store.Store {
			st, err := redisstore.Open(testredis.Start(t))
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for name, mk := range stores {
		for _, close := range []bool{false, true} {
			for _, big := range []bool{false, true} {
				for _, claims := range []bool{true, false} {
					for _, queued := range []bool{false, true} {
						t.Run(fmt.Sprintf("%s/close=%v/big=%v/claims=%v/queued=%v", name, close, big, claims, queued), func(t *testing.T) {
							var opts []normalize.Option
							if st := mk(t); st != nil {
								opts = append(opts, normalize.WithStore(st))
							}
							endingRequestCut(t, normalize.New(opts...), close, big, claims, queued)
						})
					}
				}
			}
		}
	}
}

// endingRequestCut cuts the stream of a turn's end (or a close) after its
// first ENDED revision and sends it again, with what the client holds
// (claims) or, as a client whose first request sent again is that one
// (claims ride only on frames), without. queued: every revision was
// taken (into the stream's queue) and the rest died there with the
// stream, so the request saw no failure.
func endingRequestCut(t *testing.T, n *normalize.Normalizer, close, big, claims, queued bool) {
	out := "a\n"
	if big {
		out = strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB a call
	}
	upd := func(u string) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":` + u + `}}`)
	}
	ids := []string{"c1", "c2", "c3", "c4"}
	held := map[string]uint32{}
	var seq uint64
	for _, id := range ids {
		for _, f := range [][]byte{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"` + id + `","kind":"execute","title":"cat f","status":"in_progress","rawInput":{"command":"cat f"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":` + strconv.Quote(out) + `}}]}`),
		} {
			seq++
			got, err := n.Feed("S", f, normalize.WithSequence(seq), normalize.WithSkipApplied())
			require.NoError(t, err)
			for _, x := range got {
				held[x.ToolCallID] = x.Revision
			}
		}
	}
	end := func(opts ...normalize.FeedOption) error {
		opts = append(opts, normalize.WithSequence(seq+1), normalize.WithSkipApplied())
		var err error
		if close {
			_, err = n.CloseSession("S", opts...)
		} else {
			_, err = n.TurnEnded("S", false, opts...)
		}
		return err
	}
	cut := errors.New("stream cut")
	sent := 0
	err := end(normalize.WithEmit(func(ev normalize.Event) error {
		if x := ev.ShellExec; x != nil && x.State == normalize.StateEnded {
			if sent++; sent == 1 {
				held[x.ToolCallID] = x.Revision
				return nil
			}
		}
		if queued {
			return nil
		}
		return cut
	}))
	if queued {
		require.NoError(t, err)
	} else {
		require.ErrorIs(t, err, cut)
	}

	ended := map[string]bool{}
	var said []string
	var again []normalize.FeedOption
	if claims {
		again = append(again, normalize.WithHeld(held), normalize.WithHeldSequence(seq))
	}
	err = end(append(again,
		normalize.WithEmit(func(ev normalize.Event) error {
			if x := ev.ShellExec; x != nil && x.Revision > held[x.ToolCallID] {
				assert.Equal(t, held[x.ToolCallID]+1, x.Revision, "%s: the revision after the one held", x.ToolCallID)
				assert.Equal(t, normalize.StateEnded, x.State, x.ToolCallID)
				require.NotNil(t, x.Output, x.ToolCallID)
				assert.Equal(t, out, x.Output.Text, "%s: the whole output", x.ToolCallID)
				held[x.ToolCallID] = x.Revision
				ended[x.ToolCallID] = true
			}
			if e := ev.Error; e != nil && e.Code != normalize.AlreadyExists {
				said = append(said, e.Message)
			}
			return nil
		}))...)
	require.NoError(t, err)
	assert.Empty(t, said, "every ENDED revision is kept (a close's too, with a store), none named")
	for _, id := range ids[1:] {
		if !ended[id] {
			found := false
			for _, m := range said {
				found = found || strings.Contains(m, `"`+id+`"`)
			}
			assert.True(t, found, "%s: neither handed on nor named as lost (errors: %q)", id, said)
		}
	}
}

// Without a store, a turn's end whose ENDED revisions died in the
// stream's queue, then a close that ended nothing (the calls were ended):
// the turn's end sent again, after the session went, hands on every
// ENDED revision, kept with the close's mark.
func TestTurnEndLostThenCloseHandsOnEveryEnded(t *testing.T) {
	n := normalize.New()
	ids := []string{"c1", "c2", "c3"}
	for i, id := range ids {
		_, err := n.Feed("S", []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"`+id+`","kind":"execute","title":"ls","status":"in_progress","rawInput":{"command":"ls"}}}}`),
			normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied())
		require.NoError(t, err)
	}
	turn := uint64(len(ids) + 1)
	lost, err := n.TurnEnded("S", false, normalize.WithSequence(turn), normalize.WithSkipApplied())
	require.NoError(t, err)
	require.Len(t, lost, len(ids), "made, and lost with the stream")
	_, err = n.CloseSession("S", normalize.WithSequence(turn+1), normalize.WithSkipApplied())
	require.NoError(t, err)

	got := map[string]*normalize.ShellExec{}
	_, err = n.TurnEnded("S", false, normalize.WithSequence(turn), normalize.WithSkipApplied(),
		normalize.WithEmit(func(ev normalize.Event) error {
			if x := ev.ShellExec; x != nil {
				got[x.ToolCallID] = x
			}
			return nil
		}))
	require.NoError(t, err)
	require.Len(t, got, len(ids))
	for _, x := range lost {
		assert.Equal(t, x.Revision, got[x.ToolCallID].Revision, x.ToolCallID)
		assert.Equal(t, normalize.StateEnded, got[x.ToolCallID].State)
		assert.Equal(t, turn, got[x.ToolCallID].Sequence, "answering the request sent again")
	}
}

// What a close kept is kept for the grace period: a close sent again
// after it (and a sweep) names the calls instead of handing them on.
func TestClosedFinalsKeptForTheGrace(t *testing.T) {
	now := time.Unix(1000, 0)
	n := normalize.New(normalize.WithClock(func() time.Time { return now }), normalize.WithGrace(30*time.Second))
	_, err := n.Feed("S", []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"ls","status":"in_progress","rawInput":{"command":"ls"}}}}`),
		normalize.WithSequence(1), normalize.WithSkipApplied())
	require.NoError(t, err)
	_, err = n.CloseSession("S", normalize.WithSequence(2), normalize.WithSkipApplied())
	require.NoError(t, err)
	again := func() (execs int, named []string) {
		_, err := n.CloseSession("S", normalize.WithSequence(2), normalize.WithSkipApplied(),
			normalize.WithEmit(func(ev normalize.Event) error {
				if ev.ShellExec != nil {
					execs++
				}
				if e := ev.Error; e != nil && e.Code == normalize.FailedPrecondition {
					named = append(named, e.ToolCallID)
				}
				return nil
			}))
		require.NoError(t, err)
		return execs, named
	}
	now = now.Add(20 * time.Second)
	n.Sweep()
	execs, named := again()
	assert.Equal(t, 1, execs, "within the grace: handed on")
	assert.Empty(t, named)
	now = now.Add(20 * time.Second)
	n.Sweep()
	execs, named = again()
	assert.Zero(t, execs, "past it: named")
	assert.Equal(t, []string{"c1"}, named)
}

// Of a close's calls over what it keeps, the ones kept are the last
// opened (one request ends them all at once: the first are the most
// likely handed on before a cut), and the others are named.
func TestClosedFinalsKeepTheLastOpened(t *testing.T) {
	n := normalize.New(normalize.WithTextLimit(1 << 20))
	out := strings.Repeat("x", 1<<20-64)
	var ids []string
	seq := uint64(0)
	for i := range 10 {
		id := fmt.Sprintf("c%02d", i)
		ids = append(ids, id)
		for _, f := range []string{
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"` + id + `","kind":"execute","title":"cat f","status":"in_progress","rawInput":{"command":"cat f"}}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"` + out + `"}}]}}}`,
		} {
			seq++
			_, err := n.Feed("S", []byte(f), normalize.WithSequence(seq), normalize.WithSkipApplied())
			require.NoError(t, err)
		}
	}
	_, err := n.CloseSession("S", normalize.WithSequence(seq+1), normalize.WithSkipApplied())
	require.NoError(t, err)
	var handed, named []string
	_, err = n.CloseSession("S", normalize.WithSequence(seq+1), normalize.WithSkipApplied(),
		normalize.WithEmit(func(ev normalize.Event) error {
			if x := ev.ShellExec; x != nil {
				handed = append(handed, x.ToolCallID)
			}
			if e := ev.Error; e != nil && e.Code == normalize.FailedPrecondition {
				named = append(named, e.ToolCallID)
			}
			return nil
		}))
	require.NoError(t, err)
	assert.Equal(t, []string{"c09", "c08", "c07", "c06", "c05", "c04", "c03", "c02"}, handed, "8 MiB of outputs of just under 1 MiB")
	assert.Equal(t, []string{"c01", "c00"}, named)
	assert.ElementsMatch(t, ids, append(handed, named...), "every call handed on or named")
}

// The mark of a closed session, which keeps its close's ENDED revisions,
// is the newest of its tombstones: when tombstones make room for others,
// the calls' go first.
func TestClosedMarkOutlivesItsCallsTombstones(t *testing.T) {
	n := normalize.New(normalize.WithTombstones(5))
	open := func(id string) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"` + id + `","kind":"execute","title":"ls","status":"in_progress","rawInput":{"command":"ls"}}}}`)
	}
	for i, id := range []string{"c1", "c2", "c3", "c4"} {
		_, err := n.Feed("A", open(id), normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied())
		require.NoError(t, err)
	}
	_, err := n.CloseSession("A", normalize.WithSequence(5), normalize.WithSkipApplied())
	require.NoError(t, err)
	_, err = n.Feed("B", open("d1"), normalize.WithSequence(1), normalize.WithSkipApplied())
	require.NoError(t, err)
	_, err = n.CloseSession("B", normalize.WithSequence(2), normalize.WithSkipApplied())
	require.NoError(t, err)

	handed := 0
	_, err = n.CloseSession("A", normalize.WithSequence(5), normalize.WithSkipApplied(),
		normalize.WithEmit(func(ev normalize.Event) error {
			if ev.ShellExec != nil {
				handed++
			}
			return nil
		}))
	require.NoError(t, err)
	assert.Equal(t, 4, handed)
}
