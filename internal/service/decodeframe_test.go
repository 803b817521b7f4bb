package service

import (
	"bytes"
	"testing"
	"unsafe"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// frameWires are encodings of NormalizeRequests: the common frames, and
// the forms decodeFrame leaves to protobuf.
func frameWires(t testing.TB) [][]byte {
	t.Helper()
	enc := func(m *pb.NormalizeRequest) []byte {
		b, err := proto.Marshal(m)
		require.NoError(t, err)
		return b
	}
	frame := func(f *pb.AcpFrame) []byte {
		return enc(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: f}})
	}
	tag := protowire.AppendTag
	field := func(b []byte, num protowire.Number, v string) []byte {
		return protowire.AppendString(tag(b, num, protowire.BytesType), v)
	}
	varint := func(b []byte, num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(tag(b, num, protowire.VarintType), v)
	}
	wrap := func(in []byte) []byte { return protowire.AppendBytes(tag(nil, 1, protowire.BytesType), in) }
	full := &pb.AcpFrame{SessionId: "s-1", Dialect: "codex", Cwd: "/w", Sequence: 1 << 40,
		Direction: pb.Direction_DIRECTION_AGENT_TO_CLIENT, Message: []byte(`{"jsonrpc":"2.0"}`)}
	wires := [][]byte{
		frame(full),
		frame(&pb.AcpFrame{}),
		frame(&pb.AcpFrame{SessionId: "s", Message: []byte("x")}),
		frame(&pb.AcpFrame{Direction: pb.Direction(-3)}),
		frame(&pb.AcpFrame{SessionId: "s", HeldSequence: 4, HeldRevisions: map[string]uint32{"c": 2}}), // fields past 6
		enc(&pb.NormalizeRequest{}),
		enc(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{SessionId: "s", Sequence: 2}}}),
		enc(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s"}}}),
		enc(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{SkipAppliedSequences: true}}}),
		// Fields in another order, and out of the usual form.
		wrap(field(varint(field(nil, 6, "{}"), 4, 9), 1, "s")),
		wrap(field(field(nil, 1, "a"), 1, "b")),                // a field twice: the last one wins
		append(frame(full), frame(&pb.AcpFrame{Cwd: "/x"})...), // the frame twice: merged
		append(frame(full), enc(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{}}})...),
		wrap(field(field(nil, 1, "s"), 9, "unknown")), // an unknown field
		wrap(varint(nil, 1, 5)),                       // a known field of another wire type
		wrap(field(nil, 4, "x")),                      // a varint field as bytes
		wrap(field(nil, 1, "bad \xff utf-8")),         // refused by protobuf
		wrap(field(nil, 6, "bytes \xff are fine")),
		wrap(varint(nil, 5, 1<<40)),                          // an enum past int32
		wrap(append(tag(nil, 1, protowire.BytesType), 0x80)), // a length cut short
		append(wrap(nil)[:1], 0xff),                          // malformed length
		varint(nil, 1, 1),                                    // the frame as a varint
		append(frame(full), 0),                               // a trailing byte
	}
	return wires
}

// decodeFrame reads what protobuf reads, or leaves the request alone.
// Without a received it keeps nothing of the input (gRPC reuses its
// buffers); with one, the message is the input's bytes where it is,
// capped there so that an append cannot write over what follows it, and
// the strings are the same whatever the received's last ones were.
func TestDecodeFrameIsProtobuf(t *testing.T) {
	for i, b := range frameWires(t) {
		checkDecodeFrame(t, i, b)
	}
}

