package normalize_test

import (
	"context"
	"fmt"
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
