package test

import (
	"fmt"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// Conformance traces for client-owned terminals (ACP v1 terminal/*) and
// for Factory Droid in both of its modes, written from the field guide
// (docs/agents.md): the real recording of Droid with a client terminal is
// in testdata/recordings; these cover what it does not (no terminal,
// rejections, "Allow both", replays) and other agents that use terminals.

const droidAgent = "@factory/cli"

// dOpen is Droid's opening tool_call for cmd.
func dOpen(id, cmd string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"title":%s,"kind":"execute","status":"pending","rawInput":{"summary":"Run it","command":%s,"riskLevelReason":"Harmless.","riskLevel":"low"}}`, id, js("`"+cmd+"` (low)"), js(cmd)))
}

// dAsk is Droid's permission ask for the call.
func dAsk(n int, id, cmd string) string {
	return ask(n, fmt.Sprintf(`{"toolCallId":%q,"title":%s,"rawInput":{"summary":"Run it","command":%s,"riskLevelReason":"Harmless.","riskLevel":"low"},"kind":"execute"}`, id, js("`"+cmd+"` (low)"), js(cmd)))
}

// dTerm is Droid's update naming a terminal.
func dTerm(id, term string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"in_progress","content":[{"type":"terminal","terminalId":%q}]}`, id, term))
}

// dStatus is a bare status update.
func dStatus(id, status string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":%q}`, id, status))
}

// dCancelled is the pair Droid sends after a cancelled or rejected call.
func dCancelled(id string) []string {
	return []string{
		upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"title":"Tool call","kind":"other","status":"pending","rawInput":{}}`, id)),
		upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"failed","rawOutput":{"text":"Error: Tool execution cancelled by user"},"content":[{"type":"content","content":{"type":"text","text":"Error: Tool execution cancelled by user"}}]}`, id)),
	}
}

// Client-terminal requests and the client's answers.
func tCreate(n int, cmd, cwd string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"terminal/create","params":{"sessionId":"S","command":%s,"cwd":%q,"outputByteLimit":1048576}}`, n, js(cmd), cwd)
}

func tCreated(n int, term string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"terminalId":%q}}`, n, term)
}

func tReq(n int, method, term string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"sessionId":"S","terminalId":%q}}`, n, method, term)
}

func tOutput(n int, out string, truncated bool, exit string) string {
	ex := ""
	if exit != "" {
		ex = `,"exitStatus":` + exit
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"output":%s,"truncated":%v%s}}`, n, js(out), truncated, ex)
}

