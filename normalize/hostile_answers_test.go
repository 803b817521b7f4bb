package normalize_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyOf is the memory store, remembering the key of the session last
// committed.
type keyOf struct {
	store.Store
	key string
}

func (k *keyOf) Commit(ctx context.Context, session string, base uint64, c *store.Change) (uint64, error) {
	k.key = session
	return k.Store.Commit(ctx, session, base, c)
}

// The answers kept for frames sent again are bounded per session (the
// last 64 frames, within 256 KiB) in the store itself, whatever the
// client sends: here batches of frames (one commit each, as a stream
// with a store applies the frames it has read of one session) whose
// answers are each large, so that one batch passes the bytes bound by
// itself. No answer record is left in the store past the bounds.
func TestHostileAnswersKeptInTheStoreStayBounded(t *testing.T) {
	for _, c := range []struct {
		name                string
		batches, frames, kb int
	}{
		{"small frames, many", 20, 8, 1},
		{"large frames", 10, 8, 100},
		{"one frame each, large", 10, 1, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &keyOf{Store: store.NewMemory()}
			n := normalize.New(normalize.WithStore(st))
			seq := uint64(1)
			_, err := n.FeedBatch("S", []normalize.Frame{{Message: nsOpen("c1", "yes"), Sequence: seq}}, normalize.WithSkipApplied())
			require.NoError(t, err)
			data := strings.Repeat("y", c.kb<<10)
			for range c.batches {
				var frames []normalize.Frame
				for range c.frames {
					seq++
					frames = append(frames, normalize.Frame{Message: nsDelta("c1", data), Sequence: seq})
				}
				execs, err := n.FeedBatch("S", frames, normalize.WithSkipApplied())
				require.NoError(t, err)
				require.Len(t, execs, c.frames)
			}
			snap, err := st.Load(context.Background(), st.key)
			require.NoError(t, err)
			count, bytes := 0, 0
			for name, rec := range snap.Records {
				if strings.HasPrefix(name, "a:") {
					count++
					bytes += len(rec)
				}
			}
			assert.LessOrEqual(t, count, 64, "answer records in the store")
			assert.LessOrEqual(t, bytes, 256<<10, "bytes of answer records in the store (%d records)", count)
			assert.Positive(t, count, "the latest answers are kept")
		})
	}
}

// The floors a DATA_LOSS leaves (what the caller holds of calls its
// session lost) are bounded for the process (4 × WithMaxCalls): past it,
// the DATA_LOSS says how many were not kept. Sessions that leave the
// cache (the store keeps their floors) give their share back, and bring
// it when loaded again.
func TestHostileFloorsAreBoundedForTheProcess(t *testing.T) {
	ghosts := func(session string) map[string]uint32 {
		return map[string]uint32{session + "-g1": 3, session + "-g2": 3, session + "-g3": 3, session + "-g4": 3}
	}
	claim := func(n *normalize.Normalizer, session string) *normalize.FrameError {
		t.Helper()
		var errs []*normalize.FrameError
		_, err := n.Feed(session, nsOpen("c1", "ls"), normalize.WithSequence(1), normalize.WithSkipApplied(), normalize.WithHeld(ghosts(session)),
			normalize.WithEmit(func(ev normalize.Event) error {
				if ev.Error != nil {
					errs = append(errs, ev.Error)
				}
				return nil
			}))
		require.NoError(t, err)
		if len(errs) == 0 {
			return nil
		}
		require.Len(t, errs, 1)
		return errs[0]
	}
	for _, c := range []struct {
		name    string
		opts    []normalize.Option
		fifthOK bool // the fifth session's floors are kept
	}{
		{"in memory: the process is full", nil, false},
		{"with a store, one session cached: each gives its floors back", []normalize.Option{normalize.WithStore(store.NewMemory()), normalize.WithMaxSessions(1)}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// 16 floors for the process, 16 for a session.
			refused := map[string]int{}
			hooks := normalize.WithHooks(normalize.Hooks{Refused: func(limit string) { refused[limit]++ }})
			n := normalize.New(append([]normalize.Option{normalize.WithMaxCalls(4), normalize.WithMaxCallsPerSession(4), hooks}, c.opts...)...)
			for _, s := range []string{"A", "B", "C", "D"} {
				fe := claim(n, s)
				require.NotNil(t, fe)
				assert.Equal(t, normalize.DataLoss, fe.Code)
				assert.NotContains(t, fe.Message, "not kept")
			}
			fe := claim(n, "E")
			require.NotNil(t, fe)
			assert.Equal(t, normalize.DataLoss, fe.Code)
			if c.fifthOK {
				assert.NotContains(t, fe.Message, "not kept")
				assert.Nil(t, claim(n, "A"), "A's floors came back with it from the store: what it claims is held")
			} else {
				assert.Contains(t, fe.Message, "the numbers of 4 of these calls were not kept")
				assert.Contains(t, fe.Message, "4 × --max-calls")
			}
			// Each floor not kept counts as a refusal by its limit.
			want := map[string]int{}
			if !c.fifthOK {
				want[normalize.LimitLossFloors] = 4
			}
			assert.Equal(t, want, refused)
		})
	}
}

