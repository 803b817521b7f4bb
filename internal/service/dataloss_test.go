package service

import (
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

// A client that says on a new stream what it holds of a session
// (held_revisions) is told DATA_LOSS (15) by a server that lost it (here:
// a restarted process without a store), the frame is not applied, the
// trailer stops counting there, and the loss is counted. Sent again from
// the first frame, the session is rebuilt without a call going back.
func TestDataLossOverTheWire(t *testing.T) {
	skip := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{SkipAppliedSequences: true}}}
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work","mcpServers":[]}}`,
		openCall("c1", "make test"), delta("c1", "ok 1\n"), delta("c1", "ok 2\n"), finish("c1", 0),
	}
	first := newHarness(t, DefaultConfig()).open()
	first.control(skip)
	for _, m := range msgs[:4] {
		first.send("s1", m)
	}
	for want := uint32(1); want <= 3; want++ {
		require.EqualValues(t, want, first.exec().GetRevision())
	}

	h := newHarness(t, DefaultConfig()) // the process restarted: nothing kept
	st := h.open()
	st.control(skip)
	frame := func(seq uint64, held map[string]uint32) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: seq, Message: []byte(msgs[seq-1]), HeldRevisions: held}}}
	}
	st.control(frame(5, map[string]uint32{"c1": 3}))
	fe := st.frameError()
	require.EqualValues(t, codes.DataLoss, fe.GetCode(), "%v", fe)
	assert.Contains(t, fe.GetMessage(), `call "c1": revision 3 was handed on, the session has none`)
	// Without a store the FrameError is on the wire before the engine's
	// hook counts the loss (the counter moves once the request is done).
	assert.Eventually(t, func() bool { return testutil.ToFloat64(h.svc.sessions.m.dataLosses) == 1.0 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 1.0, testutil.ToFloat64(h.svc.sessions.m.dataLosses))
	assert.Equal(t, 1.0, testutil.ToFloat64(h.svc.sessions.m.frameErrors.WithLabelValues(codes.DataLoss.String())))

	// Rebuilt from the first frame: revisions 1 to 3 of c1 are not sent
	// again; the end comes above them, whole.
	for seq := uint64(1); seq <= 5; seq++ {
		st.control(frame(seq, nil))
	}
	x := st.exec()
	assert.EqualValues(t, 4, x.GetRevision())
	assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, x.GetState())
	assert.Equal(t, pb.TextMode_TEXT_MODE_REPLACE, x.GetOutput().GetMode())
	assert.Equal(t, "ok 1\nok 2\n", x.GetOutput().GetText())
	require.NoError(t, st.s.CloseSend())
	for range st.replies {
		t.Fatal("nothing more")
	}
	assert.Equal(t, "1", st.s.Trailer().Get(TrailerRequestsApplied)[0], "the options request; the count stops at the DATA_LOSS frame")
}

// A client that holds no call yet (its frames so far made no revision,
// as the initialize exchange does) still says how far it was answered
// (held_sequence): a server that lost those frames answers DATA_LOSS
// naming both sequences, applies nothing, and counts the loss.
func TestDataLossFromHeldSequenceOverTheWire(t *testing.T) {
	skip := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{SkipAppliedSequences: true}}}
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"x"}}`,
		openCall("c1", "make test"),
	}
	frame := func(seq, held uint64) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: seq, Message: []byte(msgs[seq-1]), HeldSequence: held}}}
	}
	h := newHarness(t, DefaultConfig()) // a restarted process: nothing kept
	st := h.open()
	st.control(skip)
	st.control(frame(3, 2))
	fe := st.frameError()
	require.EqualValues(t, codes.DataLoss, fe.GetCode(), "%v", fe)
	assert.Contains(t, fe.GetMessage(), `session "s1"`)
	assert.Contains(t, fe.GetMessage(), "sequence 2 was answered, the session has no sequence")
	// As in TestDataLossOverTheWire: the counter moves once the request
	// is done, after its FrameError is on the wire.
	assert.Eventually(t, func() bool { return testutil.ToFloat64(h.svc.sessions.m.dataLosses) == 1.0 }, 5*time.Second, time.Millisecond)

	// Rebuilt from the first frame; said again, it is no loss.
	for seq := uint64(1); seq <= 3; seq++ {
		st.control(frame(seq, 0))
	}
	assert.EqualValues(t, 1, st.exec().GetRevision())
	again := h.open()
	again.control(skip)
	again.control(frame(3, 3))
	assert.EqualValues(t, codes.AlreadyExists, again.frameError().GetCode())
	assert.Equal(t, 1.0, testutil.ToFloat64(h.svc.sessions.m.dataLosses))
}
