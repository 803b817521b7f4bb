package dialect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// byteJSON writes b as a JSON array of byte values, as Grok does.
func byteJSON(b []byte) string {
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	out, _ := json.Marshal(ints)
	return string(out)
}

func TestGrokUpdate(t *testing.T) {
	d, ok := Lookup("grok")
	if !ok {
		t.Fatal("grok not registered")
	}
	meta := `"_meta":{"x.ai/tool":{"name":"run_terminal_command","kind":"execute","extra":1}}`
	live := func(out string, exit string, content string) string {
		return `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":` + content + `}}],"rawOutput":{"output":` + out + `,"output_for_prompt":"exit: 0\nx","exit_code":` + exit + `,"truncated":false,"signal":null,"timed_out":false,"total_bytes":2,"output_delta":[120,10],"current_dir":"/w"}}`
	}
	bad := []byte("\xff\xfe ok\r\n")
	runObsCases(t, d, []obsCase{
		{
			name:   "first frame: no kind, no status; shell from _meta; title is the tool",
			update: `{"sessionUpdate":"tool_call","toolCallId":"k1","title":"run_terminal_command","rawInput":{"command":"npm test","description":"Run the tests","timeout":60000},` + meta + `}`,
			want:   []accum.Observation{{ToolCallID: "k1", Opens: true, Shell: accum.ShellYes, Command: "npm test", Description: "Run the tests"}},
		},
		{
			name:   "status-less update: Execute title, description in content is not output",
			update: "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"k1\",\"kind\":\"execute\",\"title\":\"Execute `npm test`\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"Run the tests\"}}]}",
			want:   []accum.Observation{{ToolCallID: "k1", Shell: accum.ShellYes, Command: "npm test", CommandFromTitle: true, Description: "Run the tests"}},
		},
		{
			name:   "live: byte output is the one Snapshot source; exit 0 is a placeholder",
			update: live(byteJSON([]byte("x\n")), "0", `"x\n"`),
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusRunning, Cwd: "/w", Exit: ex(0, accum.ExitStructured, true),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Snapshot, Bytes: []byte("x\n")}}}},
		},
		{
			name:   "live without byte output: content is the Snapshot",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"x\ny\n"}}]}`,
			want:   []accum.Observation{{ToolCallID: "k1", Status: accum.StatusRunning, Texts: []accum.Text{txt(accum.Combined, accum.Snapshot, "x\ny\n")}}},
		},
		{
			name:   "live with only output_delta: a Delta",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"in_progress","rawOutput":{"output_delta":[121,10],"exit_code":0}}`,
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusRunning, Exit: ex(0, accum.ExitStructured, true),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Delta, Bytes: []byte("y\n")}}}},
		},
		{
			name:   "final nonzero under completed: real exit, signal, invalid UTF-8 bytes",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"\ufffd\ufffd ok\r\n"}}],"rawOutput":{"exit_code":137,"signal":"SIGKILL","timed_out":false,"truncated":false,"total_bytes":7,"output":` + byteJSON(bad) + `,"output_for_prompt":"exit: 137\n\ufffd\ufffd ok"}}`,
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusCompleted, Exit: ex(137, accum.ExitStructured, false), Signal: "SIGKILL",
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Bytes: bad}}}},
		},
		{
			name:   "final timed out and truncated: a part of the output, a Window",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","rawOutput":{"exit_code":null,"signal":"KILL","timed_out":true,"truncated":true,"output":[97]}}`,
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusCompleted, Signal: "SIGKILL", TimedOut: true,
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Window, Bytes: []byte("a"), Truncated: true}}}},
		},
		{
			name:   "1.0.41 killed: failed, exit_code -1 is no exit, signal 9 is SIGKILL, exit line not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"before-kill\n"}}],"rawOutput":{"type":"Bash","output":` + byteJSON([]byte("before-kill\n")) + `,"output_for_prompt":"exit: killed (signal 9)\nbefore-kill\n","exit_code":-1,"truncated":false,"signal":"signal 9","timed_out":false,"total_bytes":12}}`,
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusFailed, Signal: "SIGKILL",
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Bytes: []byte("before-kill\n")}}}},
		},
		{
			name:   "1.0.41 failed with output that says cancelled: output, not a cancel",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"job cancelled\n"}}],"rawOutput":{"type":"Bash","output":` + byteJSON([]byte("job cancelled\n")) + `,"output_for_prompt":"exit: -1\njob cancelled\n","exit_code":-1,"signal":null}}`,
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusFailed, Failed: true,
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Bytes: []byte("job cancelled\n")}}}},
		},
		{
			name:   "1.0.41 big live: the last 10,000 bytes, truncated, of total_bytes: a Window",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"9\n10\n"}}],"rawOutput":{"type":"Bash","output":` + byteJSON([]byte("9\n10\n")) + `,"output_for_prompt":"9\n10\n","exit_code":0,"truncated":true,"signal":null,"timed_out":false,"total_bytes":348894}}`,
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusRunning, Exit: ex(0, accum.ExitStructured, true),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Window, Bytes: []byte("9\n10\n"), Truncated: true, TotalBytes: 348894}}}},
		},
		{
			name:   "1.0.41 big final: head, marker, tail; only the tail is read, the exit line's truncation note is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","rawOutput":{"type":"Bash","output":` + byteJSON([]byte("1\n2\n\n\n... (output truncated) ...\n\n9\n10\n")) + `,"output_for_prompt":"exit: 0 [truncated: showing first/last 19.6 KB of 340.7 KB - full output at: /h/.grok/x.log]\n1\n2\n\n\n... (output truncated) ...\n\n9\n10\n","exit_code":0,"truncated":true,"signal":null,"timed_out":false,"total_bytes":348894}}`,
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Window, Bytes: []byte("9\n10\n"), Truncated: true, TotalBytes: 348894}}}},
		},
		{
			name:   "1.0.41 big final without bytes: the exit line's note still marks the output truncated",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","rawOutput":{"type":"Bash","output_for_prompt":"exit: 0 [truncated: showing first/last 19.6 KB of 340.7 KB - full output at: /h/x.log]\n1\n\n\n... (output truncated) ...\n\n10\n","total_bytes":348894}}`,
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitText, false),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Window, Text: "10\n", Truncated: true, TotalBytes: 348894}}}},
		},
		{
			name:   "1.0.41 past its timeout: moved to the background, still running; the notice is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","title":"[bg] sleep 6 (k1)","content":[{"type":"content","content":{"type":"text","text":"Command \"Wait\" has been automatically moved to background because it exceeded auto-background timeout limit of 2s. Process is still running."}}],"rawOutput":{"type":"BackgroundTaskStarted","task_id":"k1","status":"running","command":"sleep 6","summary":"Command \"Wait\" has been automatically moved to background ...","pid":17385}}`,
			want:   []accum.Observation{{ToolCallID: "k1", Status: accum.StatusCompleted, Background: true}},
		},
		{
			name:   "1.0.41 replayed by session/load: one tool_call with the final state",
			update: "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"k1\",\"title\":\"Execute `printf 'a\\\\nb\\\\n'; exit 3`\",\"kind\":\"execute\",\"status\":\"completed\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"a\\nb\\n\"}}],\"rawInput\":{\"variant\":\"Bash\",\"command\":\"printf 'a\\\\nb\\\\n'; exit 3\",\"description\":\"Two lines\",\"is_background\":false},\"rawOutput\":{\"type\":\"Bash\",\"output\":[97,10,98,10],\"output_for_prompt\":\"exit: 3\\na\\nb\\n\",\"exit_code\":3,\"truncated\":false,\"signal\":null,\"timed_out\":false,\"current_dir\":\"/w\",\"total_bytes\":4},\"_meta\":{\"x.ai/tool\":{\"name\":\"run_terminal_command\",\"kind\":\"execute\"}}}",
			want: []accum.Observation{{ToolCallID: "k1", Opens: true, Shell: accum.ShellYes, Command: `printf 'a\nb\n'; exit 3`, Description: "Two lines", Cwd: "/w", Status: accum.StatusCompleted, Exit: ex(3, accum.ExitStructured, false),
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Bytes: []byte("a\nb\n")}}}},
		},
		{
			name:   "final without exit_code or bytes: exit line of output_for_prompt is metadata",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","rawOutput":{"output_for_prompt":"exit: 3\na\nb\n"}}`,
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusCompleted, Exit: ex(3, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "a\nb\n")}}},
		},
		{
			name:   "final with content only (CRLF kept as sent)",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"a\r\nb\r\n"}}],"rawOutput":{"exit_code":0}}`,
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "a\r\nb\r\n")}}},
		},
		{
			name:   "rejected: failed → Cancelled, text not output",
			update: "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"k1\",\"status\":\"failed\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"User rejected the execution for tool `run_terminal_command`\"}}]}",
			want:   []accum.Observation{{ToolCallID: "k1", Status: accum.StatusFailed, Cancelled: true, CancelNotice: "User rejected the execution for tool `run_terminal_command`"}},
		},
		{
			name:   "other failure: Failed",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"failed to spawn shell"}}]}`,
			want:   []accum.Observation{{ToolCallID: "k1", Status: accum.StatusFailed, Failed: true}},
		},
		{
			name:   "lenient: output of another type falls back to content",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"a"}}],"rawOutput":{"output":{"x":1},"exit_code":"0"}}`,
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusCompleted, Exit: ex(0, accum.ExitStructured, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "a")}}},
		},
		{
			name:   "the model asks for the background",
			update: "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"k1\",\"kind\":\"execute\",\"title\":\"Execute `npm start`\",\"rawInput\":{\"variant\":\"Bash\",\"command\":\"npm start\",\"description\":\"Serve\",\"is_background\":true}}",
			want:   []accum.Observation{{ToolCallID: "k1", Shell: accum.ShellYes, Command: "npm start", Description: "Serve", Background: true}},
		},
		{
			name:   "other tools untouched",
			update: `{"sessionUpdate":"tool_call","toolCallId":"r1","title":"read_file","kind":"read","_meta":{"x.ai/tool":{"name":"read_file","kind":"read"}}}`,
			want:   []accum.Observation{{ToolCallID: "r1", Opens: true, Shell: accum.ShellNo}},
		},
	})
}

func TestGrokPermission(t *testing.T) {
	d, _ := Lookup("grok")
	runObsCases(t, d, []obsCase{{
		name: "ask",
		ask:  `{"toolCallId":"k1","title":"run_terminal_command","rawInput":{"command":"rm -rf x","description":"Clean"},"_meta":{"x.ai/tool":{"name":"run_terminal_command"}},"content":[{"type":"content","content":{"type":"text","text":"Clean"}}]}`,
		want: []accum.Observation{{ToolCallID: "k1", Shell: accum.ShellYes, PermissionAsk: true, Command: "rm -rf x", Description: "Clean"}},
	}})
	for _, name := range []string{"grok", "grok-cli"} {
		if got := Detect(name).Info().Name; got != "grok" {
			t.Errorf("Detect(%q) = %s", name, got)
		}
	}
}

// TestGrokSession reads a whole call as Grok sends it and checks that the
// session sees one shell call whose output is never doubled.
func TestGrokSession(t *testing.T) {
	d, _ := Lookup("grok")
	out1, out2 := []byte("line1\n"), []byte("line1\nline2\n")
	frames := []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"k1","title":"run_terminal_command","rawInput":{"command":"make","description":"Build"},"_meta":{"x.ai/tool":{"name":"run_terminal_command","kind":"execute"}}}}}`,
		"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"k1\",\"kind\":\"execute\",\"title\":\"Execute `make`\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"Build\"}}]}}}",
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"line1\n"}}],"rawOutput":{"output":` + byteJSON(out1) + `,"output_delta":` + byteJSON(out1) + `,"exit_code":0}}}}`,
		`{"jsonrpc":"2.0","method":"_x.ai/session/update","params":{"sessionId":"s","update":{"anything":true}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"line1\nline2\n"}}],"rawOutput":{"output":` + byteJSON(out2) + `,"output_delta":[108,105,110,101,50,10],"exit_code":0}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"line1\nline2\n"}}],"rawOutput":{"output":` + byteJSON(out2) + `,"exit_code":1,"signal":null,"timed_out":false,"truncated":false,"output_for_prompt":"exit: 1\nline1\nline2\n"}}}}`,
	}
	var all []accum.Observation
	for i, f := range frames {
		fr, err := Read(d, []byte(f))
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		all = append(all, fr.Observations...)
	}
	if len(all) != 5 {
		t.Fatalf("observations = %d", len(all))
	}
	if !all[0].Opens || all[0].Shell != accum.ShellYes {
		t.Errorf("first frame must open a shell call: %+v", all[0])
	}
	var texts []string
	for _, o := range all {
		if o.ToolCallID != "k1" {
			t.Errorf("call id %q", o.ToolCallID)
		}
		if len(o.Texts) > 1 {
			t.Errorf("more than one output source in one frame: %+v", o.Texts)
		}
		for _, tx := range o.Texts {
			texts = append(texts, string(tx.Bytes)+tx.Text)
		}
	}
	if got := strings.Join(texts, "|"); got != "line1\n|line1\nline2\n|line1\nline2\n" {
		t.Errorf("texts %q", got)
	}
	if e := all[4].Exit; e == nil || e.Code != 1 || e.Placeholder {
		t.Errorf("final exit %s", describeExit(e))
	}
	if all[1].Description != "Build" || len(all[1].Texts) != 0 {
		t.Errorf("description frame %+v", all[1])
	}
}

func TestRawBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		set  bool
	}{
		{`[]`, "", true},
		{`[104, 105]`, "hi", true},
		{`[104.0,105]`, "hi", true},
		{`"hi"`, "hi", true},
		{`[256]`, "", false},
		{`[-1]`, "", false},
		{`[1.5]`, "", false},
		{`[1,]`, "", false},
		{`[1`, "", false},
		{`null`, "", false},
		{`{}`, "", false},
	} {
		var r rawBytes
		if err := r.UnmarshalJSON([]byte(tc.in)); err != nil {
			t.Fatal(err)
		}
		if r.Set != tc.set || string(r.B) != tc.want || (r.Set && r.B == nil) {
			t.Errorf("%s: got %q set=%v", tc.in, r.B, r.Set)
		}
	}
}

func TestGrokSignal(t *testing.T) {
	for in, want := range map[string]string{
		"signal 9":          "SIGKILL",
		"Signal 15":         "SIGTERM",
		"killed (signal 9)": "SIGKILL",
		"SIGKILL":           "SIGKILL",
		"KILL":              "SIGKILL",
		"9":                 "SIGKILL",
		"":                  "",
		"null":              "",
		"killed":            "",
		"done":              "",
	} {
		assert.Equal(t, want, grokSignal(in), "grokSignal(%q)", in)
	}
}

// TestGrokTaskCompleted: the end of a command Grok moved to the
// background comes as an `_x.ai/` notification naming the call by its
// task id; it is that command's real result.
func TestGrokTaskCompleted(t *testing.T) {
	d, ok := Lookup("grok")
	require.True(t, ok)
	task := func(method, snapshot string) string {
		return `{"jsonrpc":"2.0","method":"` + method + `","params":{"sessionId":"s","update":{"sessionUpdate":"task_completed","task_snapshot":` + snapshot + `,"will_wake":true}}}`
	}
	for _, tc := range []struct {
		name, msg string
		want      []accum.Observation
	}{{
		name: "live notification: exit code and the whole output",
		msg:  task("_x.ai/task_completed", `{"task_id":"call_t","command":"echo start; sleep 6; echo finished-late","output":"start\nfinished-late\n","truncated":false,"output_total_bytes":20,"exit_code":0,"signal":null,"completed":true,"is_backgrounded":true}`),
		want: []accum.Observation{{ToolCallID: "call_t", Exit: ex(0, accum.ExitStructured, false),
			Texts: []accum.Text{txt(accum.Combined, accum.Final, "start\nfinished-late\n")}}},
	}, {
		name: "replayed under _x.ai/session/update; killed by a signal",
		msg:  task("_x.ai/session/update", `{"task_id":"call_t","output":"x\n","exit_code":-1,"signal":"signal 9","completed":true}`),
		want: []accum.Observation{{ToolCallID: "call_t", Signal: "SIGKILL",
			Texts: []accum.Text{txt(accum.Combined, accum.Final, "x\n")}}},
	}, {
		name: "truncated output: the tail after the marker, of the stated size",
		msg:  task("_x.ai/task_completed", `{"task_id":"call_t","output":"1\n\n\n... (output truncated) ...\n\n9\n","truncated":true,"output_total_bytes":5000,"exit_code":0,"completed":true}`),
		want: []accum.Observation{{ToolCallID: "call_t", Exit: ex(0, accum.ExitStructured, false),
			Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Window, Text: "9\n", Truncated: true, TotalBytes: 5000}}}},
	}, {
		// encoding/json reads the kind as task_completed, so the update is
		// one: it is not found by its spelling.
		name: "the kind spelled with an escape",
		msg:  strings.Replace(task("_x.ai/task_completed", `{"task_id":"call_t","output":"x\n","exit_code":2,"completed":true}`), `"task_completed"`, `"task\u005fcompleted"`, 1),
		want: []accum.Observation{{ToolCallID: "call_t", Exit: ex(2, accum.ExitStructured, false),
			Texts: []accum.Text{txt(accum.Combined, accum.Final, "x\n")}}},
	}, {
		name: "not completed: nothing",
		msg:  task("_x.ai/task_completed", `{"task_id":"call_t","exit_code":0,"completed":false}`),
	}, {
		name: "other task notifications: nothing",
		msg:  `{"jsonrpc":"2.0","method":"_x.ai/task_backgrounded","params":{"sessionId":"s","update":{"sessionUpdate":"task_backgrounded","tool_call_id":"call_t","task_id":"call_t"}}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Read(d, []byte(tc.msg))
			require.NoError(t, err)
			assert.Equal(t, tc.want, f.Observations)
			assert.Equal(t, "grok", f.Sign)
		})
	}
}

