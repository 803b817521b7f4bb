package dialect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A build may end, or report on, a shell call with a status none of
// ACP's four: "timed_out", "killed", "errored". The frame still carries
// the command's output and, often, its exit code. Each case below is a
// recorded final with only its status word changed: the call is not
// ended by the word (Status none, the word reported), but what the frame
// carries is read as its dialect reads a final (its notices, trailers and
// headers kept out, its exit code stated), the aggregate as live text.

// unknownStatusWords are words no ACP status is.
var unknownStatusWords = []string{"timed_out", "killed", "errored", "running"}

type unknownStatusCase struct {
	dialect string
	// recording and line: the recorded final (test/testdata/recordings),
	// or update, a frame of the dialect's tests (an agent not recorded).
	recording string
	line      int
	update    string
	// out is the combined output the observation's texts make, applied
	// to nothing held; exit the exit code it states (-1: none).
	out  string
	exit int32
	// open: the frame is sent as the `tool_call` that opens the call
	// (see opening).
	open bool
}

var unknownStatusCases = []unknownStatusCase{
	// printf 'a\nb\n'; exit 3 in each, unless said.
	{dialect: "codex", recording: "agents/codex-acp-0.16.0_unified-exec_plain_full.ndjson", line: 19, out: "a\nb\n", exit: 3},
	// ls: Codex sends exit_code only when the command ended, so a 0
	// is the command's.
	{dialect: "codex", recording: "agents/codex-acp-0.16.0_unified-exec_plain_full.ndjson", line: 9, out: "alpha.txt\nbeta.md\ngamma.go\nnotes.txt\n", exit: 0},
	{dialect: "codex", recording: "agents/codex-acp2-2.6.0_plain_full.ndjson", line: 31, exit: 3},
	// The TypeScript adapter's replay of ls: its model-facing text,
	// whose header is Codex's.
	{dialect: "codex", recording: "agents/codex-acp2-1.1.4_plain_load.ndjson", line: 97, out: "alpha.txt\nbeta.md\ngamma.go\nnotes.txt\n", exit: 0},
	{dialect: "codex", recording: "agents/codex-acp-0.11.1_shell-command_terminal-meta_load.ndjson", line: 84, out: "a\nb\n", exit: 3},
	{dialect: "claude", recording: "agents/claude-agent-acp-0.101.0_air_plain_full.ndjson", line: 28, out: "a\nb\n", exit: 3},
	{dialect: "claude", recording: "agents/claude-agent-acp-0.101.0_plain_full.ndjson", line: 26, out: "a\nb", exit: 3},
	{dialect: "gemini", recording: "agents/gemini-cli-0.61.0_debug_full.ndjson", line: 14, out: "a\nb", exit: 3},
	{dialect: "qwen", recording: "agents/qwen-code-0.24.4_plain_full.ndjson", line: 21, out: "a\nb", exit: 3},
	{dialect: "qwen", recording: "agents/qwen-code-0.10.1_plain_full.ndjson", line: 17, out: "a\nb", exit: 3},
	{dialect: "opencode", recording: "agents/opencode-1.18.33_bash-ask_full.ndjson", line: 23, out: "a\nb\n", exit: 3},
	{dialect: "opencode", recording: "agents/kilo-7.7.7_bash-ask_full.ndjson", line: 25, out: "a\nb\n", exit: 3},
	// A command that printed after-cancel and exited 4, which OpenCode's
	// reading of a failed final would take for its own cancel notice:
	// a frame that states the command's exit code shows that it ran.
	{dialect: "opencode", recording: "agents/opencode-1.14.34_bash-ask_full.ndjson", line: 144, out: "after-cancel\n", exit: 4},
	// The --debug report of a command that printed Claude's and
	// Gemini's words (replayed): Gemini's reading of a failed final
	// quotes "Output: out" from it as a cancel notice, a misfit; the
	// output is kept.
	{dialect: "gemini", recording: "agents/gemini-cli-0.36.0_debug_tricky-cancel-load.ndjson", line: 47, out: "out\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>", exit: -1},
	{dialect: "copilot", recording: "agents/copilot-1.0.102_plain_full.ndjson", line: 25, out: "a\nb", exit: 3},
	{dialect: "cline", recording: "agents/cline-3.0.65_plain_full.ndjson", line: 21, out: "a\nb\n", exit: 3},
	{dialect: "grok", recording: "agents/grok-1.0.41_plain_full.ndjson", line: 59, out: "a\nb\n", exit: 3},
	// ls, live (in_progress): Grok's exit_code 0 while the command runs
	// says nothing, whatever word the frame has.
	{dialect: "grok", recording: "agents/grok-1.0.41_plain_full.ndjson", line: 34, out: "alpha.txt\nbeta.md\ngamma.go\nnotes.txt\n", exit: -1},
	// The output came live, in deltas; the final states the exit alone.
	{dialect: "pi", recording: "agents/pi-acp-0.0.34_plain_full.ndjson", line: 25, exit: 3},
	{dialect: "pi", recording: "agents/pi-acp-0.0.23_plain_full.ndjson", line: 23, out: "a\nb\n", exit: 3},
	{dialect: "droid", recording: "agents/droid-0.105.1_client-terminal_load.ndjson", line: 278, out: "a\nb\n", exit: 3},
	{dialect: "docker-agent", update: dockerFinal("completed", "Error executing command: exit status 3\nOutput: a\nb"), out: "a\nb", exit: 3},
	// ls /nonexistent-dir-xyz, read by the dialect of agents not known.
	{dialect: "generic", recording: "agents/codex-acp2-2.6.0_plain_full.ndjson", line: 53, out: "ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n", exit: 2},
}

