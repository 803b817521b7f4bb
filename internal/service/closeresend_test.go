package service

import (
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

// A client whose stream broke after it sent a session's last frames and
// SessionClosed sends again, on a new stream, those it had no answer to:
// every one is answered ALREADY_EXISTS (none FAILED_PRECONDITION as about
// a released call, none applied again), the close too; the first is
// answered after the ENDED revision of the call the close released, which
// the client says nothing of holding (the close kept it), once.
func TestResendAcrossCloseIsAnsweredAsApplied(t *testing.T) {
	skip := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{SkipAppliedSequences: true}}}
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work","mcpServers":[]}}`,
		openCall("c1", "make test"), delta("c1", "ok 1\n"), finish("c1", 0),
	}
	frame := func(seq uint64) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: seq, Message: []byte(msgs[seq-1])}}}
	}
	closeAt := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s1", Sequence: 5}}}
	h := newHarness(t, DefaultConfig())
	first := h.open()
	first.control(skip)
	for seq := uint64(1); seq <= 4; seq++ {
		first.control(frame(seq))
	}
	first.control(closeAt)
	for want := uint32(1); want <= 3; want++ {
		require.EqualValues(t, want, first.exec().GetRevision())
	}
	// A close that ends nothing is not answered, so the client cannot tell
	// it was applied before the stream broke; the same close sent again on
	// this stream is answered only once the first is applied.
	first.control(closeAt)
	fe := first.frameError()
	require.EqualValues(t, codes.AlreadyExists, fe.GetCode(), "%v", fe)
	first.cancel() // the answers were read here, but say the client lost them

	again := h.open()
	again.control(skip)
	for seq := uint64(2); seq <= 4; seq++ {
		again.control(frame(seq))
	}
	again.control(closeAt)
	x := again.exec()
	assert.EqualValues(t, 3, x.GetRevision(), "%v", x)
	assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, x.GetState())
	assert.Equal(t, "ok 1\n", x.GetOutput().GetText())
	for seq := uint64(2); seq <= 5; seq++ {
		fe := again.frameError()
		assert.EqualValues(t, codes.AlreadyExists, fe.GetCode(), "%v", fe)
		assert.EqualValues(t, seq, fe.GetSequence())
	}
	require.NoError(t, again.s.CloseSend())
	for r := range again.replies {
		t.Fatalf("nothing more, got %v", r)
	}
}
