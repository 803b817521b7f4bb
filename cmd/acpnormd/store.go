package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
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
	checkEviction(st, log)
	return st, nil
}

// checkEviction warns when Redis would evict the store's keys when full
// (a maxmemory-policy other than noeviction): every key acpnorm writes
// has an expiry, so volatile-* policies evict them as allkeys-* do, and a
// session evicted in part is found only as DATA_LOSS (clients rebuild it,
// and give up after a few in a row). Under noeviction a full Redis
// refuses the commit: the frame gets UNAVAILABLE, readiness turns
// NOT_SERVING, and nothing is lost. A Redis that refuses CONFIG (managed
// ones often do) is noted at INFO and opened all the same.
func checkEviction(st *redisstore.Store, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	policies, err := st.MaxmemoryPolicies(ctx)
	if err != nil {
		log.Info("store: could not read Redis's maxmemory-policy (CONFIG GET refused?); make sure it is noeviction, or a full Redis evicts parts of live sessions", "error", err)
		return
	}
	where := make([]string, 0, len(policies))
	for w := range policies {
		where = append(where, w)
	}
	slices.Sort(where)
	for _, w := range where {
		if p := policies[w]; p != "noeviction" {
			log.Warn("store: Redis evicts keys when full (maxmemory-policy "+p+"); every key acpnorm writes has an expiry, so a full Redis would evict parts of live sessions, each found as DATA_LOSS (clients rebuild, and give up after a few in a row). Set maxmemory-policy noeviction: a full Redis then refuses the writes (UNAVAILABLE, readiness NOT_SERVING) and loses nothing",
				"redis", w, "maxmemory_policy", p)
		}
	}
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
