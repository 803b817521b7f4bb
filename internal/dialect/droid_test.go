package dialect

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDroidUpdate(t *testing.T) {
	d, ok := Lookup("droid")
	require.True(t, ok)
	require.Equal(t, "droid", Detect("@factory/cli").Info().Name)
	runObsCases(t, d, []obsCase{
		{
			name:   "tool_call: the command from rawInput, the summary as description, the title's risk suffix never the command",
			update: "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"title\":\"`ls -la` (low)\",\"kind\":\"execute\",\"status\":\"pending\",\"rawInput\":{\"summary\":\"List files\",\"command\":\"ls -la\",\"riskLevelReason\":\"Read only.\",\"riskLevel\":\"low\"}}",
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "ls -la", Description: "List files"}),
		},
		{
			name:   "a title alone gives the command without its backticks and suffix",
			update: "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"title\":\"`rm -rf build` (high)\",\"kind\":\"execute\",\"status\":\"pending\"}",
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "rm -rf build", CommandFromTitle: true}),
		},
		{
			name:   "terminal content with a uuid no client created",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","content":[{"type":"terminal","terminalId":"0c6b5d3e-1d4f"}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Shell: accum.ShellYes, Status: accum.StatusRunning, TerminalID: "0c6b5d3e-1d4f"}),
		},
		{
			name:   "a bare failed: no exit code",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed"}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed}),
		},
		{
			name:   "the second tool_call of a cancel says nothing",
			update: `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Tool call","kind":"other","status":"pending","rawInput":{}}`,
			want:   one(accum.Observation{ToolCallID: "c1", Opens: true, Status: accum.StatusPending}),
		},
		{
			name:   "the cancel notice is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"text":"Error: Tool execution cancelled by user"},"content":[{"type":"content","content":{"type":"text","text":"Error: Tool execution cancelled by user"}}]}`,
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Cancelled: true, CancelNotice: "Error: Tool execution cancelled by user"}),
		},
		{
			name:   "a replayed failure: exit from the markers, the rest is output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"Error: Command failed (exit code: 3)\na\nb\n\n[Process exited with code 3]"}}]}`,
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Exit: ex(3, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "a\nb")}}),
		},
		{
			name:   "output that only mentions the markers mid-text is output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"see [Process exited with code 3] above\n"}}]}`,
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted,
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "see [Process exited with code 3] above\n")}}),
		},
	})
}

func TestDroidAsk(t *testing.T) {
	d, _ := Lookup("droid")
	runObsCases(t, d, []obsCase{{
		name: "the risk level and its reason are why it asks",
		ask:  "{\"toolCallId\":\"c1\",\"title\":\"`rm x` (low)\",\"rawInput\":{\"summary\":\"Remove\",\"command\":\"rm x\",\"riskLevelReason\":\"Deletes one file.\",\"riskLevel\":\"low\"},\"kind\":\"execute\"}",
		want: one(accum.Observation{ToolCallID: "c1", PermissionAsk: true, Shell: accum.ShellYes, Command: "rm x", Description: "Remove", ApprovalReason: "risk level low: Deletes one file."}),
	}})
}

