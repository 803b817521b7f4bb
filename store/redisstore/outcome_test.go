package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store"
)

// fast makes the store give up on a stopped server quickly.
const fast = "?read_timeout=300ms&dial_timeout=300ms&max_retries=2&min_retry_backoff=50ms&max_retry_backoff=100ms"

// A commit that failed wraps store.ErrNotApplied only when Redis surely
// did not run it: the server could not be reached, or refused the
// script before it wrote (OOM, READONLY, NOREPLICAS); not when the reply
// never came (a stopped server runs the commit once it goes on), also
// when the last of the sendings was refused after one that was not.
func TestCommitOutcome(t *testing.T) {
	ch := func(h string) *store.Change { return &store.Change{Header: []byte(h), TTL: time.Hour} }
	start := func(t *testing.T, args ...string) (*testredis.Server, *Store, uint64) {
		srv := testredis.StartServer(t, args...)
		s := open(t, srv.URL+fast)
		t.Cleanup(func() { s.Close() })
		v, err := s.Commit(t.Context(), "a", 0, ch("h0"))
		require.NoError(t, err)
		return srv, s, v
	}
	notApplied := func(t *testing.T, s *Store, v uint64, err error, why string) {
		t.Helper()
		require.Error(t, err)
		assert.ErrorIs(t, err, store.ErrNotApplied, "%s: %v", why, err)
		assert.NotErrorIs(t, err, store.ErrConflict)
		snap, lerr := s.Load(t.Context(), "a")
		require.NoError(t, lerr)
		assert.Equal(t, v, snap.Version, "%s: the commit was applied", why)
		assert.Equal(t, "h0", string(snap.Header))
	}

	t.Run("server down", func(t *testing.T) {
		srv, s, _ := start(t)
		srv.Stop()
		_, err := s.Commit(t.Context(), "a", 1, ch("h1"))
		require.Error(t, err)
		assert.ErrorIs(t, err, store.ErrNotApplied, "a dial that failed sent nothing: %v", err)
	})

	t.Run("OOM", func(t *testing.T) {
		_, s, v := start(t)
		c := raw(t, "redis://"+strings.TrimPrefix(s.where, "redis://"))
		require.NoError(t, c.Set(t.Context(), "ballast", strings.Repeat("x", 1<<20), 0).Err())
		require.NoError(t, c.ConfigSet(t.Context(), "maxmemory", "1000").Err())
		_, err := s.Commit(t.Context(), "a", v, ch("h1"))
		require.NoError(t, c.ConfigSet(t.Context(), "maxmemory", "0").Err())
		require.ErrorContains(t, err, "OOM")
		notApplied(t, s, v, err, "OOM")
	})

	t.Run("READONLY", func(t *testing.T) {
		_, s, v := start(t)
		c := raw(t, "redis://"+strings.TrimPrefix(s.where, "redis://"))
		// A replica of a master that is not there keeps its data and
		// refuses writes.
		require.NoError(t, c.Do(t.Context(), "replicaof", "127.0.0.1", "1").Err())
		_, err := s.Commit(t.Context(), "a", v, ch("h1"))
		require.ErrorContains(t, err, "READONLY")
		notApplied(t, s, v, err, "READONLY")
	})

	t.Run("NOREPLICAS", func(t *testing.T) {
		_, s, v := start(t)
		c := raw(t, "redis://"+strings.TrimPrefix(s.where, "redis://"))
		require.NoError(t, c.ConfigSet(t.Context(), "min-replicas-to-write", "1").Err())
		_, err := s.Commit(t.Context(), "a", v, ch("h1"))
		require.NoError(t, c.ConfigSet(t.Context(), "min-replicas-to-write", "0").Err())
		require.ErrorContains(t, err, "NOREPLICAS")
		notApplied(t, s, v, err, "NOREPLICAS")
	})

	t.Run("stopped, then going on", func(t *testing.T) {
		srv, s, v := start(t)
		srv.Pause()
		_, err := s.Commit(t.Context(), "a", v, ch("h1"))
		srv.Resume()
		require.Error(t, err)
		assert.NotErrorIs(t, err, store.ErrNotApplied, "no reply came: %v", err)
		assert.NotErrorIs(t, err, store.ErrConflict)
		// Redis ran it once it went on.
		require.Eventually(t, func() bool {
			snap, err := s.Load(t.Context(), "a")
			return err == nil && snap.Version > v && string(snap.Header) == "h1"
		}, 10*time.Second, 20*time.Millisecond, "the stopped server did not apply the commit once it went on")
	})

	// The store's connections were closed, so the commit needs a new
	// one; the server, stopped, takes the connection (the kernel does)
	// but never answers its HELLO. go-redis writes a command only on a
	// connection whose set-up ended (see newConnHook): the commit was
	// never sent, and is not applied once the server goes on.
	t.Run("stopped while a new connection is set up", func(t *testing.T) {
		srv, s, v := start(t)
		c := raw(t, srv.URL)
		require.NoError(t, c.ClientKillByFilter(t.Context(), "TYPE", "normal", "SKIPME", "yes").Err())
		require.NoError(t, c.Close())
		time.Sleep(50 * time.Millisecond) // the store sees its connection closed
		srv.Pause()
		_, err := s.Commit(t.Context(), "a", v, ch("h1"))
		srv.Resume()
		require.Error(t, err)
		t.Logf("%v", err)
		assert.ErrorContains(t, err, "timeout")
		time.Sleep(300 * time.Millisecond) // what the server had read, it has run
		notApplied(t, s, v, err, "a new connection's HELLO timed out")
		v2, err := s.Commit(t.Context(), "a", v, ch("h1"))
		require.NoError(t, err, "sent again plainly")
		assert.Greater(t, v2, v)
	})

	// The same for a commit that waits for a replica (a pipeline of the
	// script and WAIT).
	t.Run("stopped while a new connection is set up, WAIT", func(t *testing.T) {
		master, _ := startReplicated(t)
		s := open(t, master.URL+fast, WithWaitReplicas(1, time.Second))
		t.Cleanup(func() { s.Close() })
		var v uint64
		require.Eventually(t, func() bool {
			var err error
			v, err = s.Commit(t.Context(), "a", 0, ch("h0"))
			return err == nil
		}, time.Minute, 50*time.Millisecond, "a commit the replica holds")
		c := raw(t, master.URL)
		require.NoError(t, c.ClientKillByFilter(t.Context(), "TYPE", "normal", "SKIPME", "yes").Err())
		require.NoError(t, c.Close())
		time.Sleep(50 * time.Millisecond)
		master.Pause()
		_, err := s.Commit(t.Context(), "a", v, ch("h1"))
		master.Resume()
		require.Error(t, err)
		t.Logf("%v", err)
		time.Sleep(300 * time.Millisecond)
		notApplied(t, s, v, err, "a new connection's HELLO timed out")
	})

	// The same with the set-up done: a new connection's HELLO is
	// answered, and the commit written, but held (CLIENT PAUSE WRITE)
	// past the read timeout. It may have been applied. (Here it was not:
	// Redis drops a held command whose client went away.)
	t.Run("new connection set up, then held", func(t *testing.T) {
		srv, s, v := start(t)
		c := raw(t, srv.URL)
		require.NoError(t, c.ClientKillByFilter(t.Context(), "TYPE", "normal", "SKIPME", "yes").Err())
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, c.Do(t.Context(), "client", "pause", "2000", "write").Err())
		done := make(chan error, 1)
		go func() {
			_, err := s.Commit(t.Context(), "a", v, ch("h1"))
			done <- err
		}()
		assert.Eventually(t, func() bool {
			list, err := c.ClientList(t.Context()).Result()
			return err == nil && strings.Contains(list, "cmd=evalsha")
		}, time.Second, 5*time.Millisecond, "the commit reached Redis")
		err := <-done
		require.Error(t, err)
		t.Logf("%v", err)
		assert.NotErrorIs(t, err, store.ErrNotApplied, "the commit was written: %v", err)
	})

	t.Run("stopped, then gone", func(t *testing.T) {
		srv, s, v := start(t)
		srv.Pause()
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			// The first sending times out; the server is gone by the
			// next, which cannot dial.
			time.Sleep(400 * time.Millisecond)
			srv.Stop()
		}()
		_, err := s.Commit(t.Context(), "a", v, ch("h1"))
		<-stopped // before the test's cleanup stops it too
		require.Error(t, err)
		assert.NotErrorIs(t, err, store.ErrNotApplied, "an earlier sending timed out, and may have run: %v", err)
	})
}

