package redisstore

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store"
)

// A full Redis (maxmemory with noeviction) refuses every commit, a new
// session's as well as an existing one's, and writes nothing: Redis lets
// a script that has already written go on past maxmemory (it cannot stop
// it halfway), so a commit whose first write were one Redis lets through
// when full (DEL) would grow the data set of a full Redis.
func TestFullRedisRefusesEveryCommit(t *testing.T) {
	srv := testredis.StartServer(t, "--maxmemory-policy", "noeviction")
	s := open(t, srv.URL)
	defer s.Close()
	rc := raw(t, srv.URL)
	ctx := t.Context()
	ch := &store.Change{Header: []byte("h"), Records: map[string][]byte{"r": []byte("1")},
		Streams: []store.StreamOp{{Name: "out", Data: []byte("x"), Append: true}}, TTL: time.Hour}
	v, err := s.Commit(ctx, "old", 0, ch)
	require.NoError(t, err)

	require.NoError(t, rc.ConfigSet(ctx, "maxmemory", "1").Err())
	_, err = s.Commit(ctx, "old", v, ch)
	require.Error(t, err, "a commit to an existing session while full")
	assert.Contains(t, err.Error(), "OOM")
	_, err = s.Commit(ctx, "new", 0, ch)
	require.Error(t, err, "a commit that makes a session while full")
	assert.Contains(t, err.Error(), "OOM")
	keys, err := rc.Keys(ctx, "*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		assert.False(t, strings.Contains(k, s.keys("new")[0]), "the refused commit wrote %s", k)
	}
	snap, err := s.Load(ctx, "old")
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version, "the refused commit changed the session")

	require.NoError(t, rc.ConfigSet(ctx, "maxmemory", "0").Err())
	_, err = s.Commit(ctx, "new", 0, ch)
	require.NoError(t, err, "once Redis has room")
}

// Check writes as a commit would: it fails while Redis is full (and
// while it is down), and passes once it takes writes again; its key is
// of the store's prefix, outside every session, and expires.
func TestCheckServer(t *testing.T) {
	srv := testredis.StartServer(t, "--maxmemory-policy", "noeviction")
	s := open(t, srv.URL, WithPrefix("p:"))
	defer s.Close()
	rc := raw(t, srv.URL)
	ctx := t.Context()
	require.NoError(t, s.Check(ctx))
	keys, err := rc.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Equal(t, []string{"p:readiness"}, keys)
	ttl, err := rc.PTTL(ctx, "p:readiness").Result()
	require.NoError(t, err)
	assert.True(t, ttl > 0 && ttl <= checkTTL, "the check's key expires within %v: %v", checkTTL, ttl)

	require.NoError(t, rc.Del(ctx, "p:readiness").Err())
	require.NoError(t, rc.ConfigSet(ctx, "maxmemory", "1").Err())
	require.NoError(t, s.Ping(ctx), "a full Redis answers PING")
	err = s.Check(ctx)
	require.Error(t, err, "a full Redis")
	assert.Contains(t, err.Error(), "OOM")
	assert.Contains(t, err.Error(), "redisstore: readiness check of ")
	require.NoError(t, rc.ConfigSet(ctx, "maxmemory", "0").Err())
	require.NoError(t, s.Check(ctx), "once it has room")

	srv.Stop()
	require.Error(t, s.Check(ctx), "Redis is down")
	srv.Start()
	require.Eventually(t, func() bool { return s.Check(ctx) == nil }, 10*time.Second, 50*time.Millisecond)
}

// With WithWaitReplicas, Check counts the replicas as a commit does: a
// master with fewer online refuses every commit, and fails the check.
func TestCheckReplicas(t *testing.T) {
	master, replica := startReplicated(t)
	s := open(t, master.URL, WithWaitReplicas(1, time.Second))
	defer s.Close()
	none := open(t, master.URL)
	defer none.Close()
	ctx := t.Context()
	require.Eventually(t, func() bool { return s.Check(ctx) == nil }, time.Minute, 50*time.Millisecond, "the replica is online")

	replica.Stop()
	require.Eventually(t, func() bool { return errors.Is(s.Check(ctx), ErrTooFewReplicas) }, 10*time.Second, 50*time.Millisecond, "the replica is gone")
	_, err := s.Commit(ctx, "a", 0, &store.Change{Header: []byte("h"), TTL: time.Hour})
	require.ErrorIs(t, err, ErrTooFewReplicas, "the check says what a commit finds")
	require.NoError(t, none.Check(ctx), "a store that waits for no replica")

	replica.Start()
	require.Eventually(t, func() bool { return s.Check(ctx) == nil }, time.Minute, 50*time.Millisecond, "the replica is back")
}