// TestDroidResultNotices: Droid's Execute result, which a session/load
// replay restates as text (rawOutput.text or content), wraps the output in
// notices of its own: a timeout header and "Partial output before
// timeout:", "[... N lines skipped ...]" lines where it summarized a long
// output, a "Full command output saved to:" trailer, and words that stand
// for an empty output. None of them is output; a summarized or saved
// output is truncated.
func TestDroidResultNotices(t *testing.T) {
	d, _ := Lookup("droid")
	update := func(status, text string) string {
		b, err := json.Marshal(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": status, "rawOutput": map[string]any{"text": text}})
		require.NoError(t, err)
		return string(b)
	}
	const timedOut = "Command timed out after 2 seconds. Consider increasing the timeout for long-running commands."
	const saved = "\n\nFull command output saved to: /home/dev/.factory/tool-output/call_big_1.log (341KB)"
	cut := func(s string) accum.Text { x := txt(accum.Combined, accum.Final, s); x.Truncated = true; return x }
	seq := func(from, to int) string { // the lines of seq from to, without the last line end
		var b strings.Builder
		for i := from; i <= to; i++ {
			if i > from {
				b.WriteByte('\n')
			}
			b.WriteString(strconv.Itoa(i))
		}
		return b.String()
	}
	tooLong, tooLongKept := droidNonMiddle(droidLongLines(200), 12000)
	runObsCases(t, d, []obsCase{
		{
			name:   "a timeout: the header is a notice, the partial output is output",
			update: update("failed", "Error: "+timedOut+"\n\nPartial output before timeout:\nstart\n"),
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, TimedOut: true, FailNotice: "Error: " + timedOut,
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "start\n")}}),
		},
		{
			name:   "a timeout with no output, sent as a success",
			update: update("completed", timedOut),
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, TimedOut: true, FailNotice: timedOut}),
		},
		{
			name:   "a timeout whose output was saved to a file: truncated, the trailer is no output",
			update: update("failed", "Error: "+timedOut+"\n\nPartial output before timeout:\n1\n2\n"+saved),
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, TimedOut: true, FailNotice: "Error: " + timedOut,
				Texts: []accum.Text{cut("1\n2\n")}}),
		},
		{
			// The shape of droid-0.215.0_plain_load-long: 30 lines, the
			// mark, 29 lines (the trim took the last line end).
			name:   "a summarized output: the skipped-lines marks and the saved trailer are no output, the output is truncated",
			update: update("completed", seq(1, 30)+"\n[... 3169 lines skipped ...]\n"+seq(59972, 60000)+saved+"\n\n[Process exited with code 0]"),
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{cut(seq(1, 30) + "\n" + seq(59972, 60000))}}),
		},
		{
			// Droid 0.117.0 and a summary of 12,000 to 16,384 bytes in
			// 0.215.0 come without the saved trailer.
			name:   "a summary that kept lines around a keyword, without the saved trailer",
			update: update("failed", "Error: Command failed (exit code: 1)\n"+seq(1, 30)+"\n[... 120 lines skipped ...]\n"+seq(141, 150)+"\nerror: boom\n"+seq(152, 161)+"\n[... 80 lines skipped ...]\n"+seq(242, 271)+"\n\n[Process exited with code 1]"),
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Exit: ex(1, accum.ExitText, false),
				Texts: []accum.Text{cut(seq(1, 30) + "\n" + seq(141, 150) + "\nerror: boom\n" + seq(152, 161) + "\n" + seq(242, 271))}}),
		},
		{
			// The shape Droid writes (droidNonMiddle, 0.215.0's budget).
			name:   "an output too long to summarize",
			update: update("failed", "Error: Command failed (exit code: 1)\n"+tooLong+"\n\n[Process exited with code 1]"),
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Exit: ex(1, accum.ExitText, false),
				Texts: []accum.Text{cut(tooLongKept)}}),
		},
		{
			// Probe M, droid-0.215.0_plain_tricky-load, call_d_skipped_9:
			// Droid summarizes no output this short, the command printed
			// the mark.
			name:   "a skipped-lines mark in a short output is output",
			update: update("completed", "a\n[... 5 lines skipped ...]\nb\n\n\n[Process exited with code 0]"),
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "a\n[... 5 lines skipped ...]\nb\n")}}),
		},
		{
			name:   "a skipped-lines mark near the end of a long output is output",
			update: update("completed", seq(1, 40)+"\n[... 5 lines skipped ...]\n"+seq(41, 43)+"\n\n\n[Process exited with code 0]"),
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, seq(1, 40)+"\n[... 5 lines skipped ...]\n"+seq(41, 43)+"\n")}}),
		},
		{
			name:   "the words for an empty output are no output",
			update: update("completed", "Command completed successfully\n\n[Process exited with code 0]"),
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitText, false)}),
		},
		{
			name:   "SIGPIPE's words for an empty output are no output",
			update: update("completed", "Command terminated early due to SIGPIPE (exit code 141)\n\n[Process exited with code 141]"),
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(141, accum.ExitText, false)}),
		},
		{
			name:   "exit 127 and 126 headers are notices",
			update: update("failed", "Error: Command not found. The command or program may not be installed or not in PATH.\nbash: line 1: nosuch: command not found\n\n\n[Process exited with code 127]"),
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Exit: ex(127, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "bash: line 1: nosuch: command not found\n")}}),
		},
		{
			name:   "exit 126 header alone",
			update: update("failed", "Error: Command not executable. Check file permissions.\n\n[Process exited with code 126]"),
			want:   one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Exit: ex(126, accum.ExitText, false)}),
		},
		{
			name:   "the sandbox trailer is no output",
			update: update("failed", "Error: Command failed (exit code: 6)\ncurl: (6) Could not resolve host\n\nSandbox: network access was denied to: example.com\n\n[Process exited with code 6]"),
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Exit: ex(6, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "curl: (6) Could not resolve host")}}),
		},
		{
			name:   "output that only mentions the marks is output",
			update: update("completed", "see [... 3 lines skipped ...] and Partial output before timeout: here\n\n[Process exited with code 0]"),
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "see [... 3 lines skipped ...] and Partial output before timeout: here")}}),
		},
	})
}

