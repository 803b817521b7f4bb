package service

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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

// capListener accepts at most cap(slots) connections at once, and at most
// perAddr from one client address (its IP, whatever the port). One more is
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

	mu   sync.Mutex
	held map[netip.Addr]int // connections held by address; none at 0

	full, fullAddr burstLog
}

func capConnections(lis net.Listener, limit, perAddr int, m *Metrics, log *slog.Logger) net.Listener {
	l := &capListener{Listener: lis, perAddr: perAddr, m: m, log: log, held: map[netip.Addr]int{},
		full: burstLog{every: capLogEvery}, fullAddr: burstLog{every: capLogEvery}}
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
		addr, byAddr := netip.Addr{}, false
		if tcp, ok := c.RemoteAddr().(*net.TCPAddr); ok && l.perAddr > 0 {
			addr, byAddr = tcp.AddrPort().Addr().Unmap(), true
			if !l.take(addr) {
				l.refuse(c, &l.fullAddr, "max_connections_per_address", "max_connections_per_address", l.perAddr, "last.peer.address", addr.String())
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
		return &slotConn{Conn: c, m: l.m, free: func() {
			if l.slots != nil {
				<-l.slots
			}
			if byAddr {
				l.give(addr)
			}
		}}, nil
	}
}

// take counts one more connection from addr, unless it holds its share.
func (l *capListener) take(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[addr] >= l.perAddr {
		return false
	}
	l.held[addr]++
	return true
}

// give counts one connection from addr less.
func (l *capListener) give(addr netip.Addr) {
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
	if since > 0 {
		fields = append(fields, "since", since.Round(time.Second).String())
	}
	flag := "--" + strings.ReplaceAll(reason, "_", "-")
	l.log.Warn("connections refused: "+flag+" reached (logged at most every "+capLogEvery.String()+")", fields...)
}

// slotConn gives its slots back when closed. A read that passed its
// deadline is a handshake that took longer than the server's bound (the
// only deadline gRPC sets on a server's connection): its close is counted.
type slotConn struct {
	net.Conn
	m        *Metrics
	timedOut atomic.Bool
	once     sync.Once
	free     func()
}

func (c *slotConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		c.timedOut.Store(true)
	}
	return n, err
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		if c.timedOut.Load() {
			c.m.streamRefused("handshake_timeout")
		}
		c.free()
	})
	return err
}
