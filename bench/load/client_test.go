package load

import (
	"context"
	"fmt"
	"math"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/internal/service"
)

// TestRatePaces: a paced stream sends no frame before its turn, so in a
// run of d it sends at most rate×d frames (and one more, whose turn came
// after its last look at the clock), however fast the machine is; the
// same stream unpaced sends more. Each paced frame that got an answer
// has its latency. A rate out of bounds is refused by name.
func TestRatePaces(t *testing.T) {
	all, err := Scenarios("../../test/testdata/recordings")
	require.NoError(t, err)
	chosen, err := Select(all, "gemini")
	require.NoError(t, err)
	addr := serveInProcess(t)

	const d = 300 * time.Millisecond
	run := func(rate float64) *Result {
		r, err := Run(context.Background(), Options{
			Addr: addr, Streams: 1, Duration: d, Scenario: chosen[0], RunID: fmt.Sprintf("%s-%v", t.Name(), rate), Rate: rate,
		})
		require.NoError(t, err)
		require.False(t, r.Failed(), "errors: %v", r.Errors)
		return r
	}
	const rate = 100
	limit := int64(rate*d.Seconds()) + 1
	paced := run(rate)
	require.Equal(t, float64(rate), paced.Rate)
	require.Positive(t, paced.Frames)
	require.LessOrEqual(t, paced.Frames, limit, "a stream paced at %v frames/s for %v", rate, d)
	require.Positive(t, paced.Latencies)
	unpaced := run(0)
	require.Greater(t, unpaced.Frames, limit, "the bound says nothing if an unpaced stream keeps under it too")

	for _, bad := range []float64{-1, math.NaN(), math.Inf(1), 1e-9, 2e9} {
		_, err := Run(context.Background(), Options{Addr: addr, Streams: 1, Duration: d, Scenario: chosen[0], Rate: bad})
		require.ErrorContains(t, err, "rate", "rate %v", bad)
	}
}

// serveInProcess serves acpnorm's service on a loopback port for the
// test's life and returns its address.
func serveInProcess(t *testing.T) string {
	t.Helper()
	svc, err := service.New(service.DefaultConfig(), nil, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	go svc.Run(ctx)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.GRPC.Stop()
		<-done
		cancel()
	})
	return lis.Addr().String()
}
