package service

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/testcerts"
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