func tEmpty(n int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, n) }

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func droidCases() []cs {
	return []cs{{
		name: "no client terminal: a bare completed is no evidence of exit 0, a bare failed is FAILED with an unknown exit",
		frames: []string{
			dOpen("c1", "ls"), dTerm("c1", "0c6b5d3e-1d4f-4c5e-9a8b-7f6e5d4c3b2a"), dStatus("c1", "completed"),
			dOpen("c2", "printf 'a\\nb\\n'; exit 3"), dTerm("c2", "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"), dStatus("c2", "failed"),
		},
		want: []wantExec{
			{id: "c1", command: "ls", cwd: "/w", desc: "Run it", outcome: unknown},
			{id: "c2", command: "printf 'a\\nb\\n'; exit 3", cwd: "/w", desc: "Run it", outcome: failed},
		},
	}, {
		name: "no client terminal: a rejection, with Droid's notice never output",
		frames: cat([]string{dOpen("c1", "rm -f notes.txt"), dAsk(5, "c1", "rm -f notes.txt"), answer(5, "reject")},
			dCancelled("c1")[1:]),
		want: []wantExec{{id: "c1", command: "rm -f notes.txt", cwd: "/w", desc: "Run it", outcome: cancelled, approval: "risk level low: Harmless."}},
	}, {
		name: "with a client terminal: a cancel, then the second tool_call and notice change nothing",
		frames: cat([]string{
			dOpen("c1", "for i in 1 2 3; do echo tick$i; sleep 1; done"),
			tCreate(2, "for i in 1 2 3; do echo tick$i; sleep 1; done", "/w"), tCreated(2, "term_1"),
			tReq(3, "terminal/output", "term_1"), tOutput(3, "tick1\n", false, ""),
			dTerm("c1", "term_1"),
			tReq(4, "terminal/output", "term_1"), tOutput(4, "tick1\ntick2\n", false, ""),
			clientCancel,
			tReq(5, "terminal/kill", "term_1"), tEmpty(5),
			tReq(6, "terminal/release", "term_1"), tEmpty(6),
			dStatus("c1", "failed"),
		}, dCancelled("c1")),
		want: []wantExec{{id: "c1", command: "for i in 1 2 3; do echo tick$i; sleep 1; done", cwd: "/w", desc: "Run it", outcome: cancelled, output: "tick1\ntick2\n"}},
		revs: noRevisionAfterEnd,
	}, {
		name: "with a client terminal: completed, but the terminal exited 3",
		frames: []string{
			dOpen("c1", "exit 3"),
			tCreate(2, "exit 3", "/w/sub"), tCreated(2, "term_2"),
			tReq(3, "terminal/output", "term_2"), tOutput(3, "", false, `{"exitCode":3,"signal":null}`),
			dTerm("c1", "term_2"),
			tReq(4, "terminal/kill", "term_2"), tEmpty(4),
			tReq(5, "terminal/release", "term_2"), tEmpty(5),
			dStatus("c1", "completed"),
		},
		want: []wantExec{{id: "c1", command: "exit 3", cwd: "/w/sub", desc: "Run it", outcome: failed, exit: code(3)}},
	}, {
		name: "with a client terminal: SIGKILL in the exit status, the kill that follows changes nothing",
		frames: []string{
			dOpen("c1", "echo before-kill; kill -9 $$"),
			tCreate(2, "echo before-kill; kill -9 $$", "/w"), tCreated(2, "term_3"),
			dTerm("c1", "term_3"),
			tReq(3, "terminal/output", "term_3"), tOutput(3, "before-kill\n", false, `{"exitCode":null,"signal":"SIGKILL"}`),
			tReq(4, "terminal/kill", "term_3"), tEmpty(4),
			tReq(5, "terminal/release", "term_3"), tEmpty(5),
			dStatus("c1", "failed"),
		},
		want: []wantExec{{id: "c1", command: "echo before-kill; kill -9 $$", cwd: "/w", desc: "Run it", outcome: failed, signal: "SIGKILL", output: "before-kill\n"}},
	}, {
		name: "one ask covers two calls and names only the last",
		frames: []string{
			dOpen("c1", "echo one"), dOpen("c2", "echo two"),
			dAsk(7, "c2", "echo two"), answer(7, "allow"),
			tCreate(8, "echo one", "/w"), tCreated(8, "term_a"), dTerm("c1", "term_a"),
			tReq(9, "terminal/output", "term_a"), tOutput(9, "one\n", false, `{"exitCode":0,"signal":null}`),
			dStatus("c1", "completed"),
			tCreate(10, "echo two", "/w"), tCreated(10, "term_b"), dTerm("c2", "term_b"),
			tReq(11, "terminal/output", "term_b"), tOutput(11, "two\n", false, `{"exitCode":0,"signal":null}`),
			dStatus("c2", "completed"),
		},
		want: []wantExec{
			{id: "c1", command: "echo one", cwd: "/w", desc: "Run it", outcome: succeeded, exit: code(0), output: "one\n"},
			{id: "c2", command: "echo two", cwd: "/w", desc: "Run it", outcome: succeeded, exit: code(0), output: "two\n", approval: "risk level low: Harmless."},
		},
	}, {
		name: "a replayed call states the exit code and output it never sent live",
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"` + "`printf a; exit 3` (low)" + `","kind":"execute","status":"failed","rawInput":{"command":"printf a; exit 3"},"content":[{"type":"content","content":{"type":"text","text":"Error: Command failed (exit code: 3)\na\n\n\n[Process exited with code 3]"}}]}`),
		},
		want: []wantExec{{id: "c1", command: "printf a; exit 3", cwd: "/w", outcome: failed, exit: code(3), output: "a\n"}},
	}}
}

// noRevisionAfterEnd checks that nothing after a call's ENDED revision
// (Droid's second tool_call and cancel notice) produced another.
func noRevisionAfterEnd(t *testing.T, resps []*pb.NormalizeResponse) {
	t.Helper()
	ended := map[string]bool{}
	for _, r := range resps {
		x := r.GetShellExec()
		if x == nil {
			continue
		}
		if ended[x.GetToolCallId()] {
			t.Errorf("%s: revision %d after the end", x.GetToolCallId(), x.GetRevision())
		}
		if x.GetState() == pb.ShellState_SHELL_STATE_ENDED {
			ended[x.GetToolCallId()] = true
		}
	}
}

func TestConformanceDroid(t *testing.T) {
	cases := droidCases()
	for i := range cases {
		cases[i].agent = droidAgent
		cases[i].dialect = "droid"
	}
	runConformance(t, cases)
}

// Any agent that runs its commands in the client's terminal (Goose,
// Mistral Vibe, Kimi CLI: read by the generic dialect) is read from the
// terminal requests and answers, whatever its tool call says.
func TestConformanceClientTerminalsGeneric(t *testing.T) {
	open := func(id string) string {
		return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"title":"Run shell command","kind":"execute","status":"pending"}`, id))
	}
	named := func(id, term, status string) string {
		return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":%q,"content":[{"type":"terminal","terminalId":%q}]}`, id, status, term))
	}
	runConformance(t, []cs{{
		name:  "argv create, wait_for_exit, output cut by the client, completed with exit 2",
		agent: "some-agent",
		frames: []string{
			open("c1"),
			named("c1", "t-1", "in_progress"),
			`{"jsonrpc":"2.0","id":30,"method":"terminal/create","params":{"sessionId":"S","command":"ls","args":["-l","/no such dir"],"outputByteLimit":8}}`,
			tCreated(30, "t-1"),
			tReq(31, "terminal/wait_for_exit", "t-1"), `{"jsonrpc":"2.0","id":31,"result":{"exitCode":2,"signal":null}}`,
			tReq(32, "terminal/output", "t-1"), tOutput(32, "ory\n", true, `{"exitCode":2,"signal":null}`),
			tReq(33, "terminal/release", "t-1"), tEmpty(33),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"terminal","terminalId":"t-1"}]}`),
		},
		want: []wantExec{{id: "c1", command: "ls -l '/no such dir'", cwd: "/w", outcome: failed, exit: code(2), output: "ory\n", trunc: true}},
	}, {
		name:  "the create fails: the command never started",
		agent: "some-agent",
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"nosuchcmd","kind":"execute","status":"pending","rawInput":{"command":"nosuchcmd"}}`),
			`{"jsonrpc":"2.0","id":40,"method":"terminal/create","params":{"sessionId":"S","command":"nosuchcmd"}}`,
			`{"jsonrpc":"2.0","id":40,"error":{"code":-32603,"message":"spawn nosuchcmd ENOENT"}}`,
			dStatus("c1", "completed"),
		},
		want: []wantExec{{id: "c1", command: "nosuchcmd", cwd: "/w", outcome: failed}},
	}})
}

