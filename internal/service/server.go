package service

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// ServerOptions are the transport settings of a gRPC server.
type ServerOptions struct {
	// MaxMessageBytes bounds one received message (an ACP frame can carry a
	// whole command output).
	MaxMessageBytes int
	// KeepaliveMinTime is the shortest client ping interval tolerated;
	// clients that ping more often are disconnected.
	KeepaliveMinTime time.Duration
	// KeepaliveTime and KeepaliveTimeout make the server ping idle
	// connections and drop dead ones.
	KeepaliveTime    time.Duration
	KeepaliveTimeout time.Duration
	// MaxConnectionIdle closes a connection that has had no stream for
	// this long (a GOAWAY; clients reconnect when they next call), so that
	// connections opened and left idle do not hold the server's file
	// descriptors; 0 keeps them.
	MaxConnectionIdle time.Duration
	// MaxConnections bounds the connections served at once; one more is
	// closed as soon as it is accepted, logged and counted
	// (stream_refusals_total{reason="max_connections"}). 0: no bound.
	MaxConnections int
	// MaxConnectionsPerAddress bounds the connections one client address
	// (its IPv4 address or IPv6 /64, whatever the port) holds at once, so
	// that one address cannot take every MaxConnections slot; one more
	// from it is closed as it is accepted, logged and counted
	// (stream_refusals_total{reason="max_connections_per_address"}).
	// 0: no bound but MaxConnections.
	MaxConnectionsPerAddress int
	// HandshakeTimeout bounds how long a new connection may take to finish
	// its TLS handshake and send HTTP/2's preface; one that has not is
	// closed (stream_refusals_total{reason="handshake_timeout"}), so that
	// connections which send nothing do not hold their slots. 0:
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// FirstStreamTimeout bounds how long a connection may go, once its
	// handshake is done, without opening a stream (a call of any kind,
	// even one refused); one that has not is closed
	// (stream_refusals_total{reason="first_stream_timeout"}), so that
	// connections which connect and do nothing more do not hold their
	// slots until MaxConnectionIdle. A connection that has had a stream is
	// left to MaxConnectionIdle. 0: no bound.
	FirstStreamTimeout time.Duration
	// MaxStreams bounds the streams served at once, per connection (HTTP/2
	// MaxConcurrentStreams) and for the whole process; a stream over the
	// process cap is refused with RESOURCE_EXHAUSTED. Health Watch
	// streams, which need no credentials, are counted apart: at most an
	// eighth of MaxStreams (at least one) of them.
	MaxStreams int
	// StreamWindowBytes, when set, is the HTTP/2 flow-control window of
	// each stream (and of each connection, at least 4 MiB): how many
	// request bytes a client may send ahead of what the stream has read.
	// A stream that stops reading (its send queue full: see the Config's
	// SendQueue and SendQueueBytes) holds at most this much in gRPC's
	// buffers. 0 (the default) leaves the window to gRPC, which sizes it
	// from the measured bandwidth-delay product, from 64 KiB up to 16 MiB
	// a stream. A message larger than the window still passes, a window at
	// a time.
	StreamWindowBytes int
	// MaxHeaderBytes bounds the metadata (HTTP/2 header list) of a call;
	// a call with more is refused, naming the size (0: gRPC's 16 MiB).
	MaxHeaderBytes int
	// TLS, when set, is the server's TLS configuration (see NewTLSConfig);
	// nil serves plaintext.
	TLS *tls.Config
	// Token, when set, is a bearer token a call may carry in its
	// "authorization: Bearer <token>" metadata: the identity
	// DefaultIdentity's. With Token or Tokens set, every call but health
	// checks must carry one of theirs.
	Token *Token
	// Tokens, when set, are named bearer tokens: each names the identity
	// of the calls that carry it (see the top of identity.go).
	Tokens *Tokens
	// ClientNames, when set with a TLS configuration that asks for
	// client certificates (and no tokens), maps certificate identities to
	// names; clients it does not map are refused.
	ClientNames *ClientNames
	// MaxStreamsPerIdentity bounds the streams one identity has open at
	// once (RESOURCE_EXHAUSTED past it); 0 sets no bound beyond
	// MaxStreams.
	MaxStreamsPerIdentity int
	// StatsHandler, when set, observes every RPC (OpenTelemetry's
	// otelgrpc handler: a span per unary call and per stream, and the RPC
	// metrics). A Normalize stream's span gets the stream's counts as
	// attributes when it ends (frames, revisions, frame errors, store
	// round trips).
	StatsHandler stats.Handler
}

