package service

import (
	"fmt"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// badFrame is a NormalizeRequest (on the wire) whose frame, of sequence
// 7, carries n times each of the string fields nums with a value that is
// not valid UTF-8 (frameHeld: n claim entries whose keys are not).
func badFrame(n int, nums ...protowire.Number) []byte {
	var frame []byte
	for i := range n {
		for _, num := range nums {
			frame = protowire.AppendTag(frame, num, protowire.BytesType)
			if num != frameHeld {
				frame = protowire.AppendString(frame, "\xff")
				continue
			}
			var entry []byte
			entry = protowire.AppendTag(entry, 1, protowire.BytesType)
			entry = protowire.AppendString(entry, fmt.Sprintf("c%d\xff", i))
			entry = protowire.AppendTag(entry, 2, protowire.VarintType)
			entry = protowire.AppendVarint(entry, 1)
			frame = protowire.AppendBytes(frame, entry)
		}
	}
	frame = protowire.AppendTag(frame, frameSequence, protowire.VarintType)
	frame = protowire.AppendVarint(frame, 7)
	b := protowire.AppendTag(nil, requestFrame, protowire.BytesType)
	return protowire.AppendBytes(b, frame)
}

// A request whose fields are not valid UTF-8 is answered with a FrameError
// naming each such field once, however often it repeats them: the answer
// stays small (it was six times the request, 90 MB for 5,000,000
// repetitions of frame.session_id).
func TestInvalidUTF8RepeatedFieldsNamedOnce(t *testing.T) {
	c := newTolerantCodec()
	for _, tc := range []struct {
		n      int
		nums   []protowire.Number
		fields []string
	}{
		{1_000_000, []protowire.Number{frameSessionID}, []string{"frame.session_id"}},
		{1_000_000, []protowire.Number{frameDialect}, []string{"frame.dialect"}},
		{1 << 16, []protowire.Number{frameHeld}, []string{"frame.held_revisions.key"}},
		{50_000, []protowire.Number{frameCwd, frameHeld, frameSessionID, frameDialect},
			[]string{"frame.cwd", "frame.held_revisions.key", "frame.session_id", "frame.dialect"}},
	} {
		t.Run(strings.Join(tc.fields, "+"), func(t *testing.T) {
			wire := badFrame(tc.n, tc.nums...)
			req := new(pb.NormalizeRequest)
			require.NoError(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, req))
			fe := codecRefusal(req, 256, maxClaim(1024)).GetFrameError()
			require.NotNil(t, fe)
			assert.EqualValues(t, 7, fe.GetSequence())
			assert.EqualValues(t, codes.InvalidArgument, fe.GetCode())
			msg := fe.GetMessage()
			require.LessOrEqual(t, len(msg), 1024, "a message of %d bytes for a request of %d", len(msg), len(wire))
			assert.Contains(t, msg, "request 7: "+strings.Join(tc.fields, ", ")+" ")
			for _, f := range tc.fields {
				assert.Equal(t, 1, strings.Count(msg, f+","+" ")+strings.Count(msg, f+" "), "%s named once in %q", f, msg)
			}
			assert.Contains(t, msg, "not valid UTF-8")
		})
	}
}

// Over a stream too: the FrameError for a request repeating an invalid
// session id stays small, and the stream goes on.
func TestInvalidUTF8RepeatedFieldOverTheStream(t *testing.T) {
	st, _, _ := rawStream(t, DefaultServerOptions())
	require.NoError(t, st.SendMsg(badFrame(200_000, frameSessionID)))
	good, _ := proto.Marshal(frameReq("s", 9, openCall("c2", "true")))
	require.NoError(t, st.SendMsg(good))
	var r pb.NormalizeResponse
	require.NoError(t, st.RecvMsg(&r))
	fe := r.GetFrameError()
	require.NotNil(t, fe, "%v", &r)
	assert.EqualValues(t, 7, fe.GetSequence())
	require.LessOrEqual(t, proto.Size(&r), 1024, "an answer of %d bytes", proto.Size(&r))
	assert.Contains(t, fe.GetMessage(), "frame.session_id is not valid UTF-8")
	require.NoError(t, st.RecvMsg(&r))
	assert.Equal(t, "c2", r.GetShellExec().GetToolCallId(), "%v", &r)
}

// Past eight fields, the list names the first eight found and counts the
// rest.
func TestInvalidUTF8FieldListCapped(t *testing.T) {
	names := []string{"session_id", "tool_call_id", "dialect", "command", "cwd", "description", "signal", "approval_reason", "outcome_reason", "terminal_id"}
	x := &pb.ShellExec{}
	m := x.ProtoReflect()
	for _, name := range names {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
		require.NotNil(t, fd, name)
		m.Set(fd, protoreflect.ValueOfString("P"))
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(x)
	require.NoError(t, err)
	b = []byte(strings.ReplaceAll(string(b), "P", "\xff"))
	var bad badFields
	fixed, err := bad.valid(nil, b, m.Descriptor(), "")
	require.NoError(t, err)
	var back pb.ShellExec
	require.NoError(t, proto.Unmarshal(fixed, &back))
	assert.Equal(t, "\uFFFD", back.GetCommand())
	assert.Equal(t, strings.Join(names[:8], ", ")+" and 2 more", bad.String())
}

// Making a request valid allocates for the fields of the schema and the
// request's size, not for each occurrence of a field; the bad runs become
// U+FFFD as strings.ToValidUTF8 makes them.
func TestInvalidUTF8ValidAllocations(t *testing.T) {
	wire := badFrame(50_000, frameCwd, frameHeld, frameSessionID, frameDialect)
	md := (&pb.NormalizeRequest{}).ProtoReflect().Descriptor()
	allocs := testing.AllocsPerRun(3, func() {
		var bad badFields
		_, err := bad.valid(make([]byte, 0, len(wire)), wire, md, "")
		require.NoError(t, err)
	})
	assert.Less(t, allocs, 50.0)
	for _, s := range []string{"", "a", "\xff", "a\xff\xfeb", "\xffa\xff", "\uFFFD\xff", "é\xc3", "\xed\xa0\x80x"} {
		assert.Equal(t, strings.ToValidUTF8(s, "\uFFFD"), string(appendValid(nil, []byte(s))), "%q", s)
		field := lengthBefore(appendValid(nil, []byte(s)), 0) // the length written is the valid text's
		v, n := protowire.ConsumeBytes(field)
		assert.Equal(t, len(field), n, "%q", s)
		assert.Equal(t, strings.ToValidUTF8(s, "\uFFFD"), string(v), "%q", s)
	}
}
