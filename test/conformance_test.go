package test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/service"
)

// The conformance tests play synthetic but faithful ACP traces, written
// from the field guide (docs/agents.md), for agent builds and modes we
// have no recording of. Each trace is a whole session as it appears on the
// wire: `initialize` (the client's capabilities, the agent's
// agentInfo.name so that AUTO detection picks the dialect), `session/new`,
// a `session/prompt`, the agent's tool call frames and permission asks with
// their answers, and the prompt's result. The session is then closed, and
// the final ShellExec of every call (folded as a client does) must equal
// what the reference says the command did.

// cs is one conformance trace and what it must produce.
type cs struct {
	name   string
	agent  string // agentInfo.name of the initialize result
	caps   bool   // the client opted in to _meta.terminal_output
	proto  int    // ACP protocolVersion; 0 means 1
	frames []string
	want   []wantExec
	// revs, when set, checks every revision the trace produced.
	revs func(t *testing.T, resps []*pb.NormalizeResponse)
	// init, when set, is the whole initialize result instead of one
	// naming agent (an agent that gives no name).
	init string
	// dialect, when set, is the dialect every revision must name.
	dialect string
}

// wantExec is the final ShellExec of one call.
type wantExec struct {
	id       string
	command  string
	cwd      string
	desc     string
	outcome  pb.ShellOutcome
	exit     *int32 // nil: exit_code must be absent
	signal   string
	timedOut bool
	bg       bool
	output   string  // the combined text ("" when absent)
	trunc    bool    // output.truncated
	stdout   *string // nil: stdout must be absent
	stderr   *string // nil: stderr must be absent
	approval string
	// extra checks what the fields above cannot say.
	extra func(t *testing.T, x *pb.ShellExec)
}

const (
	succeeded = pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED
	failed    = pb.ShellOutcome_SHELL_OUTCOME_FAILED
	cancelled = pb.ShellOutcome_SHELL_OUTCOME_CANCELLED
	unknown   = pb.ShellOutcome_SHELL_OUTCOME_UNKNOWN
)

func code(n int32) *int32  { return &n }
func str(s string) *string { return &s }

// upd is a session/update notification carrying update.
func upd(update string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":` + update + `}}`
}

// ask is a session/request_permission request with JSON-RPC id n.
func ask(n int, toolCall string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"S","toolCall":%s,"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}`, n, toolCall)
}

// answer is the client's response to ask n.
func answer(n int, option string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"outcome":{"outcome":"selected","optionId":%q}}}`, n, option)
}

// js quotes s as a JSON string.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// byteArray writes b as a JSON array of byte values.
func byteArray(b []byte) string { return string(jsonlit.AppendByteArray(nil, b)) }

// lines is "<prefix>00001\n<prefix>00002\n..." for n lines.
func lines(prefix string, from, n int) string {
	var sb strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&sb, "%s%05d\n", prefix, i)
	}
	return sb.String()
}

// session wraps the frames of c in a whole ACP session.
func (c *cs) session() []replay.Line {
	proto := c.proto
	if proto == 0 {
		proto = 1
	}
	meta := ""
	if c.caps {
		meta = `,"_meta":{"terminal_output":true,"terminal-auth":true}`
	}
	toAgent, toClient := pb.Direction_DIRECTION_CLIENT_TO_AGENT, pb.Direction_DIRECTION_AGENT_TO_CLIENT
	type msg struct {
		dir pb.Direction
		s   string
	}
	msgs := []msg{
		{toAgent, fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%d,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false%s},"clientInfo":{"name":"conformance","version":"1"}}}`, proto, meta)},
		{toClient, c.initResult(proto)},
		{toAgent, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`},
		{toClient, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"S"}}`},
		{toAgent, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"go"}]}}`},
		{toClient, upd(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Running it."}}`)},
	}
	for _, f := range c.frames {
		dir := toClient
		if strings.Contains(f, `"result":{"outcome"`) || strings.Contains(f, `"method":"session/cancel"`) || strings.Contains(f, `"method":"session/prompt"`) || clientAnswer(f) {
			dir = toAgent
		}
		msgs = append(msgs, msg{dir, f})
	}
	msgs = append(msgs, msg{toClient, `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`})
	out := make([]replay.Line, len(msgs))
	for i, m := range msgs {
		out[i] = replay.Line{Number: i + 1, Dir: m.dir, Msg: []byte(m.s)}
	}
	return out
}

// clientAnswer says f is the client's answer to one of the agent's
// client-terminal requests (terminal/*).
func clientAnswer(f string) bool {
	if strings.Contains(f, `"method"`) {
		return false
	}
	for _, p := range []string{`"result":{"terminalId"`, `"result":{"output"`, `"result":{"exitCode"`, `"result":{}`, `"error":`} {
		if strings.Contains(f, p) {
			return true
		}
	}
	return false
}

// initResult is the agent's initialize result.
func (c *cs) initResult(proto int) string {
	if c.init != "" {
		return c.init
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":%d,"agentCapabilities":{"loadSession":true},"agentInfo":{"name":%s,"version":"9.9.9"},"authMethods":[]}}`, proto, js(c.agent))
}

func runConformance(t *testing.T, cases []cs) {
	t.Helper()
	playCases(t, cases, func(t *testing.T, tc cs, resps []*pb.NormalizeResponse, calls []*replay.Call) {
		if len(calls) != len(tc.want) {
			for _, got := range calls {
				t.Logf("call %q: %s", got.Last.GetToolCallId(), got.Last.GetCommand())
			}
			t.Fatalf("%d calls, want %d", len(calls), len(tc.want))
		}
		for i, w := range tc.want {
			checkExec(t, calls[i].Last, w)
		}
		if tc.revs != nil {
			tc.revs(t, resps)
		}
		if tc.dialect != "" {
			for _, r := range resps {
				if x := r.GetShellExec(); x != nil && x.GetDialect() != tc.dialect {
					t.Errorf("%q revision %d read by %q, want %q", x.GetToolCallId(), x.GetRevision(), x.GetDialect(), tc.dialect)
				}
			}
		}
	})
}

// playCases plays each case, as its own subtest, through one in-process
// service, checks the revisions, and hands what came back to check.
func playCases(t *testing.T, cases []cs, check func(t *testing.T, tc cs, resps []*pb.NormalizeResponse, calls []*replay.Call)) {
	t.Helper()
	c := inProcess(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			resps, err := replay.Play(ctx, c, tc.session(), replay.Options{SessionID: t.Name(), Dialect: "auto"})
			if err != nil {
				t.Fatal(err)
			}
			checkRevisions(t, resps)
			calls, _ := replay.Fold(resps)
			check(t, tc, resps, calls)
		})
	}
}

func checkExec(t *testing.T, x *pb.ShellExec, w wantExec) {
	t.Helper()
	id := x.GetToolCallId()
	errf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%q: "+format, append([]any{id}, args...)...)
	}
	if x.GetToolCallId() != w.id {
		errf("tool_call_id, want %q", w.id)
	}
	if x.GetState() != pb.ShellState_SHELL_STATE_ENDED {
		errf("state %v, want ENDED", x.GetState())
	}
	if x.GetCommand() != w.command {
		errf("command %q, want %q", x.GetCommand(), w.command)
	}
	if x.GetCwd() != w.cwd {
		errf("cwd %q, want %q", x.GetCwd(), w.cwd)
	}
	if x.GetDescription() != w.desc {
		errf("description %q, want %q", x.GetDescription(), w.desc)
	}
	if x.GetOutcome() != w.outcome {
		errf("outcome %v (%s), want %v", x.GetOutcome(), x.GetOutcomeReason(), w.outcome)
	}
	switch {
	case w.exit == nil && x.ExitCode != nil:
		errf("exit code %d, want none (unknown)", x.GetExitCode())
	case w.exit != nil && x.ExitCode == nil:
		errf("no exit code, want %d", *w.exit)
	case w.exit != nil && *w.exit != x.GetExitCode():
		errf("exit code %d, want %d", x.GetExitCode(), *w.exit)
	}
	if x.GetSignal() != w.signal {
		errf("signal %q, want %q", x.GetSignal(), w.signal)
	}
	if x.GetTimedOut() != w.timedOut {
		errf("timed_out %v, want %v", x.GetTimedOut(), w.timedOut)
	}
	if x.GetBackground() != w.bg {
		errf("background %v, want %v", x.GetBackground(), w.bg)
	}
	if x.GetApprovalReason() != w.approval {
		errf("approval_reason %q, want %q", x.GetApprovalReason(), w.approval)
	}
	if x.GetAwaitingApproval() {
		errf("still awaiting approval after the end")
	}
	if got := x.GetOutput().GetText(); got != w.output {
		errf("output\n got %q\nwant %q", clip(got), clip(w.output))
	}
	if x.GetOutput().GetTruncated() != w.trunc {
		errf("output truncated %v, want %v", x.GetOutput().GetTruncated(), w.trunc)
	}
	if o := x.GetOutput(); o != nil && !o.GetTruncated() && o.GetTotalBytes() != int64(len(o.GetText())) {
		errf("output total_bytes %d for an untruncated text of %d bytes", o.GetTotalBytes(), len(o.GetText()))
	}
	for _, s := range []struct {
		name string
		got  *pb.ShellText
		want *string
	}{{"stdout", x.GetStdout(), w.stdout}, {"stderr", x.GetStderr(), w.stderr}} {
		switch {
		case s.want == nil && s.got != nil:
			errf("%s %q, want it absent (not really separated)", s.name, s.got.GetText())
		case s.want != nil && s.got == nil:
			errf("no %s, want %q", s.name, *s.want)
		case s.want != nil && s.got.GetText() != *s.want:
			errf("%s %q, want %q", s.name, s.got.GetText(), *s.want)
		}
	}
	if w.extra != nil {
		w.extra(t, x)
	}
}

func clip(s string) string {
	if len(s) <= 300 {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)…%s", s[:150], len(s), s[len(s)-150:])
}

// ---------------------------------------------------------------- Codex

const codexTS = "@agentclientprotocol/codex-acp"

// codexTSOpen is the TypeScript adapter's tool_call for command cmd.
func codexTSOpen(id, title, cmd string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"kind":"execute","title":%s,"status":"in_progress","content":[{"type":"terminal","terminalId":%q}],"rawInput":{"command":%s,"cwd":"/w/app"},"_meta":{"terminal_info":{"cwd":"/w/app","terminal_id":%q}}}`, id, js(title), id, js(cmd), id))
}

// codexTSLive is a status-less update with one delta under key.
func codexTSLive(id, key, data string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"_meta":{%q:{"data":%s,"terminal_id":%q}}}`, id, key, js(data), id))
}

// codexTSEnd is the final update; extraMeta is added to its _meta.
func codexTSEnd(id, status, formatted string, exit int, extraMeta string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":%q,"rawOutput":{"formatted_output":%s,"exit_code":%d},"_meta":{"terminal_exit":{"exit_code":%d,"signal":null,"terminal_id":%q}%s}}`, id, status, js(formatted), exit, exit, id, extraMeta))
}

