package service

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// A stream whose client stops reading stops reading requests once its
// send queue is full; what the client sends after that waits in gRPC's
// buffers, as much as the stream's flow-control window lets through.
// StreamWindowBytes sets that window: the client gets the window's bytes
// through and no more. (Left to gRPC, the window starts at 64 KiB and
// grows with the measured bandwidth-delay product, up to 16 MiB a
// stream: grpc.InitialWindowSize turns that off.)
func TestStalledStreamWindowBoundsRequestBytes(t *testing.T) {
	const size = 32 << 10
	cfg := DefaultConfig()
	cfg.SendQueue = 1
	svc, err := New(cfg, nil, nil)
	require.NoError(t, err)
	opts := DefaultServerOptions()
	opts.StreamWindowBytes = 1 << 20
	// The client's own window is fixed and small, so that what the
	// connection carries to a client that does not read is small too.
	conn, err := grpc.NewClient(serveWith(t, svc, opts), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := pb.NewNormalizerServiceClient(conn).Normalize(ctx)
	require.NoError(t, err)

	// The client never reads; it sends until a send blocks.
	var sent atomic.Int64
	go func() {
		chunk := strings.Repeat("x", size-1) + "\n"
		if st.Send(frameReq("s", 1, openCall("c1", "cat big"))) != nil {
			return
		}
		for seq := uint64(2); ; seq++ {
			req := frameReq("s", seq, delta("c1", chunk))
			if st.Send(req) != nil {
				return
			}
			sent.Add(int64(len(req.GetFrame().GetMessage())))
		}
	}()
	last, still := int64(-1), 0
	for deadline := time.Now().Add(30 * time.Second); still < 5 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if n := sent.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	require.Equal(t, 5, still, "the client's sends never stopped: the stream kept reading")

	frame := int64(size + 256) // a frame's message and its envelope
	window := int64(opts.StreamWindowBytes)
	// What the stream itself took: the responses carried to the client
	// (its window, and the one that passed it), the send queue, the
	// answers waiting outside the session's lock, the frames read ahead
	// and the one in hand. Then what the window let through, and gRPC's
	// client-side write quota (64 KiB) with the message that passed it and
	// the next, on its way.
	took := 64<<10 + int64(1+2*cfg.SendQueue+aheadDepth(aheadWorkers(), cfg.SendQueue)+2)*frame
	t.Logf("the client sent %d KiB before its sends blocked (window %d KiB, bound %d KiB)", last>>10, window>>10, (took+window+64<<10+2*frame)>>10)
	assert.GreaterOrEqual(t, last, window, "the stream's window is not the one set")
	assert.LessOrEqual(t, last, took+window+64<<10+2*frame, "a stalled stream let more through than its window")
}
