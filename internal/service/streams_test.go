package service

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// waitFor polls cond until it holds, failing after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after 20s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The process serves at most --max-streams streams, over all connections;
// one more is refused with RESOURCE_EXHAUSTED and counted.
func TestMaxStreams(t *testing.T) {
	opts := DefaultServerOptions()
	opts.MaxStreams = 2
	addr, svc := serveTCP(t, opts)
	ctx := callCtx(t)
	first := pb.NewNormalizerServiceClient(connect(t, addr, insecure.NewCredentials()))
	for i := range 2 {
		st, err := first.Normalize(ctx)
		require.NoError(t, err)
		require.NoError(t, st.Send(frameReq("s", uint64(i+1), openCall("c"+string(rune('a'+i)), "true"))))
		if _, err := st.Recv(); err != nil { // the stream is being served
			t.Fatal(err)
		}
	}
	// A second connection: the per-connection limit is not what stops it.
	second := pb.NewNormalizerServiceClient(connect(t, addr, insecure.NewCredentials()))
	st, err := second.Normalize(ctx)
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "--max-streams") {
		t.Fatalf("third stream: %v, want RESOURCE_EXHAUSTED naming --max-streams", err)
	}
	if n := counted(svc.sessions.m, "max_streams"); n != 1 {
		t.Fatalf("%v max_streams refusals counted, want 1", n)
	}
	// Unary calls are not streams: they still go through.
	if _, err := second.ListDialects(ctx, &pb.ListDialectsRequest{}); err != nil {
		t.Fatal(err)
	}
}

// A client that stops reading is cut off after the send timeout, with a
// status that says so, instead of holding the server's memory.
func TestStalledClientIsEnded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SendQueue = 1
	cfg.SendTimeout = 300 * time.Millisecond
	svc, err := New(cfg, nil, nil)
	require.NoError(t, err)
	h := newHarnessWith(t, svc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := h.client.Normalize(ctx)
	require.NoError(t, err)
	go func() {
		big := strings.Repeat("x", 32<<10)
		if st.Send(frameReq("s", 1, openCall("c1", "yes"))) != nil {
			return
		}
		for i := uint64(2); i < 20000; i++ {
			if st.Send(frameReq("s", i, delta("c1", big))) != nil {
				return
			}
		}
	}()
	// Never read until the server gave up on this client.
	waitFor(t, "the stalled stream to be ended", func() bool { return counted(svc.sessions.m, "send_stalled") == 1 })
	for {
		if _, err = st.Recv(); err != nil {
			break
		}
	}
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "send timeout") {
		t.Fatalf("stalled stream ended with %v, want RESOURCE_EXHAUSTED naming the send timeout", err)
	}
}