func TestConformanceCodexTypeScript(t *testing.T) {
	big := lines("row", 1, 30000) // 300,000 bytes: past the 256 KiB bound
	var bigFrames []string
	bigFrames = append(bigFrames, codexTSOpen("big", "seq 30000", "/bin/zsh -lc 'seq 30000'"))
	for i := 0; i < len(big); i += 10000 {
		bigFrames = append(bigFrames, codexTSLive("big", "terminal_output", big[i:min(i+10000, len(big))]))
	}
	bigFrames = append(bigFrames, codexTSEnd("big", "completed", big, 0, ""))
	limit := service.DefaultConfig().TextLimit

	runConformance(t, []cs{{
		name: "opted_in_terminal_output_deltas_append", agent: codexTS, caps: true,
		frames: []string{
			codexTSOpen("c1", "echo hello; echo world", "/bin/zsh -lc 'echo hello; echo world'"),
			codexTSLive("c1", "terminal_output", "hello\n"),
			codexTSLive("c1", "terminal_output", "world\n"),
			codexTSEnd("c1", "completed", "hello\nworld\n", 0, ""),
		},
		want: []wantExec{{id: "c1", command: "echo hello; echo world", cwd: "/w/app", outcome: succeeded, exit: code(0), output: "hello\nworld\n"}},
	}, {
		name: "not_opted_in_terminal_output_delta_appends", agent: codexTS,
		frames: []string{
			codexTSOpen("c1", "echo hello", "/bin/zsh -lc 'echo hello'"),
			codexTSLive("c1", "terminal_output_delta", "hel"),
			codexTSLive("c1", "terminal_output_delta", "lo\n"),
			codexTSEnd("c1", "completed", "hello\n", 0, ""),
		},
		want: []wantExec{{id: "c1", command: "echo hello", cwd: "/w/app", outcome: succeeded, exit: code(0), output: "hello\n"}},
	}, {
		name: "completion_fallback_whole_output_in_final_delta_not_doubled", agent: codexTS,
		frames: []string{
			codexTSOpen("c1", "echo fast", "/bin/zsh -lc 'echo fast'"),
			codexTSEnd("c1", "completed", "fast\n", 0, `,"terminal_output_delta":{"data":"fast\n","terminal_id":"c1"}`),
		},
		want: []wantExec{{id: "c1", command: "echo fast", cwd: "/w/app", outcome: succeeded, exit: code(0), output: "fast\n"}},
	}, {
		name: "completion_fallback_opted_in_not_doubled", agent: codexTS, caps: true,
		frames: []string{
			codexTSOpen("c1", "printf 'a\\nb\\n'", `/bin/zsh -lc "printf 'a\\nb\\n'"`),
			codexTSEnd("c1", "completed", "a\nb\n", 0, `,"terminal_output":{"data":"a\nb\n","terminal_id":"c1"}`),
		},
		want: []wantExec{{id: "c1", command: `printf 'a\nb\n'`, cwd: "/w/app", outcome: succeeded, exit: code(0), output: "a\nb\n"}},
	}, {
		name: "rg_exit_1_failed_status_is_failed", agent: codexTS, caps: true,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"search","title":"Search needle","status":"in_progress","rawInput":{"command":"/bin/zsh -lc 'rg needle'","cwd":"/w"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"formatted_output":"","exit_code":1}}`),
		},
		want: []wantExec{{id: "c1", command: "rg needle", cwd: "/w", outcome: failed, exit: code(1)}},
	}, {
		name: "nonzero_exit_failed_with_streamed_output_kept", agent: codexTS, caps: true,
		frames: []string{
			codexTSOpen("c1", "make", "/bin/zsh -lc make"),
			codexTSLive("c1", "terminal_output", "cc main.c\n"),
			codexTSLive("c1", "terminal_output", "main.c:1: error\n"),
			codexTSEnd("c1", "failed", "cc main.c\nmain.c:1: error\n", 2, ""),
		},
		want: []wantExec{{id: "c1", command: "make", cwd: "/w/app", outcome: failed, exit: code(2), output: "cc main.c\nmain.c:1: error\n"}},
	}, {
		name: "stdin_delta_is_live_output_final_aggregate_replaces", agent: codexTS, caps: true,
		frames: []string{
			codexTSOpen("c1", "read x; echo got $x", "/bin/zsh -lc 'read x; echo got $x'"),
			codexTSLive("c1", "terminal_output", "\nyes\n"),
			codexTSLive("c1", "terminal_output", "got yes\n"),
			codexTSEnd("c1", "completed", "got yes\n", 0, ""),
		},
		want: []wantExec{{id: "c1", command: "read x; echo got $x", cwd: "/w/app", outcome: succeeded, exit: code(0), output: "got yes\n"}},
	}, {
		// -1 is Codex's "no exit code" sentinel (a killed process): not an
		// exit status, so the exit is unknown and the call failed.
		name: "exit_minus_one_is_unknown_exit_failed", agent: codexTS, caps: true,
		frames: []string{
			codexTSOpen("c1", "sleep 60", "/bin/zsh -lc 'sleep 60'"),
			codexTSLive("c1", "terminal_output", "started\n"),
			codexTSEnd("c1", "failed", "started\n", -1, ""),
		},
		want: []wantExec{{id: "c1", command: "sleep 60", cwd: "/w/app", outcome: failed, output: "started\n"}},
	}, {
		name: "bounded_output_keeps_recent_tail_and_exact_total", agent: codexTS, caps: true,
		frames: bigFrames,
		want: []wantExec{{id: "big", command: "seq 30000", cwd: "/w/app", outcome: succeeded, exit: code(0),
			output: big[len(big)-limit:], trunc: true,
			extra: func(t *testing.T, x *pb.ShellExec) {
				if n := x.GetOutput().GetTotalBytes(); n != int64(len(big)) {
					t.Errorf("total_bytes %d, want %d", n, len(big))
				}
			}}},
	}})
}

const codexRust = "codex-acp"

func TestConformanceCodexRust(t *testing.T) {
	fence := func(out string) string { return "```sh\n" + strings.TrimRight(out, "\n") + "\n```\n" }
	open := upd(`{"sessionUpdate":"tool_call","toolCallId":"call_1","kind":"execute","title":"npm test","status":"in_progress","rawInput":{"call_id":"call_1","turn_id":"1","command":["/bin/bash","-lc","npm test"],"cwd":"/w","parsed_cmd":[{"type":"unknown","cmd":"npm test"}]}}`)
	// O(n²): every chunk re-sends the whole output so far, fenced.
	var all string
	resend := []string{open}
	for i := 1; i <= 60; i++ {
		all += fmt.Sprintf("test %02d ok\n", i)
		resend = append(resend, upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","content":[{"type":"content","content":{"type":"text","text":`+js(fence(all))+`}}]}`))
	}
	resend = append(resend, upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[{"type":"content","content":{"type":"text","text":`+js(fence(all))+`}}],"rawOutput":{"call_id":"call_1","stdout":`+js(all)+`,"stderr":"","aggregated_output":`+js(all)+`,"formatted_output":`+js(all)+`,"exit_code":0,"duration":{"secs":1,"nanos":5},"status":"completed"}}`))

	runConformance(t, []cs{{
		name: "fenced_cumulative_content_without_capability", agent: codexRust,
		frames: []string{
			open,
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","content":[{"type":"content","content":{"type":"text","text":` + js(fence("PASS a\n")) + `}}]}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","content":[{"type":"content","content":{"type":"text","text":` + js(fence("PASS a\nFAIL b\n")) + `}}]}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"failed","rawOutput":{"call_id":"call_1","stdout":"PASS a\nFAIL b\n","stderr":"","aggregated_output":"PASS a\nFAIL b\n","formatted_output":"PASS a\nFAIL b\n","exit_code":1,"duration":{"secs":0,"nanos":1},"status":"failed"}}`),
		},
		want: []wantExec{{id: "call_1", command: "npm test", cwd: "/w", outcome: failed, exit: code(1), output: "PASS a\nFAIL b\n", stdout: str("PASS a\nFAIL b\n"), stderr: str("")}},
	}, {
		name: "quadratic_resends_do_not_duplicate", agent: codexRust,
		frames: resend,
		revs: func(t *testing.T, resps []*pb.NormalizeResponse) {
			// Live revisions carry only what is new: the wire stays linear
			// although the agent re-sent the whole output 60 times.
			live := 0
			for _, r := range resps {
				if x := r.GetShellExec(); x.GetState() != pb.ShellState_SHELL_STATE_ENDED {
					live += len(x.GetOutput().GetText())
				}
			}
			if live != len(all) {
				t.Errorf("live revisions carried %d bytes of output, want %d (each byte once)", live, len(all))
			}
		},
		want: []wantExec{{id: "call_1", command: "npm test", cwd: "/w", outcome: succeeded, exit: code(0), output: all, stdout: str(all), stderr: str("")}},
	}, {
		name: "one_fenced_block_at_the_end_without_rawoutput_text", agent: codexRust,
		frames: []string{
			open,
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[{"type":"content","content":{"type":"text","text":` + js(fence("ok\n")) + `}}],"rawOutput":{"exit_code":0}}`),
		},
		want: []wantExec{{id: "call_1", command: "npm test", cwd: "/w", outcome: succeeded, exit: code(0), output: "ok\n"}},
	}, {
		name: "argv_command_and_stdout_stderr_split", agent: codexRust, caps: true,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_2","kind":"execute","title":"sh","status":"in_progress","content":[{"type":"terminal","terminalId":"call_2"}],"rawInput":{"call_id":"call_2","command":["python3","-c","import sys; print('o'); print('e', file=sys.stderr)"],"cwd":"/w/py"},"_meta":{"terminal_info":{"terminal_id":"call_2","cwd":"/w/py"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_2","_meta":{"terminal_output":{"terminal_id":"call_2","data":"o\n"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_2","_meta":{"terminal_output":{"terminal_id":"call_2","data":"e\n"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_2","status":"completed","rawOutput":{"stdout":"o\n","stderr":"e\n","aggregated_output":"o\ne\n","formatted_output":"o\ne\n","exit_code":0,"duration":{"secs":0,"nanos":9},"status":"completed"},"_meta":{"terminal_exit":{"terminal_id":"call_2","exit_code":0,"signal":null}}}`),
		},
		want: []wantExec{{id: "call_2", command: `python3 -c 'import sys; print('\''o'\''); print('\''e'\'', file=sys.stderr)'`, cwd: "/w/py", outcome: succeeded, exit: code(0), output: "o\ne\n", stdout: str("o\n"), stderr: str("e\n")}},
	}, {
		name: "lossy_deltas_keep_replacement_character", agent: codexRust, caps: true,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_3","kind":"execute","title":"echo","status":"in_progress","content":[{"type":"terminal","terminalId":"call_3"}],"rawInput":{"command":["bash","-lc","echo café"],"cwd":"/w"},"_meta":{"terminal_info":{"terminal_id":"call_3"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_3","_meta":{"terminal_output":{"terminal_id":"call_3","data":"caf\ufffd"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_3","_meta":{"terminal_output":{"terminal_id":"call_3","data":"\ufffd\n"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_3","status":"completed","_meta":{"terminal_exit":{"terminal_id":"call_3","exit_code":0,"signal":null}}}`),
		},
		want: []wantExec{{id: "call_3", command: "echo café", cwd: "/w", outcome: succeeded, exit: code(0), output: "caf\ufffd\ufffd\n"}},
	}, {
		// As recorded (unified exec, kill -9 $$): exit_code -1 and no
		// signal text. -1 is Codex's "no exit code" sentinel, not an exit
		// status: the exit is unknown, the call failed, its output kept.
		name: "unified_exec_killed_minus_one_is_unknown_exit_failed", agent: codexRust,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_k","kind":"execute","title":"echo before-kill; kill -9 $$","status":"in_progress","rawInput":{"call_id":"call_k","command":["/bin/bash","-lc","echo before-kill; kill -9 $$"],"cwd":"/w","source":"unified_exec_startup"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_k","status":"failed","rawOutput":{"call_id":"call_k","process_id":"31574","command":["/bin/bash","-lc","echo before-kill; kill -9 $$"],"cwd":"/w","source":"unified_exec_startup","stdout":"before-kill\n","stderr":"","aggregated_output":"before-kill\n","exit_code":-1,"duration":{"secs":0,"nanos":9003},"formatted_output":"before-kill\n","status":"failed"}}`),
		},
		want: []wantExec{{id: "call_k", command: "echo before-kill; kill -9 $$", cwd: "/w", outcome: failed, output: "before-kill\n"}},
	}, {
		// As recorded (shell_command tool): the sandbox error names the
		// signal, so the call was killed by SIGKILL with no exit code.
		name: "sandbox_signal_9_is_sigkill_unknown_exit", agent: codexRust, caps: true,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_s","kind":"execute","title":"echo before-kill; kill -9 $$","status":"in_progress","content":[{"type":"terminal","terminalId":"call_s"}],"rawInput":{"call_id":"call_s","command":["/bin/bash","-lc","echo before-kill; kill -9 $$"],"cwd":"/w"},"_meta":{"terminal_info":{"terminal_id":"call_s","cwd":"/w"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_s","_meta":{"terminal_output":{"terminal_id":"call_s","data":"before-kill\n"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_s","status":"failed","rawOutput":{"call_id":"call_s","command":["/bin/bash","-lc","echo before-kill; kill -9 $$"],"cwd":"/w","source":"agent","stdout":"","stderr":"execution error: Sandbox(Signal(9))","aggregated_output":"execution error: Sandbox(Signal(9))","exit_code":-1,"duration":{"secs":0,"nanos":0},"formatted_output":"execution error: Sandbox(Signal(9))","status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_s","exit_code":-1,"signal":null}}}`),
		},
		want: []wantExec{{id: "call_s", command: "echo before-kill; kill -9 $$", cwd: "/w", outcome: failed, signal: "SIGKILL", output: "before-kill\n"}},
	}, {
		// codex-acp 0.7.4 (recorded) ends a unified exec shell killed by
		// SIGKILL with exit_code 1 and no signal: for that build a PTY
		// exit 1 is no exit status. The build comes from agentInfo.version.
		name: "before_0_11_1_a_pty_exit_1_is_no_exit_code", dialect: "codex",
		init: `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":false},"agentInfo":{"name":"codex-acp","title":"Codex","version":"0.7.4"},"authMethods":[]}}`,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_k","title":"Run echo before-kill; kill -9 $$","kind":"execute","status":"in_progress","rawInput":{"call_id":"call_k","command":["/bin/bash","-lc","echo before-kill; kill -9 $$"],"cwd":"/w","process_id":"53707","source":"unified_exec_startup"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_k","status":"failed","rawOutput":{"aggregated_output":"before-kill\r\n","call_id":"call_k","exit_code":1,"formatted_output":"before-kill\r\n","process_id":"53707","source":"unified_exec_startup","stderr":"","stdout":"before-kill\r\n"}}`),
		},
		want: []wantExec{{id: "call_k", command: "echo before-kill; kill -9 $$", cwd: "/w", outcome: failed, output: "before-kill\r\n"}},
	}, {
		name: "from_0_11_1_on_a_pty_exit_1_is_exit_1", dialect: "codex",
		init: `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"agentInfo":{"name":"codex-acp","title":"Codex","version":"0.11.1"},"authMethods":[]}}`,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_g","title":"Run grep -q x y","kind":"execute","status":"in_progress","rawInput":{"call_id":"call_g","command":["/bin/bash","-lc","grep -q x y"],"cwd":"/w","process_id":"9","source":"unified_exec_startup"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_g","status":"failed","rawOutput":{"aggregated_output":"","exit_code":1,"process_id":"9","source":"unified_exec_startup","stderr":"","stdout":""}}`),
		},
		want: []wantExec{{id: "call_g", command: "grep -q x y", cwd: "/w", outcome: failed, exit: code(1)}},
	}, {
		// session/load: the adapter replays the model's exec_command calls
		// (no kind, rawInput.cmd) and the tool's model-facing texts. A
		// client that sees only the replay still learns each command,
		// its exit code (from "Process exited with code N") and output.
		name: "session_load_replays_exec_command_calls", agent: codexRust,
		frames: []string{
			`{"jsonrpc":"2.0","id":77,"method":"session/load","params":{"sessionId":"S","cwd":"/w","mcpServers":[]}}`,
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_r1","title":"exec_command","status":"completed","rawInput":{"cmd":"printf 'out\\n'; exit 3","yield_time_ms":10000}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_r1","status":"completed","rawOutput":"Chunk ID: 5c1d2e\nWall time: 0.0518 seconds\nProcess exited with code 3\nOriginal token count: 1\nOutput:\nout\n"}`),
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_r2","title":"exec_command","status":"completed","rawInput":{"cmd":"echo ok","workdir":"/w/sub"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_r2","status":"completed","rawOutput":"Chunk ID: 77aa01\nWall time: 0.0100 seconds\nProcess exited with code 0\nOriginal token count: 1\nOutput:\nok\n"}`),
			`{"jsonrpc":"2.0","id":77,"result":{}}`,
		},
		want: []wantExec{
			{id: "call_r1", command: `printf 'out\n'; exit 3`, cwd: "/w", outcome: failed, exit: code(3), output: "out\n"},
			{id: "call_r2", command: "echo ok", cwd: "/w/sub", outcome: succeeded, exit: code(0), output: "ok\n"},
		},
	}})
}

// ---------------------------------------------------------------- Claude

const (
	claudeOld = "@zed-industries/claude-code-acp"
	claudeNew = "@agentclientprotocol/claude-agent-acp"
)

// claudeOpen is the Bash tool_call; with the capability it carries the
// terminal content and terminal_info.
func claudeOpen(id string, caps bool) string {
	if caps {
		return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"kind":"execute","status":"pending","title":"Terminal","rawInput":{},"content":[{"type":"terminal","terminalId":%q}],"_meta":{"claudeCode":{"toolName":"Bash"},"terminal_info":{"terminal_id":%q}}}`, id, id, id))
	}
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"kind":"execute","status":"pending","title":"Terminal","rawInput":{},"content":[],"_meta":{"claudeCode":{"toolName":"Bash"}}}`, id))
}

