package service

import (
	"log/slog"
	"net"
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

// capListener accepts at most cap connections at once. One more is closed
// as soon as it is accepted rather than left in the kernel's backlog: its
// client sees the connection fail at once and can try again or elsewhere,
// and it holds no descriptor.
type capListener struct {
	net.Listener
	slots   chan struct{}
	m       *Metrics
	log     *slog.Logger
	turned  atomic.Int64 // turned away since the last log line
	lastLog atomic.Int64 // unix nanoseconds of the last log line
}

func capConnections(lis net.Listener, limit int, m *Metrics, log *slog.Logger) net.Listener {
	return &capListener{Listener: lis, slots: make(chan struct{}, limit), m: m, log: log}
}

// capLogEvery is how often, at most, turned-away connections are logged.
const capLogEvery = 10 * time.Second

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
		default:
		}
		c.Close()
		l.m.streamRefused("max_connections")
		n := l.turned.Add(1)
		now := time.Now().UnixNano()
		last := l.lastLog.Load()
		if now-last >= int64(capLogEvery) && l.lastLog.CompareAndSwap(last, now) {
			l.turned.Add(-n)
			fields := []any{"max_connections", cap(l.slots), "refused", n}
			if last != 0 {
				fields = append(fields, "since", time.Duration(now-last).Round(time.Second).String())
			}
			l.log.Warn("connections refused: --max-connections reached (logged at most every "+capLogEvery.String()+")", fields...)
		}
	}
}

// slotConn gives its slot back when closed.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
