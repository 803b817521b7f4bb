package service

import (
	"context"
	"sync/atomic"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/store"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// streamStats counts what one Normalize stream did, for the attributes of
// its span. There is no span per frame: a stream carries thousands of
// frames a second, each applied in microseconds, so a span each would cost
// more than the work and bury the stream's own span; the counts say what
// a per-frame span would have, at the cost of four atomic adds.
type streamStats struct {
	frames, revisions, frameErrors, storeRoundTrips atomic.Int64
}

// responses is how many responses the stream sent (see answered): a
// response is a revision or a FrameError. Read while the send loop runs,
// it may miss the latest one, never count one not sent.
func (st *streamStats) responses() uint64 {
	return uint64(st.revisions.Load() + st.frameErrors.Load())
}

type streamStatsKey struct{}

func withStreamStats(ctx context.Context) (context.Context, *streamStats) {
	st := &streamStats{}
	return context.WithValue(ctx, streamStatsKey{}, st), st
}

// sent counts a response the stream sent.
func (st *streamStats) sent(r *pb.NormalizeResponse) {
	switch {
	case r.GetShellExec() != nil:
		st.revisions.Add(1)
	case r.GetFrameError() != nil:
		st.frameErrors.Add(1)
	}
}

// annotate puts the counts on the stream's span, when it is recorded.
func (st *streamStats) annotate(ctx context.Context, applied uint64) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.Int64("acpnorm.stream.frames", st.frames.Load()),
		attribute.Int64("acpnorm.stream.requests_applied", int64(applied)),
		attribute.Int64("acpnorm.stream.revisions", st.revisions.Load()),
		attribute.Int64("acpnorm.stream.frame_errors", st.frameErrors.Load()),
		attribute.Int64("acpnorm.stream.store_round_trips", st.storeRoundTrips.Load()),
	)
}

// countingStore counts each round trip to the store against the stream
// whose request made it (the context carries the stream's counts).
type countingStore struct{ store.Store }

// confirmingStore is a countingStore of a store.Confirmer, which stays
// one: normalize confirms, through it, a request answered as applied
// before (Redis waiting for replicas).
type confirmingStore struct {
	countingStore
	c store.Confirmer
}

// countedParts counts the round trips of a store.PartLoader, which a
// countingStore of one stays: normalize loads a session without the
// answers it keeps, and reads one when a frame is sent again.
type countedParts struct{ p store.PartLoader }

func (c countedParts) LoadWithout(ctx context.Context, session, prefix string) (*store.Snapshot, error) {
	countTrip(ctx)
	return c.p.LoadWithout(ctx, session, prefix)
}

func (c countedParts) LoadRecord(ctx context.Context, session, name string) ([]byte, error) {
	countTrip(ctx)
	return c.p.LoadRecord(ctx, session, name)
}

// countTrips wraps st so that its round trips are counted; nil stays nil.
// What st is besides a Store (a Confirmer, a PartLoader) the wrapper is
// too.
func countTrips(st store.Store) store.Store {
	if st == nil {
		return nil
	}
	c, confirms := st.(store.Confirmer)
	p, parts := st.(store.PartLoader)
	switch {
	case confirms && parts:
		return struct {
			confirmingStore
			countedParts
		}{confirmingStore{countingStore{st}, c}, countedParts{p}}
	case confirms:
		return confirmingStore{countingStore{st}, c}
	case parts:
		return struct {
			countingStore
			countedParts
		}{countingStore{st}, countedParts{p}}
	}
	return countingStore{st}
}

func (c confirmingStore) Confirm(ctx context.Context, session string) error {
	countTrip(ctx)
	return c.c.Confirm(ctx, session)
}

func (c confirmingStore) Confirms() bool { return c.c.Confirms() }

func countTrip(ctx context.Context) {
	if st, ok := ctx.Value(streamStatsKey{}).(*streamStats); ok {
		st.storeRoundTrips.Add(1)
	}
}

func (c countingStore) Load(ctx context.Context, session string) (*store.Snapshot, error) {
	countTrip(ctx)
	return c.Store.Load(ctx, session)
}

func (c countingStore) Version(ctx context.Context, session string) (uint64, error) {
	countTrip(ctx)
	return c.Store.Version(ctx, session)
}

func (c countingStore) Commit(ctx context.Context, session string, base uint64, ch *store.Change) (uint64, error) {
	countTrip(ctx)
	return c.Store.Commit(ctx, session, base, ch)
}

func (c countingStore) Delete(ctx context.Context, session string, base uint64) error {
	countTrip(ctx)
	return c.Store.Delete(ctx, session, base)
}