// DefaultServerOptions returns the transport settings used by default.
func DefaultServerOptions() ServerOptions {
	conns := DefaultMaxConnections()
	return ServerOptions{
		MaxMessageBytes:          16 << 20,
		KeepaliveMinTime:         10 * time.Second,
		KeepaliveTime:            2 * time.Minute,
		KeepaliveTimeout:         20 * time.Second,
		MaxConnectionIdle:        5 * time.Minute,
		MaxConnections:           conns,
		MaxConnectionsPerAddress: PerAddressShare(conns),
		HandshakeTimeout:         DefaultHandshakeTimeout,
		FirstStreamTimeout:       DefaultFirstStreamTimeout,
		MaxStreams:               1024,
		MaxHeaderBytes:           64 << 10,
	}
}

// Server is a gRPC server carrying a Service, the standard health service
// and server reflection.
type Server struct {
	GRPC     *grpc.Server
	health   *healthService
	svc      *Service
	log      *slog.Logger
	maxConns int
	perAddr  int
	idle     *idleConns
	// userTimeout is the TCP_USER_TIMEOUT of each connection (see
	// tcpUserTimeout).
	userTimeout time.Duration
}

// NewServer assembles the gRPC server: logging, panic recovery, access
// control (each call's identity, see identity.go) and the stream caps as
// interceptors, TLS, keepalive
// enforcement and the message size limit.
func NewServer(svc *Service, opts ServerOptions, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	logger := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		level := slog.Level(lvl)
		if level <= slog.LevelInfo && isHousekeeping(ctx) {
			level = slog.LevelDebug
		}
		log.Log(ctx, level, msg, fields...)
	})
	recover := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		log.ErrorContext(ctx, "panic in handler", "panic", p)
		return status.Error(codes.Internal, "internal error; the panic was logged")
	})
	logEvents := logging.WithLogOnEvents(logging.StartCall, logging.FinishCall)
	a := newAccess(opts, svc.sessions.m)
	label := a.label
	svc.sessions.m.labelOf.Store(&label)
	// Access control comes first, so that a refused call is not logged
	// as a started and finished one: anyone who can reach the port could
	// fill the log with those. refused logs them in bursts instead, and
	// stream_refusals_total counts each.
	refused := &refusalLog{log: log, burst: burstLog{every: refusalLogEvery}}
	authenticate := func(ctx context.Context) (context.Context, error) {
		c, err := a.authenticate(ctx)
		if err != nil {
			refused.note(ctx, err)
		}
		return c, err
	}
	idle := newIdleConns(opts.FirstStreamTimeout, svc.sessions.m, log)
	unary := []grpc.UnaryServerInterceptor{idle.markUnary, auth.UnaryServerInterceptor(authenticate), logging.UnaryServerInterceptor(logger, logEvents), recovery.UnaryServerInterceptor(recover)}
	streams := []grpc.StreamServerInterceptor{idle.markStream, auth.StreamServerInterceptor(authenticate), logStreams(logger), recovery.StreamServerInterceptor(recover)}
	if opts.MaxStreams > 0 {
		streams = append(streams, capStreams(opts.MaxStreams, svc.sessions.m))
	}
	if opts.MaxStreamsPerIdentity > 0 {
		streams = append(streams, a.capStreams)
	}
	codec := newTolerantCodec()
	codec.claims = maxClaim(svc.cfg.MaxCallsPerSession)
	gopts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(opts.MaxMessageBytes),
		grpc.ConnectionTimeout(handshakeTimeout(opts.HandshakeTimeout)),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: opts.KeepaliveMinTime, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: opts.KeepaliveTime, Timeout: opts.KeepaliveTimeout, MaxConnectionIdle: opts.MaxConnectionIdle}),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(streams...),
		grpc.ForceServerCodecV2(codec),
		// The transport's buffers (HTTP/2 frames read, the socket's reads
		// and writes) come from scratch too, which does not clear them.
		experimental.BufferPool(scratch),
	}
	if opts.MaxStreams > 0 {
		gopts = append(gopts, grpc.MaxConcurrentStreams(uint32(min(opts.MaxStreams, math.MaxUint32))))
	}
	if w := opts.StreamWindowBytes; w > 0 {
		w = min(max(w, 64<<10), math.MaxInt32)
		gopts = append(gopts, grpc.InitialWindowSize(int32(w)), grpc.InitialConnWindowSize(int32(max(w, 4<<20))))
	}
	if opts.MaxHeaderBytes > 0 {
		gopts = append(gopts, grpc.MaxHeaderListSize(uint32(min(opts.MaxHeaderBytes, math.MaxUint32))))
	}
	if opts.StatsHandler != nil {
		gopts = append(gopts, grpc.StatsHandler(opts.StatsHandler))
	}
	if opts.TLS != nil {
		gopts = append(gopts, grpc.Creds(countHandshakes{credentials.NewTLS(opts.TLS), svc.sessions.m}))
	}
	g := grpc.NewServer(gopts...)
	pb.RegisterNormalizerServiceServer(g, svc)
	h := &healthService{Server: health.NewServer(), stop: make(chan struct{})}
	h.SetServingStatus(LivenessService, healthpb.HealthCheckResponse_SERVING)
	svc.sessions.store.watch(h.ready)
	healthpb.RegisterHealthServer(g, openHealth{h})
	reflection.Register(g)
	return &Server{GRPC: g, health: h, svc: svc, log: log, maxConns: opts.MaxConnections, perAddr: opts.MaxConnectionsPerAddress, idle: idle,
		userTimeout: tcpUserTimeout(opts)}
}

