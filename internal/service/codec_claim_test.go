package service

import (
	"fmt"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ghosts is a claim of revision rev of n calls named ghost-0, ghost-1, ...
func ghosts(n int, rev uint32) map[string]uint32 {
	m := make(map[string]uint32, n)
	for i := range n {
		m[fmt.Sprintf("ghost-%d", i)] = rev
	}
	return m
}

// A claim naming more calls than the bound is refused (INVALID_ARGUMENT
// naming the field, the count and the bound) and its frame is not
// applied; the stream and the other sessions go on, and the frame sent
// again without it applies. A claim at the bound is checked as ever.
func TestClaimOverTheBoundIsRefused(t *testing.T) {
	cfg := DefaultConfig()
	bound := maxClaim(cfg.MaxCallsPerSession)
	require.Equal(t, 65536, bound, "the bound docs/contract.md states at the defaults")
	h := newHarness(t, cfg)
	st := h.open()
	st.control(skipApplied())
	st.control(heldFrame("s1", 1, openCall("c1", "make"), nil, 0))
	require.EqualValues(t, 1, st.exec().GetRevision())

	over := ghosts(bound, 1)
	over["c1"] = 1 // the client holds it: not what makes it refused
	st.control(heldFrame("s1", 2, delta("c1", "one "), over, 1))
	fe := st.frameError()
	assert.EqualValues(t, codes.InvalidArgument, fe.GetCode(), "%v", fe)
	assert.EqualValues(t, 2, fe.GetSequence())
	assert.Equal(t, "s1", fe.GetSessionId())
	for _, s := range []string{"held_revisions", fmt.Sprint(bound + 1), fmt.Sprint(bound), "--max-calls-per-session", "not applied"} {
		assert.Contains(t, fe.GetMessage(), s)
	}
	assert.Less(t, len(fe.GetMessage()), 1024)
	assert.Equal(t, float64(1), testutil.ToFloat64(h.svc.sessions.m.frameErrors.WithLabelValues(codes.InvalidArgument.String())))

	// Another session goes on; the refused frame was not applied: sent
	// again without the claim, it makes revision 2 with its output.
	st.control(heldFrame("s2", 1, openCall("c1", "ls"), nil, 0))
	require.EqualValues(t, 1, st.exec().GetRevision())
	st.control(heldFrame("s1", 2, delta("c1", "one "), nil, 0))
	x := st.exec()
	assert.EqualValues(t, 2, x.GetRevision())
	assert.Equal(t, "one ", x.GetOutput().GetText())

	// At the bound the claim is read and checked: the ghosts are calls
	// the session never had, a loss.
	at := ghosts(bound-1, 1)
	at["c1"] = 2
	st.control(heldFrame("s1", 3, delta("c1", "two "), at, 2))
	fe = st.frameError()
	assert.EqualValues(t, codes.DataLoss, fe.GetCode(), "%v", fe)
	assert.Contains(t, fe.GetMessage(), "the session has none")
}

// The codec counts a claim's entries in the wire bytes: one over the
// bound is never decoded (a handful of allocations, against two or more
// per entry), whether its entries come in one frame field or are spread
// over several (protobuf merges them), and in one buffer or in pieces.
// What it returns carries the frame's session and sequence, no claim and
// no message, and the mark that makes the stream refuse it.
func TestCodecDoesNotDecodeAClaimOverTheBound(t *testing.T) {
	const bound = 1000
	c := newTolerantCodec()
	c.claims = bound
	one, err := proto.Marshal(heldFrame("s1", 7, openCall("c1", "ls"), ghosts(bound+1, 1), 3))
	require.NoError(t, err)
	// The same claim in two halves: the frame field twice.
	a, err := proto.Marshal(heldFrame("s1", 7, openCall("c1", "ls"), ghosts(bound/2, 1), 0))
	require.NoError(t, err)
	rest := ghosts(bound+1, 2)
	for id := range ghosts(bound/2, 1) {
		delete(rest, id)
	}
	b, err := proto.Marshal(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{Sequence: 7, HeldRevisions: rest}}})
	require.NoError(t, err)
	split := append(a, b...)
	for name, wire := range map[string][]byte{"one field": one, "two fields": split} {
		t.Run(name, func(t *testing.T) {
			for _, pieces := range []mem.BufferSlice{{mem.SliceBuffer(wire)}, chop(wire, 4<<10)} {
				req := new(pb.NormalizeRequest)
				allocs := testing.AllocsPerRun(5, func() {
					req = new(pb.NormalizeRequest)
					require.NoError(t, c.Unmarshal(pieces, req))
				})
				assert.Less(t, allocs, 20.0, "allocations to read a claim of %d entries", bound+1)
				f := req.GetFrame()
				require.NotNil(t, f)
				assert.Equal(t, "s1", f.GetSessionId())
				assert.EqualValues(t, 7, f.GetSequence())
				assert.Empty(t, f.GetHeldRevisions())
				assert.Empty(t, f.GetMessage())
				fe := codecRefusal(req, 256, bound).GetFrameError()
				require.NotNil(t, fe)
				assert.Contains(t, fe.GetMessage(), fmt.Sprintf("held_revisions names %d calls", bound+1))
			}
		})
	}
	// At the bound, the request is read whole, and nothing refuses it.
	at, err := proto.Marshal(heldFrame("s1", 8, openCall("c1", "ls"), ghosts(bound, 1), 3))
	require.NoError(t, err)
	req := new(pb.NormalizeRequest)
	require.NoError(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(at)}, req))
	assert.Len(t, req.GetFrame().GetHeldRevisions(), bound)
	assert.EqualValues(t, 3, req.GetFrame().GetHeldSequence())
	assert.Nil(t, codecRefusal(req, 256, bound))
	assert.Empty(t, req.ProtoReflect().GetUnknown())
}

