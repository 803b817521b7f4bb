package test

// The exitline-load scenario of test/agents on claude-agent-acp: commands
// whose output starts with "Exit code 3" (exit 0) or ends in another
// agent's exit line (exit 5), and `false`, then a session/load. The
// replay sends no toolResponse: a client that sees only the replay (the
// agent's second process) has the terminal_output text, without a
// status, then a `completed` or `failed` final whose terminal_exit is
// made up (before 0.86.0) or restated (a success's 0, from 0.86.0).

import "testing"

func TestClaudeExitLineReplayedAlone(t *testing.T) {
	type want = replayed
	code := func(n int32) *int32 { return &n }
	wants := map[string]want{
		"printf 'Exit code 3\\nreal\\n'":                       {"SHELL_OUTCOME_UNKNOWN", nil, "Exit code 3\nreal"},
		"printf 'out\\nCommand exited with code 0\\n'; exit 5": {"SHELL_OUTCOME_FAILED", code(5), "out\nCommand exited with code 0"},
		"false": {"SHELL_OUTCOME_FAILED", code(1), ""},
	}
	for _, build := range []string{"0.70.0", "0.85.1", "0.86.0", "0.101.0"} {
		t.Run(build, func(t *testing.T) {
			seen := 0
			for _, cl := range replayedAlone(t, "claude-agent-acp-"+build+"_terminal-meta_exitline-load") {
				x := cl.Last
				w, ok := wants[x.GetCommand()]
				if !ok {
					continue
				}
				seen++
				checkReplayed(t, x, w)
			}
			if seen != len(wants) {
				t.Errorf("%d of the %d commands replayed", seen, len(wants))
			}
		})
	}
}
