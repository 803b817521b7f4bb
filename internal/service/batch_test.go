package service

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/acpnorm/acpnorm/store"
	"google.golang.org/protobuf/encoding/prototext"
)

// gatedStore holds its first commit until the gate opens, and counts
// commits.
type gatedStore struct {
	store.Store
	gate    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	commits int
}

func (g *gatedStore) Commit(ctx context.Context, id string, base uint64, c *store.Change) (uint64, error) {
	g.once.Do(func() { <-g.gate })
	g.mu.Lock()
	g.commits++
	g.mu.Unlock()
	return g.Store.Commit(ctx, id, base, c)
}

// With a shared store, frames of one session that a stream has read
// before the loop gets to them are applied as one batch, with one commit:
// the client gets exactly the responses that applying them one by one
// without a store gives.
func TestStoreBatchesQueuedFrames(t *testing.T) {
	msgs := []string{openCall("c1", "seq 1 40")}
	for i := 1; i <= 40; i++ {
		msgs = append(msgs, delta("c1", fmt.Sprintf("%d\n", i)))
	}
	msgs = append(msgs, finish("c1", 0))
	play := func(cfg Config, sent func()) []string {
		h := newHarness(t, cfg)
		st := h.open()
		for _, m := range msgs {
			st.send("s", m)
		}
		if sent != nil {
			sent()
		}
		var got []string
		for range msgs {
			got = append(got, prototext.Format(st.exec()))
		}
		return got
	}
	want := play(DefaultConfig(), nil)

	cfg := DefaultConfig()
	gs := &gatedStore{Store: store.NewMemory(), gate: make(chan struct{})}
	cfg.Store = gs
	// The first frame's commit waits until every frame was sent, so the
	// reader has queued the next ones by the time the loop takes them.
	got := play(cfg, func() { close(gs.gate) })
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("response %d with batches:\n%s\nwithout a store:\n%s", i+1, got[i], want[i])
		}
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.commits >= len(msgs) {
		t.Fatalf("%d commits for %d frames: nothing was batched", gs.commits, len(msgs))
	}
	t.Logf("%d frames, %d commits", len(msgs), gs.commits)
}