// ------------------------------------------------ claude-code-acp, client terminal

const claudeCodeACP = "@zed-industries/claude-code-acp"

// ccOpen is claude-code-acp's tool_call of its terminal Bash.
func ccOpen(id, cmd string) string {
	return upd(fmt.Sprintf(`{"_meta":{"claudeCode":{"toolName":"mcp__acp__Bash"}},"toolCallId":%q,"sessionUpdate":"tool_call","rawInput":{"command":%s,"timeout_ms":2000,"run_in_background":false},"status":"pending","title":%s,"kind":"execute","content":[]}`, id, js(cmd), js("`"+cmd+"`")))
}

// ccRunning names the terminal.
func ccRunning(id, term string) string {
	return upd(fmt.Sprintf(`{"toolCallId":%q,"sessionUpdate":"tool_call_update","status":"in_progress","content":[{"type":"terminal","terminalId":%q}]}`, id, term))
}

// ccFinal is the MCP tool's result: its text as content, the content
// blocks as rawOutput.
func ccFinal(id, text string) string {
	return upd(fmt.Sprintf(`{"_meta":{"claudeCode":{"toolName":"mcp__acp__Bash"}},"toolCallId":%q,"sessionUpdate":"tool_call_update","status":"completed","rawOutput":[{"type":"text","text":%s}],"content":[{"type":"content","content":{"type":"text","text":%s}}]}`, id, js(text), js(text)))
}

