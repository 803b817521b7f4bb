package service

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// nested is n arrays (or objects) opened inside each other and closed.
func nested(n int, object bool) string {
	open, close := "[", "]"
	if object {
		open, close = `{"a":`, "}"
	}
	return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
}

// answersTo sends msg on session sid and returns every answer to it
// (see answers).
func (st *stream) answersTo(sid, msg string) []*pb.NormalizeResponse {
	st.t.Helper()
	st.send(sid, msg)
	return st.answers()
}

// answers returns every answer to the request sent last: a stream
// answers its requests in order, so the answer to the next frame (a known
// good one, sent here) marks where they end. It waits for them up to a
// minute (a race-detector build reads a 10 MB frame in seconds); the
// probes bound the time they take themselves.
func (st *stream) answers() []*pb.NormalizeResponse {
	st.t.Helper()
	st.send("marker", openCall(fmt.Sprintf("m%d", st.seq), "true"))
	var out []*pb.NormalizeResponse
	for {
		var r *pb.NormalizeResponse
		select {
		case r = <-st.replies:
			require.NotNil(st.t, r, "the stream ended")
		case <-time.After(time.Minute):
			st.t.Fatal("no answer within a minute")
		}
		if x := r.GetShellExec(); x != nil && x.GetSessionId() == "marker" {
			return out
		}
		out = append(out, r)
	}
}

// turnEnded and sessionClosed are the control requests of session sid
// at sequence seq.
func turnEnded(sid string, seq uint64, cancelled bool) *pb.NormalizeRequest {
	return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{SessionId: sid, Sequence: seq, Cancelled: cancelled}}}
}

func sessionClosed(sid string, seq uint64) *pb.NormalizeRequest {
	return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid, Sequence: seq}}}
}

// frameTime bounds the time a probe's frame may take: far more than any
// takes (0.3 s at most for 10 MB frames, 3 s under the race detector), far
// less than reading one in time quadratic in its members would.
const frameTime = 20 * time.Second

