package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/redis/go-redis/v9"
)

// plan is how long and how hard a run is.
type plan struct {
	seed     uint64
	traffic  time.Duration // sessions start, and faults land, for this long per store
	workers  int           // sessions replayed at once
	pace     time.Duration // between two frames of a session, about
	maxFault int           // faults per store, at most
	// clusterWait is the Cluster's --store-wait-replicas: 0 in both runs,
	// so that failovers lose acknowledged writes for acpnormd to detect
	// (ACPNORM_CHAOS_CLUSTER_WAIT=1 runs it as docs/scaling.md
	// recommends).
	clusterWait string
	gap         [2]time.Duration
	hold        [2]time.Duration
}

// planFromEnv is the short run, or the long one with ACPNORM_CHAOS_LONG=1;
// ACPNORM_CHAOS_SEED repeats a run's schedule (the short run's seed is
// fixed unless given, the long run's random).
func planFromEnv(t *testing.T) plan {
	p := plan{seed: 1, traffic: 25 * time.Second, workers: 4, pace: 4 * time.Millisecond, maxFault: 8, clusterWait: "0",
		gap: [2]time.Duration{500 * time.Millisecond, 2 * time.Second}, hold: [2]time.Duration{300 * time.Millisecond, 2 * time.Second}}
	if os.Getenv("ACPNORM_CHAOS_LONG") == "1" {
		p.seed = rand.Uint64() % 1_000_000
		p.traffic, p.workers, p.maxFault = 4*time.Minute, 6, 200
		p.gap = [2]time.Duration{300 * time.Millisecond, 3 * time.Second}
		p.hold = [2]time.Duration{200 * time.Millisecond, 3 * time.Second}
	}
	if s := os.Getenv("ACPNORM_CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ACPNORM_CHAOS_SEED=%q: want a number", s)
		}
		p.seed = n
	}
	if s := os.Getenv("ACPNORM_CHAOS_CLUSTER_WAIT"); s != "" {
		p.clusterWait = s
	}
	if s := os.Getenv("ACPNORM_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("ACPNORM_CHAOS_DURATION=%q: %v", s, err)
		}
		p.traffic = d
	}
	return p
}

func between(rng *rand.Rand, r [2]time.Duration) time.Duration {
	return r[0] + time.Duration(rng.Int64N(int64(r[1]-r[0])+1))
}

type recording struct {
	file  string
	lines []replay.Line
}

func loadRecordings(t *testing.T) []recording {
	t.Helper()
	var files []string
	for _, g := range []string{"../testdata/recordings/*.ndjson", "../testdata/recordings/agents/*.ndjson"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("only %d recordings found under ../testdata/recordings", len(files))
	}
	var recs []recording
	for _, f := range files {
		lines, err := replay.ReadFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		recs = append(recs, recording{file: f, lines: lines})
	}
	return recs
}

// store is the Redis deployment's part of the faults.
type store interface {
	url() string
	// killMaster SIGKILLs a master and returns once a replica took over
	// and the old master runs again (as a replica); lossy says that the
	// master had writes no replica had acknowledged.
	killMaster(rng *rand.Rand) (lossy bool)
	// lagReplica SIGSTOPs a replica for hold, so that it falls behind,
	// then SIGCONTs it; with killToo its master is killed while it is
	// paused.
	lagReplica(rng *rand.Rand, hold time.Duration, killToo bool) (lossy bool)
	// settle waits until every server runs, in sync.
	settle()
}

