package test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/acpnorm/acpnorm/bench/load"
	"github.com/acpnorm/acpnorm/fold"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/stretchr/testify/assert"
)

// With the sessions in Redis, a replica that dies loses nothing: the
// client reconnects to another replica and goes on. For every recording:
// the first part (up to a point where a call is still running) goes to
// replica A on one stream; once A has answered it, A gets SIGKILL; the
// rest goes on a new stream to replica B, another running replica or A
// restarted on the same address. What the client got from A and
// B together is what one process sends, revision by revision: every
// call's revisions are 1, 2, 3 ... with no gap or repeat across the two
// replicas, its folded state after each equals one process's, and the
// final ShellExec of every call is the golden's. A client that lost A's
// last answers in flight is made whole by B's first revisions.
func TestFailoverKillsAReplicaMidSession(t *testing.T) {
	args := []string{"--store", testredis.Start(t)}
	crossed := 0
	failover(t, args, func(t *testing.T, rec recorded, cut int, fromA, fromB []*pb.NormalizeResponse) {
		last := rec.lines[cut-1].Number
		if err := equalPrefix(fromA, rec.ref, last); err != nil {
			t.Errorf("A, before the kill: %v", err)
		}
		checkAgainstSingleProcess(t, rec, append(append([]*pb.NormalizeResponse{}, fromA...), fromB...))
		// A client that never got A's last answers (they were on the wire
		// when A died) sees a gap, and B's first revision of each call on
		// the new stream carries every text whole: folding that gives the
		// golden too.
		lossy := foldAcross(append(dropLastExecs(fromA, 2), fromB...))
		golden, err := os.ReadFile(filepath.Join("testdata", "golden", rec.name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		if g, w := withoutRevisionCounts(renderCalls(rec.name, lossy, nil)), withoutRevisionCounts(golden); g != w {
			t.Errorf("a client that lost A's last two live revisions does not end with the golden:\n%s", firstDiff(w, g))
		}
		var log revisionLog
		log.add("A", fromA)
		log.add("B", fromB)
		for _, id := range openAt(rec.ref, last) {
			revs, from := log.revs[id], log.from[id]
			if len(from) == 0 || from[0] != "A" || from[len(from)-1] != "B" {
				t.Errorf("call %s was open at the kill but did not go on from A to B: revisions%s", id, describeRevs(revs, from))
				continue
			}
			crossed++
			t.Logf("call %s, open when A was killed after line %d: revisions%s", id, last, describeRevs(revs, from))
		}
	})
	// Every recording was cut while a call ran (cutNearHalf finds one).
	if n := len(recordings(t)); crossed < n {
		t.Errorf("only %d calls were open across a kill in %d recordings", crossed, n)
	}
}

// One session's frames go to three replicas in turn, frame by frame, each
// on its own stream (a client that round-robins, or reconnects all the
// time); each frame is sent once the one before was answered, as a
// client that moves a session to another replica does. The revisions and
// the folded state after each are exactly one process's, and the final
// ShellExec of every call is the golden's.
func TestAlternatingReplicasGiveOneProcessResult(t *testing.T) {
	args := []string{"--store", testredis.Start(t)}
	alternate(t, []*replica{startReplica(t, "A", args...), startReplica(t, "B", args...), startReplica(t, "C", args...)})
}

// alternate plays every recording frame by frame on the replicas in turn
// and checks the result against one process's.
func alternate(t *testing.T, fleet []*replica) {
	for _, file := range recordings(t) {
		rec := loadRecorded(t, file)
		t.Run(rec.name, func(t *testing.T) {
			feeds := make([]*feed, len(fleet))
			for i, r := range fleet {
				feeds[i] = openFeed(t, r)
			}
			var got []*pb.NormalizeResponse
			var log revisionLog
			for i, l := range rec.lines {
				f := feeds[i%len(feeds)]
				f.send(t, rec.name, l)
				f.barrier(t)
				resps := f.take()
				got = append(got, resps...)
				log.add(f.name, resps)
			}
			f := feeds[len(rec.lines)%len(feeds)]
			f.closeSession(t, rec.name, uint64(rec.lines[len(rec.lines)-1].Number+1))
			f.barrier(t)
			resps := f.take()
			got = append(got, resps...)
			log.add(f.name, resps)
			for _, f := range feeds {
				if extra := f.finish(t); len(extra) != 0 {
					t.Errorf("%s sent %d responses after its frames were answered", f.name, len(extra))
				}
			}
			checkAgainstSingleProcess(t, rec, got)
			// The calls moved between replicas.
			moved := 0
			for _, id := range log.order {
				if len(distinct(log.from[id])) > 1 {
					moved++
				}
			}
			if moved == 0 {
				t.Errorf("no call got revisions from more than one replica")
			}
		})
	}
}

func distinct(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// checkAgainstSingleProcess checks what a client got from several replicas
// against what one process answers to the same frames (ref) and against
// the golden: the same revisions of the same calls in the same order, and
// after each one the client's folded state of that call is the same as
// with one process (the texts may come as one REPLACE on a new stream
// where one process sent APPENDs, which folds to the same). The client's
// fold refuses any gap, repeat or restart of a call's numbering.
func checkAgainstSingleProcess(t *testing.T, rec recorded, got []*pb.NormalizeResponse) {
	t.Helper()
	calls := foldStrict(t, rec.name, got)
	var want, have fold.Folder
	n := 0
	for i, r := range rec.ref {
		if i >= len(got) {
			break
		}
		w, g := r.GetShellExec(), got[i].GetShellExec()
		if w == nil || g == nil || w.GetToolCallId() != g.GetToolCallId() || w.GetRevision() != g.GetRevision() {
			t.Errorf("response %d: got call %q revision %d, one process sends call %q revision %d (%v)", i+1,
				g.GetToolCallId(), g.GetRevision(), w.GetToolCallId(), w.GetRevision(), got[i].GetFrameError())
			return
		}
		_ = want.Apply(w)
		_ = have.Apply(g)
		if ws, hs := want.State(fold.KeyOf(w)), have.State(fold.KeyOf(g)); !proto.Equal(ws, hs) {
			t.Errorf("call %s after revision %d: the client holds\n%s\none process's client holds\n%s", w.GetToolCallId(), w.GetRevision(), prototext.Format(hs), prototext.Format(ws))
			return
		}
		n++
	}
	if len(got) != len(rec.ref) {
		t.Errorf("%d responses, one process sends %d", len(got), len(rec.ref))
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "golden", rec.name+".golden"))
	if err != nil {
		t.Fatal(err)
	}
	if g := renderCalls(rec.name, calls, nil); string(g) != string(golden) {
		t.Errorf("the folded result differs from testdata/golden/%s.golden:\n%s", rec.name, firstDiff(string(golden), string(g)))
	}
}

// foldStrict folds the revisions as a client does, with fold.Folder, which
// refuses a gap, a repeat or a restart in any call's numbering: each such
// refusal is reported. It returns the calls in the order they first
// appeared, as renderCalls wants them.
func foldStrict(t *testing.T, what string, resps []*pb.NormalizeResponse) []*replay.Call {
	t.Helper()
	var f fold.Folder
	count := map[fold.Key]int{}
	for _, r := range resps {
		if fe := r.GetFrameError(); fe != nil {
			t.Errorf("%s: frame error %v", what, fe)
			continue
		}
		x := r.GetShellExec()
		if x == nil {
			continue
		}
		if err := f.Apply(x); err != nil {
			t.Errorf("%s: the client's fold refused a revision: %v", what, err)
			continue
		}
		count[fold.KeyOf(x)]++
	}
	var calls []*replay.Call
	for _, k := range f.Calls() {
		calls = append(calls, &replay.Call{Last: f.State(k), Revisions: count[k]})
	}
	return calls
}

// The limit of a failover: acpnorm does not recognise a frame it has
// already applied. A client that resends frames A had answered (because
// it did not know they were applied) gets them applied a second time. So
// a client resends only what comes after the last frame answered on the
// old stream (answers come in the order the frames were sent, so a frame
// without an answer of its own was applied when a later one was
// answered). This test shows it: the last three answered frames sent again
// to B give revisions that one process never sends.
func TestFailoverResentFramesApplyTwice(t *testing.T) {
	args := []string{"--store", testredis.Start(t)}
	a, b := startReplica(t, "A", args...), startReplica(t, "B", args...)
	differ := 0
	for _, file := range recordings(t) {
		rec := loadRecorded(t, file)
		t.Run(rec.name, func(t *testing.T) {
			cut := cutNearHalf(rec.lines, rec.ref)
			fa := openFeed(t, a)
			for _, l := range rec.lines[:cut] {
				fa.send(t, rec.name, l)
			}
			fa.barrier(t)
			fromA := fa.take()
			fb := openFeed(t, b)
			for _, l := range rec.lines[cut-3:] {
				fb.send(t, rec.name, l)
			}
			fb.closeSession(t, rec.name, uint64(rec.lines[len(rec.lines)-1].Number+1))
			fromB := fb.finish(t)
			all := append(append([]*pb.NormalizeResponse{}, fromA...), fromB...)
			// Still numbered 1, 2, 3 with no gap: the duplicates are new
			// revisions, not repeats.
			calls := foldStrict(t, rec.name, all)
			golden, err := os.ReadFile(filepath.Join("testdata", "golden", rec.name+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			if got := renderCalls(rec.name, calls, nil); string(got) != string(golden) {
				differ++
				t.Logf("the three frames applied twice change the result: %s", firstDiff(string(golden), string(got)))
			}
		})
	}
	if differ == 0 {
		t.Errorf("no recording changed when frames were applied twice; if acpnorm now recognises them, say so in docs/scaling.md")
	}
	t.Logf("%d of %d recordings end differently from the golden when three answered frames are sent again", differ, len(recordings(t)))
}

// With StreamOptions.skip_applied_sequences (the client numbers each
// session's frames increasingly, here by recording line), the frames sent
// again after the failover are recognised on B, whose cache never saw
// them: none is applied again, each is answered with what it made on A
// (kept in Redis with its commit), which the client already holds and
// drops, and the result is the golden for every recording.
func TestFailoverResentFramesSkippedWithSequences(t *testing.T) {
	args := []string{"--store", testredis.Start(t)}
	a, b := startReplica(t, "A", args...), startReplica(t, "B", args...)
	skip := &pb.StreamOptions{SkipAppliedSequences: true}
	for _, file := range recordings(t) {
		rec := loadRecorded(t, file)
		t.Run(rec.name, func(t *testing.T) {
			cut := cutNearHalf(rec.lines, rec.ref)
			fa := openFeed(t, a)
			fa.options(t, skip)
			for _, l := range rec.lines[:cut] {
				fa.send(t, rec.name, l)
			}
			fa.barrier(t)
			fromA := fa.take()
			fb := openFeed(t, b)
			fb.options(t, skip)
			for _, l := range rec.lines[cut-3:] {
				fb.send(t, rec.name, l)
			}
			fb.closeSession(t, rec.name, uint64(rec.lines[len(rec.lines)-1].Number+1))
			held := map[string]*pb.ShellExec{}
			for _, r := range fromA {
				if x := r.GetShellExec(); x != nil {
					held[fmt.Sprintf("%s#%d", x.GetToolCallId(), x.GetRevision())] = x
				}
			}
			var fromB []*pb.NormalizeResponse
			for _, r := range fb.finish(t) {
				if fe := r.GetFrameError(); fe != nil {
					t.Errorf("line %d sent again: %v", fe.GetSequence(), fe)
					continue
				}
				x := r.GetShellExec()
				if had := held[fmt.Sprintf("%s#%d", x.GetToolCallId(), x.GetRevision())]; had != nil {
					// Answered again: what A answered, which the client has.
					if !proto.Equal(had, x) {
						t.Errorf("line %d sent again is answered with %v; A answered %v", x.GetSequence(), x, had)
					}
					if x.GetSequence() < uint64(rec.lines[cut-3].Number) {
						t.Errorf("revision %v of a frame not sent again", x)
					}
					continue
				}
				fromB = append(fromB, r)
			}
			calls := foldStrict(t, rec.name, append(append([]*pb.NormalizeResponse{}, fromA...), fromB...))
			golden, err := os.ReadFile(filepath.Join("testdata", "golden", rec.name+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			if got := renderCalls(rec.name, calls, nil); string(got) != string(golden) {
				t.Errorf("with three answered frames sent again: %s", firstDiff(string(golden), string(got)))
			}
		})
	}
}

// The store is the truth, and what it loses is found out: a Redis that
// loses its data (one without persistence that restarts) loses the open
// sessions, even for the replica that still has them cached. Its next
// commit finds the session gone (a version conflict); its cache says what
// it handed on, so the frame is answered DATA_LOSS (15) naming the calls,
// instead of a call starting over at revision 1 as it used to. A client
// that sends the session again from its first frame ends with the golden,
// and no call's revisions go back.
func TestRedisLosingItsDataIsDetected(t *testing.T) {
	rs := testredis.StartServer(t)
	a := startReplica(t, "A", "--store", rs.URL)
	detected := 0
	for _, file := range recordings(t) {
		rec := loadRecorded(t, file)
		t.Run(rec.name, func(t *testing.T) {
			cut := cutNearHalf(rec.lines, rec.ref)
			fa := openFeed(t, a)
			fa.options(t, skipApplied)
			for _, l := range rec.lines[:cut] {
				fa.send(t, rec.name, l)
			}
			fa.barrier(t)
			before := fa.take()
			rs.Restart() // SIGKILL, and a new empty redis-server on the same port
			run := &storeRun{recs: []recorded{rec}, cuts: []int{cut}, feeds: []*feed{fa}, got: [][]*pb.NormalizeResponse{before}}
			n := run.playRestRepairing(t)
			if len(openAt(rec.ref, rec.lines[cut-1].Number)) > 0 {
				assert.Equal(t, 1, n, "the session lost with an open call is found out")
			}
			detected += n
			assert.NoError(t, sameAsSingleProcess(rec, run.got[0]), "rebuilt")
		})
	}
	assert.Positive(t, detected)
	t.Logf("%d sessions found lost when Redis lost its data, each rebuilt to its golden", detected)
}

// A frame the store cannot take is not applied and says so: with Redis
// gone, each frame that changes a session gets a FrameError UNAVAILABLE
// (14), and the stream stays open for the client to send it again later.
func TestStoreUnreachableFramesGetUnavailable(t *testing.T) {
	rs := testredis.StartServer(t)
	a := startReplica(t, "A", "--store", rs.URL)
	file := "testdata/recordings/codex-acp-0.16.0_shell-command_terminal-meta.ndjson"
	rec := loadRecorded(t, file)
	cut := cutNearHalf(rec.lines, rec.ref)
	f := openFeed(t, a)
	for _, l := range rec.lines[:cut] {
		f.send(t, rec.name, l)
	}
	f.barrier(t)
	if err := equalPrefix(f.take(), rec.ref, rec.lines[cut-1].Number); err != nil {
		t.Fatal(err)
	}
	rs.Stop()
	// The next frame that makes a revision, alone.
	var next int
	for i := cut; i < len(rec.lines); i++ {
		if len(framesAnswering(rec.ref, rec.lines[i].Number)) > 0 {
			next = i
			break
		}
	}
	if next == 0 {
		t.Fatal("no later line makes a revision")
	}
	f.send(t, rec.name, rec.lines[next])
	f.barrier(t)
	got := f.take()
	if len(got) != 1 || got[0].GetFrameError().GetCode() != 14 || got[0].GetFrameError().GetSequence() != uint64(rec.lines[next].Number) {
		t.Fatalf("line %d with Redis gone: got %v, want one FrameError UNAVAILABLE (14) for it", rec.lines[next].Number, got)
	}
	t.Logf("line %d with Redis gone: %s", rec.lines[next].Number, got[0].GetFrameError().GetMessage())
	_ = f.finish(t)
}

// framesAnswering returns the responses one process sends to line n.
func framesAnswering(ref []*pb.NormalizeResponse, n int) []*pb.NormalizeResponse {
	var out []*pb.NormalizeResponse
	for _, r := range ref {
		if r.GetShellExec().GetSequence() == uint64(n) {
			out = append(out, r)
		}
	}
	return out
}

// What goes to Redis is what each frame adds, not the text it holds. A
// Grok-like command sends its whole output again on every update (100
// cumulative snapshots, up to 150 KiB and, past the 256 KiB text limit,
// up to 1 MiB). Redis receives about what the output grew by, at most
// twice it (a stream stored past twice the limit is rewritten once to the
// held text), plus a small fixed cost per commit, far below the frames'
// bytes that resending the held text would come to. Counted in bytes, by
// Redis itself (INFO stats total_net_input_bytes), not timed.
func TestStoreTrafficIsWhatFramesAdd(t *testing.T) {
	rs := testredis.StartServer(t)
	a := startReplica(t, "A", "--store", rs.URL)
	for _, size := range []int{150 << 10, 1 << 20} {
		frames := load.Grok(load.GrokConfig{Snapshots: 100, FinalBytes: size})
		sent := 0
		f := openFeed(t, a)
		sid := fmt.Sprintf("grok-%d", size)
		before, err := load.RedisStat(rs.Addr, "total_net_input_bytes")
		if err != nil {
			t.Fatal(err)
		}
		for i, fr := range frames {
			f.send(t, sid, replay.Line{Number: i + 1, Dir: fr.Dir, Msg: fr.Msg})
			sent += len(fr.Msg)
		}
		f.closeSession(t, sid, uint64(len(frames)+1))
		f.barrier(t)
		resps := f.finish(t)
		after, err := load.RedisStat(rs.Addr, "total_net_input_bytes")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resps {
			if fe := r.GetFrameError(); fe != nil {
				t.Fatalf("%s: %v", sid, fe)
			}
		}
		got := after - before
		const perCommit = 2 << 10 // a commit's script call, keys and header, generously
		bound := int64(2*size + len(frames)*perCommit)
		t.Logf("%d frames, %d B sent; output %d B; Redis received %d B (%.2f× the output, %.3f× the frames)",
			len(frames), sent, size, got, float64(got)/float64(size), float64(got)/float64(sent))
		if got > bound {
			t.Errorf("Redis received %d B for an output of %d B in %d frames (%d B sent); want at most %d", got, size, len(frames), sent, bound)
		}
	}
}
