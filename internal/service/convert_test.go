package service

import (
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/proto"
)

// A revision becomes the response that carries it field for field, its
// texts included (nil stays nil), and each response has texts of its own.
func TestShellExecResponse(t *testing.T) {
	code := int32(3)
	x := &normalize.ShellExec{
		SessionID: "s", ToolCallID: "c", Revision: 4, Dialect: "codex", AgentVersion: "0.16.0", Command: "make", Cwd: "/w",
		Description: "build", State: normalize.StateEnded, Outcome: normalize.Failed, ExitCode: &code, Signal: "SIGTERM",
		TimedOut: true, Output: &normalize.Text{Text: "out", Mode: normalize.Replace, Truncated: true, TotalBytes: 9},
		Stderr: &normalize.Text{Text: "err", Mode: normalize.Append, TotalBytes: 3}, ApprovalReason: "why", AwaitingApproval: true,
		Background: true, OutcomeReason: "exit 3", Sequence: 17, TerminalID: "t",
	}
	want := &pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: &pb.ShellExec{
		SessionId: "s", ToolCallId: "c", Revision: 4, Dialect: "codex", AgentVersion: "0.16.0", Command: "make", Cwd: "/w",
		Description: "build", State: pb.ShellState_SHELL_STATE_ENDED, Outcome: pb.ShellOutcome_SHELL_OUTCOME_FAILED, ExitCode: &code, Signal: "SIGTERM",
		TimedOut: true, Output: &pb.ShellText{Text: "out", Mode: pb.TextMode_TEXT_MODE_REPLACE, Truncated: true, TotalBytes: 9},
		Stderr: &pb.ShellText{Text: "err", Mode: pb.TextMode_TEXT_MODE_APPEND, TotalBytes: 3}, ApprovalReason: "why", AwaitingApproval: true,
		Background: true, OutcomeReason: "exit 3", Sequence: 17, TerminalId: "t",
	}}}
	a, b := shellExecResponse(x), shellExecResponse(x)
	assert.True(t, proto.Equal(want, a), "got %v\nwant %v", a, want)
	assert.Nil(t, a.GetShellExec().GetStdout())
	assert.NotSame(t, a.GetShellExec().GetOutput(), b.GetShellExec().GetOutput())
	assert.True(t, proto.Equal(want.GetShellExec(), shellExec(x)))
}
