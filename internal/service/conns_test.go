package service

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// A client past --max-connections is turned away at once (its
// connection is closed), and the connections already held keep working;
// when one of them goes, a new client gets in.
func TestMaxConnections(t *testing.T) {
	opts := DefaultServerOptions()
	opts.MaxConnections = 2
	addr, svc := serveTCP(t, opts)
	check := func(t *testing.T, c healthpb.HealthClient, d time.Duration) error {
		ctx, cancel := contextTimeout(d)
		defer cancel()
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	one := connect(t, addr, insecure.NewCredentials())
	two := connect(t, addr, insecure.NewCredentials())
	require.NoError(t, check(t, healthpb.NewHealthClient(one), 5*time.Second))
	require.NoError(t, check(t, healthpb.NewHealthClient(two), 5*time.Second))

	three := connect(t, addr, insecure.NewCredentials())
	require.Error(t, check(t, healthpb.NewHealthClient(three), time.Second), "a third connection over a cap of 2 was served")
	require.NoError(t, check(t, healthpb.NewHealthClient(one), 5*time.Second), "a held connection stopped working")
	// Counted as the server closes it, which a loaded machine may do after
	// the check above gave up.
	require.Eventually(t, func() bool { return counted(svc.sessions.m, "max_connections") >= 1 },
		10*time.Second, 50*time.Millisecond, "the refused connection was not counted")

	two.Close()
	require.Eventually(t, func() bool {
		return check(t, healthpb.NewHealthClient(three), time.Second) == nil
	}, 10*time.Second, 100*time.Millisecond, "a free slot was not given to a new connection")
}

// A connection with no stream for MaxConnectionIdle is closed by the
// server, so that idle connections cannot pile up.
func TestIdleConnectionClosed(t *testing.T) {
	opts := DefaultServerOptions()
	opts.MaxConnectionIdle = 300 * time.Millisecond
	addr, _ := serveTCP(t, opts)
	conn := connect(t, addr, insecure.NewCredentials())
	require.NoError(t, func() error {
		ctx, cancel := contextTimeout(5 * time.Second)
		defer cancel()
		_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}())
	require.Equal(t, connectivity.Ready, conn.GetState())
	ctx, cancel := contextTimeout(5 * time.Second)
	defer cancel()
	require.True(t, conn.WaitForStateChange(ctx, connectivity.Ready), "the idle connection was kept")
}

func contextTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
