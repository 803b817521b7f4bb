package service

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The fields marshal.go writes, by message: number, kind and presence.
// A field the contract adds to one of these messages fails
// TestShellExecWireFields until marshal.go writes it.
var shellExecWireFields = map[protoreflect.FullName][]string{
	"acpnorm.v1.NormalizeResponse": {"1 message shell_exec oneof", "2 message frame_error oneof"},
	"acpnorm.v1.ShellExec": {
		"1 string session_id", "2 string tool_call_id", "3 uint32 revision", "4 string dialect",
		"5 string command", "6 string cwd", "7 string description", "8 enum state", "9 enum outcome",
		"10 int32 exit_code optional", "11 string signal", "12 bool timed_out", "13 message output",
		"14 message stdout", "15 message stderr", "16 string approval_reason", "17 bool awaiting_approval",
		"18 bool background", "19 string outcome_reason", "20 uint64 sequence", "21 string terminal_id",
		"22 string agent_version",
	},
	"acpnorm.v1.ShellText": {"1 string text", "2 enum mode", "3 bool truncated", "4 int64 total_bytes"},
}

func TestShellExecWireFields(t *testing.T) {
	for _, m := range []proto.Message{&pb.NormalizeResponse{}, &pb.ShellExec{}, &pb.ShellText{}} {
		d := m.ProtoReflect().Descriptor()
		var got []string
		fs := d.Fields()
		for i := range fs.Len() {
			f := fs.Get(i)
			desc := fmt.Sprintf("%d %s %s", f.Number(), f.Kind(), f.Name())
			switch {
			case f.ContainingOneof() != nil && !f.ContainingOneof().IsSynthetic():
				desc += " oneof"
			case f.HasPresence() && f.Kind() != protoreflect.MessageKind:
				desc += " optional"
			}
			got = append(got, desc)
		}
		assert.Equal(t, shellExecWireFields[d.FullName()], got, "%s: marshal.go writes these fields", d.FullName())
	}
}

// checkWire says whether the hand encoding of a response holding x is
// protobuf's, byte for byte, with protobuf's size, or refused where
// protobuf refuses it.
func checkWire(t *testing.T, x *pb.ShellExec) {
	t.Helper()
	r := &pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: x}}
	want, werr := proto.Marshal(r)
	require.Same(t, x, handShellExec(r))
	got, ok := appendResponse(nil, x, shellExecSize(x), false)
	if werr != nil {
		assert.False(t, ok, "protobuf refused it (%v); the hand encoding did not", werr)
		return
	}
	require.True(t, ok, "the hand encoding refused what protobuf encodes")
	if !bytes.Equal(want, got) {
		t.Fatalf("hand encoding differs from protobuf's\n got %x\nwant %x\nof %v", got, want, x)
	}
	assert.Equal(t, len(want), responseSize(x))
	assert.Equal(t, int64(len(want)), toSend(r).n)
	// Through the codec, as gRPC sends it, alone and as the send loop
	// gives it, with the size and verdict of when it was queued.
	bs, err := newTolerantCodec().Marshal(r)
	require.NoError(t, err)
	assert.Equal(t, want, bs.Materialize())
	bs.Free()
	it := toSend(r)
	assert.True(t, it.hand)
	bs, err = newTolerantCodec().Marshal(&sized{it.r, int(it.n), it.hand, false})
	require.NoError(t, err)
	assert.Equal(t, want, bs.Materialize())
	bs.Free()
	// And as the send loop gives a revision the stream's feeder made,
	// whose texts are not read for UTF-8 (they are valid here).
	bs, err = newTolerantCodec().Marshal(&sized{it.r, int(it.n), it.hand, true})
	require.NoError(t, err)
	assert.Equal(t, want, bs.Materialize(), "texts taken as valid")
	bs.Free()
}

