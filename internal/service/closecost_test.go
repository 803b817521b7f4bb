package service

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store"
	"github.com/acpnorm/acpnorm/store/redisstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
// on one stream, and returns the stream maker and the requests.
func closeResendCase(t *testing.T, st store.Store) (func() (*feeder, *[]*pb.NormalizeResponse), []*pb.NormalizeRequest) {
	cfg := DefaultConfig()
	cfg.Store = st
	ss := newSessions(cfg, NewMetrics(nil), nil)
	stream := func() (*feeder, *[]*pb.NormalizeResponse) {
		var out []*pb.NormalizeResponse
		d := newDelivered()
		d.setOptions(&pb.StreamOptions{SkipAppliedSequences: true})
		return ss.newFeeder(context.Background(), d, func(r *pb.NormalizeResponse) error { out = append(out, r); return nil }), &out
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
	return stream, reqs
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
	stream, reqs := closeResendCase(t, st)

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
