package service

import (
	"bytes"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// TestScratchTiers checks the sizes scratch hands out: the length asked,
// in a power-of-two array at most twice that (1 KiB at least), and past
// the largest tier an array of its own.
func TestScratchTiers(t *testing.T) {
	for _, tc := range []struct{ n, cap int }{
		{1, 1 << 10},
		{1 << 10, 1 << 10},
		{1<<10 + 1, 2 << 10},
		{40 << 10, 64 << 10},
		{1 << 20, 1 << 20},
		{1<<20 + 1, 2 << 20},
		{16 << 20, 16 << 20},
		{16<<20 + 1, 16<<20 + 1},
	} {
		b := scratch.Get(tc.n)
		require.Len(t, *b, tc.n)
		require.Equal(t, tc.cap, cap(*b), "Get(%d)", tc.n)
		scratch.Put(b)
	}
	// A buffer that is not one of its tiers' is not taken back.
	odd := make([]byte, 3000)
	scratch.Put(&odd)
	require.Len(t, odd, 3000)
}

// dirtyScratch leaves 0xFF in every byte of buffers of scratch's tiers
// for n bytes, as an earlier message would.
func dirtyScratch(n int) {
	var bufs []*[]byte
	for range 4 {
		b := scratch.Get(n)
		*b = (*b)[:cap(*b)]
		for i := range *b {
			(*b)[i] = 0xFF
		}
		bufs = append(bufs, b)
	}
	for _, b := range bufs {
		scratch.Put(b)
	}
}

// TestCodecDirtyBuffers checks that what tolerantCodec encodes and decodes
// through scratch's uncleared buffers is exactly what protobuf encodes and
// decodes: no byte an earlier message left in a buffer reaches the wire or
// a request.
func TestCodecDirtyBuffers(t *testing.T) {
	c := newTolerantCodec()
	for _, n := range []int{2 << 10, 40 << 10, 300 << 10} {
		resp := &pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: &pb.ShellExec{
			SessionId: "s", ToolCallId: "c", Revision: 2, Command: "yes | head",
			Output: &pb.ShellText{Text: strings.Repeat("y\n", n/2)},
		}}}
		want, err := proto.Marshal(resp)
		require.NoError(t, err)
		dirtyScratch(len(want))
		got, err := c.Marshal(resp)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got.Materialize()), "%d bytes: the encoding differs from protobuf's", len(want))
		got.Free()

		req := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
			SessionId: "s", Sequence: 7, Message: bytes.Repeat([]byte("x"), n),
		}}}
		wire, err := proto.Marshal(req)
		require.NoError(t, err)
		// In three pieces, as a message read from several HTTP/2 frames,
		// so that the codec joins them in a buffer of its pool.
		third := len(wire) / 3
		pieces := mem.BufferSlice{mem.SliceBuffer(wire[:third]), mem.SliceBuffer(wire[third : 2*third]), mem.SliceBuffer(wire[2*third:])}
		dirtyScratch(len(wire))
		var back pb.NormalizeRequest
		require.NoError(t, c.Unmarshal(pieces, &back))
		require.True(t, proto.Equal(req, &back), "%d bytes: the request read back differs", len(wire))
	}
}

// TestTransportDirtyBuffers: the server's transport reads requests into
// buffers of scratch and writes answers through them. Buffers an earlier
// user left full (of 0xFF) change nothing a client is sent: a 75 KB
// output, several HTTP/2 frames each way, comes back byte for byte.
func TestTransportDirtyBuffers(t *testing.T) {
	for n := 1 << 10; n <= 1<<20; n <<= 1 {
		dirtyScratch(n)
	}
	st := newHarness(t, DefaultConfig()).open()
	out := strings.Repeat("line of output\n", 5000)
	st.send("s1", openCall("c1", "make test"))
	st.send("s1", delta("c1", out))
	st.send("s1", finish("c1", 0))
	var text string
	for {
		x := st.exec()
		switch x.GetOutput().GetMode() {
		case pb.TextMode_TEXT_MODE_APPEND:
			text += x.GetOutput().GetText()
		case pb.TextMode_TEXT_MODE_REPLACE:
			text = x.GetOutput().GetText()
		}
		require.Equal(t, "make test", x.GetCommand())
		if x.GetState() == pb.ShellState_SHELL_STATE_ENDED {
			require.Equal(t, pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED, x.GetOutcome())
			break
		}
	}
	require.True(t, text == out, "the output came back as %d bytes, %d of them 0xFF", len(text), strings.Count(text, "\xff"))
}
