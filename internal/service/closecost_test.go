package service

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store"
	"github.com/acpnorm/acpnorm/store/redisstore"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// loadCount is a store that counts what its loads read: of the keys that
// hold what a close kept (those starting with 0xFF 0 0), and of the
// others (the sessions').
type loadCount struct {
	store.Store
	mu                   sync.Mutex
	kept, keptBytes      int
	sessions, sessionsBy int
}

func (l *loadCount) Load(ctx context.Context, session string) (*store.Snapshot, error) {
	snap, err := l.Store.Load(ctx, session)
	if err != nil {
		return snap, err
	}
	n := len(snap.Header)
	for _, r := range snap.Records {
		n += len(r)
	}
	for _, s := range snap.Streams {
		n += len(s)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.HasPrefix(session, "\xff\x00\x00") {
		l.kept++
		l.keptBytes += n
	} else {
		l.sessions++
		l.sessionsBy += n
	}
	return snap, err
}

func (l *loadCount) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kept, l.keptBytes, l.sessions, l.sessionsBy = 0, 0, 0, 0
}

// closeResendCase makes a session of 30 calls of 10 KB of output each
// (open, two deltas of 5 KB, the exit: 120 frames) and its close, applied
// on one stream, and returns the stream maker, the round trips to the
// store the last stream made so far, and the requests.
func closeResendCase(t *testing.T, st store.Store) (func() (*feeder, *[]*pb.NormalizeResponse), func() int64, []*pb.NormalizeRequest) {
	cfg := DefaultConfig()
	cfg.Store = st
	ss := newSessions(cfg, NewMetrics(nil), nil)
	var trips *streamStats // the last stream's
	stream := func() (*feeder, *[]*pb.NormalizeResponse) {
		var out []*pb.NormalizeResponse
		d := newDelivered()
		d.setOptions(&pb.StreamOptions{SkipAppliedSequences: true})
		trips = &streamStats{}
		ctx := context.WithValue(context.Background(), streamStatsKey{}, trips)
		return ss.newFeeder(ctx, d, func(r *pb.NormalizeResponse) error { out = append(out, r); return nil }), &out
	}
	half := strings.Repeat("0123456789", 500)
	var reqs []*pb.NormalizeRequest
	for i := range 30 {
		id := fmt.Sprintf("c%02d", i)
		for _, m := range []string{openCall(id, "cat f"), delta(id, half), delta(id, half), finish(id, 0)} {
			reqs = append(reqs, &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: uint64(len(reqs) + 1), Message: []byte(m)}}})
		}
	}
	reqs = append(reqs, &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s1", Sequence: uint64(len(reqs) + 1)}}})
	first, _ := stream()
	for _, r := range reqs {
		_, err := first.handle(r, nil)
		require.NoError(t, err)
	}
	return stream, func() int64 { return trips.storeRoundTrips.Load() }, reqs
}

// endedOutput returns the bytes of output the ENDED revisions among out
// carry, and how many of them there are.
func endedOutput(out []*pb.NormalizeResponse) (bytes, n int) {
	for _, r := range out {
		if x := r.GetShellExec(); x.GetState() == pb.ShellState_SHELL_STATE_ENDED {
			bytes += len(x.GetOutput().GetText())
			n++
		}
	}
	return bytes, n
}

