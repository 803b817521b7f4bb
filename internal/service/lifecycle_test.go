package service

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

// direct drives the session state without a stream, on a clock the test
// moves by hand.
type direct struct {
	t   *testing.T
	ss  *sessions
	now time.Time
	seq uint64
}

func newDirect(t *testing.T, cfg Config) *direct {
	t.Helper()
	svc, err := New(cfg, nil, nil)
	require.NoError(t, err)
	d := &direct{t: t, ss: svc.sessions, now: time.Unix(1000, 0)}
	d.ss.now = func() time.Time { return d.now }
	return d
}

func (d *direct) handle(req *pb.NormalizeRequest) []*pb.NormalizeResponse {
	d.t.Helper()
	var out []*pb.NormalizeResponse
	err := d.ss.handle(context.Background(), req, func(r *pb.NormalizeResponse) error {
		out = append(out, r)
		return nil
	})
	require.NoError(d.t, err)
	return out
}

// frame applies one ACP message of session sid and returns what it produced.
func (d *direct) frame(sid, msg string) []*pb.NormalizeResponse {
	d.seq++
	return d.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: sid, Sequence: d.seq, Message: []byte(msg)}}})
}

// one applies a frame that must produce exactly one response.
func (d *direct) one(sid, msg string) *pb.NormalizeResponse {
	d.t.Helper()
	out := d.frame(sid, msg)
	if len(out) != 1 {
		d.t.Fatalf("frame %d produced %d responses, want 1: %v", d.seq, len(out), out)
	}
	return out[0]
}

func (d *direct) exec(sid, msg string) *pb.ShellExec {
	d.t.Helper()
	r := d.one(sid, msg)
	if r.GetShellExec() == nil {
		d.t.Fatalf("frame %d: want a ShellExec, got %v", d.seq, r)
	}
	return r.GetShellExec()
}

func (d *direct) frameError(sid, msg string) *pb.FrameError {
	d.t.Helper()
	r := d.one(sid, msg)
	if r.GetFrameError() == nil {
		d.t.Fatalf("frame %d: want a FrameError, got %v", d.seq, r)
	}
	return r.GetFrameError()
}

// advance moves the clock and runs the sweeper.
func (d *direct) advance(by time.Duration) {
	d.now = d.now.Add(by)
	d.ss.sweep()
}

// A call that is quiet for longer than the TTL while its session is busy
// with other calls keeps its state: its next frame continues its revisions.
func TestQuietCallInBusySessionKeepsRevisions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TTL = time.Minute
	d := newDirect(t, cfg)
	d.exec("s", openCall("quiet", "make build"))
	d.exec("s", delta("quiet", "compiling\n"))
	for i := range 6 {
		d.advance(30 * time.Second)
		id := string(rune('a' + i))
		d.exec("s", openCall(id, "true"))
		d.exec("s", finish(id, 0))
	}
	x := d.exec("s", delta("quiet", "linking\n"))
	if x.GetToolCallId() != "quiet" || x.GetRevision() != 3 || x.GetCommand() != "make build" {
		t.Fatalf("the quiet call restarted: revision %d, command %q", x.GetRevision(), x.GetCommand())
	}
	end := d.exec("s", finish("quiet", 0))
	if end.GetRevision() != 4 || end.GetOutput().GetText() != "compiling\nlinking\n" {
		t.Fatalf("ended revision %d lost output: %q", end.GetRevision(), end.GetOutput().GetText())
	}
}

// A frame about a call whose session was evicted for idleness gets a clear
// FAILED_PRECONDITION, never revision 1 of a new call under the old id.
func TestLateFrameAfterIdleEvictionIsRefused(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TTL = 10 * time.Minute
	d := newDirect(t, cfg)
	d.exec("s", openCall("c1", "sleep 1000"))
	d.exec("s", delta("c1", "a"))
	d.advance(11 * time.Minute)
	fe := d.frameError("s", delta("c1", "b"))
	if codes.Code(fe.GetCode()) != codes.FailedPrecondition || fe.GetToolCallId() != "c1" || !strings.Contains(fe.GetMessage(), `"c1" was evicted after 10m idle`) {
		t.Fatalf("late frame after idle eviction: %v", fe)
	}
	// Other calls of the session can start afresh.
	if x := d.exec("s", openCall("c2", "true")); x.GetRevision() != 1 {
		t.Fatalf("new call after eviction: %v", x)
	}
}

// An ended call released after its grace period never changes: a late frame
// that would flip its outcome gets a FrameError.
func TestLateFrameAfterGraceCannotFlipOutcome(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TTL = time.Hour
	cfg.Grace = 30 * time.Second
	d := newDirect(t, cfg)
	d.exec("s", openCall("c1", "true"))
	if x := d.exec("s", finish("c1", 0)); x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED {
		t.Fatalf("ended %v", x)
	}
	d.advance(time.Minute)
	fe := d.frameError("s", finish("c1", 1))
	if codes.Code(fe.GetCode()) != codes.FailedPrecondition || fe.GetToolCallId() != "c1" || !strings.Contains(fe.GetMessage(), "ended") || !strings.Contains(fe.GetMessage(), "SUCCEEDED") {
		t.Fatalf("late frame after grace: %v", fe)
	}
	fe = d.frameError("s", delta("c1", "late output"))
	if codes.Code(fe.GetCode()) != codes.FailedPrecondition {
		t.Fatalf("late output after grace: %v", fe)
	}
}

