package service

import (
	"fmt"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

// Frames that do not validate, and control messages about sessions never
// seen, leave no session behind.
func TestRejectedFramesCreateNoSession(t *testing.T) {
	d := newDirect(t, DefaultConfig())
	for i := range 100 {
		fe := d.frameError(fmt.Sprintf("bad-%d", i), "not json")
		if codes.Code(fe.GetCode()) != codes.InvalidArgument {
			t.Fatalf("bad frame: %v", fe)
		}
	}
	d.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{SessionId: "never-seen"}}})
	d.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "never-seen-2"}}})
	if n := d.ss.n.Stats().Sessions; n != 0 {
		t.Fatalf("%d sessions held after only rejected frames, want 0", n)
	}
	// A valid frame of a session does create it.
	d.exec("good", openCall("c1", "true"))
	if n := d.ss.n.Stats().Sessions; n != 1 {
		t.Fatalf("%d sessions held, want 1", n)
	}
}

// Ids are bounded: an over-long session id or tool call id is refused
// with a FrameError naming the field and the limit, and nothing is held.
func TestIDLengthLimits(t *testing.T) {
	d := newDirect(t, DefaultConfig())
	long := strings.Repeat("i", 257)
	fe := d.frameError(long, openCall("c1", "true"))
	if codes.Code(fe.GetCode()) != codes.InvalidArgument || !strings.Contains(fe.GetMessage(), "session_id") || !strings.Contains(fe.GetMessage(), "256") || fe.GetSessionId() != "" {
		t.Fatalf("long session id: %v", fe)
	}
	fe = d.frameError("s", openCall(long, "true"))
	if codes.Code(fe.GetCode()) != codes.InvalidArgument || !strings.Contains(fe.GetMessage(), "toolCallId") || !strings.Contains(fe.GetMessage(), "256") || fe.GetToolCallId() != "" {
		t.Fatalf("long tool call id: %v", fe)
	}
	if n := int64(d.ss.n.Stats().Calls); n != 0 {
		t.Fatalf("%d calls held after refused ids", n)
	}
	// 256 bytes is fine.
	if x := d.exec(long[:256], openCall(long[:256], "true")); x.GetToolCallId() != long[:256] {
		t.Fatalf("256-byte ids: %v", x)
	}
}

// Commands and cwds (a call's, and the frame's own) are bounded by the
// text limit: an over-long one is left out with a FrameError naming the
// field, and the rest of the frame (its output) still applies.
func TestCommandAndCwdLimits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TextLimit = 64
	d := newDirect(t, cfg)
	long := strings.Repeat("x", 65)
	out := d.frame("s", openCall("c1", long))
	if len(out) != 2 || out[0].GetFrameError() == nil || out[1].GetShellExec() == nil {
		t.Fatalf("long command: want a FrameError then the revision, got %v", out)
	}
	fe := out[0].GetFrameError()
	if codes.Code(fe.GetCode()) != codes.InvalidArgument || !strings.Contains(fe.GetMessage(), "command") || !strings.Contains(fe.GetMessage(), "64") || fe.GetToolCallId() != "c1" {
		t.Fatalf("long command: %v", fe)
	}
	if x := out[1].GetShellExec(); x.GetCommand() != "" || x.GetRevision() != 1 {
		t.Fatalf("long command kept: %v", x)
	}
	if x := d.exec("s", delta("c1", "output survives")); x.GetOutput().GetText() != "output survives" {
		t.Fatalf("after the long command: %v", x)
	}
	out = d.frame("s", update(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":"c2","kind":"execute","title":"ls","status":"in_progress","rawInput":{"command":"ls","cwd":"/%s"}}`, long)))
	if len(out) != 2 || !strings.Contains(out[0].GetFrameError().GetMessage(), "cwd") || out[1].GetShellExec().GetCwd() == "/"+long {
		t.Fatalf("long cwd: %v", out)
	}
	d.seq++
	out = d.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Cwd: "/" + long, Message: []byte(openCall("c3", "ls"))}}})
	// The frame's own cwd too: the frame applies without it.
	if len(out) != 2 || codes.Code(out[0].GetFrameError().GetCode()) != codes.InvalidArgument || !strings.Contains(out[0].GetFrameError().GetMessage(), "cwd") || !strings.Contains(out[0].GetFrameError().GetMessage(), "64") {
		t.Fatalf("long AcpFrame.cwd: want a FrameError then the revision, got %v", out)
	}
	if x := out[1].GetShellExec(); x.GetToolCallId() != "c3" || x.GetCommand() != "ls" || x.GetRevision() != 1 || x.GetCwd() == "/"+long {
		t.Fatalf("long AcpFrame.cwd: %v", x)
	}
}

