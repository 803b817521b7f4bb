package service

import (
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

// A client pipelines: the frames it sent behind one answered DATA_LOSS
// reach the server before the client reads that answer. They are not
// applied either (applied to the session the store went back to, their
// sequences would make the rebuild from the first frame be skipped as
// already applied, and a call would never end). Sent again from the first
// frame on the same stream, the session is rebuilt whole.
func TestFramesBehindANotAppliedOneAreNotApplied(t *testing.T) {
	skip := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{SkipAppliedSequences: true}}}
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work","mcpServers":[]}}`,
		openCall("c1", "make test"), delta("c1", "ok 1\n"), delta("c1", "ok 2\n"), finish("c1", 0), openCall("c2", "ls"),
	}
	frame := func(seq uint64, held map[string]uint32) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: seq, Message: []byte(msgs[seq-1]), HeldRevisions: held}}}
	}
	first := newHarness(t, DefaultConfig()).open()
	first.control(skip)
	for seq := uint64(1); seq <= 4; seq++ {
		first.control(frame(seq, nil))
	}
	for want := uint32(1); want <= 3; want++ {
		require.EqualValues(t, want, first.exec().GetRevision())
	}

	st := newHarness(t, DefaultConfig()).open() // a process that kept nothing
	st.control(skip)
	st.control(frame(5, map[string]uint32{"c1": 3}))
	st.control(frame(6, nil)) // sent before the answer to 5 was read
	st.control(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{SessionId: "s1", Sequence: 7}}})
	require.EqualValues(t, codes.DataLoss, st.frameError().GetCode())
	for _, seq := range []uint64{6, 7} {
		fe := st.frameError()
		assert.EqualValues(t, codes.DataLoss, fe.GetCode(), "%v", fe)
		assert.EqualValues(t, seq, fe.GetSequence())
		assert.Contains(t, fe.GetMessage(), "request 5 of the session before it on this stream was refused (DataLoss); send again from 5")
	}

	for seq := uint64(1); seq <= 6; seq++ {
		st.control(frame(seq, nil))
	}
	x := st.exec()
	assert.Equal(t, "c1", x.GetToolCallId())
	assert.EqualValues(t, 4, x.GetRevision())
	assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, x.GetState())
	assert.Equal(t, "ok 1\nok 2\n", x.GetOutput().GetText())
	x = st.exec()
	assert.Equal(t, "c2", x.GetToolCallId())
	assert.EqualValues(t, 1, x.GetRevision())
	require.NoError(t, st.s.CloseSend())
	for r := range st.replies {
		t.Fatalf("nothing more, got %v", r)
	}
	assert.Equal(t, "1", st.s.Trailer().Get(TrailerRequestsApplied)[0], "the count stops at the DATA_LOSS frame")
}

// Without skip_applied_sequences the sequences say nothing about order,
// and the frames behind a refused one are applied as before.
func TestFramesBehindARefusalWithoutSequencesApply(t *testing.T) {
	st := newHarness(t, DefaultConfig()).open()
	st.control(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: 1, Message: []byte(openCall("c1", "ls")), HeldRevisions: map[string]uint32{"c0": 2}}}})
	st.control(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: 2, Message: []byte(openCall("c2", "pwd"))}}})
	require.EqualValues(t, codes.DataLoss, st.frameError().GetCode())
	assert.Equal(t, "c2", st.exec().GetToolCallId())
}
