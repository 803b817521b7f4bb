package test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store/redisstore"
)

// Engines (normalize.Normalizer) on a real redis-server, as two acpnormd
// replicas use it: what one applied, another answers the same, and what
// Redis loses is found out.

const lossRecording = "../normalize/testdata/opencode-1.18.33_bash-ask_scenario-dev.ndjson"

// engineOn opens a Normalizer with its own connection to the Redis at url.
func engineOn(t *testing.T, url string) *normalize.Normalizer {
	t.Helper()
	st, err := redisstore.Open(url)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return normalize.New(normalize.WithStore(st))
}

// holder is a client of one session: what it was handed, folded, and
// every revision at or below one it held (which the contract never sends).
type holder struct {
	t        *testing.T
	id       string
	lines    []replay.Line
	held     map[string]uint32
	calls    map[string]string // call -> folded state, described
	output   map[string]string
	wentBack []string
}

func newHolder(t *testing.T, id string, lines []replay.Line) *holder {
	return &holder{t: t, id: id, lines: lines, held: map[string]uint32{}, calls: map[string]string{}, output: map[string]string{}}
}

// feed sends line i as sequence i+1 (skipping applied sequences) and
// returns every event; revisions are folded unless answered again.
func (h *holder) feed(n *normalize.Normalizer, i int, opts ...normalize.FeedOption) []normalize.Event {
	h.t.Helper()
	var evs []normalize.Event
	opts = append(opts, normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied(), normalize.WithEmit(func(ev normalize.Event) error {
		evs = append(evs, ev)
		if x := ev.ShellExec; x != nil && !ev.Again {
			if x.Revision <= h.held[x.ToolCallID] {
				h.wentBack = append(h.wentBack, fmt.Sprintf("%s: revision %d after %d", x.ToolCallID, x.Revision, h.held[x.ToolCallID]))
				return nil
			}
			h.held[x.ToolCallID] = x.Revision
			h.output[x.ToolCallID] = x.Output.Apply(h.output[x.ToolCallID])
			exit := "?"
			if x.ExitCode != nil {
				exit = fmt.Sprint(*x.ExitCode)
			}
			h.calls[x.ToolCallID] = fmt.Sprintf("%q %v %v exit %s", x.Command, x.State, x.Outcome, exit)
		}
		return nil
	}))
	_, err := n.Feed(h.id, h.lines[i].Msg, opts...)
	require.NoError(h.t, err)
	return evs
}

func (h *holder) finals() map[string]string {
	m := maps.Clone(h.calls)
	for id, o := range h.output {
		m[id] += " output " + fmt.Sprintf("%q", o)
	}
	return m
}

func errorsOf(evs []normalize.Event) []*normalize.FrameError {
	var out []*normalize.FrameError
	for _, ev := range evs {
		if ev.Error != nil {
			out = append(out, ev.Error)
		}
	}
	return out
}

// Frames applied by engine A whose answers never reached the client (A
// died before answering) are sent again to engine B on the same Redis:
// B answers each with exactly the events it made on A, in order, its
// ENDED revisions included, instead of ALREADY_EXISTS; and so does A.
func TestRedisRetryAnsweredOnAnyEngine(t *testing.T) {
	url := testredis.Start(t)
	lines := readLines(t, lossRecording)
	a, b := engineOn(t, url), engineOn(t, url)
	h := newHolder(t, "S", lines)
	cut := len(lines) - 24
	for i := range cut {
		require.Empty(t, errorsOf(h.feed(a, i)))
	}
	var made [][]normalize.Event
	ended := 0
	for i := cut; i < len(lines); i++ {
		evs := h.feed(a, i) // answered, but lost with A
		made = append(made, evs)
		for _, ev := range evs {
			if ev.ShellExec != nil && ev.ShellExec.State == normalize.StateEnded {
				ended++
			}
		}
	}
	require.Positive(t, ended, "the frames sent again end a call")
	for _, n := range []*normalize.Normalizer{b, a} {
		for i := cut; i < len(lines); i++ {
			again := h.feed(n, i)
			for j := range again {
				assert.True(t, again[j].Again, "frame %d: %+v", i+1, again[j])
				again[j].Again = false
			}
			assert.Equal(t, made[i-cut], again, "frame %d is answered with what it made (nothing for nothing)", i+1)
		}
	}
}

