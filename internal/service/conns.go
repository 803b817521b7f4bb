package service

import (
	"errors"
	"log/slog"
	"net"
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

// DefaultHandshakeTimeout is the default of ServerOptions.HandshakeTimeout.
// A TLS handshake and HTTP/2's preface take two or three round trips, well
// under a second even between continents; 10 s leaves room for a loaded
// client and a few lost segments, and is all a connection that sends
// nothing holds its slot.
const DefaultHandshakeTimeout = 10 * time.Second

// capListener accepts at most cap(slots) connections at once (nil slots:
// no bound). One more is closed as soon as it is accepted rather than left
// in the kernel's backlog: its client sees the connection fail at once and
// can try again or elsewhere, and it holds no descriptor.
type capListener struct {
	net.Listener
	slots chan struct{}
	m     *Metrics
	log   *slog.Logger
	full  burstLog
}

func capConnections(lis net.Listener, limit int, m *Metrics, log *slog.Logger) net.Listener {
	l := &capListener{Listener: lis, m: m, log: log, full: burstLog{every: capLogEvery}}
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
		if l.slots != nil {
			select {
			case l.slots <- struct{}{}:
			default:
				l.refuse(c, &l.full, "max_connections", "max_connections", cap(l.slots))
				continue
			}
		}
		return &slotConn{Conn: c, m: l.m, free: func() {
			if l.slots != nil {
				<-l.slots
			}
		}}, nil
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

// slotConn gives its slot back when closed. A read that passed its
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
