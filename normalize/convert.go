package normalize

import (
	"github.com/acpnorm/acpnorm/internal/accum"
)

var states = map[accum.State]State{
	accum.Pending: StatePending,
	accum.Running: StateRunning,
	accum.Ended:   StateEnded,
}

var outcomes = map[accum.Outcome]Outcome{
	accum.OutcomeNone: OutcomeNone,
	accum.Succeeded:   Succeeded,
	accum.Failed:      Failed,
	accum.Cancelled:   Cancelled,
	accum.Unknown:     Unknown,
}

// toExec turns a call revision into the ShellExec handed on. A call
// that never said where it runs runs in the session's directory.
func (s *session) toExec(r *accum.Revision, seq uint64) *ShellExec {
	cwd := r.Cwd
	if cwd == "" {
		cwd = s.cwd
	}
	return &ShellExec{
		SessionID:        s.id,
		ToolCallID:       r.ToolCallID,
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
		TerminalID:       r.TerminalID,
	}
}

func text(c *accum.Chunk) *Text {
	if c == nil {
		return nil
	}
	mode := Append
	if c.Replace {
		mode = Replace
	}
	return &Text{Text: c.Text, Mode: mode, Truncated: c.Truncated, TotalBytes: c.TotalBytes}
}
