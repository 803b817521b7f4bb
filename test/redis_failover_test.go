package test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/acpnorm/acpnorm/fold"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/testredis"
)

// The Redis deployments that fail over: a master with replicas watched by
// Sentinels, a Redis Cluster, and one Redis with an append-only file; all
// real redis-server processes on loopback, each ended by its pid when the
// test ends.
//
// Each run plays every recording to acpnormd up to a line where a command
// still runs (on one stream per recording), fails Redis over, and plays
// the rest: on the same streams, or on new streams to a second acpnormd.
// A client sends a frame answered UNAVAILABLE (the store was failing
// over) again, after a pause. What the client gets is checked against one
// process (checkAgainstSingleProcess): every call's revisions go on 1, 2,
// 3 with no gap, restart or repeat, the folded state after each is one
// process's, and every final equals its golden.
//
// The runs here fail over once each, at the middle of the recordings, and
// the Sentinel one plays the rest without the wait on the same stream and
// with it on a second acpnormd; ACPNORM_REDIS_FAILOVER_FULL=1 runs every
// combination, with the failover at a quarter, a half and three quarters
// of the recordings (see docs/development.md).

// full reports whether ACPNORM_REDIS_FAILOVER_FULL=1 asks for the full runs.
func full() bool { return os.Getenv("ACPNORM_REDIS_FAILOVER_FULL") == "1" }

// cutPoints are the fractions of each recording at which a run fails over.
func cutPoints() []float64 {
	if full() {
		return []float64{0.25, 0.5, 0.75}
	}
	return []float64{0.5}
}

// cutAt picks the first line at or after fraction f of the recording at
// which one process holds a running call (else that line).
func cutAt(rec recorded, f float64) int {
	start := max(1, int(float64(len(rec.lines))*f))
	for i := start - 1; i < len(rec.lines)-1; i++ {
		if len(openAt(rec.ref, rec.lines[i].Number)) > 0 {
			return i + 1
		}
	}
	return start
}

// storeRun is one run over every recording: a stream per recording and
// what the client got on it.
type storeRun struct {
	recs  []recorded
	cuts  []int
	feeds []*feed
	got   [][]*pb.NormalizeResponse
}

var skipApplied = &pb.StreamOptions{SkipAppliedSequences: true}

// playFirstParts opens a stream per recording to r (skipping applied
// sequences) and plays each recording up to its cut; it returns once r
// has answered all of it.
func playFirstParts(t *testing.T, r *replica, recs []recorded, f float64) *storeRun {
	t.Helper()
	run := &storeRun{recs: recs}
	for _, rec := range recs {
		fd := openFeed(t, r)
		fd.options(t, skipApplied)
		cut := cutAt(rec, f)
		for _, l := range rec.lines[:cut] {
			fd.send(t, rec.name, l)
		}
		run.cuts = append(run.cuts, cut)
		run.feeds = append(run.feeds, fd)
	}
	for i, fd := range run.feeds {
		fd.barrier(t)
		run.got = append(run.got, fd.take())
		for _, x := range run.got[i] {
			require.Nil(t, x.GetFrameError(), "%s before the failover", recs[i].name)
		}
	}
	return run
}

// playRest plays the rest of every recording, on the run's streams or,
// with to set, on new streams to it, frame by frame, sending again what is
// answered UNAVAILABLE, and closes the sessions. It returns how many
// frames were answered UNAVAILABLE.
func (run *storeRun) playRest(t *testing.T, to *replica) int {
	t.Helper()
	unavailable := 0
	for i, rec := range run.recs {
		fd := run.feeds[i]
		if to != nil {
			fd = openFeed(t, to)
			fd.options(t, skipApplied)
			run.feeds[i] = fd
		}
		last := rec.lines[len(rec.lines)-1].Number
		for _, l := range rec.lines[run.cuts[i]:] {
			got, n := untilApplied(t, fd, uint64(l.Number), func() { fd.send(t, rec.name, l) })
			run.got[i] = append(run.got[i], got...)
			unavailable += n
		}
		got, n := untilApplied(t, fd, uint64(last+1), func() { fd.closeSession(t, rec.name, uint64(last+1)) })
		run.got[i] = append(run.got[i], got...)
		unavailable += n
	}
	for _, fd := range run.feeds {
		assert.Empty(t, fd.finish(t), "responses after the last barrier")
	}
	return unavailable
}

