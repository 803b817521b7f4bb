package normalize_test

import (
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/acpnorm/acpnorm/store/redisstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closeS closes session "S" as request seq, with skipped applied
// sequences, and returns its FrameErrors.
func (c *client) closeS(n *normalize.Normalizer, seq uint64) []*normalize.FrameError {
	c.t.Helper()
	var errs []*normalize.FrameError
	_, err := n.CloseSession("S", normalize.WithSequence(seq), normalize.WithSkipApplied(), normalize.WithEmit(func(ev normalize.Event) error {
		if ev.Error != nil {
			errs = append(errs, ev.Error)
		}
		c.take(ev)
		return nil
	}))
	require.NoError(c.t, err)
	return errs
}

// A client with skipped applied sequences that sent a session's frames
// and its close, and lost the answers (the stream broke), sends again
// every frame but the first: the session was closed and released meanwhile, but every frame
// and the close are answered as applied (ALREADY_EXISTS, or the answer
// kept), none is refused as about a released call nor applied again; on
// another replica too. A session that starts again from sequence 1, or
// without sequences, starts afresh.
func TestResendAfterClose(t *testing.T) {
	fs := frames(recording)
	stores := map[string]func(t *testing.T) store.Store{
		"memory store": func(*testing.T) store.Store { return store.NewMemory() },
		"redis": func(t *testing.T) store.Store {
			st, err := redisstore.Open(testredis.Start(t))
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	type setup struct {
		name string
		make func(t *testing.T) (first, again *normalize.Normalizer)
	}
	setups := []setup{{"no store", func(*testing.T) (*normalize.Normalizer, *normalize.Normalizer) {
		n := normalize.New()
		return n, n
	}}}
	for name, mk := range stores {
		setups = append(setups, setup{name + ", same replica", func(t *testing.T) (*normalize.Normalizer, *normalize.Normalizer) {
			n := normalize.New(normalize.WithStore(mk(t)))
			return n, n
		}}, setup{name + ", another replica", func(t *testing.T) (*normalize.Normalizer, *normalize.Normalizer) {
			st := mk(t)
			return normalize.New(normalize.WithStore(st)), normalize.New(normalize.WithStore(st))
		}})
	}
	for _, tc := range setups {
		t.Run(tc.name, func(t *testing.T) {
			first, again := tc.make(t)
			want := newClient(t)
			for i := range fs {
				require.Empty(t, want.feed(first, fs, i))
			}
			closeSeq := uint64(len(fs) + 1)
			require.Empty(t, want.closeS(first, closeSeq))

			// The answers of the last frames and the close were lost:
			// they are sent again. (Sequence 1 is never among them: it
			// starts a session again, see below.)
			c := newClient(t)
			for i := 1; i < len(fs); i++ {
				for _, e := range c.feed(again, fs, i) {
					assert.Equal(t, normalize.AlreadyExists, e.Code, "frame %d: %s", i+1, e.Message)
				}
			}
			for _, e := range c.closeS(again, closeSeq) {
				assert.Equal(t, normalize.AlreadyExists, e.Code, "the close: %s", e.Message)
			}
			assert.Empty(t, c.wentBack)
			for id, f := range c.calls {
				assert.Equal(t, want.calls[id].state, f.state, "call %s: only kept answers, never a fresh record", id)
			}
			assert.Empty(t, again.Stats().Calls, "nothing applied again")

			// A session that starts again under the id, from sequence 1,
			// starts afresh: its frames are applied (the calls it names
			// under the released ids are refused, as before).
			fresh := newClient(t)
			for i := range fs {
				for _, e := range fresh.feed(again, fs, i) {
					assert.NotEqual(t, normalize.AlreadyExists, e.Code, "frame %d of a session started again: %s", i+1, e.Message)
				}
			}
			for _, e := range fresh.closeS(again, closeSeq) {
				assert.NotEqual(t, normalize.AlreadyExists, e.Code, "the close of a session started again: %s", e.Message)
			}
		})
	}
}

// Without skipped applied sequences a closed session's id starts afresh
// whatever sequence its frames carry.
func TestFramesAfterCloseWithoutSkipApplied(t *testing.T) {
	fs := frames(recording)
	n := normalize.New(normalize.WithStore(store.NewMemory()))
	c := newClient(t)
	for i := range fs {
		require.Empty(t, c.feed(n, fs, i))
	}
	require.Empty(t, c.closeS(n, uint64(len(fs)+1)))
	var got int
	for i, f := range fs {
		_, err := n.Feed("S", f, normalize.WithSequence(uint64(i+1)), normalize.WithEmit(func(ev normalize.Event) error {
			if ev.Error != nil {
				assert.NotEqual(t, normalize.AlreadyExists, ev.Error.Code, ev.Error.Message)
				got++
			}
			return nil
		}))
		require.NoError(t, err)
	}
	assert.Positive(t, got, "applied afresh: refused only as about released calls")
}

// A closed session started again from sequence 1 numbers its frames from
// the start: the answers kept for the closed session's frames are deleted
// with its first commit, so none of them can answer a frame of the new
// one.
func TestStartedAgainDropsClosedAnswers(t *testing.T) {
	fs := frames(recording)
	st := store.NewMemory()
	n := normalize.New(normalize.WithStore(st))
	c := newClient(t)
	for i := range fs {
		require.Empty(t, c.feed(n, fs, i))
	}
	require.Empty(t, c.closeS(n, uint64(len(fs)+1)))
	answers := func() []string {
		snap, err := st.Load(t.Context(), "S")
		require.NoError(t, err)
		var keys []string
		for k := range snap.Records {
			if strings.HasPrefix(k, "a:") {
				keys = append(keys, k)
			}
		}
		return keys
	}
	require.NotEmpty(t, answers(), "kept for the closed session")

	fresh := newClient(t)
	fresh.feed(n, fs, 0)
	assert.Equal(t, []string{"a:1"}, answers(), "only the new session's first frame's")
}

// A closed session that never had a call, whose frames and close are
// sent again with how far the client was answered, is no loss: the
// sequence the closed session had applied covers the claim.
func TestHeldSequenceAfterCloseWithoutCalls(t *testing.T) {
	fs := [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`),
	}
	var lost lossCount
	st := store.NewMemory()
	a := normalize.New(normalize.WithStore(st), normalize.WithHooks(lost.hooks()))
	b := normalize.New(normalize.WithStore(st), normalize.WithHooks(lost.hooks()))
	c := newClient(t)
	for i := range fs {
		require.Empty(t, c.feed(a, fs, i))
	}
	require.Empty(t, c.closeS(a, 3))
	for _, e := range c.feed(b, fs, 1, normalize.WithHeldSequence(1)) {
		assert.Equal(t, normalize.AlreadyExists, e.Code, e.Message)
	}
	assert.Zero(t, lost.count())
}
