package service

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
)

// DefaultMaxConnections is the default bound on the connections served at
// once: half the process's file descriptor limit, so that the other half
// stays for the metrics listener, the store and the log, and at most 4096
// (at least 64).
func DefaultMaxConnections() int {
	n := fdLimit()
	if n <= 0 {
		return 4096
	}
	return int(max(64, min(4096, n/2)))
}

// PerAddressShare is the default bound on the connections one client
// address holds: half of maxConns (at least one), so that one address
// cannot take them all; 0 (no bound) when maxConns is.
func PerAddressShare(maxConns int) int {
	if maxConns <= 0 {
		return 0
	}
	return max(1, maxConns/2)
}

// DefaultHandshakeTimeout is the default of ServerOptions.HandshakeTimeout.
// A TLS handshake and HTTP/2's preface take two or three round trips, well
// under a second even between continents; 10 s leaves room for a loaded
// client and a few lost segments, and is all a connection that sends
// nothing holds its slot.
const DefaultHandshakeTimeout = 10 * time.Second

// DefaultFirstStreamTimeout is the default of
// ServerOptions.FirstStreamTimeout. A gRPC client connects because a call
// is waiting, so its first stream follows the handshake at once; 10 s, as
// for the handshake, leaves room for a loaded client, and a connection
// that does nothing holds its slot about 20 s in all rather than
// MaxConnectionIdle. A client that connects ahead of its calls and waits
// longer loses nothing: it connects again for its next call.
const DefaultFirstStreamTimeout = 10 * time.Second

// capListener accepts at most cap(slots) connections at once, and at most
// perAddr from one client address (its IPv4 address or IPv6 /64, whatever
// the port: see addressKey). One more is
// closed as soon as it is accepted rather than left in the kernel's
// backlog: its client sees the connection fail at once and can try again
// or elsewhere, and it holds no descriptor. A nil slots or a perAddr of 0
// sets no bound of that kind.
type capListener struct {
	net.Listener
	slots   chan struct{}
	perAddr int
	m       *Metrics
	log     *slog.Logger
	idle    *idleConns
	// userTimeout, when positive, is set as each connection's
	// TCP_USER_TIMEOUT.
	userTimeout time.Duration

	mu   sync.Mutex
	held map[netip.Prefix]int // connections held by address (addressKey); none at 0

	full, fullAddr, userTimeoutLog burstLog
}

func capConnections(lis net.Listener, limit, perAddr int, idle *idleConns, m *Metrics, log *slog.Logger) *capListener {
	l := &capListener{Listener: lis, perAddr: perAddr, m: m, log: log, idle: idle, held: map[netip.Prefix]int{},
		full: burstLog{every: capLogEvery}, fullAddr: burstLog{every: capLogEvery}, userTimeoutLog: burstLog{every: capLogEvery}}
	if limit > 0 {
		l.slots = make(chan struct{}, limit)
	}
	return l
}

// capLogEvery is how often, at most, turned-away connections are logged.
const capLogEvery = 10 * time.Second

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr, byAddr := netip.Prefix{}, false
		if tcp, ok := c.RemoteAddr().(*net.TCPAddr); ok && l.perAddr > 0 {
			addr, byAddr = addressKey(tcp.AddrPort().Addr()), true
			if !l.take(addr) {
				l.refuse(c, &l.fullAddr, "max_connections_per_address", "max_connections_per_address", l.perAddr, "last.peer.address", keyString(addr))
				continue
			}
		}
		if l.slots != nil {
			select {
			case l.slots <- struct{}{}:
			default:
				if byAddr {
					l.give(addr)
				}
				l.refuse(c, &l.full, "max_connections", "max_connections", cap(l.slots))
				continue
			}
		}
		if l.userTimeout > 0 {
			if err := setUserTimeout(c, l.userTimeout); err != nil {
				l.noUserTimeout(err)
			}
		}
		sc := &slotConn{Conn: c, m: l.m, free: func() {
			if l.slots != nil {
				<-l.slots
			}
			if byAddr {
				l.give(addr)
			}
		}}
		l.idle.add(sc)
		return sc, nil
	}
}

// addressKey is the client address a connection from a counts under: an
// IPv4 address (written as IPv6 or not), or an IPv6 address's /64, since
// a client usually holds a whole /64 and could take a share per address.
func addressKey(a netip.Addr) netip.Prefix {
	if a = a.Unmap(); a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.WithZone("").Prefix(64)
	return p
}

// keyString is key as logged: an address alone, a prefix with its length.
func keyString(key netip.Prefix) string {
	if key.IsSingleIP() {
		return key.Addr().String()
	}
	return key.String()
}

// take counts one more connection from addr, unless it holds its share.
func (l *capListener) take(addr netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[addr] >= l.perAddr {
		return false
	}
	l.held[addr]++
	return true
}

// give counts one connection from addr less.
func (l *capListener) give(addr netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[addr]--; l.held[addr] <= 0 {
		delete(l.held, addr)
	}
}

// refuse closes c, counts it under reason and logs the refusals of that
// reason at most every capLogEvery, with their count.
func (l *capListener) refuse(c net.Conn, b *burstLog, reason string, fields ...any) {
	c.Close()
	l.m.streamRefused(reason)
	n, since, ok := b.due(time.Now())
	if !ok {
		return
	}
	fields = append(fields, "refused", n)
	fields = sinceLast(fields, since)
	flag := "--" + strings.ReplaceAll(reason, "_", "-")
	l.log.Warn("connections refused: "+flag+" reached (logged at most every "+capLogEvery.String()+")", fields...)
}

