package normalize_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A store that lost a session's first frames, before any of them made a
// revision (the initialize exchange, say), is found out from the highest
// sequence the client had answered (WithHeldSequence) alone: the client
// holds no call, so what it holds of calls proves nothing. Without this
// check the session went on without the frames that named its agent, and
// was read with the generic dialect.
func TestStoreLossOfFramesWithoutRevisionsDetectedFromHeldSequence(t *testing.T) {
	fs := frames(recording)
	want := newClient(t)
	alone := normalize.New()
	for i := range fs {
		require.Empty(t, want.feed(alone, fs, i))
	}

	for _, back := range []string{"before", "gone"} {
		t.Run(back, func(t *testing.T) {
			st := newRollback()
			var lost lossCount
			a := normalize.New(normalize.WithStore(st), normalize.WithHooks(lost.hooks()))
			b := normalize.New(normalize.WithStore(st), normalize.WithHooks(lost.hooks()))
			probe, cut := newClient(t), 0
			for n := normalize.New(); len(probe.held) == 0; cut++ {
				require.Empty(t, probe.feed(n, fs, cut))
			}
			cut-- // the frame that made the first revision
			require.Greater(t, cut, 1, "the recording starts with frames that make no revision")
			c := newClient(t)
			for i := range cut {
				require.Empty(t, c.feed(a, fs, i))
			}
			require.Empty(t, c.held)
			if back == "before" {
				st.back("S", 1) // only the first frame's commit is kept
			} else {
				st.back("S", 0)
			}

			errs := c.feed(b, fs, cut, normalize.WithHeldSequence(uint64(cut)))
			require.Len(t, errs, 1)
			assert.Equal(t, normalize.DataLoss, errs[0].Code, errs[0].Message)
			assert.Contains(t, errs[0].Message, `session "S"`)
			assert.Contains(t, errs[0].Message, fmt.Sprintf("sequence %d was answered", cut))
			assert.Equal(t, 1, lost.count(), "counted as other losses are")
			assert.Empty(t, c.held, "nothing applied")

			// The client rebuilds the session from the first frame.
			for i := range fs {
				for _, e := range c.feed(b, fs, i) {
					assert.Equal(t, normalize.AlreadyExists, e.Code, "frame %d: %s", i+1, e.Message)
				}
			}
			assert.Empty(t, c.wentBack)
			assert.Equal(t, want.finals(), c.finals(), "the finals equal one process's")
			assert.Equal(t, 1, lost.count())
		})
	}
}

// What the session has applied is no loss, nor is a claim without
// skipped applied sequences (the session keeps no count then), nor one
// made while the session is open: a client states it only for sessions
// it has not closed.
func TestHeldSequenceNoLoss(t *testing.T) {
	fs := frames(recording)
	st := store.NewMemory()
	var lost lossCount
	a := normalize.New(normalize.WithStore(st), normalize.WithHooks(lost.hooks()))
	b := normalize.New(normalize.WithStore(st), normalize.WithHooks(lost.hooks()))
	c := newClient(t)
	cut := len(fs) / 2
	for i := range cut {
		require.Empty(t, c.feed(a, fs, i))
	}
	// Answered ALREADY_EXISTS (sent again) counts as applied.
	c.feed(b, fs, cut-1)
	require.Empty(t, c.feed(b, fs, cut, normalize.WithHeldSequence(uint64(cut))))
	assert.Zero(t, lost.count())

	// Without WithSkipApplied the claim is not checked.
	n := normalize.New()
	var errs []*normalize.FrameError
	_, err := n.Feed("T", fs[0], normalize.WithSequence(9), normalize.WithHeldSequence(8), normalize.WithEmit(func(ev normalize.Event) error {
		if ev.Error != nil {
			errs = append(errs, ev.Error)
		}
		return nil
	}))
	require.NoError(t, err)
	assert.Empty(t, errs)

}

