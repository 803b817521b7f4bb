package service

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/testcerts"
	"github.com/acpnorm/acpnorm/internal/testlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
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

// check makes a health Check on conn within d.
func check(conn *grpc.ClientConn, d time.Duration) error {
	ctx, cancel := contextTimeout(d)
	defer cancel()
	_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// dialFrom opens a TCP connection to addr from the local address ip
// (Linux routes all of 127.0.0.0/8 to the loopback interface).
func dialFrom(ip, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return d.Dial("tcp", addr)
}

// connectFrom is connect from the local address ip.
func connectFrom(t *testing.T, ip, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(_ context.Context, a string) (net.Conn, error) { return dialFrom(ip, a) }))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedAfter reads c until the server closes it (its TLS or HTTP/2
// bytes, if any, are read and dropped) and returns how long that took;
// it fails the test when the server has not closed c within limit.
func closedAfter(t *testing.T, c net.Conn, from time.Time, limit time.Duration) time.Duration {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(from.Add(limit)))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept a connection that finished no handshake for %v", limit)
		return time.Since(from)
	}
}

// A connection that has not finished its handshake (TLS if on, then
// HTTP/2's preface) within HandshakeTimeout is closed by the server, its
// slot free again: clients that connect and send nothing cannot hold
// every --max-connections slot. A real client is served after them.
func TestHandshakeTimeout(t *testing.T) {
	const bound = time.Second
	for _, withTLS := range []bool{false, true} {
		name := "plaintext"
		if withTLS {
			name = "TLS"
		}
		t.Run(name, func(t *testing.T) {
			opts := DefaultServerOptions()
			opts.MaxConnections = 2
			opts.HandshakeTimeout = bound
			creds := insecure.NewCredentials()
			var clientTLS *tls.Config
			if withTLS {
				dir := certs(t)
				cfg, err := NewTLSConfig(TLSFiles{Cert: filepath.Join(dir, testcerts.ServerCert), Key: filepath.Join(dir, testcerts.ServerKey)}, nil)
				require.NoError(t, err)
				opts.TLS = cfg
				ca, err := x509.ParseCertificate(certDER(t, filepath.Join(dir, testcerts.CA)))
				require.NoError(t, err)
				roots := x509.NewCertPool()
				roots.AddCert(ca)
				clientTLS = &tls.Config{RootCAs: roots, ServerName: testcerts.ServerName, MinVersion: tls.VersionTLS12}
				creds = credentials.NewTLS(clientTLS)
			}
			addr, svc := serveTCP(t, opts)

			// Both slots, taken by connections that stop.
			start := time.Now()
			var stalled []net.Conn
			for i := range 2 {
				c, err := net.Dial("tcp", addr)
				require.NoError(t, err)
				t.Cleanup(func() { c.Close() })
				if withTLS && i == 0 {
					// The header of a ClientHello record, not its body.
					_, err = c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00})
					require.NoError(t, err)
				}
				if withTLS && i == 1 {
					// TLS done, no HTTP/2 preface.
					tc := tls.Client(c, &tls.Config{RootCAs: clientTLS.RootCAs, ServerName: clientTLS.ServerName, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12})
					require.NoError(t, tc.Handshake())
					c = tc
				}
				stalled = append(stalled, c)
			}
			for _, c := range stalled {
				took := closedAfter(t, c, start, bound+10*time.Second)
				assert.GreaterOrEqual(t, took, bound-100*time.Millisecond, "closed before the handshake bound: by something else")
			}
			conn := connect(t, addr, creds)
			require.NoError(t, check(conn, 10*time.Second), "a real client was not served after the stalled connections")
			require.Eventually(t, func() bool { return counted(svc.sessions.m, "handshake_timeout") == 2 },
				5*time.Second, 20*time.Millisecond, "handshake timeouts counted: %v", counted(svc.sessions.m, "handshake_timeout"))
			assert.Zero(t, counted(svc.sessions.m, "tls_handshake"), "a handshake timeout counted as a failed TLS handshake too")
		})
	}
}