// TestChaos runs the chaos suite on each store; see the package comment.
func TestChaos(t *testing.T) {
	p := planFromEnv(t)
	t.Logf("seed %d (repeat: ACPNORM_CHAOS_SEED=%d); %v of traffic per store, %d sessions at once; the Cluster with --store-wait-replicas %s", p.seed, p.seed, p.traffic, p.workers, p.clusterWait)
	recs := loadRecordings(t)
	refs := &references{}
	for _, tc := range []struct {
		name string
		wait string
		open func(t *testing.T) store
	}{
		// The setup docs/scaling.md recommends: no acknowledged write is
		// lost to a failover, so losses are rare here.
		{"sentinel", "1", func(t *testing.T) store {
			return &sentinelStore{t: t, d: testredis.StartSentinel(t, 2, 3, 2, time.Second)}
		}},
		// Without the wait a failover to a replica that
		// fell behind loses acknowledged writes: the losses the server
		// must detect.
		{"cluster", p.clusterWait, func(t *testing.T) store {
			return &clusterStore{t: t, c: testredis.StartCluster(t, 3, 1, time.Second)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runChaos(t, p, tc.open(t), tc.wait, recs, refs)
		})
	}
}

func runChaos(t *testing.T, p plan, st store, wait string, recs []recording, refs *references) {
	rng := rand.New(rand.NewPCG(p.seed, uint64(len(t.Name()))))
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (repeat: ACPNORM_CHAOS_SEED=%d): %s", p.seed, p.seed, fmt.Sprintf(format, args...))
	}
	var fleet []*daemon
	var addrs []string
	for _, name := range []string{"A", "B", "C"} {
		d := startDaemon(t, name, "--store", st.url(), "--store-wait-replicas", wait)
		fleet = append(fleet, d)
		addrs = append(addrs, d.addr)
	}

	// The sessions: workers replay recordings, in a seeded order, until
	// the traffic window ends; each session's client starts at another
	// acpnormd.
	w := newWire()
	order := rng.Perm(len(recs))
	ctx, cancel := context.WithTimeout(context.Background(), p.traffic+5*time.Minute)
	defer cancel()
	stopStarting := time.Now().Add(p.traffic)
	var mu sync.Mutex
	var results []sessionResult
	next := 0
	var wg sync.WaitGroup
	for k := range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stopStarting) && ctx.Err() == nil {
				mu.Lock()
				n := next
				next++
				mu.Unlock()
				rec := recs[order[n%len(order)]]
				ref, err := refs.get(rec.file, rec.lines)
				if err != nil {
					mu.Lock()
					results = append(results, sessionResult{id: "reference", file: rec.file, closeErr: err})
					mu.Unlock()
					return
				}
				id := fmt.Sprintf("chaos-%d-%d-%s", k, n, strings.TrimSuffix(filepath.Base(rec.file), ".ndjson"))
				rot := append(append([]string{}, addrs[n%3:]...), addrs[:n%3]...)
				r := playSession(ctx, w, rot, id, rec.file, rec.lines, p.pace, ref)
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
		}()
	}

	// The faults, on this goroutine (testredis fails the test from it),
	// one at a time: each is undone before the next.
	f := &figures{faults: map[string]int{}}
	heal := func() {
		for _, d := range fleet {
			if err := d.heal(); err != nil {
				fail("%v", err)
			}
		}
	}
	// The first four faults are the four kinds in a seeded order, so that
	// even a short run has each; then a kind at random.
	first := rng.Perm(4)
	for n := 0; n < p.maxFault && time.Now().Before(stopStarting); n++ {
		time.Sleep(between(rng, p.gap))
		hold := between(rng, p.hold)
		d := fleet[rng.IntN(len(fleet))]
		kind := rng.IntN(10)
		if n < len(first) {
			kind = []int{0, 3, 5, 7}[first[n]]
		}
		switch {
		case kind < 3:
			t.Logf("fault %d: SIGKILL acpnormd %s, restart after %v", n, d.name, hold)
			f.faults["acpnormd-kill"]++
			d.stop()
			time.Sleep(hold)
		case kind < 5:
			t.Logf("fault %d: SIGSTOP acpnormd %s for %v", n, d.name, hold)
			f.faults["acpnormd-pause"]++
			if err := d.signal(syscall.SIGSTOP); err != nil {
				fail("%v", err)
			}
			time.Sleep(hold)
		case kind < 7:
			t.Logf("fault %d: SIGKILL the Redis master", n)
			f.faults["redis-master-kill"]++
			if st.killMaster(rng) {
				f.lossyFailovers++
			}
		default:
			killToo := rng.IntN(2) == 0
			t.Logf("fault %d: SIGSTOP a Redis replica for %v (its master killed meanwhile: %v)", n, hold, killToo)
			f.faults["redis-replica-lag"]++
			if killToo {
				f.faults["redis-master-kill"]++
			}
			if st.lagReplica(rng, hold, killToo) {
				f.lossyFailovers++
			}
		}
		heal()
		st.settle()
	}
	heal()
	st.settle()

	// Every replay must end.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		cancel()
		<-done
		for _, d := range fleet {
			t.Logf("acpnormd %s, last lines: %s", d.name, strings.Join(d.lastLogs(), "\n"))
		}
		fail("replays did not end within 5 minutes of the last fault")
	}
	check(t, p.seed, w, results, f)
	t.Logf("seed %d: %v", p.seed, f)
}

// sentinelStore is a master, two replicas and three Sentinels.
type sentinelStore struct {
	t *testing.T
	d *testredis.Sentinel
}

func (s *sentinelStore) url() string { return s.d.URL }

func (s *sentinelStore) killMaster(rng *rand.Rand) bool {
	m := s.d.Master(nil, 2*time.Minute)
	off := offset(s.t, m)
	m.Stop()
	lossy := lost(s.t, s.d.Master(m, 2*time.Minute), off)
	m.Start() // empty; the Sentinels make it a replica of the new master
	return lossy
}

func (s *sentinelStore) lagReplica(rng *rand.Rand, hold time.Duration, killToo bool) bool {
	m := s.d.Master(nil, 2*time.Minute)
	rs := s.d.Replicas(m)
	r := rs[rng.IntN(len(rs))]
	r.Pause()
	cutReplicas(s.t, m) // the other replica reconnects at once
	time.Sleep(hold)
	lossy := false
	if killToo {
		off := offset(s.t, m)
		m.Stop()
		lossy = lost(s.t, s.d.Master(m, 2*time.Minute), off)
		m.Start()
	}
	r.Resume()
	return lossy
}

