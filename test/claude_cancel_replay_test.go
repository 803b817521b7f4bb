package test

// claude-agent-acp sends its cancel notice ("The user doesn't want to
// proceed with this tool use. ...") where a command's output goes: as
// terminal_output data, or on ACP v2 as a terminal_update's output. A
// command that prints those words (tricky-cancel's k_claude_cancel) gets
// the same kind of frame. A client that sees only a session/load or
// session/resume replay has neither the live toolResponse nor the
// nonExecutionKind the live final carried: the replays of 0.101.0 drop
// both. What is left to tell the two apart is the call's final status,
// `failed` for the real cancel and `completed` for the printed words.
// TestCancelWordsReplayedAlone holds the printed words as output; this
// test holds the other side: a real cancel, replayed alone, is still a
// cancel, with no output but what the command printed. 0.24.2 and 0.31.4
// replay it as Claude Code kept it: "Exit code 137", its line "[Request
// interrupted by user for tool use]", then the ticks printed so far, under
// `failed`; the exit code (the killed shell's) is kept.

import (
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

func TestClaudeRealCancelReplayedAlone(t *testing.T) {
	for _, run := range []string{
		"claude-agent-acp-0.101.0_terminal-meta_load",
		"claude-agent-acp-0.101.0_plain_load",
		"claude-agent-acp-0.101.0_air_terminal-meta_load",
		"claude-agent-acp-0.101.0_v2_terminal-meta_load",
		"claude-agent-acp-0.40.0_terminal-meta_load",
		"claude-agent-acp-0.39.0_terminal-meta_load",
		"claude-agent-acp-0.31.4_terminal-meta_load",
		"claude-agent-acp-0.24.2_terminal-meta_load",
	} {
		t.Run(run, func(t *testing.T) {
			found := false
			for _, cl := range replayedAlone(t, run) {
				x := cl.Last
				// The scripted model names the call after its step:
				// toolu_cancel_N (toolu_after_cancel_N is the next step).
				if !strings.HasPrefix(x.GetToolCallId(), "toolu_cancel_") {
					continue
				}
				found = true
				if x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_CANCELLED {
					t.Errorf("outcome %s (%s), want CANCELLED", x.GetOutcome(), x.GetOutcomeReason())
				}
				if x.ExitCode != nil && *x.ExitCode != 137 {
					t.Errorf("exit %d, want none or 137", *x.ExitCode)
				}
				out := x.GetOutput().GetText()
				for _, notice := range []string{"doesn't want to proceed", "[Request interrupted by user"} {
					if strings.Contains(out, notice) {
						t.Errorf("output %q holds a cancel notice", out)
					}
				}
				if out != "" && !strings.HasPrefix(out, "tick1\n") {
					t.Errorf("output %q, want the ticks or none", out)
				}
			}
			if !found {
				t.Error("the cancelled call was not replayed")
			}
		})
	}
}

// TestClaudeInterruptReplayedUnmarked is the agent limit between: 0.32.0
// to 0.37.0 replay the same cancel as "Exit code 137" and the output so
// far, under `failed`, with no line of Claude Code's and no
// nonExecutionKind (0.32.0, 0.33.1, 0.35.0 and 0.37.0 recorded; only
// 0.32.0's is committed). The call's frames are those of a command that
// exited 137 by itself; the replay's only other sign is the user message
// "[Request interrupted by user for tool use]" after it, which belongs to
// no call. Played alone it reads as what the frames say: FAILED, exit
// 137, the ticks whole; never a guessed cancel, never a lost output.
func TestClaudeInterruptReplayedUnmarked(t *testing.T) {
	const ticks = "tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7\ntick8"
	found := false
	for _, cl := range replayedAlone(t, "claude-agent-acp-0.32.0_terminal-meta_load") {
		x := cl.Last
		if !strings.HasPrefix(x.GetToolCallId(), "toolu_cancel_") {
			continue
		}
		found = true
		if x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_FAILED || x.ExitCode == nil || *x.ExitCode != 137 {
			t.Errorf("outcome %s (%s), exit %v, want FAILED with exit 137", x.GetOutcome(), x.GetOutcomeReason(), x.ExitCode)
		}
		if out := x.GetOutput().GetText(); out != ticks {
			t.Errorf("output %q, want %q", out, ticks)
		}
	}
	if !found {
		t.Error("the cancelled call was not replayed")
	}
}
