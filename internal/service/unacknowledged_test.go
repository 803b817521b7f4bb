package service

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/acpnorm/acpnorm/store"
)

// keptButFailedStore applies a commit and then, once armed, reports it
// failed: what a client of a networked store sees when the reply to a
// commit that applied is lost, or when too few replicas acknowledged it
// (Redis WAIT).
type keptButFailedStore struct {
	store.Store
	arm atomic.Bool
}

func (s *keptButFailedStore) Commit(ctx context.Context, id string, base uint64, c *store.Change) (uint64, error) {
	v, err := s.Store.Commit(ctx, id, base, c)
	if err == nil && s.arm.CompareAndSwap(true, false) {
		return 0, errors.New("the commit applied, but its answer was lost")
	}
	return v, err
}

// A frame answered UNAVAILABLE whose commit the store kept: sent again
// (skipping applied sequences) it is answered with the revision it made,
// kept with its commit, and the call's next revision follows it. Sent
// again once more after that, the answer would go back: the stream drops
// it.
func TestUnavailableRevisionNotCountedAsDelivered(t *testing.T) {
	cfg := DefaultConfig()
	st0 := &keptButFailedStore{Store: store.NewMemory()}
	cfg.Store = st0
	h := newHarness(t, cfg)
	st := h.open()
	st.control(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{SkipAppliedSequences: true}}})
	st.send("s1", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work","mcpServers":[]}}`)
	st.send("s1", openCall("c1", "make test"))
	require.EqualValues(t, 1, st.exec().GetRevision())
	st.send("s1", delta("c1", "ok 1\n"))
	require.EqualValues(t, 2, st.exec().GetRevision())

	st0.arm.Store(true)
	lost := st.send("s1", delta("c1", "ok 2\n"))
	fe := st.frameError()
	require.EqualValues(t, codes.Unavailable, fe.GetCode(), "%v", fe)
	again := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: lost, Message: []byte(delta("c1", "ok 2\n"))}}}
	st.control(again)
	x := st.exec()
	assert.EqualValues(t, 3, x.GetRevision(), "the frame's own revision, kept with its commit")
	assert.Equal(t, "ok 2\n", x.GetOutput().GetText())
	assert.Equal(t, pb.TextMode_TEXT_MODE_APPEND, x.GetOutput().GetMode())

	st.send("s1", delta("c1", "ok 3\n"))
	x = st.exec()
	assert.EqualValues(t, 4, x.GetRevision())
	assert.Equal(t, pb.TextMode_TEXT_MODE_APPEND, x.GetOutput().GetMode(), "revision 4 follows 3 on the stream")
	assert.Equal(t, "ok 3\n", x.GetOutput().GetText())

	st.control(again) // revision 3 again, after 4: dropped
	st.send("s1", delta("c1", "ok 4\n"))
	x = st.exec()
	assert.EqualValues(t, 5, x.GetRevision(), "nothing went back before it")
}