// The floors one session keeps are bounded (4 × WithMaxCallsPerSession):
// a claim past it is still DATA_LOSS, its message says how many were not
// kept, and each counts as a refusal by LimitLossFloorsPerSession.
func TestHostileFloorsAreBoundedPerSession(t *testing.T) {
	refused := map[string]int{}
	n := normalize.New(normalize.WithMaxCallsPerSession(1), // a claim names at most 2 calls; the session keeps 4 floors
		normalize.WithHooks(normalize.Hooks{Refused: func(limit string) { refused[limit]++ }}))
	for i, want := range []int{0, 0, 2} {
		held := map[string]uint32{fmt.Sprintf("g%d-a", i): 3, fmt.Sprintf("g%d-b", i): 3}
		var errs []*normalize.FrameError
		_, err := n.Feed("S", nsOpen("c1", "ls"), normalize.WithSequence(1), normalize.WithSkipApplied(), normalize.WithHeld(held),
			normalize.WithEmit(func(ev normalize.Event) error {
				if ev.Error != nil {
					errs = append(errs, ev.Error)
				}
				return nil
			}))
		require.NoError(t, err)
		require.Len(t, errs, 1)
		assert.Equal(t, normalize.DataLoss, errs[0].Code)
		if want > 0 {
			assert.Contains(t, errs[0].Message, fmt.Sprintf("the numbers of %d of these calls were not kept", want))
		} else {
			assert.NotContains(t, errs[0].Message, "not kept")
		}
		assert.Equal(t, want, refused[normalize.LimitLossFloorsPerSession], "claim %d", i)
		assert.Zero(t, refused[normalize.LimitLossFloors], "claim %d", i)
	}
}

// ghostClaim feeds session a first frame claiming revision 7 of n calls
// none of its sessions has (named after the session, so that each
// session's are its own), and returns its FrameError.
func ghostClaim(t *testing.T, n *normalize.Normalizer, session string, calls int) *normalize.FrameError {
	t.Helper()
	held := map[string]uint32{}
	for i := range calls {
		held[fmt.Sprintf("%s-g%d", session, i)] = 7
	}
	var errs []*normalize.FrameError
	_, err := n.Feed(session, nsOpen("x", "ls"), normalize.WithSequence(1), normalize.WithSkipApplied(), normalize.WithHeld(held),
		normalize.WithEmit(func(ev normalize.Event) error {
			if ev.Error != nil {
				errs = append(errs, ev.Error)
			}
			return nil
		}))
	require.NoError(t, err)
	require.Len(t, errs, 1)
	return errs[0]
}