// One client address holds at most MaxConnectionsPerAddress connections:
// one more from it is closed as it is accepted, counted and logged, while
// another address is still served; slots come back when connections
// close, however many have come and gone, and whichever cap refused them.
func TestMaxConnectionsPerAddress(t *testing.T) {
	opts := DefaultServerOptions()
	opts.MaxConnections = 4
	opts.MaxConnectionsPerAddress = 2
	svc, addr, logBuf := serveLogged(t, opts)
	creds := insecure.NewCredentials()
	served := func(c *grpc.ClientConn) {
		t.Helper()
		require.EventuallyWithT(t, func(ct *assert.CollectT) { assert.NoError(ct, check(c, time.Second)) },
			10*time.Second, 50*time.Millisecond, "a connection within the caps was not served")
	}
	// fill opens the share of ip, and checks each is served.
	fill := func(ip string) []*grpc.ClientConn {
		var held []*grpc.ClientConn
		for range 2 {
			c := connectFrom(t, ip, addr, creds)
			served(c)
			held = append(held, c)
		}
		return held
	}
	held := fill("127.0.0.1")
	extra := connectFrom(t, "127.0.0.1", addr, creds)
	require.Error(t, check(extra, time.Second), "a third connection from one address over a share of 2 was served")
	require.Eventually(t, func() bool { return counted(svc.sessions.m, "max_connections_per_address") >= 1 },
		10*time.Second, 50*time.Millisecond, "the refused connection was not counted")
	assert.Zero(t, counted(svc.sessions.m, "max_connections"), "refused by the global cap, which had room")
	other := connectFrom(t, "127.0.0.2", addr, creds)
	require.NoError(t, check(other, 10*time.Second), "another address was not served while one address held its share")
	for _, c := range held {
		require.NoError(t, check(c, 5*time.Second), "a held connection stopped working")
	}
	log := logBuf.String()
	assert.Contains(t, log, "--max-connections-per-address reached")
	assert.Contains(t, log, "127.0.0.1")
	assert.Equal(t, 1, strings.Count(log, "--max-connections-per-address reached"), "refusals are logged at most every 10 s:\n%s", log)
	extra.Close()

	// The global cap refuses 127.0.0.3 twice while it is full: its share
	// must not keep them.
	full := connectFrom(t, "127.0.0.2", addr, creds)
	served(full)
	for range 2 {
		c, err := dialFrom("127.0.0.3", addr)
		require.NoError(t, err)
		closedAfter(t, c, time.Now(), 10*time.Second)
		c.Close()
	}
	// The listener counts a refusal just after it closes the connection.
	assert.Eventually(t, func() bool { return counted(svc.sessions.m, "max_connections") >= 2 },
		5*time.Second, 20*time.Millisecond, "refusals by the global cap counted: %v", counted(svc.sessions.m, "max_connections"))

	// No slot leaks: connections come and go, from the address at its
	// share and from others, then the shares fill again.
	for _, c := range append(held, other, full) {
		c.Close()
	}
	for i := range 200 {
		c, err := dialFrom("127.0.0."+[]string{"1", "3", "4"}[i%3], addr)
		require.NoError(t, err)
		if i%2 == 0 {
			_, _ = c.Write(bytes.Repeat([]byte{'x'}, 30)) // a bad preface
		}
		c.Close()
	}
	for range 5 {
		c := connectFrom(t, "127.0.0.1", addr, creds)
		served(c)
		c.Close()
	}
	fill("127.0.0.1")
	fill("127.0.0.3")
	more := connectFrom(t, "127.0.0.1", addr, creds)
	require.Error(t, check(more, time.Second), "the share was not bound again after the churn")
	last := connectFrom(t, "127.0.0.2", addr, creds)
	require.Error(t, check(last, time.Second), "a fifth connection over a cap of 4 was served")
}

// A connection that finished its handshake and opens no stream within
// FirstStreamTimeout is closed, counted and logged; one that keeps a
// stream open is not, and one that had a stream and is idle since is left
// to MaxConnectionIdle.
func TestFirstStreamTimeout(t *testing.T) {
	const bound, idle = 500 * time.Millisecond, 3 * time.Second
	opts := DefaultServerOptions()
	opts.FirstStreamTimeout = bound
	opts.MaxConnectionIdle = idle
	svc, addr, logBuf := serveLogged(t, opts)

	// ready connects conn and waits until it is READY.
	ready := func(conn *grpc.ClientConn) time.Time {
		t.Helper()
		ctx, cancel := contextTimeout(10 * time.Second)
		defer cancel()
		conn.Connect()
		for s := conn.GetState(); s != connectivity.Ready; s = conn.GetState() {
			require.True(t, conn.WaitForStateChange(ctx, s), "the connection did not become ready")
		}
		return time.Now()
	}
	// leftReady waits up to d for conn to leave READY and says how long
	// that took, or d when it stayed.
	leftReady := func(conn *grpc.ClientConn, from time.Time, d time.Duration) time.Duration {
		ctx, cancel := context.WithDeadline(context.Background(), from.Add(d))
		defer cancel()
		conn.WaitForStateChange(ctx, connectivity.Ready)
		return time.Since(from)
	}

	silent := connect(t, addr, insecure.NewCredentials())
	streaming := connect(t, addr, insecure.NewCredentials())
	called := connect(t, addr, insecure.NewCredentials())
	silentAt := ready(silent)
	ctx, cancel := contextTimeout(30 * time.Second)
	defer cancel()
	watch, err := healthpb.NewHealthClient(streaming).Watch(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = watch.Recv()
	require.NoError(t, err)
	require.NoError(t, check(called, 5*time.Second))
	calledAt := time.Now()

	took := leftReady(silent, silentAt, idle)
	require.Less(t, took, idle-time.Second, "a connection that opened no stream was kept (until --max-connection-idle)")
	assert.GreaterOrEqual(t, took, bound-100*time.Millisecond, "closed before the first-stream bound: by something else")
	require.Eventually(t, func() bool { return counted(svc.sessions.m, "first_stream_timeout") == 1 },
		5*time.Second, 20*time.Millisecond, "closes counted: %v", counted(svc.sessions.m, "first_stream_timeout"))
	assert.Contains(t, logBuf.String(), "--first-stream-timeout")

	took = leftReady(called, calledAt, idle+5*time.Second)
	assert.GreaterOrEqual(t, took, idle-100*time.Millisecond, "a connection that had a stream was closed before --max-connection-idle")
	assert.Less(t, took, idle+5*time.Second, "--max-connection-idle no longer closes an idle connection")
	assert.Equal(t, connectivity.Ready, streaming.GetState(), "a connection with an open stream was closed")
	assert.Equal(t, 1.0, counted(svc.sessions.m, "first_stream_timeout"), "connections that had streams were counted")
}

// A connection's client address is its IPv4 address, written as IPv6 or
// not, or its IPv6 address's /64, which one client usually holds whole.
func TestAddressKey(t *testing.T) {
	for _, c := range []struct{ addr, key string }{
		{"192.0.2.1", "192.0.2.1/32"},
		{"::ffff:192.0.2.1", "192.0.2.1/32"},
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"::1", "::/64"},
		{"fe80::1%eth0", "fe80::/64"},
	} {
		t.Run(c.addr, func(t *testing.T) {
			assert.Equal(t, c.key, addressKey(netip.MustParseAddr(c.addr)).String())
		})
	}
}

