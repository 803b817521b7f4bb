package fold

import (
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// An ENDED revision that carries only what changed (a stream that asked
// for FINAL_TEXTS_CHANGES) folds into the same whole text as one that
// carries it whole.
func TestFinalWithOnlyChanges(t *testing.T) {
	text := func(s string, m pb.TextMode, total int64) *pb.ShellText {
		return &pb.ShellText{Text: s, Mode: m, TotalBytes: total}
	}
	live := []*pb.ShellExec{
		{SessionId: "s", ToolCallId: "c", Revision: 1, State: pb.ShellState_SHELL_STATE_RUNNING, Output: text("a\n", pb.TextMode_TEXT_MODE_APPEND, 2)},
		{SessionId: "s", ToolCallId: "c", Revision: 2, State: pb.ShellState_SHELL_STATE_RUNNING, Output: text("b\n", pb.TextMode_TEXT_MODE_APPEND, 4)},
	}
	finals := map[string]*pb.ShellExec{
		"whole":   {SessionId: "s", ToolCallId: "c", Revision: 3, State: pb.ShellState_SHELL_STATE_ENDED, Output: text("a\nb\nc\n", pb.TextMode_TEXT_MODE_REPLACE, 6)},
		"changes": {SessionId: "s", ToolCallId: "c", Revision: 3, State: pb.ShellState_SHELL_STATE_ENDED, Output: text("c\n", pb.TextMode_TEXT_MODE_APPEND, 6)},
	}
	for name, final := range finals {
		var f Folder
		for _, x := range append(live, final) {
			if err := f.Apply(x); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		got := f.State(KeyOf(final))
		if got.GetOutput().GetText() != "a\nb\nc\n" || got.GetState() != pb.ShellState_SHELL_STATE_ENDED {
			t.Fatalf("%s: folded %v", name, got)
		}
	}
}
