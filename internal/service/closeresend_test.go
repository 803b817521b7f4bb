package service

import (
	"context"
	"testing"
	"time"

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

// An ENDED revision a close no longer keeps (past the grace period) is
// named when the close is sent again, but not to a stream whose client
// says (a claim on an earlier frame) it holds it, and once per stream.
func TestLostFinalNamedOnlyToWhoLacksIt(t *testing.T) {
	ss := newSessions(DefaultConfig(), NewMetrics(nil), nil)
	now := time.Unix(1000, 0)
	ss.now = func() time.Time { return now }
	msgs := []string{openCall("c1", "make test"), delta("c1", "ok 1\n")}
	frame := func(seq uint64, held map[string]uint32) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: seq, Message: []byte(msgs[seq-1]), HeldRevisions: held}}}
	}
	closeAt := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s1", Sequence: 3}}}
	stream := func() (*feeder, *[]*pb.NormalizeResponse) {
		var out []*pb.NormalizeResponse
		d := newDelivered()
		d.setOptions(&pb.StreamOptions{SkipAppliedSequences: true})
		return ss.newFeeder(context.Background(), d, func(r *pb.NormalizeResponse) error { out = append(out, r); return nil }), &out
	}
	named := func(out []*pb.NormalizeResponse) int {
		n := 0
		for _, r := range out {
			if fe := r.GetFrameError(); fe != nil && codes.Code(fe.GetCode()) == codes.FailedPrecondition {
				assert.Equal(t, "c1", fe.GetToolCallId())
				n++
			}
		}
		return n
	}
	first, out := stream()
	for _, req := range []*pb.NormalizeRequest{frame(1, nil), frame(2, nil), closeAt} {
		_, err := first.handle(req, nil)
		require.NoError(t, err)
	}
	ended := (*out)[len(*out)-1].GetShellExec()
	require.Equal(t, pb.ShellState_SHELL_STATE_ENDED, ended.GetState())
	now = now.Add(time.Minute) // past the grace: the close keeps it no more
	ss.n.Sweep()

	holder, out := stream()
	_, err := holder.handle(frame(2, map[string]uint32{"c1": ended.GetRevision()}), nil)
	require.NoError(t, err)
	_, err = holder.handle(closeAt, nil)
	require.NoError(t, err)
	assert.Zero(t, named(*out), "the client says it holds it: %v", *out)

	lacker, out := stream()
	for range 2 {
		_, err := lacker.handle(closeAt, nil)
		require.NoError(t, err)
	}
	assert.Equal(t, 1, named(*out), "named, once on the stream: %v", *out)
}