// frame is the case's message as recorded.
func (c unknownStatusCase) frame(t *testing.T) []byte {
	t.Helper()
	if c.update != "" {
		msg := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":` + c.update + `}}`)
		if c.open {
			return opening(t, msg)
		}
		return msg
	}
	for _, f := range loadRecording(t, c.recording) {
		if f.Line == c.line {
			if c.open {
				return opening(t, f.Msg)
			}
			return f.Msg
		}
	}
	t.Fatalf("%s has no line %d", c.recording, c.line)
	return nil
}

// withStatus is msg with the status of its update, `completed`,
// `failed`, `in_progress` or `pending`, made word.
func withStatus(t *testing.T, msg []byte, word string) []byte {
	t.Helper()
	v := valueAt(msg, "PARAMS", "UPDATE", "STATUS")
	at := len(msg) - len(v)
	for _, st := range []string{`"completed"`, `"failed"`, `"in_progress"`, `"pending"`} {
		if bytes.HasPrefix(v, []byte(st)) {
			return append(append(append([]byte(nil), msg[:at]...), `"`+word+`"`...), msg[at+len(st):]...)
		}
	}
	t.Fatalf("the update's status is not one of ACP's: %.300s", msg)
	return nil
}

// combined is what the texts of the combined stream make, applied to
// nothing held: a delta appends, anything else replaces.
func combined(texts []accum.Text) string {
	var out string
	for _, x := range texts {
		if x.Stream != accum.Combined {
			continue
		}
		s := x.Text
		if x.Bytes != nil {
			s = string(x.Bytes)
		}
		if x.Kind == accum.Delta {
			out += s
		} else {
			out = s
		}
	}
	return out
}

func TestUnknownStatusReadsTheFrame(t *testing.T) {
	readsUnknownWords(t, unknownStatusCases, false)
}