// TestDroidReplayedOutputLikeItsHeader: Droid 0.215.0 without a client
// terminal sends a command's text only in its session/load replay. The
// first three frames are from a real replay (probe Q,
// droid-0.215.0_plain_probeq3) of commands whose own first line reads
// like Droid's failure header and that exited 0: `completed`, and the
// trailer "[Process exited with code 0]". Droid's real failures are
// `failed`, and their header names the trailer's code (its recordings:
// "Error: Command failed (exit code: 3)\na\nb\n\n\n[Process exited with
// code 3]"); its timeout header comes without a trailer. A header that
// the status or the trailer contradicts is the command's first line.
func TestDroidReplayedOutputLikeItsHeader(t *testing.T) {
	d, _ := Lookup("droid")
	update := func(id, status, text string) string {
		b, err := json.Marshal(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": status, "rawOutput": map[string]any{"text": text}})
		require.NoError(t, err)
		return string(b)
	}
	done, failed := accum.StatusCompleted, accum.StatusFailed
	output := func(id string, status accum.Status, code int32, s string) []accum.Observation {
		return one(accum.Observation{ToolCallID: id, Status: status, Exit: ex(code, accum.ExitText, false), Texts: []accum.Text{txt(accum.Combined, accum.Final, s)}})
	}
	runObsCases(t, d, []obsCase{
		{
			name:   "an exit header under completed with trailer 0 is output",
			update: update("call_droid_head_fail_2", "completed", "Command failed (exit code: 5)\ndroid-after\n\n\n[Process exited with code 0]"),
			want:   output("call_droid_head_fail_2", done, 0, "Command failed (exit code: 5)\ndroid-after\n"),
		},
		{
			name:   "a signal header under completed with trailer 0 is output",
			update: update("call_droid_head_sig_6", "completed", "Command terminated by signal: KILL\ndroid-after2\n\n\n[Process exited with code 0]"),
			want:   output("call_droid_head_sig_6", done, 0, "Command terminated by signal: KILL\ndroid-after2\n"),
		},
		{
			name:   "an Error: exit header under completed with trailer 0 is output",
			update: update("call_droid_head_err_9", "completed", "Error: Command failed (exit code: 2)\ndroid-after3\n\n\n[Process exited with code 0]"),
			want:   output("call_droid_head_err_9", done, 0, "Error: Command failed (exit code: 2)\ndroid-after3\n"),
		},
		{
			name:   "a real failure: its header names the trailer's code",
			update: update("c1", "failed", "Error: Command failed (exit code: 3)\na\nb\n\n\n[Process exited with code 3]"),
			want:   output("c1", failed, 3, "a\nb\n"),
		},
		{
			name:   "an exit header the trailer contradicts is output, even under failed",
			update: update("c1", "failed", "Error: Command failed (exit code: 5)\nx\n\n\n[Process exited with code 3]"),
			want:   output("c1", failed, 3, "Error: Command failed (exit code: 5)\nx\n"),
		},
		{
			name:   "a timeout header before a trailer is output",
			update: update("c1", "completed", "Command timed out after 2 seconds. Consider increasing the timeout for long-running commands.\nx\n\n\n[Process exited with code 0]"),
			want:   output("c1", done, 0, "Command timed out after 2 seconds. Consider increasing the timeout for long-running commands.\nx\n"),
		},
	})
}

// TestDroidMissionTools: Droid 0.215.0 gives a tool the kind of the first
// keyword its name holds (jyH: "bash", "exec", "shell", "command", "run"
// make execute) and titles it with its name (kyH, for tools it does not
// describe): StartMissionRun and EndFeatureRun are kind execute. They are
// no shell calls, nor shells it missed; Execute still is one.
func TestDroidMissionTools(t *testing.T) {
	d := mustDialect(t, "droid")
	for _, name := range []string{"StartMissionRun", "EndFeatureRun"} {
		obs := readUpdate(t, d, `{"sessionUpdate":"tool_call","toolCallId":"toolu_1","title":"`+name+`","kind":"execute","status":"pending","rawInput":{"missionId":"m1"}}`)
		require.Len(t, obs, 1)
		assert.Equal(t, accum.ShellNo, obs[0].Shell, name)
		assert.Empty(t, obs[0].Unrecognized, name)

		f, err := Read(d, []byte(`{"jsonrpc":"2.0","id":2,"method":"session/request_permission","params":{"sessionId":"s","options":[],"toolCall":{"toolCallId":"toolu_2","title":"`+name+`","rawInput":{"featureId":"f1"},"kind":"execute"}}}`))
		require.NoError(t, err)
		require.Len(t, f.Observations, 1)
		assert.Equal(t, accum.ShellNo, f.Observations[0].Shell, name)
		assert.Empty(t, f.Observations[0].Unrecognized, name)
	}
	obs := readUpdate(t, d, "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"toolu_3\",\"title\":\"`ls` (low)\",\"kind\":\"execute\",\"status\":\"pending\",\"rawInput\":{\"command\":\"ls\",\"riskLevel\":\"low\"}}")
	require.Len(t, obs, 1)
	assert.Equal(t, accum.ShellYes, obs[0].Shell)
}

// droidLongLines is n lines of 500 characters with no word Droid's
// summary looks for: no head-and-tail summary of them fits 12,000 (or
// 24,000) characters, so Droid falls back to droidNonMiddle.
func droidLongLines(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %03d ", i+1) + strings.Repeat("x", 491)
	}
	return lines
}

