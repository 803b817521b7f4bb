package service

import (
	"context"
	"fmt"
	"sync"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// A client's stream broke after the server applied (and committed, with
// a shared store) a frame whose revision the client never read. On its
// next stream it says what it holds and sends again from there; the
// frame sent again and the next one arrive together and are applied as a
// batch. The revision the first made is answered again, then the second
// one's: the client gets every revision, none is skipped. Before, the
// revision the batch's fresh frame made was recorded as carried when it
// was made, before the answer handed on again for the earlier frame was
// weighed, which was then dropped as going back.
func TestBatchHandsOnWhatWasAnsweredAgainBeforeWhatItMakes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Store = store.NewMemory()
	ss := newSessions(cfg, NewMetrics(nil), nil)
	msgs := []string{openCall("c1", "make"), delta("c1", "a\n"), delta("c1", "b\n"), finish("c1", 0)}
	frame := func(seq uint64, held map[string]uint32) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: seq, Message: []byte(msgs[seq-1]), HeldRevisions: held}}}
	}
	stream := func() (*feeder, *[]*pb.ShellExec) {
		var out []*pb.ShellExec
		d := newDelivered()
		d.setOptions(&pb.StreamOptions{SkipAppliedSequences: true})
		return ss.newFeeder(context.Background(), d, func(r *pb.NormalizeResponse) error {
			require.Nil(t, r.GetFrameError(), "%v", r)
			out = append(out, r.GetShellExec())
			return nil
		}), &out
	}
	first, out := stream()
	for seq := uint64(1); seq <= 3; seq++ {
		_, err := first.handle(frame(seq, nil), nil)
		require.NoError(t, err)
	}
	require.Len(t, *out, 3)
	// The client read revisions 1 and 2; the stream broke before 3.
	require.EqualValues(t, 3, (*out)[2].GetRevision())

	again, out := stream()
	_, err := again.handle(frame(2, map[string]uint32{"c1": 2}), nil)
	require.NoError(t, err)
	require.Empty(t, *out, "revision 2 is held by the client")
	_, err = again.handleBatch([]*pb.NormalizeRequest{frame(3, nil), frame(4, nil)}, make([]*normalize.Prepared, 2))
	require.NoError(t, err)
	var revs []uint32
	for _, x := range *out {
		revs = append(revs, x.GetRevision())
	}
	require.Equal(t, []uint32{3, 4}, revs, "revision 3, answered again, then the ENDED revision 4")
	assert.Equal(t, "b\n", (*out)[0].GetOutput().GetText())
	assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, (*out)[1].GetState())
	assert.Equal(t, "a\nb\n", (*out)[1].GetOutput().GetText())
}
