package service

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/acpnorm/acpnorm/store"
)

// How the store is checked for readiness: every storeCheckEvery, each
// check given storeCheckTimeout; a failed operation asks for a check at
// once, but no sooner than storeCheckGap after the last one.
const (
	storeCheckEvery   = 2 * time.Second
	storeCheckTimeout = 2 * time.Second
	storeCheckGap     = 200 * time.Millisecond
)

// storeCheckSession is the session whose version a store without Ping
// reads to see that it answers.
const storeCheckSession = "acpnorm:readiness-check"

// storeHealth says whether the shared store takes commits, for
// readiness: a server whose store fails or refuses writes answers every
// frame UNAVAILABLE, and should take no traffic until the store is back.
// The store is asked every storeCheckEvery and when an operation of the
// sessions fails (normalize.Hooks.StoreError): whether it would take a
// commit (store.Checker: Redis writes a key of its own that expires, on
// every Cluster master, counting replicas as a commit with
// --store-wait-replicas does), else whether it answers (store.Pinger's
// PING, or a version read). Only the check decides, so that one session's
// failure (a session the store cannot load, a commit WAIT found too few
// replicas for) does not turn readiness while the store takes commits.
// A frame costs nothing: the check runs on its own goroutine.
type storeHealth struct {
	check func(context.Context) error
	log   *slog.Logger
	wake  chan struct{}

	mu     sync.Mutex
	down   bool
	notify []func(up bool) // called under mu, at each change
}

// newStoreHealth returns the check of st (nil: no store to check, always
// up).
func newStoreHealth(st store.Store, log *slog.Logger) *storeHealth {
	h := &storeHealth{log: log, wake: make(chan struct{}, 1)}
	switch s := st.(type) {
	case nil:
	case store.Checker:
		h.check = s.Check
	case store.Pinger:
		h.check = s.Ping
	default:
		h.check = func(ctx context.Context) error { _, err := st.Version(ctx, storeCheckSession); return err }
	}
	return h
}

// failed is called when an operation of the store failed: check it now.
func (h *storeHealth) failed() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// watch calls notify with whether the store answers, now and at every
// change.
func (h *storeHealth) watch(notify func(up bool)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notify = append(h.notify, notify)
	notify(!h.down)
}

// run checks the store, at once and then as said above, until ctx
// ends. Readiness is SERVING until the first check says otherwise (the
// store answered when it was opened).
func (h *storeHealth) run(ctx context.Context) {
	if h.check == nil {
		return
	}
	tick := time.NewTicker(storeCheckEvery)
	defer tick.Stop()
	for first := true; ; first = false {
		if !first { // the first check is at once
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-h.wake:
			}
		}
		cctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
		err := h.check(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		h.set(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(storeCheckGap):
		}
	}
}

// set records what a check found, saying it when it changes.
func (h *storeHealth) set(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	down := err != nil
	if down == h.down {
		return
	}
	h.down = down
	if down {
		h.log.Warn("store: the readiness check failed; health is NOT_SERVING until the store answers", "error", err)
	} else {
		h.log.Info("store: the readiness check answers; health is SERVING again")
	}
	for _, f := range h.notify {
		f(!down)
	}
}
