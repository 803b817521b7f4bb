package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store"
	"github.com/acpnorm/acpnorm/store/storetest"
)

func open(t *testing.T, url string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// raw is a plain client of the test server, to look at the keys.
func raw(t *testing.T, url string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestConformance(t *testing.T) {
	url := testredis.Start(t)
	c := raw(t, url)
	storetest.Run(t, func(t *testing.T) store.Store {
		if err := c.FlushAll(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		return open(t, url)
	})
}

// Two prefixes share one database without seeing each other's sessions.
func TestPrefix(t *testing.T) {
	url := testredis.Start(t)
	a := open(t, url)
	b := open(t, url+"?prefix=other:")
	defer a.Close()
	defer b.Close()
	ctx := t.Context()
	for _, s := range []*Store{a, b} {
		if _, err := s.Commit(ctx, "x", 0, &store.Change{Header: []byte(s.prefix), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*Store{a, b} {
		snap, err := s.Load(ctx, "x")
		if err != nil || snap.Version == 0 || string(snap.Header) != s.prefix {
			t.Errorf("prefix %q: %+v, %v", s.prefix, snap, err)
		}
	}
	keys, err := raw(t, url).Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "acpnorm:{") && !strings.HasPrefix(k, "other:{") {
			t.Errorf("key %q has neither prefix", k)
		}
	}
	if _, err := Open(url, WithPrefix("a{b}")); err == nil || !strings.Contains(err.Error(), "brace") {
		t.Errorf("Open with a braced prefix: %v; want an error about the brace", err)
	}
}

// Every key of a session shares one hash tag, whatever the session id.
// The session's hash and name set expire exactly one TTL after the last
// commit; its streams between one and two TTLs after it, pushed out all
// together only when that would no longer hold.
func TestKeysAndTTL(t *testing.T) {
	url := testredis.Start(t)
	s := open(t, url)
	defer s.Close()
	c := raw(t, url)
	ctx := t.Context()
	const session = "a}{b:s:c\x00é"
	h := s.keys(session)[0]
	// check commits and then checks that every key of the session has an
	// expiry in (want-10m, want] for the hash and name set, and in
	// (streams-10m, streams] for the streams.
	v := uint64(0)
	check := func(ch *store.Change, nkeys int, want, streams time.Duration) {
		t.Helper()
		var err error
		if v, err = s.Commit(ctx, session, v, ch); err != nil {
			t.Fatal(err)
		}
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != nkeys {
			t.Fatalf("keys %q; want %d", keys, nkeys)
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, h) {
				t.Errorf("key %q does not start with the session's hash key %q", k, h)
			}
			// The hash tag is the first {...} of the key: the escaped id.
			tag := k[strings.IndexByte(k, '{')+1:]
			tag = tag[:strings.IndexByte(tag, '}')]
			if want := h[strings.IndexByte(h, '{')+1 : len(h)-1]; tag != want {
				t.Errorf("key %q has hash tag %q; want %q", k, tag, want)
			}
			ttl, err := c.PTTL(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			w := streams
			if k == h || k == h+":k" {
				w = want
			}
			if ttl <= w-10*time.Minute || ttl > w {
				t.Errorf("after commit %d: key %q expires in %v; want %v", v, k, ttl, w)
			}
		}
	}
	app := func(name string) store.StreamOp { return store.StreamOp{Name: name, Data: []byte(name), Append: true} }
	// Created with a 1 h TTL: streams expire in 2 h.
	check(&store.Change{Header: []byte("h"), Streams: []store.StreamOp{app("x"), {Name: "y{z}", Data: []byte("2")}}, TTL: time.Hour}, 4, time.Hour, 2*time.Hour)
	// A new stream takes the others' expiry; no other moves.
	check(&store.Change{Streams: []store.StreamOp{app("z")}, TTL: time.Hour}, 5, time.Hour, 2*time.Hour)
	// A longer TTL pushes every stream out, touched or not.
	check(&store.Change{Records: map[string][]byte{"r": []byte("1")}, TTL: 3 * time.Hour}, 5, 3*time.Hour, 6*time.Hour)
	// A shorter one: the session expires one (short) TTL from now; the streams
	// need no push.
	check(&store.Change{Streams: []store.StreamOp{app("x"), {Name: "z", Delete: true}}, TTL: time.Hour}, 4, time.Hour, 6*time.Hour)
}

// The name set always lists "", which is a stream only while the hash has
// the field e: a stream "" that a build before the field wrote (the key
// there, no e) is not loaded, while one this build writes is.
func TestEmptyStreamName(t *testing.T) {
	url := testredis.Start(t)
	s := open(t, url)
	defer s.Close()
	c := raw(t, url)
	ctx := t.Context()
	v, err := s.Commit(ctx, "a", 0, &store.Change{Streams: []store.StreamOp{{Name: "s", Data: []byte("1")}}, TTL: time.Hour})
	require.NoError(t, err)
	h := s.keys("a")[0]
	g, err := c.HGet(ctx, h, "g").Result()
	require.NoError(t, err)
	require.NoError(t, c.Set(ctx, h+":s:"+g+":", "old", time.Hour).Err())
	snap, err := s.Load(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{"s": []byte("1")}, snap.Streams)

	v, err = s.Commit(ctx, "a", v, &store.Change{Streams: []store.StreamOp{{Name: "", Data: []byte("new")}}, TTL: time.Hour})
	require.NoError(t, err)
	snap, err = s.Load(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{"s": []byte("1"), "": []byte("new")}, snap.Streams)
	require.Equal(t, v, snap.Version)
}

// A server that goes away gives an error naming it (not a conflict, not an
// empty session); one that comes back empty (a restart without
// persistence, or FLUSHALL) gives an absent session, and a commit based on
// the lost version conflicts. The session made again never has the lost
// version: a replica that cached it there finds the new one changed.
func TestServerLost(t *testing.T) {
	srv := testredis.StartServer(t)
	s := open(t, srv.URL)
	defer s.Close()
	ctx := t.Context()
	lost, err := s.Commit(ctx, "a", 0, &store.Change{Header: []byte("h"), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if lost, err = s.Commit(ctx, "a", lost, &store.Change{Header: []byte("h"), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = s.Load(c, "a")
	if err == nil || errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), srv.Addr) {
		t.Fatalf("Load with the server down: %v; want an error naming %s", err, srv.Addr)
	}
	_, err = s.Commit(c, "a", lost, &store.Change{Header: []byte("x"), TTL: time.Hour})
	if err == nil || errors.Is(err, store.ErrConflict) {
		t.Fatalf("Commit with the server down: %v; want an error that is not a conflict", err)
	}
	srv.Restart()
	snap, err := s.Load(ctx, "a")
	if err != nil {
		t.Fatalf("Load after the restart: %v", err)
	}
	if snap.Version != 0 {
		t.Fatalf("Load after a restart without persistence: version %d; want 0", snap.Version)
	}
	if _, err := s.Commit(ctx, "a", lost, &store.Change{Header: []byte("x"), TTL: time.Hour}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Commit at the lost version: %v; want ErrConflict", err)
	}
	// Made again, as many commits as were lost: none has the lost version
	// (counting up from 1 again, the fourth did), so a commit based on it
	// still conflicts.
	v, err := s.Commit(ctx, "a", 0, &store.Change{Header: []byte("x"), TTL: time.Hour})
	for i := 0; err == nil && i < 3; i++ {
		if v == lost {
			t.Fatalf("the session made again has the lost version %d", v)
		}
		v, err = s.Commit(ctx, "a", v, &store.Change{Header: []byte("x"), TTL: time.Hour})
	}
	if err != nil || v == lost {
		t.Fatalf("Commits making it again: version %d (lost: %d), %v", v, lost, err)
	}
	if _, err := s.Commit(ctx, "a", lost, &store.Change{Header: []byte("y"), TTL: time.Hour}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Commit at the lost version once it was made again: %v; want ErrConflict", err)
	}
	if err := raw(t, srv.URL).FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if snap, err := s.Load(ctx, "a"); err != nil || snap.Version != 0 {
		t.Fatalf("Load after FLUSHALL: %+v, %v; want version 0", snap, err)
	}
}

// After SCRIPT FLUSH the scripts are sent again by themselves.
func TestScriptFlush(t *testing.T) {
	url := testredis.Start(t)
	s := open(t, url)
	defer s.Close()
	c := raw(t, url)
	ctx := t.Context()
	v1, err := s.Commit(ctx, "a", 0, &store.Change{Header: []byte("h"), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.ScriptExists(ctx, commitScript.Hash()).Result(); err != nil || ok[0] {
		t.Fatalf("SCRIPT EXISTS after SCRIPT FLUSH: %v, %v", ok, err)
	}
	v2, err := s.Commit(ctx, "a", v1, &store.Change{Header: []byte("h2"), TTL: time.Hour})
	if err != nil || v2 <= v1 {
		t.Fatalf("Commit after SCRIPT FLUSH: %d, %v", v2, err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if snap, err := s.Load(ctx, "a"); err != nil || snap.Version != v2 || string(snap.Header) != "h2" {
		t.Fatalf("Load after SCRIPT FLUSH: %+v, %v", snap, err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "a", v2); err != nil {
		t.Fatalf("Delete after SCRIPT FLUSH: %v", err)
	}
	if ok, err := c.ScriptExists(ctx, deleteScript.Hash()).Result(); err != nil || !ok[0] {
		t.Fatalf("the delete script was not loaded again: %v, %v", ok, err)
	}
}

// A commit sent again after its reply was lost (go-redis resends on a
// broken connection) is recognised by its token: it reports the version it
// made, also when other commits followed, and is applied once.
func TestCommitResent(t *testing.T) {
	url := testredis.Start(t)
	s := open(t, url)
	defer s.Close()
	ctx := t.Context()
	keys := s.keys("a")
	tok := func(i int) string { return fmt.Sprintf("token-%026d", i) } // 32 bytes
	send := func(base uint64, token string) int64 {
		t.Helper()
		v, err := commitScript.Run(ctx, s.c, keys, strconv.FormatUint(base, 10), "60000", token, "0", "", "0", "0", "1", "s", "a", token[22:]+";").Int64()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	vs := []int64{0} // vs[i] is the version commit i made
	vs = append(vs, send(0, tok(1)))
	if vs[1] <= 0 {
		t.Fatalf("first send: version %d", vs[1])
	}
	if v := send(0, tok(1)); v != vs[1] {
		t.Fatalf("the same commit sent again: %d; want version %d", v, vs[1])
	}
	if v := send(0, tok(2)); v != -1 {
		t.Fatalf("another commit at base 0: %d; want -1 (conflict)", v)
	}
	// Ten more commits; the ones 8 or fewer back are still recognised.
	for i := 2; i <= 11; i++ {
		v := send(uint64(vs[i-1]), tok(i))
		if v <= vs[i-1] {
			t.Fatalf("commit %d at base %d: version %d", i, vs[i-1], v)
		}
		vs = append(vs, v)
	}
	for i := 1; i <= 11; i++ {
		want := vs[i]
		if i <= 11-8 {
			want = -1 // forgotten: a conflict, as for any stale base
		}
		if v := send(uint64(vs[i-1]), tok(i)); v != want {
			t.Errorf("commit %d sent again at the last version: %d; want %d", i, v, want)
		}
		if v := send(uint64(vs[i-1]), tok(100+i)); v != -1 {
			t.Errorf("another commit at base %d: %d; want -1", vs[i-1], v)
		}
	}
	snap, err := s.Load(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	for i := 1; i <= 11; i++ {
		fmt.Fprintf(&log, "%010d;", i)
	}
	if snap.Version != uint64(vs[11]) || string(snap.Streams["s"]) != log.String() {
		t.Fatalf("after the resends: version %d, stream %q; want %d and each append once", snap.Version, snap.Streams["s"], vs[11])
	}
}

func TestOpenErrors(t *testing.T) {
	// A port nothing listens on (the server is stopped right away).
	srv := testredis.StartServer(t)
	srv.Stop()
	u := "redis://user:s3cret@" + srv.Addr + "/0?dial_timeout=2s"
	_, err := Open(u)
	if err == nil {
		t.Fatal("Open of a closed port: no error")
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), srv.Addr) {
		t.Errorf("Open error %q: want the address and no password", err)
	}
	for _, bad := range []string{"http://x:6379", "redis://u:s3cret@x:6379/notadb", "redis://u:s3cret@[::1/0", "redis://x:6379/0?bogus=1"} {
		_, err := Open(bad)
		if err == nil {
			t.Errorf("Open(%q): no error", bad)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q) error %q shows the password", bad, err)
		}
	}
}

// The conformance suite through Sentinel, to the master it names.
func TestConformanceSentinel(t *testing.T) {
	d := testredis.StartSentinel(t, 1, 1, 1, 5*time.Second)
	c := raw(t, d.Servers[0].URL)
	storetest.Run(t, func(t *testing.T) store.Store {
		if err := c.FlushAll(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		return open(t, d.URL, WithWaitReplicas(1, 5*time.Second))
	})
}

// The conformance suite on a Redis Cluster of three masters: the scripts
// touch one slot each, whatever node serves it.
func TestConformanceCluster(t *testing.T) {
	cl := testredis.StartCluster(t, 3, 0, 5*time.Second)
	n := 0
	storetest.Run(t, func(t *testing.T) store.Store {
		n++ // a prefix per subtest: FLUSHALL would have to go to every master
		return open(t, cl.URL, WithPrefix(fmt.Sprintf("c%d:", n)))
	})
}

// On a cluster, every key of a session is in the slot of its hash tag,
// sessions spread over the masters, and a commit that waits for a replica
// goes to the master of its slot (a WAIT elsewhere would count nothing).
func TestClusterSpreadAndWait(t *testing.T) {
	cl := testredis.StartCluster(t, 3, 1, 5*time.Second)
	s := open(t, cl.URL, WithWaitReplicas(1, 5*time.Second))
	defer s.Close()
	ctx := t.Context()
	for i := range 60 {
		id := fmt.Sprintf("session-%d", i)
		ch := &store.Change{Header: []byte("h"), Records: map[string][]byte{"r": []byte("1")},
			Streams: []store.StreamOp{{Name: "0:call", Data: []byte("out"), Append: true}}, TTL: time.Hour}
		v, err := s.Commit(ctx, id, 0, ch)
		if err != nil || v == 0 {
			t.Fatalf("commit %s: %d, %v", id, v, err)
		}
		if snap, err := s.Load(ctx, id); err != nil || snap.Version != v || string(snap.Streams["0:call"]) != "out" {
			t.Fatalf("load %s: %+v, %v", id, snap, err)
		}
	}
	keys := cl.Keys()
	total := int64(0)
	for addr, n := range keys {
		total += n
		if n == 0 {
			t.Errorf("master %s holds no key of 60 sessions: %v", addr, keys)
		}
	}
	if total != 3*60 {
		t.Errorf("%d keys on the masters; want 3 per session (hash, name set, stream): %v", total, keys)
	}
	t.Logf("keys per master: %v", keys)
}

// startReplicated starts a redis-server and a replica of it.
func startReplicated(t *testing.T) (master, replica *testredis.Server) {
	t.Helper()
	master = testredis.StartServer(t)
	replica = testredis.StartServer(t, "--replicaof", "127.0.0.1 "+master.Addr[strings.LastIndexByte(master.Addr, ':')+1:])
	return master, replica
}

// With WithWaitReplicas, a commit returns once the replica holds it. A
// replica that stops acknowledging (paused, its connection still up) leaves
// the commit applied on the master but not acknowledged: ErrNotReplicated
// after the timeout. A master whose replicas are gone (cut off) refuses
// before it applies anything: ErrTooFewReplicas, the version unchanged.
// Once the replica is back, the master's copy is what it gets.
func TestWaitReplicas(t *testing.T) {
	master, replica := startReplicated(t)
	const timeout = 2 * time.Second
	s := open(t, master.URL, WithWaitReplicas(1, timeout))
	defer s.Close()
	ctx := t.Context()
	ch := func(h string) *store.Change { return &store.Change{Header: []byte(h), TTL: time.Hour} }
	deadline := time.Now().Add(time.Minute)
	var err error
	var v1 uint64
	for { // until the replica has synced once
		if v1, err = s.Commit(ctx, "a", 0, ch("1")); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
		_ = raw(t, master.URL).FlushAll(ctx).Err()
	}
	require.NoError(t, err, "commit with a replica in sync")
	snap, err := s.Load(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, v1, snap.Version)

	// Paused just after an acknowledgement: it still counts, so the
	// commit is applied, and WAIT times out.
	require.Eventually(t, func() bool {
		info, err := raw(t, master.URL).Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "state=online") && strings.Contains(info, "lag=0")
	}, time.Minute, 20*time.Millisecond, "the replica acknowledges")
	replica.Pause()
	start := time.Now()
	_, err = s.Commit(ctx, "a", v1, ch("2"))
	require.ErrorIs(t, err, ErrNotReplicated, "commit with the replica paused")
	assert.NotErrorIs(t, err, store.ErrNotApplied, "applied on the master")
	assert.NotErrorIs(t, err, store.ErrConflict)
	assert.GreaterOrEqual(t, time.Since(start), timeout, "the commit gave up before its timeout")
	t.Logf("%v", err)
	snap, err = s.Load(ctx, "a")
	require.NoError(t, err)
	v2 := snap.Version
	assert.Greater(t, v2, v1, "on the master after the unacknowledged commit")
	assert.Equal(t, "2", string(snap.Header))

	// Cut off: the master has no replica online, and applies nothing.
	require.NoError(t, raw(t, master.URL).ClientKillByFilter(ctx, "TYPE", "replica").Err())
	_, err = s.Commit(ctx, "a", v2, ch("3"))
	require.ErrorIs(t, err, ErrTooFewReplicas, "commit with no replica online")
	assert.NotErrorIs(t, err, store.ErrUnacknowledged, "nothing was applied, so it is not an unacknowledged commit")
	assert.ErrorIs(t, err, store.ErrNotApplied, "refused before it wrote")
	t.Logf("%v", err)
	snap, err = s.Load(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, v2, snap.Version, "the refused commit wrote nothing")
	assert.Equal(t, "2", string(snap.Header))

	replica.Resume()
	require.Eventually(t, func() bool {
		v, err := s.Commit(ctx, "a", v2, ch("3"))
		return err == nil && v > v2
	}, time.Minute, 100*time.Millisecond, "commit once the replica is back")
	r := raw(t, replica.URL)
	require.Eventually(t, func() bool {
		h, _ := r.HGet(ctx, s.keys("a")[0], "h").Result()
		return h == "3"
	}, time.Minute, 50*time.Millisecond, "the replica holds header 3")
}

// A caller that finds a commit applied (it reads the session) confirms it
// before it answers from it: Confirm returns once the replica holds every
// commit of the session, on any connection, and ErrNotReplicated while
// the replica is paused. A commit that go-redis sends again on a new
// connection (the reply was lost), found applied, is acknowledged only
// once the replica holds it, the same way. (Both write, so that WAIT
// counts from the master's offset now: Redis 7.2 and later take a
// connection's offset after its writes only; 7.0, after any command.)
// Without WithWaitReplicas, Confirm returns at once.
func TestConfirm(t *testing.T) {
	master, replica := startReplicated(t)
	// Long enough for a healthy replica to answer WAIT on a busy machine
	// (500 ms was not, with the whole suite running on 2 cores).
	const timeout = 2 * time.Second
	s := open(t, master.URL, WithWaitReplicas(1, timeout))
	defer s.Close()
	ctx := t.Context()
	rc := raw(t, master.URL)
	acknowledging := func() bool {
		info, err := rc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "state=online") && strings.Contains(info, "lag=0")
	}
	require.Eventually(t, acknowledging, time.Minute, 20*time.Millisecond, "the replica acknowledges")
	v1, err := s.Commit(ctx, "a", 0, &store.Change{Header: []byte("1"), TTL: time.Hour})
	require.NoError(t, err)
	require.NoError(t, open(t, master.URL, WithWaitReplicas(1, timeout)).Confirm(ctx, "a"), "the replica holds it")

	require.Eventually(t, acknowledging, time.Minute, 20*time.Millisecond, "the replica acknowledges")
	replica.Pause()
	_, err = s.Commit(ctx, "a", v1, &store.Change{Header: []byte("2"), TTL: time.Hour})
	require.ErrorIs(t, err, ErrNotReplicated)
	// The commit sent again, as go-redis does after a lost reply, on a
	// connection that wrote nothing: the script finds its token.
	snap, err := s.Load(ctx, "a")
	require.NoError(t, err)
	token := strings.Repeat("ab", 16)
	args := []any{strconv.FormatUint(snap.Version, 10), "3600000", token, "1", "3", "0", "1", "10"}
	first, acked, err := s.runAndWait(ctx, commitScript, s.keys("a"), args)
	require.NoError(t, err)
	require.Greater(t, first, int64(snap.Version), "applied")
	require.Zero(t, acked, "the replica is paused")
	args[0] = "1" // not the session's version now: the token is what finds it
	again, acked, err := open(t, master.URL, WithWaitReplicas(1, timeout)).runAndWait(ctx, commitScript, s.keys("a"), args)
	require.NoError(t, err)
	assert.Equal(t, first, again, "found applied")
	assert.Zero(t, acked, "acknowledged, sent again on a connection that wrote nothing, although no replica holds it")

	for _, c := range []*Store{s, open(t, master.URL, WithWaitReplicas(1, timeout))} {
		start := time.Now()
		err = c.Confirm(ctx, "a")
		require.ErrorIs(t, err, ErrNotReplicated, "confirmed although no replica holds the last commits")
		assert.ErrorIs(t, err, store.ErrUnacknowledged)
		assert.GreaterOrEqual(t, time.Since(start), timeout, "gave up before its timeout")
		t.Logf("%v", err)
	}
	err = s.Confirm(ctx, "absent")
	require.ErrorIs(t, err, store.ErrUnacknowledged, "a session that is not there")
	assert.NotErrorIs(t, err, ErrNotReplicated)
	require.NoError(t, open(t, master.URL).Confirm(ctx, "a"), "without WithWaitReplicas")
	snap, err = s.Load(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, first, int64(snap.Version), "Confirm changes nothing")
	assert.Equal(t, "3", string(snap.Header))

	replica.Resume()
	require.Eventually(t, func() bool { return s.Confirm(ctx, "a") == nil }, time.Minute, 100*time.Millisecond, "confirmed once the replica is back")
	require.NoError(t, open(t, master.URL, WithWaitReplicas(1, timeout)).Confirm(ctx, "a"))
	h, err := raw(t, replica.URL).HGet(ctx, s.keys("a")[0], "h").Result()
	require.NoError(t, err)
	assert.Equal(t, "3", h, "the replica holds the last commit")
}

// The URL's form picks the client: one server, Sentinel (master_name), or
// Cluster (addr without master_name). Errors name the URL without any
// password, also a Sentinel URL's master password parameter.
func TestOpenForms(t *testing.T) {
	srv := testredis.StartServer(t)
	for _, tc := range []struct {
		url, want string
	}{
		{"redis://u:s3cret@" + srv.Addr + "/0?master_name=nobody&password=s3cret&dial_timeout=2s", "nobody"},
		{"redis://" + srv.Addr + "/3?addr=" + srv.Addr, "database 0 only"},
		{"redis://" + srv.Addr + "/0?master_name=x&replica_only=true", "replicas"},
		{"redis://" + srv.Addr + "?addr=" + srv.Addr + "&read_only=true", "replicas"},
		{"redis://" + srv.Addr + "?addr=" + srv.Addr + "&route_randomly=1", "replicas"},
		{"redis://" + srv.Addr + "/0?master_name=", "master_name is empty"},
		{"redis://" + srv.Addr + "?addr=nonsense", "addr"},
		// A one-seed cluster names its seed twice; a plain server is not a cluster.
		{"redis://" + srv.Addr + "?addr=" + srv.Addr + "&dial_timeout=2s", "cluster"},
	} {
		_, err := Open(tc.url, WithWaitReplicas(0, 0))
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want)) {
			t.Errorf("Open(%q): %v; want an error about %q", tc.url, err, tc.want)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q) error %q shows the password", tc.url, err)
		}
	}
	for _, bad := range [][2]any{{-1, time.Second}, {1, time.Duration(0)}} {
		if _, err := Open(srv.URL, WithWaitReplicas(bad[0].(int), bad[1].(time.Duration))); err == nil {
			t.Errorf("WithWaitReplicas(%v, %v): no error", bad[0], bad[1])
		}
	}
}

// A version is a plain integer in the hash, so that an older acpnormd on
// the same Redis (HINCRBY) still commits to a session a newer one wrote;
// and the jump drawn from each commit's token varies, so two commits made
// in one millisecond on two histories rarely meet on one number.
func TestVersionForm(t *testing.T) {
	url := testredis.Start(t)
	s := open(t, url)
	defer s.Close()
	ctx := t.Context()
	jumps := map[uint64]bool{}
	for i := range 20 {
		v, err := s.Commit(ctx, fmt.Sprint("j", i), 0, &store.Change{TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		jumps[v%1024] = true
	}
	if len(jumps) < 10 {
		t.Errorf("20 first commits show %d jumps (version mod 1024): %v", len(jumps), jumps)
	}
	v, err := s.Commit(ctx, "a", 0, &store.Change{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	n, err := raw(t, url).HIncrBy(ctx, s.keys("a")[0], "v", 1).Result()
	if err != nil || uint64(n) != v+1 {
		t.Fatalf("HINCRBY of the stored version %d (an older build's commit): %d, %v", v, n, err)
	}
}

// Ping answers while the server does and fails while it is down; on a
// cluster, while any master is down.
func TestPing(t *testing.T) {
	t.Run("server", func(t *testing.T) {
		srv := testredis.StartServer(t)
		s := open(t, srv.URL)
		require.NoError(t, s.Ping(t.Context()))
		srv.Stop()
		err := s.Ping(t.Context())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "redisstore: ping ")
		srv.Start()
		require.Eventually(t, func() bool { return s.Ping(t.Context()) == nil }, 10*time.Second, 50*time.Millisecond)
	})
	t.Run("cluster", func(t *testing.T) {
		cl := testredis.StartCluster(t, 3, 0, 5*time.Second)
		s := open(t, cl.URL)
		require.NoError(t, s.Ping(t.Context()))
		cl.Nodes[2].Stop()
		require.Error(t, s.Ping(t.Context()), "a master is down")
		cl.Nodes[2].Start()
		require.Eventually(t, func() bool { return s.Ping(t.Context()) == nil }, 20*time.Second, 100*time.Millisecond)
	})
}