// A frame whose JSON nests 100,000 arrays or objects deep, anywhere in the
// message, does not exhaust the stack: it is refused with an
// INVALID_ARGUMENT that says the depth is the problem. One nested 9,990
// deep (within encoding/json's bound) is refused or read without its deep
// part. Either way it is answered in bounded time, and the stream and the
// call it names go on.
func TestHostileDeeplyNestedFrames(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("s", openCall("c1", "ls"))
	require.EqualValues(t, 1, st.exec().GetRevision())
	rev := uint32(1)
	for _, depth := range []int{9_990, 100_000} {
		for _, object := range []bool{false, true} {
			deep := nested(depth, object)
			for _, c := range []struct{ name, msg string }{
				{"the whole message", deep},
				{"params", `{"jsonrpc":"2.0","method":"session/update","params":` + deep + `}`},
				{"an unknown member", `{"jsonrpc":"2.0","method":"session/update","x":` + deep + `,"params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1"}}}`},
				{"the update", update(deep)},
				{"rawInput", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","kind":"execute","rawInput":` + deep + `}`)},
				{"rawOutput", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","rawOutput":` + deep + `}`)},
				{"_meta", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":` + deep + `}`)},
				{"a terminal_output", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_output":{"terminal_id":"c1","data":` + deep + `}}}`)},
				{"content", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":` + deep + `}`)},
				{"a content item", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"content","content":` + deep + `}]}`)},
				{"a result", `{"jsonrpc":"2.0","id":1,"result":` + deep + `}`},
				{"an error", `{"jsonrpc":"2.0","id":1,"error":` + deep + `}`},
				{"a request's params", `{"jsonrpc":"2.0","id":2,"method":"terminal/create","params":` + deep + `}`},
			} {
				name := fmt.Sprintf("%s (depth %d, objects %v)", c.name, depth, object)
				start := time.Now()
				out := st.answersTo("s", c.msg)
				took := time.Since(start)
				assert.Less(t, took, frameTime, "%s: took %v", name, took)
				if depth > 10_000 { // deeper than encoding/json reads: refused, saying why
					require.Len(t, out, 1, "%s: %v", name, out)
					assert.Contains(t, out[0].GetFrameError().GetMessage(), "depth", name)
				}
				for _, r := range out {
					if fe := r.GetFrameError(); fe != nil {
						assert.EqualValues(t, codes.InvalidArgument, fe.GetCode(), "%s: %v", name, fe)
						assert.Less(t, len(fe.GetMessage()), 1024, "%s: a message of %d bytes", name, len(fe.GetMessage()))
						t.Logf("%s: %s", name, fe.GetMessage())
					} else if x := r.GetShellExec(); x != nil {
						require.Equal(t, "c1", x.GetToolCallId(), name)
						rev++
						require.Equal(t, rev, x.GetRevision(), name)
						t.Logf("%s: revision %d", name, x.GetRevision())
					}
				}
			}
		}
	}
	st.send("s", delta("c1", "still here"))
	x := st.exec()
	assert.Equal(t, rev+1, x.GetRevision())
	assert.Equal(t, "ls", x.GetCommand())
}

// A frame of a million tiny members, or a member that is an array of a
// million elements, anywhere in the message, is answered within a few
// seconds and without holding memory for it; the stream goes on.
func TestHostileWideFrames(t *testing.T) {
	const n = 1_000_000
	members := strings.Repeat(`"a":1,`, n) + `"b":1`
	array := "[" + strings.Repeat("1,", n) + "1]"
	objects := "[" + strings.Repeat("{},", n) + "{}]"
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("s", openCall("c1", "ls"))
	require.EqualValues(t, 1, st.exec().GetRevision())
	rev := uint32(1)
	before := heapInUse()
	for _, c := range []struct{ name, msg string }{
		{"top-level members", `{"jsonrpc":"2.0","method":"session/update",` + members + `,"params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1"}}}`},
		{"params members", `{"jsonrpc":"2.0","method":"session/update","params":{` + members + `,"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1"}}}`},
		{"update members", update(`{` + members + `,"sessionUpdate":"tool_call_update","toolCallId":"c1"}`)},
		{"rawInput members", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","rawInput":{` + members + `}}`)},
		{"_meta members", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{` + members + `}}`)},
		{"terminal_output members", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_output":{` + members + `,"terminal_id":"c1","data":"x"}}}`)},
		{"content array", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":` + array + `}`)},
		{"content of empty objects", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":` + objects + `}`)},
		{"rawOutput array", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","rawOutput":` + array + `}`)},
		{"rawOutput output array", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","rawOutput":{"output":` + array + `}}`)},
		{"rawInput command array", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","rawInput":{"command":` + array + `}}`)},
		{"locations", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","locations":` + objects + `}`)},
		{"permission options", `{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c1"},"options":` + objects + `}}`},
		{"a result", `{"jsonrpc":"2.0","id":1,"result":` + array + `}`},
		{"the whole message", array},
	} {
		start := time.Now()
		out := st.answersTo("s", c.msg)
		took := time.Since(start)
		assert.Less(t, took, frameTime, "%s: took %v", c.name, took)
		for _, r := range out {
			if fe := r.GetFrameError(); fe != nil {
				assert.Less(t, len(fe.GetMessage()), 1024, "%s: a message of %d bytes", c.name, len(fe.GetMessage()))
				t.Logf("%s: %v %s (%v)", c.name, codes.Code(fe.GetCode()), fe.GetMessage(), took)
			} else if x := r.GetShellExec(); x != nil {
				require.Equal(t, "c1", x.GetToolCallId(), c.name)
				rev++
				require.Equal(t, rev, x.GetRevision(), c.name)
				t.Logf("%s: revision %d (%v)", c.name, x.GetRevision(), took)
			}
		}
	}
	grown := int64(heapInUse()) - int64(before)
	assert.Less(t, grown, int64(16<<20), "held %d MiB after the wide frames", grown>>20)
	st.send("s", delta("c1", "still here"))
	x := st.exec()
	assert.Equal(t, rev+1, x.GetRevision())
	assert.Equal(t, "ls", x.GetCommand())
}

// Every text a request carries, at 1 MiB, is bounded and said: the answer
// is a FrameError that names the field and does not echo the text, or a
// revision whose texts are within the limits (a cut one marked); the
// stream and the call go on.
func TestHostileMegabyteFields(t *testing.T) {
	const mib = 1 << 20
	big := strings.Repeat("x", mib)
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("s", openCall("c1", "ls"))
	require.EqualValues(t, 1, st.exec().GetRevision())
	rev := uint32(1)
	frame := func(f *pb.AcpFrame) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: f}}
	}
	q := fmt.Sprintf("%q", big)
	for _, c := range []struct {
		name string
		req  *pb.NormalizeRequest
	}{
		{"session_id", frameReq(big, 0, delta("c1", "a"))},
		{"dialect", frame(&pb.AcpFrame{SessionId: "s", Dialect: big, Message: []byte(delta("c1", "a"))})},
		{"cwd", frame(&pb.AcpFrame{SessionId: "s", Cwd: "/" + big, Message: []byte(delta("c1", "a"))})},
		{"turn_ended.session_id", turnEnded(big, 0, false)},
		{"session_closed.session_id", sessionClosed(big, 0)},
		{"toolCallId", frameReq("s", 0, delta(big, "a"))},
		{"method", frameReq("s", 0, `{"jsonrpc":"2.0","method":`+q+`,"params":{}}`)},
		{"JSON-RPC id", frameReq("s", 0, `{"jsonrpc":"2.0","id":`+q+`,"result":{}}`)},
		{"sessionUpdate", frameReq("s", 0, update(`{"sessionUpdate":`+q+`,"toolCallId":"c1"}`))},
		{"kind", frameReq("s", 0, update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","kind":`+q+`}`))},
		{"status", frameReq("s", 0, update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":`+q+`}`))},
		{"title", frameReq("s", 0, update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":`+q+`}`))},
		{"command", frameReq("s", 0, update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","rawInput":{"command":`+q+`}}`))},
		{"rawInput cwd", frameReq("s", 0, update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","rawInput":{"cwd":"/`+big+`"}}`))},
		{"description", frameReq("s", 0, update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","rawInput":{"description":`+q+`}}`))},
		{"terminal_id", frameReq("s", 0, update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_output":{"terminal_id":`+q+`,"data":"a"}}}`))},
		{"terminal_exit signal", frameReq("s", 0, update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_exit":{"terminal_id":"c1","exit_code":null,"signal":`+q+`}}}`))},
		{"exit_code", frameReq("s", 0, update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_exit":{"terminal_id":"c1","exit_code":1`+strings.Repeat("0", mib)+`}}}`))},
		{"ask reason", frameReq("s", 0, `{"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c1","title":`+q+`},"options":[{"optionId":`+q+`,"name":`+q+`,"kind":"reject_once"}]}}`)},
		{"agent name and version", frameReq("s", 0, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":`+q+`,"version":`+q+`}}}`)},
		{"session/new cwd", frameReq("s", 0, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/`+big+`","mcpServers":[]}}`)},
		{"terminal/create", frameReq("s", 0, `{"jsonrpc":"2.0","id":3,"method":"terminal/create","params":{"sessionId":"s","command":`+q+`,"args":[`+q+`],"cwd":"/`+big+`"}}`)},
	} {
		require.NoError(t, st.s.Send(c.req), c.name)
		for _, r := range st.answers() {
			x := r.GetShellExec()
			if fe := r.GetFrameError(); fe != nil {
				assert.Less(t, len(fe.GetMessage()), 2048, "%s: an error of %d bytes: %.200s", c.name, len(fe.GetMessage()), fe.GetMessage())
				assert.LessOrEqual(t, len(fe.GetSessionId()), 256, c.name)
				assert.LessOrEqual(t, len(fe.GetToolCallId()), 256, c.name)
				t.Logf("%s: %v %.300s", c.name, codes.Code(fe.GetCode()), fe.GetMessage())
				continue
			}
			require.Equal(t, "c1", x.GetToolCallId(), c.name)
			rev++
			require.Equal(t, rev, x.GetRevision(), c.name)
			for field, v := range map[string]string{"command": x.GetCommand(), "cwd": x.GetCwd(), "description": x.GetDescription(), "signal": x.GetSignal(),
				"approval_reason": x.GetApprovalReason(), "outcome_reason": x.GetOutcomeReason(), "terminal_id": x.GetTerminalId(), "agent_version": x.GetAgentVersion(), "dialect": x.GetDialect()} {
				assert.LessOrEqual(t, len(v), DefaultConfig().TextLimit, "%s: revision %d carries a %s of %d bytes", c.name, x.GetRevision(), field, len(v))
			}
			t.Logf("%s: revision %d, %d bytes", c.name, x.GetRevision(), len(r.String()))
		}
	}
	st.send("s", delta("c1", "still here"))
	x := st.exec()
	assert.Equal(t, rev+1, x.GetRevision())
	assert.Equal(t, "ls", x.GetCommand())
	assert.Contains(t, x.GetOutput().GetText(), "still here")
}

// Bytes that are not UTF-8 inside the JSON message (which protobuf
// carries as bytes), in each string an answer may echo, and in the one
// request field no other test sends them in (turn_ended.session_id),
// reach the client as valid protobuf: every answer decodes (the client's
// protobuf refuses a string that is not UTF-8), a text keeps its bytes as
// U+FFFD, and the stream goes on.
func TestHostileInvalidUTF8InTheMessage(t *testing.T) {
	const bad = "b\xff\xfe\xc3d"
	st, _, _ := rawStream(t, DefaultServerOptions())
	var seq uint64
	send := func(sid, msg string) {
		seq++
		b, err := proto.Marshal(frameReq(sid, seq, msg))
		require.NoError(t, err)
		require.NoError(t, st.SendMsg(b))
	}
	send("s", openCall("c1", "ls"))
	var r pb.NormalizeResponse
	require.NoError(t, st.RecvMsg(&r))
	require.EqualValues(t, 1, r.GetShellExec().GetRevision())
	q := `"` + bad + `"`
	for _, c := range []struct{ name, msg string }{
		{"toolCallId", update(`{"sessionUpdate":"tool_call","toolCallId":` + q + `,"kind":"execute","status":"in_progress","rawInput":{"command":"ls"}}`)},
		{"command", update(`{"sessionUpdate":"tool_call","toolCallId":"c2","kind":"execute","status":"in_progress","rawInput":{"command":` + q + `}}`)},
		{"title", update(`{"sessionUpdate":"tool_call","toolCallId":"c3","kind":"execute","status":"in_progress","title":` + q + `}`)},
		{"cwd", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","rawInput":{"command":"ls","cwd":"/` + bad + `"}}`)},
		{"description", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","rawInput":{"command":"ls","description":` + q + `}}`)},
		{"output", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_output":{"terminal_id":"c1","data":` + q + `}}}`)},
		{"terminal_id", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_output":{"terminal_id":` + q + `,"data":"y"}}}`)},
		{"content text", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"content","content":{"type":"text","text":` + q + `}}]}`)},
		{"ask", `{"jsonrpc":"2.0","id":` + q + `,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c1","title":` + q + `},"options":[{"optionId":` + q + `,"name":"No","kind":"reject_once"}]}}`},
		{"agent version", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":` + q + `,"version":` + q + `}}}`},
		{"status", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":` + q + `}`)},
		{"signal", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","_meta":{"terminal_exit":{"terminal_id":"c1","exit_code":null,"signal":` + q + `}}}`)},
	} {
		send("s", c.msg)
		send("marker", openCall(fmt.Sprintf("m%d", seq), "true"))
		for {
			r.Reset()
			require.NoError(t, st.RecvMsg(&r), "%s: the answer does not decode", c.name)
			if x := r.GetShellExec(); x != nil && x.GetSessionId() == "marker" {
				break
			}
			t.Logf("%s: %v", c.name, &r)
		}
	}
	// Against the session id of a TurnEnded.
	tb := withBytes(t, turnEnded("sPPq", 99, false), "sPPq", "s\xff\xfeq")
	require.NoError(t, st.SendMsg(tb))
	r.Reset()
	require.NoError(t, st.RecvMsg(&r))
	fe := r.GetFrameError()
	require.NotNil(t, fe, "%v", &r)
	assert.EqualValues(t, codes.InvalidArgument, fe.GetCode())
	assert.EqualValues(t, 99, fe.GetSequence())
	assert.Contains(t, fe.GetMessage(), "turn_ended.session_id is not valid UTF-8")
}

// revisionChecker holds what every answer of a stream must: per call,
// revisions 1, 2, 3 with no gap or restart; once ENDED, every later
// revision is ENDED with the same known outcome (only UNKNOWN may still be
// resolved) and the same known exit code (an unknown one may be filled in).
type revisionChecker struct {
	t    *testing.T
	last map[[2]string]*pb.ShellExec
}

func (c *revisionChecker) check(name string, x *pb.ShellExec) {
	c.t.Helper()
	if c.last == nil {
		c.last = map[[2]string]*pb.ShellExec{}
	}
	k := [2]string{x.GetSessionId(), x.GetToolCallId()}
	prev := c.last[k]
	c.last[k] = x
	if prev == nil {
		assert.EqualValues(c.t, 1, x.GetRevision(), "%s: first revision of %v", name, k)
		return
	}
	assert.Equal(c.t, prev.GetRevision()+1, x.GetRevision(), "%s: revision of %v after %d", name, k, prev.GetRevision())
	if prev.GetState() == pb.ShellState_SHELL_STATE_ENDED {
		assert.Equal(c.t, pb.ShellState_SHELL_STATE_ENDED, x.GetState(), "%s: %v left ENDED: %v", name, k, x)
		if prev.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_UNKNOWN {
			assert.Equal(c.t, prev.GetOutcome(), x.GetOutcome(), "%s: %v changed its outcome: %v", name, k, x)
			if prev.ExitCode != nil { // an unknown one may still be filled in
				assert.Equal(c.t, prev.ExitCode, x.ExitCode, "%s: %v changed its exit code: %v", name, k, x)
			}
		}
	}
}

// A client that ends and closes things twice, and feeds what it closed:
// a turn ended twice (and then as cancelled), an ended call fed again
// (output, a new exit, a status that would reopen it), a session closed
// twice and then fed frames about its calls, turns and closes. ENDED
// stays final, revisions never restart, each refusal names the problem,
// and another session on the stream goes on.
func TestHostileEndsAndClosesTwice(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	rc := revisionChecker{t: t}
	frame := func(msg string) *pb.NormalizeRequest { return frameReq("s", 0, msg) }
	inProgress := update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress"}`)
	var errs []string
	step := func(name string, req *pb.NormalizeRequest) []*pb.NormalizeResponse {
		t.Helper()
		require.NoError(t, st.s.Send(req))
		// A frame of the same session that is no JSON marks the end of
		// the answers (those of one session come in the order sent).
		mark := st.send("s", "marker")
		var out []*pb.NormalizeResponse
		for {
			r := st.next()
			if x := r.GetShellExec(); x != nil {
				rc.check(name, x)
			}
			if fe := r.GetFrameError(); fe != nil && fe.GetSequence() == mark {
				return out
			}
			if fe := r.GetFrameError(); fe != nil {
				errs = append(errs, name+": "+fe.GetMessage())
				assert.Less(t, len(fe.GetMessage()), 1024, name)
			}
			out = append(out, r)
		}
	}
	step("open", frame(openCall("c1", "sleep 9")))
	step("open c2", frame(openCall("c2", "true")))
	step("end c2", frame(finish("c2", 0)))
	out := step("turn ended", turnEnded("s", 0, false))
	require.Len(t, out, 1)
	assert.Equal(t, pb.ShellOutcome_SHELL_OUTCOME_UNKNOWN, out[0].GetShellExec().GetOutcome())
	assert.Empty(t, step("turn ended again", turnEnded("s", 0, false)), "a second TurnEnded ends nothing")
	for _, r := range step("turn ended as cancelled", turnEnded("s", 0, true)) {
		t.Logf("turn ended as cancelled after it ended: %v", r)
	}
	step("reopen c1", frame(inProgress))
	step("exit of c1", frame(finish("c1", 4)))
	step("reopen c2", frame(update(`{"sessionUpdate":"tool_call_update","toolCallId":"c2","status":"in_progress"}`)))
	step("exit of c2", frame(finish("c2", 1)))
	step("late output of c2", frame(delta("c2", "late")))
	step("open c2 again", frame(openCall("c2", "rm -rf /")))
	step("close", sessionClosed("s", 0))
	assert.Empty(t, step("close again", sessionClosed("s", 0)), "a second SessionClosed ends nothing")
	for name, msg := range map[string]string{"output after close": delta("c1", "late"), "exit after close": finish("c2", 9), "reopen after close": openCall("c1", "ls")} {
		out := step(name, frame(msg))
		require.Len(t, out, 1, "%s: %v", name, out)
		fe := out[0].GetFrameError()
		require.NotNil(t, fe, "%s: %v", name, out)
		assert.EqualValues(t, codes.FailedPrecondition, fe.GetCode(), name)
	}
	assert.Empty(t, step("turn after close", turnEnded("s", 0, true)))
	assert.Empty(t, step("close after close", sessionClosed("s", 0)))
	// The session id is free for new calls.
	out = step("new call after close", frame(openCall("c3", "ls")))
	require.Len(t, out, 1)
	assert.EqualValues(t, 1, out[0].GetShellExec().GetRevision())
	for _, e := range errs {
		t.Log(e)
	}
}

// With skip_applied_sequences, a TurnEnded or SessionClosed numbered
// badly (repeating, going back, the largest uint64) is skipped as the
// frames are, naming the sequences, and ends nothing; one numbered 0 or
// above applies; revisions keep going 1, 2, 3.
func TestHostileControlSequences(t *testing.T) {
	st := newHarness(t, DefaultConfig()).open()
	rc := revisionChecker{t: t}
	st.control(skipApplied())
	skipped := func(name string, req *pb.NormalizeRequest, applied uint64) {
		t.Helper()
		st.control(req)
		fe := st.frameError()
		assert.EqualValues(t, codes.AlreadyExists, fe.GetCode(), "%s: %v", name, fe)
		assert.Contains(t, fe.GetMessage(), fmt.Sprintf("applied sequences up to %d", applied), name)
	}
	exec := func(name string, req *pb.NormalizeRequest) *pb.ShellExec {
		t.Helper()
		st.control(req)
		x := st.exec()
		rc.check(name, x)
		return x
	}
	exec("open", frameReq("s", 10, openCall("c1", "sleep 9")))
	skipped("turn ended, sequence repeated", turnEnded("s", 10, false), 10)
	skipped("turn ended, sequence back", turnEnded("s", 9, false), 10)
	skipped("session closed, sequence back", sessionClosed("s", 1), 10)
	x := exec("output", frameReq("s", 12, delta("c1", "a")))
	assert.Equal(t, pb.ShellState_SHELL_STATE_RUNNING, x.GetState(), "a skipped TurnEnded or SessionClosed ended the call")
	x = exec("turn ended at 0", turnEnded("s", 0, false))
	assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, x.GetState())
	exec("open c2", frameReq("s", 13, openCall("c2", "sleep 9")))
	x = exec("turn ended at the largest", turnEnded("s", math.MaxUint64, false))
	assert.Equal(t, "c2", x.GetToolCallId())
	skipped("after the largest", frameReq("s", 14, openCall("c3", "ls")), math.MaxUint64)
	skipped("close after the largest", sessionClosed("s", 15), math.MaxUint64)
	// Sequence 0 is never skipped: the session can still be closed.
	st.control(sessionClosed("s", 0))
	st.control(frameReq("s", 0, delta("c1", "late")))
	fe := st.frameError()
	assert.EqualValues(t, codes.FailedPrecondition, fe.GetCode(), "%v", fe)
}

// Two streams of one identity feed the same call at once. Each frame's
// revision goes to the stream that sent it: together they are 2, 3, ...
// each once; a stream that missed some (they went to the other) gets the
// next one whole (REPLACE), so what each stream folds is the call's text
// so far; the ENDED revision holds every delta once.
func TestHostileTwoStreamsFeedOneCall(t *testing.T) {
	const n = 400
	h := newHarness(t, DefaultConfig())
	a, b := h.open(), h.open()
	a.send("s", openCall("c1", "cat"))
	require.EqualValues(t, 1, a.exec().GetRevision())
	streams := []*stream{a, b}
	sent := make(chan error, len(streams))
	for i, st := range streams {
		go func() {
			for j := range n {
				if err := st.s.Send(frameReq("s", uint64(j+2), delta("c1", fmt.Sprintf("<%d.%d>", i, j)))); err != nil {
					sent <- err
					return
				}
			}
			sent <- nil
		}()
	}
	for range streams {
		require.NoError(t, <-sent)
	}
	seen := map[uint32]int{}
	texts := make([]string, len(streams))
	lasts := []uint32{1, 0}
	for i, st := range streams {
		for range n {
			x := st.exec()
			seen[x.GetRevision()]++
			o := x.GetOutput()
			if x.GetRevision() != lasts[i]+1 {
				require.Equal(t, pb.TextMode_TEXT_MODE_REPLACE, o.GetMode(), "stream %d: revision %d after %d", i, x.GetRevision(), lasts[i])
				texts[i] = o.GetText()
			} else {
				require.Equal(t, pb.TextMode_TEXT_MODE_APPEND, o.GetMode(), "stream %d: revision %d after %d", i, x.GetRevision(), lasts[i])
				texts[i] += o.GetText()
			}
			require.Greater(t, x.GetRevision(), lasts[i], "stream %d", i)
			lasts[i] = x.GetRevision()
		}
	}
	for r := uint32(2); r <= 2*n+1; r++ {
		require.Equal(t, 1, seen[r], "revision %d", r)
	}
	a.send("s", finish("c1", 0))
	x := a.exec()
	require.EqualValues(t, 2*n+2, x.GetRevision())
	full := x.GetOutput().GetText()
	for i := range streams {
		for j := range n {
			require.Equal(t, 1, strings.Count(full, fmt.Sprintf("<%d.%d>", i, j)), "delta %d.%d", i, j)
		}
		assert.True(t, strings.HasPrefix(full, texts[i]), "stream %d folded a text that is not the call's", i)
	}
}

// A client names another dialect on every frame of a session (each of
// this build's, in turn): revisions still go 1, 2, 3 and ENDED stays
// final, whatever each dialect makes of the frames.
func TestHostileDialectChangedEveryFrame(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	ds, err := h.client.ListDialects(context.Background(), &pb.ListDialectsRequest{})
	require.NoError(t, err)
	var names []string
	for _, d := range ds.GetDialects() {
		names = append(names, d.GetName())
	}
	require.Greater(t, len(names), 2)
	st := h.open()
	rc := revisionChecker{t: t}
	msgs := []string{
		openCall("c1", "ls"), delta("c1", "a"), finish("c1", 3), delta("c1", "b"),
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress"}`),
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"exit_code":0,"output":"x"}}`),
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed"}`),
		update(`{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"rm","status":"pending","rawInput":{"command":"rm"}}`),
		finish("c1", 0),
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Exit code: 0"}}]}`),
	}
	var seq uint64
	// Session j starts with dialect j, and takes the next one on each frame.
	for i, m := range msgs {
		for j := range names {
			seq++
			require.NoError(t, st.s.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
				SessionId: fmt.Sprintf("s%d", j), Dialect: names[(i+j)%len(names)], Sequence: seq, Message: []byte(m)}}}))
		}
	}
	require.NoError(t, st.s.CloseSend())
	var ended int
	for r := range st.replies {
		if x := r.GetShellExec(); x != nil {
			rc.check(x.GetDialect(), x)
		}
	}
	for _, x := range rc.last {
		if x.GetState() == pb.ShellState_SHELL_STATE_ENDED {
			ended++
		}
	}
	assert.Equal(t, len(names), len(rc.last), "every session made its call")
	assert.Equal(t, len(names), ended, "every call ended")
}

// GetClientCapabilities with a dialect name of 1 MiB, over loopback TCP:
// INVALID_ARGUMENT naming the problem, quoting at most the start of the
// name, as a frame's unknown dialect is (it echoed all of it: a status
// message of 1 MiB), and the server goes on.
func TestHostileUnaryDialectName(t *testing.T) {
	addr, _ := serveTCP(t, DefaultServerOptions())
	client := pb.NewNormalizerServiceClient(connect(t, addr, insecure.NewCredentials()))
	for _, name := range []string{strings.Repeat("x", 1<<20), "nope\x00\n\x1b[31m" + strings.Repeat("é", 100)} {
		_, err := client.GetClientCapabilities(callCtx(t), &pb.GetClientCapabilitiesRequest{Dialect: name})
		require.Error(t, err)
		st := status.Convert(err)
		assert.Equal(t, codes.InvalidArgument, st.Code(), "%.200s", st.Message())
		assert.Contains(t, st.Message(), "unknown dialect")
		assert.Contains(t, st.Message(), fmt.Sprintf("(%d bytes)", len(name)), "the message says how long the name was")
		assert.Less(t, len(st.Message()), 512, "a status message of %d bytes: %.200s", len(st.Message()), st.Message())
		assert.True(t, utf8.ValidString(st.Message()))
	}
	c, err := client.GetClientCapabilities(callCtx(t), &pb.GetClientCapabilitiesRequest{Dialect: "generic"})
	require.NoError(t, err)
	assert.Equal(t, "generic", c.GetDialect())
}