// A revision changed after it was queued is sent as it is then, not with
// the size it was queued with: the codec sees the length differ and sizes
// it again. (None is changed; this holds the check that says so.)
func TestSizedRevisionChangedAfterQueueing(t *testing.T) {
	codec := newTolerantCodec()
	for _, change := range []func(x *pb.ShellExec){
		func(x *pb.ShellExec) { x.Output.Text += "more" },
		func(x *pb.ShellExec) { x.Output.Text = x.Output.Text[:3] },
		func(x *pb.ShellExec) { x.Command = "" },
		func(x *pb.ShellExec) { x.Stderr = &pb.ShellText{Text: strings.Repeat("e", 200)} },
		func(x *pb.ShellExec) { x.Output.Text = strings.Repeat("o", 100000) }, // past gRPC's pooling threshold
		func(x *pb.ShellExec) { x.Output.Text = "bad \xff" },                  // protobuf refuses it
	} {
		x := &pb.ShellExec{SessionId: "s", ToolCallId: "c", Command: "ls -la", Output: &pb.ShellText{Text: strings.Repeat("x", 120), Mode: 2}}
		r := &pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: x}}
		it := toSend(r)
		require.True(t, it.hand)
		change(x)
		want, werr := proto.Marshal(r)
		bs, err := codec.Marshal(&sized{it.r, int(it.n), it.hand, false})
		if werr != nil {
			require.Error(t, err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, want, bs.Materialize())
		bs.Free()
	}
}

// execSizeOf undoes responseSize's prefix at every length of it.
func TestExecSizeOf(t *testing.T) {
	for _, n := range []int{0, 1, 126, 127, 128, 129, 16382, 16383, 16384, 16385, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, 1 << 30} {
		size := tag1 + protowire.SizeBytes(n)
		require.Equal(t, n, execSizeOf(size), "size %d", size)
	}
}

func TestShellExecWireIsProtobuf(t *testing.T) {
	zero, neg, big := int32(0), int32(-1), int32(math.MaxInt32)
	for _, x := range []*pb.ShellExec{
		{},
		{ExitCode: &zero},
		{ExitCode: &neg, State: pb.ShellState_SHELL_STATE_ENDED, Outcome: pb.ShellOutcome(-3)},
		{ExitCode: &big, Revision: math.MaxUint32, Sequence: math.MaxUint64},
		{Output: &pb.ShellText{}},
		{Output: &pb.ShellText{TotalBytes: -1, Mode: pb.TextMode(-7)}, Stderr: &pb.ShellText{Text: "x"}},
		{SessionId: "s", ToolCallId: "c", Dialect: "d", Command: "ls", Cwd: "/", Description: "list",
			Signal: "SIGKILL", TimedOut: true, ApprovalReason: "ask", AwaitingApproval: true, Background: true,
			OutcomeReason: "because", TerminalId: "t", AgentVersion: "1.2.3",
			Stdout: &pb.ShellText{Text: string(bytes.Repeat([]byte("é\x00\r\x1b[0m"), 20000)), Mode: 2, Truncated: true, TotalBytes: 1 << 40}},
		{Command: "bad \xff utf-8"},
		{Output: &pb.ShellText{Text: "bad \xc3"}},
		{AgentVersion: "\xed\xa0\x80"}, // a surrogate: not valid UTF-8
	} {
		checkWire(t, x)
	}
	// Unknown fields go to protobuf.
	x := &pb.ShellExec{Command: "ls"}
	x.ProtoReflect().SetUnknown(protoreflect.RawFields{0xa8, 0x1f, 1})
	assert.Nil(t, handShellExec(&pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: x}}))
	x = &pb.ShellExec{Output: &pb.ShellText{Text: "a"}}
	x.Output.ProtoReflect().SetUnknown(protoreflect.RawFields{0xa8, 0x1f, 1})
	assert.Nil(t, handShellExec(&pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: x}}))
	assert.Nil(t, handShellExec(&pb.NormalizeResponse{Kind: &pb.NormalizeResponse_FrameError{FrameError: &pb.FrameError{}}}))
	assert.Nil(t, handShellExec(&pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{}}))
	assert.Nil(t, handShellExec(&pb.NormalizeResponse{}))

	// Random revisions: every field set or not, long strings whose
	// lengths take several varint bytes.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		checkWire(t, randomShellExec(rng))
	}
}

