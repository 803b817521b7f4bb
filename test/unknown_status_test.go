package test

// A build may end, or report on, a shell call with a status none of
// ACP's four ("timed_out", "killed", "errored"). Each case is a recorded
// final with only its status word changed, played through the service:
// alone, the call ends at the turn's end, with the output and the exit
// code that frame carries; followed by the recorded final, the call
// reads as the recording does, its output not doubled.

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type unknownStatusPlay struct {
	recording string // under testdata/recordings/agents, without .ndjson
	line      int    // the final whose status is changed
	dialect   string // "": detected
	// replay: the line is in a session/load replay, played alone (the
	// second process), as a client that attached after the restart.
	replay bool
	// delta: the final carries its output as a delta, which the frame
	// sent twice appends twice: the final that follows it is not played.
	delta bool
	// open: the changed final is sent as a `tool_call`, the frame that
	// opens a call (as session/load's replays send finals).
	open bool
}

var unknownStatusPlays = []unknownStatusPlay{
	{recording: "codex-acp-0.16.0_unified-exec_plain_full", line: 19},
	{recording: "codex-acp2-2.6.0_plain_full", line: 31},
	{recording: "codex-acp-0.11.1_shell-command_terminal-meta_load", line: 84, replay: true},
	{recording: "claude-agent-acp-0.101.0_air_plain_full", line: 28},
	{recording: "claude-agent-acp-0.101.0_plain_full", line: 26},
	{recording: "gemini-cli-0.61.0_debug_full", line: 14},
	{recording: "qwen-code-0.24.4_plain_full", line: 21},
	{recording: "qwen-code-0.10.1_plain_full", line: 17},
	{recording: "opencode-1.18.33_bash-ask_full", line: 23},
	{recording: "kilo-7.7.7_bash-ask_full", line: 25},
	{recording: "copilot-1.0.102_plain_full", line: 25},
	{recording: "cline-3.0.65_plain_full", line: 21},
	{recording: "grok-1.0.41_plain_full", line: 59},
	{recording: "pi-acp-0.0.34_plain_full", line: 25},
	{recording: "pi-acp-0.0.23_plain_full", line: 23},
	{recording: "droid-0.105.1_client-terminal_load", line: 278, replay: true},
	{recording: "codex-acp2-2.6.0_plain_full", line: 53, dialect: "generic", delta: true},
}

