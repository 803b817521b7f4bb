package test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
)

// Every recording gives, response for response, the same revisions and
// FrameErrors through the gRPC service as fed to the normalize package
// in-process: the service adds nothing to the engine's semantics.
func TestServiceMatchesEmbeddedNormalize(t *testing.T) {
	c := inProcess(t)
	for _, file := range recordings(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".ndjson")
		t.Run(name, func(t *testing.T) {
			var viaService []string
			for _, r := range play(t, c, file) {
				viaService = append(viaService, describeResponse(r))
			}

			lines := readLines(t, file)
			var embedded []string
			emit := normalize.WithEmit(func(ev normalize.Event) error {
				embedded = append(embedded, describeEvent(ev))
				return nil
			})
			n := normalize.New()
			var last uint64
			for _, l := range lines {
				last = uint64(l.Number)
				if _, err := n.Feed(name, l.Msg, normalize.WithDialect("auto"), normalize.WithSequence(last), emit); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := n.CloseSession(name, normalize.WithSequence(last+1), emit); err != nil {
				t.Fatal(err)
			}

			if len(embedded) == 0 {
				t.Fatal("the recording produced nothing")
			}
			if got, want := strings.Join(embedded, "\n"), strings.Join(viaService, "\n"); got != want {
				t.Fatalf("in-process:\n%s\n\nthrough the service:\n%s", got, want)
			}
		})
	}
}

func describeText(t *pb.ShellText) string {
	if t == nil {
		return "-"
	}
	return fmt.Sprintf("%v:%q:%v:%d", t.GetMode(), t.GetText(), t.GetTruncated(), t.GetTotalBytes())
}

func describeResponse(r *pb.NormalizeResponse) string {
	if fe := r.GetFrameError(); fe != nil {
		return fmt.Sprintf("error %s %d %d %s %q", fe.GetSessionId(), fe.GetSequence(), fe.GetCode(), fe.GetToolCallId(), fe.GetMessage())
	}
	x := r.GetShellExec()
	exit := "nil"
	if x.ExitCode != nil {
		exit = fmt.Sprint(x.GetExitCode())
	}
	return fmt.Sprintf("exec %s %s #%d %s %q %q %q %q %v %v %s %q %v %s %s %s %q %v %v %q %d %q",
		x.GetSessionId(), x.GetToolCallId(), x.GetRevision(), x.GetDialect(), x.GetAgentVersion(), x.GetCommand(), x.GetCwd(), x.GetDescription(),
		x.GetState(), x.GetOutcome(), exit, x.GetSignal(), x.GetTimedOut(),
		describeText(x.GetOutput()), describeText(x.GetStdout()), describeText(x.GetStderr()),
		x.GetApprovalReason(), x.GetAwaitingApproval(), x.GetBackground(), x.GetOutcomeReason(), x.GetSequence(), x.GetTerminalId())
}

// describeEvent writes an event as describeResponse writes the response
// the service makes of it; the enums share their numbers.
func describeEvent(ev normalize.Event) string {
	if fe := ev.Error; fe != nil {
		return describeResponse(&pb.NormalizeResponse{Kind: &pb.NormalizeResponse_FrameError{FrameError: &pb.FrameError{
			SessionId: fe.SessionID, Sequence: fe.Sequence, Code: int32(fe.Code), ToolCallId: fe.ToolCallID, Message: fe.Message,
		}}})
	}
	x := ev.ShellExec
	text := func(t *normalize.Text) *pb.ShellText {
		if t == nil {
			return nil
		}
		return &pb.ShellText{Text: t.Text, Mode: pb.TextMode(t.Mode), Truncated: t.Truncated, TotalBytes: t.TotalBytes}
	}
	return describeResponse(&pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: &pb.ShellExec{
		SessionId: x.SessionID, ToolCallId: x.ToolCallID, Revision: x.Revision, Dialect: x.Dialect, AgentVersion: x.AgentVersion,
		Command: x.Command, Cwd: x.Cwd, Description: x.Description, State: pb.ShellState(x.State), Outcome: pb.ShellOutcome(x.Outcome),
		ExitCode: x.ExitCode, Signal: x.Signal, TimedOut: x.TimedOut, Output: text(x.Output), Stdout: text(x.Stdout),
		Stderr: text(x.Stderr), ApprovalReason: x.ApprovalReason, AwaitingApproval: x.AwaitingApproval,
		Background: x.Background, OutcomeReason: x.OutcomeReason, Sequence: x.Sequence, TerminalId: x.TerminalID,
	}}})
}
