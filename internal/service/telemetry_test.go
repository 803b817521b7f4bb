package service

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/telemetry"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// tracedHarness serves cfg with the OpenTelemetry stats handler recording
// to an in-memory span exporter and a manual metric reader.
func tracedHarness(t *testing.T, cfg Config) (*harness, *tracetest.InMemoryExporter, *sdkmetric.ManualReader) {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	svc, err := New(cfg, nil, nil)
	require.NoError(t, err)
	opts := DefaultServerOptions()
	opts.StatsHandler = telemetry.ServerHandler(telemetry.Providers{Traces: tp, Metrics: mp})
	srv := NewServer(svc, opts, nil)
	conn := serveBufconn(t, srv)
	t.Cleanup(srv.GRPC.Stop)
	return &harness{t: t, svc: svc, srv: srv, client: pb.NewNormalizerServiceClient(conn), conn: conn}, spans, reader
}

// playAndClose sends the frames on one stream, closes it and reads every
// reply until the end.
func playAndClose(t *testing.T, h *harness, sid string, frames []string) (revisions, frameErrors int) {
	t.Helper()
	s, err := h.client.Normalize(context.Background())
	require.NoError(t, err)
	for i, f := range frames {
		require.NoError(t, s.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
			SessionId: sid, Sequence: uint64(i + 1), Message: []byte(f)}}}))
	}
	require.NoError(t, s.CloseSend())
	for {
		r, err := s.Recv()
		if err == io.EOF {
			return revisions, frameErrors
		}
		require.NoError(t, err)
		if r.GetShellExec() != nil {
			revisions++
		} else if r.GetFrameError() != nil {
			frameErrors++
		}
	}
}

var tracedFrames = []string{
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"ls","status":"in_progress"}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
	`not json`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"exit_code":0}}}}`,
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// One span per stream and per unary call, none per frame; the stream's
// span carries what the stream did.
func TestTelemetrySpanPerStreamAndCall(t *testing.T) {
	h, spans, reader := tracedHarness(t, DefaultConfig())
	revisions, frameErrors := playAndClose(t, h, "traced", tracedFrames)
	require.Positive(t, revisions)
	require.Equal(t, 1, frameErrors, "the line that is not JSON")
	_, err := h.client.GetClientCapabilities(context.Background(), &pb.GetClientCapabilitiesRequest{Dialect: "generic"})
	require.NoError(t, err)

	// The server ends a span after the client has its answer (the stats
	// handler's End comes after the trailer is written): wait for both.
	require.Eventually(t, func() bool { return len(spans.GetSpans()) >= 2 }, 5*time.Second, 5*time.Millisecond)
	got := spans.GetSpans()
	names := make([]string, 0, len(got))
	for _, s := range got {
		names = append(names, s.Name)
	}
	require.ElementsMatch(t, []string{
		"acpnorm.v1.NormalizerService/Normalize",
		"acpnorm.v1.NormalizerService/GetClientCapabilities",
	}, names, "one span per stream and per unary call, and no other")
	for _, s := range got {
		if !strings.HasSuffix(s.Name, "/Normalize") {
			continue
		}
		a := attrs(s)
		assert.Equal(t, int64(len(tracedFrames)), a["acpnorm.stream.frames"].AsInt64())
		assert.Equal(t, int64(len(tracedFrames)), a["acpnorm.stream.requests_applied"].AsInt64())
		assert.Equal(t, int64(revisions), a["acpnorm.stream.revisions"].AsInt64())
		assert.Equal(t, int64(1), a["acpnorm.stream.frame_errors"].AsInt64())
		assert.Equal(t, int64(0), a["acpnorm.stream.store_round_trips"].AsInt64(), "no store")
	}

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	var metrics []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			metrics = append(metrics, m.Name)
		}
	}
	assert.Condition(t, func() bool {
		for _, m := range metrics {
			if strings.HasPrefix(m, "rpc.server.") {
				return true
			}
		}
		return false
	}, "no rpc.server metric among %v", metrics)
}

// With a store, the stream's span counts its round trips to it.
func TestTelemetryCountsStoreRoundTrips(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Store = store.NewMemory()
	h, spans, _ := tracedHarness(t, cfg)
	playAndClose(t, h, "stored", tracedFrames)
	require.Eventually(t, func() bool { return len(spans.GetSpans()) >= 1 }, 5*time.Second, 5*time.Millisecond)
	got := spans.GetSpans()
	require.Len(t, got, 1)
	assert.Positive(t, attrs(got[0])["acpnorm.stream.store_round_trips"].AsInt64())
}

// confirmer is a memory store that confirms commits, as Redis waiting
// for replicas does.
type confirmer struct {
	store.Store
	confirms bool
	asked    []string
}

func (c *confirmer) Confirm(_ context.Context, session string) error {
	c.asked = append(c.asked, session)
	return nil
}

func (c *confirmer) Confirms() bool { return c.confirms }

// The store counting round trips stays a store.Confirmer when it wraps
// one (normalize confirms through it a request answered as applied
// before), and counts each Confirm as a round trip; a store that is no
// Confirmer does not become one.
func TestCountTripsKeepsConfirmer(t *testing.T) {
	_, ok := countTrips(store.NewMemory()).(store.Confirmer)
	assert.False(t, ok, "a memory store is no Confirmer")
	for _, confirms := range []bool{false, true} {
		inner := &confirmer{Store: store.NewMemory(), confirms: confirms}
		c, ok := countTrips(inner).(store.Confirmer)
		require.True(t, ok, "the wrapped Confirmer is one")
		assert.Equal(t, confirms, c.Confirms())
		st := &streamStats{}
		require.NoError(t, c.Confirm(context.WithValue(t.Context(), streamStatsKey{}, st), "s"))
		assert.Equal(t, []string{"s"}, inner.asked)
		assert.Equal(t, int64(1), st.storeRoundTrips.Load())
	}
}

// It stays a store.PartLoader too (normalize loads a session without the
// answers it keeps, and reads one alone), counting those round trips, and
// both when the store is both; a store that is none does not become one.
func TestCountTripsKeepsPartLoader(t *testing.T) {
	mem := store.NewMemory()
	_, ok := countTrips(&confirmer{Store: mem}).(store.PartLoader)
	assert.False(t, ok, "a Confirmer that is no PartLoader")
	both := struct {
		*confirmer
		store.PartLoader
	}{&confirmer{Store: mem, confirms: true}, mem.(store.PartLoader)}
	for _, st := range []store.Store{mem, both} {
		w := countTrips(st)
		_, confirms := st.(store.Confirmer)
		_, ok := w.(store.Confirmer)
		assert.Equal(t, confirms, ok, "a Confirmer as the store is")
		p, ok := w.(store.PartLoader)
		require.True(t, ok, "the wrapped PartLoader is one")
		stats := &streamStats{}
		ctx := context.WithValue(t.Context(), streamStatsKey{}, stats)
		_, err := p.LoadWithout(ctx, "s", "a:")
		require.NoError(t, err)
		_, err = p.LoadRecord(ctx, "s", "a:1")
		require.NoError(t, err)
		assert.Equal(t, int64(2), stats.storeRoundTrips.Load())
	}
}
