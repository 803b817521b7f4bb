package service

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store/redisstore"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// healthOf asks conn's health service about service.
func healthOf(t *testing.T, conn *grpc.ClientConn, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	require.NoError(t, err, "service %q", service)
	return r.GetStatus()
}

// redisServer starts a real redis-server (with args, more redis-server
// options) and a running Service and Server whose store it is.
func redisServer(t *testing.T, args ...string) (*testredis.Server, *Service, *Server) {
	t.Helper()
	srv := testredis.StartServer(t, args...)
	st, err := redisstore.Open(srv.URL)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	cfg := DefaultConfig()
	cfg.Store = st
	svc, err := New(cfg, nil, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go svc.Run(ctx)
	return srv, svc, NewServer(svc, DefaultServerOptions(), nil)
}

// Readiness follows the store: the server and its Normalizer service say
// NOT_SERVING while the store fails (at once after a frame the store
// failed, and within a few seconds with no frame at all) and SERVING once
// it answers again, also when no frame comes to show it (a pod out of its
// Service's endpoints gets none). The liveness service stays SERVING, so
// that a Redis outage restarts no pod. A real redis-server is stopped and
// started again.
func TestHealthFollowsTheStore(t *testing.T) {
	srv, svc, server := redisServer(t)
	conn := serveBufconn(t, server)

	const whole, normalizer = "", "acpnorm.v1.NormalizerService"
	require.Equal(t, normalizer, pb.NormalizerService_ServiceDesc.ServiceName)
	ready := func() []healthpb.HealthCheckResponse_ServingStatus {
		return []healthpb.HealthCheckResponse_ServingStatus{healthOf(t, conn, whole), healthOf(t, conn, normalizer)}
	}
	serving := []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_SERVING}
	notServing := []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_NOT_SERVING}
	waitFor := func(want []healthpb.HealthCheckResponse_ServingStatus, why string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for got := ready(); !assert.ObjectsAreEqual(want, got); got = ready() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: readiness %v after 10s, want %v", why, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	live := func() {
		t.Helper()
		assert.Equal(t, healthpb.HealthCheckResponse_SERVING, healthOf(t, conn, LivenessService), "liveness")
	}
	feed := func(session string) []*normalize.FrameError { return feedOpen(t, svc.sessions.n, session) }

	require.Empty(t, feed("a"))
	assert.Equal(t, serving, ready())
	live()

	// A frame the store fails.
	srv.Stop()
	errs := feed("b")
	require.NotEmpty(t, errs)
	require.Equal(t, normalize.Unavailable, errs[0].Code)
	waitFor(notServing, "a frame the store failed")
	live()

	// Back, with no frame to show it.
	srv.Start()
	waitFor(serving, "the store answers again, no frame")
	live()

	// Down, with no frame to show it.
	srv.Stop()
	waitFor(notServing, "the store stopped, no frame")
	live()

	srv.Start()
	waitFor(serving, "the store answers again")
	require.Empty(t, feed("c"))
	assert.Equal(t, serving, ready())
}

// Readiness says whether the store takes a write, not only whether it
// answers: a Redis that is full (maxmemory with noeviction) answers PING
// but refuses every commit ("OOM command not allowed"), so every frame
// would get UNAVAILABLE; readiness is NOT_SERVING while it is full, with
// no frame needed to show it, and SERVING again once it takes writes.
func TestHealthFollowsAFullStore(t *testing.T) {
	srv, svc, server := redisServer(t, "--maxmemory-policy", "noeviction")
	conn := serveBufconn(t, server)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rc.Close() })
	ready := func() healthpb.HealthCheckResponse_ServingStatus { return healthOf(t, conn, "") }
	waitFor := func(want healthpb.HealthCheckResponse_ServingStatus, why string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for got := ready(); got != want; got = ready() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: readiness %v after 10s, want %v", why, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	feed := func(session string) []*normalize.FrameError { return feedOpen(t, svc.sessions.n, session) }

	require.Empty(t, feed("a"))
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, ready())

	// Full: any used memory is above a maxmemory of one byte.
	require.NoError(t, rc.ConfigSet(t.Context(), "maxmemory", "1").Err())
	waitFor(healthpb.HealthCheckResponse_NOT_SERVING, "the store is full, no frame")
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, healthOf(t, conn, pb.NormalizerService_ServiceDesc.ServiceName))
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, healthOf(t, conn, LivenessService), "liveness")
	errs := feed("b")
	require.NotEmpty(t, errs, "a frame while the store is full")
	assert.Equal(t, normalize.Unavailable, errs[0].Code)
	assert.Contains(t, errs[0].Message, "OOM")
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, ready())

	require.NoError(t, rc.ConfigSet(t.Context(), "maxmemory", "0").Err())
	waitFor(healthpb.HealthCheckResponse_SERVING, "the store takes writes again, no frame")
	require.Empty(t, feed("b"))
}

