package service

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// A client that sends frames producing big revisions and reads none holds
// at most what the send queue's byte cap allows, not --send-queue of the
// biggest revisions (twice over, with those waiting outside the session's
// lock).
func TestStalledStreamQueuesBoundedBytes(t *testing.T) {
	const size = 256 << 10
	cfg := DefaultConfig()
	cfg.TextLimit = size
	cfg.SendQueue = 256 // the count alone would let 64 MiB wait
	cfg.SendQueueBytes = 2 << 20
	svc, err := New(cfg, nil, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan struct{})
	f := &fakeStream{ctx: ctx, reqs: make(chan *pb.NormalizeRequest)}
	f.send = func(r *pb.NormalizeResponse) error {
		close(first) // the client reads the first response, then stops
		<-ctx.Done()
		return ctx.Err()
	}
	done := make(chan error, 1)
	go func() { done <- svc.Normalize(f) }()
	frame := func(msg string) bool {
		select {
		case f.reqs <- &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Message: []byte(msg)}}}:
			return true
		case <-time.After(300 * time.Millisecond):
			return false // the stream stopped reading
		}
	}
	before := heapAlloc()
	frame(openCall("c1", "cat big"))
	<-first
	big := strings.Repeat("x", size)
	n := 0
	for n < 1000 {
		// Each frame a new 256 KiB chunk: each revision carries it.
		if frame(delta("c1", big[:size-8]+strconv.Itoa(100000 + n)[:6]+"\n")) {
			n++
		} else if svc.sessions.m.queuedBytes.Load() >= int64(cfg.SendQueueBytes) {
			break // the stream stopped reading with its queue full
		}
	}
	grew := int64(heapAlloc()) - int64(before)
	held := svc.sessions.m.queuedBytes.Load()
	t.Logf("%d frames taken, heap grew %d KiB, %d KiB of responses held", n, grew>>10, held>>10)
	// The queue and the answers waiting outside the lock: two byte caps
	// (each may pass one response more), and the response in Send.
	if limit := int64(2*cfg.SendQueueBytes + 3*(size+4096)); held > limit || held < int64(cfg.SendQueueBytes) {
		t.Errorf("the stalled stream holds %d KiB of responses, want %d KiB to %d KiB", held>>10, cfg.SendQueueBytes>>10, limit>>10)
	}
	// What the heap holds besides: the frames read ahead (each a frame
	// and its decoded text).
	if limit := held + int64((2*aheadDepth(aheadWorkers(), cfg.SendQueue)+8)*size); grew > limit {
		t.Errorf("the stalled stream holds %d KiB, want under %d KiB", grew>>10, limit>>10)
	}
	cancel()
	<-done
	require.Zero(t, svc.sessions.m.queuedBytes.Load(), "bytes still counted after the stream ended")
}

// The codec marshals a response the stream sized when it queued it with
// that size, to the same bytes as one never sized.
func TestCodecMarshalsSizedResponse(t *testing.T) {
	out := strings.Repeat("y", 100<<10) // past the buffer pooling threshold
	build := func() *pb.NormalizeResponse {
		return shellExecResponse(&normalize.ShellExec{SessionID: "s", ToolCallID: "c1", Revision: 3, Command: "cat big", Output: &normalize.Text{Text: out}})
	}
	want, err := proto.Marshal(build())
	require.NoError(t, err)
	c := newTolerantCodec()
	for _, sized := range []bool{false, true} {
		r := build()
		if sized {
			require.Equal(t, int64(len(want)), toSend(r).n)
		}
		b, err := c.Marshal(r)
		require.NoError(t, err)
		require.Equal(t, want, b.Materialize(), "sized %v", sized)
		b.Free()
	}
}