// droidNonMiddle is Droid's text for an output too long to summarize
// (iF0 in 0.215.0's bundle, the same function in 0.99.0 to 0.117.0, lines
// of ASCII): the lines of each end in turn, first from the head, until
// the next would pass maxLength less the mark's "\n"+mark+"\n", joined
// by line ends with that mark between head and tail (so a blank line on
// each side of it). kept is what the dialect makes of it: the head and
// tail, joined by one line end.
func droidNonMiddle(lines []string, maxLength int) (text, kept string) {
	mark := "\n[... output too long to summarize ...]\n"
	budget := maxLength - len(mark)
	var head, tail []string
	n := 0
	for f, u := 0, len(lines)-1; f <= u; {
		if n += len(lines[f]) + 1; n > budget {
			break
		}
		head, f = append(head, lines[f]), f+1
		if f > u {
			break
		}
		if n += len(lines[u]) + 1; n > budget {
			break
		}
		tail, u = append(tail, lines[u]), u-1
	}
	slices.Reverse(tail)
	text = strings.Join(slices.Concat(head, []string{mark}, tail), "\n")
	return text, strings.Join(head, "\n") + "\n" + strings.Join(tail, "\n")
}

// TestDroidTooLongMark: Droid writes "[... output too long to summarize
// ...]" only where no summary of a long output fits its limit (12,000
// characters in 0.215.0, 24,000 in 0.99.0 to 0.117.0): between the lines
// it kept from both ends, in turn (as many after it as before, or one
// fewer), about as much text as its limit, with a blank line on each
// side; or, when that fails, as the whole text. Only there is it Droid's
// (not output, the output truncated); a command that prints the line
// keeps it.
func TestDroidTooLongMark(t *testing.T) {
	d, _ := Lookup("droid")
	update := func(status, text string) string {
		b, err := json.Marshal(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": status, "rawOutput": map[string]any{"text": text}})
		require.NoError(t, err)
		return string(b)
	}
	const mark = "[... output too long to summarize ...]"
	const saved = "\n\nFull command output saved to: /home/dev/.factory/tool-output/call_big_1.log (98KB)"
	cut := func(s string) accum.Text { x := txt(accum.Combined, accum.Final, s); x.Truncated = true; return x }
	short, shortKept := droidNonMiddle(droidLongLines(200), 12000)
	old, oldKept := droidNonMiddle(droidLongLines(200), 24000)
	exit0 := func(texts ...accum.Text) []accum.Observation {
		return one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitText, false), Texts: texts})
	}
	runObsCases(t, d, []obsCase{
		{
			name:   "0.215.0: the mark between head and tail is no output",
			update: update("completed", short+"\n\n[Process exited with code 0]"),
			want:   exit0(cut(shortKept)),
		},
		{
			// An output over 16 KiB: 0.215.0 saved it to a file.
			name:   "0.215.0: the mark before the saved trailer",
			update: update("completed", short+saved+"\n\n[Process exited with code 0]"),
			want:   exit0(cut(shortKept)),
		},
		{
			name:   "0.99.0 to 0.117.0: the mark between head and tail of 24,000 characters",
			update: update("failed", "Error: Command failed (exit code: 2)\n"+old+"\n\n[Process exited with code 2]"),
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Exit: ex(2, accum.ExitText, false),
				Texts: []accum.Text{cut(oldKept)}}),
		},
		{
			name:   "the mark as the whole text",
			update: update("completed", mark+"\n\n[Process exited with code 0]"),
			want:   exit0(),
		},
		{
			name:   "a short output printing the mark keeps it",
			update: update("completed", "a\n"+mark+"\nb\n\n\n[Process exited with code 0]"),
			want:   exit0(txt(accum.Combined, accum.Final, "a\n"+mark+"\nb\n")),
		},
		{
			name:   "a short output printing the mark between blank lines keeps it",
			update: update("completed", "a\n\n"+mark+"\n\nb\n\n\n[Process exited with code 0]"),
			want:   exit0(txt(accum.Combined, accum.Final, "a\n\n"+mark+"\n\nb\n")),
		},
		{
			name:   "a long output printing the mark away from its middle keeps it",
			update: update("completed", short+"\nmore\nlines\n\n\n[Process exited with code 0]"),
			want:   exit0(txt(accum.Combined, accum.Final, short+"\nmore\nlines\n")),
		},
		{
			name:   "the mark with its line end is output",
			update: update("completed", mark+"\n\n\n[Process exited with code 0]"),
			want:   exit0(txt(accum.Combined, accum.Final, mark+"\n")),
		},
	})
}

