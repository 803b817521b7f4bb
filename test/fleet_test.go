package test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The helpers of the multi-replica tests (failover_test.go): a fleet of
// real acpnormd processes on loopback, and a client stream that can tell
// when the server has answered everything sent so far.

// fleetWait bounds every wait of these tests: generous, because the
// machine may be loaded; a healthy run never comes near it.
const fleetWait = 2 * time.Minute

// replica is one acpnormd process of a fleet.
type replica struct {
	name   string
	d      *daemon
	c      pb.NormalizerServiceClient
	killed bool
}

// startReplica starts acpnormd with args (e.g. --store URL) on a loopback
// port. An ended call is kept for ten minutes (--grace) so that a slow run
// under CPU load never turns a late frame into a refused one: what a frame
// does depends on the frames, not on the clock.
func startReplica(t *testing.T, name string, args ...string) *replica {
	t.Helper()
	d := startDaemon(t, buildDaemon(t), append([]string{"--grace", "10m"}, args...)...)
	conn, err := grpc.NewClient(d.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &replica{name: name, d: d, c: pb.NewNormalizerServiceClient(conn)}
}

// kill ends the replica with SIGKILL (no drain, no goodbye) and waits until
// the process is gone.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	if r.killed {
		return
	}
	r.killed = true
	if err := r.d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL %s: %v", r.name, err)
	}
	select {
	case <-r.d.exited:
	case <-time.After(fleetWait):
		t.Fatalf("%s still running %v after SIGKILL", r.name, fleetWait)
	}
}

// sentinelSession is the session of the barrier frames. It never holds a
// call: its frames are not JSON, and each gets a FrameError.
const sentinelSession = "fleet-test-barrier"

// feed is a client's Normalize stream to one replica. It collects every
// response; barrier tells when the server has answered every frame sent
// before it.
type feed struct {
	name   string
	stream pb.NormalizerService_NormalizeClient
	cancel context.CancelFunc

	mu       sync.Mutex
	got      []*pb.NormalizeResponse // answers to the test's frames, in order
	barriers map[uint64]bool         // barrier sequences answered
	arrived  chan struct{}           // a response arrived (capacity 1)
	done     chan struct{}           // Recv returned an error (err says which)
	err      error
	next     uint64
}

func openFeed(t *testing.T, r *replica) *feed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*fleetWait)
	t.Cleanup(cancel)
	stream, err := r.c.Normalize(ctx)
	if err != nil {
		cancel()
		t.Fatalf("opening a stream to %s: %v", r.name, err)
	}
	f := &feed{name: r.name, stream: stream, cancel: cancel, barriers: map[uint64]bool{},
		arrived: make(chan struct{}, 1), done: make(chan struct{}), next: 1 << 40}
	go func() {
		defer close(f.done)
		for {
			resp, err := stream.Recv()
			f.mu.Lock()
			if err != nil {
				f.err = err
				f.mu.Unlock()
				return
			}
			if fe := resp.GetFrameError(); fe != nil && fe.GetSessionId() == sentinelSession {
				f.barriers[fe.GetSequence()] = true
			} else {
				f.got = append(f.got, resp)
			}
			f.mu.Unlock()
			select {
			case f.arrived <- struct{}{}:
			default:
			}
		}
	}()
	return f
}

// send sends one recorded line of session sid.
func (f *feed) send(t *testing.T, sid string, l replay.Line) {
	t.Helper()
	err := f.stream.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
		SessionId: sid, Dialect: "auto", Sequence: uint64(l.Number), Direction: l.Dir, Message: l.Msg,
	}}})
	if err != nil {
		t.Fatalf("sending line %d to %s: %v", l.Number, f.name, err)
	}
}

// options sends StreamOptions on the stream.
func (f *feed) options(t *testing.T, o *pb.StreamOptions) {
	t.Helper()
	if err := f.stream.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: o}}); err != nil {
		t.Fatalf("sending options to %s: %v", f.name, err)
	}
}

// closeSession sends the SessionClosed that ends session sid.
func (f *feed) closeSession(t *testing.T, sid string, seq uint64) {
	t.Helper()
	err := f.stream.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid, Sequence: seq}}})
	if err != nil {
		t.Fatalf("closing %s on %s: %v", sid, f.name, err)
	}
}

