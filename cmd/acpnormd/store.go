package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
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

// policyEvery is how often, at most, the readiness check reads Redis's
// maxmemory-policy again (see storeWatch).
var policyEvery = 30 * time.Second

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
	w := &storeWatch{Store: st, log: log}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.read(ctx)
	return w, nil
}

// storeWatch is the Redis store, whose readiness check (Check) also
// says which parts of a Cluster fail it (see nodes), and reads Redis's
// maxmemory-policy again, at most every policyEvery, saying what
// changed since it was last read: a policy is read at start, but may be
// changed later (CONFIG SET, a failover to a server configured
// otherwise).
//
// It warns when Redis would evict the store's keys when full (a
// maxmemory-policy other than noeviction): every key acpnorm writes has
// an expiry, so volatile-* policies evict them as allkeys-* do, and a
// session evicted in part is found only as DATA_LOSS (clients rebuild
// it, and give up after a few in a row). Under noeviction a full Redis
// refuses the commit: the frame gets UNAVAILABLE, readiness turns
// NOT_SERVING, and nothing is lost. A Redis that refuses CONFIG (managed
// ones often do) is noted at INFO and opened all the same. Each is said
// once per change, not at every check.
type storeWatch struct {
	*redisstore.Store
	log *slog.Logger

	mu       sync.Mutex
	next     time.Time         // when the policy is read again
	policies map[string]string // as last read, by where (nil: never read)
	unread   bool              // the last read failed
	failing  map[string]string // a Cluster's parts that failed the last check: slots by master ("": none serves them)
}

// Check is the store's readiness check, and then, when due, a read of
// the policy; a policy that cannot be read does not fail the check.
func (w *storeWatch) Check(ctx context.Context) error {
	err := w.Store.Check(ctx)
	w.nodes(err)
	if err != nil {
		return err
	}
	w.mu.Lock()
	due := !time.Now().Before(w.next)
	w.mu.Unlock()
	if due {
		w.read(ctx)
	}
	return nil
}

// nodes says, once per change, which parts of a Cluster failed the
// readiness check (see redisstore.ClusterError): a master that would
// refuse commits, by its address and slots, and slots no master serves;
// and when they take commits again. The process is NOT_SERVING while
// any is (every slot may hold a session). A check that failed otherwise
// (no node answered CLUSTER SHARDS, one server) says nothing here: the
// readiness log says it.
func (w *storeWatch) nodes(err error) {
	var ce redisstore.ClusterError
	if err != nil && !errors.As(err, &ce) {
		return
	}
	failing := map[string]string{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range ce {
		failing[n.Addr] = n.Slots
		switch was, seen := w.failing[n.Addr]; {
		case seen && was == n.Slots:
		case n.Addr == "":
			w.log.Warn("store: Redis Cluster slots have no master; the commits of their sessions fail until one serves them", "slots", n.Slots)
		default:
			w.log.Warn("store: a Redis Cluster master fails the readiness check; the commits of the sessions in its slots fail", "redis", n.Addr, "slots", n.Slots, "error", n.Err)
		}
	}
	gone := slices.Sorted(maps.Keys(w.failing))
	for _, at := range gone {
		switch _, still := failing[at]; {
		case still:
		case at == "":
			w.log.Info("store: every Redis Cluster slot has a master again", "slots", w.failing[at])
		default:
			w.log.Info("store: a Redis Cluster master passes the readiness check again, or serves no slot now", "redis", at, "slots", w.failing[at])
		}
	}
	w.failing = failing
}

// read reads the policies and says what changed since the last read.
func (w *storeWatch) read(ctx context.Context) {
	policies, err := w.MaxmemoryPolicies(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next = time.Now().Add(policyEvery)
	if err != nil {
		if !w.unread {
			w.log.Info("store: could not read Redis's maxmemory-policy (CONFIG GET refused?); make sure it is noeviction, or a full Redis evicts parts of live sessions", "error", err)
		}
		w.unread = true
		return
	}
	w.unread = false
	where := make([]string, 0, len(policies))
	for at := range policies {
		where = append(where, at)
	}
	slices.Sort(where)
	for _, at := range where {
		p := policies[at]
		was, seen := w.policies[at]
		switch {
		case seen && was == p:
		case p != "noeviction":
			w.log.Warn("store: Redis evicts keys when full (maxmemory-policy "+p+"); every key acpnorm writes has an expiry, so a full Redis would evict parts of live sessions, each found as DATA_LOSS (clients rebuild, and give up after a few in a row). Set maxmemory-policy noeviction: a full Redis then refuses the writes (UNAVAILABLE, readiness NOT_SERVING) and loses nothing",
				"redis", at, "maxmemory_policy", p)
		case seen:
			w.log.Info("store: Redis no longer evicts keys when full", "redis", at, "maxmemory_policy", p, "was", was)
		}
	}
	w.policies = policies
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
