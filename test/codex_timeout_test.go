package test

// test/agents's codex-timeout scenario on codex-acp's shell tools: two
// commands Codex killed at the 1 s timeout the model asked for, and two
// that only print Codex's timeout sentence and exit 124, at once
// (k_codex_timeout) and after running as long as the sentence says. Live,
// and live then replayed, only the killed ones read as timed out, and the
// printed sentence stays output. A client that sees only the session/load
// replay reads the same, but for the slow one: its replay is the bytes of
// a real timeout (an agent limit).

import (
	"path/filepath"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
)

func TestCodexTimeoutOrPrintedWords(t *testing.T) {
	type want struct {
		timedOut bool
		output   string
	}
	const (
		real    = "echo start; sleep 5; echo finished-late"
		quiet   = "sleep 5"
		printed = "printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124"
		slow    = "sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124"
	)
	whole := map[string]want{
		real:    {true, "start\n"},
		quiet:   {true, ""},
		printed: {false, "command timed out after 2000 milliseconds\nx\n"},
		slow:    {false, "command timed out after 1000 milliseconds\nstart\n"},
	}
	alone := map[string]want{
		real:    {true, "start\n"},
		quiet:   {true, ""},
		printed: {false, "command timed out after 2000 milliseconds\nx\n"},
		// The agent limit: "Wall time: 1 seconds" beside the printed
		// "1000 milliseconds" is what a real timeout replays.
		slow: {true, "start\n"},
	}
	check := func(t *testing.T, x *pb.ShellExec, w want) {
		t.Helper()
		if got := x.GetOutcome(); got != pb.ShellOutcome_SHELL_OUTCOME_FAILED {
			t.Errorf("%s: outcome %s (%s), want FAILED", x.GetCommand(), got, x.GetOutcomeReason())
		}
		if x.ExitCode == nil || *x.ExitCode != 124 {
			t.Errorf("%s: exit %v, want 124", x.GetCommand(), x.ExitCode)
		}
		if x.GetTimedOut() != w.timedOut {
			t.Errorf("%s: timed_out %v, want %v", x.GetCommand(), x.GetTimedOut(), w.timedOut)
		}
		if got := x.GetOutput().GetText(); got != w.output {
			t.Errorf("%s: output %q, want %q", x.GetCommand(), got, w.output)
		}
	}
	// 0.12.0 and 0.14.0 replay Codex's JSON for the model, 0.15.0 and
	// 0.16.0 the "Exit code: N\nWall time: ..." text.
	for _, build := range []string{"0.12.0", "0.14.0", "0.15.0", "0.16.0"} {
		name := "codex-acp-" + build + "_shell-command_terminal-meta_codex-timeout"
		t.Run(build, func(t *testing.T) {
			calls, errs := replay.Fold(play(t, inProcess(t), filepath.Join("testdata/recordings/agents", name+".ndjson")))
			if len(errs) > 0 {
				t.Fatalf("frame errors: %v", errs)
			}
			if len(calls) != len(whole) {
				t.Fatalf("%d calls, want %d", len(calls), len(whole))
			}
			for _, cl := range calls {
				check(t, cl.Last, whole[cl.Last.GetCommand()])
			}
			calls = replayedAlone(t, name)
			if len(calls) != len(alone) {
				t.Fatalf("replayed alone: %d calls, want %d", len(calls), len(alone))
			}
			for _, cl := range calls {
				check(t, cl.Last, alone[cl.Last.GetCommand()])
			}
		})
	}
}