// tcpUserTimeout is how long a connection's sent data may go
// unacknowledged before the kernel drops the connection (TCP_USER_TIMEOUT):
// the keepalive timeout, as gRPC sets it itself on the connections it
// sees as TCP (its default when unset; none when pings are off). gRPC
// does not see ours as TCP (they are wrapped), so capListener sets it.
func tcpUserTimeout(opts ServerOptions) time.Duration {
	switch {
	case opts.KeepaliveTime == math.MaxInt64:
		return 0
	case opts.KeepaliveTimeout == 0:
		return 20 * time.Second
	}
	return opts.KeepaliveTimeout
}

// handshakeTimeout is d, or the default when d is not positive (gRPC's
// own, 120 s, would let a silent connection hold its slot that long).
func handshakeTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultHandshakeTimeout
	}
	return d
}

// LivenessService is the health service's name for liveness: SERVING for
// as long as the process answers, whatever its store does and also while
// it shuts down. The whole server ("") and acpnorm.v1.NormalizerService
// are readiness: SERVING while the store answers (see storeHealth), and
// NOT_SERVING from shutdown on.
const LivenessService = "liveness"

// healthService is grpc-go's health service whose Watch streams end (after
// NOT_SERVING, with UNAVAILABLE) when the server shuts down. grpc-go's own
// keep going until the client leaves, so one watcher would hold a graceful
// stop until its deadline, and every other stream would then be cut.
type healthService struct {
	*health.Server
	stop     chan struct{}
	stopOnce sync.Once

	mu   sync.Mutex
	down bool // shutdown began: readiness stays NOT_SERVING
}

// ready sets readiness: SERVING when up, until shutdown.
func (h *healthService) ready(up bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		h.setReady(up)
	}
}

func (h *healthService) setReady(up bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if up {
		st = healthpb.HealthCheckResponse_SERVING
	}
	h.SetServingStatus("", st)
	h.SetServingStatus(pb.NormalizerService_ServiceDesc.ServiceName, st)
}

func (h *healthService) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	go func() {
		select {
		case <-h.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := h.Server.Watch(req, watchStream{stream, ctx})
	select {
	case <-h.stop:
		if req.GetService() != LivenessService {
			// The last status sent may not be NOT_SERVING yet: say it.
			_ = stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING})
		}
		return status.Error(codes.Unavailable, "acpnormd is shutting down")
	default:
		return err
	}
}