// refused and transient, on the errors go-redis gives.
func TestRefused(t *testing.T) {
	srv := testredis.StartServer(t)
	s := open(t, srv.URL+fast)
	defer s.Close()
	ctx := t.Context()
	c := raw(t, srv.URL)
	// A script that writes, then fails: its write stays.
	err := c.Eval(ctx, "redis.call('SET', KEYS[1], 'x'); return redis.call('SADD', KEYS[1], 'y')", []string{"w"}).Err()
	require.ErrorContains(t, err, "WRONGTYPE")
	assert.False(t, refused(err), "an error raised after a write: %v", err)
	assert.Equal(t, "x", c.Get(ctx, "w").Val())
	err = c.EvalSha(ctx, strings.Repeat("0", 40), nil).Err()
	assert.True(t, refused(err), "%v", err)
	assert.False(t, transient(err))
	done, cancel := context.WithCancel(ctx)
	cancel()
	err = c.Get(done, "w").Err()
	assert.False(t, refused(err), "%v", err)
	assert.False(t, transient(err))
	assert.False(t, refused(errors.New("redis: unexpected reply")))
	_, err = strconv.Atoi("x")
	assert.False(t, refused(err))
}

// The set-up mark is the last attempt's: a HELLO that failed in one
// attempt, then the script sent in another on a connection already set up
// (a cluster client tries another node), leaves the outcome unknown; a
// HELLO with no set-up after it in the attempt that sends the script says
// it was never written.
func TestSetUpMarkIsPerAttempt(t *testing.T) {
	hook := newConnHook{}
	timeout := errors.New("i/o timeout")
	run := func(t *testing.T, steps ...string) error {
		ctx, wrap := tracked(t.Context())
		send := hook.ProcessHook(func(context.Context, redis.Cmder) error { return timeout })
		pipe := hook.ProcessPipelineHook(func(context.Context, []redis.Cmder) error { return timeout })
		var err error
		for _, step := range steps {
			switch step {
			case "hello":
				err = send(ctx, redis.NewCmd(ctx, "hello", 3))
			case "set up":
				require.NoError(t, connSetUp(nil)(ctx, nil))
			case "script":
				err = send(ctx, luaScript{Script: redis.NewScript("return 1"), src: "return 1"}.cmd(ctx, false, []string{"k"}, nil))
			case "piped script":
				err = pipe(ctx, []redis.Cmder{luaScript{Script: redis.NewScript("return 1"), src: "return 1"}.cmd(ctx, true, []string{"k"}, nil), redis.NewIntCmd(ctx, "wait", 1, 100)})
			}
		}
		return wrap(err)
	}
	for _, tc := range []struct {
		steps   []string
		refused bool
	}{
		{[]string{"script", "hello"}, true},
		{[]string{"piped script", "hello"}, true},
		{[]string{"script", "hello", "set up"}, false},
		{[]string{"script", "hello", "script"}, false},
		{[]string{"script", "hello", "piped script"}, false},
		{[]string{"script", "hello", "script", "hello"}, true},
		{[]string{"script"}, false},
	} {
		t.Run(strings.Join(tc.steps, ", "), func(t *testing.T) {
			assert.Equal(t, tc.refused, refused(run(t, tc.steps...)))
		})
	}
}
