package chaos

import (
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
)

func execResp(call string, rev uint32, seq uint64, state pb.ShellState) *pb.NormalizeResponse {
	return &pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: &pb.ShellExec{
		SessionId: "s", ToolCallId: call, Revision: rev, Sequence: seq, State: state, Command: "make"}}}
}

// The wire watch tells a call restarted from lost state from what a
// retry legitimately repeats, without the server saying anything.
func TestWireSeesACallGoingBack(t *testing.T) {
	running, ended := pb.ShellState_SHELL_STATE_RUNNING, pb.ShellState_SHELL_STATE_ENDED
	for _, tc := range []struct {
		name string
		resp []*pb.NormalizeResponse
		back int
	}{
		{"in order", []*pb.NormalizeResponse{execResp("c", 1, 1, running), execResp("c", 2, 2, running), execResp("c", 3, 3, ended)}, 0},
		{"a retry answered again the same", []*pb.NormalizeResponse{execResp("c", 1, 1, running), execResp("c", 2, 2, running), execResp("c", 1, 1, running), execResp("c", 2, 2, running)}, 0},
		{"a revision missed, then answered late", []*pb.NormalizeResponse{execResp("c", 1, 1, running), execResp("c", 3, 4, running), execResp("c", 2, 2, running)}, 0},
		{"restarted at revision 1 by a later frame", []*pb.NormalizeResponse{execResp("c", 1, 1, running), execResp("c", 2, 2, running), execResp("c", 1, 5, running)}, 1},
		{"a revision number again with other content", []*pb.NormalizeResponse{execResp("c", 1, 1, running), execResp("c", 2, 2, running), execResp("c", 2, 2, ended)}, 1},
		{"another call's numbers are its own", []*pb.NormalizeResponse{execResp("c", 1, 1, running), execResp("c", 2, 2, running), execResp("d", 1, 3, running)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWire()
			for _, r := range tc.resp {
				w.see(r)
			}
			assert.Len(t, w.goingBack, tc.back, "%v", w.goingBack)
		})
	}
	w := newWire()
	w.see(&pb.NormalizeResponse{Kind: &pb.NormalizeResponse_FrameError{FrameError: &pb.FrameError{SessionId: "s", Code: int32(codes.DataLoss)}}})
	assert.Equal(t, 1, w.dataLoss["s"])
}

// A final that differs from one process's is found, the session id,
// sequence and revision number aside.
func TestDiffers(t *testing.T) {
	final := func(rev uint32, seq uint64, exit int32) *pb.ShellExec {
		return &pb.ShellExec{SessionId: "x", ToolCallId: "c", Revision: rev, Sequence: seq, State: pb.ShellState_SHELL_STATE_ENDED, ExitCode: &exit}
	}
	ref := &reference{finals: []*pb.ShellExec{final(3, 9, 0)}}
	assert.Empty(t, differs(ref, []*pb.ShellExec{final(7, 4, 0)}, nil), "rebuilt above what was held: the same final")
	assert.NotEmpty(t, differs(ref, []*pb.ShellExec{final(3, 9, 2)}, nil), "another exit code")
	assert.NotEmpty(t, differs(ref, nil, nil), "a call missing")
	assert.NotEmpty(t, differs(ref, []*pb.ShellExec{final(3, 9, 0)}, []*pb.FrameError{{Code: 3, Message: "bad"}}), "a FrameError one process did not give")
}

// Late-frame errors about calls the close released are set apart only
// when every final is right; any other FrameError still counts.
func TestWithoutAfterClose(t *testing.T) {
	late := &pb.FrameError{Code: int32(codes.FailedPrecondition), Message: `frame 162 of session "s": tool call "c" was released when its session was closed; it ended FAILED after 5 revisions, and a released call is never reopened`}
	other := &pb.FrameError{Code: int32(codes.FailedPrecondition), Message: `frame 3 of session "s" is about terminal "t", which no tool call has shown as its terminal content`}
	assert.Empty(t, withoutAfterClose([]*pb.FrameError{late}))
	assert.Equal(t, []*pb.FrameError{other}, withoutAfterClose([]*pb.FrameError{late, other}))
}

// Only a session whose client sent sequence 1 again can be set apart: the
// server answers any other request sent again after the close as applied.
func TestResentFirst(t *testing.T) {
	w := newWire()
	w.firstSent["once"] = 1
	w.firstSent["twice"] = 2
	assert.False(t, w.resentFirst("once"))
	assert.True(t, w.resentFirst("twice"))
	assert.False(t, w.resentFirst("never"))
}
