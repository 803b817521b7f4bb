package service

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// rawCodec sends []byte messages as they are (so a test can send what a
// protobuf library would refuse to encode) and reads replies as protobuf.
type rawCodec struct{ encoding.CodecV2 }

func (c rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.([]byte); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return c.CodecV2.Marshal(v)
}

// rawStream opens a Normalize stream that sends raw bytes, on a server
// whose log is returned.
func rawStream(t *testing.T, opts ServerOptions) (grpc.ClientStream, *Service, *testlog.Buffer) {
	t.Helper()
	svc, err := New(DefaultConfig(), nil, nil)
	require.NoError(t, err)
	logs := &testlog.Buffer{}
	srv := NewServer(svc, opts, slog.New(slog.NewTextHandler(logs, nil)))
	conn := serveBufconn(t, srv)
	t.Cleanup(srv.GRPC.Stop)
	desc := &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}
	st, err := conn.NewStream(callCtx(t), desc, "/acpnorm.v1.NormalizerService/Normalize",
		grpc.ForceCodecV2(rawCodec{encoding.GetCodecV2("proto")}))
	require.NoError(t, err)
	return st, svc, logs
}

// withBytes encodes req, then puts raw in place of the placeholder, which
// must be as long.
func withBytes(t *testing.T, req *pb.NormalizeRequest, placeholder, raw string) []byte {
	t.Helper()
	b, err := proto.Marshal(req)
	require.NoError(t, err)
	if len(placeholder) != len(raw) || bytes.Count(b, []byte(placeholder)) != 1 {
		t.Fatal("placeholder must occur once and be as long as the raw bytes")
	}
	return bytes.Replace(b, []byte(placeholder), []byte(raw), 1)
}

// A string field that is not valid UTF-8 gets a FrameError naming it; the
// stream and the other frames go on.
func TestInvalidUTF8IsAFrameError(t *testing.T) {
	st, _, _ := rawStream(t, DefaultServerOptions())
	bad := withBytes(t, frameReq("sPPq", 7, openCall("c1", "ls")), "sPPq", "s\xff\xfeq")
	require.NoError(t, st.SendMsg(bad))
	closed := withBytes(t, &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "zzz", Sequence: 8}}}, "zzz", "z\xc3z")
	require.NoError(t, st.SendMsg(closed))
	good, _ := proto.Marshal(frameReq("s", 9, openCall("c2", "true")))
	require.NoError(t, st.SendMsg(good))
	var r pb.NormalizeResponse
	for _, want := range []struct {
		seq   uint64
		field string
	}{{7, "frame.session_id"}, {8, "session_closed.session_id"}} {
		require.NoError(t, st.RecvMsg(&r))
		fe := r.GetFrameError()
		if fe == nil || fe.GetSequence() != want.seq || codes.Code(fe.GetCode()) != codes.InvalidArgument || !strings.Contains(fe.GetMessage(), want.field+" is not valid UTF-8") {
			t.Fatalf("reply to request %d: %v, want a FrameError naming %s", want.seq, &r, want.field)
		}
	}
	if err := st.RecvMsg(&r); err != nil || r.GetShellExec().GetToolCallId() != "c2" {
		t.Fatalf("the next frame: %v %v", &r, err)
	}
}

// A session id that is not valid UTF-8 is echoed (its bad bytes as
// U+FFFD, which take three bytes each) only within the id limit: a longer
// one is not echoed, as a valid over-long id is not, so the answer stays
// small whatever the request.
func TestInvalidUTF8SessionIDNotEchoedOverTheLimit(t *testing.T) {
	st, _, _ := rawStream(t, DefaultServerOptions())
	for _, n := range []int{2, 1000, 100_000} {
		placeholder := strings.Repeat("p", 2*n)
		raw := strings.Repeat("a\xff", n)
		bad := withBytes(t, frameReq(placeholder, uint64(n), openCall("c1", "ls")), placeholder, raw)
		require.NoError(t, st.SendMsg(bad))
		var r pb.NormalizeResponse
		require.NoError(t, st.RecvMsg(&r))
		fe := r.GetFrameError()
		require.NotNil(t, fe, "%d", n)
		if n == 2 {
			assert.Equal(t, "a\uFFFDa\uFFFD", fe.GetSessionId())
		} else {
			assert.Zero(t, len(fe.GetSessionId()), "an id of %d bytes is not echoed", 2*n)
		}
		assert.Less(t, proto.Size(&r), 1024)
	}
}

// A message over the size limit ends the stream (gRPC reads no further);
// the status is RESOURCE_EXHAUSTED, it is logged with that code, not as a
// cancel, and counted.
func TestOversizedMessageEndsTheStream(t *testing.T) {
	opts := DefaultServerOptions()
	opts.MaxMessageBytes = 1 << 10
	st, svc, logs := rawStream(t, opts)
	big, _ := proto.Marshal(frameReq("s", 1, delta("c1", strings.Repeat("x", 2<<10))))
	require.NoError(t, st.SendMsg(big))
	var r pb.NormalizeResponse
	err := st.RecvMsg(&r)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("oversized message: %v, want RESOURCE_EXHAUSTED", err)
	}
	// gRPC ended the stream as it read the message, before the handler
	// could count what it applied: no trailer, as docs/contract.md says.
	// Should gRPC ever send the handler's trailer, the contract can
	// promise it here too.
	assert.Empty(t, st.Trailer().Get(TrailerRequestsApplied), "trailer %v", st.Trailer())
	waitFor(t, "the stream's end to be logged", func() bool { return strings.Contains(logs.String(), "finished call") })
	if log := logs.String(); !strings.Contains(log, "grpc.code=ResourceExhausted") || strings.Contains(log, "grpc.code=Canceled") {
		t.Fatalf("the server logged:\n%s\nwant the stream's end logged as ResourceExhausted", log)
	}
	if n := counted(svc.sessions.m, "message_too_large"); n != 1 {
		t.Fatalf("%v message_too_large counted, want 1", n)
	}
}