// droidMiddleText is the text Droid 0.215.0's Execute tool keeps of an
// output over 16 KiB (readSummaryOutput with maxBytes 16384): its first
// 8,192 bytes, then a blank line, "[... truncated N bytes from middle
// section ...]" (N: the bytes it read of neither end), a blank line and
// its last 8,192 bytes from their first whole line; that text is then
// summarized like any other, which leaves it so when it holds 12,000
// characters at most (the test's outputs do). kept is what the dialect
// makes of it: the head and the tail, joined by one line end.
func droidMiddleText(t *testing.T, out string) (text, kept string) {
	t.Helper()
	require.Greater(t, len(out), 16384)
	head, tail := out[:8192], out[len(out)-8192:]
	if i := strings.IndexByte(tail, '\n'); i >= 0 {
		tail = tail[i+1:]
	}
	require.True(t, utf8.ValidString(head) && utf8.ValidString(tail))
	text = head + "\n\n[... truncated " + strconv.Itoa(len(out)-16384) + " bytes from middle section ...]\n\n" + tail
	require.LessOrEqual(t, utf8.RuneCountInString(text), 12000)
	return text, head + "\n" + tail
}

// TestDroidMiddleMark: Droid 0.215.0 keeps of an output over 16 KiB its
// first and last 8 KiB with "[... truncated N bytes from middle section
// ...]" between them, a blank line on each side, and ends its result with
// the "Full command output saved to" trailer (readSummaryOutput says
// truncated, and its terminal gives the file). That mark, when its
// summary keeps it, is no output; the output is truncated and had N bytes
// more than the 16,384 it read. 0.99.0 to 0.117.0 have no such mark: there,
// and without the trailer, or not between blank lines, the line is output.
func TestDroidMiddleMark(t *testing.T) {
	update := func(status, text string) string {
		b, err := json.Marshal(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": status, "rawOutput": map[string]any{"text": text}})
		require.NoError(t, err)
		return string(b)
	}
	const saved = "\n\nFull command output saved to: /home/dev/.factory/tool-output/call_big_1.log (32KB)"
	const timedOut = "Command timed out after 2 seconds. Consider increasing the timeout for long-running commands."
	var b strings.Builder
	for i := range 1000 { // 33,000 bytes of 20-character lines
		fmt.Fprintf(&b, "%s%06d\n", strings.Repeat("ж", 13), i)
	}
	out := b.String()
	text, kept := droidMiddleText(t, out)
	cut := func(s string, total int64) accum.Text {
		x := txt(accum.Combined, accum.Final, s)
		x.Truncated, x.TotalBytes = true, total
		return x
	}
	exit0 := func(texts ...accum.Text) []accum.Observation {
		return one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitText, false), Texts: texts})
	}
	const mark = "[... truncated 5 bytes from middle section ...]"
	d, _ := Lookup("droid")
	for _, v := range []string{"an unknown build:", "0.215.0:"} {
		runObsCases(t, Bind(d, ParseVersion(strings.TrimSuffix(v, ":"))), []obsCase{
			{
				name:   v + " the mark between the ends is no output, the output had its bytes more",
				update: update("completed", text+saved+"\n\n[Process exited with code 0]"),
				want:   exit0(cut(kept, int64(len(out)))),
			},
			{
				name:   v + " the mark in a timeout's partial output",
				update: update("completed", timedOut+"\n\nPartial output before timeout:\n"+text+saved),
				want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, TimedOut: true, FailNotice: timedOut,
					Texts: []accum.Text{cut(kept, int64(len(out)))}}),
			},
			{
				name:   v + " without the saved trailer the mark is output",
				update: update("completed", "a\n\n"+mark+"\n\nb\n\n\n[Process exited with code 0]"),
				want:   exit0(txt(accum.Combined, accum.Final, "a\n\n"+mark+"\n\nb\n")),
			},
			{
				name:   v + " the mark not between blank lines is output",
				update: update("completed", "a\n"+mark+"\nb\n"+saved+"\n\n[Process exited with code 0]"),
				want:   exit0(cut("a\n"+mark+"\nb\n", 0)),
			},
			{
				name:   v + " two marks between blank lines: which is Droid's is not known, both are output",
				update: update("completed", "a\n\n"+mark+"\n\nb\n\n"+mark+"\n\nc"+saved+"\n\n[Process exited with code 0]"),
				want:   exit0(cut("a\n\n"+mark+"\n\nb\n\n"+mark+"\n\nc", 0)),
			},
		})
	}
	runObsCases(t, Bind(d, ParseVersion("0.117.0")), []obsCase{{
		name:   "0.117.0 writes no such mark: the line is output",
		update: update("completed", text+saved+"\n\n[Process exited with code 0]"),
		want:   exit0(cut(text, 0)),
	}})
}