// peersAs is a listener whose connections report the peer addresses taken
// from peers, in turn: this machine's loopback has ::1 alone, so real
// connections cannot come from two addresses of one /64.
type peersAs struct {
	net.Listener
	peers chan netip.AddrPort
}

type reportedPeer struct {
	net.Conn
	peer net.Addr
}

func (c reportedPeer) RemoteAddr() net.Addr { return c.peer }

func (l peersAs) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return reportedPeer{c, net.TCPAddrFromAddrPort(<-l.peers)}, nil
}

// The per-address share counts an IPv6 client by its /64, and an IPv4
// address written as IPv6 as that IPv4 address.
func TestMaxConnectionsPerAddressPrefix(t *testing.T) {
	svc, err := New(DefaultConfig(), nil, nil)
	require.NoError(t, err)
	m := svc.sessions.m
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { inner.Close() })
	peers := make(chan netip.AddrPort, 1)
	lis := capConnections(peersAs{inner, peers}, 0, 1, newIdleConns(0, m, nil), m, slog.New(slog.DiscardHandler))
	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	// from dials as peer and returns the connection accepted, or nil when
	// it was refused.
	from := func(peer string) net.Conn {
		t.Helper()
		peers <- netip.AddrPortFrom(netip.MustParseAddr(peer), 40000)
		c, err := net.Dial("tcp", inner.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		closed := make(chan struct{})
		go func() {
			_, _ = c.Read(make([]byte, 1))
			close(closed)
		}()
		select {
		case s := <-accepted:
			t.Cleanup(func() { s.Close() })
			return s
		case <-closed:
			return nil
		case <-time.After(10 * time.Second):
			t.Fatal("a connection was neither accepted nor closed")
			return nil
		}
	}
	// refused waits until n refusals are counted (as the connection is
	// closed, which its client may see first).
	refused := func(n float64) {
		t.Helper()
		require.Eventually(t, func() bool { return counted(m, "max_connections_per_address") == n },
			5*time.Second, 5*time.Millisecond, "refusals counted: %v, want %v", counted(m, "max_connections_per_address"), n)
	}

	first := from("2001:db8:1:2::1")
	require.NotNil(t, first)
	require.True(t, from("2001:db8:1:2:ffff::9") == nil, "a second connection from one /64 over a share of 1 was accepted")
	refused(1)
	require.NotNil(t, from("2001:db8:1:3::1"), "another /64 was refused")
	require.NotNil(t, from("::ffff:192.0.2.1"))
	require.True(t, from("192.0.2.1") == nil, "an IPv4 address counted apart from itself written as IPv6")
	refused(2)
	first.Close()
	require.NotNil(t, from("2001:db8:1:2::5"), "the /64's slot did not come back")
}

// serveLogged serves a Server with opts on a loopback port until the test
// ends, its log kept in the returned buffer.
func serveLogged(t *testing.T, opts ServerOptions) (*Service, string, *testlog.Buffer) {
	t.Helper()
	svc, err := New(DefaultConfig(), nil, nil)
	require.NoError(t, err)
	logBuf := new(testlog.Buffer)
	srv := NewServer(svc, opts, slog.New(slog.NewTextHandler(logBuf, nil)))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.Serve(lis)
	t.Cleanup(srv.GRPC.Stop)
	return svc, lis.Addr().String(), logBuf
}
