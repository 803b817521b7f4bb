package test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// otlpReceiver is an OTLP/HTTP endpoint on loopback that keeps the bodies
// it is sent, by path.
type otlpReceiver struct {
	mu     sync.Mutex
	bodies map[string][][]byte
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies[req.URL.Path] = append(r.bodies[req.URL.Path], b)
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (r *otlpReceiver) got(path string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Join(r.bodies[path], nil)
}

// clearOTel unsets every OTEL_ variable of this process for the test (the
// daemon inherits the environment).
func clearOTel(t *testing.T) {
	for _, name := range []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
		"OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER",
	} {
		t.Setenv(name, "")
	}
}

// stopDaemon ends d with SIGTERM, as an orchestrator does, and waits.
func stopDaemon(t *testing.T, d *daemon) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("acpnormd did not stop within 20s of SIGTERM")
	}
}

// With an OTLP endpoint in the environment, the real binary exports a
// span per stream (with the stream's counts) and per unary call, and the
// RPC metrics, under the service name the environment gives.
func TestOpenTelemetryExportsWhenAsked(t *testing.T) {
	clearOTel(t)
	rcv := &otlpReceiver{bodies: map[string][][]byte{}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "acpnorm-e2e")

	d := startDaemon(t, buildDaemon(t))
	conn, ctx := dial(t, d)
	c := pb.NewNormalizerServiceClient(conn)
	resps := play(t, c, recordings(t)[0])
	require.NotEmpty(t, resps)
	_, err := c.ListDialects(ctx, &pb.ListDialectsRequest{})
	require.NoError(t, err)
	stopDaemon(t, d) // flushes the batches

	traces := rcv.got("/v1/traces")
	require.NotEmpty(t, traces, "no traces exported")
	for _, want := range []string{"acpnorm-e2e", "acpnorm.v1.NormalizerService/Normalize", "acpnorm.v1.NormalizerService/ListDialects",
		"acpnorm.stream.frames", "acpnorm.stream.revisions", "acpnorm.stream.frame_errors", "acpnorm.stream.store_round_trips"} {
		assert.Contains(t, string(traces), want)
	}
	assert.NotContains(t, string(traces), "grpc.health.v1", "the probe's health checks are spans too, but the test made none")
	assert.Contains(t, string(rcv.got("/v1/metrics")), "rpc.server.", "no RPC metrics exported")
}

// Without an endpoint nothing is exported: not even to the OTLP default
// ports on this machine, although other OTEL_ variables are set.
func TestOpenTelemetryOffByDefault(t *testing.T) {
	clearOTel(t)
	t.Setenv("OTEL_SERVICE_NAME", "acpnorm-e2e")
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	var mu sync.Mutex
	var contacted []string
	for _, addr := range []string{"127.0.0.1:4317", "127.0.0.1:4318", "[::1]:4317", "[::1]:4318"} {
		lis, err := net.Listen("tcp", addr)
		if err != nil && strings.HasPrefix(addr, "[::1]") {
			continue // no IPv6 loopback here: localhost is 127.0.0.1
		}
		if err != nil {
			t.Skipf("the OTLP default port %s is in use here (%v); cannot watch it", addr, err)
		}
		t.Cleanup(func() { lis.Close() })
		go func() {
			for {
				c, err := lis.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				contacted = append(contacted, addr)
				mu.Unlock()
				c.Close()
			}
		}()
	}
	d := startDaemon(t, buildDaemon(t))
	conn, _ := dial(t, d)
	require.NotEmpty(t, play(t, pb.NewNormalizerServiceClient(conn), recordings(t)[0]))
	stopDaemon(t, d)
	var logs []string
	for line := range d.logs {
		logs = append(logs, line)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, contacted, "acpnormd connected to an OTLP port without being asked")
	assert.NotContains(t, strings.Join(logs, "\n"), "OpenTelemetry on")
}