// The floors of the process (4 × WithMaxCalls) are shared between the
// namespaces (the service's identities) as the tombstones are: one that
// fills them with claims of calls that never existed keeps another, that
// really lost its session, from none of its floors. Before, the first
// namespace took them all, the other's DATA_LOSS kept no floor, and its
// rebuild, whose first frame states what it holds again, was refused
// DATA_LOSS again, every time: the session could never be repaired.
func TestFloorsAreSharedBetweenNamespaces(t *testing.T) {
	for _, stored := range []bool{false, true} {
		t.Run(fmt.Sprintf("store=%v", stored), func(t *testing.T) {
			fs := [][]byte{nsOpen("b1", "seq 3"), nsDelta("b1", "1\\n"), nsDelta("b1", "2\\n"), nsDelta("b1", "3\\n")}
			// bob's session, where it was (a process since gone, or the
			// store before it lost it).
			st := newRollback()
			var first *normalize.Normalizer
			if stored {
				first = normalize.New(normalize.WithStore(st))
			} else {
				first = normalize.New()
			}
			c := newClient(t)
			for i := range 3 {
				require.Empty(t, c.feed(first.Namespace("bob"), fs, i))
			}
			if stored {
				st.back("\xff\x03bobS", 0) // bob's session, "S" in namespace "bob", is lost
			}
			// 16 floors for the process, 16 a session, 8 calls a claim.
			opts := []normalize.Option{normalize.WithMaxCalls(4), normalize.WithMaxCallsPerSession(4)}
			if stored {
				opts = append(opts, normalize.WithStore(st))
			}
			n := normalize.New(opts...)
			alice, bob := n.Namespace("alice"), n.Namespace("bob")
			for s := range 4 {
				assert.Equal(t, normalize.DataLoss, ghostClaim(t, alice, fmt.Sprintf("A%d", s), 8).Code)
			}
			fe := ghostClaim(t, alice, "A4", 8)
			assert.Contains(t, fe.Message, "the numbers of 8 of these calls were not kept", "alice filled the floors")

			errs := c.feed(bob, fs, 3, normalize.WithHeld(maps.Clone(c.held)))
			require.Len(t, errs, 1)
			assert.Equal(t, normalize.DataLoss, errs[0].Code)
			assert.NotContains(t, errs[0].Message, "not kept", "bob's floors are kept, whatever alice claimed")
			for i := range fs {
				var opts []normalize.FeedOption
				if i == 0 {
					opts = append(opts, normalize.WithHeld(maps.Clone(c.held))) // a new stream states what it holds
				}
				assert.Empty(t, c.feed(bob, fs, i, opts...), "frame %d of the rebuild", i+1)
			}
			assert.Empty(t, c.wentBack, "no revision at or below one bob holds")
			require.NotNil(t, c.calls["b1"])
			assert.Equal(t, "1\n2\n3\n", c.calls["b1"].output)
		})
	}
}

// A session whose floors could not be kept (its namespace holds its share
// of the process's, or the session its own bound) is still repaired: the
// DATA_LOSS says that the revisions of those calls may be sent again, and
// the rebuild's first frame, which states the same claim again, is
// applied. Before, it was refused DATA_LOSS again, for ever (the session
// clients gave up: "lost in the store too many times in a row"). With a
// store, another Normalizer that takes the rebuild knows it too.
func TestRebuildAfterFloorsNotKept(t *testing.T) {
	for _, stored := range []bool{false, true} {
		t.Run(fmt.Sprintf("store=%v", stored), func(t *testing.T) {
			fs := [][]byte{nsOpen("b1", "seq 3"), nsDelta("b1", "1\\n"), nsDelta("b1", "2\\n"), nsDelta("b1", "3\\n")}
			c := newClient(t)
			gone := normalize.New()
			for i := range 3 {
				require.Empty(t, c.feed(gone, fs, i))
			}
			// 4 floors for the process; a claim names at most 2 calls.
			st := store.NewMemory()
			opts := []normalize.Option{normalize.WithMaxCalls(1), normalize.WithMaxCallsPerSession(1)}
			if stored {
				opts = append(opts, normalize.WithStore(st))
			}
			n := normalize.New(opts...)
			for _, s := range []string{"G1", "G2"} {
				assert.NotContains(t, ghostClaim(t, n, s, 2).Message, "not kept")
			}
			errs := c.feed(n, fs, 3, normalize.WithHeld(maps.Clone(c.held)))
			require.Len(t, errs, 1)
			assert.Equal(t, normalize.DataLoss, errs[0].Code)
			assert.Contains(t, errs[0].Message, "the numbers of 1 of these calls were not kept")
			rebuild := n
			if stored {
				rebuild = normalize.New(normalize.WithStore(st), normalize.WithMaxCalls(1), normalize.WithMaxCallsPerSession(1))
			}
			for i := range fs {
				var opts []normalize.FeedOption
				if i == 0 {
					opts = append(opts, normalize.WithHeld(maps.Clone(c.held)))
				}
				assert.Empty(t, c.feed(rebuild, fs, i, opts...), "frame %d of the rebuild", i+1)
			}
			require.NotNil(t, c.calls["b1"])
			assert.Equal(t, "1\n2\n3\n", c.calls["b1"].output, "the revisions sent again are the ones the client holds")
			// Once repaired, a claim is checked again.
			c2 := newClient(t)
			errs = c2.feed(rebuild, fs, 3, normalize.WithHeld(map[string]uint32{"b1": 9}))
			require.NotEmpty(t, errs)
			assert.Equal(t, normalize.DataLoss, errs[0].Code)
		})
	}
}
