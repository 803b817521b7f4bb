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
// that never said where it runs runs in the session's directory. The
// ShellExec and its texts are one allocation, sized for the texts it has
// (most revisions carry one or none).
func (s *session) toExec(r *accum.Revision, seq uint64) *ShellExec {
	cwd := r.Cwd
	if cwd == "" {
		cwd = s.cwd
	}
	var x *ShellExec
	var room []Text // for its texts, in stream order
	switch n := texts(r); {
	case n == 0:
		x = new(ShellExec)
	case n == 1:
		b := new(struct {
			x    ShellExec
			text [1]Text
		})
		x, room = &b.x, b.text[:]
	default:
		b := new(struct {
			x     ShellExec
			texts [accum.NumStreams]Text
		})
		x, room = &b.x, b.texts[:]
	}
	*x = ShellExec{
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
		ApprovalReason:   r.ApprovalReason,
		AwaitingApproval: r.Awaiting,
		Background:       r.Background,
		OutcomeReason:    r.OutcomeReason,
		Sequence:         seq,
		TerminalID:       r.TerminalID,
	}
	x.Output, room = text(r.Texts[accum.Combined], room)
	x.Stdout, room = text(r.Texts[accum.Stdout], room)
	x.Stderr, _ = text(r.Texts[accum.Stderr], room)
	return x
}

// texts counts the texts of r.
func texts(r *accum.Revision) int {
	n := 0
	for _, c := range r.Texts {
		if c != nil {
			n++
		}
	}
	return n
}

// text sets room[0] to c and returns it and the room left (nil and room
// when c is nil).
func text(c *accum.Chunk, room []Text) (*Text, []Text) {
	if c == nil {
		return nil, room
	}
	mode := Append
	if c.Replace {
		mode = Replace
	}
	room[0] = Text{Text: c.Text, Mode: mode, Truncated: c.Truncated, TotalBytes: c.TotalBytes}
	return &room[0], room[1:]
}
