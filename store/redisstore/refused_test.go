package redisstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store"
)

// refusedCase is a session of one commit ("0;" on a stream) whose next
// commit ("1;") a real Redis refuses for a while.
type refusedCase struct {
	t   *testing.T
	srv *testredis.Server
	s   *Store
	v   uint64 // the session's version before the refused commit
}

func startRefused(t *testing.T, args ...string) *refusedCase {
	t.Helper()
	srv := testredis.StartServer(t, args...)
	s := open(t, srv.URL+fast)
	t.Cleanup(func() { s.Close() })
	v, err := s.Commit(t.Context(), "a", 0, refusedChange("0;"))
	require.NoError(t, err)
	return &refusedCase{t: t, srv: srv, s: s, v: v}
}

func refusedChange(log string) *store.Change {
	return &store.Change{Header: []byte(log), Streams: []store.StreamOp{{Name: "log", Data: []byte(log), Append: true}}, TTL: time.Hour}
}

// commit sends the commit the server is to refuse.
func (c *refusedCase) commit() error {
	_, err := c.s.Commit(c.t.Context(), "a", c.v, refusedChange("1;"))
	return err
}

// refused checks that the commit failed with Redis's error prefix and
// wraps store.ErrNotApplied.
func (c *refusedCase) refused(err error, prefix string) {
	c.t.Helper()
	require.Error(c.t, err, "%s: the commit went through", prefix)
	c.t.Logf("%s: %v", prefix, err)
	assert.True(c.t, redis.HasErrorPrefix(err, prefix), "want Redis's %s error: %v", prefix, err)
	assert.ErrorIs(c.t, err, store.ErrNotApplied, "%s is given before the commit writes", prefix)
	assert.NotErrorIs(c.t, err, store.ErrConflict)
}

// resent checks, once the condition is gone, that nothing of the refused
// commit was applied and that sending it again plainly (the same base)
// applies it once, the session's versions going on from where they were.
func (c *refusedCase) resent() {
	c.t.Helper()
	ctx := c.t.Context()
	snap, err := c.s.Load(ctx, "a")
	require.NoError(c.t, err)
	assert.Equal(c.t, c.v, snap.Version, "the refused commit changed the version")
	assert.Equal(c.t, "0;", string(snap.Streams["log"]), "the refused commit wrote")
	v, err := c.s.Commit(ctx, "a", c.v, refusedChange("1;"))
	require.NoError(c.t, err, "sent again once the condition is gone")
	assert.Greater(c.t, v, c.v)
	v2, err := c.s.Commit(ctx, "a", v, refusedChange("2;"))
	require.NoError(c.t, err, "the next commit, on the version the resent one made")
	snap, err = c.s.Load(ctx, "a")
	require.NoError(c.t, err)
	assert.Equal(c.t, v2, snap.Version)
	assert.Equal(c.t, "0;1;2;", string(snap.Streams["log"]), "each commit applied once, in order")
}