// droidCutLine is Droid's cut of an output line over 600 characters (pWM
// in 0.215.0's bundle, the same in 0.99.0 to 0.117.0), in its arithmetic:
// JavaScript lengths (UTF-16 code units), A = floor(600/2) - 21/2 = 289.5,
// line.substring(0, A) (the first 289 units), " ... [truncated] ... ",
// line.substring(line.length - A) (the last 290); the text is made well
// formed after (toWellFormed: a surrogate pair it split is U+FFFD).
func droidCutLine(line string) string {
	const joiner = " ... [truncated] ... "
	u := utf16.Encode([]rune(line))
	if len(u) <= 600 {
		return line
	}
	a := math.Floor(600/2) - float64(len(joiner))/2
	return string(utf16.Decode(u[:int(a)])) + joiner + string(utf16.Decode(u[int(float64(len(u))-a):]))
}

// droidCutLines is Droid's text for an output over its limit (12,000
// characters in 0.215.0, 24,000 before) whose lines, each cut by
// droidCutLine and joined by line ends, fit that limit: $jH returns it so,
// with no other mark.
func droidCutLines(t *testing.T, out string, limit int) string {
	t.Helper()
	require.Greater(t, len(utf16.Encode([]rune(out))), limit)
	lines := regexp.MustCompile(`\r?\n`).Split(out, -1)
	for i, l := range lines {
		lines[i] = droidCutLine(l)
	}
	text := strings.Join(lines, "\n")
	require.LessOrEqual(t, len(utf16.Encode([]rune(text))), limit)
	require.NotEqual(t, out, text)
	return text
}