// --max-sessions bounds the sessions held; closing one makes room.
func TestMaxSessions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxSessions = 2
	d := newDirect(t, cfg)
	d.exec("s1", openCall("c1", "true"))
	d.exec("s2", openCall("c1", "true"))
	fe := d.frameError("s3", openCall("c1", "true"))
	if codes.Code(fe.GetCode()) != codes.ResourceExhausted || !strings.Contains(fe.GetMessage(), "2 sessions") || !strings.Contains(fe.GetMessage(), "--max-sessions") {
		t.Fatalf("over max sessions: %v", fe)
	}
	// Sessions already held go on.
	if x := d.exec("s1", finish("c1", 0)); x.GetRevision() != 2 {
		t.Fatalf("held session after the limit: %v", x)
	}
	d.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s2"}}})
	if x := d.exec("s3", openCall("c1", "true")); x.GetSessionId() != "s3" {
		t.Fatalf("after a close: %v", x)
	}
	if got := testutil.ToFloat64(d.ss.m.refusals.WithLabelValues(normalize.LimitSessions, DefaultIdentity)); got != 1 {
		t.Fatalf("refusals counted: %v", got)
	}
}

// A session tracks a bounded number of terminal ids.
func TestTerminalIDsBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxCallsPerSession = 1
	cfg.MaxCalls = 1
	d := newDirect(t, cfg)
	d.exec("s", openCall("c1", "true"))
	var refused int
	for i := range 6 {
		for _, r := range d.frame("s", update(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"terminal","terminalId":"t%d"}]}`, i))) {
			if codes.Code(r.GetFrameError().GetCode()) == codes.ResourceExhausted {
				refused++
			}
		}
	}
	if n := d.ss.session("s").Terminals; n != 4 || refused != 2 {
		t.Fatalf("%d terminals tracked and %d refused, want 4 and 2", n, refused)
	}
}

// The text all calls hold never passes --memory-budget. An update that
// could take more is not held: a FrameError says so, the field says
// truncated, and the call's life goes on to its real outcome.
func TestMemoryBudget(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TextLimit = 1024
	cfg.MemoryBudget = 8192
	cfg.SessionMemory = 8192
	d := newDirect(t, cfg)
	chunk := strings.Repeat("o", 1000)
	var refusedAt int
	for i := 0; i < 20 && refusedAt == 0; i++ {
		id := fmt.Sprintf("c%d", i)
		d.exec("s", openCall(id, "cat"))
		out := d.frame("s", delta(id, chunk))
		if held := d.ss.n.Stats().HeldBytes; held > int64(cfg.MemoryBudget) {
			t.Fatalf("call %d: %d bytes held, over the %d budget", i, held, cfg.MemoryBudget)
		}
		if fe := out[0].GetFrameError(); fe != nil {
			refusedAt = i
			if codes.Code(fe.GetCode()) != codes.ResourceExhausted || !strings.Contains(fe.GetMessage(), "--memory-budget") || fe.GetToolCallId() != id {
				t.Fatalf("refusal: %v", fe)
			}
			if len(out) != 2 || !out[1].GetShellExec().GetOutput().GetTruncated() || out[1].GetShellExec().GetOutput().GetText() != "" {
				t.Fatalf("after the refusal, want the revision saying truncated: %v", out)
			}
			// The call still ends with its real outcome.
			if x := d.exec("s", finish(id, 3)); x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_FAILED || x.GetExitCode() != 3 {
				t.Fatalf("refused call's end: %v", x)
			}
		}
	}
	if refusedAt == 0 {
		t.Fatal("20 calls of 1000 bytes fit in an 8192-byte budget")
	}
	if got := testutil.ToFloat64(d.ss.m.refusals.WithLabelValues(normalize.LimitMemory, DefaultIdentity)); got != 1 {
		t.Fatalf("memory refusals counted: %v", got)
	}
	// Calls already holding text go on: appending to a full buffer takes
	// no more memory... and a closed session gives everything back.
	d.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s"}}})
	if held := d.ss.n.Stats().HeldBytes; held != 0 {
		t.Fatalf("%d bytes still held after close", held)
	}
	if x := d.exec("s2", openCall("n", "cat")); x.GetRevision() != 1 {
		t.Fatal(x)
	}
	if x := d.exec("s2", delta("n", chunk)); x.GetOutput().GetText() != chunk {
		t.Fatalf("after close the budget is free again: %v", x)
	}
}

// An output refused for memory still counts in the stream's total_bytes:
// the text seen, before bounding, is what total_bytes says, and the field
// says truncated.
func TestRefusedOutputCountsInTotalBytes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TextLimit = 64 << 10
	cfg.MemoryBudget = 32 << 10
	cfg.SessionMemory = 32 << 10
	d := newDirect(t, cfg)
	d.exec("s", openCall("c1", "cat"))
	d.exec("s", delta("c1", strings.Repeat("a", 100)))
	out := d.frame("s", delta("c1", strings.Repeat("b", 60<<10)))
	require.NotNil(t, out[0].GetFrameError(), "the big delta is refused: %v", out)
	d.exec("s", delta("c1", strings.Repeat("c", 100)))
	x := d.exec("s", finish("c1", 0))
	require.Equal(t, pb.ShellState_SHELL_STATE_ENDED, x.GetState())
	assert.True(t, x.GetOutput().GetTruncated())
	assert.Equal(t, int64(100+60<<10+100), x.GetOutput().GetTotalBytes())
}

// One session cannot take everyone's budget: past its share its updates
// are not held, while another session's still are.
func TestSessionMemoryShare(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TextLimit = 1024
	cfg.MemoryBudget = 64 << 10
	cfg.SessionMemory = 4096
	d := newDirect(t, cfg)
	chunk := strings.Repeat("o", 1000)
	refused := false
	for i := 0; i < 10 && !refused; i++ {
		id := fmt.Sprintf("c%d", i)
		d.exec("greedy", openCall(id, "cat"))
		if fe := d.frame("greedy", delta(id, chunk))[0].GetFrameError(); fe != nil {
			refused = true
			if !strings.Contains(fe.GetMessage(), "--session-memory") {
				t.Fatalf("refusal: %v", fe)
			}
		}
	}
	if !refused || d.ss.session("greedy").HeldBytes > cfg.SessionMemory {
		t.Fatalf("greedy session holds %d bytes, share %d", d.ss.session("greedy").HeldBytes, cfg.SessionMemory)
	}
	d.exec("other", openCall("c1", "cat"))
	if x := d.exec("other", delta("c1", chunk)); x.GetOutput().GetText() != chunk {
		t.Fatalf("another session lost its output: %v", x)
	}
}

// What a call holds is given back when it is released, whatever the way.
func TestHeldBytesReleased(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TTL = time.Minute
	cfg.Grace = time.Second
	d := newDirect(t, cfg)
	d.exec("a", openCall("c1", "cat"))
	d.exec("a", delta("c1", strings.Repeat("x", 5000)))
	d.exec("a", finish("c1", 0))
	d.exec("b", openCall("c1", "cat"))
	d.exec("b", delta("c1", strings.Repeat("y", 5000)))
	if d.ss.n.Stats().HeldBytes < 10000 {
		t.Fatalf("held %d, want at least the 10000 bytes of output", d.ss.n.Stats().HeldBytes)
	}
	d.advance(2 * time.Second) // a's call past its grace
	if a, b := d.ss.session("a").HeldBytes, d.ss.session("b").HeldBytes; a != 0 || int64(b) != d.ss.n.Stats().HeldBytes {
		t.Fatalf("after grace: a holds %d, b %d, total %d", a, b, d.ss.n.Stats().HeldBytes)
	}
	d.advance(2 * time.Minute) // both sessions idle
	if held := d.ss.n.Stats().HeldBytes; held != 0 {
		t.Fatalf("%d bytes held after every session was evicted", held)
	}
}

// The limits as a client sees them over gRPC: each refusal is a FrameError
// on a stream that goes on.
func TestLimitsOverGRPC(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TextLimit = 1024
	cfg.MemoryBudget = 4096
	cfg.MaxSessions = 1
	h := newHarness(t, cfg)
	st := h.open()
	st.send(strings.Repeat("s", 300), openCall("c1", "true"))
	if fe := st.frameError(); codes.Code(fe.GetCode()) != codes.InvalidArgument || !strings.Contains(fe.GetMessage(), "--max-id-bytes") {
		t.Fatalf("long session id: %v", fe)
	}
	st.send("s1", openCall("c1", "cat"))
	st.exec()
	st.send("s2", openCall("c1", "cat"))
	if fe := st.frameError(); codes.Code(fe.GetCode()) != codes.ResourceExhausted || !strings.Contains(fe.GetMessage(), "--max-sessions") {
		t.Fatalf("second session: %v", fe)
	}
	big := strings.Repeat("z", 1000)
	var refused bool
	for i := 0; i < 8 && !refused; i++ {
		id := fmt.Sprintf("m%d", i)
		st.send("s1", openCall(id, "cat"))
		st.exec()
		st.send("s1", delta(id, big))
		if r := st.next(); r.GetFrameError() != nil {
			refused = codes.Code(r.GetFrameError().GetCode()) == codes.ResourceExhausted
			if x := st.exec(); !x.GetOutput().GetTruncated() {
				t.Fatalf("refused output not marked truncated: %v", x)
			}
		}
	}
	if !refused {
		t.Fatal("8 KiB of output fit a 4 KiB budget")
	}
	// The stream and the first call go on.
	st.send("s1", finish("c1", 0))
	if x := st.exec(); x.GetToolCallId() != "c1" || x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED {
		t.Fatalf("after the refusals: %v", x)
	}
}

// A permission ask under an over-long JSON-RPC id still reaches its call,
// but is not kept for matching its answer; a session keeps a bounded
// number of unanswered asks.
func TestAskLimits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxCallsPerSession = 1
	cfg.MaxCalls = 1
	d := newDirect(t, cfg)
	ask := func(reqID string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c1","kind":"execute","title":"rm -rf x"},"options":[{"optionId":"no","name":"Reject","kind":"reject_once"}]}}`, reqID)
	}
	out := d.frame("s", ask(strings.Repeat("r", 300)))
	if len(out) != 2 || out[0].GetShellExec().GetToolCallId() != "c1" || !strings.Contains(out[1].GetFrameError().GetMessage(), "JSON-RPC id of 302 bytes") {
		t.Fatalf("ask under a long id: %v", out)
	}
	var refused int
	for i := range 6 {
		for _, r := range d.frame("s", ask(fmt.Sprintf("r%d", i))) {
			if codes.Code(r.GetFrameError().GetCode()) == codes.ResourceExhausted {
				refused++
			}
		}
	}
	if n := d.ss.session("s").Asks; n != 4 || refused != 2 {
		t.Fatalf("%d asks kept and %d refused, want 4 and 2", n, refused)
	}
}