// claudeInput refines the input; without the capability the content is
// the description.
func claudeInput(id, cmd, desc string, caps bool, extra string) string {
	content := `"content":[{"type":"content","content":{"type":"text","text":` + js(desc) + `}}]`
	if caps {
		content = `"content":[{"type":"terminal","terminalId":"` + id + `"}]`
	}
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"title":%s,"kind":"execute","rawInput":{"command":%s,"description":%s%s},%s,"_meta":{"claudeCode":{"toolName":"Bash"}}}`, id, js(cmd), js(cmd), js(desc), extra, content))
}

func fenced(s string) string { return "```console\n" + s + "\n```" }

func claudeCases(agent string) []cs {
	var out []cs
	for _, caps := range []bool{false, true} {
		mode := "plain"
		if caps {
			mode = "terminal_meta"
		}
		// Success.
		success := []string{claudeOpen("toolu_1", caps), claudeInput("toolu_1", "echo hi", "Say hi", caps, "")}
		okWant := wantExec{id: "toolu_1", command: "echo hi", cwd: "", desc: "Say hi", outcome: unknown, output: "hi"}
		if caps {
			success = append(success,
				upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_output":{"terminal_id":"toolu_1","data":"hi"}}}`),
				upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","status":"completed","rawOutput":"hi","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"toolu_1","exit_code":0,"signal":null}}}`))
			okWant.outcome, okWant.exit = succeeded, code(0)
		} else {
			success = append(success,
				upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","_meta":{"claudeCode":{"toolName":"Bash","toolResponse":{"stdout":"hi","stderr":"","interrupted":false,"isImage":false}}}}`),
				upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","status":"completed","rawOutput":"hi","content":[{"type":"content","content":{"type":"text","text":`+js(fenced("hi"))+`}}]}`))
		}
		out = append(out, cs{name: mode + "/success", agent: agent, caps: caps, frames: success, want: []wantExec{okWant}})

		// Error with an "Exit code N" header (v0.25: no terminal _meta on errors even with the capability).
		notFound := "Exit code 127\nbash: x: command not found"
		out = append(out, cs{
			name: mode + "/exit_code_header_is_exit_not_output", agent: agent, caps: caps,
			frames: []string{
				claudeOpen("toolu_2", caps), claudeInput("toolu_2", "x", "Run x", caps, ""),
				upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_2","status":"failed","rawOutput":` + js(notFound) + `,"content":[{"type":"content","content":{"type":"text","text":` + js("```\n"+notFound+"\n```") + `}}]}`),
			},
			want: []wantExec{{id: "toolu_2", command: "x", desc: "Run x", outcome: failed, exit: code(127), output: "bash: x: command not found"}},
		})

		// Heartbeats, then success; the toolResponse split is the only one Claude sends.
		out = append(out, cs{
			name: mode + "/heartbeats_and_tool_response_split", agent: agent, caps: caps,
			frames: []string{
				claudeOpen("toolu_3", caps), claudeInput("toolu_3", "./build.sh", "Build", caps, ""),
				upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_3","status":"in_progress","_meta":{"claudeCode":{"toolName":"Bash","toolResponse":{"elapsedTimeSeconds":1}}}}`),
				upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_3","status":"in_progress","_meta":{"claudeCode":{"toolName":"Bash","toolResponse":{"elapsedTimeSeconds":2}}}}`),
				upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_3","_meta":{"claudeCode":{"toolName":"Bash","toolResponse":{"stdout":"built","stderr":"warning: old","interrupted":false}}}}`),
				upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_3","status":"completed","rawOutput":"built\nwarning: old"}`),
			},
			want: []wantExec{{id: "toolu_3", command: "./build.sh", desc: "Build", outcome: unknown, output: "built\nwarning: old", stdout: str("built"), stderr: str("warning: old")}},
		})

		// Persisted output: the preview, truncated.
		persisted := "<persisted-output>\nOutput too large (365.1KB). Full output saved to: /tmp/claude/x.txt\n\nPreview (first 2KB):\n1\n2\n3\n...\n</persisted-output>"
		pw := wantExec{id: "toolu_4", command: "seq 100000", desc: "Count", outcome: unknown, output: "1\n2\n3\n", trunc: true}
		final := `{"sessionUpdate":"tool_call_update","toolCallId":"toolu_4","status":"completed","rawOutput":` + js(persisted) + `}`
		if caps {
			final = `{"sessionUpdate":"tool_call_update","toolCallId":"toolu_4","status":"completed","rawOutput":` + js(persisted) + `,"_meta":{"terminal_exit":{"terminal_id":"toolu_4","exit_code":0,"signal":null}}}`
			pw.outcome, pw.exit = succeeded, code(0)
		}
		out = append(out, cs{
			name: mode + "/persisted_output_is_truncated_preview", agent: agent, caps: caps,
			frames: []string{claudeOpen("toolu_4", caps), claudeInput("toolu_4", "seq 100000", "Count", caps, ""), upd(final)},
			want:   []wantExec{pw},
		})

		// Background.
		bgText := "Command running in background with ID: bash_1. Output is being written to: /tmp/bash_1.out"
		bw := wantExec{id: "toolu_5", command: "npm run dev", desc: "Dev server", outcome: unknown, bg: true}
		bfinal := `{"sessionUpdate":"tool_call_update","toolCallId":"toolu_5","status":"completed","rawOutput":` + js(bgText) + `}`
		if caps {
			// The tool call ends while the command runs on: a 0 there is
			// not the command's exit code (claude-agent-acp from 0.86.0
			// drops terminal_exit from such a result; a session/load
			// replay and older builds fill in 0), so the outcome stays
			// unknown.
			bfinal = `{"sessionUpdate":"tool_call_update","toolCallId":"toolu_5","status":"completed","rawOutput":` + js(bgText) + `,"_meta":{"terminal_exit":{"terminal_id":"toolu_5","exit_code":0,"signal":null}}}`
		}
		out = append(out, cs{
			name: mode + "/background_notice_not_output", agent: agent, caps: caps,
			frames: []string{claudeOpen("toolu_5", caps), claudeInput("toolu_5", "npm run dev", "Dev server", caps, `,"run_in_background":true`), upd(bfinal)},
			want:   []wantExec{bw},
		})
	}
	// Newer releases with the capability: the error output as a delta with its header.
	out = append(out, cs{
		name: "terminal_meta/terminal_output_delta_header_and_terminal_exit", agent: agent, caps: true,
		frames: []string{
			claudeOpen("toolu_6", true), claudeInput("toolu_6", "false-ish", "Fail", true, ""),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_6","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_output_delta":{"terminal_id":"toolu_6","data":"Exit code 1\nboom"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_6","status":"failed","rawOutput":"Exit code 1\nboom","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"toolu_6","exit_code":1,"signal":null}}}`),
		},
		want: []wantExec{{id: "toolu_6", command: "false-ish", desc: "Fail", outcome: failed, exit: code(1), output: "boom"}},
	})
	for i := range out {
		for j := range out[i].want {
			out[i].want[j].cwd = "/w" // Claude never says where: the session's cwd
		}
	}
	return out
}

func TestConformanceClaude(t *testing.T) {
	t.Run("claude-code-acp", func(t *testing.T) { runConformance(t, claudeCases(claudeOld)) })
	t.Run("claude-agent-acp", func(t *testing.T) { runConformance(t, claudeCases(claudeNew)) })
}

// TestConformanceClaudeOutputLikeItsWords: what a successful command
// printed is its output even when it reads like Claude's own words (its
// exit line, its refusal, interrupt and timeout notices): toolResponse,
// which Claude sends for a success only, gives the output whole before
// the terminal's output restates it.
func TestConformanceClaudeOutputLikeItsWords(t *testing.T) {
	success := func(id, cmd, out string) []string {
		return []string{
			claudeOpen(id, true), claudeInput(id, cmd, "Show it", true, ""),
			upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"_meta":{"claudeCode":{"toolName":"Bash","toolResponse":{"stdout":%s,"stderr":"","interrupted":false,"isImage":false}}}}`, id, js(out))),
			upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"_meta":{"terminal_output":{"terminal_id":%q,"data":%s}}}`, id, id, js(out))),
			upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"completed","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":%q,"exit_code":0,"signal":null}}}`, id, id)),
		}
	}
	var cases []cs
	for i, out := range []string{
		"Exit code 1\nreal",
		"User refused permission to run tool",
		"step 1\nCommand timed out after 30s",
		"x\n[Command was aborted before completion]",
		"The turn was cancelled before this tool call returned a result.",
		"Claude stopped this tool call before it ran.",
		"(Bash completed with no output)",
		"Exited with code 0.Final output:\n\nhi",
		"Interrupted by the user. Signal `SIGKILL`. Final output:\n\nhi",
		"Command running in background with ID: 7",
		"step\nCommand did not complete within its 2s timeout and was moved to the background.",
	} {
		id := fmt.Sprintf("toolu_w%d", i)
		cases = append(cases, cs{
			name: fmt.Sprintf("success_printing_words_%d", i), agent: claudeNew, caps: true,
			frames: success(id, "cat log.txt", out),
			want:   []wantExec{{id: id, command: "cat log.txt", cwd: "/w", desc: "Show it", outcome: succeeded, exit: code(0), output: out}},
		})
	}
	runConformance(t, cases)
}

func TestConformanceClaudeProtocolV2(t *testing.T) {
	open := upd(`{"sessionUpdate":"tool_call","toolCallId":"toolu_v2","kind":"execute","status":"pending","title":"Terminal","rawInput":{},"content":[{"type":"terminal","terminalId":"term-1"}],"_meta":{"claudeCode":{"toolName":"Bash"}}}`)
	input := upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_v2","title":"make","rawInput":{"command":"make","description":"Build it"},"_meta":{"claudeCode":{"toolName":"Bash"}}}`)
	runConformance(t, []cs{{
		name: "terminal_update_base64_snapshots_and_exit_status", agent: claudeNew, caps: true, proto: 2,
		frames: []string{
			open, input,
			upd(`{"sessionUpdate":"terminal_update","terminalId":"term-1","command":"make","cwd":"/w/src"}`),
			upd(`{"sessionUpdate":"terminal_update","terminalId":"term-1","output":{"data":"` + b64("cc a.c\n") + `"}}`),
			upd(`{"sessionUpdate":"terminal_update","terminalId":"term-1","output":{"data":"` + b64("cc a.c\ncc b.c\n") + `"}}`),
			upd(`{"sessionUpdate":"terminal_update","terminalId":"term-1","exitStatus":{"exitCode":2,"signal":null}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_v2","status":"completed"}`),
		},
		want: []wantExec{{id: "toolu_v2", command: "make", cwd: "/w/src", desc: "Build it", outcome: failed, exit: code(2), output: "cc a.c\ncc b.c\n"}},
	}, {
		name: "terminal_output_chunk_utf8_split_across_chunks", agent: claudeNew, caps: true, proto: 2,
		frames: []string{
			open, input,
			upd(`{"sessionUpdate":"terminal_output_chunk","terminalId":"term-1","data":"` + base64.StdEncoding.EncodeToString([]byte("caf\xc3")) + `"}`),
			upd(`{"sessionUpdate":"terminal_output_chunk","terminalId":"term-1","data":"` + base64.StdEncoding.EncodeToString([]byte("\xa9 ok\n")) + `"}`),
			upd(`{"sessionUpdate":"terminal_update","terminalId":"term-1","exitStatus":{"exitCode":0,"signal":null}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_v2","status":"completed"}`),
		},
		want: []wantExec{{id: "toolu_v2", command: "make", cwd: "/w", desc: "Build it", outcome: succeeded, exit: code(0), output: "café ok\n"}},
	}, {
		name: "terminal_update_signal_and_null_output_clears", agent: claudeNew, caps: true, proto: 2,
		frames: []string{
			open, input,
			upd(`{"sessionUpdate":"terminal_update","terminalId":"term-1","output":{"data":"` + b64("partial") + `"}}`),
			upd(`{"sessionUpdate":"terminal_update","terminalId":"term-1","output":null,"exitStatus":{"exitCode":null,"signal":"SIGKILL"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_v2","status":"failed"}`),
		},
		want: []wantExec{{id: "toolu_v2", command: "make", cwd: "/w", desc: "Build it", outcome: failed, signal: "SIGKILL", output: ""}},
	}})
}

// ---------------------------------------------------------------- OpenCode

const opencodeAgent = "OpenCode"

func ocOpen(id, title string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"title":%s,"kind":"execute","status":"pending","locations":[],"rawInput":{}}`, id, js(title)))
}

// ocLive is a live update; an empty text re-sends without content.
func ocLive(id, cmd, desc, text string) string {
	content := ""
	if text != "" {
		content = `,"content":[{"type":"content","content":{"type":"text","text":` + js(text) + `}}]`
	}
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"in_progress","kind":"execute","title":%s,"rawInput":{"command":%s,"description":%s}%s}`, id, js(desc), js(cmd), js(desc), content))
}

// ocFinal is the completed frame; meta is the rawOutput.metadata object.
func ocFinal(id, text, meta string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"completed","kind":"execute","content":[{"type":"content","content":{"type":"text","text":%s}}],"rawOutput":{"output":%s,"metadata":%s}}`, id, js(text), js(text), meta))
}

func TestConformanceOpencode(t *testing.T) {
	// The newer shell tool past 30,000 chars: live text is "...\n\n" + the
	// last 30,000 chars, so consecutive snapshots stop sharing a prefix.
	whole := lines("line-", 1, 4000) // 44,000 bytes
	window := func(s string) string {
		if len(s) <= 30000 {
			return s
		}
		return "...\n\n" + s[len(s)-30000:]
	}
	wframes := []string{ocOpen("w1", "seq-ish 4000")}
	for n := 500; n <= 4000; n += 500 {
		wframes = append(wframes, ocLive("w1", "seq-ish 4000", "Print lines", window(whole[:n*11])))
	}
	trunc := "...output truncated...\n\nFull output saved to: /home/u/.local/share/opencode/tool-output/tool_1\n\n"
	wframes = append(wframes, ocFinal("w1", trunc+whole[len(whole)-2200:],
		`{"output":`+js(window(whole))+`,"exit":0,"description":"Print lines","truncated":true,"outputPath":"/home/u/.local/share/opencode/tool-output/tool_1"}`))
	long := strings.Repeat("x", 1000)

	runConformance(t, []cs{{
		// Only Codex uses -1 as a "no exit code" sentinel (field guide);
		// from another agent a -1 is the exit code it sent.
		name: "metadata_exit_minus_one_is_kept_as_sent", agent: opencodeAgent,
		frames: []string{
			ocOpen("m1", "bash"),
			ocLive("m1", "./run", "Run", "x\n"),
			ocFinal("m1", "x\n", `{"output":"x\n","exit":-1,"description":"Run","truncated":false}`),
		},
		want: []wantExec{{id: "m1", command: "./run", cwd: "/w", desc: "Run", outcome: failed, exit: code(-1), output: "x\n"}},
	}, {
		name: "bash_cumulative_snapshots_metadata_exit_nonzero_under_completed", agent: opencodeAgent,
		frames: []string{
			ocOpen("o1", "bash"),
			ocLive("o1", "npm test", "Run tests", "PASS a\n"),
			ocLive("o1", "npm test", "Run tests", ""),
			ocLive("o1", "npm test", "Run tests", "PASS a\nFAIL b\n"),
			ocFinal("o1", "PASS a\nFAIL b\n", `{"output":"PASS a\nFAIL b\n","exit":1,"description":"Run tests","truncated":false}`),
		},
		want: []wantExec{{id: "o1", command: "npm test", cwd: "/w", desc: "Run tests", outcome: failed, exit: code(1), output: "PASS a\nFAIL b\n"}},
	}, {
		name: "shell_tool_titled_with_command_metadata_exitCode", agent: opencodeAgent,
		frames: []string{
			ocOpen("o2", "go build ./..."),
			ocLive("o2", "go build ./...", "Build", "ok\n"),
			ocFinal("o2", "ok\n", `{"output":"ok\n","exitCode":0,"description":"Build","truncated":false}`),
		},
		want: []wantExec{{id: "o2", command: "go build ./...", cwd: "/w", desc: "Build", outcome: succeeded, exit: code(0), output: "ok\n"}},
	}, {
		name: "window_reset_past_30000_chars_exact_total_no_duplication", agent: opencodeAgent,
		frames: wframes,
		want:   []wantExec{{id: "w1", command: "seq-ish 4000", cwd: "/w", desc: "Print lines", outcome: succeeded, exit: code(0), output: whole}},
	}, {
		name: "truncated_header_without_live_output_is_a_truncated_tail", agent: opencodeAgent,
		frames: []string{
			ocOpen("o3", "bash"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"o3","status":"in_progress","rawInput":{"command":"cat big.log","description":"Show log"}}`),
			ocFinal("o3", trunc+"tail line\n", `{"exit":0,"description":"Show log","truncated":true,"outputPath":"/f"}`),
		},
		want: []wantExec{{id: "o3", command: "cat big.log", cwd: "/w", desc: "Show log", outcome: succeeded, exit: code(0), output: "tail line\n", trunc: true}},
	}, {
		name: "exit_null_with_shell_metadata_timeout", agent: opencodeAgent,
		frames: []string{
			ocOpen("o4", "bash"),
			ocLive("o4", "sleep 9; echo late", "Wait", "start\n"),
			ocFinal("o4", "start\n\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 2000 ms\n</shell_metadata>", `{"output":"start\n","exit":null,"description":"Wait","truncated":false}`),
		},
		want: []wantExec{{id: "o4", command: "sleep 9; echo late", cwd: "/w", desc: "Wait", outcome: failed, timedOut: true, output: "start\n"}},
	}, {
		name: "bash_metadata_abort_is_cancelled", agent: opencodeAgent,
		frames: []string{
			ocOpen("o5", "bash"),
			ocLive("o5", "yes", "Loop", "y\ny\n"),
			ocFinal("o5", "y\ny\n\n\n<bash_metadata>\nUser aborted the command\n</bash_metadata>", `{"output":"y\ny\n","exit":null,"description":"Loop"}`),
		},
		want: []wantExec{{id: "o5", command: "yes", cwd: "/w", desc: "Loop", outcome: cancelled, output: "y\ny\n"}},
	}, {
		name: "older_one_line_timeout_marker", agent: opencodeAgent,
		frames: []string{
			ocOpen("o6", "bash"),
			ocLive("o6", "sleep 9", "Wait", ""),
			ocFinal("o6", "(Command timed out after 2000 ms)", `{"output":"","exit":null,"description":"Wait"}`),
		},
		want: []wantExec{{id: "o6", command: "sleep 9", cwd: "/w", desc: "Wait", outcome: failed, timedOut: true}},
	}, {
		name: "no_output_marker_is_empty_output", agent: opencodeAgent,
		frames: []string{
			ocOpen("o7", "bash"),
			ocLive("o7", "true", "Nothing", ""),
			ocFinal("o7", "(no output)", `{"output":"","exit":0,"description":"Nothing","truncated":false}`),
		},
		want: []wantExec{{id: "o7", command: "true", cwd: "/w", desc: "Nothing", outcome: succeeded, exit: code(0)}},
	}, {
		name: "truncation_header_with_no_output_keeps_live_text", agent: opencodeAgent,
		frames: []string{
			ocOpen("o8", "bash"),
			ocLive("o8", "printf x%.0s {1..1000}", "One long line", long),
			ocFinal("o8", trunc+"(no output)", `{"output":`+js(long)+`,"exit":0,"description":"One long line","truncated":true,"outputPath":"/f"}`),
		},
		want: []wantExec{{id: "o8", command: "printf x%.0s {1..1000}", cwd: "/w", desc: "One long line", outcome: succeeded, exit: code(0), output: long, trunc: true}},
	}, {
		name: "rejected_permission_is_cancelled_error_text_not_output", agent: opencodeAgent,
		frames: []string{
			ocOpen("o9", "bash"),
			ask(100, `{"toolCallId":"o9","title":"npm publish","kind":"execute","status":"pending","rawInput":{"command":"npm publish","description":"Publish"}}`),
			answer(100, "reject"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"o9","status":"failed","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"The user rejected permission to use this specific tool call."}}],"rawOutput":{"error":"The user rejected permission to use this specific tool call.","metadata":{}}}`),
		},
		want: []wantExec{{id: "o9", command: "npm publish", cwd: "/w", desc: "Publish", outcome: cancelled}},
	}})
}

