package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acpnorm/acpnorm/store"
	"github.com/acpnorm/acpnorm/store/redisstore"
)

// checkStore checks the form of a --store value: empty or "memory", or a
// redis:// or rediss:// URL (one server, Sentinel or Cluster; see
// redisstore), and the --store-wait-* values that go with it.
func checkStore(spec string, wait int, waitTimeout time.Duration) error {
	s := strings.TrimSpace(spec)
	switch {
	case wait < 0:
		return fmt.Errorf("--store-wait-replicas %d: want 0 or more", wait)
	case wait > 0 && waitTimeout <= 0:
		return fmt.Errorf("--store-wait-timeout %v: want a positive duration with --store-wait-replicas %d", waitTimeout, wait)
	}
	if s == "" || strings.EqualFold(s, "memory") {
		if wait > 0 {
			return fmt.Errorf("--store-wait-replicas %d needs a Redis --store: the memory store has no replicas to wait for", wait)
		}
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("--store: not a URL (want empty, memory, or redis://host:port/db)")
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return fmt.Errorf("--store %q: unknown scheme %q (want empty, memory, or a redis:// or rediss:// URL)", u.Redacted(), u.Scheme)
	}
	return nil
}

// openStore opens the store a checked --store value names; nil means this
// process's memory. What the Redis client reports by itself (a connection
// that broke, a dial that failed) goes to log as warnings.
func openStore(spec string, wait int, waitTimeout time.Duration, log *slog.Logger) (store.Store, error) {
	s := strings.TrimSpace(spec)
	if s == "" || strings.EqualFold(s, "memory") {
		return nil, nil
	}
	redis.SetLogger(redisLog{log})
	st, err := redisstore.Open(s, redisstore.WithWaitReplicas(wait, waitTimeout))
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	return st, nil
}

// redisLog passes the Redis client's own messages to the server's log.
type redisLog struct{ log *slog.Logger }

// Printf logs a message of the Redis client: a warning, but for the
// Sentinel client's notes of which master and server it uses (each new
// connection asks), which are debug messages, and its switches to a new
// master, which are news (its failures are warnings).
func (l redisLog) Printf(ctx context.Context, format string, args ...any) {
	msg := "redis: " + fmt.Sprintf(format, args...)
	switch {
	case strings.Contains(format, "failed"):
		l.log.WarnContext(ctx, msg)
	case strings.HasPrefix(format, "sentinel: selected"), strings.HasPrefix(format, "sentinel: new master"):
		l.log.DebugContext(ctx, msg)
	case strings.HasPrefix(format, "sentinel: "):
		l.log.InfoContext(ctx, msg)
	default:
		l.log.WarnContext(ctx, msg)
	}
}