// On a cluster, Check writes on every master (a key of one of its slots)
// and fails when any master would refuse a commit: one whose replica is
// gone (WithWaitReplicas), one that is full.
func TestCheckCluster(t *testing.T) {
	cl := testredis.StartCluster(t, 3, 1, 5*time.Second)
	s := open(t, cl.URL, WithWaitReplicas(1, time.Second))
	defer s.Close()
	none := open(t, cl.URL)
	defer none.Close()
	ctx := t.Context()
	require.NoError(t, s.Check(ctx))
	for _, m := range cl.Masters() {
		c := raw(t, m.URL)
		keys, err := c.Keys(ctx, DefaultPrefix+"readiness:*").Result()
		require.NoError(t, err)
		require.Len(t, keys, 1, "master %s holds one key of the check", m.Addr)
		slot, err := c.ClusterKeySlot(ctx, keys[0]).Result()
		require.NoError(t, err)
		assert.Equal(t, keys[0], DefaultPrefix+"readiness:{"+slotTag(int(slot))+"}", "the key of slot %d", slot)
	}

	m := cl.Masters()[1]
	rs := cl.ReplicasOf(m)
	require.Len(t, rs, 1)
	rs[0].Stop()
	require.Eventually(t, func() bool { return errors.Is(s.Check(ctx), ErrTooFewReplicas) }, 20*time.Second, 100*time.Millisecond, "a master's replica is gone")
	err := s.Check(ctx)
	assert.Contains(t, err.Error(), m.Addr, "the error names the master")
	require.NoError(t, none.Check(ctx), "a store that waits for no replica")
	rs[0].Start()
	require.Eventually(t, func() bool { return s.Check(ctx) == nil }, time.Minute, 100*time.Millisecond, "the replica is back")

	full := cl.Masters()[2]
	require.NoError(t, raw(t, full.URL).ConfigSet(ctx, "maxmemory", "1").Err())
	err = none.Check(ctx)
	require.Error(t, err, "a master is full")
	assert.Contains(t, err.Error(), "OOM")
	assert.Contains(t, err.Error(), full.Addr)
	require.NoError(t, raw(t, full.URL).ConfigSet(ctx, "maxmemory", "0").Err())
	require.NoError(t, none.Check(ctx))
}

// slotTag's tags hash to their slots (CRC-16/XMODEM, whose check value
// for "123456789" is 0x31C3; CLUSTER KEYSLOT agrees in TestCheckCluster).
func TestSlotTag(t *testing.T) {
	assert.Equal(t, uint16(0x31c3), crc16([]byte("123456789")))
	for _, slot := range []int{0, 1, 5461, 10922, 16383} {
		assert.Equal(t, slot, int(crc16([]byte(slotTag(slot)))%16384), "slot %d", slot)
	}
}

