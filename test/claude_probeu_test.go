package test

// Probe U of the Claude adapters: recordings of claude-agent-acp 0.101.0
// and claude-code-acp 0.16.2 (test/agents, scenarios probeu*), cut to the
// frames of the calls that matter, live and replayed by session/load,
// each with the final ShellExec the rules call for.

import (
	"path/filepath"
	"testing"

	"github.com/acpnorm/acpnorm/internal/replay"
)

func TestClaudeProbeU(t *testing.T) {
	exit := func(n int32) *int32 { return &n }
	ptrTo := func(s string) *string { return &s }
	cases := []struct {
		file, call    string
		outcome       string // SHELL_OUTCOME_...
		exit          *int32 // nil: not checked
		noExit        bool
		output        *string
		notBackground bool
		timedOut      bool
	}{
		// claude-agent-acp, live: Claude Code's "Shell cwd was reset to
		// DIR" is a notice.
		{file: "claude-agent-acp_live_cd.ndjson", call: "toolu_cd_30", outcome: "SHELL_OUTCOME_SUCCEEDED", exit: exit(0), output: ptrTo("/tmp")},
		// claude-code-acp with a client terminal, replayed: the result
		// items are the exit code and the output.
		{file: "claude-code-acp-ct_load_exit3.ndjson", call: "toolu_exit_bare_24", outcome: "SHELL_OUTCOME_FAILED", exit: exit(3)},
		{file: "claude-code-acp-ct_load_exit3.ndjson", call: "toolu_heredoc_18", outcome: "SHELL_OUTCOME_SUCCEEDED", exit: exit(0),
			output: ptrTo("line one\nline two\nafter-heredoc\n")},
		// ... and live, its timeout is timed out.
		{file: "claude-code-acp-ct_live_timeout.ndjson", call: "toolu_timeout_6", outcome: "SHELL_OUTCOME_FAILED", timedOut: true},
		// The client-terminal Bash's header, printed by a Bash command, is
		// output: replayed alone, and replayed after the live call.
		// Replayed alone, the call's terminal_exit 0 is the one
		// claude-agent-acp fills in for every replayed result not flagged
		// as an error (a grep that found nothing too): no exit code.
		{file: "claude-agent-acp_load_claude_term.ndjson", call: "toolu_claude_term_39", outcome: "SHELL_OUTCOME_UNKNOWN", noExit: true,
			output: ptrTo("Exited with code 4.Final output:\n\nreal")},
		{file: "claude-code-acp-plain_liveload_claude_term.ndjson", call: "toolu_claude_term_47", outcome: "SHELL_OUTCOME_UNKNOWN", noExit: true,
			output: ptrTo("Exited with code 4.Final output:\n\nreal")},
		// Commands sent to the background (run_in_background; a timeout)
		// end UNKNOWN live; the replay's terminal_exit 0 is made up.
		{file: "claude-agent-acp_liveload_background.ndjson", call: "toolu_bg_fail_3", outcome: "SHELL_OUTCOME_UNKNOWN", noExit: true},
		{file: "claude-agent-acp_liveload_background.ndjson", call: "toolu_tmo_bg_8", outcome: "SHELL_OUTCOME_UNKNOWN", noExit: true},
		// A foreground command that printed the background notice: the
		// replay does not send the ended call to the background.
		{file: "claude-code-acp-plain_liveload_bgnote.ndjson", call: "toolu_cl_bgnote_11", outcome: "SHELL_OUTCOME_UNKNOWN", notBackground: true},
	}
	for _, tc := range cases {
		t.Run(tc.file+"/"+tc.call, func(t *testing.T) {
			c := inProcess(t) // a session per play
			calls, errs := replay.Fold(play(t, c, filepath.Join("testdata/probeu-claude", tc.file)))
			if len(errs) > 0 {
				t.Fatalf("frame errors: %v", errs)
			}
			for _, cl := range calls {
				x := cl.Last
				if x.GetToolCallId() != tc.call {
					continue
				}
				if got := x.GetOutcome().String(); got != tc.outcome {
					t.Errorf("outcome %s (%s), want %s", got, x.GetOutcomeReason(), tc.outcome)
				}
				if tc.exit != nil && (x.ExitCode == nil || *x.ExitCode != *tc.exit) {
					t.Errorf("exit %v, want %d", x.ExitCode, *tc.exit)
				}
				if tc.noExit && x.ExitCode != nil {
					t.Errorf("exit %d, want none", *x.ExitCode)
				}
				if tc.timedOut && !x.GetTimedOut() {
					t.Errorf("not timed out")
				}
				if tc.notBackground && x.GetBackground() {
					t.Errorf("background (%s); the command ran in the foreground", x.GetOutcomeReason())
				}
				if tc.output != nil && x.GetOutput().GetText() != *tc.output {
					t.Errorf("output %q, want %q", x.GetOutput().GetText(), *tc.output)
				}
				return
			}
			t.Fatalf("no call %s", tc.call)
		})
	}
}
