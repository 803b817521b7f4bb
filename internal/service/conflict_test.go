package service

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/acpnorm/acpnorm/fold"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// conflictCounter counts the commits another replica beat.
type conflictCounter struct {
	store.Store
	conflicts atomic.Int32
}

func (c *conflictCounter) Commit(ctx context.Context, id string, base uint64, ch *store.Change) (uint64, error) {
	v, err := c.Store.Commit(ctx, id, base, ch)
	if errors.Is(err, store.ErrConflict) {
		c.conflicts.Add(1)
	}
	return v, err
}

// replicaStream is one client stream on one replica: what it receives is
// folded as the Go client folds it, and a revision that leaves a hole in
// the client's text (a gap the revision does not make whole) fails the
// test.
type replicaStream struct {
	t      *testing.T
	f      *feeder
	folder fold.Folder
	got    map[string][]*pb.ShellExec // per call, the revisions received in order
}

func newReplicaStream(t *testing.T, ss *sessions) *replicaStream {
	rs := &replicaStream{t: t, got: map[string][]*pb.ShellExec{}}
	rs.f = ss.newFeeder(context.Background(), newDelivered(), func(r *pb.NormalizeResponse) error {
		require.Nil(t, r.GetFrameError(), "%v", r)
		x := r.GetShellExec()
		if err := rs.folder.Apply(x); err != nil {
			var fe *fold.Error
			require.ErrorAs(t, err, &fe)
			require.True(t, fe.Applied, "revision %d of %q after %v: %v (the client's text has a hole)",
				x.GetRevision(), x.GetToolCallId(), rs.revs(x.GetToolCallId()), err)
		}
		rs.got[x.GetToolCallId()] = append(rs.got[x.GetToolCallId()], x)
		return nil
	})
	return rs
}

func (rs *replicaStream) send(msg string) {
	rs.t.Helper()
	_, err := rs.f.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Message: []byte(msg)}}}, nil)
	require.NoError(rs.t, err)
}

// revs are the numbers of the call's revisions received, in order.
func (rs *replicaStream) revs(call string) []uint32 {
	var revs []uint32
	for _, x := range rs.got[call] {
		revs = append(revs, x.GetRevision())
	}
	return revs
}

// output is the call's folded output as the client holds it.
func (rs *replicaStream) output(call string) string {
	x := rs.folder.State(fold.Key{SessionID: "s1", ToolCallID: call})
	require.NotNil(rs.t, x, "no revision of %q", call)
	return x.GetOutput().GetText()
}

// twoReplicas returns streams on two replicas sharing a store, which
// counts the commits that conflicted.
func twoReplicas(t *testing.T) (one, two *replicaStream, st *conflictCounter) {
	cfg := DefaultConfig()
	st = &conflictCounter{Store: store.NewMemory()}
	cfg.Store = st
	return newReplicaStream(t, newSessions(cfg, NewMetrics(nil), nil)), newReplicaStream(t, newSessions(cfg, NewMetrics(nil), nil)), st
}

// Two replicas serve one session from a shared store. A client's stream
// on the first carried revisions 1 and 2 of a call; the second replica
// then made revision 3 (for another stream). The first replica's next
// frame is applied to its cached session, which is behind: the commit
// conflicts, and the frame is applied again on the session loaded from
// the store, making revision 4. The first try's revision 3 was never
// handed on, so revision 4 must carry the output whole, or the client
// misses what revision 3 added. Before, the stream counted the thrown-
// away revision 3 as made, and revision 4 appended to a hole.
func TestConflictRetryDoesNotCountDiscardedRevisions(t *testing.T) {
	msgs := []string{openCall("c1", "make"), delta("c1", "a\n"), delta("c1", "b\n"), delta("c1", "c\n"), delta("c1", "d\n"), finish("c1", 0)}
	// On the stream that gets every revision, without a store.
	direct := newReplicaStream(t, newSessions(DefaultConfig(), NewMetrics(nil), nil))
	for _, m := range msgs {
		direct.send(m)
	}

	one, two, st := twoReplicas(t)
	one.send(msgs[0])
	one.send(msgs[1])
	two.send(msgs[2]) // revision 3, on the other replica's stream
	one.send(msgs[3]) // conflicts on the first try
	require.EqualValues(t, 1, st.conflicts.Load(), "the first try's commit conflicted")
	one.send(msgs[4])
	one.send(msgs[5])

	assert.Equal(t, []uint32{3}, two.revs("c1"))
	require.Equal(t, []uint32{1, 2, 4, 5, 6}, one.revs("c1"))
	assert.Equal(t, pb.TextMode_TEXT_MODE_REPLACE, one.got["c1"][2].GetOutput().GetMode(), "revision 4 follows 2: whole")
	assert.Equal(t, pb.TextMode_TEXT_MODE_APPEND, one.got["c1"][3].GetOutput().GetMode(), "revision 5 follows 4")
	assert.Equal(t, direct.output("c1"), one.output("c1"))
}

// When the other replica changed only another call, the retry makes the
// same revision of the call again, which follows what the stream sent:
// it appends. Before, it was weighed against the thrown-away try's
// revision of the same number, and sent whole.
func TestConflictRetryAppendsWhatFollows(t *testing.T) {
	one, two, st := twoReplicas(t)
	one.send(openCall("c1", "make"))
	one.send(delta("c1", "a\n"))
	two.send(openCall("c2", "ls")) // the session changes, c1 does not
	one.send(delta("c1", "b\n"))
	require.EqualValues(t, 1, st.conflicts.Load(), "the first try's commit conflicted")
	require.Equal(t, []uint32{1, 2, 3}, one.revs("c1"))
	x := one.got["c1"][2]
	assert.Equal(t, pb.TextMode_TEXT_MODE_APPEND, x.GetOutput().GetMode())
	assert.Equal(t, "b\n", x.GetOutput().GetText())
	assert.Equal(t, "a\nb\n", one.output("c1"))
}