// A session closed (its calls released, leaving tombstones) keeps the
// sequence it had applied: a client that had not seen the answer to its
// SessionClosed and sends again from before it, saying how far it was
// answered, is not told DATA_LOSS (a rebuild would run into the released
// calls), with a store and without.
func TestHeldSequenceAfterClose(t *testing.T) {
	fs := frames(recording)
	for _, withStore := range []bool{true, false} {
		t.Run(fmt.Sprint("store=", withStore), func(t *testing.T) {
			var lost lossCount
			opts := []normalize.Option{normalize.WithHooks(lost.hooks())}
			if withStore {
				opts = append(opts, normalize.WithStore(store.NewMemory()))
			}
			n := normalize.New(opts...)
			c := newClient(t)
			for i := range fs {
				require.Empty(t, c.feed(n, fs, i))
			}
			_, err := n.CloseSession("S", normalize.WithSequence(uint64(len(fs)+1)), normalize.WithSkipApplied())
			require.NoError(t, err)
			for _, e := range c.feed(n, fs, len(fs)-1, normalize.WithHeldSequence(uint64(len(fs)-1))) {
				assert.NotEqual(t, normalize.DataLoss, e.Code, e.Message)
			}
			assert.Zero(t, lost.count())
		})
	}
}

// The acpnormd that cached the session notices by itself that the store
// lost frames that made no revision: what it loads after a conflict has
// applied fewer sequences than it had committed.
func TestStoreLossOfFramesWithoutRevisionsDetectedByTheCache(t *testing.T) {
	fs := frames(recording)
	probe, cut := newClient(t), 0
	for n := normalize.New(); len(probe.held) == 0; cut++ {
		require.Empty(t, probe.feed(n, fs, cut))
	}
	cut--
	st := newRollback()
	var lost lossCount
	a := normalize.New(normalize.WithStore(st), normalize.WithHooks(lost.hooks()))
	c := newClient(t)
	for i := range cut {
		require.Empty(t, c.feed(a, fs, i))
	}
	st.back("S", 1)
	errs := c.feed(a, fs, cut)
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.DataLoss, errs[0].Code, errs[0].Message)
	assert.Equal(t, 1, lost.count())
}

// A store that loses only the commit of a session/load request (a
// change of the session's header alone, which makes no revision) is
// found out by the acpnormd that cached the session: the agent's replay
// of the history that follows must not be read as live frames. The chaos
// suite saw it on a Cluster failover that lost a few bytes of writes
// (cline-3.0.65_plain_load, commit bcc2b00): read without the replay
// flag, the second agent process's history gave every ended call a
// revision more, and no DATA_LOSS was sent.
func TestStoreLossOfASessionLoadDetectedByTheCache(t *testing.T) {
	fs := frames("../test/testdata/recordings/agents/cline-3.0.65_plain_load.ndjson")
	load := -1
	for i, f := range fs {
		if strings.Contains(string(f), `"method":"session/load"`) {
			load = i
		}
	}
	require.Greater(t, load, 0, "the recording has a session/load request")
	want := newClient(t)
	alone := normalize.New()
	for i := range fs {
		require.Empty(t, want.feed(alone, fs, i))
	}

	st := newRollback()
	var lost lossCount
	a := normalize.New(normalize.WithStore(st), normalize.WithHooks(lost.hooks()))
	c := newClient(t)
	for i := range load {
		require.Empty(t, c.feed(a, fs, i))
	}
	before := st.current("S").Version
	require.Empty(t, c.feed(a, fs, load))
	require.Equal(t, before+1, st.current("S").Version, "the session/load request is committed")
	st.back("S", before) // the failover loses that commit alone

	var errs []*normalize.FrameError
	for i := load + 1; i < len(fs); i++ {
		errs = append(errs, c.feed(a, fs, i)...)
		if len(errs) > 0 {
			break
		}
	}
	require.NotEmpty(t, errs, "the history replayed after the lost session/load was applied as live frames; held %v", c.held)
	assert.Equal(t, normalize.DataLoss, errs[0].Code, errs[0].Message)
	assert.Equal(t, 1, lost.count())

	// Rebuilt from the first frame, the session ends with one process's
	// finals, and no call goes back.
	for i := range fs {
		for _, e := range c.feed(a, fs, i) {
			assert.Equal(t, normalize.AlreadyExists, e.Code, "frame %d: %s", i+1, e.Message)
		}
	}
	assert.Empty(t, c.wentBack)
	assert.Equal(t, want.finals(), c.finals(), "the finals equal one process's")
}