// A Redis that restarts from an older snapshot (its RDB, saved before the
// last frames) has lost commits it acknowledged: what a replica promoted
// while behind holds. The engine that served the session notices on its
// own (its cache is newer), another engine notices from what the client
// says it holds; both answer DATA_LOSS, and the client that sends the
// session again from the first frame ends with one process's finals, no
// revision going back.
func TestRedisLossFromAnOlderSnapshotIsDetected(t *testing.T) {
	srv := testredis.StartServer(t)
	lines := readLines(t, lossRecording)
	a, b := engineOn(t, srv.URL), engineOn(t, srv.URL)
	one := map[string]*holder{"S1": newHolder(t, "S1", lines), "S2": newHolder(t, "S2", lines)}
	half, more := len(lines)/2, 3*len(lines)/4
	for _, h := range one {
		for i := range half {
			require.Empty(t, errorsOf(h.feed(a, i)))
		}
	}
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	require.NoError(t, rc.Save(t.Context()).Err())
	rc.Close()
	for _, h := range one {
		for i := half; i < more; i++ {
			require.Empty(t, errorsOf(h.feed(a, i)))
		}
	}
	srv.Restart() // SIGKILL; it starts again from the RDB saved at half
	rc = redis.NewClient(&redis.Options{Addr: srv.Addr})
	n, err := rc.DBSize(t.Context()).Result()
	rc.Close()
	require.NoError(t, err)
	require.Positive(t, n, "Redis holds the older state, not nothing")

	// S1 goes on at engine A, which served it; S2 at engine B, saying
	// what the client holds.
	errs := errorsOf(one["S1"].feed(a, more))
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.DataLoss, errs[0].Code, errs[0].Message)
	errs = errorsOf(one["S2"].feed(b, more, normalize.WithHeld(maps.Clone(one["S2"].held))))
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.DataLoss, errs[0].Code, errs[0].Message)

	want := newHolder(t, "S", lines)
	alone := normalize.New()
	for i := range lines {
		want.feed(alone, i)
	}
	for id, n := range map[string]*normalize.Normalizer{"S1": a, "S2": b} {
		h := one[id]
		for i := range lines {
			for _, e := range errorsOf(h.feed(n, i)) {
				assert.Equal(t, normalize.AlreadyExists, e.Code, "%s frame %d: %s", id, i+1, e.Message)
			}
		}
		assert.Empty(t, h.wentBack, id)
		assert.Equal(t, want.finals(), h.finals(), id)
	}
}

// A Redis Cluster master whose replica fell behind (paused) is killed,
// and the replica takes over without the last commits (CLUSTER FAILOVER
// TAKEOVER, as a failover that does not wait for it). The engine that
// served the session finds out (DATA_LOSS); the client rebuilds the
// session from its first frame and ends with one process's finals, no
// revision going back.
func TestClusterLaggingReplicaPromotedIsDetected(t *testing.T) {
	c := testredis.StartCluster(t, 3, 1, time.Second)
	lines := readLines(t, lossRecording)
	a := engineOn(t, c.URL)
	h := newHolder(t, "S", lines)
	half, more := len(lines)/2, 3*len(lines)/4
	for i := range half {
		require.Empty(t, errorsOf(h.feed(a, i)))
	}
	var master *testredis.Server
	for _, m := range c.Masters() {
		cl := redis.NewClient(&redis.Options{Addr: m.Addr})
		n, err := cl.DBSize(t.Context()).Result()
		if err == nil && n > 0 {
			master = m
			// Its replica holds everything so far before it is paused.
			require.NoError(t, cl.Do(t.Context(), "WAIT", 1, 5000).Err())
		}
		cl.Close()
	}
	require.NotNil(t, master, "no master holds the session")
	replica := c.ReplicasOf(master)[0]
	replica.Pause()
	// and cut off: what the master sends from now on never reaches it
	// (paused alone, it would read it from its socket once resumed).
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	require.NoError(t, mc.ClientKillByFilter(t.Context(), "TYPE", "replica").Err())
	mc.Close()
	for i := half; i < more; i++ {
		require.Empty(t, errorsOf(h.feed(a, i)))
	}
	master.Stop()
	replica.Resume()
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer rc.Close()
	require.Eventually(t, func() bool {
		_ = rc.Do(t.Context(), "CLUSTER", "FAILOVER", "TAKEOVER").Err()
		r, err := rc.Do(t.Context(), "ROLE").Slice()
		return err == nil && len(r) > 0 && r[0] == "master"
	}, time.Minute, 200*time.Millisecond, "the lagging replica takes over")
	c.WaitHealthy(3, time.Minute)
	// The next frames, until one needs the store (a frame that changes
	// nothing whatever the state does not); UNAVAILABLE ones again, until
	// the engine's client finds the new master.
	found := false
	deadline := time.Now().Add(time.Minute)
	for i := more; i < len(lines) && !found; {
		errs := errorsOf(h.feed(a, i))
		switch {
		case len(errs) == 1 && errs[0].Code == normalize.Unavailable && time.Now().Before(deadline):
			time.Sleep(200 * time.Millisecond)
		case len(errs) == 1 && errs[0].Code == normalize.DataLoss:
			found = true
		default:
			require.Empty(t, errs, "frame %d", i+1)
			i++
		}
	}
	require.True(t, found, "the loss is found out")

	want := newHolder(t, "S", lines)
	alone := normalize.New()
	for i := range lines {
		want.feed(alone, i)
	}
	for i := range lines {
		for _, e := range errorsOf(h.feed(a, i)) {
			assert.Equal(t, normalize.AlreadyExists, e.Code, "frame %d: %s", i+1, e.Message)
		}
	}
	assert.Empty(t, h.wentBack)
	assert.Equal(t, want.finals(), h.finals())
}

