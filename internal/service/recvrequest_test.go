package service

import (
	"context"
	"net"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
)

// The codec makes a frame's request itself, with the frame, and leaves
// the request it is given for the next: a stream's reader makes none per
// frame. Any other request is decoded into the one given.
func TestCodecMakesAFrameRequest(t *testing.T) {
	codec := newTolerantCodec()
	for _, want := range []*pb.NormalizeRequest{
		{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Sequence: 7, Dialect: "auto", Cwd: "/w", Message: []byte(`{"jsonrpc":"2.0"}`)}}},
		{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s"}}},
		{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{SessionId: "s"}}},
		{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", HeldRevisions: map[string]uint32{"c": 2}}}}, // not read by decodeFrame
	} {
		wire, err := proto.Marshal(want)
		require.NoError(t, err)
		spare := &pb.NormalizeRequest{}
		in := &received{NormalizeRequest: spare}
		require.NoError(t, codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, in))
		assert.True(t, proto.Equal(want, in.NormalizeRequest), "%v: read %v", want, in.NormalizeRequest)
		_, fast := want.Kind.(*pb.NormalizeRequest_Frame)
		fast = fast && want.GetFrame().HeldRevisions == nil
		if fast {
			assert.NotSame(t, spare, in.NormalizeRequest, "%v: read into the request given", want)
			assert.Nil(t, spare.Kind, "%v: the request given was changed", want)
		} else {
			assert.Same(t, spare, in.NormalizeRequest, "%v: not read into the request given", want)
		}
		if in.buf != nil {
			in.buf.Free()
		}
	}

	wire, err := proto.Marshal(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Message: []byte("{}")}}})
	require.NoError(t, err)
	in := &received{NormalizeRequest: &pb.NormalizeRequest{}}
	data := mem.BufferSlice{mem.SliceBuffer(wire)}
	allocs := testing.AllocsPerRun(100, func() {
		if err := codec.Unmarshal(data, in); err != nil {
			t.Fatal(err)
		}
	})
	assert.Equal(t, 1.0, allocs, "the request, its oneof's wrapper and the frame")
}

// Service on a gRPC server of the caller's, with gRPC's own codec (which
// decodes every request into the one the stream's reader gives it), reads
// frames and other requests as on NewServer's.
func TestServiceOnAPlainServer(t *testing.T) {
	svc, err := New(DefaultConfig(), nil, nil)
	require.NoError(t, err)
	g := grpc.NewServer()
	pb.RegisterNormalizerServiceServer(g, svc)
	lis := bufconn.Listen(1 << 20)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	h := &harness{t: t, svc: svc, client: pb.NewNormalizerServiceClient(conn), conn: conn}
	st := h.open()
	st.send("s1", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work","mcpServers":[]}}`)
	st.send("s1", openCall("c1", "make test"))
	x := st.exec()
	assert.Equal(t, "make test", x.GetCommand())
	assert.Equal(t, "/work", x.GetCwd())
	st.send("s1", delta("c1", "ok 1\n"))
	assert.Equal(t, "ok 1\n", st.exec().GetOutput().GetText())
	st.control(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{SessionId: "s1"}}})
	x = st.exec()
	assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, x.GetState())
	assert.Equal(t, "ok 1\n", x.GetOutput().GetText())
}
