package test

// The load scenario's `reject` step on codex-acp: the user answers the
// ask with `abort`, the prompt ends `cancelled`, and from 0.14.0 no end
// event comes live. A client that attaches to the restarted agent sees
// only the replay. Where the replay carries Codex's `aborted by user`
// result the call is CANCELLED; 0.16.0's shell_command replays the
// `tool_call` alone (`completed`, no result), which says neither that
// the user rejected it nor how it ended: UNKNOWN, nothing made up.

import "testing"

func TestCodexRejectReplayedAlone(t *testing.T) {
	const rejected = "rm -f notes.txt && echo removed"
	wants := map[string]string{
		"0.11.1_shell-command_terminal-meta_load": "SHELL_OUTCOME_CANCELLED",
		"0.11.1_unified-exec_plain_load":          "SHELL_OUTCOME_CANCELLED",
		"0.12.0_shell-command_terminal-meta_load": "SHELL_OUTCOME_CANCELLED",
		"0.13.0_shell-command_terminal-meta_load": "SHELL_OUTCOME_CANCELLED",
		"0.14.0_shell-command_terminal-meta_load": "SHELL_OUTCOME_CANCELLED",
		"0.14.0_unified-exec_plain_load":          "SHELL_OUTCOME_CANCELLED",
		"0.15.0_shell-command_terminal-meta_load": "SHELL_OUTCOME_CANCELLED",
		"0.16.0_unified-exec_plain_load":          "SHELL_OUTCOME_CANCELLED",
		// The agent's limit: nothing on this replay names the rejection.
		"0.16.0_shell-command_terminal-meta_load": "SHELL_OUTCOME_UNKNOWN",
	}
	for run, want := range wants {
		seen := false
		for _, cl := range replayedAlone(t, "codex-acp-"+run) {
			x := cl.Last
			if x.GetCommand() != rejected {
				continue
			}
			seen = true
			if got := x.GetOutcome().String(); got != want {
				t.Errorf("%s: outcome %s (%s), want %s", run, got, x.GetOutcomeReason(), want)
			}
			if x.ExitCode != nil {
				t.Errorf("%s: exit %d, want none", run, *x.ExitCode)
			}
			if got := x.GetOutput().GetText(); got != "" {
				t.Errorf("%s: output %q, want none", run, got)
			}
		}
		if !seen {
			t.Errorf("%s: no call for %q in the replay", run, rejected)
		}
	}
}
