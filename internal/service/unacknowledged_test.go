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
// (skipping applied sequences) it is ALREADY_EXISTS, and its revision
// never reached the stream, so the call's next revision on the stream
// carries every text whole; a client's copy is whole again.
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
	st.control(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: lost, Message: []byte(delta("c1", "ok 2\n"))}}})
	fe = st.frameError()
	require.EqualValues(t, codes.AlreadyExists, fe.GetCode(), "%v", fe)

	st.send("s1", delta("c1", "ok 3\n"))
	x := st.exec()
	assert.EqualValues(t, 4, x.GetRevision())
	assert.Equal(t, pb.TextMode_TEXT_MODE_REPLACE, x.GetOutput().GetMode(), "revision 4 after the stream carried 1 and 2 only")
	assert.Equal(t, "ok 1\nok 2\nok 3\n", x.GetOutput().GetText())
}
