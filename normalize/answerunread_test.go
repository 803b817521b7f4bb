package normalize_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
)

// recordFails is the memory store, except that while armed reading one
// record alone fails, as a Redis that went away between two requests.
type recordFails struct {
	store.Store
	armed atomic.Bool
}

func (r *recordFails) LoadWithout(ctx context.Context, session, prefix string) (*store.Snapshot, error) {
	return r.Store.(store.PartLoader).LoadWithout(ctx, session, prefix)
}

func (r *recordFails) LoadRecord(ctx context.Context, session, name string) ([]byte, error) {
	if r.armed.Load() {
		return nil, errors.New("the store is gone")
	}
	return r.Store.(store.PartLoader).LoadRecord(ctx, session, name)
}

// A request sent again whose kept answer cannot be read from the store
// is UNAVAILABLE, and its message names the request as what it is: a
// frame, a turn's end, a session's close.
func TestKeptAnswerUnreadNamesTheRequest(t *testing.T) {
	st := &recordFails{Store: store.NewMemory()}
	n := normalize.New(normalize.WithStore(st))
	_, errs := splitEvents(feedSkipping(t, n, 1, nsOpen("c1", "make")))
	require.Empty(t, errs)
	_, errs = splitEvents(feedSkipping(t, n, 2, nsOpen("c2", "ls")))
	require.Empty(t, errs)
	ended, err := n.TurnEnded("S", false, normalize.WithSequence(3), normalize.WithSkipApplied())
	require.NoError(t, err)
	require.Len(t, ended, 2, "the turn's end ends both calls")
	_, errs = splitEvents(feedSkipping(t, n, 4, nsOpen("c3", "pwd")))
	require.Empty(t, errs)
	closed, err := n.CloseSession("S", normalize.WithSequence(5), normalize.WithSkipApplied())
	require.NoError(t, err)
	require.Len(t, closed, 1, "the close ends c3")

	st.armed.Store(true)
	unread := func(what string, send func(emit normalize.FeedOption) error) {
		t.Helper()
		var errs []*normalize.FrameError
		require.NoError(t, send(normalize.WithEmit(func(ev normalize.Event) error {
			if ev.Error != nil {
				errs = append(errs, ev.Error)
			}
			return nil
		})))
		require.Len(t, errs, 1, "%s sent again", what)
		assert.Equal(t, normalize.Unavailable, errs[0].Code)
		assert.Contains(t, errs[0].Message, "could not be read from the store")
		assert.True(t, strings.HasPrefix(errs[0].Message, what+" "), "the message names the request: %s", errs[0].Message)
	}
	unread("frame 2", func(emit normalize.FeedOption) error {
		_, err := n.Feed("S", nsOpen("c2", "ls"), normalize.WithSequence(2), normalize.WithSkipApplied(), emit)
		return err
	})
	unread("turn_ended 3", func(emit normalize.FeedOption) error {
		_, err := n.TurnEnded("S", false, normalize.WithSequence(3), normalize.WithSkipApplied(), emit)
		return err
	})
	unread("session_closed 5", func(emit normalize.FeedOption) error {
		_, err := n.CloseSession("S", normalize.WithSequence(5), normalize.WithSkipApplied(), emit)
		return err
	})
}