// untilApplied sends a request (send) and waits for its answers; while it
// is answered UNAVAILABLE (14) it sends it again, every 100 ms, for at most
// fleetWait. It returns the answers and how often it was UNAVAILABLE.
func untilApplied(t *testing.T, fd *feed, seq uint64, send func()) ([]*pb.NormalizeResponse, int) {
	t.Helper()
	deadline := time.Now().Add(fleetWait)
	for n := 0; ; n++ {
		send()
		fd.barrier(t)
		got := fd.take()
		if len(got) == 1 && got[0].GetFrameError().GetCode() == int32(codes.Unavailable) && got[0].GetFrameError().GetSequence() == seq {
			if time.Now().After(deadline) {
				t.Fatalf("request %d still UNAVAILABLE after %v: %s", seq, fleetWait, got[0].GetFrameError().GetMessage())
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return got, n
	}
}

// check checks every recording of the run against one process.
func (run *storeRun) check(t *testing.T) {
	t.Helper()
	for i, rec := range run.recs {
		t.Run(rec.name, func(t *testing.T) { checkAgainstSingleProcess(t, rec, run.got[i]) })
	}
}

func loadAll(t *testing.T) []recorded {
	t.Helper()
	var recs []recorded
	for _, file := range recordings(t) {
		recs = append(recs, loadRecorded(t, file))
	}
	return recs
}

// A master killed (SIGKILL) mid-session, two replicas, three Sentinels
// (quorum 2, the master down after 1 s without an answer): the Sentinels
// promote a replica, acpnormd's client follows, and each session goes on
// where it was, on the same acpnormd and stream, or on a second acpnormd.
// Without --store-wait-replicas the master is killed once its replicas
// have caught up (Redis replicates asynchronously; what a master dies
// with before that is the next test's subject); with
// --store-wait-replicas 1 it is killed at once after the last answer.
func TestSentinelFailoverMidSession(t *testing.T) {
	d := testredis.StartSentinel(t, 2, 3, 2, time.Second)
	recs := loadAll(t)
	run := 0
	for _, wait := range []string{"0", "1"} {
		for _, f := range cutPoints() {
			for _, second := range []bool{false, true} {
				if !full() && second == (wait == "0") {
					continue // the short run: without the wait on the same stream, with it on a second acpnormd
				}
				run++
				name := fmt.Sprintf("wait%s/cut%.2f/same", wait, f)
				if second {
					name = strings.TrimSuffix(name, "same") + "second"
				}
				t.Run(name, func(t *testing.T) {
					args := []string{"--store", d.URL + fmt.Sprintf("&prefix=run%d:", run), "--store-wait-replicas", wait}
					a := startReplica(t, "A", args...)
					b := a
					if second {
						b = startReplica(t, "B", args...)
					}
					sr := playFirstParts(t, a, recs, f)
					master := d.Master(nil, fleetWait)
					if wait == "0" {
						master = d.Settle(2, fleetWait)
					}
					start := time.Now()
					master.Stop()
					var to *replica
					var promoted *testredis.Server
					if second {
						to = b
						promoted = d.Master(master, fleetWait)
						t.Logf("master %s killed; %s promoted after %v", master.Addr, promoted.Addr, time.Since(start).Round(time.Millisecond))
					}
					// On the same streams the client goes on at once: what
					// it sends before the promotion is UNAVAILABLE, and sent
					// again.
					n := sr.playRest(t, to)
					if !second {
						promoted = d.Master(master, fleetWait)
						t.Logf("master %s killed; %s promoted after %v", master.Addr, promoted.Addr, time.Since(start).Round(time.Millisecond))
					}
					t.Logf("%d frames answered UNAVAILABLE while acpnormd's client followed the failover", n)
					sr.check(t)
					master.Start() // back as a replica of the new master
					d.Settle(2, fleetWait)
				})
			}
		}
	}
}

// What --store-wait-replicas is for. Both replicas are paused (SIGSTOP)
// and cut off from the master (CLIENT KILL TYPE replica), so that nothing
// the master takes from then on reaches them; each recording's next
// frame that makes a revision is sent; the master is killed, the replicas
// resumed, and the Sentinels promote one of them, which never got those
// frames.
//
//   - Without the wait, acpnormd answered those frames, and the promoted
//     master lost them: the client's revisions repeat (the lost revision
//     is made again from other text) or its finals differ from the golden.
//   - With --store-wait-replicas 1, the master had no replica online, so
//     it applied none of them and each was refused (UNAVAILABLE). Sent
//     again after the promotion (skipping applied sequences), each is
//     applied, not ALREADY_EXISTS: acpnormd kept no copy of what the store
//     lost. Every final then equals its golden.
//   - With the wait and no failover, the replicas are paused but not cut
//     off, just after they acknowledged: the master still counts them for
//     10 s, so the first refused frames were applied on the master, only
//     not acknowledged. Sent again to the same acpnormd (the replicas
//     resumed, the master alive), such a frame is answered with the
//     revisions it made when it was applied, not ALREADY_EXISTS, and every
//     final equals its golden.
func TestSentinelWaitRefusesWhatAFailoverLoses(t *testing.T) {
	d := testredis.StartSentinel(t, 2, 3, 2, time.Second)
	recs := loadAll(t)
	for run, tc := range []struct {
		name     string
		wait     string
		failover bool
	}{{"without-wait", "0", true}, {"with-wait", "1", true}, {"with-wait-no-failover", "1", false}} {
		t.Run(tc.name, func(t *testing.T) {
			a := startReplica(t, "A", "--store", d.URL+fmt.Sprintf("&prefix=cut%d:", run), "--store-wait-replicas", tc.wait)
			sr := playFirstParts(t, a, recs, 0.5)
			master := d.Settle(2, fleetWait)
			replicas := d.Replicas(master)
			require.Len(t, replicas, 2)
			mc := redis.NewClient(&redis.Options{Addr: master.Addr})
			if !tc.failover {
				require.Eventually(t, func() bool {
					info, err := mc.Info(t.Context(), "replication").Result()
					return err == nil && strings.Count(info, "state=online") == 2 && strings.Count(info, "lag=0") == 2
				}, fleetWait, 20*time.Millisecond, "both replicas acknowledge")
			}
			for _, r := range replicas {
				r.Pause()
			}
			if tc.failover {
				require.NoError(t, mc.ClientKillByFilter(t.Context(), "TYPE", "replica").Err())
			}
			mc.Close()
			// Each recording's next frame that makes a revision, alone.
			next := make([]int, len(recs))
			for i, rec := range recs {
				next[i] = -1
				for j := sr.cuts[i]; j < len(rec.lines); j++ {
					if len(framesAnswering(rec.ref, rec.lines[j].Number)) > 0 {
						next[i] = j
						break
					}
				}
			}
			refused := 0
			for i, rec := range recs {
				if next[i] < 0 {
					continue
				}
				// Frames up to it make no revision, but still commit.
				for _, l := range rec.lines[sr.cuts[i] : next[i]+1] {
					sr.feeds[i].send(t, rec.name, l)
				}
				sr.feeds[i].barrier(t)
				got := sr.feeds[i].take()
				for _, x := range got {
					if fe := x.GetFrameError(); fe != nil {
						assert.Equal(t, "1", tc.wait, "%s: a frame error without the wait: %v", rec.name, fe)
						assert.EqualValues(t, codes.Unavailable, fe.GetCode(), "%s: %v", rec.name, fe)
						refused++
						continue
					}
					assert.Equal(t, "0", tc.wait, "%s: answered with the wait although no replica holds it: %v", rec.name, x)
					sr.got[i] = append(sr.got[i], x)
				}
				if tc.wait == "0" {
					sr.cuts[i] = next[i] + 1
				} // else the refused frames are sent again, from the cut

			}
			if tc.wait == "1" {
				assert.Positive(t, refused, "no frame was refused")
			}
			if tc.failover {
				master.Stop()
				for _, r := range replicas {
					r.Resume()
				}
				promoted := d.Master(master, fleetWait)
				t.Logf("master killed with %d frames its replicas never got; %s promoted", len(recs), promoted.Addr)
				defer func() { master.Start(); d.Settle(2, fleetWait) }()
			} else {
				for _, r := range replicas {
					r.Resume()
				}
				d.WaitReplicas(master, 2)
			}
			switch {
			case tc.wait == "0":
				// acpnormd's cache is newer than the promoted replica:
				// each session that lost answered frames is answered
				// DATA_LOSS, and the client rebuilds it from its first
				// frame. Every final then equals its golden, and no
				// revision went back.
				detected := sr.playRestRepairing(t)
				for i, rec := range recs {
					assert.NoError(t, sameAsSingleProcess(rec, sr.got[i]), "%s: repaired", rec.name)
				}
				assert.Positive(t, detected, "no recording lost an answered frame in the failover; then the wait would not be needed")
				t.Logf("%d of %d recordings lost answered frames in the failover: each was detected (DATA_LOSS) and rebuilt", detected, len(recs))
			case tc.failover:
				skipped := sr.playRestCountingSkips(t)
				assert.Zero(t, skipped, "a refused frame sent again after the failover was ALREADY_EXISTS: acpnormd's cache held what the store lost")
				sr.check(t)
			default:
				skipped := sr.playRestCountingSkips(t)
				assert.Zero(t, skipped, "a frame the master kept, sent again to the acpnormd that applied it, was ALREADY_EXISTS instead of answered")
				sr.check(t)
			}
		})
	}
}

// playRestRepairing is playRest on the run's streams for a client that
// repairs what the store lost: a request answered DATA_LOSS (15) makes it
// send the session's frames again from the first, and go on. What was
// answered DATA_LOSS or ALREADY_EXISTS (frames whose answers the store no
// longer keeps, which the client has) is dropped from what it got. It
// returns how many sessions were found lost.
func (run *storeRun) playRestRepairing(t *testing.T) int {
	t.Helper()
	detected := 0
	for i, rec := range run.recs {
		fd := run.feeds[i]
		keep := func(got []*pb.NormalizeResponse) bool {
			lost := false
			for _, x := range got {
				switch fe := x.GetFrameError(); {
				case fe.GetCode() == int32(codes.DataLoss):
					lost = true
					t.Logf("%s: %s", rec.name, fe.GetMessage())
				case fe.GetCode() == int32(codes.AlreadyExists):
				default:
					run.got[i] = append(run.got[i], x)
				}
			}
			return lost
		}
		last := rec.lines[len(rec.lines)-1].Number
		for j := run.cuts[i]; j < len(rec.lines); j++ {
			l := rec.lines[j]
			got, _ := untilApplied(t, fd, uint64(l.Number), func() { fd.send(t, rec.name, l) })
			if keep(got) {
				detected++
				for _, again := range rec.lines[:j+1] {
					got, _ := untilApplied(t, fd, uint64(again.Number), func() { fd.send(t, rec.name, again) })
					require.False(t, keep(got), "%s: DATA_LOSS again while rebuilding", rec.name)
				}
			}
		}
		got, _ := untilApplied(t, fd, uint64(last+1), func() { fd.closeSession(t, rec.name, uint64(last+1)) })
		require.False(t, keep(got))
	}
	for _, fd := range run.feeds {
		assert.Empty(t, fd.finish(t), "responses after the last barrier")
	}
	return detected
}

// playRestCountingSkips is playRest on the run's streams, where a frame
// answered ALREADY_EXISTS (applied before) is dropped from what the client
// got and counted.
func (run *storeRun) playRestCountingSkips(t *testing.T) int {
	t.Helper()
	run.playRest(t, nil)
	n := 0
	for i := range run.got {
		var kept []*pb.NormalizeResponse
		for _, x := range run.got[i] {
			if fe := x.GetFrameError(); fe.GetCode() == int32(codes.AlreadyExists) {
				t.Logf("%s: %s", run.recs[i].name, fe.GetMessage())
				n++
				continue
			}
			kept = append(kept, x)
		}
		run.got[i] = kept
	}
	return n
}

// sameAsSingleProcess is checkAgainstSingleProcess as an error: the
// client's fold refuses no revision and every final is the golden.
func sameAsSingleProcess(rec recorded, got []*pb.NormalizeResponse) error {
	var f fold.Folder
	count := map[fold.Key]int{}
	for _, x := range got {
		if fe := x.GetFrameError(); fe != nil {
			return fmt.Errorf("frame error %v", fe)
		}
		if e := x.GetShellExec(); e != nil {
			if err := f.Apply(e); err != nil {
				return fmt.Errorf("the client's fold refused a revision: %w", err)
			}
			count[fold.KeyOf(e)]++
		}
	}
	var final []*replay.Call
	for _, k := range f.Calls() {
		final = append(final, &replay.Call{Last: f.State(k), Revisions: count[k]})
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "golden", rec.name+".golden"))
	if err != nil {
		return err
	}
	if g := renderCalls(rec.name, final, nil); string(g) != string(golden) {
		return errors.New("the final differs from the golden: " + firstDiff(string(golden), string(g)))
	}
	return nil
}

// A Redis Cluster of three masters with a replica each, created by
// redis-cli --cluster create, behind two acpnormd processes that commit
// with --store-wait-replicas 1 (the WAIT goes to the master of the
// session's slot). Every recording, frame by frame in turn to the two,
// gives what one process gives, and the sessions spread over the masters.
// Then one master is failed over (CLUSTER FAILOVER on its replica)
// mid-session, with the same checks. Then each session's slot moves to
// another master (resharding) while its rest is played to a second
// acpnormd, which loads it from the store, with the same checks.
func TestClusterStore(t *testing.T) {
	c := testredis.StartCluster(t, 3, 1, 2*time.Second)
	args := []string{"--store", c.URL + "&prefix=parity:", "--store-wait-replicas", "1"}
	t.Run("parity", func(t *testing.T) {
		alternate(t, []*replica{startReplica(t, "A", args...), startReplica(t, "B", args...)})
		// The sessions' keys (each master also holds a key of the
		// readiness check, parity:readiness:{N}).
		keys := c.KeysMatching("parity:{*")
		for addr, n := range keys {
			assert.Positive(t, n, "master %s holds no session: %v", addr, keys)
		}
		t.Logf("session keys per master: %v", keys)
	})
	recs := loadAll(t)
	for i, f := range cutPoints() {
		t.Run(fmt.Sprintf("failover/cut%.2f", f), func(t *testing.T) {
			args := []string{"--store", c.URL + fmt.Sprintf("&prefix=failover%d:", i), "--store-wait-replicas", "1"}
			a, b := startReplica(t, "A", args...), startReplica(t, "B", args...)
			sr := playFirstParts(t, a, recs, f)
			// The master holding the most keys.
			var busiest *testredis.Server
			most := int64(-1)
			for _, m := range c.Masters() {
				if n := c.Keys()[m.Addr]; n > most {
					busiest, most = m, n
				}
			}
			promoted := c.Failover(busiest)
			t.Logf("master %s (%d keys) failed over to %s", busiest.Addr, most, promoted.Addr)
			n := sr.playRest(t, b)
			t.Logf("%d frames answered UNAVAILABLE", n)
			sr.check(t)
		})
	}
	t.Run("reshard", func(t *testing.T) {
		// A frame that meets its session split waits out the store's
		// retries (about a second) before it is answered UNAVAILABLE: the
		// short run moves the sessions of an eighth of the recordings.
		some := recs
		if !full() {
			some = nil
			for i, rec := range recs {
				if i%8 == 0 {
					some = append(some, rec)
				}
			}
		}
		args := []string{"--store", c.URL + "&prefix=reshard:", "--store-wait-replicas", "1"}
		a, b := startReplica(t, "A", args...), startReplica(t, "B", args...)
		sr := playFirstParts(t, a, some, 0.5)
		n, moved := sr.playRestResharding(t, b, c, "reshard:")
		t.Logf("%d keys moved one by one, %d frames answered UNAVAILABLE", moved, n)
		sr.check(t)
	})
}

// A Redis with an append-only file synced on every write (appendonly
// yes, appendfsync always) killed (SIGKILL) and restarted mid-session
// keeps every session: each goes on where it was, on the same stream.
func TestAOFRedisRestartKeepsSessions(t *testing.T) {
	rs := testredis.StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
	recs := loadAll(t)
	for i, f := range cutPoints() {
		t.Run(fmt.Sprintf("cut%.2f", f), func(t *testing.T) {
			a := startReplica(t, "A", "--store", rs.URL+fmt.Sprintf("?prefix=aof%d:", i))
			sr := playFirstParts(t, a, recs, f)
			rs.Restart()
			n := sr.playRest(t, nil)
			t.Logf("%d frames answered UNAVAILABLE across the restart", n)
			sr.check(t)
		})
	}
}
