package dialect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
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
			want:   []accum.Observation{{ToolCallID: "k1", Shell: accum.ShellYes, Command: "npm test", Description: "Run the tests"}},
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
			name:   "final timed out and truncated",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","rawOutput":{"exit_code":null,"signal":"KILL","timed_out":true,"truncated":true,"output":[97]}}`,
			want: []accum.Observation{{ToolCallID: "k1", Status: accum.StatusCompleted, Signal: "SIGKILL", TimedOut: true,
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Bytes: []byte("a"), Truncated: true}}}},
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