// ---------------------------------------------------------------- Auggie

const auggieAgent = "Auggie CLI"

func auOpen(id, cmd, extraInput string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"title":%s,"kind":"execute","status":"pending","rawInput":{"command":%s,"cwd":"/w/a"%s}}`, id, js("Run `"+cmd+"`"), js(cmd), extraInput))
}

func auFinal(id, text string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"completed","rawOutput":{"output":%s}}`, id, js(text)))
}

func TestConformanceAuggie(t *testing.T) {
	runConformance(t, []cs{{
		name: "preamble_return_code_1_output_tag", agent: auggieAgent,
		frames: []string{
			auOpen("a1", "grep -q x f", `,"max_wait_seconds":60,"wait":true`),
			auFinal("a1", "Here are the results from executing the command.\n<return-code>\n1\n</return-code>\n<output>\nnope\n</output>\n"),
		},
		want: []wantExec{{id: "a1", command: "grep -q x f", cwd: "/w/a", outcome: failed, exit: code(1), output: "nope"}},
	}, {
		name: "no_preamble_output_and_stderr_are_split_streams", agent: auggieAgent,
		frames: []string{
			auOpen("a2", "ls x", ""),
			auFinal("a2", "<return-code>\n2\n</return-code>\n<output>\n\n</output>\n<stderr>\nls: cannot access 'x'\n</stderr>"),
		},
		want: []wantExec{{id: "a2", command: "ls x", cwd: "/w/a", outcome: failed, exit: code(2), stdout: str(""), stderr: str("ls: cannot access 'x'")}},
	}, {
		name: "stdout_sibling_tag", agent: auggieAgent,
		frames: []string{
			auOpen("a3", "echo hi", ""),
			auFinal("a3", "<return-code>\n0\n</return-code>\n<stdout>\nhi\n</stdout>\n<stderr>\n\n</stderr>"),
		},
		want: []wantExec{{id: "a3", command: "echo hi", cwd: "/w/a", outcome: succeeded, exit: code(0), stdout: str("hi"), stderr: str("")}},
	}, {
		name: "stderr_optional_output_is_combined", agent: auggieAgent,
		frames: []string{
			auOpen("a4", "make", ""),
			auFinal("a4", "Here are the results from executing the command.\n<return-code>\n0\n</return-code>\n<output>\nbuilt\nwarning: x\n</output>"),
		},
		want: []wantExec{{id: "a4", command: "make", cwd: "/w/a", outcome: succeeded, exit: code(0), output: "built\nwarning: x"}},
	}, {
		name: "wait_false_is_background_exit_unknown", agent: auggieAgent,
		frames: []string{
			auOpen("a5", "npm run dev", `,"wait":false`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"a5","status":"completed"}`),
		},
		want: []wantExec{{id: "a5", command: "npm run dev", cwd: "/w/a", outcome: unknown, bg: true}},
	}, {
		name: "command_from_title_when_rawinput_has_none", agent: auggieAgent,
		frames: []string{
			upd("{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"a6\",\"title\":\"Run `pwd`\",\"kind\":\"execute\",\"status\":\"pending\"}"),
			auFinal("a6", "<return-code>\n0\n</return-code>\n<output>\n/w\n</output>"),
		},
		want: []wantExec{{id: "a6", command: "pwd", cwd: "/w", outcome: succeeded, exit: code(0), output: "/w"}},
	}})
}

// ---------------------------------------------------------------- Cursor

const cursorAgent = "cursor-agent"

func cuOpen(id, cmd string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%s,"title":%s,"kind":"execute","status":"pending","rawInput":{"command":%s}}`, js(id), js("`"+cmd+"`"), js(cmd)))
}

func cuRunning(id string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%s,"status":"in_progress"}`, js(id)))
}

func cuDone(id, rawOutput string) string {
	if rawOutput != "" {
		rawOutput = `,"rawOutput":` + rawOutput
	}
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%s,"status":"completed"%s}`, js(id), rawOutput))
}

func TestConformanceCursor(t *testing.T) {
	runConformance(t, []cs{{
		name: "nonzero_exit_under_completed_is_failed", agent: cursorAgent,
		frames: []string{
			cuOpen("tool_1", "ls x"), cuRunning("tool_1"),
			cuDone("tool_1", `{"exitCode":2,"stdout":"","stderr":"ls: x: No such file or directory\n"}`),
		},
		want: []wantExec{{id: "tool_1", command: "ls x", cwd: "/w", outcome: failed, exit: code(2), stdout: str(""), stderr: str("ls: x: No such file or directory\n")}},
	}, {
		name: "success_split_streams", agent: cursorAgent,
		frames: []string{
			cuOpen("tool_2", "echo a"), cuRunning("tool_2"),
			cuDone("tool_2", `{"exitCode":0,"stdout":"a\n","stderr":""}`),
		},
		want: []wantExec{{id: "tool_2", command: "echo a", cwd: "/w", outcome: succeeded, exit: code(0), stdout: str("a\n"), stderr: str("")}},
	}, {
		name: "spawn_failure_empty_completed_is_unknown_not_succeeded", agent: cursorAgent,
		frames: []string{cuOpen("tool_3", "nosuchbin"), cuRunning("tool_3"), cuDone("tool_3", "")},
		want:   []wantExec{{id: "tool_3", command: "nosuchbin", cwd: "/w", outcome: unknown}},
	}, {
		name: "id_with_newline_kept_exactly", agent: cursorAgent,
		frames: []string{
			cuOpen("call_a\nfc_b", "true"), cuRunning("call_a\nfc_b"),
			cuDone("call_a\nfc_b", `{"exitCode":0,"stdout":"","stderr":""}`),
		},
		want: []wantExec{{id: "call_a\nfc_b", command: "true", cwd: "/w", outcome: succeeded, exit: code(0), stdout: str(""), stderr: str("")}},
	}, {
		name: "ask_under_other_id_rejected_empty_completed_is_cancelled", agent: cursorAgent,
		frames: []string{
			cuOpen("tool_5", "rm -rf build"),
			ask(101, `{"toolCallId":"perm_9","title":"`+"`rm -rf build`"+`","kind":"execute","status":"pending","content":[{"type":"content","content":{"type":"text","text":"Not in allowlist: rm"}}]}`),
			answer(101, "reject"),
			cuDone("tool_5", ""),
		},
		want: []wantExec{{id: "tool_5", command: "rm -rf build", cwd: "/w", outcome: cancelled, approval: "Not in allowlist: rm"}},
	}, {
		name: "ask_under_other_id_while_two_calls_run_joins_the_one_it_names", agent: cursorAgent,
		frames: []string{
			cuOpen("tool_7", "sleep 2"), cuOpen("tool_8", "ls"),
			ask(103, `{"toolCallId":"perm_11","title":"`+"`sleep 2`"+`","kind":"execute","status":"pending","content":[{"type":"content","content":{"type":"text","text":"Not in allowlist: sleep"}}]}`),
			answer(103, "reject"),
			cuDone("tool_7", ""),
			cuRunning("tool_8"),
			cuDone("tool_8", `{"exitCode":0,"stdout":"a\n","stderr":""}`),
		},
		want: []wantExec{
			{id: "tool_7", command: "sleep 2", cwd: "/w", outcome: cancelled, approval: "Not in allowlist: sleep"},
			{id: "tool_8", command: "ls", cwd: "/w", outcome: succeeded, exit: code(0), stdout: str("a\n"), stderr: str("")},
		},
	}, {
		name: "ask_naming_fetch_target_under_other_id_is_merged_into_the_call", agent: cursorAgent,
		frames: []string{
			cuOpen("tool_6", "curl -s https://example.com"),
			ask(102, `{"toolCallId":"perm_10","title":"Fetch https://example.com","kind":"fetch","status":"pending","content":[{"type":"content","content":{"type":"text","text":"Not in allowlist: curl"}}]}`),
			answer(102, "allow"),
			cuRunning("tool_6"),
			cuDone("tool_6", `{"exitCode":0,"stdout":"<html/>","stderr":""}`),
		},
		want: []wantExec{{id: "tool_6", command: "curl -s https://example.com", cwd: "/w", outcome: succeeded, exit: code(0), stdout: str("<html/>"), stderr: str(""), approval: "Not in allowlist: curl"}},
	}})
}

// ---------------------------------------------------------------- Grok

const grokAgent = "grok-cli"

func grOpen(id, cmd, desc string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"title":"run_terminal_command","rawInput":{"command":%s,"description":%s,"timeout":60000},"_meta":{"x.ai/tool":{"name":"run_terminal_command","kind":"execute"}}}`, id, js(cmd), js(desc)))
}

func grDescribe(id, cmd, desc string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"kind":"execute","title":%s,"content":[{"type":"content","content":{"type":"text","text":%s}}]}`, id, js("Execute `"+cmd+"`"), js(desc)))
}

// grLive is a live snapshot as Grok Build 1.0.41 sends it: the whole
// output so far as content text and as bytes, output_for_prompt without
// an exit line, exit_code 0 as a placeholder. (delta, the bytes of this
// chunk, is what the older synthetic traces sent as output_delta; 1.0.41
// sends none.)
func grLive(id string, sofar, delta []byte) string {
	_ = delta
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"in_progress","content":[{"type":"content","content":{"type":"text","text":%s}}],"rawOutput":{"type":"Bash","output":%s,"output_for_prompt":%s,"exit_code":0,"command":"","truncated":false,"signal":null,"timed_out":false,"description":null,"current_dir":"/w/g","output_file":"","total_bytes":%d}}`,
		id, js(strings.ToValidUTF8(string(sofar), "\ufffd")), byteArray(sofar), js(strings.ToValidUTF8(string(sofar), "\ufffd")), len(sofar)))
}

// grFinal is the final frame: completed for every exit, the real
// exit_code, output_for_prompt "exit: N\n<output>".
func grFinal(id string, out []byte, exit string, extra string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"completed","content":[{"type":"content","content":{"type":"text","text":%s}}],"rawOutput":{"type":"Bash","exit_code":%s,"truncated":false,"total_bytes":%d,"output":%s,"output_for_prompt":%s,"current_dir":"/w/g","output_file":"/h/.grok/sessions/s/terminal/x.log"%s}}`,
		id, js(strings.ToValidUTF8(string(out), "\ufffd")), exit, len(out), byteArray(out), js("exit: "+exit+"\n"+strings.ToValidUTF8(string(out), "\ufffd")), extra))
}

