package service

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
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
	go flood(st, nil)
	// Never read until the server gave up on this client.
	waitFor(t, "the stalled stream to be ended", func() bool { return counted(svc.sessions.m, "send_stalled") == 1 })
	// Each request made one revision: the trailer counts no request whose
	// answer did not reach the client, which sends it again.
	var received uint64
	for {
		r, err2 := st.Recv()
		if err = err2; err != nil {
			break
		}
		received = max(received, r.GetShellExec().GetSequence())
	}
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "send timeout") {
		t.Fatalf("stalled stream ended with %v, want RESOURCE_EXHAUSTED naming the send timeout", err)
	}
	applied, perr := strconv.ParseUint(st.Trailer().Get(TrailerRequestsApplied)[0], 10, 64)
	require.NoError(t, perr)
	assert.LessOrEqual(t, applied, received, "requests counted as applied, against the last one answered")
}

// Health Watch streams, which need no credentials, have a cap of their
// own (an eighth of --max-streams, at least one) and do not take the
// slots of Normalize streams: watchers alone cannot refuse the callers.
func TestHealthWatchesHaveTheirOwnCap(t *testing.T) {
	opts := DefaultServerOptions()
	opts.MaxStreams = 8
	addr, svc := serveTCP(t, opts)
	ctx := callCtx(t)
	conn := connect(t, addr, insecure.NewCredentials())
	watch := func() error {
		w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv()
		}
		return err
	}
	require.NoError(t, watch(), "the first watcher")
	err := watch()
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.Contains(t, err.Error(), "health Watch streams")
	// Another connection: HTTP/2's per-connection limit is not what is
	// tested here.
	client := pb.NewNormalizerServiceClient(connect(t, addr, insecure.NewCredentials()))
	for i := range 8 {
		st, err := client.Normalize(ctx)
		require.NoError(t, err)
		require.NoError(t, st.Send(frameReq("s", uint64(i+1), openCall(fmt.Sprintf("c%d", i), "true"))))
		_, err = st.Recv()
		require.NoError(t, err, "Normalize stream %d beside a watcher", i)
	}
	require.Equal(t, 1.0, counted(svc.sessions.m, "max_health_watches"))
}

// Metadata is bounded (--max-header-bytes): a call with more is refused,
// naming the limit, and the connection's other streams go on.
func TestMetadataIsBounded(t *testing.T) {
	opts := DefaultServerOptions()
	opts.MaxHeaderBytes = 16 << 10
	addr, _ := serveTCP(t, opts)
	conn := connect(t, addr, insecure.NewCredentials())
	client := pb.NewNormalizerServiceClient(conn)
	ctx := callCtx(t)
	ok, err := client.Normalize(ctx)
	require.NoError(t, err)
	require.NoError(t, ok.Send(frameReq("s", 1, openCall("c1", "true"))))
	_, err = ok.Recv()
	require.NoError(t, err)

	big := metadata.AppendToOutgoingContext(ctx, "x-pad", strings.Repeat("x", 64<<10))
	st, err := client.Normalize(big)
	if err == nil {
		_, err = st.Recv()
	}
	require.Error(t, err)
	require.Contains(t, err.Error(), "header list size")

	require.NoError(t, ok.Send(frameReq("s", 2, openCall("c2", "true"))))
	_, err = ok.Recv()
	require.NoError(t, err, "the other stream goes on")
}

// A stream whose client stopped reading does not hold its session while
// it waits: its answers wait outside the session's lock, so another
// stream of the same session (a client that reconnected) is answered at
// once, not when the stalled one is cut (SendTimeout, a minute here).
func TestStalledStreamHoldsNoSession(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SendQueue = 1
	cfg.SendTimeout = time.Minute
	svc, err := New(cfg, nil, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := NewServer(svc, DefaultServerOptions(), nil)
	go srv.Serve(lis)
	t.Cleanup(srv.GRPC.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	stalled, err := pb.NewNormalizerServiceClient(connect(t, lis.Addr().String(), insecure.NewCredentials())).Normalize(ctx)
	require.NoError(t, err)
	var sent atomic.Int64
	go flood(stalled, &sent)
	// It reads nothing: wait until its sends stop going through.
	for last := int64(-1); ; {
		time.Sleep(300 * time.Millisecond)
		n := sent.Load()
		if n == last {
			break
		}
		last = n
	}
	other, err := pb.NewNormalizerServiceClient(connect(t, lis.Addr().String(), insecure.NewCredentials())).Normalize(callCtx(t))
	require.NoError(t, err)
	require.NoError(t, other.Send(frameReq("s", 1<<20, openCall("c2", "true"))))
	r, err := other.Recv()
	require.NoError(t, err, "the other stream of the session is answered before the stalled one is cut")
	require.Equal(t, "c2", r.GetShellExec().GetToolCallId())
}

// flood opens call c1 of session "s" on st and sends it 32 KiB deltas
// until a send fails (20,000 at most), counting them in sent when set.
func flood(st pb.NormalizerService_NormalizeClient, sent *atomic.Int64) {
	big := strings.Repeat("x", 32<<10)
	if st.Send(frameReq("s", 1, openCall("c1", "yes"))) != nil {
		return
	}
	for i := uint64(2); i < 20000; i++ {
		if st.Send(frameReq("s", i, delta("c1", big))) != nil {
			return
		}
		if sent != nil {
			sent.Add(1)
		}
	}
}