// barrier returns once the server has answered every frame sent on this
// stream before it. A stream answers its requests in the order they were
// sent, so the FrameError of a frame sent last (one that is not JSON, of
// a session of its own) comes after every answer to the frames before it.
func (f *feed) barrier(t *testing.T) {
	t.Helper()
	f.next++
	seq := f.next
	err := f.stream.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
		SessionId: sentinelSession, Sequence: seq, Message: []byte("barrier: not JSON"),
	}}})
	if err != nil {
		t.Fatalf("sending a barrier to %s: %v", f.name, err)
	}
	deadline := time.After(fleetWait)
	for {
		f.mu.Lock()
		ok, err := f.barriers[seq], f.err
		f.mu.Unlock()
		if ok {
			return
		}
		if err != nil {
			t.Fatalf("%s ended the stream before answering a barrier: %v", f.name, err)
		}
		select {
		case <-f.arrived:
		case <-f.done:
		case <-deadline:
			t.Fatalf("%s did not answer a barrier within %v", f.name, fleetWait)
		}
	}
}

// take returns the responses collected so far and forgets them.
func (f *feed) take() []*pb.NormalizeResponse {
	f.mu.Lock()
	defer f.mu.Unlock()
	got := f.got
	f.got = nil
	return got
}

// finish closes the client's side and waits until the server ends the
// stream; it fails the test unless the stream ended normally.
func (f *feed) finish(t *testing.T) []*pb.NormalizeResponse {
	t.Helper()
	if err := f.stream.CloseSend(); err != nil {
		t.Fatalf("closing the stream to %s: %v", f.name, err)
	}
	select {
	case <-f.done:
	case <-time.After(fleetWait):
		t.Fatalf("%s did not end the stream within %v", f.name, fleetWait)
	}
	if !errors.Is(f.err, io.EOF) {
		t.Fatalf("the stream to %s ended with %v", f.name, f.err)
	}
	return f.take()
}

// revisionLog is what a client saw of each call, in the order it saw it:
// the revision numbers and which replica sent each.
type revisionLog struct {
	order []string
	revs  map[string][]uint32
	from  map[string][]string
}

func (l *revisionLog) add(replica string, resps []*pb.NormalizeResponse) {
	if l.revs == nil {
		l.revs, l.from = map[string][]uint32{}, map[string][]string{}
	}
	for _, r := range resps {
		x := r.GetShellExec()
		if x == nil {
			continue
		}
		id := x.GetToolCallId()
		if _, seen := l.revs[id]; !seen {
			l.order = append(l.order, id)
		}
		l.revs[id] = append(l.revs[id], x.GetRevision())
		l.from[id] = append(l.from[id], replica)
	}
}

// referencePlay plays the whole recording through one in-process service
// (no store) under session id sid: what a single process answers.
func referencePlay(t *testing.T, sid string, lines []replay.Line) []*pb.NormalizeResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fleetWait)
	defer cancel()
	resps, err := replay.Play(ctx, inProcess(t), lines, replay.Options{SessionID: sid, Dialect: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	return resps
}

// openAt returns the calls that a single process has opened but not ended
// once it has applied the lines numbered up to and including line, given
// its responses to the whole recording.
func openAt(resps []*pb.NormalizeResponse, line int) []string {
	first, end := map[string]uint64{}, map[string]uint64{}
	var order []string
	for _, r := range resps {
		x := r.GetShellExec()
		if x == nil {
			continue
		}
		id := x.GetToolCallId()
		if _, ok := first[id]; !ok {
			first[id] = x.GetSequence()
			order = append(order, id)
		}
		if x.GetState() == pb.ShellState_SHELL_STATE_ENDED {
			if _, ok := end[id]; !ok {
				end[id] = x.GetSequence()
			}
		}
	}
	var open []string
	for _, id := range order {
		e, ended := end[id]
		if first[id] <= uint64(line) && (!ended || e > uint64(line)) {
			open = append(open, id)
		}
	}
	return open
}

// cutNearHalf picks where replica A stops: the first line at or after the
// middle of the recording at which a single process holds a call still
// running (so that a call is open across the kill), else the middle.
func cutNearHalf(lines []replay.Line, ref []*pb.NormalizeResponse) int {
	for i := len(lines) / 2; i < len(lines)-1; i++ {
		if len(openAt(ref, lines[i].Number)) > 0 {
			return i + 1
		}
	}
	return len(lines) / 2
}

func describeRevs(revs []uint32, from []string) string {
	s := ""
	for i, r := range revs {
		s += fmt.Sprintf(" %d@%s", r, from[i])
	}
	return s
}
