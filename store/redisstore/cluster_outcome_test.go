package redisstore

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store"
)

// fastCluster is fast for a cluster URL (which already has a query):
// the cluster client sends a command again MaxRedirects times.
const fastCluster = "&read_timeout=300ms&dial_timeout=300ms&max_redirects=2&min_retry_backoff=50ms&max_retry_backoff=100ms"

// startClusterRefused is startRefused on a Cluster of three masters
// (a node timeout of 15 s: no master is found failing while a test holds
// one), each with wait replicas, the store waiting for them
// (WithWaitReplicas: the commit and WAIT go in one pipeline to the
// master): srv is the master of session "a"'s slot.
func startClusterRefused(t *testing.T, wait int) *refusedCase {
	t.Helper()
	c, _ := startClusterRefusedOn(t, wait)
	return c
}

func startClusterRefusedOn(t *testing.T, wait int) (*refusedCase, *testredis.Cluster) {
	t.Helper()
	cl := testredis.StartCluster(t, 3, wait, 15*time.Second)
	var opts []Option
	if wait > 0 {
		opts = append(opts, WithWaitReplicas(wait, time.Second))
	}
	s := open(t, cl.URL+fastCluster, opts...)
	t.Cleanup(func() { s.Close() })
	v, err := s.Commit(t.Context(), "a", 0, refusedChange("0;"))
	require.NoError(t, err)
	node, err := s.cluster.MasterForKey(t.Context(), s.keys("a")[0])
	require.NoError(t, err)
	var srv *testredis.Server
	for _, n := range cl.Nodes {
		if n.Addr == node.Options().Addr {
			srv = n
		}
	}
	require.NotNil(t, srv, "the master of %s is a node of the cluster", node.Options().Addr)
	return &refusedCase{t: t, srv: srv, s: s, v: v}, cl
}

// On a Cluster the commit goes through the cluster client, which sends
// it to another node after MOVED, ASK or READONLY, and after a broken
// connection or a timeout when it may (a commit's script may not: see
// once): the outcome of each kind of failure is the same as on one
// server.
func TestCommitOutcomeCluster(t *testing.T) {
	for _, wait := range []int{0, 1} {
		t.Run("wait "+strconv.Itoa(wait), func(t *testing.T) { commitOutcomeCluster(t, wait) })
	}
}

func commitOutcomeCluster(t *testing.T, wait int) {
	// The session's master asks for a password its clients do not have
	// (it was set after they connected; their connections are cut):
	// the commit, longer than 10 arguments, gets Redis's Protocol
	// error, before any command runs.
	t.Run("Protocol error", func(t *testing.T) {
		c := startClusterRefused(t, wait)
		ctx := t.Context()
		admin := raw(t, c.srv.URL)
		require.NoError(t, admin.Ping(ctx).Err())
		require.NoError(t, admin.ConfigSet(ctx, "requirepass", "s3cret").Err())
		require.NoError(t, admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err())
		c.refused(c.commit(), "Protocol error: unauthenticated")
		_, err := c.s.Load(ctx, "a")
		require.True(t, redis.HasErrorPrefix(err, "NOAUTH"), "a short command: %v", err)
		require.NoError(t, admin.ConfigSet(ctx, "requirepass", "").Err())
		c.resent()
	})

	// The same, the store's map of the slots old: the session's slot
	// moved to another master, which then asked for a password. The
	// commit goes to the old master, which answers MOVED, and then to
	// the new one, on a new connection.
	t.Run("MOVED, then Protocol error", func(t *testing.T) {
		c, cl := startClusterRefusedOn(t, wait)
		ctx := t.Context()
		mv := cl.MoveSlot(t, c.s.keys("a")[0])
		mv.Start()
		for _, k := range mv.Keys(100) {
			mv.Migrate(k)
		}
		mv.Finish()
		admin := raw(t, "redis://"+mv.To)
		require.NoError(t, admin.Ping(ctx).Err())
		require.NoError(t, admin.ConfigSet(ctx, "requirepass", "s3cret").Err())
		require.NoError(t, admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err())
		c.refused(c.commit(), "Protocol error: unauthenticated")
		info, err := raw(t, "redis://"+mv.From).Info(ctx, "errorstats").Result()
		require.NoError(t, err)
		assert.Contains(t, info, "errorstat_MOVED:", "the commit went to the old master first")
		require.NoError(t, admin.ConfigSet(ctx, "requirepass", "").Err())
		c.resent()
		source, target := mv.Counts()
		assert.Zero(t, source, "nothing written on the old master")
		assert.NotZero(t, target)
	})

	// The session's master is stopped after the store's connections to
	// it were cut: the commit's new connection is taken by the kernel,
	// but its HELLO is never answered, so the commit was never written.
	t.Run("stopped while a new connection is set up", func(t *testing.T) {
		c := startClusterRefused(t, wait)
		ctx := t.Context()
		admin := raw(t, c.srv.URL)
		require.NoError(t, admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err())
		require.NoError(t, admin.Close())
		time.Sleep(50 * time.Millisecond) // the store sees its connections closed
		c.srv.Pause()
		err := c.commit()
		c.srv.Resume()
		require.Error(t, err)
		t.Logf("%v", err)
		assert.ErrorContains(t, err, "timeout")
		assert.ErrorIs(t, err, store.ErrNotApplied, "a new connection's HELLO timed out")
		assert.NotErrorIs(t, err, store.ErrConflict)
		time.Sleep(300 * time.Millisecond) // what the server had read, it has run
		c.resent()
	})

	// The same master stopped with the store's connection to it set up:
	// the commit is written and its answer never comes. It may have been
	// applied (here it is, once the master goes on).
	t.Run("stopped, then going on", func(t *testing.T) {
		c := startClusterRefused(t, wait)
		ctx := t.Context()
		_, err := c.s.Load(ctx, "a") // a connection to the master, set up
		require.NoError(t, err)
		c.srv.Pause()
		err = c.commit()
		c.srv.Resume()
		require.Error(t, err)
		t.Logf("%v", err)
		assert.NotErrorIs(t, err, store.ErrNotApplied, "no reply came: %v", err)
		require.Eventually(t, func() bool {
			snap, err := c.s.Load(ctx, "a")
			return err == nil && snap.Version > c.v && string(snap.Streams["log"]) == "0;1;"
		}, 10*time.Second, 20*time.Millisecond, "the stopped master did not apply the commit once it went on")
	})
}