func TestConformanceGrok(t *testing.T) {
	var out []byte
	frames := []string{grOpen("g1", "make test", "Run the tests"), grDescribe("g1", "make test", "Run the tests"),
		`{"jsonrpc":"2.0","method":"_x.ai/session/update","params":{"sessionId":"S","update":{"kind":"status","text":"thinking"}}}`}
	for i := 1; i <= 20; i++ { // about ten a second for two seconds
		chunk := []byte(fmt.Sprintf("test %02d ok\n", i))
		out = append(out, chunk...)
		frames = append(frames, grLive("g1", out, chunk))
	}
	out = append(out, "FAIL: 1 test\n"...)
	frames = append(frames, grFinal("g1", out, "2", `,"signal":null,"timed_out":false`))
	bad := []byte("\xff\xfe ok\n")

	runConformance(t, []cs{{
		name: "no_kind_one_call_description_not_output_placeholders_then_nonzero", agent: grokAgent,
		frames: frames,
		want:   []wantExec{{id: "g1", command: "make test", cwd: "/w/g", desc: "Run the tests", outcome: failed, exit: code(2), output: string(out)}},
	}, {
		name: "byte_arrays_with_invalid_utf8", agent: grokAgent,
		frames: []string{
			grOpen("g2", `printf '\xff\xfe ok\n'`, "Bytes"), grDescribe("g2", `printf '\xff\xfe ok\n'`, "Bytes"),
			grLive("g2", bad, bad),
			grFinal("g2", bad, "0", `,"signal":null,"timed_out":false`),
		},
		want: []wantExec{{id: "g2", command: `printf '\xff\xfe ok\n'`, cwd: "/w/g", desc: "Bytes", outcome: succeeded, exit: code(0), output: "\ufffd\ufffd ok\n"}},
	}, {
		name: "output_for_prompt_exit_line_is_exit_not_output", agent: grokAgent,
		frames: []string{
			grOpen("g3", "./check", "Check"), grDescribe("g3", "./check", "Check"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"g3","status":"completed","rawOutput":{"output_for_prompt":"exit: 3\nboom\n","truncated":false}}`),
		},
		want: []wantExec{{id: "g3", command: "./check", cwd: "/w", desc: "Check", outcome: failed, exit: code(3), output: "boom\n"}},
	}, {
		// Grok Build 1.0.41 as recorded: failed, exit_code -1 (no exit
		// code), signal "signal 9", exit line "exit: killed (signal 9)".
		name: "killed_failed_exit_minus_one_signal_9", agent: grokAgent,
		frames: []string{
			grOpen("g4", "echo before-kill; kill -9 $$", "Kill"), grDescribe("g4", "echo before-kill; kill -9 $$", "Kill"),
			grLive("g4", []byte("before-kill\n"), []byte("before-kill\n")),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"g4","status":"failed","content":[{"type":"content","content":{"type":"text","text":"before-kill\n"}}],"rawOutput":{"type":"Bash","exit_code":-1,"signal":"signal 9","timed_out":false,"truncated":false,"total_bytes":12,"output":` + byteArray([]byte("before-kill\n")) + `,"output_for_prompt":"exit: killed (signal 9)\nbefore-kill\n"}}`),
		},
		want: []wantExec{{id: "g4", command: "echo before-kill; kill -9 $$", cwd: "/w/g", desc: "Kill", outcome: failed, signal: "SIGKILL", output: "before-kill\n"}},
	}, {
		// Past its timeout the command goes on in the background: the
		// notice is not output, nothing was stopped, the exit is not known
		// yet (UNKNOWN); Grok's later task_completed is its real result.
		name: "timeout_moves_to_background_still_running", agent: grokAgent,
		frames: []string{
			grOpen("g5", "echo start; sleep 6; echo late", "Wait"), grDescribe("g5", "echo start; sleep 6; echo late", "Wait"),
			grLive("g5", []byte("start\n"), []byte("start\n")),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"g5","status":"completed","title":"[bg] echo start; sleep 6; echo late (g5)","content":[{"type":"content","content":{"type":"text","text":"Command \"Wait\" has been automatically moved to background because it exceeded auto-background timeout limit of 2s. Process is still running."}}],"rawOutput":{"type":"BackgroundTaskStarted","task_id":"g5","task_type":"bash","status":"running","command":"echo start; sleep 6; echo late","summary":"Command \"Wait\" has been automatically moved to background because it exceeded auto-background timeout limit of 2s. Process is still running.","pid":4242}}`),
		},
		want: []wantExec{{id: "g5", command: "echo start; sleep 6; echo late", cwd: "/w/g", desc: "Wait", outcome: unknown, bg: true, output: "start\n"}},
	}, {
		name: "background_task_completed_resolves_the_unknown_outcome", agent: grokAgent,
		frames: []string{
			grOpen("g7", "echo start; sleep 6; echo late", "Wait"), grDescribe("g7", "echo start; sleep 6; echo late", "Wait"),
			grLive("g7", []byte("start\n"), []byte("start\n")),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"g7","status":"completed","title":"[bg] echo start; sleep 6; echo late (g7)","content":[{"type":"content","content":{"type":"text","text":"Command \"Wait\" has been automatically moved to background because it exceeded auto-background timeout limit of 2s. Process is still running."}}],"rawOutput":{"type":"BackgroundTaskStarted","task_id":"g7","status":"running"}}`),
			`{"jsonrpc":"2.0","method":"_x.ai/task_completed","params":{"sessionId":"S","update":{"sessionUpdate":"task_completed","task_snapshot":{"task_id":"g7","command":"echo start; sleep 6; echo late","output":"start\nlate\n","truncated":false,"output_total_bytes":11,"exit_code":3,"signal":null,"completed":true,"is_backgrounded":true},"will_wake":true}}}`,
		},
		want: []wantExec{{id: "g7", command: "echo start; sleep 6; echo late", cwd: "/w/g", desc: "Wait", outcome: failed, exit: code(3), bg: true, output: "start\nlate\n"}},
	}, {
		// The model asks for the background itself (Grok 1.0.41,
		// recorded): the task has an id of Grok's own, which
		// BackgroundTaskStarted gives and task_completed names.
		name: "explicit_background_task_completed_by_its_own_id", agent: grokAgent,
		frames: []string{
			grOpen("g10", "for i in 1 2 3; do echo tick$i; sleep 0.5; done; exit 3", "Bg"), grDescribe("g10", "for i in 1 2 3; do echo tick$i; sleep 0.5; done; exit 3", "Bg"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"g10","status":"completed","title":"[bg] for i in 1 2 3; do echo tick$i; sleep 0.5; done; exit 3 (01a24475)","content":[{"type":"content","content":{"type":"text","text":"Background task 01a24475-c463-7911-914b-cf97b3e7f51b started"}}],"rawOutput":{"type":"BackgroundTaskStarted","task_id":"01a24475-c463-7911-914b-cf97b3e7f51b","task_type":"bash","status":"running","summary":"Background task 01a24475-c463-7911-914b-cf97b3e7f51b started","pid":7457}}`),
			grLive("g10", []byte("tick1\ntick2\ntick3\n"), []byte("tick1\ntick2\ntick3\n")),
			`{"jsonrpc":"2.0","method":"_x.ai/task_completed","params":{"sessionId":"S","update":{"sessionUpdate":"task_completed","task_snapshot":{"task_id":"01a24475-c463-7911-914b-cf97b3e7f51b","command":"for i in 1 2 3; do echo tick$i; sleep 0.5; done; exit 3","output":"tick1\ntick2\ntick3\n","truncated":false,"output_total_bytes":18,"exit_code":3,"signal":null,"completed":true,"explicitly_killed":false},"will_wake":false}}}`,
		},
		want: []wantExec{{id: "g10", command: "for i in 1 2 3; do echo tick$i; sleep 0.5; done; exit 3", cwd: "/w/g", desc: "Bg", outcome: failed, exit: code(3), bg: true, output: "tick1\ntick2\ntick3\n"}},
	}, {
		name: "explicit_background_task_killed", agent: grokAgent,
		frames: []string{
			grOpen("g11", "echo started-r; sleep 30; echo never", "Bg2"), grDescribe("g11", "echo started-r; sleep 30; echo never", "Bg2"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"g11","status":"completed","title":"[bg] echo started-r; sleep 30; echo never (01a24475)","content":[{"type":"content","content":{"type":"text","text":"Background task 01a24475-caf7-7fb3-89d1-14e1347a551a started"}}],"rawOutput":{"type":"BackgroundTaskStarted","task_id":"01a24475-caf7-7fb3-89d1-14e1347a551a","task_type":"bash","status":"running","pid":7458}}`),
			`{"jsonrpc":"2.0","method":"_x.ai/task_completed","params":{"sessionId":"S","update":{"sessionUpdate":"task_completed","task_snapshot":{"task_id":"01a24475-caf7-7fb3-89d1-14e1347a551a","output":"started-r\n","truncated":false,"output_total_bytes":10,"exit_code":null,"signal":"killed","completed":true,"explicitly_killed":true},"will_wake":false}}}`,
		},
		want: []wantExec{{id: "g11", command: "echo started-r; sleep 30; echo never", cwd: "/w", desc: "Bg2", outcome: failed, bg: true, output: "started-r\n"}},
	}, {
		// Past 10,000 bytes the live bytes are the last 10,000; the final
		// holds the first and the last 10,000 joined by a marker and says
		// so in its exit line: neither the marker nor the note is output.
		name: "big_output_tail_window_and_head_tail_final", agent: grokAgent,
		frames: func() []string {
			all := lines("n", 1, 3000) // 21,000 bytes
			tail := all[len(all)-10000:]
			head := all[:10000]
			final := head + "\n\n... (output truncated) ...\n\n" + tail
			return []string{
				grOpen("g8", "seq 1 3000", "Big"), grDescribe("g8", "seq 1 3000", "Big"),
				upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":"g8","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":%s}}],"rawOutput":{"type":"Bash","output":%s,"output_for_prompt":%s,"exit_code":0,"truncated":true,"signal":null,"timed_out":false,"current_dir":"/w/g","total_bytes":%d}}`, js(tail), byteArray([]byte(tail)), js(tail), len(all))),
				upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":"g8","status":"completed","content":[{"type":"content","content":{"type":"text","text":%s}}],"rawOutput":{"type":"Bash","output":%s,"output_for_prompt":%s,"exit_code":0,"truncated":true,"signal":null,"timed_out":false,"current_dir":"/w/g","total_bytes":%d}}`, js(final), byteArray([]byte(final)), js("exit: 0 [truncated: showing first/last 9.8 KB of 20.5 KB - full output at: /h/.grok/g8.log]\n"+final), len(all))),
			}
		}(),
		want: []wantExec{{id: "g8", command: "seq 1 3000", cwd: "/w/g", desc: "Big", outcome: succeeded, exit: code(0), output: lines("n", 1, 3000)[21000-10000:], trunc: true,
			extra: func(t *testing.T, x *pb.ShellExec) {
				if got := x.GetOutput().GetTotalBytes(); got != 21000 {
					t.Errorf("total_bytes %d, want 21000 (Grok's total_bytes)", got)
				}
			}}},
	}, {
		name: "split_utf8_fffd_for_one_snapshot_then_replaced", agent: grokAgent,
		frames: []string{
			grOpen("g9", "printf euro", "Euro"), grDescribe("g9", "printf euro", "Euro"),
			grLive("g9", []byte("x\xe2\x82"), []byte("x\xe2\x82")),
			grLive("g9", []byte("x\xe2\x82\xac-euro\n"), []byte("\xac-euro\n")),
			grFinal("g9", []byte("x\xe2\x82\xac-euro\n"), "0", `,"signal":null,"timed_out":false`),
		},
		want: []wantExec{{id: "g9", command: "printf euro", cwd: "/w/g", desc: "Euro", outcome: succeeded, exit: code(0), output: "x\u20ac-euro\n"}},
	}, {
		name: "rejected_is_cancelled_rejection_text_not_output", agent: grokAgent,
		frames: []string{
			grOpen("g6", "rm -rf /tmp/x", "Clean"),
			ask(103, `{"toolCallId":"g6","title":"run_terminal_command","rawInput":{"command":"rm -rf /tmp/x","description":"Clean"},"_meta":{"x.ai/tool":{"name":"run_terminal_command","kind":"execute"}}}`),
			answer(103, "reject"),
			upd("{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"g6\",\"status\":\"failed\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"User rejected the execution for tool `run_terminal_command`\"}}]}"),
		},
		want: []wantExec{{id: "g6", command: "rm -rf /tmp/x", cwd: "/w", desc: "Clean", outcome: cancelled}},
	}})
}

// ---------------------------------------------------------------- Gemini

const geminiAgent = "gemini-cli"

func geOpen(id, cmd, banner string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"status":"in_progress","title":%s,"content":[{"type":"content","content":{"type":"text","text":%s}}],"locations":[],"kind":"execute"}`, id, js(cmd), js(banner)))
}

func geEnd(id, status, text string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":%q,"content":[{"type":"content","content":{"type":"text","text":%s}}]}`, id, status, js(text)))
}

func TestConformanceGemini(t *testing.T) {
	banner := "[current working directory /w/web] (Run the unit tests)"
	runConformance(t, []cs{{
		name: "banner_not_output_completed_without_exit_is_unknown", agent: geminiAgent,
		frames: []string{geOpen("run_shell_command-1", "npm test", banner), geEnd("run_shell_command-1", "completed", "PASS all\n")},
		want:   []wantExec{{id: "run_shell_command-1", command: "npm test", cwd: "/w/web", desc: "Run the unit tests", outcome: unknown, output: "PASS all\n"}},
	}, {
		name: "call_opened_from_the_permission_ask", agent: geminiAgent,
		frames: []string{
			ask(104, `{"toolCallId":"run_shell_command-2","title":"rm -rf dist","kind":"execute","status":"pending","content":[{"type":"content","content":{"type":"text","text":"[current working directory /w/web] (Remove the build)"}}]}`),
			answer(104, "allow"),
			geEnd("run_shell_command-2", "completed", "removed\n"),
		},
		want: []wantExec{{id: "run_shell_command-2", command: "rm -rf dist", cwd: "/w/web", desc: "Remove the build", outcome: unknown, output: "removed\n"}},
	}, {
		name: "exited_with_code_marker_is_exit_not_output", agent: geminiAgent,
		frames: []string{geOpen("run_shell_command-3", "false", banner), geEnd("run_shell_command-3", "completed", "Command exited with code: 2")},
		want:   []wantExec{{id: "run_shell_command-3", command: "false", cwd: "/w/web", desc: "Run the unit tests", outcome: failed, exit: code(2)}},
	}, {
		name: "terminated_by_signal_marker", agent: geminiAgent,
		frames: []string{geOpen("run_shell_command-4", "kill -TERM $$", banner), geEnd("run_shell_command-4", "completed", "Command terminated by signal: SIGTERM")},
		want:   []wantExec{{id: "run_shell_command-4", command: "kill -TERM $$", cwd: "/w/web", desc: "Run the unit tests", outcome: failed, signal: "SIGTERM"}},
	}, {
		name: "debug_mode_exit_code_field", agent: geminiAgent,
		frames: []string{geOpen("run_shell_command-5", "make", banner), geEnd("run_shell_command-5", "completed",
			"Command: make\nDirectory: (root)\nOutput: cc a.c\na.c:1: error\nError: (none)\nExit Code: 1\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242")},
		want: []wantExec{{id: "run_shell_command-5", command: "make", cwd: "/w/web", desc: "Run the unit tests", outcome: failed, exit: code(1), output: "cc a.c\na.c:1: error"}},
	}, {
		name: "debug_mode_success", agent: geminiAgent,
		frames: []string{geOpen("run_shell_command-6", "echo ok", banner), geEnd("run_shell_command-6", "completed",
			"Command: echo ok\nDirectory: (root)\nOutput: ok\nError: (none)\nExit Code: 0\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4243")},
		want: []wantExec{{id: "run_shell_command-6", command: "echo ok", cwd: "/w/web", desc: "Run the unit tests", outcome: succeeded, exit: code(0), output: "ok"}},
	}, {
		name: "spawn_failure_is_failed_error_not_output", agent: geminiAgent,
		frames: []string{geOpen("run_shell_command-7", "nosuchbin", banner), geEnd("run_shell_command-7", "failed", "spawn nosuchbin ENOENT")},
		want:   []wantExec{{id: "run_shell_command-7", command: "nosuchbin", cwd: "/w/web", desc: "Run the unit tests", outcome: failed}},
	}, {
		name: "empty_completed_is_unknown", agent: geminiAgent,
		frames: []string{geOpen("run_shell_command-8", "true", banner), geEnd("run_shell_command-8", "completed", "")},
		want:   []wantExec{{id: "run_shell_command-8", command: "true", cwd: "/w/web", desc: "Run the unit tests", outcome: unknown}},
	}})
}

