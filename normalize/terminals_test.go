package normalize_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Frames of client-owned terminals (ACP v1 terminal/*), as a generic
// agent and its client send them.

func tcOpen(id, cmd string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call","toolCallId":%q,"title":"Run it","kind":"execute","status":"pending","rawInput":{"command":%q}}}}`, id, cmd)
}

func tcNames(id, term, status string) string {
	st := ""
	if status != "" {
		st = fmt.Sprintf(`,"status":%q`, status)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call_update","toolCallId":%q%s,"content":[{"type":"terminal","terminalId":%q}]}}}`, id, st, term)
}

func tcStatus(id, status string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":%q}}}`, id, status)
}

func tcCreate(n int, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"terminal/create","params":{"sessionId":"S",%s}}`, n, params)
}

func tcReq(n int, method, term string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"sessionId":"S","terminalId":%q}}`, n, method, term)
}

func tcPrompt(n int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"go"}]}}`, n)
}

func tcResult(n int, result string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, n, result)
}

func tcOutput(n int, out string, truncated bool, exit string) string {
	ex := ""
	if exit != "" {
		ex = `,"exitStatus":` + exit
	}
	return tcResult(n, fmt.Sprintf(`{"output":%q,"truncated":%v%s}`, out, truncated, ex))
}

// termFinal is what a call ended as.
type termFinal struct {
	command, cwd, outcome, output string
	exit                          string // "nil" when unknown
	signal                        string
	truncated                     bool
	revisions                     uint32
}

func (f termFinal) String() string {
	return fmt.Sprintf("%q cwd=%q %s exit=%s signal=%q output=%q truncated=%v (%d revisions)", f.command, f.cwd, f.outcome, f.exit, f.signal, f.output, f.truncated, f.revisions)
}

// feedTerms feeds frames to the Normalizers in turn (one session) and
// returns each call's final state, the revisions of every call numbered
// without gap, and the FrameErrors.
func feedTerms(t *testing.T, frames []string, replicas ...*normalize.Normalizer) (map[string]termFinal, []*normalize.FrameError) {
	t.Helper()
	out := map[string]string{}
	last := map[string]*normalize.ShellExec{}
	var errs []*normalize.FrameError
	emit := normalize.WithEmit(func(ev normalize.Event) error {
		if ev.Error != nil {
			errs = append(errs, ev.Error)
			return nil
		}
		x := ev.ShellExec
		prev := uint32(0)
		if p := last[x.ToolCallID]; p != nil {
			prev = p.Revision
		}
		assert.Equal(t, prev+1, x.Revision, "revision of %s", x.ToolCallID)
		last[x.ToolCallID] = x
		out[x.ToolCallID] = x.Output.Apply(out[x.ToolCallID])
		return nil
	})
	for i, f := range frames {
		_, err := replicas[i%len(replicas)].Feed("s", []byte(f), normalize.WithSequence(uint64(i+1)), emit)
		require.NoError(t, err, "frame %d", i+1)
	}
	_, err := replicas[len(frames)%len(replicas)].CloseSession("s", emit)
	require.NoError(t, err)
	got := map[string]termFinal{}
	for id, x := range last {
		exit := "nil"
		if x.ExitCode != nil {
			exit = fmt.Sprint(*x.ExitCode)
		}
		got[id] = termFinal{command: x.Command, cwd: x.Cwd, outcome: x.Outcome.String(), output: out[id], exit: exit, signal: x.Signal,
			truncated: x.Output != nil && x.Output.Truncated, revisions: x.Revision}
	}
	return got, errs
}

func TestClientTerminals(t *testing.T) {
	const create = `"command":"printf","args":["a\\nb\\n","it's"],"cwd":"/w/app","outputByteLimit":1000`
	const line = `printf 'a\nb\n' 'it'\''s'`
	cases := []struct {
		name   string
		frames []string
		want   map[string]termFinal
		errs   int
	}{{
		name: "the create comes first; output and exit arrive before the call names the terminal",
		frames: []string{
			tcOpen("c1", "printf a b"),
			tcCreate(7, create), tcResult(7, `{"terminalId":"t1"}`),
			tcReq(8, "terminal/output", "t1"), tcOutput(8, "a\n", false, ""),
			tcReq(9, "terminal/output", "t1"), tcOutput(9, "a\nb\n", false, `{"exitCode":3,"signal":null}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(10, "terminal/kill", "t1"), tcResult(10, `{}`),
			tcReq(11, "terminal/release", "t1"), tcResult(11, `{}`),
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: line, cwd: "/w/app", outcome: "FAILED", exit: "3", output: "a\nb\n"}},
	}, {
		// Mistral Vibe, say: once the client's terminal said what the
		// command printed, the agent's own final text (a summary, or an
		// error wrapping the output) is no output.
		name: "the agent's final text after the terminal's output: a summary",
		frames: []string{
			tcOpen("c1", "ls -la"),
			tcCreate(1, `"command":"ls -la","cwd":"/w"`), tcResult(1, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(2, "terminal/wait_for_exit", "t1"), tcResult(2, `{"exitCode":0,"signal":null}`),
			tcReq(3, "terminal/output", "t1"), tcOutput(3, "a.txt\nb.txt\n", false, `{"exitCode":0,"signal":null}`),
			tcReq(4, "terminal/release", "t1"), tcResult(4, `null`),
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Ran ls -la"}}]}}}`,
		},
		want: map[string]termFinal{"c1": {command: "ls -la", cwd: "/w", outcome: "SUCCEEDED", exit: "0", output: "a.txt\nb.txt\n"}},
	}, {
		// ACP's exitCode is a uint32: a Windows crash status arrives as
		// 3221225477 (0xC0000005), which is -1073741819 as an int32.
		name: "an exit code past int32 is its 32 bits read signed",
		frames: []string{
			tcOpen("c1", "crash.exe"),
			tcCreate(1, `"command":"crash.exe","cwd":"/w"`), tcResult(1, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(2, "terminal/wait_for_exit", "t1"), tcResult(2, `{"exitCode":3221225477,"signal":null}`),
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: "crash.exe", cwd: "/w", outcome: "FAILED", exit: "-1073741819"}},
	}, {
		name: "an exit status past int32 in a terminal/output answer",
		frames: []string{
			tcOpen("c1", "crash.exe"),
			tcCreate(1, `"command":"crash.exe","cwd":"/w"`), tcResult(1, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(2, "terminal/output", "t1"), tcOutput(2, "boom\n", false, `{"exitCode":4294967295,"signal":null}`),
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: "crash.exe", cwd: "/w", outcome: "FAILED", exit: "-1", output: "boom\n"}},
	}, {
		// A client on Windows names Windows paths, absolute on its host
		// though not on this one.
		name: "a Windows session cwd, and a cwd relative to it",
		frames: []string{
			`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"C:\\Users\\me\\proj","mcpServers":[]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"S"}}`,
			tcOpen("c1", "dir"),
			tcCreate(2, `"command":"dir"`), tcResult(2, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(3, "terminal/wait_for_exit", "t1"), tcResult(3, `{"exitCode":0,"signal":null}`),
			tcStatus("c1", "completed"),
			tcOpen("c2", "dir"),
			tcCreate(4, `"command":"dir","cwd":"sub"`), tcResult(4, `{"terminalId":"t2"}`),
			tcNames("c2", "t2", "in_progress"),
			tcReq(5, "terminal/wait_for_exit", "t2"), tcResult(5, `{"exitCode":0,"signal":null}`),
			tcStatus("c2", "completed"),
			tcOpen("c3", "dir"),
			tcCreate(6, `"command":"dir","cwd":"D:/data"`), tcResult(6, `{"terminalId":"t3"}`),
			tcNames("c3", "t3", "in_progress"),
			tcReq(7, "terminal/wait_for_exit", "t3"), tcResult(7, `{"exitCode":0,"signal":null}`),
			tcStatus("c3", "completed"),
		},
		want: map[string]termFinal{
			"c1": {command: "dir", cwd: `C:\Users\me\proj`, outcome: "SUCCEEDED", exit: "0"},
			"c2": {command: "dir", cwd: `C:\Users\me\proj\sub`, outcome: "SUCCEEDED", exit: "0"},
			"c3": {command: "dir", cwd: `D:/data`, outcome: "SUCCEEDED", exit: "0"},
		},
	}, {
		name: "a create's relative cwd is under the session's, also when the create comes first",
		frames: []string{
			`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"S"}}`,
			tcOpen("c1", "ls"),
			tcCreate(2, `"command":"ls","cwd":"app"`), tcResult(2, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(3, "terminal/wait_for_exit", "t1"), tcResult(3, `{"exitCode":0,"signal":null}`),
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: "ls", cwd: "/w/app", outcome: "SUCCEEDED", exit: "0"}},
	}, {
		name: "the agent's final text after the terminal's output: an error report",
		frames: []string{
			tcOpen("c1", "ls nope"),
			tcCreate(1, `"command":"ls nope","cwd":"/w"`), tcResult(1, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(2, "terminal/output", "t1"), tcOutput(2, "ls: nope: No such file\n", false, `{"exitCode":2,"signal":null}`),
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":"Command failed: 'ls nope'\nReturn code: 2\nStdout: ls: nope: No such file"}}}`,
		},
		want: map[string]termFinal{"c1": {command: "ls nope", cwd: "/w", outcome: "FAILED", exit: "2", output: "ls: nope: No such file\n"}},
	}, {
		name: "the call names the terminal first; output snapshots replace; wait_for_exit gives exit 0",
		frames: []string{
			tcOpen("c1", "ls"),
			tcCreate(1, `"command":"ls"`),
			tcNames("c1", "t1", "in_progress"),
			tcResult(1, `{"terminalId":"t1"}`),
			tcReq(2, "terminal/output", "t1"), tcOutput(2, "x\n", false, ""),
			tcReq(3, "terminal/output", "t1"), tcOutput(3, "x\ny\n", false, ""),
			tcReq(4, "terminal/wait_for_exit", "t1"), tcResult(4, `{"exitCode":0,"signal":null}`),
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: "ls", outcome: "SUCCEEDED", exit: "0", output: "x\ny\n"}},
	}, {
		name: "a signal in the wait result; the client cut the output's beginning",
		frames: []string{
			tcOpen("c1", "yes"),
			tcCreate(1, `"command":"yes","outputByteLimit":4`), tcResult(1, `{"terminalId":"t9"}`),
			tcNames("c1", "t9", "in_progress"),
			tcReq(2, "terminal/kill", "t9"), tcResult(2, `{}`),
			tcReq(3, "terminal/wait_for_exit", "t9"), tcResult(3, `{"exitCode":null,"signal":"SIGKILL"}`),
			tcReq(4, "terminal/output", "t9"), tcOutput(4, "y\ny\n", true, `{"exitCode":null,"signal":"SIGKILL"}`),
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: "yes", outcome: "FAILED", exit: "nil", signal: "SIGKILL", output: "y\ny\n", truncated: true}},
	}, {
		name: "a kill after the exit is known changes nothing",
		frames: []string{
			tcOpen("c1", "true"),
			tcCreate(1, `"command":"true"`), tcResult(1, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(2, "terminal/output", "t1"), tcOutput(2, "", false, `{"exitCode":0,"signal":null}`),
			tcReq(3, "terminal/kill", "t1"), tcResult(3, `{}`),
			tcReq(4, "terminal/wait_for_exit", "t1"), tcResult(4, `{"exitCode":null,"signal":"SIGKILL"}`),
			tcReq(5, "terminal/release", "t1"), tcResult(5, `{}`),
			tcStatus("c1", "failed"),
		},
		want: map[string]termFinal{"c1": {command: "true", outcome: "SUCCEEDED", exit: "0"}},
	}, {
		name: "a kill before the exit is known, with no exit status after it, is not a signal",
		frames: []string{
			tcOpen("c1", "sleep 9"),
			tcCreate(1, `"command":"sleep 9"`), tcResult(1, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(2, "terminal/kill", "t1"), tcResult(2, `{}`),
			tcReq(3, "terminal/release", "t1"), tcResult(3, `{}`),
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: "sleep 9", outcome: "UNKNOWN", exit: "nil"}},
	}, {
		name: "a create the client could not run: the open call running that command failed",
		frames: []string{
			tcOpen("c1", "nosuch"),
			tcCreate(1, `"command":"nosuch"`), `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"spawn nosuch ENOENT"}}`,
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: "nosuch", outcome: "FAILED", exit: "nil"}},
	}, {
		name: "a terminal id no create named changes nothing",
		frames: []string{
			tcOpen("c1", "ls"),
			tcNames("c1", "4b9a-uuid", "in_progress"),
			tcReq(2, "terminal/output", "4b9a-uuid"), tcOutput(2, "stray\n", false, `{"exitCode":1}`),
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: "ls", outcome: "UNKNOWN", exit: "nil"}},
	}, {
		name: "the client's own requests share the id space: a prompt result never answers a terminal request",
		frames: []string{
			`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"S","prompt":[]}}`,
			tcOpen("c1", "echo hi"),
			tcCreate(4, `"command":"echo hi"`),
			tcResult(4, `{"stopReason":"end_turn"}`),
			tcResult(4, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", ""),
			tcReq(5, "terminal/output", "t1"), tcOutput(5, "hi\n", false, `{"exitCode":0}`),
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: "echo hi", outcome: "SUCCEEDED", exit: "0", output: "hi\n"}},
	}, {
		name: "output that starts like an echo of the command is the command's own",
		frames: []string{
			tcOpen("c1", "echo x"),
			tcCreate(1, `"command":"echo x"`), tcResult(1, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(2, "terminal/output", "t1"), tcOutput(2, "$ echo x\nx\n", false, `{"exitCode":0}`),
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: "echo x", outcome: "SUCCEEDED", exit: "0", output: "$ echo x\nx\n"}},
	}, {
		name: "an output answer older than one applied is stale: it never takes the output back",
		frames: []string{
			tcOpen("c1", "seq 3"),
			tcCreate(1, `"command":"seq 3"`), tcResult(1, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(2, "terminal/output", "t1"), tcReq(3, "terminal/output", "t1"),
			tcOutput(3, "1\n2\n3\n", false, `{"exitCode":0,"signal":null}`),
			tcOutput(2, "1\n", false, ""),
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: "seq 3", outcome: "SUCCEEDED", exit: "0", output: "1\n2\n3\n"}},
	}, {
		name: "an exit status that says nothing (no code, no signal) does not hide the one that follows",
		frames: []string{
			tcOpen("c1", "x"),
			tcCreate(1, `"command":"x"`), tcResult(1, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(2, "terminal/output", "t1"), tcOutput(2, "x\n", false, `{"exitCode":null,"signal":null}`),
			tcReq(3, "terminal/wait_for_exit", "t1"), tcResult(3, `{"exitCode":3,"signal":null}`),
			tcStatus("c1", "completed"),
		},
		want: map[string]termFinal{"c1": {command: "x", outcome: "FAILED", exit: "3", output: "x\n"}},
	}, {
		name: "a terminal id the client gives again after release is the new command's",
		frames: []string{
			tcPrompt(1),
			tcOpen("c1", "x"),
			tcCreate(10, `"command":"x"`), tcResult(10, `{"terminalId":"t1"}`),
			tcNames("c1", "t1", "in_progress"),
			tcReq(11, "terminal/output", "t1"), tcOutput(11, "x\n", false, `{"exitCode":0,"signal":null}`),
			tcStatus("c1", "completed"),
			tcReq(12, "terminal/release", "t1"), tcResult(12, `{}`),
			tcResult(1, `{"stopReason":"end_turn"}`),
			tcPrompt(2),
			tcOpen("c2", "y"),
			tcCreate(20, `"command":"y"`), tcResult(20, `{"terminalId":"t1"}`),
			tcNames("c2", "t1", "in_progress"),
			tcReq(21, "terminal/output", "t1"), tcOutput(21, "y\n", false, `{"exitCode":4,"signal":null}`),
			tcStatus("c2", "completed"),
			tcResult(2, `{"stopReason":"end_turn"}`),
		},
		want: map[string]termFinal{
			"c1": {command: "x", outcome: "SUCCEEDED", exit: "0", output: "x\n"},
			"c2": {command: "y", outcome: "FAILED", exit: "4", output: "y\n"},
		},
	}, {
		name: "a cancel that comes after its turn ended cancels nothing of the next turn",
		frames: []string{
			tcPrompt(1),
			tcResult(1, `{"stopReason":"end_turn"}`),
			`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"S"}}`,
			tcPrompt(2),
			tcOpen("c2", "y"),
			tcCreate(20, `"command":"y"`), tcResult(20, `{"terminalId":"t2"}`),
			tcNames("c2", "t2", "in_progress"),
			tcReq(21, "terminal/output", "t2"), tcOutput(21, "y\n", false, `{"exitCode":3,"signal":null}`),
			tcStatus("c2", "completed"),
			tcResult(2, `{"stopReason":"end_turn"}`),
		},
		want: map[string]termFinal{"c2": {command: "y", outcome: "FAILED", exit: "3", output: "y\n"}},
	}}
	for _, tc := range cases {
		for _, mode := range []string{"memory", "store"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				replicas := []*normalize.Normalizer{normalize.New()}
				if mode == "store" {
					st := store.NewMemory()
					replicas = []*normalize.Normalizer{normalize.New(normalize.WithStore(st)), normalize.New(normalize.WithStore(st))}
				}
				got, errs := feedTerms(t, tc.frames, replicas...)
				assert.Len(t, errs, tc.errs, "frame errors: %v", errs)
				require.Len(t, got, len(tc.want))
				for id, w := range tc.want {
					g := got[id]
					g.revisions, w.revisions = 0, 0
					assert.Equal(t, w.String(), g.String(), "call %s", id)
				}
			})
		}
	}
}

// A client that never answers the agent's terminal requests does not make
// the session hold more of them than its bound: the oldest are forgotten,
// each with a FrameError.
func TestClientTerminalRequestsBounded(t *testing.T) {
	n := normalize.New(normalize.WithMaxCallsPerSession(2))
	feed := func(f string) error {
		_, err := n.Feed("s", []byte(f))
		return err
	}
	require.NoError(t, feed(tcCreate(1, `"command":"ls"`)))
	require.NoError(t, feed(tcResult(1, `{"terminalId":"t1"}`)))
	forgotten := 0
	for i := range 20 {
		err := feed(tcReq(100+i, "terminal/output", "t1"))
		var fe *normalize.FrameError
		if errors.As(err, &fe) {
			assert.Equal(t, normalize.ResourceExhausted, fe.Code)
			assert.Contains(t, fe.Message, "forgotten")
			forgotten++
		}
	}
	assert.Equal(t, 12, forgotten, "8 requests (4 per call) are kept, the 12 before them forgotten")
	// The newest are still answered.
	require.NoError(t, feed(tcOpen("c1", "ls")))
	require.NoError(t, feed(tcNames("c1", "t1", "in_progress")))
	execs, err := n.Feed("s", []byte(tcOutput(119, "out\n", false, `{"exitCode":0}`)))
	require.NoError(t, err)
	require.NotEmpty(t, execs)
	assert.Equal(t, "out\n", execs[len(execs)-1].Output.Apply(""))
}

// The command a client terminal ran beats what the tool call's title or
// rawInput say, whichever comes first.
func TestClientTerminalCommandBeatsRawInput(t *testing.T) {
	frames := []string{
		tcCreate(1, `"command":"bash","args":["-c","ls -la"]`), tcResult(1, `{"terminalId":"t1"}`),
		tcNames("c1", "t1", "in_progress"),
		tcOpen("c1", "ls"),
		tcStatus("c1", "completed"),
	}
	got, errs := feedTerms(t, frames, normalize.New())
	assert.Empty(t, errs)
	assert.Equal(t, "bash -c 'ls -la'", got["c1"].command)
	assert.True(t, strings.HasPrefix(got["c1"].outcome, "UNKNOWN"))
}

// The agent and the client number their requests independently. With the
// frame's direction known, the agent's error answer to the client's
// request 1 is never taken for the client's answer to the agent's
// terminal/create 1.
func TestClientTerminalDirection(t *testing.T) {
	n := normalize.New()
	feed := func(f string, d normalize.Direction) {
		_, err := n.Feed("s", []byte(f), normalize.WithDirection(d))
		require.NoError(t, err)
	}
	feed(`{"jsonrpc":"2.0","id":1,"method":"session/set_mode","params":{"sessionId":"S","modeId":"x"}}`, normalize.FromClient)
	feed(tcOpen("c1", "make"), normalize.FromAgent)
	feed(tcCreate(1, `"command":"make"`), normalize.FromAgent)
	feed(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no such mode"}}`, normalize.FromAgent)
	feed(tcResult(1, `{"terminalId":"t1"}`), normalize.FromClient)
	feed(tcNames("c1", "t1", "in_progress"), normalize.FromAgent)
	feed(tcReq(2, "terminal/output", "t1"), normalize.FromAgent)
	feed(tcOutput(2, "ok\n", false, `{"exitCode":0}`), normalize.FromClient)
	execs, err := n.Feed("s", []byte(tcStatus("c1", "completed")), normalize.WithDirection(normalize.FromAgent))
	require.NoError(t, err)
	require.NotEmpty(t, execs)
	x := execs[len(execs)-1]
	assert.Equal(t, normalize.Succeeded, x.Outcome, x.OutcomeReason)
	require.NotNil(t, x.ExitCode)
	assert.Equal(t, int32(0), *x.ExitCode)
}

// A tool call id the agent uses again, for another command, while its
// ended call is still held (within the grace period) is not a new call:
// revisions never restart. The frame is refused by name instead of
// vanishing into the ended call.
func TestReusedToolCallIDIsRefused(t *testing.T) {
	got, errs := feedTerms(t, []string{
		tcPrompt(1),
		tcOpen("c1", "x"),
		tcStatus("c1", "completed"),
		tcResult(1, `{"stopReason":"end_turn"}`),
		tcPrompt(2),
		tcOpen("c1", "y"),
		tcResult(2, `{"stopReason":"end_turn"}`),
	}, normalize.New())
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.FailedPrecondition, errs[0].Code)
	assert.Contains(t, errs[0].Message, `tool call "c1" ended`)
	assert.Equal(t, "x", got["c1"].command)
	// The same command again (an agent that restates its tool_call after
	// the end, as Cline does) is no reuse.
	_, errs = feedTerms(t, []string{tcOpen("c1", "x"), tcStatus("c1", "completed"), tcOpen("c1", "x")}, normalize.New())
	assert.Empty(t, errs)
	// A permission ask for another command under the ended id is refused
	// the same way: what it asks to run is no part of the ended call.
	got, errs = feedTerms(t, []string{
		tcOpen("c1", "make"), tcStatus("c1", "completed"),
		`{"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"sessionId":"S","toolCall":{"toolCallId":"c1","kind":"execute","title":"rm -rf /tmp/x","rawInput":{"command":"rm -rf /tmp/x"}},"options":[]}}`,
	}, normalize.New())
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.FailedPrecondition, errs[0].Code)
	assert.Contains(t, errs[0].Message, "asks permission")
	assert.Equal(t, "make", got["c1"].command)
	// A call the end of the turn ended may still run: Codex (the
	// TypeScript adapter 2.6.0, recorded) asks under its id before it
	// writes to the command's stdin in the next turn, naming the write;
	// the ask is about the same call, and no error.
	got, errs = feedTerms(t, []string{
		tcPrompt(1),
		tcOpen("c1", "read -r line; echo got:$line; exit 5"),
		tcResult(1, `{"stopReason":"end_turn"}`),
		tcPrompt(2),
		`{"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"sessionId":"S","toolCall":{"toolCallId":"c1","kind":"execute","status":"pending","title":"write_stdin --session-id 85267 'hi\n'","rawInput":{"command":"write_stdin --session-id 85267 'hi\n'"}},"options":[]}}`,
	}, normalize.New())
	assert.Empty(t, errs)
	assert.Equal(t, "read -r line; echo got:$line; exit 5", got["c1"].command, "an ask never renames the call")
}

// A relative cwd joined with the session's is held to the text limit as
// any cwd is: left out, with a FrameError that names the limit.
func TestJoinedCwdIsBounded(t *testing.T) {
	n := normalize.New(normalize.WithTextLimit(64))
	base := "/" + strings.Repeat("a", 40)
	open := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","status":"in_progress","rawInput":{"command":"ls","cwd":"` + strings.Repeat("b", 40) + `"}}}}`
	revs, err := n.Feed("s", []byte(open), normalize.WithCwd(base))
	var fe *normalize.FrameError
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, fe.Message, "--text-limit")
	require.Len(t, revs, 1)
	assert.LessOrEqual(t, len(revs[0].Cwd), 64, "a cwd over the text limit is left out")
	assert.Equal(t, "ls", revs[0].Command, "the rest of the update applies")
}

// A frame's own cwd (AcpFrame.cwd, WithCwd) that is over the text limit,
// not absolute or holds a control character (a NUL ends a path on every
// system; the others are no directory a client meant) is left out as a
// call's is: the frame applies without it (its call opens, the session
// keeps the cwd it had), and a FrameError names the problem; the limit's
// refusal is counted.
func TestBadFrameCwdLeavesTheFrame(t *testing.T) {
	for _, c := range []struct {
		name, cwd string
		says      []string
		refused   int
	}{
		{"over the text limit", "/" + strings.Repeat("d", 80), []string{"81 bytes", "text limit of 64 bytes", "--text-limit"}, 1},
		{"not absolute", "rel/dir", []string{"not absolute", `"rel/dir"`}, 0},
		{"a NUL byte", "/work/a\x00b", []string{"control character", `"/work/a\x00b"`}, 0},
		{"a newline", "/work/a\nb", []string{"control character", `"/work/a\nb"`}, 0},
		{"an escape", "/work/\x1b[31m", []string{"control character"}, 0},
		{"DEL", "/work/a\x7f", []string{"control character"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			refused := 0
			n := normalize.New(normalize.WithTextLimit(64), normalize.WithHooks(normalize.Hooks{
				Refused: func(l string) {
					if l == normalize.LimitTextBytes {
						refused++
					}
				},
			}))
			revs, err := n.Feed("s", []byte(tcOpen("c1", "ls")), normalize.WithSequence(1), normalize.WithCwd("/work"))
			require.NoError(t, err)
			require.Len(t, revs, 1)
			require.Equal(t, "/work", revs[0].Cwd)

			revs, err = n.Feed("s", []byte(tcOpen("c2", "pwd")), normalize.WithSequence(2), normalize.WithCwd(c.cwd))
			var fe *normalize.FrameError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, normalize.InvalidArgument, fe.Code)
			assert.Equal(t, uint64(2), fe.Sequence)
			for _, want := range c.says {
				assert.Contains(t, fe.Message, want)
			}
			require.Len(t, revs, 1, "the frame applies without its cwd")
			assert.Equal(t, "c2", revs[0].ToolCallID)
			assert.Equal(t, "pwd", revs[0].Command)
			assert.Equal(t, "/work", revs[0].Cwd, "the session keeps the cwd it had")
			assert.Equal(t, c.refused, refused, "refusals of the text limit")
		})
	}
}

// A session cwd (session/new's) with a control character is no path: the
// session keeps the cwd it had, with a FrameError naming the problem.
func TestSessionCwdWithAControlCharacter(t *testing.T) {
	n := normalize.New()
	_, err := n.Feed("s", []byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`), normalize.WithSequence(1))
	require.NoError(t, err)
	_, err = n.Feed("s", []byte(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/x\u0000y","mcpServers":[]}}`), normalize.WithSequence(2))
	var fe *normalize.FrameError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, normalize.InvalidArgument, fe.Code)
	assert.Contains(t, fe.Message, "control character")
	assert.Contains(t, fe.Message, `"/x\x00y"`)
	revs, err := n.Feed("s", []byte(tcOpen("c1", "ls")), normalize.WithSequence(3))
	require.NoError(t, err)
	require.Len(t, revs, 1)
	assert.Equal(t, "/w", revs[0].Cwd, "the session keeps the cwd it had")
}

// A call's own cwd (the agent's rawInput.cwd) with a control character
// is left out as an over-long one is: a FrameError names the call and
// the character, and the rest of the update applies.
func TestCallCwdWithAControlCharacter(t *testing.T) {
	n := normalize.New()
	open := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","status":"in_progress","rawInput":{"command":"ls","cwd":"/w/a\u0000b"}}}}`
	revs, err := n.Feed("s", []byte(open), normalize.WithCwd("/w"))
	var fe *normalize.FrameError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, normalize.InvalidArgument, fe.Code)
	assert.Equal(t, "c1", fe.ToolCallID)
	assert.Contains(t, fe.Message, "control character (NUL)")
	require.Len(t, revs, 1)
	assert.Equal(t, "ls", revs[0].Command, "the rest of the update applies")
	assert.NotContains(t, revs[0].Cwd, "\x00")
}

// Qwen Code before 0.15.6 names a call that needs permission only in its
// ask's title, where the description cannot always be told from the
// command; its final report names the command as run, and that is the
// command (recorded on 0.10.1).
func TestOlderQwenReportNamesTheCommand(t *testing.T) {
	n := normalize.New()
	feed := func(msg string) {
		_, err := n.Feed("s", []byte(msg), normalize.WithCwd("/w"))
		require.NoError(t, err)
	}
	feed(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"qwen-code","title":"Qwen Code","version":"0.10.1"}}}`)
	feed(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"S","options":[],"toolCall":{"toolCallId":"q1","status":"pending","title":"f (x)","content":[],"locations":[],"kind":"execute"}}}`)
	revs, err := n.Feed("s", []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call_update","toolCallId":"q1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Command: f (x)\nDirectory: (root)\nOutput: ok\nError: (none)\nExit Code: 0\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: (none)"}}],"_meta":{"toolName":"run_shell_command"},"rawOutput":"ok"}}}`))
	require.NoError(t, err)
	require.NotEmpty(t, revs)
	last := revs[len(revs)-1]
	assert.Equal(t, "f (x)", last.Command)
	assert.Equal(t, normalize.StateEnded, last.State)
}