// TestGrokDetectedBySign: Grok Build 1.0.41 sends no agentInfo; its
// initialize result offers the xai.api_key auth method and it sends _x.ai/
// notifications.
func TestGrokDetectedBySign(t *testing.T) {
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"authMethods":[{"id":"xai.api_key","name":"xai.api_key"},{"id":"grok.com","name":"Grok"}]}}`,
		`{"jsonrpc":"2.0","method":"_x.ai/mcp/servers_updated","params":{"mcpServers":[]}}`,
	} {
		f, err := Read(Generic(), []byte(msg))
		require.NoError(t, err)
		assert.Equal(t, "grok", f.Sign, msg)
	}
}

// FuzzRawBytes holds rawBytes to jsonlit.DecodeByteArray (which
// jsonlit's FuzzDecodeByteArray holds to encoding/json): an array that the
// one-scan decode of the elided path reads, rawBytes reads as the same
// bytes, so a Grok output reads the same whether or not it was elided.
func FuzzRawBytes(f *testing.F) {
	for _, s := range []string{"[]", "[ ]", "[0]", "[1,2,3]", "[ 255 , 0\n,\t10\r]", "[256]", "[01]", "[1.0]", "[1e2]", "[-1]", "[1,]", "[1 2]", "[1", `["a"]`, "[[1]]", "[1,2] x", "[12345]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, n, ok := jsonlit.DecodeByteArray(b)
		if !ok {
			return
		}
		var r rawBytes
		require.NoError(t, r.UnmarshalJSON(b[:n]))
		require.True(t, r.Set)
		require.Equal(t, out, r.B)
	})
}

// lastMarker finds the last marker as LastIndex does: overlapping
// markers (one's closing "\n\n" the next one's opening), a marker at
// either end, its pieces without the rest, parentheses everywhere.
func TestLastMarkerIsLastIndex(t *testing.T) {
	m := grokTruncMarker
	cases := []string{"", "(", m, m[1:], m[:len(m)-1], "x" + m, m + "x", m + m, m + m[2:], m + m[2:] + m[2:],
		"(((" + m + ")))", m[:grokMarkerHead] + m[:grokMarkerHead] + m[grokMarkerHead:],
		m[grokMarkerHead:] + m, strings.Repeat("(output truncated) ...\n\n", 3),
		"a\n\n... " + m[grokMarkerHead:] + "b\n\n.. " + m[grokMarkerHead:]}
	for i := 0; i < 200; i++ {
		var b strings.Builder
		for j := 0; j < i%7; j++ {
			b.WriteString([]string{"(", "\n", m, m[:grokMarkerHead], m[grokMarkerHead:], "line (1)\n", m[2:]}[(i*7+j*3)%7])
		}
		cases = append(cases, b.String())
	}
	for _, c := range cases {
		assert.Equal(t, strings.LastIndex(c, m), lastMarker([]byte(c)), "%q", c)
		assert.Equal(t, strings.LastIndex(c, m), lastMarkerString(c), "%q", c)
	}
}

// The exit line at the head of an ending frame's output_for_prompt is
// read however its literal spells "exit:", and only at its head, when
// the output is the bytes (and the prompt is otherwise not read).
func TestGrokExitLineWithBytes(t *testing.T) {
	d := mustDialect(t, "grok")
	for _, c := range []struct {
		prompt string
		want   *int32
	}{
		{`exit: 5\nboom\n`, new(int32(5))},
		{`\u0065xit: 6\nboom\n`, new(int32(6))},
		{`e\u0078it: 7\nboom\n`, new(int32(7))},
		{`boom\nexit: 5\n`, nil},
		{`Exit: 5\nboom\n`, nil},
		{`exit`, nil},
		{``, nil},
	} {
		obs := readUpdate(t, d, `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","rawOutput":{"type":"Bash","output":[98,111,111,109,10],"output_for_prompt":"`+c.prompt+`"}}`)
		require.Len(t, obs, 1, c.prompt)
		if c.want == nil {
			assert.Nil(t, obs[0].Exit, c.prompt)
			continue
		}
		require.NotNil(t, obs[0].Exit, c.prompt)
		assert.Equal(t, *c.want, obs[0].Exit.Code, c.prompt)
		require.Len(t, obs[0].Texts, 1)
		assert.Equal(t, "boom\n", string(obs[0].Texts[0].Bytes), c.prompt)
	}
}
