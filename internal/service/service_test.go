package service

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// harness runs the real gRPC server over an in-memory connection.
type harness struct {
	t      *testing.T
	svc    *Service
	srv    *Server
	client pb.NormalizerServiceClient
	conn   *grpc.ClientConn
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	svc, err := New(cfg, nil, nil)
	require.NoError(t, err)
	return newHarnessWith(t, svc)
}

func newHarnessWith(t *testing.T, svc *Service) *harness {
	t.Helper()
	srv := NewServer(svc, DefaultServerOptions(), nil)
	conn := serveBufconn(t, srv)
	t.Cleanup(srv.GRPC.Stop)
	return &harness{t: t, svc: svc, srv: srv, client: pb.NewNormalizerServiceClient(conn), conn: conn}
}

// serveBufconn serves srv on an in-memory listener and returns a client
// connection to it, closed when tb ends; the caller stops srv.
func serveBufconn(tb testing.TB, srv *Server) *grpc.ClientConn {
	tb.Helper()
	lis := bufconn.Listen(1 << 20)
	go srv.Serve(lis)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(tb, err)
	tb.Cleanup(func() { conn.Close() })
	return conn
}

// stream is one open Normalize stream with a goroutine collecting replies.
type stream struct {
	t       *testing.T
	s       pb.NormalizerService_NormalizeClient
	cancel  context.CancelFunc
	replies chan *pb.NormalizeResponse
	done    chan error
	seq     uint64
}

func (h *harness) open() *stream {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := h.client.Normalize(ctx)
	require.NoError(h.t, err)
	st := &stream{t: h.t, s: s, cancel: cancel, replies: make(chan *pb.NormalizeResponse, 1024), done: make(chan error, 1)}
	go func() {
		for {
			r, err := s.Recv()
			if err != nil {
				close(st.replies)
				st.done <- err
				return
			}
			st.replies <- r
		}
	}()
	h.t.Cleanup(cancel)
	return st
}

// send sends one ACP message on session sid and returns its sequence.
func (st *stream) send(sid, msg string) uint64 {
	st.t.Helper()
	st.seq++
	err := st.s.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
		SessionId: sid, Sequence: st.seq, Message: []byte(msg),
	}}})
	require.NoError(st.t, err)
	return st.seq
}

func (st *stream) control(req *pb.NormalizeRequest) {
	st.t.Helper()
	require.NoError(st.t, st.s.Send(req))
}

// next returns the next reply, failing after a while.
func (st *stream) next() *pb.NormalizeResponse {
	st.t.Helper()
	select {
	case r, ok := <-st.replies:
		if !ok {
			st.t.Fatalf("stream ended: %v", <-st.done)
		}
		return r
	case <-time.After(5 * time.Second):
		st.t.Fatal("no reply within 5s")
	}
	return nil
}

func (st *stream) exec() *pb.ShellExec {
	st.t.Helper()
	r := st.next()
	if r.GetShellExec() == nil {
		st.t.Fatalf("want a ShellExec, got %v", r)
	}
	return r.GetShellExec()
}

func (st *stream) frameError() *pb.FrameError {
	st.t.Helper()
	r := st.next()
	if r.GetFrameError() == nil {
		st.t.Fatalf("want a FrameError, got %v", r)
	}
	return r.GetFrameError()
}

// update builds a session/update notification.
func update(u string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":` + u + `}}`
}

func openCall(id, cmd string) string {
	return update(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"kind":"execute","title":%q,"status":"in_progress","rawInput":{"command":%q}}`, id, cmd, cmd))
}

func delta(id, data string) string {
	return update(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"_meta":{"terminal_output":{"terminal_id":%q,"data":%q}}}`, id, id, data))
}

