package normalize_test

import (
	"context"
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

// keptStores are the stores a close's kept revisions are tested on: the
// memory store and a real redis-server.
var keptStores = map[string]func(t *testing.T) store.Store{
	"memory store": func(*testing.T) store.Store { return store.NewMemory() },
	"redis": func(t *testing.T) store.Store {
		st, err := redisstore.Open(testredis.Start(t))
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return st
	},
}

// openWithOutput feeds session "S" calls whose ids are ids, each opened
// and given out as output (two frames each, from sequence 1), and
// returns the last sequence.
func openWithOutput(t *testing.T, n *normalize.Normalizer, ids []string, out string) uint64 {
	t.Helper()
	var seq uint64
	for _, id := range ids {
		for _, f := range [][]byte{
			nsOpen(id, "cat f"),
			nsUpdate(`{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":` + strconv.Quote(out) + `}}]}`),
		} {
			seq++
			_, err := n.Feed("S", f, normalize.WithSequence(seq), normalize.WithSkipApplied())
			require.NoError(t, err)
		}
	}
	return seq
}

// closeAgain closes "S" as request seq and returns the ENDED revisions
// handed on by call, and the calls named FAILED_PRECONDITION.
func closeAgain(t *testing.T, n *normalize.Normalizer, seq uint64) (map[string]*normalize.ShellExec, []string) {
	t.Helper()
	got := map[string]*normalize.ShellExec{}
	var named []string
	_, err := n.CloseSession("S", normalize.WithSequence(seq), normalize.WithSkipApplied(),
		normalize.WithEmit(func(ev normalize.Event) error {
			if x := ev.ShellExec; x != nil && x.State == normalize.StateEnded {
				assert.True(t, ev.Again, "%s: marked Again", x.ToolCallID)
				got[x.ToolCallID] = x
			}
			if e := ev.Error; e != nil && e.Code == normalize.FailedPrecondition {
				named = append(named, e.ToolCallID)
			}
			return nil
		}))
	require.NoError(t, err)
	return got, named
}

// With a store, a close whose answer is too large to keep whole (30
// calls of 10 KB of output: over the 256 KiB an answer keeps), sent
// again because its answer was lost, hands on the ENDED revision of
// every call it ended, whole, on this replica or another: before, the
// answer was kept only as what to make again from the calls, which the
// close had released, and every call was named FAILED_PRECONDITION.
func TestLargeCloseSentAgainHandsOnEveryEnded(t *testing.T) {
	out := strings.Repeat("0123456789", 1000)
	var ids []string
	for i := range 30 {
		ids = append(ids, fmt.Sprintf("c%02d", i))
	}
	for name, mk := range keptStores {
		for _, other := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/another replica=%v", name, other), func(t *testing.T) {
				st := mk(t)
				n := normalize.New(normalize.WithStore(st))
				seq := openWithOutput(t, n, ids, out)
				want, err := n.CloseSession("S", normalize.WithSequence(seq+1), normalize.WithSkipApplied())
				require.NoError(t, err)
				require.Len(t, want, len(ids))

				again := n
				if other {
					again = normalize.New(normalize.WithStore(st))
				}
				got, named := closeAgain(t, again, seq+1)
				assert.Empty(t, named, "nothing named: every ENDED revision is kept")
				for _, w := range want {
					x := got[w.ToolCallID]
					if assert.NotNil(t, x, "%s: handed on again", w.ToolCallID) {
						assert.Equal(t, w.Revision, x.Revision, w.ToolCallID)
						assert.Equal(t, w.Outcome, x.Outcome, w.ToolCallID)
						assert.Equal(t, seq+1, x.Sequence, w.ToolCallID)
						if assert.NotNil(t, x.Output, w.ToolCallID) {
							assert.Equal(t, out, x.Output.Text, "%s: the whole output", w.ToolCallID)
						}
					}
				}
			})
		}
	}
}

// What a close keeps with a store is bounded as without one: of a
// close's calls over maxClosedFinalBytes of text, the last opened are
// kept and the others named; and it is kept for the grace period only,
// named after.
func TestLargeCloseKeptWithinBounds(t *testing.T) {
	now := time.Unix(1000, 0)
	n := normalize.New(normalize.WithStore(store.NewMemory()), normalize.WithTextLimit(1<<20),
		normalize.WithClock(func() time.Time { return now }), normalize.WithGrace(30*time.Second))
	var ids []string
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("c%02d", i))
	}
	seq := openWithOutput(t, n, ids, strings.Repeat("x", 1<<20-64))
	_, err := n.CloseSession("S", normalize.WithSequence(seq+1), normalize.WithSkipApplied())
	require.NoError(t, err)

	now = now.Add(20 * time.Second)
	got, named := closeAgain(t, n, seq+1)
	var handed []string
	for id := range got {
		handed = append(handed, id)
	}
	assert.ElementsMatch(t, []string{"c09", "c08", "c07", "c06", "c05", "c04", "c03", "c02"}, handed, "8 MiB of outputs of just under 1 MiB")
	assert.ElementsMatch(t, []string{"c01", "c00"}, named)

	now = now.Add(20 * time.Second)
	got, named = closeAgain(t, n, seq+1)
	assert.Empty(t, got, "past the grace: named")
	assert.ElementsMatch(t, ids, named)
}

