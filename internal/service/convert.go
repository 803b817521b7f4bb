package service

import (
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
)

// shellExec turns a revision of the normalize package into the ShellExec
// sent to clients. The two mirror each other field for field, and their
// enums share their numbers.
func shellExec(x *normalize.ShellExec) *pb.ShellExec {
	return &pb.ShellExec{
		SessionId:        x.SessionID,
		ToolCallId:       x.ToolCallID,
		Revision:         x.Revision,
		Dialect:          x.Dialect,
		Command:          x.Command,
		Cwd:              x.Cwd,
		Description:      x.Description,
		State:            pb.ShellState(x.State),
		Outcome:          pb.ShellOutcome(x.Outcome),
		ExitCode:         x.ExitCode,
		Signal:           x.Signal,
		TimedOut:         x.TimedOut,
		Output:           shellText(x.Output),
		Stdout:           shellText(x.Stdout),
		Stderr:           shellText(x.Stderr),
		ApprovalReason:   x.ApprovalReason,
		AwaitingApproval: x.AwaitingApproval,
		Background:       x.Background,
		OutcomeReason:    x.OutcomeReason,
		Sequence:         x.Sequence,
		TerminalId:       x.TerminalID,
	}
}

func shellText(t *normalize.Text) *pb.ShellText {
	if t == nil {
		return nil
	}
	return &pb.ShellText{Text: t.Text, Mode: pb.TextMode(t.Mode), Truncated: t.Truncated, TotalBytes: t.TotalBytes}
}