func finish(id string, code int) string {
	return update(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"completed","_meta":{"terminal_exit":{"terminal_id":%q,"exit_code":%d,"signal":null}}}`, id, id, code))
}

func TestNormalizeLifecycle(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("s1", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work","mcpServers":[]}}`)
	seq := st.send("s1", openCall("c1", "make test"))
	x := st.exec()
	if x.GetRevision() != 1 || x.GetState() != pb.ShellState_SHELL_STATE_RUNNING || x.GetCommand() != "make test" || x.GetCwd() != "/work" || x.GetSequence() != seq {
		t.Fatalf("first revision %v", x)
	}
	st.send("s1", delta("c1", "ok 1\n"))
	x = st.exec()
	if x.GetOutput().GetText() != "ok 1\n" || x.GetOutput().GetMode() != pb.TextMode_TEXT_MODE_APPEND {
		t.Fatalf("live revision %v", x)
	}
	st.send("s1", delta("c1", "FAIL 2\n"))
	if x = st.exec(); x.GetOutput().GetText() != "FAIL 2\n" || x.GetRevision() != 3 {
		t.Fatalf("second delta not sent alone: %v", x)
	}
	st.send("s1", finish("c1", 2))
	x = st.exec()
	if x.GetState() != pb.ShellState_SHELL_STATE_ENDED || x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_FAILED || x.ExitCode == nil || x.GetExitCode() != 2 {
		t.Fatalf("ended revision %v", x)
	}
	if x.GetOutput().GetText() != "ok 1\nFAIL 2\n" || x.GetOutput().GetMode() != pb.TextMode_TEXT_MODE_REPLACE || x.GetOutput().GetTotalBytes() != 12 {
		t.Fatalf("ended revision does not carry the whole output: %v", x.GetOutput())
	}
}

func TestBadFrameDoesNotDisturbOthers(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("s1", openCall("c1", "ls"))
	st.exec()
	bad := st.send("s1", `not json`)
	fe := st.frameError()
	if fe.GetSequence() != bad || codes.Code(fe.GetCode()) != codes.InvalidArgument || fe.GetSessionId() != "s1" || !strings.Contains(fe.GetMessage(), "not a JSON object") {
		t.Fatalf("frame error %v", fe)
	}
	st.send("s1", `{"jsonrpc":"2.0"}`)
	if fe := st.frameError(); !strings.Contains(fe.GetMessage(), "no method and no id") {
		t.Fatalf("frame error %v", fe)
	}
	st.send("", openCall("c2", "ls"))
	if fe := st.frameError(); !strings.Contains(fe.GetMessage(), "no session_id") {
		t.Fatalf("frame error %v", fe)
	}
	st.s.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Dialect: "nope", Message: []byte(openCall("c3", "ls"))}}})
	if fe := st.frameError(); !strings.Contains(fe.GetMessage(), `unknown dialect "nope"`) {
		t.Fatalf("frame error %v", fe)
	}
	// The stream and the first call go on as if nothing happened.
	st.send("s1", finish("c1", 0))
	x := st.exec()
	if x.GetToolCallId() != "c1" || x.GetRevision() != 2 || x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED {
		t.Fatalf("call after bad frames %v", x)
	}
}

func TestCallLimits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxCallsPerSession = 2
	cfg.MaxCalls = 3
	h := newHarness(t, cfg)
	st := h.open()
	st.send("a", openCall("c1", "true"))
	st.exec()
	st.send("a", openCall("c2", "true"))
	st.exec()
	st.send("a", openCall("c3", "true"))
	if fe := st.frameError(); codes.Code(fe.GetCode()) != codes.ResourceExhausted || fe.GetToolCallId() != "c3" || !strings.Contains(fe.GetMessage(), "already holds 2 calls") {
		t.Fatalf("per-session limit: %v", fe)
	}
	st.send("b", openCall("c1", "true"))
	st.exec()
	st.send("b", openCall("c2", "true"))
	if fe := st.frameError(); codes.Code(fe.GetCode()) != codes.ResourceExhausted || !strings.Contains(fe.GetMessage(), "service already holds 3") {
		t.Fatalf("total limit: %v", fe)
	}
	// Calls already held keep working.
	st.send("a", finish("c2", 0))
	if x := st.exec(); x.GetToolCallId() != "c2" || x.GetState() != pb.ShellState_SHELL_STATE_ENDED {
		t.Fatalf("held call after limit: %v", x)
	}
	// Closing a session frees its calls.
	st.control(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "a", Sequence: 99}}})
	x := st.exec()
	if x.GetToolCallId() != "c1" || x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_UNKNOWN || x.GetSequence() != 99 {
		t.Fatalf("close ends the open call as unknown: %v", x)
	}
	st.send("b", openCall("c2", "true"))
	if x := st.exec(); x.GetToolCallId() != "c2" {
		t.Fatalf("after close: %v", x)
	}
}

