package normalize_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/acpnorm/acpnorm/store/redisstore"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A close whose ENDED revisions (those it keeps for a client that sends
// requests again) the store does not take is not applied, whatever the
// store did with them: the write timed out (Redis paused with SIGSTOP),
// or it was applied on the master but not acknowledged (a replica paused,
// WithWaitReplicas). The client is told so precisely: a close, not a
// frame; the session is not closed and holds its calls; nothing it made
// was handed on; sent again it is applied and hands them on; not the
// "may keep or lose it" of a commit not acknowledged. The close sent
// again does that: the call's ENDED revision follows its earlier ones,
// handed on fresh, and only then is the session closed.
func TestCloseWhoseKeptRevisionsAreNotTaken(t *testing.T) {
	t.Run("timed out", func(t *testing.T) {
		srv := testredis.StartServer(t)
		st, err := redisstore.Open(srv.URL)
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		closeNotTaken(t, st, func() (context.Context, func()) {
			srv.Pause()
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			return ctx, func() { cancel(); srv.Resume() }
		})
	})
	t.Run("not acknowledged", func(t *testing.T) {
		master := testredis.StartServer(t)
		replica := testredis.StartServer(t, "--replicaof", "127.0.0.1 "+master.Addr[strings.LastIndexByte(master.Addr, ':')+1:])
		raw, err := redis.ParseURL(master.URL)
		require.NoError(t, err)
		rc := redis.NewClient(raw)
		t.Cleanup(func() { rc.Close() })
		synced := func() bool {
			info, err := rc.Info(t.Context(), "replication").Result()
			return err == nil && strings.Contains(info, "state=online") && strings.Contains(info, "lag=0")
		}
		require.Eventually(t, synced, time.Minute, 20*time.Millisecond, "the replica acknowledges")
		st, err := redisstore.Open(master.URL, redisstore.WithWaitReplicas(1, 2*time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		closeNotTaken(t, st, func() (context.Context, func()) {
			// Paused just after an acknowledgement, it still counts:
			// the write is applied on the master, and WAIT times out.
			require.Eventually(t, synced, time.Minute, 20*time.Millisecond, "the replica acknowledges")
			replica.Pause()
			return t.Context(), replica.Resume
		})
	})
}

// closeNotTaken opens a call of session "S" on a Normalizer with st, and
// closes the session with the store failing as fail makes it (until the
// function it returns is called), then again.
func closeNotTaken(t *testing.T, st store.Store, fail func() (context.Context, func())) {
	n := normalize.New(normalize.WithStore(st))
	msgs := []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"cat f","status":"in_progress","rawInput":{"command":"cat f"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"ok"}}]}}}`,
	}
	for i, m := range msgs {
		_, err := n.Feed("S", []byte(m), normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied())
		require.NoError(t, err)
	}
	closeS := func(ctx context.Context) (execs []*normalize.ShellExec, errs []*normalize.FrameError) {
		_, err := n.CloseSession("S", normalize.WithSequence(3), normalize.WithSkipApplied(), normalize.WithContext(ctx), normalize.WithEmit(func(ev normalize.Event) error {
			if ev.Error != nil {
				errs = append(errs, ev.Error)
			} else {
				execs = append(execs, ev.ShellExec)
			}
			return nil
		}))
		require.NoError(t, err)
		return execs, errs
	}

	ctx, back := fail()
	execs, errs := closeS(ctx)
	back()
	assert.Empty(t, execs, "nothing handed on")
	require.Len(t, errs, 1)
	fe := errs[0]
	assert.Equal(t, normalize.Unavailable, fe.Code)
	assert.EqualValues(t, 3, fe.Sequence)
	t.Log(fe.Message)
	assert.Contains(t, fe.Message, `session_closed 3 of session "S" was not applied`)
	assert.Contains(t, fe.Message, "the session is not closed")
	assert.Contains(t, fe.Message, "Send it again: it is applied then")
	assert.NotContains(t, fe.Message, "frame 3")
	assert.NotContains(t, fe.Message, "may keep or lose it")

	// Not closed: a frame sent again is answered as applied before the
	// close, not as after it.
	_, err := n.Feed("S", []byte(msgs[1]), normalize.WithSequence(2), normalize.WithSkipApplied(), normalize.WithEmit(func(ev normalize.Event) error {
		if ev.Error != nil {
			assert.NotContains(t, ev.Error.Message, "closed", ev.Error.Message)
		}
		return nil
	}))
	require.NoError(t, err)

	execs, errs = closeS(t.Context())
	assert.Empty(t, errs)
	require.Len(t, execs, 1)
	assert.Equal(t, normalize.StateEnded, execs[0].State)
	assert.EqualValues(t, 3, execs[0].Revision, "after revisions 1 and 2, none made again")
	assert.False(t, execs[0].Output == nil, "whole")
	_, ok := n.SessionStats("S")
	assert.False(t, ok, "closed now")
}

// sessionUnacked is the memory store, except that while armed a commit
// to a session's own keys (not to those of what a close kept) is applied
// and then reported not acknowledged.
type sessionUnacked struct {
	store.Store
	armed atomic.Bool
}

func (k *sessionUnacked) Commit(ctx context.Context, session string, base uint64, c *store.Change) (uint64, error) {
	v, err := k.Store.Commit(ctx, session, base, c)
	if err == nil && k.armed.Load() && !strings.HasPrefix(session, "\xff\x00\x00") {
		return 0, fmt.Errorf("%w: version %d applied, no replica acknowledged it", store.ErrUnacknowledged, v)
	}
	return v, err
}

// A close whose own commit the store applied but did not acknowledge
// says what keeping or losing it means for the session; kept, the close
// sent again is answered as applied, with the ENDED revision it made.
func TestCloseNotAcknowledgedSaysWhatItMeans(t *testing.T) {
	st := &sessionUnacked{Store: store.NewMemory()}
	n := normalize.New(normalize.WithStore(st))
	for i, m := range [][]byte{nsOpen("c1", "make"), nsDelta("c1", "built\\n")} {
		_, errs := splitEvents(feedSkipping(t, n, uint64(i+1), m))
		require.Empty(t, errs)
	}
	closeS := func() ([]normalize.Event, error) {
		var evs []normalize.Event
		_, err := n.CloseSession("S", normalize.WithSequence(3), normalize.WithSkipApplied(), normalize.WithEmit(func(ev normalize.Event) error {
			evs = append(evs, ev)
			return nil
		}))
		return evs, err
	}
	st.armed.Store(true)
	evs, err := closeS()
	require.NoError(t, err)
	execs, errs := splitEvents(evs)
	assert.Empty(t, execs)
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.Unavailable, errs[0].Code)
	t.Log(errs[0].Message)
	assert.Contains(t, errs[0].Message, `session_closed 3 of session "S" not acknowledged`)
	assert.Contains(t, errs[0].Message, "kept, the session is closed")

	st.armed.Store(false)
	evs, err = closeS()
	require.NoError(t, err)
	execs, errs = splitEvents(evs)
	require.Len(t, execs, 1, "%v", errs)
	assert.Equal(t, normalize.StateEnded, execs[0].State)
	assert.EqualValues(t, 3, execs[0].Revision)
	assert.True(t, evs[0].Again, "the close was kept: answered as applied")
}
