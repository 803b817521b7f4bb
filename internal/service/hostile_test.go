package service

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

func skipApplied() *pb.NormalizeRequest {
	return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{SkipAppliedSequences: true}}}
}

func heldFrame(sid string, seq uint64, msg string, held map[string]uint32, heldSeq uint64) *pb.NormalizeRequest {
	return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: sid, Sequence: seq, Message: []byte(msg), HeldRevisions: held, HeldSequence: heldSeq}}}
}

// A hostile client states that it holds a revision of a call no call can
// reach (up to the largest uint32). Whatever it claims, the revisions of
// its calls stay numbers from 1 up that never go back: a claim past
// normalize.MaxHeldRevision is refused with INVALID_ARGUMENT naming the
// call and the limit, and changes nothing; one at the limit is a floor
// like any other.
func TestHostileHeldRevisionNumbers(t *testing.T) {
	msgs := []string{openCall("c1", "ls"), delta("c1", "a"), delta("c1", "b"), finish("c1", 0), delta("c1", "c")}
	for _, c := range []struct {
		name    string
		claim   uint32
		refused bool
	}{
		{"largest uint32", math.MaxUint32, true},
		{"one past the limit", 1<<31 + 1, true},
		{"at the limit", 1 << 31, false},
		{"zero states nothing", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newHarness(t, DefaultConfig()).open()
			st.control(skipApplied())
			st.control(heldFrame("s1", 1, msgs[0], nil, 0))
			require.EqualValues(t, 1, st.exec().GetRevision())
			st.control(heldFrame("s1", 2, msgs[1], map[string]uint32{"c1": c.claim}, 0))
			last := uint32(1)
			switch {
			case c.refused:
				fe := st.frameError()
				assert.EqualValues(t, codes.InvalidArgument, fe.GetCode(), "%v", fe)
				assert.Contains(t, fe.GetMessage(), `call "c1"`)
				assert.Contains(t, fe.GetMessage(), "2147483648")
				assert.Less(t, len(fe.GetMessage()), 1024)
			case c.claim == 0:
				x := st.exec()
				assert.EqualValues(t, 2, x.GetRevision())
				last = 2
			default:
				require.EqualValues(t, codes.DataLoss, st.frameError().GetCode())
			}
			// The client goes on (or rebuilds) from the first frame: every
			// revision it is handed is above the last one it was.
			for seq := uint64(1); seq <= uint64(len(msgs)); seq++ {
				st.control(heldFrame("s1", seq, msgs[seq-1], nil, 0))
			}
			require.NoError(t, st.s.CloseSend())
			for r := range st.replies {
				if x := r.GetShellExec(); x != nil {
					require.Greater(t, x.GetRevision(), last, "revision went back or restarted: %v", x)
					last = x.GetRevision()
				}
			}
			assert.Greater(t, last, uint32(1), "the call went on")
		})
	}
}