// A client that reconnects mid-call goes on with the numbering, and the
// first revision on the new stream carries the whole text (REPLACE): what
// was in flight on the old stream may be lost.
func TestReconnectContinues(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	first := h.open()
	first.send("s1", openCall("c1", "sleep 1"))
	first.exec()
	first.send("s1", delta("c1", "a"))
	first.exec()
	first.send("s1", delta("c1", "b"))
	first.exec() // the client never gets this one: its stream breaks
	first.cancel()
	second := h.open()
	second.send("s1", delta("c1", "c"))
	x := second.exec()
	if x.GetRevision() != 4 || x.GetOutput().GetText() != "abc" || x.GetOutput().GetMode() != pb.TextMode_TEXT_MODE_REPLACE {
		t.Fatalf("first revision on the reconnected stream: %v", x)
	}
	second.send("s1", delta("c1", "d"))
	if x = second.exec(); x.GetOutput().GetText() != "d" || x.GetOutput().GetMode() != pb.TextMode_TEXT_MODE_APPEND {
		t.Fatalf("next revision on the same stream appends: %v", x)
	}
	second.send("s1", finish("c1", 0))
	if x = second.exec(); x.GetOutput().GetText() != "abcd" {
		t.Fatalf("ended after reconnect %v", x)
	}
}

func TestTurnEndEndsOpenCalls(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("s1", openCall("c1", "sleep 100"))
	st.exec()
	st.send("s1", openCall("c2", "true"))
	st.exec()
	st.send("s1", finish("c2", 0))
	st.exec()
	// The agent answers the prompt while c1 is still running.
	st.send("s1", `{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}`)
	x := st.exec()
	if x.GetToolCallId() != "c1" || x.GetState() != pb.ShellState_SHELL_STATE_ENDED || x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_UNKNOWN || !strings.Contains(x.GetOutcomeReason(), "turn ended") {
		t.Fatalf("turn end %v", x)
	}

	// session/cancel then a cancelled turn: open calls are cancelled.
	st.send("s1", openCall("c3", "sleep 100"))
	st.exec()
	st.send("s1", `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`)
	st.control(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{SessionId: "s1"}}})
	if x = st.exec(); x.GetToolCallId() != "c3" || x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_CANCELLED {
		t.Fatalf("cancelled turn %v", x)
	}
}

func TestPermissionAsks(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	ask := func(id, reqID, text string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":%q,"kind":"execute","title":"rm -rf build","content":[{"type":"content","content":{"type":"text","text":%q}}]},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"deny","name":"Reject","kind":"reject_once"}]}}`, reqID, id, text)
	}
	// An ask for a call never announced opens it.
	st.send("s1", ask("p1", "10", "Not in allowlist: rm"))
	x := st.exec()
	if x.GetToolCallId() != "p1" || !x.GetAwaitingApproval() || x.GetApprovalReason() != "Not in allowlist: rm" || x.GetState() != pb.ShellState_SHELL_STATE_PENDING {
		t.Fatalf("ask opens the call: %v", x)
	}
	if x.GetOutput() != nil {
		t.Fatalf("the ask's text became output: %v", x.GetOutput())
	}
	// The user rejects; the agent then fails the call.
	st.send("s1", `{"jsonrpc":"2.0","id":10,"result":{"outcome":{"outcome":"selected","optionId":"deny"}}}`)
	if x = st.exec(); x.GetAwaitingApproval() {
		t.Fatalf("answered ask still awaiting: %v", x)
	}
	st.send("s1", update(`{"sessionUpdate":"tool_call_update","toolCallId":"p1","status":"failed"}`))
	if x = st.exec(); x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_CANCELLED {
		t.Fatalf("rejected call %v", x)
	}

	// An ask under another id that names no other command merges into
	// the single open shell call.
	st.send("s1", openCall("c2", "curl https://example.test"))
	st.exec()
	st.send("s1", `{"jsonrpc":"2.0","id":11,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"other-id","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"Fetch https://example.test"}}]},"options":[]}}`)
	x = st.exec()
	if x.GetToolCallId() != "c2" || x.GetApprovalReason() != "Fetch https://example.test" || x.GetCommand() != "curl https://example.test" {
		t.Fatalf("ask not merged into the open call: %v", x)
	}
	// So does one that names the same command.
	st.send("s1", `{"jsonrpc":"2.0","id":12,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"other-id-2","kind":"execute","title":"curl https://example.test","content":[{"type":"content","content":{"type":"text","text":"Not in allowlist: curl"}}]},"options":[]}}`)
	if x = st.exec(); x.GetToolCallId() != "c2" || x.GetApprovalReason() != "Not in allowlist: curl" {
		t.Fatalf("ask for the same command not merged into the open call: %v", x)
	}
	// An ask naming another command is the first sight of another call,
	// even while c2 is open: it must not be attributed to c2.
	st.send("s1", ask("p3", "13", "Not in allowlist: rm"))
	if x = st.exec(); x.GetToolCallId() != "p3" || x.GetCommand() != "rm -rf build" || x.GetApprovalReason() != "Not in allowlist: rm" {
		t.Fatalf("ask for another command merged into the open call: %v", x)
	}
}