// shutdown turns readiness NOT_SERVING for good and ends the Watch
// streams; liveness stays SERVING while the process answers, so that a
// liveness probe does not kill it during its graceful stop.
func (h *healthService) shutdown() {
	h.mu.Lock()
	h.setReady(false)
	h.down = true
	h.mu.Unlock()
	h.stopOnce.Do(func() { close(h.stop) })
}

// watchStream is a Watch stream whose context also ends at shutdown.
type watchStream struct {
	healthpb.Health_WatchServer
	ctx context.Context
}

func (w watchStream) Context() context.Context { return w.ctx }

// isHousekeeping reports whether ctx is a call of the health or reflection
// service. Probes call health every few seconds, so their routine start and
// finish lines are logged at debug level only; their warnings and errors
// keep their level.
func isHousekeeping(ctx context.Context) bool {
	method, _ := grpc.Method(ctx)
	return strings.HasPrefix(method, "/"+healthpb.Health_ServiceDesc.ServiceName+"/") ||
		strings.HasPrefix(method, "/grpc.reflection.")
}

// countHandshakes counts the TLS handshakes that fail (no client
// certificate, one of another CA, a plaintext client).
type countHandshakes struct {
	credentials.TransportCredentials
	m *Metrics
}

func (c countHandshakes) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	nc, info, err := c.TransportCredentials.ServerHandshake(conn)
	// One that took too long is counted as handshake_timeout (slotConn).
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		c.m.streamRefused("tls_handshake")
	}
	return nc, info, err
}

func (c countHandshakes) Clone() credentials.TransportCredentials {
	return countHandshakes{c.TransportCredentials.Clone(), c.m}
}

// capStreams refuses a stream when limit streams are already being served
// by the process, whatever connections they came on; health Watch streams
// are counted apart, at most an eighth of limit (at least one).
func capStreams(limit int, m *Metrics) grpc.StreamServerInterceptor {
	var open, watches atomic.Int64
	maxWatches := int64(max(1, limit/8))
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if info.FullMethod == healthpb.Health_Watch_FullMethodName {
			// Health checks need no credentials: their watchers have
			// slots of their own, and take none of the callers'.
			if watches.Add(1) > maxWatches {
				watches.Add(-1)
				m.streamRefused("max_health_watches")
				return status.Errorf(codes.ResourceExhausted, "acpnormd already serves %d health Watch streams (an eighth of its --max-streams); close one or use Check", maxWatches)
			}
			defer watches.Add(-1)
			return handler(srv, ss)
		}
		if open.Add(1) > int64(limit) {
			open.Add(-1)
			m.streamRefused("max_streams")
			return status.Errorf(codes.ResourceExhausted, "acpnormd already serves %d streams (its --max-streams); close one or try again later", limit)
		}
		defer open.Add(-1)
		return handler(srv, ss)
	}
}

// Serve serves on lis until Shutdown, at most MaxConnections connections
// at once and MaxConnectionsPerAddress from one client address, each
// closed when it opens no stream within FirstStreamTimeout of its
// handshake.
func (s *Server) Serve(lis net.Listener) error {
	return s.GRPC.Serve(s.listen(lis))
}

// listen wraps lis in the bounds on connections.
func (s *Server) listen(lis net.Listener) net.Listener {
	l := capConnections(lis, s.maxConns, s.perAddr, s.idle, s.svc.sessions.m, s.log)
	l.userTimeout = s.userTimeout
	return l
}

// Shutdown stops the server gracefully: health turns NOT_SERVING, no new
// streams are accepted, every open stream finishes the frames it has read
// and sends what they produced, then ends with UNAVAILABLE. Streams still
// open at the deadline are cut; no message is ever sent half-written.
func (s *Server) Shutdown(ctx context.Context) {
	s.health.shutdown()
	s.svc.Drain()
	stopped := make(chan struct{})
	go func() {
		s.GRPC.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		s.log.Warn("shutdown deadline passed; cutting the remaining streams")
		s.GRPC.Stop()
		<-stopped
	}
}