// ccCreate is its terminal/create: the whole line, no args or cwd.
func ccCreate(n int, cmd string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"terminal/create","params":{"command":%s,"sessionId":"S","env":[{"name":"CLAUDECODE","value":"1"}],"outputByteLimit":32000}}`, n, js(cmd))
}

func TestConformanceClaudeClientTerminal(t *testing.T) {
	big := lines("L", 1, 9000) // 63,000 bytes; the client keeps the last 32,000
	tailOf := big[len(big)-32000:]
	run := func(id, cmd, term string, n int, output, exit, text string) []string {
		return []string{
			ccOpen(id, cmd),
			ask(n, fmt.Sprintf(`{"toolCallId":%q,"rawInput":{"command":%s}}`, id, js(cmd))), answer(n, "allow"),
			ccCreate(n+1, cmd), tCreated(n+1, term),
			ccRunning(id, term),
			tReq(n+2, "terminal/wait_for_exit", term), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, n+2, exit),
			tReq(n+3, "terminal/output", term), tOutput(n+3, output, len(output) == 32000, exit),
			tReq(n+4, "terminal/release", term), tEmpty(n + 4),
			ccFinal(id, text),
		}
	}
	runConformance(t, []cs{{
		name:  "exit 0, exit 3 and a signal: the exit status from the client, the result texts are notices",
		agent: claudeCodeACP,
		frames: cat(
			run("t1", "ls", "term-1", 10, "a.txt\n", `{"exitCode":0,"signal":null}`, "Exited with code 0.Final output:\n\na.txt\n"),
			run("t2", "printf 'a\\nb\\n'; exit 3", "term-2", 20, "a\nb\n", `{"exitCode":3,"signal":null}`, "Exited with code 3.Final output:\n\na\nb\n"),
			run("t3", "echo before-kill; kill -9 $$", "term-3", 30, "before-kill\n", `{"exitCode":null,"signal":"SIGKILL"}`, "Interrupted by the user. Signal `SIGKILL`. Final output:\n\nbefore-kill\n"),
		),
		want: []wantExec{
			{id: "t1", command: "ls", cwd: "/w", outcome: succeeded, exit: code(0), output: "a.txt\n"},
			{id: "t2", command: "printf 'a\\nb\\n'; exit 3", cwd: "/w", outcome: failed, exit: code(3), output: "a\nb\n"},
			{id: "t3", command: "echo before-kill; kill -9 $$", cwd: "/w", outcome: failed, signal: "SIGKILL", output: "before-kill\n"},
		},
	}, {
		name:  "output cut by the client at 32,000 bytes: truncated, the note not output",
		agent: claudeCodeACP,
		frames: run("t1", "seq 1 9000", "term-1", 10, tailOf, `{"exitCode":0,"signal":null}`,
			"Exited with code 0.Final output:\n\n"+tailOf+"\n\nCommand output was too long, so it was truncated to 32000 bytes."),
		want: []wantExec{{id: "t1", command: "seq 1 9000", cwd: "/w", outcome: succeeded, exit: code(0), output: tailOf, trunc: true}},
	}, {
		name:  "a timeout: the terminal is released before its wait_for_exit answer, which comes after the final",
		agent: claudeCodeACP,
		frames: []string{
			ccOpen("t1", "echo start; sleep 6"),
			ccCreate(11, "echo start; sleep 6"), tCreated(11, "term-1"),
			ccRunning("t1", "term-1"),
			tReq(12, "terminal/wait_for_exit", "term-1"),
			tReq(13, "terminal/output", "term-1"), tOutput(13, "start\n", false, ""),
			tReq(14, "terminal/release", "term-1"), tEmpty(14),
			ccFinal("t1", "Timed out. New output:\n\nstart\n"),
			`{"jsonrpc":"2.0","id":12,"result":{"exitCode":null,"signal":"SIGTERM"}}`,
		},
		want: []wantExec{{id: "t1", command: "echo start; sleep 6", cwd: "/w", outcome: failed, timedOut: true, output: "start\n"}},
	}})
}