// readsUnknownWords reads each case's frame with each of
// unknownStatusWords as its status: the call is not ended, the change is
// reported, and what the frame carries (c.out, c.exit) is read as its
// dialect reads a final's. For openings (the frame is the `tool_call`
// that opens the call), the call opens with the command it names.
func readsUnknownWords(t *testing.T, cases []unknownStatusCase, opening bool) {
	for _, c := range cases {
		d, ok := Lookup(c.dialect)
		require.True(t, ok, c.dialect)
		msg := c.frame(t)
		known, err := Read(d, msg)
		require.NoError(t, err)
		require.NotEmpty(t, known.Observations)
		if opening {
			require.True(t, known.Observations[0].Opens, "the frame opens its call")
		}
		for _, word := range unknownStatusWords {
			name := fmt.Sprintf("%s/%s:%d/%s", c.dialect, c.recording, c.line, word)
			if c.recording == "" {
				name = fmt.Sprintf("%s/%s", c.dialect, word)
			}
			t.Run(name, func(t *testing.T) {
				f, err := Read(d, withStatus(t, msg, word))
				require.NoError(t, err)
				require.NotEmpty(t, f.Observations)
				o := f.Observations[0]
				if opening {
					assert.True(t, o.Opens)
					assert.Equal(t, known.Observations[0].Command, o.Command, "the command the opening names")
				}
				assert.Equal(t, known.Observations[0].ToolCallID, o.ToolCallID)
				assert.Equal(t, accum.StatusNone, o.Status, "an unknown word ends no call")
				assert.Contains(t, o.Unrecognized, accum.Unrecognized{What: accum.UnrecognizedStatus, Field: "status"})
				for _, x := range o.Texts {
					assert.NotEqual(t, accum.Final, x.Kind, "the call is not known to have ended: no final aggregate")
				}
				assert.Equal(t, c.out, combined(o.Texts), "the frame's output")
				if c.exit < 0 {
					assert.True(t, o.Exit == nil || o.Exit.Placeholder, "no exit: %s", describeExit(o.Exit))
					if c.out == "" && !opening {
						assert.False(t, o.Failed || o.Cancelled || o.TimedOut, "nothing says how it ended")
					}
					return
				}
				if assert.NotNil(t, o.Exit, "the exit code the frame states") {
					assert.Equal(t, c.exit, o.Exit.Code)
					assert.False(t, o.Exit.Placeholder, "the exit code the frame states is the command's")
				}
				assert.False(t, o.Succeeded, "a word no status is proves no success")
			})
		}
	}
}

// Read under `failed` (Claude), the words the dialect takes for the
// agent's are held until the call's next known final says whose they
// are: a `completed` one makes Claude's "Exit code 3" header what the
// command printed, a `failed` one (or none) Claude's.
func TestUnknownStatusWordsWaitForTheFinal(t *testing.T) {
	d, _ := Lookup("claude")
	msg := withStatus(t, unknownStatusCase{recording: "agents/claude-agent-acp-0.101.0_air_plain_full.ndjson", line: 28}.frame(t), "timed_out")
	v := valueAt(msg, "PARAMS", "UPDATE")
	update := string(v[:jsonlit.ValueEnd(v, 0)])
	final := func(status string) string {
		return `{"toolCallId":"toolu_exit3_8","sessionUpdate":"tool_call_update","status":"` + status + `"}`
	}
	three := int32(3)
	// The same frame with Claude Code's refusal as its text instead.
	notice := "The user doesn't want to proceed with this tool use."
	refusal := strings.Replace(update, "Exit code 3\\na\\nb\\n", notice, 1)
	require.NotEqual(t, update, refusal)
	for _, tc := range []struct {
		name, update, status string
		out                  string
		exit                 *int32
		outcome              accum.Outcome
	}{
		{"header/completed", update, "completed", "Exit code 3\na\nb\n", nil, accum.Unknown},
		{"header/failed", update, "failed", "a\nb\n", &three, accum.Failed},
		{"refusal/completed", refusal, "completed", notice, nil, accum.Unknown},
		{"refusal/failed", refusal, "failed", "", nil, accum.Cancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, out := foldFrames(t, d, "toolu_exit3_8", tc.update, final(tc.status))
			got := ""
			if out != nil {
				got = out.Text
			}
			assert.Equal(t, tc.out, got)
			assert.Equal(t, tc.exit, r.ExitCode)
			assert.Equal(t, tc.outcome, r.Outcome, r.OutcomeReason)
		})
	}
}

