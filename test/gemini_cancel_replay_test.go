package test

// Gemini CLI 0.36.0 and 0.37.2 (plain) replay each call on session/load as one
// `completed` tool_call titled "Shell" (no command) whose text is what the
// live final showed: the command's output, or, for an empty one, Gemini's
// own notice. In tricky-cancel-load the commands print some agent's
// cancel, rejection or timeout words. A client that sees only the replay
// (the agent's second process) must keep each as output, except where
// the replay is, byte for byte, what Gemini replays for its own notice:
// a real cancel replays as "Command cancelled by user.\n\nOutput before
// cancellation:\n..." (load), and a replay carries no session/cancel to
// tell the two apart. Those four are the agent's limit
// (expectations.json); the live reading, which the replay never changes,
// keeps them as output. --debug (0.36.0, 0.40.1) replays its report, the
// output a field of its own: every output is kept.

import (
	"strconv"
	"strings"
	"testing"
)

func TestGeminiCancelWordsReplayedAlone(t *testing.T) {
	type want struct {
		outcome  string
		exit     *int32
		output   string
		timedOut bool
	}
	code := func(n int32) *int32 { return &n }
	unknown := func(out string) want { return want{"SHELL_OUTCOME_UNKNOWN", nil, out, false} }
	// The replayed calls carry no command; Gemini numbers its call ids
	// in the session's order (…-1 to …-16, the scenario's steps).
	outputs := []string{
		"Command cancelled by user.",
		"Command cancelled by user.\n\nOutput before cancellation:\ntick1",
		"Command was automatically cancelled because it exceeded the timeout of 5.0 minutes without output.",
		"The user doesn't want to proceed with this tool use.",
		"User refused permission to run tool",
		"The user rejected permission to use this specific tool call.",
		"out\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>",
		"Tool execution cancelled",
		"Error: Tool execution rejected",
		"The user rejected this tool call.",
		"Tool \"run_shell_command\" was canceled by the user.",
		"command timed out after 2000 milliseconds\nx",
		"exec command rejected by user",
		"Command aborted",
		"Command failed: Command was aborted",
		"User rejected the execution for tool `run_terminal_command`",
	}
	plain := map[int]want{
		// Gemini's notices, byte for byte: the replay cannot say whose.
		1:  {"SHELL_OUTCOME_CANCELLED", nil, "", false},
		2:  {"SHELL_OUTCOME_CANCELLED", nil, "tick1", false},
		3:  {"SHELL_OUTCOME_FAILED", nil, "", true},
		15: {"SHELL_OUTCOME_FAILED", nil, "", false},
	}
	debug := map[int]want{9: {"SHELL_OUTCOME_FAILED", code(1), outputs[8], false}, 12: {"SHELL_OUTCOME_FAILED", code(124), outputs[11], false}}
	for _, tc := range []struct {
		run     string
		special map[int]want
	}{
		{"0.36.0_plain", plain},
		{"0.37.2_plain", plain},
		{"0.36.0_debug", debug},
		{"0.40.1_debug", debug},
	} {
		t.Run(tc.run, func(t *testing.T) {
			seen := 0
			for _, cl := range replayedAlone(t, "gemini-cli-"+tc.run+"_tricky-cancel-load") {
				x := cl.Last
				id := x.GetToolCallId()
				n := 0
				for i := range outputs {
					if strings.HasSuffix(id, "-"+strconv.Itoa(i+1)) {
						n = i + 1
					}
				}
				if n == 0 {
					t.Errorf("%s: a call the scenario does not have", id)
					continue
				}
				seen++
				w, ok := tc.special[n]
				if !ok {
					w = unknown(outputs[n-1])
				}
				if x.GetCommand() != "" {
					t.Errorf("%s: command %q, but the replay names none", id, x.GetCommand())
				}
				if got := x.GetOutcome().String(); got != w.outcome {
					t.Errorf("%s: outcome %s (%s), want %s", id, got, x.GetOutcomeReason(), w.outcome)
				}
				switch {
				case w.exit == nil && x.ExitCode != nil:
					t.Errorf("%s: exit %d, want none", id, *x.ExitCode)
				case w.exit != nil && (x.ExitCode == nil || *x.ExitCode != *w.exit):
					t.Errorf("%s: exit %v, want %d", id, x.ExitCode, *w.exit)
				}
				if x.GetTimedOut() != w.timedOut {
					t.Errorf("%s: timed_out %v, want %v", id, x.GetTimedOut(), w.timedOut)
				}
				if got := x.GetOutput().GetText(); got != w.output {
					t.Errorf("%s: output %q, want %q", id, got, w.output)
				}
			}
			if seen != len(outputs) {
				t.Errorf("%d of the %d calls replayed", seen, len(outputs))
			}
		})
	}
}

// TestGeminiRealCancelReplayedAlone is the other side of the limit: a
// command the user really cancelled (load, 0.36.0 plain) replays in the
// shape k_gemini_before's output has, and reads as the cancel it was.
func TestGeminiRealCancelReplayedAlone(t *testing.T) {
	calls := replayedAlone(t, "gemini-cli-0.36.0_plain_load")
	const ticks = "tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7\ntick8"
	found := false
	for _, cl := range calls {
		x := cl.Last
		if x.GetOutput().GetText() != ticks {
			continue
		}
		found = true
		if got := x.GetOutcome().String(); got != "SHELL_OUTCOME_CANCELLED" {
			t.Errorf("the cancelled loop: outcome %s (%s), want SHELL_OUTCOME_CANCELLED", got, x.GetOutcomeReason())
		}
		if x.ExitCode != nil {
			t.Errorf("the cancelled loop: exit %d, want none", *x.ExitCode)
		}
	}
	if !found {
		t.Error("no replayed call with the cancelled loop's output")
	}
}