// With redisstore.WithWaitReplicas (acpnormd --store-wait-replicas), a
// frame whose commit no replica acknowledged is refused (UNAVAILABLE, not
// acknowledged), and the client sends it again. The master applied it,
// so it is answered as applied (with what it made, kept with the commit,
// or nothing for a frame that made nothing), but only once a replica holds
// that commit: until then, sent again to the engine that applied it or to
// another, it is refused the same way. Answered before, it would be lost
// with a master that died then (the replica promoted never had it), and
// the client would have been told it was applied.
func TestRedisWaitRetryAnsweredOnlyOnceReplicated(t *testing.T) {
	master := testredis.StartServer(t)
	replica := testredis.StartServer(t, "--replicaof", "127.0.0.1 "+master.Addr[strings.LastIndexByte(master.Addr, ':')+1:])
	const timeout = 300 * time.Millisecond
	open := func() *normalize.Normalizer {
		st, err := redisstore.Open(master.URL, redisstore.WithWaitReplicas(1, timeout))
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return normalize.New(normalize.WithStore(st))
	}
	a, b := open(), open()
	lines := readLines(t, lossRecording)
	// What each frame makes, in one process.
	made := make([][]normalize.Event, len(lines))
	alone, want := normalize.New(), newHolder(t, "S", lines)
	for i := range lines {
		made[i] = want.feed(alone, i)
	}
	// The last frames: some make revisions (an ENDED one among them),
	// some nothing.
	cut := len(lines) - 6
	ended, nothing := 0, 0
	for _, evs := range made[cut:] {
		if len(evs) == 0 {
			nothing++
		}
		for _, ev := range evs {
			if ev.ShellExec != nil && ev.ShellExec.State == normalize.StateEnded {
				ended++
			}
		}
	}
	require.Positive(t, ended, "the frames sent again end a call")
	require.Positive(t, nothing, "a frame sent again makes nothing")

	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	acknowledging := func() bool {
		info, err := mc.Info(t.Context(), "replication").Result()
		return err == nil && strings.Contains(info, "state=online") && strings.Contains(info, "lag=0")
	}
	require.Eventually(t, acknowledging, time.Minute, 20*time.Millisecond, "the replica acknowledges")
	h := newHolder(t, "S", lines)
	for i := range cut {
		// A replica slower than the 300 ms wait on a busy machine leaves
		// a frame unacknowledged; sent again, it is answered once the
		// replica holds it, as a client resends it.
		require.Eventually(t, func() bool { return errorsOf(h.feed(a, i)) == nil }, time.Minute, 20*time.Millisecond, "frame %d is answered once the replica holds it", i+1)
	}
	// Paused just after an acknowledgement, the replica still counts for
	// the master (see redisstore), which applies each frame; none is
	// acknowledged.
	require.Eventually(t, acknowledging, time.Minute, 20*time.Millisecond, "the replica acknowledges")
	replica.Pause()
	refused := func(n *normalize.Normalizer, i int, what string) {
		t.Helper()
		evs := h.feed(n, i)
		require.Len(t, evs, 1, "frame %d %s: %+v", i+1, what, evs)
		fe := evs[0].Error
		require.NotNil(t, fe, "frame %d %s: answered although no replica holds it: %+v", i+1, what, evs[0])
		assert.Equal(t, normalize.Unavailable, fe.Code, "frame %d %s: %s", i+1, what, fe.Message)
		assert.Contains(t, fe.Message, "not acknowledged", "frame %d %s", i+1, what)
	}
	for i := cut; i < len(lines); i++ {
		refused(a, i, "")
	}
	for _, n := range []*normalize.Normalizer{a, b, a} {
		for i := cut; i < len(lines); i++ {
			refused(n, i, "sent again")
		}
	}

	replica.Resume()
	require.Eventually(t, func() bool {
		return errorsOf(h.feed(b, cut)) == nil
	}, time.Minute, 100*time.Millisecond, "frame %d is answered once the replica holds it", cut+1)
	for _, n := range []*normalize.Normalizer{b, a} {
		for i := cut; i < len(lines); i++ {
			again := h.feed(n, i)
			for j := range again {
				assert.True(t, again[j].Again, "frame %d: %+v", i+1, again[j])
				again[j].Again = false
			}
			assert.Equal(t, made[i], again, "frame %d is answered with what it made (nothing for nothing)", i+1)
		}
	}
}
