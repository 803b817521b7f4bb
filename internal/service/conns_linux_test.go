package service

import (
	"math"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Each accepted connection has the keepalive timeout as its
// TCP_USER_TIMEOUT, in milliseconds, as gRPC sets it on connections it
// sees as TCP (ours it does not: they are wrapped): a peer that stops
// acknowledging is dropped by the kernel, not only by keepalive pings.
// The value is read back from the accepted socket.
func TestTCPUserTimeout(t *testing.T) {
	for _, c := range []struct {
		name   string
		set    func(*ServerOptions)
		wantMS int
	}{
		{"default", func(*ServerOptions) {}, 20000},
		{"set", func(o *ServerOptions) { o.KeepaliveTimeout = 7 * time.Second }, 7000},
		{"unset: gRPC's default", func(o *ServerOptions) { o.KeepaliveTimeout = 0 }, 20000},
		{"pings off", func(o *ServerOptions) { o.KeepaliveTime = math.MaxInt64 }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := DefaultServerOptions()
			c.set(&opts)
			svc, err := New(DefaultConfig(), nil, nil)
			require.NoError(t, err)
			srv := NewServer(svc, opts, nil)
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			lis := srv.listen(inner)
			t.Cleanup(func() { lis.Close() })
			client, err := net.Dial("tcp", inner.Addr().String())
			require.NoError(t, err)
			t.Cleanup(func() { client.Close() })
			conn, err := lis.Accept()
			require.NoError(t, err)
			t.Cleanup(func() { conn.Close() })
			tcp, ok := conn.(*slotConn).Conn.(*net.TCPConn)
			require.True(t, ok, "the accepted connection is not a TCP one")
			raw, err := tcp.SyscallConn()
			require.NoError(t, err)
			var got int
			var gerr error
			require.NoError(t, raw.Control(func(fd uintptr) {
				got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
			}))
			require.NoError(t, gerr)
			assert.Equal(t, c.wantMS, got)
		})
	}
}