// chop splits b into pieces of n bytes.
func chop(b []byte, n int) mem.BufferSlice {
	var out mem.BufferSlice
	for len(b) > 0 {
		k := min(len(b), n)
		out = append(out, mem.SliceBuffer(b[:k]))
		b = b[k:]
	}
	return out
}

// claimEntries counts what protobuf would decode: malformed wire bytes
// count what was read before them (proto.Unmarshal then refuses them).
func TestClaimEntriesCountsTheWire(t *testing.T) {
	wire, err := proto.Marshal(heldFrame("s", 1, "{}", ghosts(10, 1), 0))
	require.NoError(t, err)
	assert.Equal(t, 10, claimEntries(wire))
	assert.Equal(t, 20, claimEntries(append(wire, wire...)))
	turn, err := proto.Marshal(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_TurnEnded{TurnEnded: &pb.TurnEnded{SessionId: "s"}}})
	require.NoError(t, err)
	assert.Zero(t, claimEntries(turn))
	assert.LessOrEqual(t, claimEntries(wire[:len(wire)-3]), 10)
	// A frame field of another wire type is not a frame.
	bad := protowire.AppendTag(nil, 1, protowire.VarintType)
	bad = protowire.AppendVarint(bad, 5)
	assert.Zero(t, claimEntries(bad))
	held := (&pb.AcpFrame{}).ProtoReflect().Descriptor().Fields().ByName("held_revisions")
	assert.EqualValues(t, held.Number(), frameHeld, "the field claimEntries counts")
	// It runs on every request decodeFrame leaves to protobuf (a claim, an
	// unusual form): it allocates nothing.
	assert.Zero(t, testing.AllocsPerRun(100, func() { claimEntries(wire) }))
}

// The mark the codec sets on a claim over the bound is its own: sent by a
// client, it is dropped, and the request is read as it is.
func TestClaimMarkSentByAClientIsDropped(t *testing.T) {
	wire, err := proto.Marshal(heldFrame("s", 1, "{}", ghosts(3, 1), 0))
	require.NoError(t, err)
	wire = protowire.AppendTag(wire, claimOverField, protowire.VarintType)
	wire = protowire.AppendVarint(wire, 1<<20)
	req := new(pb.NormalizeRequest)
	require.NoError(t, newTolerantCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, req))
	assert.Len(t, req.GetFrame().GetHeldRevisions(), 3)
	assert.False(t, codecMarked(req))
	assert.Nil(t, codecRefusal(req, 256, 1<<16))
}