func TestTerminalUpdatesFindTheirCall(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("s1", update(`{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"echo hi","status":"in_progress","content":[{"type":"terminal","terminalId":"t9"}]}`))
	st.exec()
	st.send("s1", update(`{"sessionUpdate":"terminal_output_chunk","terminalId":"t9","data":"aGkK"}`))
	if x := st.exec(); x.GetToolCallId() != "c1" || x.GetOutput().GetText() != "hi\n" {
		t.Fatalf("chunk %v", x)
	}
	st.send("s1", update(`{"sessionUpdate":"terminal_output_chunk","terminalId":"t-unknown","data":"aGkK"}`))
	if fe := st.frameError(); codes.Code(fe.GetCode()) != codes.FailedPrecondition || !strings.Contains(fe.GetMessage(), "t-unknown") {
		t.Fatalf("unknown terminal %v", fe)
	}
}

func TestNonShellCallsAreSilent(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("s1", update(`{"sessionUpdate":"tool_call","toolCallId":"r1","kind":"read","title":"Read a.go","status":"completed","content":[{"type":"content","content":{"type":"text","text":"package a"}}]}`))
	st.send("s1", update(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}`))
	st.send("s1", openCall("c1", "true"))
	if x := st.exec(); x.GetToolCallId() != "c1" {
		t.Fatalf("a non-shell call produced %v", x)
	}
}

func TestRelativeCwdResolves(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("s1", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/dev/proj"}}`)
	st.send("s1", update(`{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"ls","status":"in_progress","rawInput":{"command":"ls","cwd":"sub/dir"}}`))
	if x := st.exec(); x.GetCwd() != "/home/dev/proj/sub/dir" {
		t.Fatalf("cwd %q", x.GetCwd())
	}
}

func TestAutoDetectsDialect(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("s1", openCall("c0", "true"))
	if x := st.exec(); x.GetDialect() != "generic" {
		t.Fatalf("before initialize: dialect %q", x.GetDialect())
	}
	st.send("s1", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"some-unknown-agent","version":"1"}}}`)
	st.send("s1", openCall("c1", "true"))
	if x := st.exec(); x.GetDialect() != "generic" {
		t.Fatalf("unknown agent: dialect %q", x.GetDialect())
	}
	resp, err := h.client.ListDialects(context.Background(), &pb.ListDialectsRequest{})
	require.NoError(t, err)
	for _, d := range resp.GetDialects() {
		if len(d.GetAgentNames()) == 0 {
			continue
		}
		sid := "auto-" + d.GetName()
		st.send(sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":%q}}}`, d.GetAgentNames()[0]))
		st.send(sid, openCall("c1", "true"))
		assert.Equal(t, d.GetName(), st.exec().GetDialect(), "the dialect agent %q is detected as", d.GetAgentNames()[0])
	}
}

