package test

// The tricky-cancel-load scenario of test/agents: sixteen commands whose
// output is some agent's own cancel, rejection or timeout words, then a
// session/load. A client that attaches to the restarted agent sees only
// the replay, without the live run that came before: every call there
// must still read as the command ended, its output kept whole and never
// taken for the agent's notice. Where the replay lacks what the live run
// had (a success's exit code, pi's command), the call stays unknown in
// that respect, never wrong.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// cancelWordsStep is one step of test/agents/scenarios/tricky-cancel.json.
type cancelWordsStep struct {
	ID      string `json:"id"`
	Command string `json:"command"`
	Truth   struct {
		Exit           int32    `json:"exit"`
		OutputContains []string `json:"output_contains"`
	} `json:"truth"`
}

func TestCancelWordsReplayedAlone(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("agents", "scenarios", "tricky-cancel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Steps []cancelWordsStep `json:"steps"`
	}
	if err := json.Unmarshal(raw, &sc); err != nil {
		t.Fatal(err)
	}
	// The scripted model names each call after its step
	// (toolu_k_claude_cancel_17, call_k_qwen_cancel_45); the longest id
	// first, so that no id matches inside another.
	steps := append([]cancelWordsStep(nil), sc.Steps...)
	sort.Slice(steps, func(i, j int) bool { return len(steps[i].ID) > len(steps[j].ID) })
	stepOf := func(callID string) *cancelWordsStep {
		for i := range steps {
			if strings.Contains(callID, "_"+steps[i].ID+"_") {
				return &steps[i]
			}
		}
		return nil
	}
	for _, run := range []string{
		"claude-agent-acp-0.101.0_terminal-meta",
		"claude-agent-acp-0.101.0_plain",
		"claude-agent-acp-0.101.0_air_terminal-meta",
		"claude-agent-acp-0.101.0_v2_terminal-meta",
		"claude-agent-acp-0.85.1_terminal-meta",
		"claude-agent-acp-0.85.1_plain",
		"claude-code-acp-0.16.2_plain",
		"pi-acp-0.0.34_plain",
		"pi-acp-0.0.24_plain",
		"qwen-code-0.24.4_plain",
		"qwen-code-0.23.4_plain",
		"grok-1.0.41_plain",
		"codex-acp-0.16.0_shell-command_terminal-meta",
		"codex-acp-0.16.0_unified-exec_plain",
		"codex-acp-0.14.0_shell-command_terminal-meta",
		"codex-acp-0.14.0_unified-exec_plain",
		"codex-acp-0.11.1_shell-command_terminal-meta",
		"codex-acp-0.11.1_unified-exec_plain",
	} {
		t.Run(run, func(t *testing.T) {
			seen := map[string]bool{}
			for _, cl := range replayedAlone(t, run+"_tricky-cancel-load") {
				x := cl.Last
				st := stepOf(x.GetToolCallId())
				if st == nil {
					t.Errorf("%s: a call of no step", x.GetToolCallId())
					continue
				}
				seen[st.ID] = true
				checkReplayedCancelWords(t, st, x)
			}
			if len(seen) != len(sc.Steps) {
				t.Errorf("%d of the %d steps replayed", len(seen), len(sc.Steps))
			}
		})
	}
}

// checkReplayedCancelWords holds one replayed call against what its
// command really did.
func checkReplayedCancelWords(t *testing.T, st *cancelWordsStep, x *pb.ShellExec) {
	t.Helper()
	if x.GetState() != pb.ShellState_SHELL_STATE_ENDED {
		t.Errorf("%s: state %s, want ENDED", st.ID, x.GetState())
	}
	if c := x.GetCommand(); c != "" && c != st.Command {
		t.Errorf("%s: command %q, want %q", st.ID, c, st.Command)
	}
	want := pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED
	if st.Truth.Exit != 0 {
		want = pb.ShellOutcome_SHELL_OUTCOME_FAILED
	}
	switch {
	case x.ExitCode != nil && *x.ExitCode != st.Truth.Exit:
		t.Errorf("%s: exit %d, want %d", st.ID, *x.ExitCode, st.Truth.Exit)
	case x.GetOutcome() == want:
	case x.GetOutcome() == pb.ShellOutcome_SHELL_OUTCOME_UNKNOWN && x.ExitCode == nil:
		// The replay did not say how it ended: unknown, not wrong.
	default:
		t.Errorf("%s: outcome %s (%s), exit %v, want %s", st.ID, x.GetOutcome(), x.GetOutcomeReason(), x.ExitCode, want)
	}
	out := x.GetOutput().GetText()
	for _, s := range st.Truth.OutputContains {
		if !strings.Contains(out, s) {
			t.Errorf("%s: output %q lacks %q", st.ID, out, s)
		}
	}
}