// A client that lost the answers of a closed session's last 100 requests
// sends them again one by one on a new stream: what the close kept (30
// ENDED revisions of 10 KB) is read from the store once for the stream,
// not once per request (before, 100 times: 30 MB read to hand on 300
// KB), and each request loads the closed session once (before, twice for
// a frame whose answer is kept). Each call's ENDED revision still comes,
// once.
func TestCloseResentReadsWhatItKeptOncePerStream(t *testing.T) {
	rs, err := redisstore.Open(testredis.Start(t))
	require.NoError(t, err)
	t.Cleanup(func() { rs.Close() })
	st := &loadCount{Store: rs}
	stream, _, reqs := closeResendCase(t, st)

	st.reset()
	again, out := stream()
	resent := reqs[len(reqs)-100:]
	for _, r := range resent {
		_, err := again.handle(r, nil)
		require.NoError(t, err)
	}
	handed, n := endedOutput(*out)
	assert.Equal(t, 30, n, "each call's ENDED revision, once")
	assert.Equal(t, 30*10000, handed)
	t.Logf("kept revisions: %d loads, %d bytes; sessions: %d loads, %d bytes; handed on %d bytes", st.kept, st.keptBytes, st.sessions, st.sessionsBy, handed)
	assert.LessOrEqual(t, st.kept, 1, "what the close kept, read once for the stream")
	assert.LessOrEqual(t, st.keptBytes, handed+handed/2)
	assert.LessOrEqual(t, st.sessions, len(resent), "the closed session, loaded once a request")

	// Another stream (a client that reconnected again) reads it again:
	// it was handed nothing yet.
	st.reset()
	other, out := stream()
	_, err = other.handle(resent[0], nil)
	require.NoError(t, err)
	_, n = endedOutput(*out)
	assert.Equal(t, 30, n)
	assert.Equal(t, 1, st.kept)
}

// redisSent returns what the Redis at url sent its clients so far, in
// bytes, and the commands it processed, less what asking costs.
func redisSent(t *testing.T, url string) func() (bytes, cmds int64) {
	opt, err := redis.ParseURL(url)
	require.NoError(t, err)
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	read := func() (out, cmds int64) {
		info, err := c.Info(t.Context(), "stats").Result()
		require.NoError(t, err)
		for _, line := range strings.Split(info, "\r\n") {
			k, v, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "total_net_output_bytes":
				out = n
			case "total_commands_processed":
				cmds = n
			}
		}
		return out, cmds
	}
	o0, c0 := read()
	o1, c1 := read()
	costOut, costCmds := o1-o0, c1-c0 // of one read
	return func() (int64, int64) {
		o, c := read()
		return o - o1 - costOut, c - c1 - costCmds
	}
}

// The same with acpnormd's own Redis store: a request sent again costs
// what its answer needs, not the closed session's kept answers (the last
// 64 frames', up to 256 KiB) loaded whole for each.
func TestCloseResentCostsWhatItsAnswerNeeds(t *testing.T) {
	url := testredis.Start(t)
	st, err := redisstore.Open(url)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	stream, trips, reqs := closeResendCase(t, st)

	sent := redisSent(t, url)
	again, out := stream()
	resent := reqs[len(reqs)-100:]
	for _, r := range resent {
		_, err := again.handle(r, nil)
		require.NoError(t, err)
	}
	bytes, cmds := sent()
	answered := 0
	for _, r := range *out {
		answered += proto.Size(r)
	}
	_, n := endedOutput(*out)
	assert.Equal(t, 30, n, "each call's ENDED revision, once")
	t.Logf("Redis sent %d bytes, in %d round trips (%d commands, scripts' included); the answers handed on are %d bytes (%d responses)", bytes, trips(), cmds, answered, len(*out))
	assert.LessOrEqual(t, bytes, int64(2*answered+len(resent)<<12), "what the answers need, and a few KiB a request")
	assert.LessOrEqual(t, trips(), int64(2*len(resent)+1), "the closed session, and the answer kept, once a request; what the close kept once")
}