func randomShellExec(rng *rand.Rand) *pb.ShellExec {
	str := func() string {
		switch rng.IntN(6) {
		case 0, 1:
			return ""
		case 2:
			return "é"
		case 3:
			return string(bytes.Repeat([]byte{'a'}, rng.IntN(1<<rng.IntN(18))))
		case 4:
			if rng.IntN(20) == 0 {
				return "\xff"
			}
			return "ls -la | grep x"
		}
		return string(rune(rng.IntN(0x10ffff)))
	}
	num := func() uint64 {
		if rng.IntN(3) == 0 {
			return 0
		}
		return rng.Uint64() >> rng.IntN(64)
	}
	text := func() *pb.ShellText {
		if rng.IntN(3) == 0 {
			return nil
		}
		return &pb.ShellText{Text: str(), Mode: pb.TextMode(int32(num())), Truncated: rng.IntN(2) == 0, TotalBytes: int64(num())}
	}
	x := &pb.ShellExec{
		SessionId: str(), ToolCallId: str(), Revision: uint32(num()), Dialect: str(), Command: str(),
		Cwd: str(), Description: str(), State: pb.ShellState(int32(num())), Outcome: pb.ShellOutcome(int32(num())),
		Signal: str(), TimedOut: rng.IntN(2) == 0, Output: text(), Stdout: text(), Stderr: text(),
		ApprovalReason: str(), AwaitingApproval: rng.IntN(2) == 0, Background: rng.IntN(2) == 0,
		OutcomeReason: str(), Sequence: num(), TerminalId: str(), AgentVersion: str(),
	}
	if rng.IntN(2) == 0 {
		c := int32(num())
		x.ExitCode = &c
	}
	return x
}

func FuzzShellExecWire(f *testing.F) {
	f.Add("s", "ls", "out", "é\xff", int32(-1), uint64(7), int64(-2), uint8(0xff), true)
	f.Add("", "", "", "", int32(0), uint64(0), int64(0), uint8(0), false)
	f.Fuzz(func(t *testing.T, a, b, c, d string, code int32, n uint64, total int64, set uint8, flag bool) {
		x := &pb.ShellExec{SessionId: a, ToolCallId: d, Command: b, Revision: uint32(n), Sequence: n,
			State: pb.ShellState(code), Outcome: pb.ShellOutcome(int32(n)), TimedOut: flag,
			Background: !flag, AwaitingApproval: flag, OutcomeReason: d, TerminalId: c, AgentVersion: a}
		if set&1 != 0 {
			x.ExitCode = &code
		}
		if set&2 != 0 {
			x.Output = &pb.ShellText{Text: c, Mode: pb.TextMode(code), Truncated: flag, TotalBytes: total}
		}
		if set&4 != 0 {
			x.Stdout = &pb.ShellText{Text: d, TotalBytes: total}
		}
		if set&8 != 0 {
			x.Stderr = &pb.ShellText{}
		}
		if set&16 != 0 {
			x.Cwd, x.Description, x.Dialect, x.Signal, x.ApprovalReason = c, d, a, b, c
		}
		checkWire(t, x)
	})
}

// A small response is handed to gRPC in two allocations, its bytes and one
// holding the BufferSlice with its Buffer, and reads as protobuf's
// encoding through every method gRPC uses on it.
func TestSmallResponseAllocations(t *testing.T) {
	codec := newTolerantCodec()
	zero := int32(0)
	for _, r := range []*pb.NormalizeResponse{
		{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: &pb.ShellExec{SessionId: "s", ToolCallId: "toolu_01", Revision: 3, Command: "ls -la",
			State: pb.ShellState_SHELL_STATE_ENDED, ExitCode: &zero, Output: &pb.ShellText{Text: "a\r\nb\x00", Mode: 2}}}},
		{Kind: &pb.NormalizeResponse_FrameError{FrameError: &pb.FrameError{Message: "no"}}},
	} {
		want, err := proto.Marshal(r)
		require.NoError(t, err)
		_ = toSend(r).n
		bs, err := codec.Marshal(r)
		require.NoError(t, err)
		require.Len(t, bs, 1)
		assert.Equal(t, want, bs.Materialize())
		assert.Equal(t, len(want), bs.Len())
		assert.Equal(t, want, bs[0].ReadOnlyData())
		bs.Ref()
		bs.Free()
		bs.Free()
		assert.Equal(t, want, bs.Materialize(), "freeing frees nothing of it")
		if len(want) > 2 {
			r := bs.Reader()
			head := make([]byte, 2)
			_, err = r.Read(head)
			require.NoError(t, err)
			rest := make([]byte, len(want))
			n, _ := r.Read(rest)
			assert.Equal(t, want, append(head, rest[:n]...))
		}
		allocs := testing.AllocsPerRun(100, func() {
			bs, err := codec.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			bs.Free()
		})
		assert.Equal(t, 2.0, allocs, "%T", r.Kind)
	}
}