// A frame whose ENDED revision was too large to keep whole in its
// answer, sent again after the session was closed, is answered with that
// revision, which the close kept.
func TestLargeEndSentAgainAfterClose(t *testing.T) {
	big := strings.Repeat("0123456789abcdef\\n", 20000) // 340 KB as JSON
	end := nsUpdate(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","_meta":{"terminal_output":{"terminal_id":"c1","data":"` + big + `"},"terminal_exit":{"terminal_id":"c1","exit_code":0}}}`)
	for name, mk := range keptStores {
		t.Run(name, func(t *testing.T) {
			n := normalize.New(normalize.WithStore(mk(t)))
			feedSkipping(t, n, 1, nsOpen("c1", "seq 1 20000"))
			want, errs := splitEvents(feedSkipping(t, n, 2, end))
			require.Empty(t, errs)
			require.Len(t, want, 1)
			_, err := n.CloseSession("S", normalize.WithSequence(3), normalize.WithSkipApplied())
			require.NoError(t, err)

			execs, errs := splitEvents(feedSkipping(t, n, 2, end))
			assert.Empty(t, errs)
			require.Len(t, execs, 1)
			assert.Equal(t, want[0].Revision, execs[0].Revision)
			assert.Equal(t, normalize.StateEnded, execs[0].State)
			if assert.NotNil(t, execs[0].Output) {
				assert.Equal(t, want[0].Output.Text, execs[0].Output.Text)
			}
		})
	}
}

// A frame or a close sent again after the session was closed is answered
// as applied and leaves no session behind: before, the frame made an
// empty session (or, with a store, cached the closed one) that stayed
// until the idle TTL, counted against the sessions held.
func TestSentAgainAfterCloseLeavesNoSession(t *testing.T) {
	stores := map[string]func(t *testing.T) store.Store{"no store": func(*testing.T) store.Store { return nil }}
	for name, mk := range keptStores {
		stores[name] = mk
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			var opts []normalize.Option
			if st := mk(t); st != nil {
				opts = append(opts, normalize.WithStore(st))
			}
			n := normalize.New(opts...)
			seq := openWithOutput(t, n, []string{"c1", "c2"}, "ok\n")
			_, err := n.CloseSession("S", normalize.WithSequence(seq+1), normalize.WithSkipApplied())
			require.NoError(t, err)
			require.Zero(t, n.Stats().Sessions)

			for _, e := range feedSkipping(t, n, seq, nsOpen("c2", "cat f")) {
				if e.Error != nil {
					assert.Equal(t, normalize.AlreadyExists, e.Error.Code, e.Error.Message)
				}
			}
			assert.Zero(t, n.Stats().Sessions, "a frame sent again")
			_, _ = closeAgain(t, n, seq+1)
			assert.Zero(t, n.Stats().Sessions, "a close sent again")
			_, ok := n.SessionStats("S")
			assert.False(t, ok)

			// Started again from sequence 1, it is held as before.
			feedSkipping(t, n, 1, nsOpen("d1", "ls"))
			assert.Equal(t, 1, n.Stats().Sessions)
		})
	}
}

