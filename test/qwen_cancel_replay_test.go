package test

// Qwen Code 0.21.10 and 0.23.4 end a command the user cancelled `failed`,
// with no exit code, the content Qwen's "The tool had already completed;
// its output was discarded." and rawOutput the output printed before the
// cancel. Live, the cancelled turn says what happened; a client that
// attaches to the restarted agent after a session/load sees only the
// replay, which sends the same final and nothing of the turn.

import "testing"

func TestQwenCancelReplayedAlone(t *testing.T) {
	type want = replayed
	code := func(n int32) *int32 { return &n }
	cancel := "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo tick$i; sleep 0.25; done"
	for _, tc := range []struct {
		build string
		wants map[string]want
	}{
		{"0.21.10", map[string]want{
			cancel:                            {"SHELL_OUTCOME_CANCELLED", nil, "tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7"},
			"echo after-cancel; exit 4":       {"SHELL_OUTCOME_FAILED", code(4), "after-cancel"},
			"rm -f notes.txt && echo removed": {"SHELL_OUTCOME_CANCELLED", nil, ""},
		}},
		{"0.23.4", map[string]want{
			cancel:                            {"SHELL_OUTCOME_CANCELLED", nil, "tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7\ntick8"},
			"echo after-cancel; exit 4":       {"SHELL_OUTCOME_FAILED", code(4), "after-cancel"},
			"rm -f notes.txt && echo removed": {"SHELL_OUTCOME_CANCELLED", nil, ""},
		}},
	} {
		t.Run(tc.build, func(t *testing.T) {
			seen := 0
			for _, cl := range replayedAlone(t, "qwen-code-"+tc.build+"_plain_load") {
				x := cl.Last
				w, ok := tc.wants[x.GetCommand()]
				if !ok {
					continue
				}
				seen++
				checkReplayed(t, x, w)
			}
			if seen != len(tc.wants) {
				t.Errorf("%d of the %d commands replayed", seen, len(tc.wants))
			}
		})
	}
}
