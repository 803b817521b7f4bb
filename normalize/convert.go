package normalize

import (
	"github.com/acpnorm/acpnorm/internal/accum"
)

// state and outcome map the accumulator's enums onto the package's: a
// switch, not a map lookup, as they run on every revision.
func state(s accum.State) State {
	switch s {
	case accum.Pending:
		return StatePending
	case accum.Running:
		return StateRunning
	case accum.Ended:
		return StateEnded
	}
	return 0
}

func outcome(o accum.Outcome) Outcome {
	switch o {
	case accum.Succeeded:
		return Succeeded
	case accum.Failed:
		return Failed
	case accum.Cancelled:
		return Cancelled
	case accum.Unknown:
		return Unknown
	}
	return OutcomeNone
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
		AgentVersion:     s.agent.Raw(),
		Command:          r.Command,
		Cwd:              cwd,
		Description:      r.Description,
		State:            state(r.State),
		Outcome:          outcome(r.Outcome),
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