// settle waits until the master the Sentinels name has both replicas
// online (not at its very offset: the sessions keep writing).
func (s *sentinelStore) settle() {
	for _, srv := range s.d.Servers {
		srv.Start() // does nothing when it runs
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		m := s.d.Master(nil, time.Until(deadline))
		if online(s.t, m) >= 2 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the master %s has not 2 replicas online within 3 minutes: %v", m.Addr, replication(s.t, m))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// clusterStore is a Redis Cluster of three masters with a replica each.
type clusterStore struct {
	t *testing.T
	c *testredis.Cluster
}

func (c *clusterStore) url() string { return c.c.URL }

func (c *clusterStore) killMaster(rng *rand.Rand) bool {
	ms := c.c.Masters()
	m := ms[rng.IntN(len(ms))]
	rs := c.c.ReplicasOf(m)
	if len(rs) == 0 {
		return false
	}
	off := offset(c.t, m)
	m.Stop()
	waitRole(c.t, rs[0], "master")
	lossy := lost(c.t, rs[0], off)
	m.Start() // rejoins, empty, and becomes a replica of the one that took over
	return lossy
}

func (c *clusterStore) lagReplica(rng *rand.Rand, hold time.Duration, killToo bool) bool {
	ms := c.c.Masters()
	m := ms[rng.IntN(len(ms))]
	rs := c.c.ReplicasOf(m)
	if len(rs) == 0 {
		return false
	}
	r := rs[0]
	r.Pause()
	cutReplicas(c.t, m)
	time.Sleep(hold)
	lossy, off := false, int64(-1)
	if killToo {
		off = offset(c.t, m)
		m.Stop()
	}
	r.Resume()
	if killToo {
		waitRole(c.t, r, "master")
		lossy = lost(c.t, r, off)
		m.Start()
	}
	return lossy
}

// settle waits until every node says the cluster is ok, with three
// masters each with its replica online.
func (c *clusterStore) settle() {
	for _, n := range c.c.Nodes {
		n.Start()
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := c.healthy()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the cluster is not healthy within 3 minutes: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *clusterStore) healthy() error {
	for _, n := range c.c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: n.Addr, DialTimeout: time.Second, ReadTimeout: time.Second})
		info, err := cl.ClusterInfo(context.Background()).Result()
		cl.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", n.Addr, err)
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") || !strings.Contains(info, "cluster_size:3") {
			return fmt.Errorf("%s: %s", n.Addr, info)
		}
	}
	ms := c.c.Masters()
	if len(ms) != 3 {
		return fmt.Errorf("%d masters", len(ms))
	}
	for _, m := range ms {
		if online(c.t, m) < 1 {
			return fmt.Errorf("master %s has no replica online", m.Addr)
		}
	}
	return nil
}

// replication reads INFO replication of s ("" fields when it does not
// answer).
func replication(t *testing.T, s *testredis.Server) map[string]string {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer c.Close()
	fields := map[string]string{}
	info, err := c.Info(context.Background(), "replication").Result()
	if err != nil {
		t.Logf("INFO replication on %s: %v", s.Addr, err)
		return fields
	}
	for _, l := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

// online counts master's replicas online.
func online(t *testing.T, master *testredis.Server) int {
	n := 0
	for k, v := range replication(t, master) {
		if strings.HasPrefix(k, "slave") && strings.Contains(v, "state=online") {
			n++
		}
	}
	return n
}

// cutReplicas closes master's connections to its replicas (CLIENT KILL
// TYPE replica): a paused replica then stays behind, whatever the
// socket buffers held, until it reconnects and catches up.
func cutReplicas(t *testing.T, master *testredis.Server) {
	c := redis.NewClient(&redis.Options{Addr: master.Addr, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer c.Close()
	if err := c.Do(context.Background(), "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		t.Logf("CLIENT KILL TYPE replica on %s: %v", master.Addr, err)
	}
}

// offset is how far master's replication stream went (-1 when unknown).
func offset(t *testing.T, master *testredis.Server) int64 {
	n, err := strconv.ParseInt(replication(t, master)["master_repl_offset"], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// lost says whether the replica promoted to promoted lacked writes of the
// old master's stream up to offset off: it took over at a lower offset
// (second_repl_offset is one past where it did). This is the store's own
// record of a loss, apart from anything acpnormd says.
func lost(t *testing.T, promoted *testredis.Server, off int64) bool {
	n, err := strconv.ParseInt(replication(t, promoted)["second_repl_offset"], 10, 64)
	if err != nil || n < 0 || off < 0 {
		return false
	}
	if n-1 < off {
		t.Logf("%s took over at offset %d; the old master had written up to %d: %d bytes of writes lost", promoted.Addr, n-1, off, off-n+1)
		return true
	}
	return false
}

// waitRole waits, for two minutes at most, until s says it has role.
func waitRole(t *testing.T, s *testredis.Server, role string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: time.Second, ReadTimeout: time.Second})
		info, err := c.Info(context.Background(), "replication").Result()
		c.Close()
		if err == nil && strings.Contains(info, "role:"+role+"\r\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not a %s two minutes on: %v %v", s.Addr, role, info, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