// playUnknownStatus plays lines as one session and returns the call id's
// last record.
func playUnknownStatus(t *testing.T, c pb.NormalizerServiceClient, lines []replay.Line, dialect, session, id string) *pb.ShellExec {
	t.Helper()
	if dialect == "" {
		dialect = "auto"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resps, err := replay.Play(ctx, c, lines, replay.Options{SessionID: session, Dialect: dialect})
	require.NoError(t, err)
	calls, errs := replay.Fold(resps)
	require.Empty(t, errs)
	for _, cl := range calls {
		if cl.Last.GetToolCallId() == id {
			return cl.Last
		}
	}
	t.Fatalf("%s: no call %s", session, id)
	return nil
}

func TestUnknownStatusPlayed(t *testing.T) {
	playUnknownStatusCases(t, unknownStatusPlays)
}

// A final sent as the `tool_call` that opens its call with a word no
// status is reads as an update with that word does: session/load's
// replays (a client that attached after the restart), and the finals of
// unknownStatusPlays sent so (pi's excepted: pi reads no status of a
// `tool_call`, which its replays send as a header).
func TestUnknownStatusOpeningPlayed(t *testing.T) {
	plays := []unknownStatusPlay{
		{recording: "grok-1.0.41_plain_load", line: 172, replay: true},
		{recording: "gemini-cli-0.36.0_debug_load", line: 53, replay: true},
	}
	for _, p := range unknownStatusPlays {
		if !strings.HasPrefix(p.recording, "pi-") {
			p.open = true
			plays = append(plays, p)
		}
	}
	playUnknownStatusCases(t, plays)
}

func playUnknownStatusCases(t *testing.T, plays []unknownStatusPlay) {
	c := inProcess(t)
	for _, p := range plays {
		lines, err := replay.ReadFile(filepath.Join("testdata/recordings/agents", p.recording+".ndjson"))
		require.NoError(t, err)
		if p.replay {
			lines = secondProcess(t, lines)
		}
		at := -1
		for i, l := range lines {
			if l.Number == p.line {
				at = i
			}
		}
		require.GreaterOrEqual(t, at, 0, "%s has no line %d", p.recording, p.line)
		var m struct {
			Params struct {
				Update struct {
					ToolCallID string `json:"toolCallId"`
					Status     string `json:"status"`
				} `json:"update"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal(lines[at].Msg, &m))
		id, status := m.Params.Update.ToolCallID, m.Params.Update.Status
		require.Contains(t, []string{"completed", "failed"}, status, "line %d is no final", p.line)
		session := strings.ReplaceAll(p.recording, ".", "-") + "-" + strconv.Itoa(p.line) + "-" + p.dialect
		if p.open {
			session += "-open"
		}
		want := playUnknownStatus(t, c, lines, p.dialect, session+"-as-recorded", id)
		require.NotNil(t, want.ExitCode, "%s: the recorded final states an exit code", p.recording)

		for _, word := range []string{"timed_out", "killed"} {
			changed := unknownStatusLine(t, lines[at], word)
			if p.open {
				changed = openingLine(t, changed)
			}
			// alone: the changed final instead of the recorded one.
			alone := append(append(append([]replay.Line(nil), lines[:at]...), changed), lines[at+1:]...)
			// then final: the changed final, then the recorded one.
			then := append(append(append([]replay.Line(nil), lines[:at]...), changed), lines[at:]...)
			t.Run(p.recording+"/"+word, func(t *testing.T) {
				got := playUnknownStatus(t, c, alone, p.dialect, session+"-"+word+"-alone", id)
				assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, got.GetState())
				if assert.NotNil(t, got.ExitCode, "alone: the exit code the frame states") {
					assert.Equal(t, *want.ExitCode, *got.ExitCode, "alone: exit code")
				}
				assert.Equal(t, want.GetOutput().GetText(), got.GetOutput().GetText(), "alone: output")
				assert.Equal(t, want.GetOutcome(), got.GetOutcome(), "alone: outcome (%s)", got.GetOutcomeReason())
				if p.delta {
					return
				}

				got = playUnknownStatus(t, c, then, p.dialect, session+"-"+word+"-then", id)
				if assert.NotNil(t, got.ExitCode, "then final: exit code") {
					assert.Equal(t, *want.ExitCode, *got.ExitCode, "then final: exit code")
				}
				assert.Equal(t, want.GetOutput().GetText(), got.GetOutput().GetText(), "then final: output")
				assert.Equal(t, want.GetOutcome(), got.GetOutcome(), "then final: outcome")
				assert.Equal(t, want.GetOutcomeReason(), got.GetOutcomeReason(), "then final: outcome reason")
			})
		}
	}
}

// A word no status is may be a live one ("running"): Grok fills in
// exit_code 0 on every live frame, so when its live frames carry such a
// word and no final follows (here the recorded final is left out), the
// exit stays unknown, and the output is what the live frames said.
func TestUnknownLiveStatusMakesUpNoExit(t *testing.T) {
	c := inProcess(t)
	lines, err := replay.ReadFile("testdata/recordings/agents/grok-1.0.41_plain_full.ndjson")
	require.NoError(t, err)
	var played []replay.Line
	for _, l := range lines {
		switch l.Number {
		case 33, 34: // call_ok_3's live frames
			l = unknownStatusLine(t, l, "running")
		case 35: // its final
			continue
		}
		played = append(played, l)
	}
	got := playUnknownStatus(t, c, played, "", "grok-live-word", "call_ok_3")
	assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, got.GetState())
	assert.Nil(t, got.ExitCode, "no exit code: Grok's 0 while the command runs is no exit")
	assert.Equal(t, pb.ShellOutcome_SHELL_OUTCOME_UNKNOWN, got.GetOutcome(), got.GetOutcomeReason())
	assert.Equal(t, "alpha.txt\nbeta.md\ngamma.go\nnotes.txt\n", got.GetOutput().GetText())
}

// unknownStatusLine is l with its update's status made word.
func unknownStatusLine(t *testing.T, l replay.Line, word string) replay.Line {
	t.Helper()
	for _, st := range []string{`"status":"completed"`, `"status":"failed"`, `"status":"in_progress"`} {
		// The update's own status follows its toolCallId in every
		// recorded final used here; a rawOutput's own status (Codex's)
		// comes after it.
		i := bytes.Index(l.Msg, []byte(`"toolCallId"`))
		j := bytes.Index(l.Msg[max(i, 0):], []byte(st))
		if i >= 0 && j >= 0 {
			j += i
			msg := append(append(append([]byte(nil), l.Msg[:j]...), `"status":"`+word+`"`...), l.Msg[j+len(st):]...)
			var m struct {
				Params struct {
					Update struct {
						Status string `json:"status"`
					} `json:"update"`
				} `json:"params"`
			}
			if json.Unmarshal(msg, &m) == nil && m.Params.Update.Status == word {
				l.Msg = msg
				return l
			}
		}
	}
	t.Fatalf("line %d: no update status to change", l.Number)
	return l
}

// openingLine is l with its update made a `tool_call`.
func openingLine(t *testing.T, l replay.Line) replay.Line {
	t.Helper()
	const update, call = `"sessionUpdate":"tool_call_update"`, `"sessionUpdate":"tool_call"`
	if bytes.Count(l.Msg, []byte(update)) == 1 {
		l.Msg = bytes.Replace(l.Msg, []byte(update), []byte(call), 1)
		return l
	}
	if !bytes.Contains(l.Msg, []byte(call+",")) {
		t.Fatalf("line %d: no update to make a tool_call", l.Number)
	}
	return l
}

// A user's rejection under a word no status is: played alone (the call
// ends at the turn's end) or before the recorded final, the call is
// CANCELLED as recorded, the agent's notice no output. Live, the
// client's answer to the permission ask says the user rejected the call;
// a session/load replay (played alone, as a client that attached after
// the restart) has only the agent's final to say it.
func TestUnknownStatusRejectionPlayed(t *testing.T) {
	c := inProcess(t)
	for _, p := range []unknownStatusPlay{
		{recording: "copilot-1.0.102_plain_full", line: 117},
		{recording: "copilot-1.0.102_plain_load", line: 87, replay: true},
		{recording: "grok-1.0.41_plain_full", line: 277},
		{recording: "grok-1.0.41_plain_load", line: 180, replay: true},
		{recording: "kilo-7.0.33_bash-ask_full", line: 119},
		{recording: "kilo-7.0.33_bash-ask_load", line: 88, replay: true},
		{recording: "qwen-code-0.21.10_plain_full", line: 99},
		{recording: "qwen-code-0.21.10_plain_load", line: 81, replay: true},
	} {
		lines, err := replay.ReadFile(filepath.Join("testdata/recordings/agents", p.recording+".ndjson"))
		require.NoError(t, err)
		if p.replay {
			lines = secondProcess(t, lines)
		}
		at := -1
		for i, l := range lines {
			if l.Number == p.line {
				at = i
			}
		}
		require.GreaterOrEqual(t, at, 0, "%s has no line %d", p.recording, p.line)
		var m struct {
			Params struct {
				Update struct {
					ToolCallID string `json:"toolCallId"`
				} `json:"update"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal(lines[at].Msg, &m))
		id := m.Params.Update.ToolCallID
		session := strings.ReplaceAll(p.recording, ".", "-") + "-reject"
		want := playUnknownStatus(t, c, lines, "", session+"-as-recorded", id)
		require.Equal(t, pb.ShellOutcome_SHELL_OUTCOME_CANCELLED, want.GetOutcome(), "%s: the recording's rejection", p.recording)
		for _, word := range []string{"declined", "timed_out"} {
			changed := unknownStatusLine(t, lines[at], word)
			alone := append(append(append([]replay.Line(nil), lines[:at]...), changed), lines[at+1:]...)
			then := append(append(append([]replay.Line(nil), lines[:at]...), changed), lines[at:]...)
			t.Run(p.recording+"/"+word, func(t *testing.T) {
				for name, played := range map[string][]replay.Line{"alone": alone, "then final": then} {
					got := playUnknownStatus(t, c, played, "", session+"-"+word+"-"+strings.ReplaceAll(name, " ", "-"), id)
					assert.Equal(t, pb.ShellOutcome_SHELL_OUTCOME_CANCELLED, got.GetOutcome(), "%s: %s", name, got.GetOutcomeReason())
					assert.Equal(t, want.GetOutput().GetText(), got.GetOutput().GetText(), "%s: output", name)
					assert.Equal(t, want.ExitCode, got.ExitCode, "%s: exit code", name)
				}
			})
		}
	}
}

// pi-acp 0.0.24 (pi 0.84.2, the content wire) sends a command's one line
// of output as the whole text of its final; under a word none of ACP's
// the pi dialect reads the line as pi's error message, held until a
// final says whose it is. Played with the live frame that showed the
// line left out (pi sends it only as it sees the command print), the turn
// ends right after that frame: the line is output, the outcome UNKNOWN
// with no exit code. Before, the end made it pi's message: FAILED, the
// output lost.
func TestUnknownStatusPiLineAtTurnEnd(t *testing.T) {
	c := inProcess(t)
	lines, err := replay.ReadFile("testdata/recordings/agents/pi-acp-0.0.24_plain_tricky.ndjson")
	require.NoError(t, err)
	for _, word := range []string{"timed_out", "errored"} {
		var played []replay.Line
		for _, l := range lines {
			switch l.Number {
			case 104: // call_cd_pwd_29's live frame with its output
				continue
			case 105: // its final
				require.Contains(t, string(l.Msg), `"text":"/home/dev/work/proj/sub\n"`)
				l = unknownStatusLine(t, l, word)
			}
			played = append(played, l)
		}
		got := playUnknownStatus(t, c, played, "", "pi-line-"+word, "call_cd_pwd_29")
		assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, got.GetState())
		assert.Equal(t, "/home/dev/work/proj/sub\n", got.GetOutput().GetText(), word)
		assert.Equal(t, pb.ShellOutcome_SHELL_OUTCOME_UNKNOWN, got.GetOutcome(), got.GetOutcomeReason())
		assert.Nil(t, got.ExitCode)
	}
}
