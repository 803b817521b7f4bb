package test

// codex-acp 0.12.0, 0.13.0 and 0.14.0 replay a shell_command's result on
// session/load as the JSON Codex gives the model ({"output", "metadata":
// {"exit_code", "duration_seconds"}} in a string), not as the "Exit code:
// N" text of 0.11.1, 0.15.0 and 0.16.0. A client that attaches to the restarted agent sees
// only the replay: the exit codes and the outputs must come from it.

import "testing"

func TestCodexJSONShellReplayedAlone(t *testing.T) {
	type want struct {
		outcome  string
		exit     int32
		output   string
		timedOut bool
	}
	wants := map[string]want{
		"ls":                        {"SHELL_OUTCOME_SUCCEEDED", 0, "alpha.txt\nbeta.md\ngamma.go\nnotes.txt\n", false},
		"printf 'a\\nb\\n'; exit 3": {"SHELL_OUTCOME_FAILED", 3, "a\nb\n", false},
		"ls /nonexistent-dir-xyz":   {"SHELL_OUTCOME_FAILED", 2, "ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n", false},
		"echo after-cancel; exit 4": {"SHELL_OUTCOME_FAILED", 4, "after-cancel\n", false},
		"for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done": {"SHELL_OUTCOME_SUCCEEDED", 0, "line1\nline2\nline3\nline4\nline5\n", false},
		"echo start; sleep 6; echo finished-late":             {"SHELL_OUTCOME_FAILED", 124, "start\n", true},
	}
	seen := 0
	for _, scenario := range []string{"0.14.0_shell-command_terminal-meta_load", "0.14.0_shell-command_terminal-meta_load-long", "0.12.0_shell-command_terminal-meta_load", "0.13.0_shell-command_terminal-meta_load"} {
		for _, cl := range replayedAlone(t, "codex-acp-"+scenario) {
			x := cl.Last
			w, ok := wants[x.GetCommand()]
			if !ok {
				continue
			}
			seen++
			if got := x.GetOutcome().String(); got != w.outcome {
				t.Errorf("%s: %s: outcome %s (%s), want %s", scenario, x.GetCommand(), got, x.GetOutcomeReason(), w.outcome)
			}
			if x.ExitCode == nil || *x.ExitCode != w.exit {
				t.Errorf("%s: %s: exit %v, want %d", scenario, x.GetCommand(), x.ExitCode, w.exit)
			}
			if x.GetTimedOut() != w.timedOut {
				t.Errorf("%s: %s: timed_out %v, want %v", scenario, x.GetCommand(), x.GetTimedOut(), w.timedOut)
			}
			if got := x.GetOutput().GetText(); got != w.output {
				t.Errorf("%s: %s: output %q, want %q", scenario, x.GetCommand(), got, w.output)
			}
		}
	}
	if seen != 15 { // exit3 is in every recording
		t.Errorf("saw %d of the calls, want 15", seen)
	}
}