// TestConformanceBounded plays outputs past the 256 KiB bound through the
// three ways agents send output (deltas are in the Codex TS table): each
// must end truncated, holding the most recent tail within the bound, with
// the exact total.
func TestConformanceBounded(t *testing.T) {
	limit := service.DefaultConfig().TextLimit
	bounded := func(whole string) func(t *testing.T, x *pb.ShellExec) {
		return func(t *testing.T, x *pb.ShellExec) {
			o := x.GetOutput()
			if n := o.GetTotalBytes(); n != int64(len(whole)) {
				t.Errorf("total_bytes %d, want %d", n, len(whole))
			}
			if len(o.GetText()) > limit || !strings.HasSuffix(whole, o.GetText()) {
				t.Errorf("output of %d bytes is not a tail within %d bytes", len(o.GetText()), limit)
			}
		}
	}

	// Grok: cumulative byte-array snapshots of 100, 200 and 300 thousand lines' worth.
	whole := lines("g", 1, 50000) // 350,000 bytes
	gframes := []string{grOpen("gb", "seq 50000", "Count"), grDescribe("gb", "seq 50000", "Count")}
	for _, n := range []int{100000, 200000, 300000} {
		gframes = append(gframes, grLive("gb", []byte(whole[:n]), []byte(whole[n-100000:n])))
	}
	gframes = append(gframes, grFinal("gb", []byte(whole), "0", `,"signal":null,"timed_out":false`))

	// OpenCode shell tool: 30,000-char windows every 10,000 bytes up to 400,000.
	owhole := lines("line-", 1, 36000) // 396,000 bytes
	oframes := []string{ocOpen("ob", "seq-ish 36000")}
	for n := 10000; n < len(owhole); n += 10000 {
		text := owhole[:n]
		if len(text) > 30000 {
			text = "...\n\n" + text[len(text)-30000:]
		}
		oframes = append(oframes, ocLive("ob", "seq-ish 36000", "Print", text))
	}
	oframes = append(oframes,
		ocLive("ob", "seq-ish 36000", "Print", "...\n\n"+owhole[len(owhole)-30000:]),
		ocFinal("ob", "...output truncated...\n\nFull output saved to: /f\n\n"+owhole[len(owhole)-1000:], `{"exit":0,"description":"Print","truncated":true,"outputPath":"/f"}`))

	runConformance(t, []cs{{
		name: "grok_cumulative_byte_snapshots_past_the_bound", agent: grokAgent,
		frames: gframes,
		want: []wantExec{{id: "gb", command: "seq 50000", cwd: "/w/g", desc: "Count", outcome: succeeded, exit: code(0),
			output: whole[len(whole)-limit:], trunc: true, extra: bounded(whole)}},
	}, {
		name: "opencode_windows_past_the_bound", agent: opencodeAgent,
		frames: oframes,
		want: []wantExec{{id: "ob", command: "seq-ish 36000", cwd: "/w", desc: "Print", outcome: succeeded, exit: code(0),
			output: owhole[len(owhole)-limit:], trunc: true, extra: bounded(owhole)}},
	}})
}

// TestConformanceEdges holds traces on the edges of the rules: evidence
// that must not be invented, and text that must not be doubled.
func TestConformanceEdges(t *testing.T) {
	runConformance(t, []cs{{
		name: "grok_placeholder_exit_0_never_becomes_the_exit", agent: grokAgent,
		frames: []string{
			grOpen("g7", "./serve", "Serve"), grDescribe("g7", "./serve", "Serve"),
			grLive("g7", []byte("up\n"), []byte("up\n")),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"g7","status":"completed","rawOutput":{"truncated":false}}`),
		},
		want: []wantExec{{id: "g7", command: "./serve", cwd: "/w/g", desc: "Serve", outcome: unknown, output: "up\n"}},
	}, {
		name: "grok_running_when_the_turn_ends_keeps_no_placeholder", agent: grokAgent,
		frames: []string{
			grOpen("g8", "tail -f log", "Follow"), grDescribe("g8", "tail -f log", "Follow"),
			grLive("g8", []byte("a\n"), []byte("a\n")),
		},
		want: []wantExec{{id: "g8", command: "tail -f log", cwd: "/w/g", desc: "Follow", outcome: unknown, output: "a\n"}},
	}, {
		name: "claude_old_failed_content_only_no_rawoutput", agent: claudeOld,
		frames: []string{
			claudeOpen("toolu_7", false), claudeInput("toolu_7", "x", "Run x", false, ""),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_7","status":"failed","content":[{"type":"content","content":{"type":"text","text":"` + "```" + `\nExit code 127\nbash: x: command not found\n` + "```" + `"}}]}`),
		},
		want: []wantExec{{id: "toolu_7", command: "x", cwd: "/w", desc: "Run x", outcome: failed, exit: code(127), output: "bash: x: command not found\n"}},
	}, {
		name: "claude_success_output_that_starts_like_a_header_is_output", agent: claudeNew, caps: true,
		frames: []string{
			claudeOpen("toolu_8", true), claudeInput("toolu_8", "cat notes", "Show notes", true, ""),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_8","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_output":{"terminal_id":"toolu_8","data":"Exit code 5\nis what we saw"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_8","status":"completed","rawOutput":"Exit code 5\nis what we saw","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"toolu_8","exit_code":0,"signal":null}}}`),
		},
		want: []wantExec{{id: "toolu_8", command: "cat notes", cwd: "/w", desc: "Show notes", outcome: succeeded, exit: code(0), output: "Exit code 5\nis what we saw"}},
	}, {
		name: "codex_ts_malformed_exit_code_is_unknown", agent: codexTS,
		frames: []string{
			codexTSOpen("c9", "echo x", "/bin/zsh -lc 'echo x'"),
			codexTSLive("c9", "terminal_output_delta", "x\n"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"c9","status":"completed","rawOutput":{"formatted_output":"x\n","exit_code":"n/a"},"_meta":{"terminal_exit":{"exit_code":null,"signal":null,"terminal_id":"c9"}}}`),
		},
		want: []wantExec{{id: "c9", command: "echo x", cwd: "/w/app", outcome: unknown, output: "x\n"}},
	}, {
		name: "codex_ts_final_without_output_keeps_streamed_text", agent: codexTS,
		frames: []string{
			codexTSOpen("c10", "echo y", "/bin/zsh -lc 'echo y'"),
			codexTSLive("c10", "terminal_output_delta", "y\n"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"c10","status":"completed","_meta":{"terminal_exit":{"exit_code":0,"signal":null,"terminal_id":"c10"}}}`),
		},
		want: []wantExec{{id: "c10", command: "echo y", cwd: "/w/app", outcome: succeeded, exit: code(0), output: "y\n"}},
	}, {
		name: "cursor_exit_code_as_numeric_string", agent: cursorAgent,
		frames: []string{cuOpen("tool_9", "exit 4"), cuDone("tool_9", `{"exitCode":"4","stdout":"","stderr":""}`)},
		want:   []wantExec{{id: "tool_9", command: "exit 4", cwd: "/w", outcome: failed, exit: code(4), stdout: str(""), stderr: str("")}},
	}, {
		name: "gemini_background_banner", agent: geminiAgent,
		frames: []string{
			geOpen("run_shell_command-9", "npm run dev", "[current working directory /w/web] (Start the server) [background]"),
			geEnd("run_shell_command-9", "completed", "Command moved to background (PID: 999). Output hidden."),
		},
		want: []wantExec{{id: "run_shell_command-9", command: "npm run dev", cwd: "/w/web", desc: "Start the server", outcome: unknown, bg: true}},
	}})
}

// TestConformanceAskWhileAnotherCallRuns: an ask under an id the session
// has not seen is merged into the one open call only when it could be that
// call (Cursor asks under another id); an ask that names another command
// is a new call (Gemini's first sight, Codex asking before its tool_call).
func TestConformanceAskWhileAnotherCallRuns(t *testing.T) {
	runConformance(t, []cs{{
		name: "gemini_ask_for_a_second_command_is_its_own_call", agent: geminiAgent,
		frames: []string{
			geOpen("run_shell_command-1", "npm run watch", "[current working directory /w/web] (Watch)"),
			ask(105, `{"toolCallId":"run_shell_command-2","title":"rm -rf dist","kind":"execute","status":"pending","content":[{"type":"content","content":{"type":"text","text":"[current working directory /w/web] (Remove the build)"}}]}`),
			answer(105, "allow"),
			geEnd("run_shell_command-2", "completed", "removed\n"),
			geEnd("run_shell_command-1", "completed", "watching\n"),
		},
		want: []wantExec{
			{id: "run_shell_command-1", command: "npm run watch", cwd: "/w/web", desc: "Watch", outcome: unknown, output: "watching\n"},
			{id: "run_shell_command-2", command: "rm -rf dist", cwd: "/w/web", desc: "Remove the build", outcome: unknown, output: "removed\n"},
		},
	}, {
		name: "codex_ask_before_tool_call_while_a_call_never_closed", agent: codexRust,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_a","kind":"execute","title":"sleep 60","status":"in_progress","rawInput":{"command":["bash","-lc","sleep 60"],"cwd":"/w"}}`),
			ask(106, `{"toolCallId":"call_b","kind":"execute","title":"touch x","status":"pending","rawInput":{"command":["bash","-lc","touch x"],"cwd":"/w","reason":"Needs write access"}}`),
			answer(106, "allow"),
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_b","kind":"execute","title":"touch x","status":"in_progress","rawInput":{"command":["bash","-lc","touch x"],"cwd":"/w"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_b","status":"completed","rawOutput":{"stdout":"","stderr":"","aggregated_output":"","formatted_output":"","exit_code":0,"status":"completed"}}`),
		},
		want: []wantExec{
			{id: "call_a", command: "sleep 60", cwd: "/w", outcome: unknown},
			{id: "call_b", command: "touch x", cwd: "/w", outcome: succeeded, exit: code(0), stdout: str(""), stderr: str(""), approval: "Needs write access"},
		},
	}})
}

// ------------------------------------------- Cancel, reject, wrappers, echoes
//
// Traces for the field guide's section 4 and the rules of its section 5
// (docs/agents.md): client cancels, rejected permission asks, adapters' own shell
// wrappers versus a model's, never-worse frames, the Codex TS 2.x wire,
// big outputs and command echoes.

// cancelFrame is the client's session/cancel.
const cancelFrame = `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"S"}}`

// turnResult is the agent's result for prompt id with stopReason reason.
func turnResult(id int, reason string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":%q}}`, id, reason)
}

// prompt is the client's next session/prompt with JSON-RPC id id.
func prompt(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"next"}]}}`, id)
}

// TestConformanceModelWrappersKept: only an adapter's own wrapper is
// removed. A command the model wrote as `sh -c '...'`, `bash -c ...` or
// `zsh -lc ...` is the command in every agent but Codex, whose adapters
// wrap each command once more (that outer wrapper alone is removed).
func TestConformanceModelWrappersKept(t *testing.T) {
	const cmd = `sh -c 'echo hi'`
	runConformance(t, []cs{{
		name: "claude", agent: claudeNew, caps: true,
		frames: []string{
			claudeOpen("toolu_1", true), claudeInput("toolu_1", cmd, "Say hi", true, ""),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","_meta":{"terminal_output":{"terminal_id":"toolu_1","data":"hi"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","status":"completed","rawOutput":"hi","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"toolu_1","exit_code":0,"signal":null}}}`),
		},
		want: []wantExec{{id: "toolu_1", command: cmd, cwd: "/w", desc: "Say hi", outcome: succeeded, exit: code(0), output: "hi"}},
	}, {
		name: "opencode", agent: opencodeAgent,
		frames: []string{ocOpen("o1", "bash"), ocLive("o1", `bash -c "echo hi"`, "Say hi", "hi\n"), ocFinal("o1", "hi\n", `{"output":"hi\n","exit":0,"description":"Say hi","truncated":false}`)},
		want:   []wantExec{{id: "o1", command: `bash -c "echo hi"`, cwd: "/w", desc: "Say hi", outcome: succeeded, exit: code(0), output: "hi\n"}},
	}, {
		name: "gemini", agent: geminiAgent,
		frames: []string{geOpen("run_shell_command-1", `zsh -lc 'echo hi'`, "[current working directory /w] (Say hi)"), geEnd("run_shell_command-1", "completed", "hi\n")},
		want:   []wantExec{{id: "run_shell_command-1", command: `zsh -lc 'echo hi'`, cwd: "/w", desc: "Say hi", outcome: unknown, output: "hi\n"}},
	}, {
		name: "auggie", agent: auggieAgent,
		frames: []string{auOpen("a1", cmd, ""), auFinal("a1", "<return-code>\n0\n</return-code>\n<output>\nhi\n</output>")},
		want:   []wantExec{{id: "a1", command: cmd, cwd: "/w/a", outcome: succeeded, exit: code(0), output: "hi"}},
	}, {
		name: "cursor", agent: cursorAgent,
		frames: []string{cuOpen("tool_1", cmd), cuRunning("tool_1"), cuDone("tool_1", `{"exitCode":0,"stdout":"hi\n","stderr":""}`)},
		want:   []wantExec{{id: "tool_1", command: cmd, cwd: "/w", outcome: succeeded, exit: code(0), stdout: str("hi\n"), stderr: str("")}},
	}, {
		name: "grok", agent: grokAgent,
		frames: []string{grOpen("g1", cmd, "Say hi"), grDescribe("g1", cmd, "Say hi"), grFinal("g1", []byte("hi\n"), "0", "")},
		want:   []wantExec{{id: "g1", command: cmd, cwd: "/w/g", desc: "Say hi", outcome: succeeded, exit: code(0), output: "hi\n"}},
	}, {
		name: "generic_argv", agent: "some-agent",
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"x1","kind":"execute","title":"Run","status":"in_progress","rawInput":{"command":["bash","-c","echo hi"]}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"x1","status":"completed","rawOutput":{"output":"hi\n","exit_code":0}}`),
		},
		want: []wantExec{{id: "x1", command: `bash -c 'echo hi'`, cwd: "/w", outcome: succeeded, exit: code(0), output: "hi\n"}},
	}, {
		name: "codex_rust_outer_wrapper_removed_once", agent: codexRust,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_1","kind":"execute","title":"x","status":"in_progress","rawInput":{"command":["/bin/bash","-lc","sh -c 'echo hi'"],"cwd":"/w"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","rawOutput":{"stdout":"hi\n","stderr":"","aggregated_output":"hi\n","formatted_output":"hi\n","exit_code":0,"status":"completed"}}`),
		},
		want: []wantExec{{id: "call_1", command: cmd, cwd: "/w", outcome: succeeded, exit: code(0), output: "hi\n", stdout: str("hi\n"), stderr: str("")}},
	}, {
		name: "codex_ts_outer_wrapper_removed_once", agent: codexTS,
		frames: []string{
			codexTSOpen("c1", "bash -c 'echo hi'", `/bin/zsh -lc 'bash -c '"'"'echo hi'"'"''`),
			codexTSEnd("c1", "completed", "hi\n", 0, ""),
		},
		want: []wantExec{{id: "c1", command: "bash -c 'echo hi'", cwd: "/w/app", outcome: succeeded, exit: code(0), output: "hi\n"}},
	}})
}

