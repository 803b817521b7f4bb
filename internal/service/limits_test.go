package service

import (
	"fmt"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
	if n := len(d.ss.all); n != 0 {
		t.Fatalf("%d sessions held after only rejected frames, want 0", n)
	}
	// A valid frame of a session does create it.
	d.exec("good", openCall("c1", "true"))
	if n := len(d.ss.all); n != 1 {
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
	if n := d.ss.total.Load(); n != 0 {
		t.Fatalf("%d calls held after refused ids", n)
	}
	// 256 bytes is fine.
	if x := d.exec(long[:256], openCall(long[:256], "true")); x.GetToolCallId() != long[:256] {
		t.Fatalf("256-byte ids: %v", x)
	}
}

// Commands and cwds are bounded by the text limit: an over-long one is
// left out with a FrameError naming the field, and the rest of the frame
// (its output) still applies.
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
	if len(out) != 1 || codes.Code(out[0].GetFrameError().GetCode()) != codes.InvalidArgument || !strings.Contains(out[0].GetFrameError().GetMessage(), "cwd") {
		t.Fatalf("long AcpFrame.cwd: %v", out)
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
	if got := testutil.ToFloat64(d.ss.m.refusals.WithLabelValues(limitSessions)); got != 1 {
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
	if n := len(d.ss.all["s"].terminals); n != 4 || refused != 2 {
		t.Fatalf("%d terminals tracked and %d refused, want 4 and 2", n, refused)
	}
}