// A hostile held_revisions names calls whose ids are megabytes long (no
// call can have one: ids are bounded by MaxIDBytes), on many frames of one
// stream. The server refuses nothing for it (such an id is held by no
// call), but must not keep those ids: what a stream remembers of what its
// client holds is bounded in count and, through MaxIDBytes, in bytes.
func TestHostileHeldRevisionsWithEnormousIDsAreNotKept(t *testing.T) {
	const frames, idBytes = 24, 4 << 20
	st := newHarness(t, DefaultConfig()).open()
	st.control(skipApplied())
	st.control(heldFrame("s1", 1, openCall("c1", "ls"), nil, 0))
	require.EqualValues(t, 1, st.exec().GetRevision())
	before := heapInUse()
	for i := range frames {
		id := strings.Repeat(string(rune('a'+i)), idBytes)
		st.control(heldFrame("s1", uint64(2+i), delta("c1", "x"), map[string]uint32{id: 1, "": 0}, 0))
		x := st.exec()
		require.EqualValues(t, 2+i, x.GetRevision(), "the frame applies: an id no call can have holds nothing")
	}
	grown := int64(heapInUse()) - int64(before)
	assert.Less(t, grown, int64(16<<20), "the stream kept %d MiB of the %d MiB of call ids it was sent", grown>>20, frames*idBytes>>20)
	require.NoError(t, st.s.CloseSend())
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// A hostile client makes one stream refuse request after request of ever
// new sessions (each states a held_sequence its session never had, and
// gets DATA_LOSS) and never sends any of them again. What the stream
// remembers of those refusals, to hold back the requests sent behind
// each, is bounded (maxRefused sessions, the oldest forgotten first);
// the latest refusals still hold.
func TestHostileRefusalsPerStreamAreBounded(t *testing.T) {
	d := newDelivered()
	d.setOptions(&pb.StreamOptions{SkipAppliedSequences: true})
	var sent []*pb.NormalizeResponse
	f := &feeder{ss: &sessions{m: NewMetrics(nil)}, d: d, emit: func(r *pb.NormalizeResponse) error { sent = append(sent, r); return nil }}
	const sessions = 3 * 4096
	id := func(i int) string { return fmt.Sprintf("%0256d", i) }
	for i := range sessions {
		f.refuse(id(i), 5, normalize.DataLoss)
	}
	assert.LessOrEqual(t, len(f.refused), 4096, "refusals remembered by one stream")
	// Each refusal forgotten counts as a refusal by its limit.
	assert.Equal(t, float64(sessions-4096), testutil.ToFloat64(f.ss.m.refusals.WithLabelValues(limitRefusedSessions, DefaultIdentity)))
	for _, c := range []struct {
		session string
		seq     uint64
		behind  bool
	}{
		{id(sessions - 1), 6, true},  // the latest refusal holds
		{id(sessions - 2), 7, true},  // and the one before it
		{id(sessions - 1), 5, false}, // sent again from the refused request: lifted
		{id(sessions - 1), 6, false}, // and stays lifted
		{"other", 9, false},
	} {
		refused, err := f.behindRefusal(heldFrame(c.session, c.seq, "{}", nil, 0))
		require.NoError(t, err)
		assert.Equal(t, c.behind, refused, "request %d of session …%s", c.seq, c.session[len(c.session)-3:])
	}
	require.Len(t, sent, 2)
	assert.EqualValues(t, codes.DataLoss, sent[0].GetFrameError().GetCode())
	assert.Contains(t, sent[0].GetFrameError().GetMessage(), "send again from 5")
}

// A hostile client opens session after session, each with a first frame
// stating that it holds revisions of the most calls a claim may name
// (2 × MaxCallsPerSession), with ids as long as they may be, none of which
// the session has. Each is DATA_LOSS, and each session would remember a
// floor per call: unbounded by any limit but the sessions'. The floors
// the process keeps are bounded (4 × MaxCalls), and the DATA_LOSS of a
// session whose floors were not kept says so.
func TestHostileFloorsAcrossSessionsAreBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxCallsPerSession, cfg.MaxCalls = 64, 256 // floors: at most 256 a session, 1024 in the process
	h := newHarness(t, cfg)
	st := h.open()
	st.control(skipApplied())
	claim := func(s int) map[string]uint32 {
		m := map[string]uint32{}
		for i := range 2 * cfg.MaxCallsPerSession {
			id := fmt.Sprintf("g%d-%d-", s, i)
			m[id+strings.Repeat("z", cfg.MaxIDBytes-len(id))] = 1
		}
		return m
	}
	before := heapInUse()
	const sessions = 400
	var last *pb.FrameError
	for s := range sessions {
		st.control(heldFrame(fmt.Sprintf("s%d", s), 1, openCall("c1", "ls"), claim(s), 0))
		last = st.frameError()
		require.EqualValues(t, codes.DataLoss, last.GetCode())
	}
	grown := int64(heapInUse()) - int64(before)
	assert.Less(t, grown, int64(8<<20), "the process kept %d MiB for the floors of %d sessions", grown>>20, sessions)
	msg := last.GetMessage()
	tail := msg[max(0, len(msg)-400):]
	assert.True(t, strings.Contains(msg, "were not kept"), "the DATA_LOSS says the floors were not kept: …%s", tail)
	assert.True(t, strings.Contains(msg, "--max-calls"), "and names the bound: …%s", tail)
	// Each floor not kept counts: 1024 were kept (8 sessions' claims), the
	// rest were not.
	assert.Equal(t, float64((sessions-8)*2*cfg.MaxCallsPerSession),
		testutil.ToFloat64(h.svc.sessions.m.refusals.WithLabelValues(normalize.LimitLossFloors, DefaultIdentity)))
	assert.Less(t, len(last.GetMessage()), 20<<10)
	// The stream goes on.
	st.control(heldFrame("fine", 1, openCall("c1", "ls"), nil, 0))
	assert.EqualValues(t, 1, st.exec().GetRevision())
}

// A held_revisions whose call id is not valid UTF-8 (protobuf refuses to
// decode the request) is an INVALID_ARGUMENT naming the field, not
// applied; the stream and the session go on.
func TestHostileHeldRevisionsNotUTF8(t *testing.T) {
	st, _, _ := rawStream(t, DefaultServerOptions())
	opts, _ := proto.Marshal(skipApplied())
	require.NoError(t, st.SendMsg(opts))
	open, _ := proto.Marshal(heldFrame("s", 1, openCall("c1", "ls"), nil, 0))
	require.NoError(t, st.SendMsg(open))
	bad := withBytes(t, heldFrame("s", 2, delta("c1", "x"), map[string]uint32{"cPPq": 3}, 0), "cPPq", "c\xff\xfeq")
	require.NoError(t, st.SendMsg(bad))
	good, _ := proto.Marshal(heldFrame("s", 2, delta("c1", "y"), map[string]uint32{"c1": 1}, 1))
	require.NoError(t, st.SendMsg(good))
	var r pb.NormalizeResponse
	require.NoError(t, st.RecvMsg(&r))
	require.EqualValues(t, 1, r.GetShellExec().GetRevision(), "%v", &r)
	require.NoError(t, st.RecvMsg(&r))
	fe := r.GetFrameError()
	require.NotNil(t, fe, "%v", &r)
	assert.EqualValues(t, codes.InvalidArgument, fe.GetCode())
	assert.EqualValues(t, 2, fe.GetSequence())
	assert.Contains(t, fe.GetMessage(), "held_revisions")
	assert.Contains(t, fe.GetMessage(), "not valid UTF-8")
	require.NoError(t, st.RecvMsg(&r))
	x := r.GetShellExec()
	require.NotNil(t, x, "%v", &r)
	assert.EqualValues(t, 2, x.GetRevision())
	assert.Equal(t, "y", x.GetOutput().GetText(), "the refused frame changed nothing")
}