// TestConformanceCodexTS2: @agentclientprotocol/codex-acp 2.x as recorded
// (docs/agents.md, Codex TS and section 4): terminal_output_delta without the capability,
// terminal_exit and no rawOutput, one 340 KB delta, the re-quoted command
// of its permission ask, a listing call of kind read named exec_command,
// and deltas for a cancelled call that keep coming in the next turn.
func TestConformanceCodexTS2(t *testing.T) {
	exitOnly := func(id string, status string, exit int) string {
		return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":%q,"_meta":{"terminal_exit":{"exit_code":%d,"signal":null,"terminal_id":%q}}}`, id, status, exit, id))
	}
	big := lines("r", 1, 340000/7) // about 340 KB in one delta
	limit := service.DefaultConfig().TextLimit
	loop := `for i in 1 2 3; do printf '\346'$i; done`
	runConformance(t, []cs{{
		name: "delta_without_capability_and_terminal_exit_without_rawOutput", agent: codexTS,
		frames: []string{
			codexTSOpen("call_1", "echo after-cancel; exit 4", "echo after-cancel; exit 4"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"failed","_meta":{"terminal_output_delta":{"data":"after-cancel\n","terminal_id":"call_1"},"terminal_exit":{"exit_code":4,"signal":null,"terminal_id":"call_1"}}}`),
		},
		want: []wantExec{{id: "call_1", command: "echo after-cancel; exit 4", cwd: "/w/app", outcome: failed, exit: code(4), output: "after-cancel\n"}},
	}, {
		name: "one_340KB_delta_is_bounded_with_its_real_size", agent: codexTS,
		frames: []string{codexTSOpen("call_2", "seq", "seq"), codexTSLive("call_2", "terminal_output_delta", big), exitOnly("call_2", "completed", 0)},
		want: []wantExec{{id: "call_2", command: "seq", cwd: "/w/app", outcome: succeeded, exit: code(0), output: big[len(big)-limit:], trunc: true,
			extra: func(t *testing.T, x *pb.ShellExec) {
				if n := x.GetOutput().GetTotalBytes(); n != int64(len(big)) {
					t.Errorf("total_bytes %d, want %d", n, len(big))
				}
			}}},
	}, {
		name: "ask_re_quotes_the_command_the_tool_call_stays", agent: codexTS,
		frames: []string{
			codexTSOpen("call_3", loop, loop),
			ask(50, `{"toolCallId":"call_3","kind":"execute","title":"Run","status":"pending","rawInput":{"command":`+js(`"printf '\\346'"'$i; done'`)+`,"cwd":"/w/app"}}`),
			answer(50, "allow"),
			codexTSLive("call_3", "terminal_output_delta", "\ufffd1\ufffd2\ufffd3"),
			exitOnly("call_3", "completed", 0),
		},
		want: []wantExec{{id: "call_3", command: loop, cwd: "/w/app", outcome: succeeded, exit: code(0), output: "\ufffd1\ufffd2\ufffd3"}},
	}, {
		name: "listing_call_kind_read_named_exec_command_is_a_shell_command", agent: codexTS,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_4","name":"exec_command","kind":"read","title":"List files","status":"in_progress"}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_4","_meta":{"terminal_output_delta":{"data":"a.txt\nb.md\n","terminal_id":"call_4"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_4","status":"completed","rawOutput":{"exit_code":0}}`),
		},
		want: []wantExec{{id: "call_4", desc: "List files", cwd: "/w", outcome: succeeded, exit: code(0), output: "a.txt\nb.md\n"}},
	}, {
		name: "listing_call_without_deltas_output_and_exit_on_the_final", agent: codexTS,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_7","name":"exec_command","kind":"read","title":"List files","status":"in_progress"}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_7","status":"failed","rawOutput":{"formatted_output":"ls: x: No such file\n","exit_code":2}}`),
		},
		want: []wantExec{{id: "call_7", desc: "List files", cwd: "/w", outcome: failed, exit: code(2), output: "ls: x: No such file\n"}},
	}, {
		// Codex's title is its own display of the command: it unwraps a
		// `bash -lc '...'` the model wrote. rawInput.command is what ran.
		name: "title_unwraps_the_models_wrapper_rawInput_command_is_the_command", agent: codexTS,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_8","title":"npm test","kind":"execute","status":"in_progress","rawInput":{"command":"bash -lc 'npm test'","cwd":"/w/app"},"name":"exec_command"}`),
			codexTSLive("call_8", "terminal_output_delta", "ok\n"),
			exitOnly("call_8", "completed", 0),
		},
		want: []wantExec{{id: "call_8", command: "bash -lc 'npm test'", cwd: "/w/app", outcome: succeeded, exit: code(0), output: "ok\n"}},
	}, {
		name: "a_later_shortened_title_never_replaces_rawInput_command", agent: codexTS,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_9","title":"cat a.txt","kind":"execute","status":"in_progress","rawInput":{"command":"cat a.txt | head -n 5","cwd":"/w/app"},"name":"exec_command"}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_9","kind":"execute","title":"Read a.txt"}`),
			exitOnly("call_9", "completed", 0),
		},
		want: []wantExec{{id: "call_9", command: "cat a.txt | head -n 5", cwd: "/w/app", outcome: succeeded, exit: code(0)}},
	}, {
		name: "no_rawInput_the_title_names_the_call_until_a_command_comes", agent: codexTS,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_10","title":"git status","kind":"execute","status":"in_progress","rawInput":null,"name":null}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_10","rawInput":{"command":"git status --short","cwd":"/w/app"}}`),
			exitOnly("call_10", "completed", 0),
		},
		want: []wantExec{{id: "call_10", command: "git status --short", cwd: "/w/app", outcome: succeeded, exit: code(0)}},
	}, {
		name: "cancelled_call_streams_into_the_next_turn", agent: codexTS,
		frames: []string{
			codexTSOpen("call_5", "for i in $(seq 20); do echo tick$i; sleep 0.25; done", "for i in $(seq 20); do echo tick$i; sleep 0.25; done"),
			codexTSLive("call_5", "terminal_output_delta", "tick2\n"),
			cancelFrame,
			turnResult(2, "cancelled"),
			prompt(3),
			codexTSLive("call_5", "terminal_output_delta", "tick3\n"),
			codexTSOpen("call_6", "echo next", "echo next"),
			codexTSLive("call_5", "terminal_output_delta", "tick4\n"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_6","status":"completed","_meta":{"terminal_output_delta":{"data":"next\n","terminal_id":"call_6"},"terminal_exit":{"exit_code":0,"signal":null,"terminal_id":"call_6"}}}`),
			codexTSLive("call_5", "terminal_output_delta", "tick5\n"),
			turnResult(3, "end_turn"),
		},
		want: []wantExec{
			{id: "call_5", command: "for i in $(seq 20); do echo tick$i; sleep 0.25; done", cwd: "/w/app", outcome: cancelled, output: "tick2\ntick3\ntick4\ntick5\n"},
			{id: "call_6", command: "echo next", cwd: "/w/app", outcome: succeeded, exit: code(0), output: "next\n"},
		},
	}})
}

// TestConformanceNeverWorse: a later frame never makes what is known
// worse: an empty rawOutput keeps the streamed output, and a {stdout,
// stderr} object that omits a stream keeps that stream's earlier text.
func TestConformanceNeverWorse(t *testing.T) {
	runConformance(t, []cs{{
		name: "codex_ts_empty_formatted_output_keeps_deltas", agent: codexTS,
		frames: []string{codexTSOpen("c1", "make", "make"), codexTSLive("c1", "terminal_output_delta", "built\n"), codexTSEnd("c1", "completed", "", 0, "")},
		want:   []wantExec{{id: "c1", command: "make", cwd: "/w/app", outcome: succeeded, exit: code(0), output: "built\n"}},
	}, {
		name: "claude_empty_rawOutput_keeps_terminal_output", agent: claudeNew, caps: true,
		frames: []string{
			claudeOpen("toolu_1", true), claudeInput("toolu_1", "make", "Build", true, ""),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","_meta":{"terminal_output":{"terminal_id":"toolu_1","data":"built"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","status":"completed","rawOutput":"","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"toolu_1","exit_code":0,"signal":null}}}`),
		},
		want: []wantExec{{id: "toolu_1", command: "make", cwd: "/w", desc: "Build", outcome: succeeded, exit: code(0), output: "built"}},
	}, {
		name: "generic_empty_rawOutput_string_and_object_keep_live_output", agent: "some-agent",
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"x1","kind":"execute","title":"make","status":"in_progress","content":[{"type":"terminal","terminalId":"x1"}]}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"x1","_meta":{"terminal_output":{"terminal_id":"x1","data":"built\n"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"x1","rawOutput":""}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"x1","status":"completed","rawOutput":{},"_meta":{"terminal_exit":{"terminal_id":"x1","exit_code":0,"signal":null}}}`),
		},
		want: []wantExec{{id: "x1", command: "make", cwd: "/w", outcome: succeeded, exit: code(0), output: "built\n"}},
	}, {
		name: "generic_stream_omitted_from_stdout_stderr_keeps_its_text", agent: "some-agent",
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"x2","kind":"execute","title":"make","status":"in_progress"}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"x2","status":"in_progress","rawOutput":{"stdout":"cc a.c\n","stderr":"warning: x\n"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"x2","status":"completed","rawOutput":{"stdout":"cc a.c\ncc b.c\n","exit_code":0}}`),
		},
		want: []wantExec{{id: "x2", command: "make", cwd: "/w", outcome: succeeded, exit: code(0), stdout: str("cc a.c\ncc b.c\n"), stderr: str("warning: x\n")}},
	}, {
		name: "codex_rust_stream_omitted_keeps_its_text", agent: codexRust,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_1","kind":"execute","title":"make","status":"in_progress","rawInput":{"command":["/bin/bash","-lc","make"],"cwd":"/w"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","rawOutput":{"stdout":"cc a.c\n","stderr":"warning: x\n"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","rawOutput":{"stdout":"cc a.c\ncc b.c\n","exit_code":0}}`),
		},
		want: []wantExec{{id: "call_1", command: "make", cwd: "/w", outcome: succeeded, exit: code(0), stdout: str("cc a.c\ncc b.c\n"), stderr: str("warning: x\n")}},
	}})
}

// TestConformanceBigOutput: the most output that is on the wire wins, and
// agents' truncation notes are not output. claude-code-acp's whole output
// in toolResponse.stdout beats its 2 KB persisted-output preview;
// claude-agent-acp's "[Output truncated (N bytes total): ...]" says the
// real size; OpenCode's "...output truncated..." preamble is not output.
func TestConformanceBigOutput(t *testing.T) {
	limit := service.DefaultConfig().TextLimit
	whole := lines("n", 1, 20000) // 120,000 bytes: within the bound
	huge := lines("n", 1, 50000)  // 300,000 bytes: past it
	// preview is Claude Code's preview of s, the beginning of an output
	// of total bytes, whose size it states in KB of 1024 with one decimal
	// at most (117.2KB for 120,000 bytes).
	preview := func(s string, total int) string {
		size := strings.TrimSuffix(strconv.FormatFloat(float64(total)/1024, 'f', 1, 64), ".0") + "KB"
		return "<persisted-output>\nOutput too large (" + size + "). Full output saved to: /home/dev/.claude/x.txt\n\nPreview (first 2KB):\n" + s[:2048] + "\n...\n</persisted-output>"
	}
	toolResponse := func(id, stdout string) string {
		return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"_meta":{"claudeCode":{"toolResponse":{"stdout":%s,"stderr":"","interrupted":false,"isImage":false},"toolName":"Bash"}}}`, id, js(stdout)))
	}
	first30k := whole[:30000]
	note := "\n[Output truncated (120000 bytes total): full output saved to /home/dev/.claude/y.txt]"
	runConformance(t, []cs{{
		name: "claude_code_acp_tool_response_beats_persisted_preview", agent: claudeOld,
		frames: []string{
			claudeOpen("toolu_1", false), claudeInput("toolu_1", "seq 1 20000", "Big", false, ""),
			toolResponse("toolu_1", whole),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","status":"completed","rawOutput":` + js(preview(whole, len(whole))) + `,"content":[{"type":"content","content":{"type":"text","text":` + js(fenced(preview(whole, len(whole)))) + `}}],"_meta":{"claudeCode":{"toolName":"Bash"}}}`),
		},
		want: []wantExec{{id: "toolu_1", command: "seq 1 20000", cwd: "/w", desc: "Big", outcome: unknown, output: whole}},
	}, {
		name: "claude_code_acp_tool_response_past_the_bound", agent: claudeOld,
		frames: []string{
			claudeOpen("toolu_2", false), claudeInput("toolu_2", "seq 1 50000", "Huge", false, ""),
			toolResponse("toolu_2", huge),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_2","status":"completed","rawOutput":` + js(preview(huge, len(huge))) + `,"_meta":{"claudeCode":{"toolName":"Bash"}}}`),
		},
		want: []wantExec{{id: "toolu_2", command: "seq 1 50000", cwd: "/w", desc: "Huge", outcome: unknown, output: huge[len(huge)-limit:], trunc: true,
			extra: func(t *testing.T, x *pb.ShellExec) {
				if n := x.GetOutput().GetTotalBytes(); n != int64(len(huge)) {
					t.Errorf("total_bytes %d, want %d", n, len(huge))
				}
			}}},
	}, {
		name: "claude_agent_acp_truncation_note_states_the_real_size", agent: claudeNew, caps: true,
		frames: []string{
			claudeOpen("toolu_3", true), claudeInput("toolu_3", "seq 1 20000", "Big", true, ""),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_3","_meta":{"terminal_output":{"terminal_id":"toolu_3","data":` + js(first30k+note) + `}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_3","status":"completed","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"toolu_3","exit_code":0,"signal":null}}}`),
		},
		want: []wantExec{{id: "toolu_3", command: "seq 1 20000", cwd: "/w", desc: "Big", outcome: succeeded, exit: code(0), output: first30k, trunc: true,
			extra: func(t *testing.T, x *pb.ShellExec) {
				if n := x.GetOutput().GetTotalBytes(); n < 120000 {
					t.Errorf("total_bytes %d, want at least the 120000 the note states", n)
				}
			}}},
	}, {
		name: "claude_agent_acp_tool_response_then_truncated_terminal_output", agent: claudeNew, caps: true,
		frames: []string{
			claudeOpen("toolu_4", true), claudeInput("toolu_4", "seq 1 20000", "Big", true, ""),
			toolResponse("toolu_4", whole),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_4","_meta":{"terminal_output":{"terminal_id":"toolu_4","data":` + js(first30k+note) + `}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_4","status":"completed","_meta":{"claudeCode":{"toolName":"Bash"},"terminal_exit":{"terminal_id":"toolu_4","exit_code":0,"signal":null}}}`),
		},
		want: []wantExec{{id: "toolu_4", command: "seq 1 20000", cwd: "/w", desc: "Big", outcome: succeeded, exit: code(0), output: whole}},
	}, {
		// claude-agent-acp without the capability (recorded, 0.101.0): the
		// output comes from toolResponse.stdout (its first 30,000 bytes),
		// rawOutput is a 2 KB <persisted-output> preview, and only the
		// content's note states the real size.
		name: "claude_agent_acp_plain_the_contents_note_states_the_size_of_the_tool_response", agent: claudeNew,
		frames: []string{
			claudeOpen("toolu_5", false), claudeInput("toolu_5", "seq 1 20000", "Big", false, ""),
			toolResponse("toolu_5", first30k),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_5","status":"completed","rawOutput":` + js(preview(whole, 120000)) + `,"content":[{"type":"content","content":{"type":"text","text":` + js(fenced(first30k+note)) + `}}],"_meta":{"claudeCode":{"toolName":"Bash"}}}`),
		},
		want: []wantExec{{id: "toolu_5", command: "seq 1 20000", cwd: "/w", desc: "Big", outcome: unknown, output: first30k, trunc: true,
			extra: func(t *testing.T, x *pb.ShellExec) {
				if n := x.GetOutput().GetTotalBytes(); n != 120000 {
					t.Errorf("total_bytes %d, want the 120000 the note states", n)
				}
			}}},
	}, {
		name: "claude_agent_acp_plain_tool_response_persisted_output_size", agent: claudeNew,
		frames: []string{
			claudeOpen("toolu_6", false), claudeInput("toolu_6", "seq 1 20000", "Big", false, ""),
			upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_6","_meta":{"claudeCode":{"toolResponse":{"stdout":%s,"stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false,"persistedOutputPath":"/home/dev/.claude/t.txt","persistedOutputSize":120000},"toolName":"Bash"}}}`, js(first30k))),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_6","status":"completed","rawOutput":` + js(preview(whole, 120000)) + `,"_meta":{"claudeCode":{"toolName":"Bash"}}}`),
		},
		want: []wantExec{{id: "toolu_6", command: "seq 1 20000", cwd: "/w", desc: "Big", outcome: unknown, output: first30k, trunc: true,
			extra: func(t *testing.T, x *pb.ShellExec) {
				if n := x.GetOutput().GetTotalBytes(); n != 120000 {
					t.Errorf("total_bytes %d, want persistedOutputSize 120000", n)
				}
			}}},
	}, {
		name: "opencode_truncation_preamble_is_not_output", agent: opencodeAgent,
		frames: []string{
			ocOpen("o1", "bash"), ocLive("o1", "seq 1 40000", "Big", "1\n2\n"),
			ocFinal("o1", "...output truncated...\n\nFull output saved to: /home/dev/.local/share/opencode/tool-output/x\n\n39999\n40000\n", `{"output":"39999\n40000\n","exit":0,"description":"Big","truncated":true,"outputPath":"/home/dev/.local/share/opencode/tool-output/x"}`),
		},
		want: []wantExec{{id: "o1", command: "seq 1 40000", cwd: "/w", desc: "Big", outcome: succeeded, exit: code(0), output: "39999\n40000\n", trunc: true}},
	}})
}

