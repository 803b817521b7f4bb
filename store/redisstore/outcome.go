package redisstore

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync/atomic"
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
	tctx, wrap := tracked(ctx)
	cmd := script.cmd(tctx, false, keys, args)
	_ = s.c.Process(tctx, once{cmd})
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		tctx, wrap = tracked(ctx)
		cmd = script.cmd(tctx, true, keys, args)
		_ = s.c.Process(tctx, once{cmd})
	}
	v, err := cmd.Int64()
	return v, wrap(err)
}

// A sending that needs a new connection sends nothing of its own until
// the connection is set up, and a set-up that times out (a stopped
// server takes the connection, as the kernel does, but never answers
// its HELLO) fails with the same bare i/o timeout as a command whose
// answer never came. go-redis (v9.23) writes a command only on a
// connection its pool handed out, and hands out a new one only once
// initConn returned nil; initConn starts with HELLO, sent through the
// client's hooks (its handshake connection clones them) with the
// command's context, and ends with OnConnect, after every other step,
// whenever it succeeds. So a sending during which the hooks saw HELLO
// and OnConnect did not follow failed while a connection was being set
// up, before its command could be written: newConnHook and
// connSetUp mark it, and its error is wrapped in errBeforeWrite (see
// tracked). A pool dials on a context of its own (the dial is not
// seen), and a sending on a connection already set up sees no HELLO:
// both stay unknown, as a timeout is.

// connTrack, in a sending's context, records whether a new connection
// is being set up for it.
type connTrack struct{ settingUp atomic.Bool }

type connTrackKey struct{}

// newConnHook marks the HELLO that starts a new connection's set-up in
// the sending's track; the store adds it to every client it sends on.
type newConnHook struct{}

func (newConnHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// A commit's script passing the hook starts an attempt to send it (a
// cluster client may try another node after a failure; each node's hook
// sees each attempt, before the attempt takes a connection), so it clears
// a mark an earlier attempt left: only a set-up that failed in the last
// attempt says the command was never written.
func (newConnHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if t, ok := ctx.Value(connTrackKey{}).(*connTrack); ok && slices.ContainsFunc(cmds, isScript) {
			t.settingUp.Store(false)
		}
		return next(ctx, cmds)
	}
}

func (newConnHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if t, ok := ctx.Value(connTrackKey{}).(*connTrack); ok {
			switch {
			case cmd.Name() == "hello":
				t.settingUp.Store(true)
			case isScript(cmd):
				t.settingUp.Store(false)
			}
		}
		return next(ctx, cmd)
	}
}

// isScript says whether cmd runs a script (a commit's).
func isScript(cmd redis.Cmder) bool {
	n := cmd.Name()
	return n == "evalsha" || n == "eval"
}

// connSetUp is the clients' OnConnect, initConn's last step: the
// connection is set up (then is run, when not nil).
func connSetUp(then func(context.Context, *redis.Conn) error) func(context.Context, *redis.Conn) error {
	return func(ctx context.Context, cn *redis.Conn) error {
		if t, ok := ctx.Value(connTrackKey{}).(*connTrack); ok {
			t.settingUp.Store(false)
		}
		if then != nil {
			return then(ctx, cn)
		}
		return nil
	}
}

// errBeforeWrite wraps the error of a sending that failed while a new
// connection was being set up: its command was never written.
type errBeforeWrite struct{ err error }

func (e *errBeforeWrite) Error() string {
	return "setting up a new connection, before the command was written: " + e.err.Error()
}

func (e *errBeforeWrite) Unwrap() error { return e.err }

// tracked returns ctx with a new track, for one sending (a Process, or
// a pipeline holding one once command), and the function that wraps
// the sending's error in errBeforeWrite when it failed while a new
// connection was being set up.
func tracked(ctx context.Context) (context.Context, func(error) error) {
	t := &connTrack{}
	return context.WithValue(ctx, connTrackKey{}, t), func(err error) error {
		if err != nil && t.settingUp.Load() {
			return &errBeforeWrite{err}
		}
		return err
	}
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
// failed sent nothing, and so did a sending whose new connection failed
// its set-up, errBeforeWrite), or the server answered with an error it
// gives before a script runs, or at the script's first write, which
// writes nothing:
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
	var before *errBeforeWrite
	if errors.As(err, &before) {
		return true // a new connection's set-up failed: nothing written
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