// A stream that was handed what a close kept is handed what a later
// close kept, of the session started again and closed at the same
// sequence: what the stream remembers names the close by the closed
// session's version too. (Frames past the 64 whose answers are kept are
// sent again: their answers are not kept, and the close's kept revisions
// answer them.)
func TestCloseResentAfterTheSessionClosedAgain(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Store = store.NewMemory()
	ss := newSessions(cfg, NewMetrics(nil), nil)
	stream := func() (*feeder, *[]*pb.NormalizeResponse) {
		var out []*pb.NormalizeResponse
		d := newDelivered()
		d.setOptions(&pb.StreamOptions{SkipAppliedSequences: true})
		return ss.newFeeder(context.Background(), d, func(r *pb.NormalizeResponse) error { out = append(out, r); return nil }), &out
	}
	const closeSeq = 80
	session := func(call string) []*pb.NormalizeRequest {
		reqs := []*pb.NormalizeRequest{{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: 1, Message: []byte(openCall(call, "ls"))}}}}
		for seq := uint64(2); seq < closeSeq; seq++ {
			reqs = append(reqs, &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: seq, Message: []byte(delta(call, "a\n"))}}})
		}
		return append(reqs, &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s1", Sequence: closeSeq}}})
	}
	run := func(f *feeder, reqs ...*pb.NormalizeRequest) {
		for _, r := range reqs {
			_, err := f.handle(r, nil)
			require.NoError(t, err)
		}
	}
	ended := func(out []*pb.NormalizeResponse) []string {
		var ids []string
		for _, r := range out {
			if x := r.GetShellExec(); x.GetState() == pb.ShellState_SHELL_STATE_ENDED {
				ids = append(ids, x.GetToolCallId())
			}
		}
		return ids
	}
	first, _ := stream()
	c1 := session("c1")
	run(first, c1...)

	b, out := stream()
	run(b, c1[1], c1[2])
	require.Equal(t, []string{"c1"}, ended(*out), "once a stream")

	// Started again (sequence 1), and closed again at the same sequence.
	other, _ := stream()
	c2 := session("c2")
	run(other, c2...)

	*out = nil
	run(b, c2[1])
	assert.Equal(t, []string{"c2"}, ended(*out), "what the later close kept")
}

// unconfirmed is the memory store, a store.Confirmer whose Confirm fails
// (not acknowledged) while armed.
type unconfirmed struct {
	store.Store
	armed atomic.Bool
}

func (u *unconfirmed) Confirm(context.Context, string) error {
	if u.armed.Load() {
		return fmt.Errorf("%w: no replica holds it", store.ErrUnacknowledged)
	}
	return nil
}

func (u *unconfirmed) Confirms() bool { return true }

// A request sent again whose answer, what a close kept, the store could
// not confirm is refused (UNAVAILABLE) with nothing handed on; the stream
// does not count what the close kept as handed to it, and the request
// sent again on it once the store confirms hands it on.
func TestCloseResentUnconfirmedIsHandedOnLater(t *testing.T) {
	st := &unconfirmed{Store: store.NewMemory()}
	cfg := DefaultConfig()
	cfg.Store = st
	ss := newSessions(cfg, NewMetrics(nil), nil)
	stream := func() (*feeder, *[]*pb.NormalizeResponse) {
		var out []*pb.NormalizeResponse
		d := newDelivered()
		d.setOptions(&pb.StreamOptions{SkipAppliedSequences: true})
		return ss.newFeeder(context.Background(), d, func(r *pb.NormalizeResponse) error { out = append(out, r); return nil }), &out
	}
	reqs := []*pb.NormalizeRequest{{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: 1, Message: []byte(openCall("c1", "ls"))}}}}
	for seq := uint64(2); seq < 80; seq++ { // past the 64 answers kept
		reqs = append(reqs, &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s1", Sequence: seq, Message: []byte(delta("c1", "a\n"))}}})
	}
	reqs = append(reqs, &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s1", Sequence: 80}}})
	first, _ := stream()
	for _, r := range reqs {
		_, err := first.handle(r, nil)
		require.NoError(t, err)
	}

	b, out := stream()
	st.armed.Store(true)
	_, err := b.handle(reqs[1], nil)
	require.NoError(t, err)
	_, n := endedOutput(*out)
	assert.Zero(t, n, "nothing handed on")
	require.NotEmpty(t, *out)
	fe := (*out)[len(*out)-1].GetFrameError()
	require.NotNil(t, fe, "%v", *out)
	assert.EqualValues(t, codes.Unavailable, fe.GetCode(), fe.GetMessage())

	st.armed.Store(false)
	*out = nil
	_, err = b.handle(reqs[1], nil)
	require.NoError(t, err)
	_, n = endedOutput(*out)
	assert.Equal(t, 1, n, "what the close kept, handed on now: %v", *out)
}
