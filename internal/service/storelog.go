package service

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// storeLogEvery is how often storeLog says again that the store is still
// failing.
const storeLogEvery = 30 * time.Second

// storeLog logs the store's failures (normalize.Hooks.StoreError) as an
// operator needs them, not one line per failed frame: the first failure
// with its error, while it goes on a line every storeLogEvery with how
// many operations failed and the last error, and the first operation
// that succeeds after them. The metrics count every operation
// (acpnorm_store_ops_total).
type storeLog struct {
	log *slog.Logger
	now func() time.Time

	// failing is set from the first failure to the next operation that
	// does not fail: the others (every commit) look at it alone.
	failing atomic.Bool
	mu      sync.Mutex
	since   time.Time // the first failure of this run of them
	said    time.Time // when the last line was logged
	failed  int       // operations failed since
}

func newStoreLog(log *slog.Logger, now func() time.Time) *storeLog {
	return &storeLog{log: log, now: now}
}

// failure is normalize.Hooks.StoreError.
func (l *storeLog) failure(op string, err error) {
	now := l.now()
	l.mu.Lock()
	first := !l.failing.Load()
	if first {
		l.failing.Store(true)
		l.since, l.failed = now, 0
	}
	l.failed++
	again := !first && now.Sub(l.said) >= storeLogEvery
	if first || again {
		l.said = now
	}
	n, since := l.failed, l.since
	l.mu.Unlock()
	switch {
	case first:
		l.log.Warn("store: an operation failed; the requests it was for were answered UNAVAILABLE and may be sent again", "op", op, "error", err)
	case again:
		l.log.Warn("store: still failing", "failed_operations", n, "since", since, "op", op, "last_error", err)
	}
}

// result is called with how each operation went ("ok", "conflict" or
// "error", as normalize.Hooks.StoreOp says): the first that did not
// fail after failures ends them.
func (l *storeLog) result(result string) {
	if result == "error" || !l.failing.Load() {
		return
	}
	l.mu.Lock()
	if !l.failing.Load() {
		l.mu.Unlock()
		return
	}
	l.failing.Store(false)
	n, since := l.failed, l.since
	l.mu.Unlock()
	l.log.Info("store: answering again", "failed_operations", n, "failing_for", l.now().Sub(since).Round(time.Millisecond))
}
