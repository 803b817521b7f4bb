package redisstore

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Whether a commit that failed was applied (see "Commits that fail" in
// the package documentation) depends on every time it was sent, not only
// on the last error: go-redis sends a command again after a timeout or a
// broken connection, and its last error (a refused dial, READONLY) says
// nothing of a sending before it that Redis may have run. So the scripts
// that write (commit, confirm) go out as once commands, which go-redis
// sends at most once (it still sends again one it knows it never wrote),
// and send sends them again itself, as go-redis would have, keeping
// count of whether any sending may have run.

// luaScript is a script with its source, to build its EVALSHA and EVAL
// commands.
type luaScript struct {
	*redis.Script
	src string
}

func newScript(src string) luaScript { return luaScript{redis.NewScript(src), src} }

// cmd is the command that runs the script: EVALSHA, or EVAL when whole.
func (l luaScript) cmd(ctx context.Context, whole bool, keys []string, args []any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	if whole {
		a = append(a, "eval", l.src)
	} else {
		a = append(a, "evalsha", l.Hash())
	}
	a = append(a, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return redis.NewCmd(ctx, append(a, args...)...)
}

// once is a command go-redis does not send again after an error once it
// wrote it (see send).
type once struct{ *redis.Cmd }

func (once) NoRetry() bool { return true }

// evalOnce runs script once (by its SHA1, then whole when Redis does not
// know it: NOSCRIPT runs nothing) and returns its integer answer.
func (s *Store) evalOnce(ctx context.Context, script luaScript, keys []string, args []any) (int64, error) {
	cmd := script.cmd(ctx, false, keys, args)
	_ = s.c.Process(ctx, once{cmd})
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = script.cmd(ctx, true, keys, args)
		_ = s.c.Process(ctx, once{cmd})
	}
	return cmd.Int64()
}

// send calls sending, and again after an error that a later sending may
// not meet (see transient), at most s.resends more times, with go-redis's
// backoff in between. unsure reports whether a sending that failed may
// have run the script: false when each was refused before it ran (see
// refused). A commit script's token makes a sending that finds its commit
// applied answer as the first did.
func (s *Store) send(ctx context.Context, sending func() (v, acked int64, err error)) (v, acked int64, unsure bool, err error) {
	for n := 0; ; n++ {
		v, acked, err = sending()
		if err == nil {
			return v, acked, unsure, nil
		}
		unsure = unsure || !refused(err)
		if n >= s.resends || !transient(err) {
			return 0, 0, unsure, err
		}
		s.lost(err)
		d := s.minBackoff << min(n, 16)
		if d <= 0 || d > s.maxBackoff {
			d = s.maxBackoff
		}
		if d > 0 {
			d = d/2 + rand.N(d/2+1)
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return 0, 0, unsure, err
		}
	}
}

// refused reports whether err says that Redis did not run the command:
// it was never written (no connection could be had or made: a dial that
// failed sent nothing), or the server answered with an error it gives
// before a script runs, or at the script's first write, which writes
// nothing:
//
//   - while it reads the command, before any runs: a Protocol error,
//     after which Redis closes the connection. A connection that has
//     not authenticated gets one for a command of more than 10
//     arguments or a bulk over 16 KB (Redis 7.0, 6.2.6: "Protocol error:
//     unauthenticated multibulk length"), as every commit is, where a
//     shorter command gets NOAUTH;
//   - before it runs (processCommand): NOSCRIPT, LOADING, BUSY, NOAUTH,
//     MASTERDOWN (a replica cut from its master, with
//     replica-serve-stale-data no), and on a cluster, for the declared
//     keys, MOVED, ASK, TRYAGAIN, CROSSSLOT and CLUSTERDOWN;
//   - at a write inside the script (a script without flags, such as
//     these, is checked there): OOM, which Redis gives only at a script's
//     first write (after that the script must finish), and READONLY,
//     MISCONF and NOREPLICAS, whose conditions (a replica, a failed save,
//     too few replicas) cannot change while a script runs, so that they
//     fail its first write if any. Every script here writes only after
//     its checks (here, the version, the replicas), and answers the
//     moving TRYAGAIN before it writes.
//
// Any other error reply (WRONGTYPE, a Lua error, ERR ...) may come after
// writes, which Redis does not undo; a timeout, a broken connection or
// an ended context may come after Redis ran the command, or before it
// runs it still.
func refused(err error) bool {
	if errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) {
		return true // no connection: nothing written
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	for _, p := range []string{"Protocol error", "NOSCRIPT", "LOADING", "BUSY", "NOAUTH", "MASTERDOWN", "MOVED", "ASK", "TRYAGAIN", "CROSSSLOT", "CLUSTERDOWN", "OOM", "READONLY", "MISCONF", "NOREPLICAS"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// transient reports whether a later sending may not meet err, as go-redis
// judges it for the commands it sends again: a connection that broke or
// timed out while the command was written or read, none to be had, or a
// server loading, read-only (a master just demoted), cut from its
// master, short of replicas or of a cluster's slots, or with too many
// clients.
func transient(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, redis.ErrPoolTimeout) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		// A command whose connection broke or timed out (read, write)
		// is sent again; a timeout with no connection to blame (the
		// handshake of a new one) is not, as go-redis does not.
		var ne net.Error
		return errors.As(err, &op) || errors.As(err, &ne) && !ne.Timeout()
	}
	for _, p := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "NOREPLICAS", "ERR max number of clients reached"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// resendsOf returns how often the client sends a command again, and its
// backoff: a client's MaxRetries, a cluster's MaxRedirects (its nodes'
// clients send nothing again themselves).
func resendsOf(c redis.UniversalClient) (n int, lo, hi time.Duration) {
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		return o.MaxRetries, o.MinRetryBackoff, o.MaxRetryBackoff
	case *redis.ClusterClient:
		o := c.Options()
		return o.MaxRedirects, o.MinRetryBackoff, o.MaxRetryBackoff
	}
	return 0, 0, 0
}