// With --store-wait-replicas, readiness counts the replicas as a commit
// does: a master whose replica is gone refuses every commit ("too few
// replicas"), and readiness is NOT_SERVING until the replica is back. A
// real master and replica; the replica is stopped and started again.
func TestHealthFollowsTheReplicas(t *testing.T) {
	master := testredis.StartServer(t)
	replica := testredis.StartServer(t, "--replicaof", "127.0.0.1 "+master.Addr[strings.LastIndexByte(master.Addr, ':')+1:])
	st, err := redisstore.Open(master.URL, redisstore.WithWaitReplicas(1, time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	cfg := DefaultConfig()
	cfg.Store = st
	svc, err := New(cfg, nil, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go svc.Run(ctx)
	conn := serveBufconn(t, NewServer(svc, DefaultServerOptions(), nil))
	waitFor := func(want healthpb.HealthCheckResponse_ServingStatus, why string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for got := healthOf(t, conn, ""); got != want; got = healthOf(t, conn, "") {
			if time.Now().After(deadline) {
				t.Fatalf("%s: readiness %v after 30s, want %v", why, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	require.Eventually(t, func() bool { return len(feedOpen(t, svc.sessions.n, "a")) == 0 }, 30*time.Second, 50*time.Millisecond, "a commit once the replica is in sync")
	waitFor(healthpb.HealthCheckResponse_SERVING, "the replica is in sync")

	replica.Stop()
	waitFor(healthpb.HealthCheckResponse_NOT_SERVING, "the replica is gone")
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, healthOf(t, conn, LivenessService), "liveness")
	errs := feedOpen(t, svc.sessions.n, "b")
	require.NotEmpty(t, errs)
	assert.Equal(t, normalize.Unavailable, errs[0].Code)

	replica.Start()
	waitFor(healthpb.HealthCheckResponse_SERVING, "the replica is back")
	require.Empty(t, feedOpen(t, svc.sessions.n, "b"))
}

// Shutdown turns readiness NOT_SERVING for good: a store that answers
// again after it does not turn it back. Liveness stays SERVING while the
// process answers.
func TestHealthAfterShutdownIgnoresTheStore(t *testing.T) {
	srv, _, server := redisServer(t)
	check := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		r, err := server.health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
		require.NoError(t, err)
		return r.GetStatus()
	}
	srv.Stop()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	server.Shutdown(sctx)
	srv.Start()
	// The store check runs every storeCheckEvery: wait past two.
	time.Sleep(2*storeCheckEvery + time.Second)
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, check(""))
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, check(pb.NormalizerService_ServiceDesc.ServiceName))
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, check(LivenessService))
}

// A failed operation has the store checked at once, not at the next
// periodic check; the check alone decides, so a failure of one operation
// while the store answers leaves readiness as it is.
func TestStoreHealthChecksAfterAFailure(t *testing.T) {
	checked := make(chan time.Time, 16)
	h := newStoreHealth(nil, slog.New(slog.DiscardHandler))
	h.check = func(context.Context) error { checked <- time.Now(); return nil }
	var ups []bool
	h.watch(func(up bool) { ups = append(ups, up) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	failed := time.Now()
	h.failed()
	select {
	case at := <-checked:
		assert.Less(t, at.Sub(failed), storeCheckEvery/2)
	case <-time.After(storeCheckEvery / 2):
		t.Fatal("no check within half the periodic interval of a failure")
	}
	cancel()
	<-done
	assert.Equal(t, []bool{true}, ups, "the store answered: readiness never turned")
}

// The first check runs as the service starts, not one interval later: a
// store that refuses commits from the start turns readiness at once.
func TestStoreHealthChecksAtStart(t *testing.T) {
	h := newStoreHealth(nil, slog.New(slog.DiscardHandler))
	h.check = func(context.Context) error { return assert.AnError }
	turned := make(chan bool, 4)
	h.watch(func(up bool) { turned <- up })
	require.True(t, <-turned, "SERVING until the first check")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	select {
	case up := <-turned:
		assert.False(t, up)
	case <-time.After(storeCheckEvery / 2):
		t.Fatal("no check within half the periodic interval of the start")
	}
}