// Redis's errors that the store classes as refused before the commit
// wrote (see refused), each made to happen on a real redis-server: the
// commit wraps store.ErrNotApplied, nothing of it is there, and sent
// again once the condition is gone it applies once.
func TestCommitRefused(t *testing.T) {
	// A connection that has not authenticated gets NOAUTH for a command
	// of up to 10 arguments; Redis (7.0, 6.2.6) refuses a longer one, as
	// every commit is, or a bulk over 16 KB, while it reads it, before
	// any command runs, and closes the connection: "Protocol error:
	// unauthenticated multibulk length".
	t.Run("NOAUTH", func(t *testing.T) {
		c := startRefused(t)
		ctx := t.Context()
		admin := raw(t, c.srv.URL)
		require.NoError(t, admin.Ping(ctx).Err()) // connected, so authenticated, before the password
		require.NoError(t, admin.ConfigSet(ctx, "requirepass", "s3cret").Err())
		// The store's connections are cut: it dials a new one, which
		// the server no longer lets in without the password.
		require.NoError(t, admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err())
		c.refused(c.commit(), "Protocol error: unauthenticated")
		_, err := c.s.Load(ctx, "a") // a script of 5 arguments
		require.True(t, redis.HasErrorPrefix(err, "NOAUTH"), "a short command: %v", err)
		assert.True(t, refused(err))
		require.NoError(t, admin.ConfigSet(ctx, "requirepass", "").Err())
		c.resent()
	})

	t.Run("MISCONF", func(t *testing.T) {
		// Saves on (stop-writes-on-bgsave-error counts only then), in a
		// directory that is then removed, so that a save fails.
		dir := filepath.Join(t.TempDir(), "data")
		require.NoError(t, os.Mkdir(dir, 0o700))
		c := startRefused(t, "--save", "3600 1", "--stop-writes-on-bgsave-error", "yes", "--dir", dir)
		ctx := t.Context()
		admin := raw(t, c.srv.URL)
		require.NoError(t, os.Remove(dir))
		require.NoError(t, admin.BgSave(ctx).Err())
		require.Eventually(t, func() bool {
			info, err := admin.Info(ctx, "persistence").Result()
			return err == nil && strings.Contains(info, "rdb_bgsave_in_progress:0") && strings.Contains(info, "rdb_last_bgsave_status:err")
		}, 10*time.Second, 20*time.Millisecond, "BGSAVE fails")
		c.refused(c.commit(), "MISCONF")
		// The server's working directory is gone for good: the operator
		// lets it take writes without saving.
		require.NoError(t, admin.ConfigSet(ctx, "stop-writes-on-bgsave-error", "no").Err())
		c.resent()
	})

	t.Run("BUSY", func(t *testing.T) {
		c := startRefused(t, "--busy-reply-threshold", "100")
		ctx := t.Context()
		admin := raw(t, c.srv.URL)
		o, err := redis.ParseURL(c.srv.URL)
		require.NoError(t, err)
		o.ReadTimeout = -1 // the script runs until it is killed
		o.MaxRetries = -1
		looper := redis.NewClient(o)
		defer looper.Close()
		done := make(chan error, 1)
		go func() { done <- looper.Eval(context.Background(), "while true do end", nil).Err() }()
		require.Eventually(t, func() bool {
			return redis.HasErrorPrefix(admin.Ping(ctx).Err(), "BUSY")
		}, 10*time.Second, 20*time.Millisecond, "the script runs past busy-reply-threshold")
		c.refused(c.commit(), "BUSY")
		require.NoError(t, admin.ScriptKill(ctx).Err())
		select {
		case err := <-done:
			require.ErrorContains(t, err, "killed")
		case <-time.After(10 * time.Second):
			t.Fatal("the script did not end after SCRIPT KILL")
		}
		c.resent()
	})

	t.Run("LOADING", func(t *testing.T) {
		// A data set that loads slowly: 3000 keys of 1 KB, a millisecond
		// each (key-load-delay, in µs), answering clients between keys.
		c := startRefused(t, "--enable-debug-command", "local", "--key-load-delay", "1000", "--loading-process-events-interval-bytes", "1024")
		ctx := t.Context()
		admin := raw(t, c.srv.URL)
		require.NoError(t, admin.Do(ctx, "debug", "populate", "3000", "ballast", "1000").Err())
		require.NoError(t, admin.Save(ctx).Err())
		c.srv.Stop()
		started := make(chan struct{})
		go func() { defer close(started); c.srv.Start() }() // returns once it answers PING: loaded
		defer func() { <-started }()
		var err error
		deadline := time.Now().Add(10 * time.Second)
		for {
			err = c.commit()
			require.Error(t, err, "the commit went through before the server was seen loading")
			if redis.HasErrorPrefix(err, "LOADING") || time.Now().After(deadline) {
				break
			}
			// Not listening yet: a dial that failed, which sent nothing.
			require.ErrorIs(t, err, store.ErrNotApplied, "%v", err)
			time.Sleep(10 * time.Millisecond)
		}
		c.refused(err, "LOADING")
		<-started
		c.resent()
	})
}
