package service

import (
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/accum"
)

var states = map[accum.State]pb.ShellState{
	accum.Pending: pb.ShellState_SHELL_STATE_PENDING,
	accum.Running: pb.ShellState_SHELL_STATE_RUNNING,
	accum.Ended:   pb.ShellState_SHELL_STATE_ENDED,
}

var outcomes = map[accum.Outcome]pb.ShellOutcome{
	accum.OutcomeNone: pb.ShellOutcome_SHELL_OUTCOME_UNSPECIFIED,
	accum.Succeeded:   pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED,
	accum.Failed:      pb.ShellOutcome_SHELL_OUTCOME_FAILED,
	accum.Cancelled:   pb.ShellOutcome_SHELL_OUTCOME_CANCELLED,
	accum.Unknown:     pb.ShellOutcome_SHELL_OUTCOME_UNKNOWN,
}

// toProto turns a call revision into the ShellExec sent to clients. A call
// that never said where it runs runs in the session's directory.
func (s *session) toProto(r *accum.Revision, seq uint64) *pb.ShellExec {
	cwd := r.Cwd
	if cwd == "" {
		cwd = s.cwd
	}
	return &pb.ShellExec{
		SessionId:        s.id,
		ToolCallId:       r.ToolCallID,
		Revision:         r.Number,
		Dialect:          s.dialectName(),
		Command:          r.Command,
		Cwd:              cwd,
		Description:      r.Description,
		State:            states[r.State],
		Outcome:          outcomes[r.Outcome],
		ExitCode:         r.ExitCode,
		Signal:           r.Signal,
		TimedOut:         r.TimedOut,
		Output:           text(r.Texts[accum.Combined]),
		Stdout:           text(r.Texts[accum.Stdout]),
		Stderr:           text(r.Texts[accum.Stderr]),
		ApprovalReason:   r.ApprovalReason,
		AwaitingApproval: r.Awaiting,
		Background:       r.Background,
		OutcomeReason:    r.OutcomeReason,
		Sequence:         seq,
		TerminalId:       r.TerminalID,
	}
}

func text(c *accum.Chunk) *pb.ShellText {
	if c == nil {
		return nil
	}
	mode := pb.TextMode_TEXT_MODE_APPEND
	if c.Replace {
		mode = pb.TextMode_TEXT_MODE_REPLACE
	}
	return &pb.ShellText{Text: c.Text, Mode: mode, Truncated: c.Truncated, TotalBytes: c.TotalBytes}
}
