package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/internal/testlog"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store"
)

// openStore warns when Redis would evict acpnorm's keys: every key the
// store writes has an expiry, so under a volatile-* policy as under an
// allkeys-* one a full Redis evicts parts of live sessions. noeviction
// gets no warning, and a Redis that refuses CONFIG (as managed ones often
// do) opens all the same, with a note that the policy could not be read.
func TestOpenStoreWarnsOfEviction(t *testing.T) {
	open := func(t *testing.T, args ...string) string {
		t.Helper()
		srv := testredis.StartServer(t, args...)
		var logged testlog.Buffer
		st, err := openStore(srv.URL, 0, time.Second, slog.New(slog.NewTextHandler(&logged, nil)))
		require.NoError(t, err)
		require.NotNil(t, st)
		t.Cleanup(func() { st.(io.Closer).Close() })
		return logged.String()
	}
	for _, policy := range []string{"volatile-lru", "volatile-ttl", "volatile-random", "allkeys-lru", "allkeys-lfu"} {
		t.Run(policy, func(t *testing.T) {
			log := open(t, "--maxmemory-policy", policy)
			assert.Contains(t, log, "level=WARN")
			assert.Contains(t, log, "maxmemory_policy="+policy)
			assert.Contains(t, log, "noeviction")
		})
	}
	t.Run("noeviction", func(t *testing.T) {
		log := open(t, "--maxmemory-policy", "noeviction")
		assert.NotContains(t, log, "maxmemory_policy", "%s", log)
		assert.NotContains(t, log, "level=WARN", "%s", log)
	})
	t.Run("CONFIG refused", func(t *testing.T) {
		log := open(t, "--maxmemory-policy", "allkeys-lru", "--rename-command", "CONFIG", "config-renamed-away")
		assert.NotContains(t, log, "level=WARN", "%s", log)
		assert.Contains(t, log, "could not read", "%s", log)
	})
}

// The readiness check reads the policy again (at most every
// policyEvery), so that one changed after start is said too: a warning
// when Redis starts to evict, once per change, not at every check, and
// a note when it is back to noeviction.
func TestReadinessCheckWarnsOfEvictionChanges(t *testing.T) {
	defer func(d time.Duration) { policyEvery = d }(policyEvery)
	policyEvery = 0
	srv := testredis.StartServer(t, "--maxmemory-policy", "noeviction")
	var logged testlog.Buffer
	st, err := openStore(srv.URL, 0, time.Second, slog.New(slog.NewTextHandler(&logged, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { st.(io.Closer).Close() })
	ck, ok := st.(store.Checker)
	require.True(t, ok, "the Redis store is a store.Checker")
	ctx := t.Context()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin.Close()
	checks := func(n int) {
		t.Helper()
		for range n {
			require.NoError(t, ck.Check(ctx))
		}
	}
	warned := func(policy string) int { return strings.Count(logged.String(), "maxmemory_policy="+policy) }

	checks(3)
	assert.NotContains(t, logged.String(), "level=WARN", "%s", logged.String())
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	checks(3)
	assert.Equal(t, 1, warned("allkeys-lru"), "warned once of the change: %s", logged.String())
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "volatile-ttl").Err())
	checks(3)
	assert.Equal(t, 1, warned("volatile-ttl"), "warned once of the next change: %s", logged.String())
	assert.Equal(t, 1, warned("allkeys-lru"))
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	checks(3)
	assert.Equal(t, 1, warned("noeviction"), "said once that it is back to noeviction: %s", logged.String())
	assert.Equal(t, 2, strings.Count(logged.String(), "level=WARN"), "%s", logged.String())
}

// On a Cluster the readiness check says which master fails it, by its
// address and slots, once per change, not at every check, and when it
// takes commits again.
func TestReadinessCheckNamesClusterMasters(t *testing.T) {
	// A node timeout longer than the test: no master is found failing,
	// so the others go on taking commits.
	cl := testredis.StartCluster(t, 3, 0, time.Minute)
	var logged testlog.Buffer
	st, err := openStore(cl.URL+"&dial_timeout=300ms&read_timeout=300ms&max_redirects=1", 0, time.Second, slog.New(slog.NewTextHandler(&logged, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { st.(io.Closer).Close() })
	ck := st.(store.Checker)
	ctx := t.Context()
	require.NoError(t, ck.Check(ctx))
	m := cl.Masters()[2]
	shards, err := redis.NewClient(&redis.Options{Addr: cl.Masters()[0].Addr}).ClusterShards(ctx).Result()
	require.NoError(t, err)
	var slots string
	for _, sh := range shards {
		for _, n := range sh.Nodes {
			if net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10)) == m.Addr && len(sh.Slots) == 1 {
				slots = fmt.Sprintf("%d-%d", sh.Slots[0].Start, sh.Slots[0].End)
			}
		}
	}
	require.NotEmpty(t, slots)

	m.Stop()
	for range 3 {
		require.Error(t, ck.Check(ctx), "a master is down")
	}
	warned := "level=WARN msg=\"store: a Redis Cluster master fails the readiness check; the commits of the sessions in its slots fail\" redis=" + m.Addr + " slots=" + slots + " error="
	assert.Equal(t, 1, strings.Count(logged.String(), warned), "said once: %s", logged.String())
	assert.Equal(t, 1, strings.Count(logged.String(), "level=WARN msg=\"store:"), "only the master that is down: %s", logged.String())

	m.Start()
	require.Eventually(t, func() bool { return ck.Check(ctx) == nil }, 30*time.Second, 100*time.Millisecond, "the master is back")
	require.NoError(t, ck.Check(ctx))
	assert.Equal(t, 1, strings.Count(logged.String(), "level=INFO msg=\"store: a Redis Cluster master passes the readiness check again, or serves no slot now\" redis="+m.Addr+" slots="+slots), "%s", logged.String())
}
