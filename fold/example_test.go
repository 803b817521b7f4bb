package fold_test

import (
	"fmt"

	"github.com/acpnorm/acpnorm/fold"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

func ExampleFolder() {
	appendText := func(s string) *pb.ShellText {
		return &pb.ShellText{Text: s, Mode: pb.TextMode_TEXT_MODE_APPEND}
	}
	exit := int32(0)
	revisions := []*pb.ShellExec{
		{SessionId: "s1", ToolCallId: "c1", Revision: 1, Command: "seq 2", State: pb.ShellState_SHELL_STATE_RUNNING, Output: appendText("1\n")},
		{SessionId: "s1", ToolCallId: "c1", Revision: 2, Command: "seq 2", State: pb.ShellState_SHELL_STATE_RUNNING, Output: appendText("2\n")},
		{SessionId: "s1", ToolCallId: "c1", Revision: 3, Command: "seq 2", State: pb.ShellState_SHELL_STATE_ENDED,
			Outcome: pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED, ExitCode: &exit}, // no output: it did not change
		{SessionId: "s1", ToolCallId: "c1", Revision: 5, Command: "seq 2", Output: appendText("late")}, // a gap
	}
	var f fold.Folder
	for _, x := range revisions {
		if err := f.Apply(x); err != nil {
			fmt.Println(err)
		}
	}
	s := f.State(fold.Key{SessionID: "s1", ToolCallID: "c1"})
	fmt.Printf("revision %d, %v, exit %d, output %q\n", s.GetRevision(), s.GetOutcome(), s.GetExitCode(), s.GetOutput().GetText())
	// Output:
	// fold: call "c1" of session "s1": revision 5 after 3: 1 revision(s) missing; not applied: it appends to text that missed a part
	// revision 3, SHELL_OUTCOME_SUCCEEDED, exit 0, output "1\n2\n"
}
