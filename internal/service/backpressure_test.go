package service

import (
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// fakeStream is a Normalize stream driven by the test: Recv hands out the
// requests the test queues, and Send calls the test's hook.
type fakeStream struct {
	grpc.ServerStream
	ctx  context.Context
	reqs chan *pb.NormalizeRequest
	send func(*pb.NormalizeResponse) error
}

func (f *fakeStream) Context() context.Context { return f.ctx }

func (f *fakeStream) Recv() (*pb.NormalizeRequest, error) {
	select {
	case r, ok := <-f.reqs:
		if !ok {
			return nil, io.EOF
		}
		return r, nil
	case <-f.ctx.Done():
		return nil, f.ctx.Err()
	}
}

func (f *fakeStream) RecvMsg(m any) error { return recvInto(m, f.Recv) }

// recvInto is RecvMsg, as the stream's reader calls it, for a test's
// stream whose Recv hands out requests.
func recvInto(m any, recv func() (*pb.NormalizeRequest, error)) error {
	r, err := recv()
	if err == nil {
		m.(*received).NormalizeRequest = r
	}
	return err
}

func (f *fakeStream) Send(r *pb.NormalizeResponse) error { return f.send(r) }

func (f *fakeStream) SendMsg(m any) error { return sendFrom(m, f.Send) }

// sendFrom is SendMsg, as the stream's send loop calls it (with a sized
// response), for a test's stream whose Send takes responses.
func sendFrom(m any, send func(*pb.NormalizeResponse) error) error {
	if s, ok := m.(*sized); ok {
		m = s.NormalizeResponse
	}
	return send(m.(*pb.NormalizeResponse))
}

func (f *fakeStream) SetTrailer(metadata.MD) {}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A TurnEnded that ends many calls with large outputs must not build all
// their final revisions before the send queue applies: with a client that
// does not read, the server holds what the queue holds, not every revision.
func TestTurnEndedQueuesRevisionsOneAtATime(t *testing.T) {
	const calls, size = 64, 256 << 10
	cfg := DefaultConfig()
	cfg.SendQueue = 1
	cfg.TextLimit = size
	svc, err := New(cfg, nil, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan struct{}, 1)
	stalled := make(chan uint64, 1)
	f := &fakeStream{ctx: ctx, reqs: make(chan *pb.NormalizeRequest)}
	f.send = func(r *pb.NormalizeResponse) error {
		if r.GetShellExec().GetState() != pb.ShellState_SHELL_STATE_ENDED {
			got <- struct{}{}
			return nil
		}
		// The first final revision: the client stops reading here.
		stalled <- heapAlloc()
		<-ctx.Done()
		return ctx.Err()
	}
	done := make(chan error, 1)
	go func() { done <- svc.Normalize(f) }()
	frame := func(msg string) {
		f.reqs <- &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Message: []byte(msg)}}}
	}
	out := strings.Repeat("x", size)
	for i := range calls {
		id := "c" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		frame(openCall(id, "cat big"))
		<-got
		frame(delta(id, out))
		<-got
	}
	before := heapAlloc()
	f.reqs <- &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{SessionId: "s"}}}
	after := <-stalled
	grew := int64(after) - int64(before)
	// Every final revision carries its whole 256 KiB output: building them
	// all would hold calls*size (16 MiB) at once. One at a time holds a
	// few.
	if limit := int64(8 * size); grew > limit {
		t.Errorf("the stalled TurnEnded holds %d KiB of responses, want under %d KiB (one at a time)", grew>>10, limit>>10)
	}
	cancel()
	<-done
}

// When the stream goes away in the middle of a TurnEnded, the turn still
// ends every call, nothing more is built or sent, and handle says why.
func TestHandleStopsSendingAfterEmitFails(t *testing.T) {
	d := newDirect(t, DefaultConfig())
	for _, id := range []string{"c1", "c2", "c3"} {
		d.exec("s", openCall(id, "sleep 9"))
	}
	gone := errors.New("stream gone")
	var calls int
	err := d.ss.handle(context.Background(), &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{SessionId: "s"}}}, func(*pb.NormalizeResponse) error {
		calls++
		return gone
	})
	if !errors.Is(err, gone) || calls != 1 {
		t.Fatalf("handle returned %v after %d emits, want the emit error after 1", err, calls)
	}
	// The turn ended all three: a later frame about one joins an ended call.
	if x := d.exec("s", delta("c3", "late")); x.GetState() != pb.ShellState_SHELL_STATE_ENDED {
		t.Fatalf("c3 after the turn ended: %v", x)
	}
}

// A request that waits for another request of its session to finish gives
// up when its stream's context ends.
func TestWaitForBusySessionGivesUp(t *testing.T) {
	d := newDirect(t, DefaultConfig())
	d.exec("s", openCall("c1", "sleep 9"))
	inEmit := make(chan struct{})
	release := make(chan struct{})
	go d.ss.handle(context.Background(), &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Message: []byte(delta("c1", "x"))}}}, func(*pb.NormalizeResponse) error {
		close(inEmit)
		<-release // a client that does not read
		return nil
	})
	<-inEmit
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		waited <- d.ss.handle(ctx, &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Message: []byte(delta("c1", "y"))}}}, func(*pb.NormalizeResponse) error { return nil })
	}()
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting request returned %v, want context.Canceled", err)
	}
	// The sweeper does not wait for the busy session either: it skips it.
	d.advance(time.Hour)
	if n := d.ss.n.Stats().Sessions; n != 1 {
		t.Fatalf("the sweeper released the busy session (%d held)", n)
	}
	close(release)
}