// Read under `completed`, the words are what the dialect makes of them
// on a completed final, with its own rule: Gemini's cancel notice is
// Gemini's only if the user cancelled the turn, so without a cancel it
// is what the command printed, whether or not a final follows.
func TestUnknownStatusKeepsTheDialectsWordRule(t *testing.T) {
	d, _ := Lookup("gemini")
	update := `{"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"timed_out","title":"make","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"Command cancelled by user."}}]}`
	r, out := foldFrames(t, d, "g1", update)
	require.NotNil(t, out)
	assert.Equal(t, accum.Running, r.State)
	c := accum.NewCall("g1", 1<<20)
	obs, err := readCase(d, update, "")
	require.NoError(t, err)
	for i := range obs {
		c.Apply(&obs[i])
	}
	c.End(false, "the turn ended")
	r, ok := c.Revision()
	require.True(t, ok)
	assert.Equal(t, accum.Unknown, r.Outcome, r.OutcomeReason)
	if assert.NotNil(t, r.Texts[accum.Combined]) {
		assert.Equal(t, "Command cancelled by user.", r.Texts[accum.Combined].Text)
	}
}

// A rejection or cancel notice under a word no status is ("declined",
// "rejected"): read under `completed` it would be output, under `failed`
// the agent's. Which it is, the call's next known final says: a
// `completed` one makes the words what the command printed, a `failed`
// one, or none before the turn's end, the agent's notice (the call
// CANCELLED, nothing of it output).
func TestUnknownStatusNoticeWaitsForTheFinal(t *testing.T) {
	for _, c := range []struct {
		dialect, recording string
		line               int
		notice             string
	}{
		{"grok", "agents/grok-1.0.41_plain_full.ndjson", 277, "User rejected the execution for tool `run_terminal_command`"},
		{"opencode", "agents/kilo-7.0.33_bash-ask_full.ndjson", 119, "Error: The user rejected permission to use this specific tool call."},
		{"qwen", "agents/qwen-code-0.21.10_plain_full.ndjson", 99, `Tool "run_shell_command" was canceled by the user.`},
	} {
		d, _ := Lookup(c.dialect)
		msg := unknownStatusCase{recording: c.recording, line: c.line}.frame(t)
		var m struct {
			Params struct {
				Update struct {
					ToolCallID string `json:"toolCallId"`
				} `json:"update"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal(msg, &m))
		id := m.Params.Update.ToolCallID
		for _, word := range []string{"declined", "rejected"} {
			v := valueAt(withStatus(t, msg, word), "PARAMS", "UPDATE")
			update := string(v[:jsonlit.ValueEnd(v, 0)])
			for _, then := range []string{"completed", "failed", ""} {
				t.Run(c.dialect+"/"+word+"/"+then, func(t *testing.T) {
					call := accum.NewCall(id, 1<<20)
					frames := []string{update}
					if then != "" {
						frames = append(frames, `{"sessionUpdate":"tool_call_update","toolCallId":"`+id+`","status":"`+then+`"}`)
					}
					for _, f := range frames {
						obs, err := readCase(d, f, "")
						require.NoError(t, err)
						for i := range obs {
							call.Apply(&obs[i])
						}
					}
					call.End(false, "the turn ended")
					r, ok := call.Revision()
					require.True(t, ok)
					require.Equal(t, accum.Ended, r.State)
					out := ""
					if x := r.Texts[accum.Combined]; x != nil {
						out = x.Text
					}
					if then == "completed" {
						assert.Equal(t, c.notice, out, "the words are what the command printed")
						assert.NotEqual(t, accum.Cancelled, r.Outcome, r.OutcomeReason)
						return
					}
					assert.Empty(t, out, "the agent's notice is no output")
					assert.Equal(t, accum.Cancelled, r.Outcome, r.OutcomeReason)
				})
			}
		}
	}
}

// opening is msg with its update made a `tool_call`, the frame that
// opens a call.
func opening(t *testing.T, msg []byte) []byte {
	t.Helper()
	v := valueAt(msg, "PARAMS", "UPDATE", "SESSIONUPDATE")
	at := len(msg) - len(v)
	if !bytes.HasPrefix(v, []byte(`"tool_call_update"`)) {
		t.Fatalf("the update is no tool_call_update: %.300s", msg)
	}
	return append(append(append([]byte(nil), msg[:at]...), `"tool_call"`...), msg[at+len(`"tool_call_update"`):]...)
}

// unknownOpeningCases are finals sent as the `tool_call` that opens the
// call: session/load's replays, and the recorded finals of
// unknownStatusCases sent so (pi's excepted: pi reads no status of a
// `tool_call`, which its replays send as a header, the end in the
// update after it).
func unknownOpeningCases() []unknownStatusCase {
	cases := []unknownStatusCase{
		{dialect: "gemini", recording: "agents/gemini-cli-0.36.0_debug_load.ndjson", line: 53, out: "a\nb", exit: 3},
		{dialect: "grok", recording: "agents/grok-1.0.41_plain_load.ndjson", line: 172, out: "a\nb\n", exit: 3},
		// pi's replayed header: its status, known or not, says nothing.
		{dialect: "pi", recording: "agents/pi-acp-0.0.23_plain_load.ndjson", line: 83, exit: -1},
		// Claude's live opening, its content the command's description:
		// whatever the word, the description is no output.
		{dialect: "claude", recording: "agents/claude-agent-acp-0.101.0_plain_full.ndjson", line: 21, exit: -1},
	}
	for _, c := range unknownStatusCases {
		if c.dialect != "pi" {
			c.open = true
			cases = append(cases, c)
		}
	}
	return cases
}

// A `tool_call` whose status is none of ACP's four is read as an update
// with that word is: what the frame carries as its dialect reads a
// final's, the call opened but not ended.
func TestUnknownStatusOpeningReadsTheFrame(t *testing.T) {
	readsUnknownWords(t, unknownOpeningCases(), true)
}

// What Copilot states in rawOutput's code under a word no status is: a
// user's rejection (code "rejected") makes the call CANCELLED at its
// end, a refusal of its own (code "failure": the command did not run)
// FAILED, whatever final follows; the message is no output.
func TestUnknownStatusCopilotCode(t *testing.T) {
	d, _ := Lookup("copilot")
	for _, c := range []struct {
		line    int
		id      string
		outcome accum.Outcome
		message string
	}{
		{117, "call_reject_32", accum.Cancelled, "The user rejected this tool call."},
		{108, "call_kill_29", accum.Failed, "Command not executed."},
	} {
		msg := unknownStatusCase{recording: "agents/copilot-1.0.102_plain_full.ndjson", line: c.line}.frame(t)
		for _, word := range []string{"declined", "rejected", "timed_out"} {
			v := valueAt(withStatus(t, msg, word), "PARAMS", "UPDATE")
			update := string(v[:jsonlit.ValueEnd(v, 0)])
			for _, then := range []string{"completed", "failed", ""} {
				t.Run(c.id+"/"+word+"/"+then, func(t *testing.T) {
					call := accum.NewCall(c.id, 1<<20)
					frames := []string{update}
					if then != "" {
						frames = append(frames, `{"sessionUpdate":"tool_call_update","toolCallId":"`+c.id+`","status":"`+then+`"}`)
					}
					for _, f := range frames {
						obs, err := readCase(d, f, "")
						require.NoError(t, err)
						for i := range obs {
							call.Apply(&obs[i])
						}
					}
					call.End(false, "the turn ended")
					r, ok := call.Revision()
					require.True(t, ok)
					assert.Equal(t, c.outcome, r.Outcome, r.OutcomeReason)
					assert.Contains(t, r.OutcomeReason, c.message)
					assert.Nil(t, r.Texts[accum.Combined], "the agent's message is no output")
				})
			}
		}
	}
}

// pi, read under `failed` when the word is none of ACP's, takes a text
// of one line with none of its closing words for its own error message,
// and an empty text for a failure: on a `completed` final the line is
// the command's output, and nothing says it failed. The line waits for
// the call's next known final (a `completed` one makes it output, a
// `failed` one pi's message); when none comes before the turn ends, it
// is output (only a `failed` final makes such a line pi's message, and
// real output is never dropped), the outcome UNKNOWN. A failure read
// from the word alone is none.
func TestUnknownStatusPiWaitsForTheFinal(t *testing.T) {
	d, _ := Lookup("pi")
	frame := func(recording string, line int) string {
		msg := unknownStatusCase{recording: recording, line: line}.frame(t)
		v := valueAt(msg, "PARAMS", "UPDATE")
		return string(v[:jsonlit.ValueEnd(v, 0)])
	}
	status := func(id, s string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"` + s + `"}`
	}
	zero := int32(0)
	for _, c := range []struct {
		name, recording string
		line            int
		id              string
		then            string // a final after the changed one ("" none)
		out             string
		exit            *int32
		outcome         accum.Outcome
		reason          string // in the outcome reason
	}{
		// pi-acp 0.0.23's content wire: `rm -f notes.txt && echo removed`.
		{"line/completed", "agents/pi-acp-0.0.23_plain_full.ndjson", 120, "call_reject_32", status("call_reject_32", "completed"), "removed\n", nil, accum.Unknown, "completed"},
		{"line/failed", "agents/pi-acp-0.0.23_plain_full.ndjson", 120, "call_reject_32", status("call_reject_32", "failed"), "", nil, accum.Failed, "removed"},
		{"line/none", "agents/pi-acp-0.0.23_plain_full.ndjson", 120, "call_reject_32", "", "removed\n", nil, accum.Unknown, "the turn ended"},
		// pi-acp 0.0.34's terminal wire: ls, its output streamed before,
		// the final only terminal_exit 0.
		{"empty/completed", "agents/pi-acp-0.0.34_plain_full.ndjson", 14, "call_ok_2", frame("agents/pi-acp-0.0.34_plain_full.ndjson", 14), "", &zero, accum.Succeeded, "exit code 0"},
		{"empty/failed", "agents/pi-acp-0.0.34_plain_full.ndjson", 14, "call_ok_2", status("call_ok_2", "failed"), "", nil, accum.Failed, "failed"},
		{"empty/none", "agents/pi-acp-0.0.34_plain_full.ndjson", 14, "call_ok_2", "", "", nil, accum.Unknown, "the turn ended"},
	} {
		t.Run(c.name, func(t *testing.T) {
			frames := []string{strings.Replace(frame(c.recording, c.line), `"status":"completed"`, `"status":"timed_out"`, 1)}
			require.NotEqual(t, frame(c.recording, c.line), frames[0])
			if c.then != "" {
				frames = append(frames, c.then)
			}
			call := accum.NewCall(c.id, 1<<20)
			for _, f := range frames {
				obs, err := readCase(d, f, "")
				require.NoError(t, err)
				for i := range obs {
					call.Apply(&obs[i])
				}
			}
			call.End(false, "the turn ended")
			r, ok := call.Revision()
			require.True(t, ok)
			out := ""
			if x := r.Texts[accum.Combined]; x != nil {
				out = x.Text
			}
			assert.Equal(t, c.out, out)
			assert.Equal(t, c.outcome, r.Outcome, r.OutcomeReason)
			assert.Contains(t, r.OutcomeReason, c.reason)
			assert.Equal(t, c.exit, r.ExitCode)
		})
	}
}
