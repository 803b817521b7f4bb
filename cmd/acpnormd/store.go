package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/acpnorm/acpnorm/store"
	"github.com/acpnorm/acpnorm/store/redisstore"
)

// checkStore checks the form of a --store value: empty or "memory", or a
// redis:// or rediss:// URL.
func checkStore(spec string) error {
	s := strings.TrimSpace(spec)
	if s == "" || strings.EqualFold(s, "memory") {
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
func openStore(spec string, log *slog.Logger) (store.Store, error) {
	s := strings.TrimSpace(spec)
	if s == "" || strings.EqualFold(s, "memory") {
		return nil, nil
	}
	redis.SetLogger(redisLog{log})
	st, err := redisstore.Open(s)
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	return st, nil
}

// redisLog passes the Redis client's own messages to the server's log.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, args ...any) {
	l.log.WarnContext(ctx, "redis: "+fmt.Sprintf(format, args...))
}
