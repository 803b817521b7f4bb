package service

import (
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
)

// shellExec turns a revision of the normalize package into the ShellExec
// sent to clients. The two mirror each other field for field, and their
// enums share their numbers.
func shellExec(x *normalize.ShellExec) *pb.ShellExec {
	return shellExecResponse(x).GetShellExec()
}

// execResponse is a response carrying a ShellExec, with its oneof and its
// texts in one allocation instead of up to six (one per revision, which
// is about one every three frames).
type execResponse struct {
	resp  pb.NormalizeResponse
	kind  pb.NormalizeResponse_ShellExec
	exec  pb.ShellExec
	texts [3]pb.ShellText
}

// shellExecResponse is the response that carries x.
func shellExecResponse(x *normalize.ShellExec) *pb.NormalizeResponse {
	r := new(execResponse)
	fillShellExec(&r.exec, x, &r.texts)
	r.kind.ShellExec = &r.exec
	r.resp.Kind = &r.kind
	return &r.resp
}

// fillShellExec sets out to x, with its texts in texts.
func fillShellExec(out *pb.ShellExec, x *normalize.ShellExec, texts *[3]pb.ShellText) {
	*out = pb.ShellExec{
		SessionId:        x.SessionID,
		ToolCallId:       x.ToolCallID,
		Revision:         x.Revision,
		Dialect:          x.Dialect,
		AgentVersion:     x.AgentVersion,
		Command:          x.Command,
		Cwd:              x.Cwd,
		Description:      x.Description,
		State:            pb.ShellState(x.State),
		Outcome:          pb.ShellOutcome(x.Outcome),
		ExitCode:         x.ExitCode,
		Signal:           x.Signal,
		TimedOut:         x.TimedOut,
		Output:           shellText(x.Output, &texts[0]),
		Stdout:           shellText(x.Stdout, &texts[1]),
		Stderr:           shellText(x.Stderr, &texts[2]),
		ApprovalReason:   x.ApprovalReason,
		AwaitingApproval: x.AwaitingApproval,
		Background:       x.Background,
		OutcomeReason:    x.OutcomeReason,
		Sequence:         x.Sequence,
		TerminalId:       x.TerminalID,
	}
}

// shellText sets out to t and returns it (nil when t is nil).
func shellText(t *normalize.Text, out *pb.ShellText) *pb.ShellText {
	if t == nil {
		return nil
	}
	out.Text, out.Mode, out.Truncated, out.TotalBytes = t.Text, pb.TextMode(t.Mode), t.Truncated, t.TotalBytes
	return out
}