// TestDroidLineCut: Droid (every build studied) summarizes an Execute
// output over its limit by first cutting each line over 600 characters to
// its first 289 and last 290 joined by " ... [truncated] ... " (a line of
// 600), and returns that when it fits, with no other mark and no saved
// trailer (the output was at most 16 KiB). The text stays as sent (the cut
// characters are gone), but the output is truncated. A line in the same
// words of another shape is the command's, untouched.
func TestDroidLineCut(t *testing.T) {
	update := func(status, text string) string {
		b, err := json.Marshal(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": status, "rawOutput": map[string]any{"text": text}})
		require.NoError(t, err)
		return string(b)
	}
	cut := func(s string) accum.Text { x := txt(accum.Combined, accum.Final, s); x.Truncated = true; return x }
	exit0 := func(texts ...accum.Text) []accum.Observation {
		return one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitText, false), Texts: texts})
	}
	const joiner = " ... [truncated] ... "
	const timedOut = "Command timed out after 2 seconds. Consider increasing the timeout for long-running commands."
	long := strings.Repeat("0123456789", 1300)
	ascii := droidCutLines(t, "start\n"+long+"\nend\n", 12000)
	// A surrogate pair at the cut: the head's 289th unit is half an emoji.
	wide := droidCutLines(t, strings.Repeat("ж", 288)+"😀"+strings.Repeat("ж", 500)+"\r\n"+long+"\n", 12000)
	require.Contains(t, wide, "\uFFFD"+joiner)
	old := droidCutLines(t, "start\n"+strings.Repeat("0123456789", 2500)+"\nend", 24000)
	shape := func(head, tail int) string { return strings.Repeat("a", head) + joiner + strings.Repeat("b", tail) }
	d, _ := Lookup("droid")
	runObsCases(t, d, []obsCase{
		{
			name:   "a line Droid cut: the text as sent, truncated",
			update: update("completed", ascii+"\n\n[Process exited with code 0]"),
			want:   exit0(cut(ascii)),
		},
		{
			name:   "a line Droid cut in its arithmetic (UTF-16, a split pair made U+FFFD)",
			update: update("completed", wide+"\n\n[Process exited with code 0]"),
			want:   exit0(cut(wide)),
		},
		{
			name:   "a line Droid cut in a timeout's partial output",
			update: update("completed", timedOut+"\n\nPartial output before timeout:\n"+ascii),
			want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusCompleted, TimedOut: true, FailNotice: timedOut,
				Texts: []accum.Text{cut(ascii)}}),
		},
		{
			name:   "the words in a short line are output",
			update: update("completed", "a"+joiner+"b\n\n\n[Process exited with code 0]"),
			want:   exit0(txt(accum.Combined, accum.Final, "a"+joiner+"b\n")),
		},
		{
			name:   "a line of 601 is no cut of Droid's",
			update: update("completed", shape(289, 291)+"\n\n\n[Process exited with code 0]"),
			want:   exit0(txt(accum.Combined, accum.Final, shape(289, 291)+"\n")),
		},
		{
			name:   "a line of 599 is no cut of Droid's",
			update: update("completed", shape(288, 290)+"\n\n\n[Process exited with code 0]"),
			want:   exit0(txt(accum.Combined, accum.Final, shape(288, 290)+"\n")),
		},
		{
			name:   "a line of 600 with the words off their place is no cut of Droid's",
			update: update("completed", shape(290, 289)+"\n\n\n[Process exited with code 0]"),
			want:   exit0(txt(accum.Combined, accum.Final, shape(290, 289)+"\n")),
		},
		{
			name:   "a line of 600 bytes but fewer characters is no cut of Droid's",
			update: update("completed", strings.Repeat("ж", 144)+"a"+joiner+strings.Repeat("b", 290)+"\n\n\n[Process exited with code 0]"),
			want:   exit0(txt(accum.Combined, accum.Final, strings.Repeat("ж", 144)+"a"+joiner+strings.Repeat("b", 290)+"\n")),
		},
	})
	runObsCases(t, Bind(d, ParseVersion("0.99.0")), []obsCase{{
		name:   "0.99.0: a line cut in an output over 24,000 characters",
		update: update("failed", "Error: Command failed (exit code: 2)\n"+old+"\n\n[Process exited with code 2]"),
		want: one(accum.Observation{ToolCallID: "c1", Status: accum.StatusFailed, Exit: ex(2, accum.ExitText, false),
			Texts: []accum.Text{cut(old)}}),
	}})
}