// A turn's end or a close sent again for a closed session whose mark is
// gone (pushed out of the tombstones, or, with a store, the session's
// keys expired) is answered FAILED_PRECONDITION, naming the session and
// why: before, it got no answer at all, and a client whose stream broke
// during the close could not tell that what the close made is lost.
func TestControlSentAgainAfterTheMarkWentIsAnswered(t *testing.T) {
	type setup struct {
		name string
		make func(t *testing.T) *normalize.Normalizer
		// forget makes the normalizer forget session "S"'s close.
		forget func(t *testing.T, n *normalize.Normalizer)
	}
	for _, tc := range []setup{
		{"no store", func(*testing.T) *normalize.Normalizer { return normalize.New(normalize.WithTombstones(4)) },
			func(t *testing.T, n *normalize.Normalizer) {
				for i := range 8 { // other sessions' tombstones push the mark out
					id := fmt.Sprintf("O%d", i)
					_, err := n.Feed(id, nsOpen("c1", "ls"), normalize.WithSequence(1), normalize.WithSkipApplied())
					require.NoError(t, err)
					_, err = n.CloseSession(id, normalize.WithSequence(2), normalize.WithSkipApplied())
					require.NoError(t, err)
				}
			}},
		{"memory store", func(*testing.T) *normalize.Normalizer {
			return normalize.New(normalize.WithStore(store.NewMemory()), normalize.WithTTL(50*time.Millisecond))
		}, func(*testing.T, *normalize.Normalizer) { time.Sleep(150 * time.Millisecond) }}, // twice the TTL: the keys expire
		{"redis", func(t *testing.T) *normalize.Normalizer {
			return normalize.New(normalize.WithStore(keptStores["redis"](t)), normalize.WithTTL(50*time.Millisecond))
		}, func(*testing.T, *normalize.Normalizer) { time.Sleep(150 * time.Millisecond) }},
	} {
		for _, what := range []string{"close", "turn end"} {
			t.Run(tc.name+"/"+what, func(t *testing.T) {
				n := tc.make(t)
				seq := openWithOutput(t, n, []string{"c1"}, "ok\n")
				_, err := n.CloseSession("S", normalize.WithSequence(seq+1), normalize.WithSkipApplied())
				require.NoError(t, err)
				tc.forget(t, n)

				var got []normalize.Event
				opts := []normalize.FeedOption{normalize.WithSequence(seq + 1), normalize.WithSkipApplied(),
					normalize.WithEmit(func(ev normalize.Event) error { got = append(got, ev); return nil })}
				if what == "close" {
					_, err = n.CloseSession("S", opts...)
				} else {
					_, err = n.TurnEnded("S", false, opts...)
				}
				require.NoError(t, err)
				require.Len(t, got, 1, "answered")
				e := got[0].Error
				require.NotNil(t, e)
				assert.Equal(t, normalize.FailedPrecondition, e.Code)
				assert.Equal(t, "S", e.SessionID)
				assert.Equal(t, seq+1, e.Sequence)
				assert.Contains(t, e.Message, "no session")
				assert.Zero(t, n.Stats().Sessions)
			})
		}
	}
}

// heldCommit is the memory store, except that a commit of session held
// waits until release is closed (a slow store), keeping the session
// being applied.
type heldCommit struct {
	store.Store
	held             string
	started, release chan struct{}
}

func (h *heldCommit) Commit(ctx context.Context, session string, base uint64, c *store.Change) (uint64, error) {
	if session == h.held {
		close(h.started)
		<-h.release
	}
	return h.Store.Commit(ctx, session, base, c)
}

// With a store, a turn's end of a session the cache cannot load (every
// cached session is being applied) is refused RESOURCE_EXHAUSTED, as a
// frame is, rather than answered as about no session, or not at all.
func TestControlRefusedWhenTheCacheIsFull(t *testing.T) {
	st := &heldCommit{Store: store.NewMemory(), held: "A", started: make(chan struct{}), release: make(chan struct{})}
	n := normalize.New(normalize.WithStore(st), normalize.WithMaxSessions(1))
	done := make(chan error, 1)
	go func() {
		_, err := n.Feed("A", nsOpen("a1", "ls"), normalize.WithSequence(1), normalize.WithSkipApplied())
		done <- err
	}()
	<-st.started
	var got []*normalize.FrameError
	_, err := n.TurnEnded("B", false, normalize.WithSequence(5), normalize.WithSkipApplied(),
		normalize.WithEmit(func(ev normalize.Event) error {
			if ev.Error != nil {
				got = append(got, ev.Error)
			}
			return nil
		}))
	close(st.release)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Len(t, got, 1)
	assert.Equal(t, normalize.ResourceExhausted, got[0].Code, got[0].Message)
	assert.Contains(t, got[0].Message, "max-sessions")
}

// Without a store, a turn's end that comes after the session's close (a
// sequence above the close's) is told the session was closed, not that
// its mark is gone.
func TestTurnEndAfterCloseSaysClosed(t *testing.T) {
	n := normalize.New()
	seq := openWithOutput(t, n, []string{"c1"}, "ok\n")
	_, err := n.CloseSession("S", normalize.WithSequence(seq+1), normalize.WithSkipApplied())
	require.NoError(t, err)
	_, err = n.TurnEnded("S", false, normalize.WithSequence(seq+2), normalize.WithSkipApplied())
	var fe *normalize.FrameError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, normalize.FailedPrecondition, fe.Code)
	assert.Contains(t, fe.Message, fmt.Sprintf("closed after applying sequence %d", seq+1))
}