func TestUnaryLookups(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	ctx := context.Background()
	resp, err := h.client.ListDialects(ctx, &pb.ListDialectsRequest{})
	if err != nil || len(resp.GetDialects()) == 0 || resp.GetDialects()[0].GetName() != "generic" {
		t.Fatalf("ListDialects %v %v", resp, err)
	}
	for _, d := range append(resp.GetDialects(), &pb.DialectInfo{Name: "auto"}) {
		c, err := h.client.GetClientCapabilities(ctx, &pb.GetClientCapabilitiesRequest{Dialect: d.GetName()})
		require.NoError(t, err)
		js := c.GetClientCapabilitiesJson()
		if !strings.Contains(js, `"terminal_output":true`) || strings.Contains(js, `"terminal":true`) {
			t.Errorf("%s: capabilities %s", d.GetName(), js)
		}
	}
	_, err = h.client.GetClientCapabilities(ctx, &pb.GetClientCapabilitiesRequest{Dialect: "nope"})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unknown dialect: %v", err)
	}
	hc, err := healthpb.NewHealthClient(h.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: pb.NormalizerService_ServiceDesc.ServiceName})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health %v %v", hc, err)
	}
}

func TestShutdownDrainsStreams(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("s1", openCall("c1", "true"))
	st.exec()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { h.srv.Shutdown(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown did not finish")
	}
	for range st.replies {
	}
	if err := <-st.done; status.Code(err) != codes.Unavailable {
		t.Fatalf("stream ended with %v, want UNAVAILABLE", err)
	}
}

func TestSweepEvicts(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TTL = time.Minute
	cfg.Grace = time.Second
	svc, err := New(cfg, nil, nil)
	require.NoError(t, err)
	now := time.Unix(1000, 0)
	svc.sessions.now = func() time.Time { return now }
	frame := func(msg string) {
		discard := func(*pb.NormalizeResponse) error { return nil }
		if err := svc.sessions.handle(context.Background(), &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Message: []byte(msg)}}}, discard); err != nil {
			t.Fatal(err)
		}
	}
	frame(openCall("open", "sleep 1000"))
	frame(openCall("done", "true"))
	frame(finish("done", 0))
	now = now.Add(2 * time.Second)
	svc.sessions.sweep()
	if got := int64(svc.sessions.n.Stats().Calls); got != 1 {
		t.Fatalf("after grace: %d calls held, want 1", got)
	}
	now = now.Add(2 * time.Minute)
	svc.sessions.sweep()
	if got := int64(svc.sessions.n.Stats().Calls); got != 0 {
		t.Fatalf("after ttl: %d calls held, want 0", got)
	}
	now = now.Add(2 * time.Minute)
	svc.sessions.sweep()
	if n := svc.sessions.n.Stats().Sessions; n != 0 {
		t.Fatalf("%d idle sessions kept", n)
	}
}

// A client that stops reading must not make the server hold more than the
// send queue: the receive loop stops reading instead.
func TestSlowClientBackpressure(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SendQueue = 4
	h := newHarness(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := h.client.Normalize(ctx)
	require.NoError(t, err)
	var sent atomic.Int64
	go func() {
		big := strings.Repeat("x", 32<<10)
		for i := 0; i < 20000; i++ {
			if s.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Message: []byte(delta("c1", big))}}}) != nil {
				return
			}
			sent.Add(1)
		}
	}()
	// Never read. The sender must get stuck: frames stop going through long
	// before all 20000 (640 MB) did.
	time.Sleep(1500 * time.Millisecond)
	stuck := sent.Load()
	time.Sleep(500 * time.Millisecond)
	if now := sent.Load(); now != stuck || now == 20000 {
		t.Fatalf("the sender went on from %d to %d frames while the client read nothing", stuck, now)
	}
	cancel()
	for {
		if _, err := s.Recv(); err != nil {
			if status.Code(err) != codes.Canceled {
				t.Fatalf("stream after cancel: %v", err)
			}
			break
		}
	}
}