// Within the grace period, late output joins the ended call: its numbering
// continues and its outcome stays.
func TestLateOutputWithinGraceKeepsOutcome(t *testing.T) {
	d := newDirect(t, DefaultConfig())
	d.exec("s", openCall("c1", "true"))
	d.exec("s", delta("c1", "a\n"))
	d.exec("s", finish("c1", 0))
	d.advance(time.Second)
	x := d.exec("s", delta("c1", "b\n"))
	if x.GetRevision() != 4 || x.GetState() != pb.ShellState_SHELL_STATE_ENDED || x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED || x.GetOutput().GetText() != "a\nb\n" {
		t.Fatalf("late output within grace: %v", x)
	}
}

// A frame about a call of a closed session is refused too.
func TestLateFrameAfterSessionClosedIsRefused(t *testing.T) {
	d := newDirect(t, DefaultConfig())
	d.exec("s", openCall("c1", "sleep 5"))
	out := d.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s"}}})
	if len(out) != 1 || out[0].GetShellExec().GetState() != pb.ShellState_SHELL_STATE_ENDED {
		t.Fatalf("close: %v", out)
	}
	fe := d.frameError("s", delta("c1", "late"))
	if codes.Code(fe.GetCode()) != codes.FailedPrecondition || !strings.Contains(fe.GetMessage(), "closed") {
		t.Fatalf("late frame after close: %v", fe)
	}
}

// Tombstones are bounded: the oldest go first.
func TestTombstonesAreBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tombstones = 2
	cfg.Grace = time.Second
	d := newDirect(t, cfg)
	for _, id := range []string{"c1", "c2", "c3"} {
		d.exec("s", openCall(id, "true"))
		d.exec("s", finish(id, 0))
	}
	d.advance(2 * time.Second)
	if n := d.ss.n.Stats().Tombstones; n != 2 {
		t.Fatalf("%d tombstones held, want 2", n)
	}
	d.frameError("s", finish("c3", 0))
	d.frameError("s", finish("c2", 0))
	// c1's tombstone is gone: the id is free again.
	if x := d.exec("s", openCall("c1", "true")); x.GetRevision() != 1 {
		t.Fatalf("after its tombstone went: %v", x)
	}
}

// ENDED is final: within the grace period a late frame still joins an
// ended call, but evidence it brings never changes a known outcome (only
// an UNKNOWN one may be resolved by a late exit code).
func TestLateEvidenceWithinGraceCannotFlipOutcome(t *testing.T) {
	d := newDirect(t, DefaultConfig())
	d.exec("s", openCall("c1", "true"))
	if x := d.exec("s", finish("c1", 0)); x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED {
		t.Fatalf("ended %v", x)
	}
	for _, r := range d.frame("s", finish("c1", 1)) {
		if x := r.GetShellExec(); x != nil && (x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED || x.GetExitCode() != 0) {
			t.Fatalf("a late exit flipped the ended call: %v", x)
		}
	}
	x := d.exec("s", delta("c1", "late\n"))
	if x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED || x.GetExitCode() != 0 || x.GetOutput().GetText() != "late\n" {
		t.Fatalf("late output: %v", x)
	}
	// An UNKNOWN end is still resolved by a late exit code.
	d.exec("s", openCall("c2", "sleep 9"))
	d.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{SessionId: "s"}}})
	if x := d.exec("s", finish("c2", 2)); x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_FAILED || x.GetExitCode() != 2 {
		t.Fatalf("late exit of an UNKNOWN end: %v", x)
	}
}

// Over gRPC: a late frame about a call of a closed session gets a
// FrameError, and the stream and the other sessions go on.
func TestReleasedCallOverGRPC(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("a", openCall("c1", "sleep 9"))
	st.exec()
	st.send("b", openCall("c1", "true"))
	st.exec()
	st.control(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "a", Sequence: 50}}})
	if x := st.exec(); x.GetSessionId() != "a" || x.GetState() != pb.ShellState_SHELL_STATE_ENDED {
		t.Fatalf("close: %v", x)
	}
	late := st.send("a", delta("c1", "late"))
	fe := st.frameError()
	if fe.GetSequence() != late || codes.Code(fe.GetCode()) != codes.FailedPrecondition || fe.GetToolCallId() != "c1" || !strings.Contains(fe.GetMessage(), "closed") {
		t.Fatalf("late frame: %v", fe)
	}
	st.send("b", finish("c1", 0))
	if x := st.exec(); x.GetSessionId() != "b" || x.GetRevision() != 2 {
		t.Fatalf("other session after the late frame: %v", x)
	}
}
