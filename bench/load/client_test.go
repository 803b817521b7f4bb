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
	require.Positive(t, paced.P99SmallMs)
	require.Zero(t, paced.P99BigMs, "Gemini's recordings have no frame of BigFrame bytes")
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

// TestPercentile: the p-th percentile is the sample p of the way through
// the sorted samples, in milliseconds, and 0 without samples.
func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var d []time.Duration
		for _, n := range ns {
			d = append(d, time.Duration(n)*time.Millisecond)
		}
		return d
	}
	for _, c := range []struct {
		lat  []time.Duration
		p    float64
		want float64
	}{
		{nil, 0.99, 0},
		{ms(7), 0.5, 7},
		{ms(5, 1, 3), 0.5, 3},
		{ms(5, 1, 3), 0.99, 3},
		{ms(5, 1, 3), 1, 5},
		{ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.5, 5},
	} {
		require.Equal(t, c.want, percentile(c.lat, c.p), "%v at %v", c.lat, c.p)
	}
}