// TestDetectionBySigns: an agent that gives no name is detected by what it
// sends, the first sign wins, and a named agent is never re-detected by a
// sign. ListDialects states every name and sign auto-detection uses.
func TestDetectionBySigns(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	cursorInit := `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[{"id":"cursor_login","name":"Cursor Login"}]}}`

	st.send("a", cursorInit)
	st.send("a", openCall("c1", "true"))
	if x := st.exec(); x.GetDialect() != "cursor" {
		t.Errorf("initialize without agentInfo offering cursor_login: dialect %q", x.GetDialect())
	}

	st.send("b", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"some-unknown-agent"},"authMethods":[{"id":"cursor_login"}]}}`)
	st.send("b", `{"jsonrpc":"2.0","id":9,"method":"cursor/task","params":{}}`)
	st.send("b", openCall("c1", "true"))
	if x := st.exec(); x.GetDialect() != "generic" {
		t.Errorf("a named agent read by a sign: dialect %q", x.GetDialect())
	}

	// No initialize seen: the opening tool_call's shape is the sign, and
	// that frame is read by the detected dialect already.
	st.send("c", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c","update":{"sessionUpdate":"tool_call","toolCallId":"tool_1","title":"`+"`sleep 2`"+`","kind":"execute","status":"pending","rawInput":{"command":"sleep 2"}}}}`)
	if x := st.exec(); x.GetDialect() != "cursor" || x.GetCommand() != "sleep 2" {
		t.Errorf("cursor tool_call shape: dialect %q command %q", x.GetDialect(), x.GetCommand())
	}

	resp, err := h.client.ListDialects(context.Background(), &pb.ListDialectsRequest{})
	require.NoError(t, err)
	if !strings.Contains(resp.GetDetection(), "longest") || !strings.Contains(resp.GetDetection(), "agentInfo.name") {
		t.Errorf("detection %q", resp.GetDetection())
	}
	found := map[string]*pb.DialectInfo{}
	for _, d := range resp.GetDialects() {
		found[d.GetName()] = d
		if d.GetName() != "generic" && len(d.GetDetectionRules()) == 0 {
			t.Errorf("%s: no detection rules", d.GetName())
		}
	}
	if c := found["cursor"]; c == nil || !slices.Contains(c.GetAuthMethodIds(), "cursor_login") || !slices.Contains(c.GetMethodPrefixes(), "cursor/") {
		t.Errorf("cursor: %v", c)
	}
	if q := found["qwen"]; q == nil || !slices.Contains(q.GetAgentNames(), "qwen-code") {
		t.Errorf("qwen: %v", q)
	}
	if o := found["opencode"]; o == nil || !slices.Contains(o.GetAgentNames(), "kilo") {
		t.Errorf("opencode: %v", o)
	}
}

// TestCancelledTurn: after session/cancel, a call that ends before or
// with the turn's result is CANCELLED keeping a known exit code, one that
// ended before the cancel keeps its outcome, and output for a cancelled
// call that arrives after it ended neither reopens it nor lands elsewhere.
func TestCancelledTurn(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.send("s1", openCall("done", "true"))
	st.exec()
	st.send("s1", finish("done", 0))
	st.exec()
	st.send("s1", openCall("c1", "for i in 1 2 3; do echo $i; sleep 1; done"))
	st.exec()
	st.send("s1", openCall("c2", "sleep 100"))
	st.exec()
	st.send("s1", `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`)
	// The agent answers the cancel with failed and exit 1 for c1.
	st.send("s1", update(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":{"exit_code":1}}`))
	x := st.exec()
	if x.GetToolCallId() != "c1" || x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_CANCELLED || x.ExitCode == nil || x.GetExitCode() != 1 {
		t.Fatalf("failed final after session/cancel: %v", x)
	}
	// c2 gets no final before the turn's result.
	st.send("s1", `{"jsonrpc":"2.0","id":7,"result":{"stopReason":"cancelled"}}`)
	if x = st.exec(); x.GetToolCallId() != "c2" || x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_CANCELLED {
		t.Fatalf("no final before the cancelled turn's result: %v", x)
	}
	// Late output for c2 in the next turn: c2 stays ended and cancelled,
	// and the next turn's call gets none of it.
	st.send("s1", openCall("c3", "echo next"))
	st.exec()
	st.send("s1", delta("c2", "late\n"))
	if x = st.exec(); x.GetToolCallId() != "c2" || x.GetState() != pb.ShellState_SHELL_STATE_ENDED || x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_CANCELLED {
		t.Fatalf("late output reopened or changed the cancelled call: %v", x)
	}
	st.send("s1", delta("c3", "next\n"))
	st.send("s1", finish("c3", 0))
	st.exec()
	if x = st.exec(); x.GetToolCallId() != "c3" || x.GetOutput().GetText() != "next\n" || x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED {
		t.Fatalf("the next turn's call: %v", x)
	}
}