// noUserTimeout logs, at most every capLogEvery, that a connection's
// TCP_USER_TIMEOUT could not be set: a dead peer of it is found by
// keepalive pings alone.
func (l *capListener) noUserTimeout(err error) {
	if n, _, ok := l.userTimeoutLog.due(time.Now()); ok {
		l.log.Warn("TCP_USER_TIMEOUT not set; dead peers are found by keepalive pings alone (logged at most every "+capLogEvery.String()+")", "error", err, "connections", n)
	}
}

// slotConn gives its slots back when closed. A read that passed its
// deadline is a handshake that took longer than the server's bound (the
// only deadline gRPC sets on a server's connection): its close is counted.
// gRPC clears that deadline once the handshake is done: from then on, a
// watched connection (see idleConns) has its first-stream bound.
type slotConn struct {
	net.Conn
	m        *Metrics
	timedOut atomic.Bool
	once     sync.Once
	free     func()

	idle  *idleConns // nil: not watched
	pair  connPair
	state atomic.Int32 // one of the conn* states below
	timer atomic.Pointer[time.Timer]
}

// The states of a watched connection.
const (
	connWaiting  = iota // no stream yet
	connStreamed        // it has had one
	connExpired         // closed for having none in time
	connClosed          // closed otherwise
)

func (c *slotConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		c.timedOut.Store(true)
	}
	return n, err
}

func (c *slotConn) SetDeadline(t time.Time) error {
	err := c.Conn.SetDeadline(t)
	if t.IsZero() && c.idle != nil && c.state.Load() == connWaiting {
		c.timer.Store(time.AfterFunc(c.idle.bound, func() { c.idle.expire(c) }))
	}
	return err
}

// streamed marks c as having had a stream: its first-stream bound is off.
func (c *slotConn) streamed() {
	if c.state.CompareAndSwap(connWaiting, connStreamed) {
		c.stopTimer()
	}
}

func (c *slotConn) stopTimer() {
	if t := c.timer.Load(); t != nil {
		t.Stop()
	}
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		if c.idle != nil {
			c.state.CompareAndSwap(connWaiting, connClosed)
			c.stopTimer()
			c.idle.remove(c)
		}
		if c.timedOut.Load() {
			c.m.streamRefused("handshake_timeout")
		}
		c.free()
	})
	return err
}

// idleConns closes the connections that open no stream within bound of
// their handshake. A call is told its peer's address and its own, not its
// connection: the connections waiting for their first stream are found by
// that pair (a TCP connection's, unique while it is open), marked by the
// first call on them (markCall, the first interceptor, so that even a
// refused call counts), and no longer watched then. A stats.Handler would
// be told of each connection, but with one set gRPC copies every message
// received for the handler's payload events.
type idleConns struct {
	bound time.Duration // 0: none is watched
	m     *Metrics
	log   *slog.Logger
	burst burstLog

	mu      sync.Mutex
	waiting map[connPair]*slotConn
}

// connPair is a TCP connection's local and remote address.
type connPair struct{ local, remote netip.AddrPort }

func pairOf(local, remote net.Addr) (connPair, bool) {
	l, ok1 := local.(*net.TCPAddr)
	r, ok2 := remote.(*net.TCPAddr)
	if !ok1 || !ok2 {
		return connPair{}, false
	}
	return connPair{l.AddrPort(), r.AddrPort()}, true
}

func newIdleConns(bound time.Duration, m *Metrics, log *slog.Logger) *idleConns {
	return &idleConns{bound: max(bound, 0), m: m, log: log, burst: burstLog{every: capLogEvery}, waiting: map[connPair]*slotConn{}}
}

// add watches c until its first stream.
func (w *idleConns) add(c *slotConn) {
	if w.bound == 0 {
		return
	}
	pair, ok := pairOf(c.LocalAddr(), c.RemoteAddr())
	if !ok {
		return
	}
	c.idle, c.pair = w, pair
	w.mu.Lock()
	w.waiting[pair] = c
	w.mu.Unlock()
}

func (w *idleConns) remove(c *slotConn) {
	w.mu.Lock()
	if w.waiting[c.pair] == c {
		delete(w.waiting, c.pair)
	}
	w.mu.Unlock()
}

// mark notes a stream on the connection of ctx's peer.
func (w *idleConns) mark(ctx context.Context) {
	if w.bound == 0 {
		return
	}
	p, ok := peer.FromContext(ctx)
	if !ok {
		return
	}
	pair, ok := pairOf(p.LocalAddr, p.Addr)
	if !ok {
		return
	}
	w.mu.Lock()
	c := w.waiting[pair]
	delete(w.waiting, pair)
	w.mu.Unlock()
	if c != nil {
		c.streamed()
	}
}

// expire closes c if it has had no stream, counts it and logs such
// closes at most every capLogEvery, with their count.
func (w *idleConns) expire(c *slotConn) {
	if !c.state.CompareAndSwap(connWaiting, connExpired) {
		return
	}
	c.Close()
	w.m.streamRefused("first_stream_timeout")
	n, since, ok := w.burst.due(time.Now())
	if !ok {
		return
	}
	fields := []any{"first_stream_timeout", w.bound.String(), "closed", n, "last.peer.address", c.pair.remote.Addr().String()}
	fields = sinceLast(fields, since)
	w.log.Warn("connections closed: no stream within --first-stream-timeout of the handshake (logged at most every "+capLogEvery.String()+")", fields...)
}

// markUnary and markStream are the first interceptors: each call marks
// its connection as used (see idleConns).
func (w *idleConns) markUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	w.mark(ctx)
	return handler(ctx, req)
}

func (w *idleConns) markStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	w.mark(ss.Context())
	return handler(srv, ss)
}
