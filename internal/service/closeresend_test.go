package service

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store/redisstore"
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

// drain ends what st sends and returns every reply left on it.
func (st *stream) drain() []*pb.NormalizeResponse {
	st.t.Helper()
	require.NoError(st.t, st.s.CloseSend())
	var out []*pb.NormalizeResponse
	for r := range st.replies {
		out = append(out, r)
	}
	return out
}

// With a shared Redis store, a SessionClosed whose answer is too large
// to keep whole (30 calls of 10 KB of output) and whose stream broke is
// sent again to another replica: every call's ENDED revision comes
// again, whole, and none is named FAILED_PRECONDITION (before, every one
// was, and none came).
func TestLargeCloseSentAgainToAnotherReplica(t *testing.T) {
	st, err := redisstore.Open(testredis.Start(t))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	cfg := DefaultConfig()
	cfg.Store = st
	skip := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{SkipAppliedSequences: true}}}
	out := strings.Repeat("0123456789", 1000)
	var msgs []string
	for i := range 30 {
		id := fmt.Sprintf("c%02d", i)
		msgs = append(msgs, openCall(id, "cat f"), delta(id, out))
	}
	closeAt := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s1", Sequence: uint64(len(msgs) + 1)}}}

	first := newHarness(t, cfg).open()
	first.control(skip)
	for i, m := range msgs {
		first.control(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: uint64(i + 1), Message: []byte(m)}}})
	}
	first.control(closeAt)
	ended := map[string]uint32{}
	for len(ended) < 30 {
		if x := first.exec(); x.GetState() == pb.ShellState_SHELL_STATE_ENDED {
			ended[x.GetToolCallId()] = x.GetRevision()
		}
	}
	first.cancel() // say the client lost the close's answers

	again := newHarness(t, cfg).open()
	again.control(skip)
	again.control(closeAt)
	got := map[string]bool{}
	for _, r := range again.drain() {
		if fe := r.GetFrameError(); fe != nil {
			t.Errorf("no FrameError, got %v", fe)
			continue
		}
		x := r.GetShellExec()
		assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, x.GetState(), "%v", x.GetToolCallId())
		assert.Equal(t, ended[x.GetToolCallId()], x.GetRevision(), x.GetToolCallId())
		assert.Equal(t, out, x.GetOutput().GetText(), "%s: the whole output", x.GetToolCallId())
		got[x.GetToolCallId()] = true
	}
	assert.Len(t, got, 30, "every call's ENDED revision")
}

// Without a store, a SessionClosed sent again after the close's mark was
// pushed out of the tombstones (--tombstones) is answered
// FAILED_PRECONDITION naming the session, not left unanswered.
func TestCloseSentAgainAfterItsMarkWent(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tombstones = 4
	h := newHarness(t, cfg)
	skip := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{SkipAppliedSequences: true}}}
	closeOf := func(sid string, seq uint64) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid, Sequence: seq}}}
	}
	first := h.open()
	first.control(skip)
	for _, sid := range []string{"s1", "o1", "o2", "o3", "o4"} { // the others push s1's mark out
		first.control(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: sid, Sequence: 1, Message: []byte(openCall("c1", "ls"))}}})
		first.control(closeOf(sid, 2))
	}
	first.drain()

	again := h.open()
	again.control(skip)
	again.control(closeOf("s1", 2))
	replies := again.drain()
	require.Len(t, replies, 1, "%v", replies)
	fe := replies[0].GetFrameError()
	require.NotNil(t, fe, "%v", replies[0])
	assert.EqualValues(t, codes.FailedPrecondition, fe.GetCode())
	assert.Equal(t, "s1", fe.GetSessionId())
	assert.EqualValues(t, 2, fe.GetSequence())
	assert.Contains(t, fe.GetMessage(), "no session")
}