// MaxmemoryPolicies reads the policy of the server, or of every master
// of a cluster by its address.
func TestMaxmemoryPolicies(t *testing.T) {
	srv := testredis.StartServer(t, "--maxmemory-policy", "volatile-lru")
	s := open(t, srv.URL)
	defer s.Close()
	ctx := t.Context()
	got, err := s.MaxmemoryPolicies(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{s.where: "volatile-lru"}, got)

	cl := testredis.StartCluster(t, 3, 0, 5*time.Second)
	c := open(t, cl.URL)
	defer c.Close()
	ms := cl.Masters()
	require.NoError(t, raw(t, ms[1].URL).ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	got, err = c.MaxmemoryPolicies(ctx)
	require.NoError(t, err)
	want := map[string]string{}
	for _, m := range ms {
		want[m.Addr] = "noeviction"
	}
	want[ms[1].Addr] = "allkeys-lru"
	assert.Equal(t, want, got)
}

// On a Cluster the readiness check names each master that would refuse
// a commit, by its address and the slots it serves, and says which
// slots no master serves; it passes whenever every slot has a master
// that takes commits, however many nodes are down.
func TestCheckClusterNodes(t *testing.T) {
	cl := testredis.StartCluster(t, 3, 1, 2*time.Second)
	s := open(t, cl.URL+fastCluster)
	defer s.Close()
	ctx := t.Context()
	require.NoError(t, s.Check(ctx))
	// The slots each master serves, as CLUSTER SHARDS says.
	served := func() map[string]string {
		t.Helper()
		shards, err := raw(t, cl.Masters()[0].URL).ClusterShards(ctx).Result()
		require.NoError(t, err)
		out := map[string]string{}
		for _, sh := range shards {
			var rs []string
			for _, r := range sh.Slots {
				rs = append(rs, fmt.Sprintf("%d-%d", r.Start, r.End))
			}
			for _, n := range sh.Nodes {
				if n.Role == "master" && len(rs) > 0 {
					out[net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))] = strings.Join(rs, ",")
				}
			}
		}
		return out
	}
	slots := served()
	require.Len(t, slots, 3)

	m := cl.Masters()[1]
	r := cl.ReplicasOf(m)[0]
	m.Stop()
	// nodes returns what the check found, by address ("" for the slots
	// no master serves): the slots.
	nodes := func(err error) map[string]string {
		t.Helper()
		t.Logf("%v", err)
		var ce ClusterError
		require.ErrorAs(t, err, &ce)
		out := map[string]string{}
		for _, n := range ce {
			out[n.Addr] = n.Slots
		}
		return out
	}
	err := s.Check(ctx)
	require.Error(t, err, "a master is down")
	assert.Equal(t, map[string]string{m.Addr: slots[m.Addr]}, nodes(err), "the master that is down, and only it")
	assert.Contains(t, err.Error(), "master "+m.Addr+" (slots "+slots[m.Addr]+"): ")

	// Its replica takes its slots: every slot is served again, the
	// old master still down.
	require.Eventually(t, func() bool { return s.Check(ctx) == nil }, 30*time.Second, 100*time.Millisecond, "the replica took the stopped master's slots")
	assert.Equal(t, slots[m.Addr], served()[r.Addr])
	for range 10 {
		require.NoError(t, s.Check(ctx), "every slot is served")
	}

	// Slots that no master serves (the cluster goes on serving the
	// others): the check fails and names them.
	for _, n := range cl.Nodes {
		if n.Running() {
			c := raw(t, n.URL)
			require.NoError(t, c.ConfigSet(ctx, "cluster-require-full-coverage", "no").Err())
			require.NoError(t, c.Do(ctx, "cluster", "delslotsrange", 100, 199).Err())
		}
	}
	require.Eventually(t, func() bool { return s.Check(ctx) != nil }, 10*time.Second, 100*time.Millisecond, "slots without a master")
	err = s.Check(ctx)
	assert.Equal(t, map[string]string{"": "100-199"}, nodes(err), "every master takes commits")
	assert.Contains(t, err.Error(), "slots 100-199: no master serves them")

	// A master with no replica stops: its slots are not served, and
	// once the cluster finds it failing, the other masters refuse every
	// commit too (cluster-require-full-coverage, on again).
	for _, n := range cl.Nodes {
		if n.Running() {
			require.NoError(t, raw(t, n.URL).ConfigSet(ctx, "cluster-require-full-coverage", "yes").Err())
		}
	}
	r.Stop()
	err = s.Check(ctx)
	require.Error(t, err)
	assert.Equal(t, slots[m.Addr], nodes(err)[r.Addr], "the replica that took the slots, now down")
	require.Eventually(t, func() bool { return len(nodes(s.Check(ctx))) == 4 }, 20*time.Second, 200*time.Millisecond, "every master refuses, once the cluster is down")
	for addr, slots := range nodes(s.Check(ctx)) {
		if addr != r.Addr && addr != "" {
			assert.Contains(t, slots, "-", "a master's slots, as ranges")
		}
	}
}

// When the node the cluster client asks for CLUSTER SHARDS refuses it
// (here an ACL that denies that one command on one master; a node that
// is down is skipped by the client itself), the readiness check asks
// the other nodes, and passes: every master takes commits.
func TestCheckClusterShardsFromAnotherNode(t *testing.T) {
	cl := testredis.StartCluster(t, 3, 0, 30*time.Second)
	s := open(t, cl.URL+fastCluster)
	defer s.Close()
	ctx := t.Context()
	require.NoError(t, s.Check(ctx))
	m := cl.Masters()[1]
	require.NoError(t, raw(t, m.URL).Do(ctx, "acl", "setuser", "default", "-cluster|shards").Err())

	refused := 0
	for range 6 {
		// The client picks the node of a keyless command in turn.
		if _, err := s.cluster.ClusterShards(ctx).Result(); err != nil {
			require.ErrorContains(t, err, "NOPERM")
			refused++
		}
		require.NoError(t, s.Check(ctx), "the shards read from a node that answers")
	}
	assert.Positive(t, refused, "the client asked the master that refuses in some of the rounds")

	// No node answers: the check fails and says why.
	for _, n := range cl.Masters() {
		require.NoError(t, raw(t, n.URL).Do(ctx, "acl", "setuser", "default", "-cluster|shards").Err())
	}
	err := s.Check(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CLUSTER SHARDS: ")
	assert.Contains(t, err.Error(), "NOPERM")
}
