package service

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

// servedLogging serves a Service of the default configuration over
// bufconn, logging through the handler newHandler makes over the returned
// buffer.
func servedLogging(t *testing.T, newHandler func(io.Writer) slog.Handler) (*Server, *grpc.ClientConn, *testlog.Buffer) {
	t.Helper()
	svc, err := New(DefaultConfig(), nil, nil)
	require.NoError(t, err)
	logBuf := new(testlog.Buffer)
	srv := NewServer(svc, DefaultServerOptions(), slog.New(newHandler(logBuf)))
	return srv, serveBufconn(t, srv), logBuf
}

// logOfCalls serves with a logger at level, makes one health check, one
// reflection listing and one ListDialects call, stops the server (which
// waits for every handler and so for every log line) and returns the log.
func logOfCalls(t *testing.T, level slog.Level) string {
	t.Helper()
	srv, conn, logBuf := servedLogging(t, func(w io.Writer) slog.Handler {
		return slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	})
	ctx := context.Background()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	rs, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	require.NoError(t, err)
	if err := rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Recv(); err != nil {
		t.Fatal(err)
	}
	require.NoError(t, rs.CloseSend())
	if _, err := pb.NewNormalizerServiceClient(conn).ListDialects(ctx, &pb.ListDialectsRequest{}); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	srv.GRPC.GracefulStop()
	return logBuf.String()
}

func TestHousekeepingCallsLogOnlyAtDebug(t *testing.T) {
	info := logOfCalls(t, slog.LevelInfo)
	if !strings.Contains(info, "ListDialects") {
		t.Errorf("an ordinary call is not logged at info:\n%s", info)
	}
	for _, noisy := range []string{"grpc.health", "grpc.reflection"} {
		if strings.Contains(info, noisy) {
			t.Errorf("%s logged at info:\n%s", noisy, info)
		}
	}
	debug := logOfCalls(t, slog.LevelDebug)
	for _, noisy := range []string{"grpc.health", "grpc.reflection"} {
		if !strings.Contains(debug, noisy) {
			t.Errorf("%s not logged at debug:\n%s", noisy, debug)
		}
	}
}

// A client watching health (grpc-go's health Watch, which a load balancer
// or a sidecar may hold open for the server's life) hears NOT_SERVING and
// then the end of its stream when the server shuts down, so that a graceful
// shutdown does not wait for it until the deadline and cut everything.
func TestShutdownEndsHealthWatches(t *testing.T) {
	srv, conn, logBuf := servedLogging(t, func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) })
	watch, err := healthpb.NewHealthClient(conn).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first health status: %v, %v", r, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	if strings.Contains(logBuf.String(), "shutdown deadline passed") {
		t.Fatalf("shutdown waited for the health watch until its deadline:\n%s", logBuf.String())
	}
	var statuses []healthpb.HealthCheckResponse_ServingStatus
	for {
		r, err := watch.Recv()
		if err != nil {
			if status.Code(err) != codes.Unavailable {
				t.Errorf("the watch ended with %v, want UNAVAILABLE", err)
			}
			break
		}
		statuses = append(statuses, r.GetStatus())
	}
	if len(statuses) == 0 || statuses[len(statuses)-1] != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("statuses after shutdown: %v, want NOT_SERVING last", statuses)
	}
}

// A Normalize stream is logged as the logging middleware logs a call: a
// start line and a finish line with its code, its error when it failed,
// and its duration, at info.
func TestStreamsLogStartAndFinish(t *testing.T) {
	srv, conn, logBuf := servedLogging(t, func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, nil) })
	client := pb.NewNormalizerServiceClient(conn)

	ended, err := client.Normalize(context.Background())
	require.NoError(t, err)
	require.NoError(t, ended.CloseSend())
	_, err = ended.Recv()
	require.ErrorIs(t, err, io.EOF)

	ctx, cancel := context.WithCancel(context.Background())
	cancelled, err := client.Normalize(ctx)
	require.NoError(t, err)
	require.NoError(t, cancelled.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Message: []byte("not json")}}}))
	_, err = cancelled.Recv() // the frame's error: the stream is open on the server
	require.NoError(t, err)
	cancel()
	// The server ends the stream when it hears the cancel, before the
	// connection closes.
	require.Eventually(t, func() bool { return strings.Count(logBuf.String(), `"finished call"`) == 2 }, 10*time.Second, 5*time.Millisecond)
	conn.Close()
	srv.GRPC.GracefulStop()

	var starts, finishes []map[string]any
	for line := range strings.Lines(logBuf.String()) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if rec["grpc.method"] != "Normalize" {
			continue
		}
		for _, k := range []string{"protocol", "grpc.component", "grpc.service", "grpc.method_type", "peer.address", "grpc.start_time"} {
			assert.NotEmpty(t, rec[k], "%s in %s", k, line)
		}
		assert.Equal(t, "INFO", rec["level"], line)
		assert.Equal(t, "bidi_stream", rec["grpc.method_type"], line)
		switch rec["msg"] {
		case "started call":
			starts = append(starts, rec)
		case "finished call":
			assert.Contains(t, rec, "grpc.time_ms", line)
			finishes = append(finishes, rec)
		}
	}
	require.Len(t, starts, 2, logBuf.String())
	require.Len(t, finishes, 2, logBuf.String())
	ends := map[any]any{} // each finish line's code and error
	for _, f := range finishes {
		ends[f["grpc.code"]] = f["grpc.error"]
	}
	assert.Contains(t, ends, "OK")
	assert.Nil(t, ends["OK"], "an ended stream logs no error")
	assert.Contains(t, ends, "Canceled")
	assert.NotEmpty(t, ends["Canceled"], "a cancelled stream logs its error")
}
