package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
)

// stallingStore holds its first commit until the gate opens, and fails
// every operation from then on (a store that stalled, then went away);
// it counts the loads of session "s".
type stallingStore struct {
	store.Store
	gate   chan struct{}
	once   sync.Once
	down   atomic.Bool
	sLoads atomic.Int32
}

var errStoreGone = errors.New("store stalled")

func (g *stallingStore) Commit(ctx context.Context, id string, base uint64, c *store.Change) (uint64, error) {
	g.once.Do(func() { <-g.gate; g.down.Store(true) })
	if g.down.Load() {
		return 0, errStoreGone
	}
	return g.Store.Commit(ctx, id, base, c)
}

func (g *stallingStore) Load(ctx context.Context, id string) (*store.Snapshot, error) {
	if id == "s" {
		g.sLoads.Add(1)
	}
	if g.down.Load() {
		return nil, errStoreGone
	}
	return g.Store.Load(ctx, id)
}

func (g *stallingStore) Version(ctx context.Context, id string) (uint64, error) {
	if g.down.Load() {
		return 0, errStoreGone
	}
	return g.Store.Version(ctx, id)
}

// Two requests of a fresh session, read ahead while the stream waits on
// the store and applied as one batch when it fails: each gets its own
// FrameError UNAVAILABLE, in order, none standing for the other.
func TestStoreFailedBatchAnswersEachRequest(t *testing.T) {
	cfg := DefaultConfig()
	gs := &stallingStore{Store: store.NewMemory(), gate: make(chan struct{})}
	cfg.Store = gs
	h := newHarness(t, cfg)
	st := h.open()
	st.send("w", openCall("c1", "ls")) // its commit waits for the gate
	a := st.send("s", openCall("c1", "ls"))
	b := st.send("s", delta("c1", "x"))
	time.Sleep(200 * time.Millisecond) // the stream reads them ahead
	close(gs.gate)
	fe := st.frameError()
	assert.EqualValues(t, 1, fe.GetSequence(), "%v", fe)
	for _, seq := range []uint64{a, b} {
		fe := st.frameError()
		assert.EqualValues(t, codes.Unavailable, fe.GetCode(), "%v", fe)
		assert.Equal(t, seq, fe.GetSequence(), "%v", fe)
		assert.Equal(t, "s", fe.GetSessionId())
		assert.Contains(t, fe.GetMessage(), fmt.Sprintf("frame %d of session \"s\" was not applied", seq))
	}
	assert.EqualValues(t, 1, gs.sLoads.Load(), "the two requests were applied as one batch")
	select {
	case r := <-st.replies:
		t.Fatalf("a reply more: %v", r)
	case <-time.After(100 * time.Millisecond):
	}
}