func checkDecodeFrame(t *testing.T, i int, b []byte) {
	t.Helper()
	want := &pb.NormalizeRequest{}
	werr := proto.Unmarshal(b, want)
	for mode := range 3 {
		var in *received
		switch mode {
		case 1:
			in = &received{}
		case 2: // the strings of frameWires' frames, and one that differs
			in = &received{last: [3]string{"s-1", "codex", "/x"}}
		}
		var before [3]string
		if in != nil {
			before = in.last
		}
		got := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{SessionId: "before"}}}
		wire := bytes.Clone(b)
		if !decodeFrame(wire, got, in) {
			assert.Equal(t, "before", got.GetTurnEnded().GetSessionId(), "wire %d: changed though not read", i)
			if in != nil {
				assert.Equal(t, before, in.last, "wire %d: the last strings changed though not read", i)
			}
			continue
		}
		require.NoError(t, werr, "wire %d: read, but protobuf refuses it", i)
		assert.True(t, proto.Equal(want, got), "wire %d (mode %d): %v, protobuf reads %v", i, mode, got, want)
		assert.Empty(t, got.ProtoReflect().GetUnknown(), "wire %d", i)
		if msg := got.GetFrame().GetMessage(); len(msg) > 0 {
			at := -1
			for k := range wire {
				if &wire[k] == &msg[0] {
					at = k
				}
			}
			if in == nil {
				assert.Equal(t, -1, at, "wire %d: the message is the input's bytes", i)
			} else {
				require.GreaterOrEqual(t, at, 0, "wire %d: the message was copied", i)
				assert.Equal(t, len(msg), cap(msg), "wire %d: the message's capacity reaches past it", i)
			}
		}
		assert.Equal(t, b, wire, "wire %d: the input changed", i)
	}
}

// A stream's frames that repeat the previous frame's session id, dialect
// or cwd share its strings; one that changes them gets its own, which
// the next frame then shares.
func TestDecodeFrameSharesRepeatedStrings(t *testing.T) {
	enc := func(f *pb.AcpFrame) []byte {
		b, err := proto.Marshal(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: f}})
		require.NoError(t, err)
		return b
	}
	var in received
	read := func(f *pb.AcpFrame) *pb.AcpFrame {
		req := &pb.NormalizeRequest{}
		require.True(t, decodeFrame(enc(f), req, &in))
		return req.GetFrame()
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	first := read(&pb.AcpFrame{SessionId: "s-1", Dialect: "codex", Cwd: "/w", Message: []byte("{}")})
	second := read(&pb.AcpFrame{SessionId: "s-1", Dialect: "codex", Message: []byte("{}")})
	assert.True(t, same(first.SessionId, second.SessionId), "the session id was allocated again")
	assert.True(t, same(first.Dialect, second.Dialect), "the dialect was allocated again")
	assert.Empty(t, second.Cwd, "a cwd the frame does not have")
	third := read(&pb.AcpFrame{SessionId: "s-2", Dialect: "codex", Cwd: "/w", Message: []byte("{}")})
	assert.Equal(t, "s-2", third.SessionId)
	assert.True(t, same(first.Cwd, third.Cwd), "the cwd was allocated again")
	fourth := read(&pb.AcpFrame{SessionId: "s-2", Message: []byte("{}")})
	assert.True(t, same(third.SessionId, fourth.SessionId), "the new session id was allocated again")
	assert.Equal(t, [3]string{"s-2", "codex", "/w"}, in.last)
}

func FuzzDecodeFrame(f *testing.F) {
	for _, b := range frameWires(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecodeFrame(t, 0, b)
	})
}

// The codec reads a frame that arrives in pieces as one read whole.
func TestCodecReadsFrameInPieces(t *testing.T) {
	msg := bytes.Repeat([]byte(`{"a":1}`), 5000)
	b, err := proto.Marshal(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Sequence: 3, Message: msg}}})
	require.NoError(t, err)
	var data mem.BufferSlice
	for p := b; len(p) > 0; {
		n := min(len(p), 4096)
		data = append(data, mem.SliceBuffer(bytes.Clone(p[:n])))
		p = p[n:]
	}
	req := &pb.NormalizeRequest{}
	require.NoError(t, newTolerantCodec().Unmarshal(data, req))
	assert.Equal(t, "s", req.GetFrame().GetSessionId())
	assert.Equal(t, uint64(3), req.GetFrame().GetSequence())
	assert.Equal(t, msg, req.GetFrame().GetMessage())
}