// TestDroidReplayedOutputLikeItsCancel: without a client terminal Droid
// sends a command's text only in its session/load replay, the output
// followed by "[Process exited with code N]" under `completed` (or, for a
// failure, `failed` with its header first). Its cancel and rejection
// notice ("Error: Tool execution cancelled by user", "Tool execution
// cancelled by user" in a replay, "Error: Tool execution cancelled: Batch
// cancelled") comes only `failed`, alone, with no trailer: nothing ran to
// an exit. A command that printed the words and exited (the
// tricky-cancel-load recordings, k_droid_cancel) is no cancel: its output
// is kept and its exit is the trailer's.
func TestDroidReplayedOutputLikeItsCancel(t *testing.T) {
	d, _ := Lookup("droid")
	update := func(status, text string) string {
		b, err := json.Marshal(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": status, "rawOutput": map[string]any{"text": text}})
		require.NoError(t, err)
		return string(b)
	}
	done, failed := accum.StatusCompleted, accum.StatusFailed
	output := func(status accum.Status, code int32, s string) []accum.Observation {
		return one(accum.Observation{ToolCallID: "c1", Status: status, Exit: ex(code, accum.ExitText, false), Texts: []accum.Text{txt(accum.Combined, accum.Final, s)}})
	}
	cancelled := func(notice string) []accum.Observation {
		return one(accum.Observation{ToolCallID: "c1", Status: failed, Cancelled: true, CancelNotice: notice})
	}
	runObsCases(t, d, []obsCase{
		{
			name:   "the cancel notice's words printed by a command that exited 0",
			update: update("completed", "Tool execution cancelled\n\n\n[Process exited with code 0]"),
			want:   output(done, 0, "Tool execution cancelled\n"),
		},
		{
			name:   "the whole notice printed by a command that exited 0",
			update: update("completed", "Error: Tool execution cancelled by user\n\n\n[Process exited with code 0]"),
			want:   output(done, 0, "Error: Tool execution cancelled by user\n"),
		},
		{
			name:   "the rejection's words under a failure's header, exit 1",
			update: update("failed", "Error: Command failed (exit code: 1)\nError: Tool execution rejected\n\n\n[Process exited with code 1]"),
			want:   output(failed, 1, "Error: Tool execution rejected\n"),
		},
		{
			name:   "the notice's words, then more output, under failed with a trailer",
			update: update("failed", "Tool execution cancelled by user\nmore\n\n\n[Process exited with code 2]"),
			want:   output(failed, 2, "Tool execution cancelled by user\nmore\n"),
		},
		{
			name:   "the notice live: failed, alone",
			update: update("failed", "Error: Tool execution cancelled by user"),
			want:   cancelled("Error: Tool execution cancelled by user"),
		},
		{
			name:   "the notice replayed without Error:",
			update: update("failed", "Tool execution cancelled by user"),
			want:   cancelled("Tool execution cancelled by user"),
		},
		{
			name:   "the batch cancel",
			update: update("failed", "Error: Tool execution cancelled: Batch cancelled"),
			want:   cancelled("Error: Tool execution cancelled: Batch cancelled"),
		},
	})
}