// TestConformanceCommandEcho: an echo "$ <command>" of the call's own
// command at the very start of its output is not output, stripped once,
// however it arrives; a line that merely starts with "$ " stays.
func TestConformanceCommandEcho(t *testing.T) {
	runConformance(t, []cs{{
		name: "codex_ts_echo_split_across_deltas", agent: codexTS,
		frames: []string{
			codexTSOpen("c1", "cat notes.txt", "cat notes.txt"),
			codexTSLive("c1", "terminal_output_delta", "$ cat /w/"),
			codexTSLive("c1", "terminal_output_delta", "app/notes.txt\r"),
			codexTSLive("c1", "terminal_output_delta", "\nhello\r\n"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","_meta":{"terminal_exit":{"exit_code":0,"signal":null,"terminal_id":"c1"}}}`),
		},
		want: []wantExec{{id: "c1", command: "cat notes.txt", cwd: "/w/app", outcome: succeeded, exit: code(0), output: "hello\r\n"}},
	}, {
		name: "opencode_cumulative_snapshots_multi_line_command", agent: opencodeAgent,
		frames: []string{
			ocOpen("o1", "bash"),
			ocLive("o1", "cd sub\nls", "List", "$ cd sub\n"),
			ocLive("o1", "cd sub\nls", "List", "$ cd sub\n$ ls\na.txt\n"),
			ocFinal("o1", "$ cd sub\n$ ls\na.txt\nb.txt\n", `{"output":"$ cd sub\n$ ls\na.txt\nb.txt\n","exit":0,"description":"List","truncated":false}`),
		},
		want: []wantExec{{id: "o1", command: "cd sub\nls", cwd: "/w", desc: "List", outcome: succeeded, exit: code(0), output: "a.txt\nb.txt\n"}},
	}, {
		name: "generic_line_starting_with_dollar_stays", agent: "some-agent",
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"x1","kind":"execute","title":"Run","status":"in_progress","rawInput":{"command":"./price"}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"x1","status":"completed","rawOutput":{"output":"$ 5.00\n$ ./other\n","exit_code":0}}`),
		},
		want: []wantExec{{id: "x1", command: "./price", cwd: "/w", outcome: succeeded, exit: code(0), output: "$ 5.00\n$ ./other\n"}},
	}})
}

// TestConformanceCancelAndReject: one trace per agent of what the field
// guide (section 2b) says each sends when the client cancels the turn
// while a command runs, or rejects a permission ask. A cancelled call is
// CANCELLED keeping a known exit code; notices are never output; real
// output before the cancel is kept; a rejected call that never ran has no
// output.
func TestConformanceCancelAndReject(t *testing.T) {
	const ticks = "for i in $(seq 20); do echo tick$i; sleep 0.25; done"
	claudeCancel := "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."
	runConformance(t, []cs{{
		name: "codex_rust_shell_command_cancel_failed_exit_1", agent: codexRust, caps: true,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_1","kind":"execute","title":"ticks","status":"in_progress","content":[{"type":"terminal","terminalId":"call_1"}],"rawInput":{"command":["/bin/bash","-lc",` + js(ticks) + `],"cwd":"/w"},"_meta":{"terminal_info":{"terminal_id":"call_1","cwd":"/w"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","_meta":{"terminal_output":{"terminal_id":"call_1","data":"tick1\ntick2\n"}}}`),
			cancelFrame,
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"failed","rawOutput":{"stdout":"tick1\ntick2\n","stderr":"","aggregated_output":"tick1\ntick2\n","formatted_output":"tick1\ntick2\n","exit_code":1,"status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_1","exit_code":1,"signal":null}}}`),
			turnResult(2, "cancelled"),
		},
		want: []wantExec{{id: "call_1", command: ticks, cwd: "/w", outcome: cancelled, exit: code(1), output: "tick1\ntick2\n", stdout: str("tick1\ntick2\n"), stderr: str("")}},
	}, {
		name: "codex_rust_unified_exec_cancel_no_final", agent: codexRust,
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_2","kind":"execute","title":"ticks","status":"in_progress","rawInput":{"command":["/bin/bash","-lc",` + js(ticks) + `],"cwd":"/w","process_id":"7"}}`),
			cancelFrame,
			turnResult(2, "cancelled"),
		},
		want: []wantExec{{id: "call_2", command: ticks, cwd: "/w", outcome: cancelled}},
	}, {
		name: "codex_rust_untrusted_reject_before_tool_call", agent: codexRust,
		frames: []string{
			ask(40, `{"toolCallId":"call_3","kind":"execute","status":"pending","title":"rm -f notes.txt && echo removed","rawInput":{"command":["/bin/bash","-lc","rm -f notes.txt && echo removed"],"cwd":"/w"}}`),
			answer(40, "reject"),
			turnResult(2, "cancelled"),
		},
		want: []wantExec{{id: "call_3", command: "rm -f notes.txt && echo removed", cwd: "/w", outcome: cancelled}},
	}, {
		name: "codex_ts2_reject_failed_exit_null", agent: codexTS,
		frames: []string{
			codexTSOpen("call_4", "rm -f notes.txt", "rm -f notes.txt"),
			ask(41, `{"toolCallId":"call_4","kind":"execute","status":"pending","title":"rm -f notes.txt","rawInput":{"command":"rm -f notes.txt","cwd":"/w/app"}}`),
			answer(41, "reject"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_4","status":"failed","rawOutput":{"formatted_output":"","exit_code":null},"_meta":{"terminal_exit":{"exit_code":null,"signal":null,"terminal_id":"call_4"}}}`),
			turnResult(2, "cancelled"),
		},
		want: []wantExec{{id: "call_4", command: "rm -f notes.txt", cwd: "/w/app", outcome: cancelled}},
	}, {
		name: "claude_code_acp_cancel_stays_pending", agent: claudeOld,
		frames: []string{claudeOpen("toolu_1", false), claudeInput("toolu_1", ticks, "Ticks", false, ""), cancelFrame, turnResult(2, "cancelled")},
		want:   []wantExec{{id: "toolu_1", command: ticks, cwd: "/w", desc: "Ticks", outcome: cancelled}},
	}, {
		name: "claude_code_acp_reject", agent: claudeOld,
		frames: []string{
			claudeOpen("toolu_2", false), claudeInput("toolu_2", "rm -f notes.txt", "Remove", false, ""),
			ask(42, `{"toolCallId":"toolu_2","kind":"execute","status":"pending","title":"rm -f notes.txt","rawInput":{"command":"rm -f notes.txt","description":"Remove"},"_meta":{"claudeCode":{"toolName":"Bash"}}}`),
			answer(42, "reject"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_2","status":"failed","rawOutput":"User refused permission to run tool","content":[{"type":"content","content":{"type":"text","text":"` + "```\\nUser refused permission to run tool\\n```" + `"}}],"_meta":{"claudeCode":{"toolName":"Bash"}}}`),
		},
		want: []wantExec{{id: "toolu_2", command: "rm -f notes.txt", cwd: "/w", desc: "Remove", outcome: cancelled}},
	}, {
		name: "claude_agent_acp_cancel_notice_and_reject", agent: claudeNew, caps: true,
		frames: []string{
			claudeOpen("toolu_3", true), claudeInput("toolu_3", "rm -f notes.txt", "Remove", true, ""),
			ask(43, `{"toolCallId":"toolu_3","kind":"execute","status":"pending","title":"rm -f notes.txt","rawInput":{"command":"rm -f notes.txt","description":"Remove"},"content":[{"type":"terminal","terminalId":"toolu_3"}]}`),
			answer(43, "reject"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_3","_meta":{"terminal_output":{"terminal_id":"toolu_3","data":"User refused permission to run tool"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_3","status":"failed","_meta":{"claudeCode":{"toolName":"Bash","nonExecutionKind":"permission-rule"},"terminal_exit":{"terminal_id":"toolu_3","exit_code":null,"signal":null}}}`),
			claudeOpen("toolu_4", true), claudeInput("toolu_4", ticks, "Ticks", true, ""),
			cancelFrame,
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_4","_meta":{"terminal_output":{"terminal_id":"toolu_4","data":` + js(claudeCancel) + `}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_4","status":"failed","content":[{"type":"terminal","terminalId":"toolu_4"}],"_meta":{"claudeCode":{"toolName":"Bash","nonExecutionKind":"user-rejected"},"terminal_exit":{"terminal_id":"toolu_4","exit_code":null,"signal":null}}}`),
			turnResult(2, "cancelled"),
		},
		want: []wantExec{
			{id: "toolu_3", command: "rm -f notes.txt", cwd: "/w", desc: "Remove", outcome: cancelled},
			{id: "toolu_4", command: ticks, cwd: "/w", desc: "Ticks", outcome: cancelled},
		},
	}, {
		name: "opencode_reject_and_abort_notice", agent: opencodeAgent,
		frames: []string{
			ocOpen("o1", "bash"), ocLive("o1", "rm -f notes.txt", "Remove", ""),
			ask(44, `{"toolCallId":"o1","title":"rm -f notes.txt","kind":"execute","status":"pending","rawInput":{"command":"rm -f notes.txt"}}`),
			answer(44, "reject"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"o1","status":"failed","kind":"execute","title":"rm -f notes.txt","rawInput":{"command":"rm -f notes.txt","description":"Remove"},"content":[{"type":"content","content":{"type":"text","text":"The user rejected permission to use this specific tool call."}}],"rawOutput":{"error":"The user rejected permission to use this specific tool call."}}`),
			ocOpen("o2", "bash"), ocLive("o2", ticks, "Ticks", "tick1\n"), ocLive("o2", ticks, "Ticks", "tick1\ntick2\n"),
			cancelFrame,
			ocFinal("o2", "tick1\ntick2\n\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>", `{"output":"tick1\ntick2\n","exit":null,"description":"Ticks","truncated":false}`),
			turnResult(2, "cancelled"),
		},
		want: []wantExec{
			{id: "o1", command: "rm -f notes.txt", cwd: "/w", desc: "Remove", outcome: cancelled},
			{id: "o2", command: ticks, cwd: "/w", desc: "Ticks", outcome: cancelled, output: "tick1\ntick2\n"},
		},
	}, {
		name: "gemini_reject_then_cancel_with_output_before_it", agent: geminiAgent,
		frames: []string{
			ask(45, `{"toolCallId":"run_shell_command-1","status":"pending","title":"rm -f notes.txt","content":[{"type":"content","content":{"type":"text","text":"[current working directory /w] (Remove)"}}],"locations":[],"kind":"execute"}`),
			answer(45, "reject"),
			turnResult(2, "end_turn"), prompt(3),
			ask(46, `{"toolCallId":"run_shell_command-2","status":"pending","title":`+js(ticks)+`,"content":[{"type":"content","content":{"type":"text","text":"[current working directory /w] (Ticks)"}}],"locations":[],"kind":"execute"}`),
			answer(46, "allow"),
			cancelFrame,
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command-2","status":"completed","title":` + js(ticks) + `,"content":[{"type":"content","content":{"type":"text","text":"Command cancelled by user.\n\nOutput before cancellation:\ntick1\ntick2"}}],"locations":[],"kind":"execute"}`),
			turnResult(3, "cancelled"),
		},
		want: []wantExec{
			{id: "run_shell_command-1", command: "rm -f notes.txt", cwd: "/w", desc: "Remove", outcome: cancelled},
			{id: "run_shell_command-2", command: ticks, cwd: "/w", desc: "Ticks", outcome: cancelled, output: "tick1\ntick2"},
		},
	}, {
		name: "grok_rejected", agent: grokAgent,
		frames: []string{
			grOpen("g1", "rm -f notes.txt", "Remove"), grDescribe("g1", "rm -f notes.txt", "Remove"),
			upd("{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"g1\",\"status\":\"failed\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"User rejected the execution for tool `run_terminal_command`\"}}]}"),
		},
		want: []wantExec{{id: "g1", command: "rm -f notes.txt", cwd: "/w", desc: "Remove", outcome: cancelled}},
	}, {
		name: "cursor_cancel_no_final", agent: cursorAgent,
		frames: []string{cuOpen("tool_9", ticks), cuRunning("tool_9"), cancelFrame, turnResult(2, "cancelled")},
		want:   []wantExec{{id: "tool_9", command: ticks, cwd: "/w", outcome: cancelled}},
	}})
}
