package client_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"google.golang.org/grpc/codes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/client"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/service"
	"github.com/acpnorm/acpnorm/internal/testcerts"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// The recording these tests play: nine shell commands of claude-agent-acp
// (exit codes, stderr, large output, a timeout, a signal).
var recording = filepath.Join("..", "test", "testdata", "recordings", "claude-agent-acp-0.101.0_terminal-meta.ndjson")

// server is one acpnormd served in this process on a loopback port.
type server struct {
	addr string
	srv  *service.Server
	lis  net.Listener
}

func serve(t *testing.T, st store.Store) *server {
	t.Helper()
	return serveWith(t, st, service.DefaultServerOptions())
}

func serveWith(t *testing.T, st store.Store, opts service.ServerOptions) *server {
	t.Helper()
	cfg := service.DefaultConfig()
	cfg.Store = st
	return serveConfig(t, cfg, opts)
}

func serveConfig(t *testing.T, cfg service.Config, opts service.ServerOptions) *server {
	t.Helper()
	return serveMeasured(t, cfg, opts, nil)
}

// serveMeasured is serveConfig with the service's metrics in m (nil:
// none kept).
func serveMeasured(t *testing.T, cfg service.Config, opts service.ServerOptions, m *service.Metrics) *server {
	t.Helper()
	svc, err := service.New(cfg, m, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &server{addr: lis.Addr().String(), srv: service.NewServer(svc, opts, nil), lis: lis}
	go s.srv.Serve(lis)
	t.Cleanup(s.srv.GRPC.Stop)
	return s
}

// reference is what one process makes of the recording: each call's
// final state, folded as replay does.
func reference(t *testing.T, lines []replay.Line) map[string]*pb.ShellExec {
	t.Helper()
	s := serve(t, nil)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	resps, err := replay.Play(context.Background(), pb.NewNormalizerServiceClient(conn), lines, replay.Options{SessionID: "s1", Dialect: "auto"})
	require.NoError(t, err)
	calls, errs := replay.Fold(resps)
	require.Empty(t, errs)
	require.NotEmpty(t, calls)
	m := map[string]*pb.ShellExec{}
	for _, c := range calls {
		m[c.Last.GetToolCallId()] = c.Last
	}
	return m
}

// revisions records, per call, the revisions OnRevision gave, and fails
// the test when one goes back.
type revisions struct {
	t    *testing.T
	mu   sync.Mutex
	last map[string]uint32
}

func (r *revisions) on(x *pb.ShellExec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]uint32{}
	}
	if x.GetRevision() <= r.last[x.GetToolCallId()] {
		r.t.Errorf("call %s: revision %d after %d", x.GetToolCallId(), x.GetRevision(), r.last[x.GetToolCallId()])
	}
	r.last[x.GetToolCallId()] = x.GetRevision()
}

// sameFinals checks the session's folded finals against one process's,
// revision numbers aside (a rebuilt call may end above them).
// sameFinals checks that s's calls ended as one process's did. The
// reference numbered its frames from 1, s from s.FirstSequence().
func sameFinals(t *testing.T, want map[string]*pb.ShellExec, s *client.Session) {
	t.Helper()
	got := s.Calls()
	for i, g := range got {
		g = proto.Clone(g).(*pb.ShellExec)
		g.Sequence -= s.FirstSequence() - 1
		got[i] = g
	}
	var ids, wantIDs []string
	for _, g := range got {
		ids = append(ids, g.GetToolCallId())
	}
	for id := range want {
		wantIDs = append(wantIDs, id)
	}
	require.ElementsMatch(t, wantIDs, ids)
	for _, g := range got {
		w := want[g.GetToolCallId()]
		require.NotNil(t, w, "call %s is not one process's", g.GetToolCallId())
		assert.Equal(t, withoutRevision(w), withoutRevision(g), "call %s", g.GetToolCallId())
	}
}

func withoutRevision(x *pb.ShellExec) string {
	c := proto.Clone(x).(*pb.ShellExec)
	c.Revision = 0
	return prototext.Format(c)
}

func lines(t *testing.T) []replay.Line {
	t.Helper()
	ls, err := replay.ReadFile(recording)
	require.NoError(t, err)
	return ls
}

// play sends every line, calling between(i) before line i, and closes.
func play(t *testing.T, s *client.Session, ls []replay.Line, between func(i int)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, l := range ls {
		if between != nil {
			between(i)
		}
		require.NoError(t, s.Send(ctx, l.Dir, l.Msg))
	}
	require.NoError(t, s.Close(ctx))
}

func TestSessionFoldsAsOneProcess(t *testing.T) {
	ls := lines(t)
	want := reference(t, ls)
	c, err := client.New([]string{serve(t, nil).addr})
	require.NoError(t, err)
	defer c.Close()
	revs := &revisions{t: t}
	s := c.Session("s1", client.OnRevision(revs.on))
	play(t, s, ls, nil)
	t.Logf("%+v", s.Stats())
	sameFinals(t, want, s)
	assert.Empty(t, s.FrameErrors())
	assert.NoError(t, s.Close(context.Background()), "a second Close")
	assert.NoError(t, s.Err())
	assert.ErrorIs(t, s.Send(context.Background(), ls[0].Dir, ls[0].Msg), client.ErrClosed)
	st := s.Stats()
	assert.Equal(t, 1, st.Streams)
	assert.Zero(t, st.Reconnects+st.Resent+st.Losses)
}

// Two servers share a store; the one the session streams to stops
// mid-session (its connections cut, as a killed process's are). The
// session moves to the other, sends again what had no answer, and ends
// with one process's finals, no revision going back.
func TestSessionMovesToAnotherServer(t *testing.T) {
	ls := lines(t)
	want := reference(t, ls)
	st := store.NewMemory()
	a, b := serve(t, st), serve(t, st)
	c, err := client.New([]string{a.addr, b.addr}, client.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	revs := &revisions{t: t}
	s := c.Session("s1", client.OnRevision(revs.on))
	play(t, s, ls, func(i int) {
		if i == len(ls)/2 {
			require.NoError(t, s.Flush(context.Background()))
			a.srv.GRPC.Stop()
		}
	})
	t.Logf("%+v", s.Stats())
	sameFinals(t, want, s)
	assert.Empty(t, s.FrameErrors())
	assert.GreaterOrEqual(t, s.Stats().Reconnects, 1)
}

// The server the session streams to shuts down gracefully mid-session:
// it ends the stream with UNAVAILABLE and a trailer that counts what it
// applied; the session goes on on the other server from there.
func TestSessionMovesOnWhenAServerShutsDown(t *testing.T) {
	ls := lines(t)
	want := reference(t, ls)
	st := store.NewMemory()
	a, b := serve(t, st), serve(t, st)
	c, err := client.New([]string{a.addr, b.addr}, client.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	revs := &revisions{t: t}
	s := c.Session("s1", client.OnRevision(revs.on))
	play(t, s, ls, func(i int) {
		if i == len(ls)/2 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a.srv.Shutdown(ctx)
		}
	})
	t.Logf("%+v", s.Stats())
	sameFinals(t, want, s)
	assert.Empty(t, s.FrameErrors())
	assert.GreaterOrEqual(t, s.Stats().Reconnects, 1)
}

// A server without a store restarts (another process, holding nothing of
// the session): the session states what it holds, gets DATA_LOSS, sends
// its frames again from the first, and ends with the same finals, no
// call going back.
func TestSessionRebuildsAfterDataLoss(t *testing.T) {
	ls := lines(t)
	want := reference(t, ls)
	a, b := serve(t, nil), serve(t, nil)
	c, err := client.New([]string{a.addr, b.addr}, client.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	revs := &revisions{t: t}
	s := c.Session("s1", client.OnRevision(revs.on))
	play(t, s, ls, func(i int) {
		if i == len(ls)/2 {
			require.NoError(t, s.Flush(context.Background()))
			require.NotEmpty(t, s.Calls())
			a.srv.GRPC.Stop()
		}
	})
	t.Logf("%+v", s.Stats())
	sameFinals(t, want, s)
	assert.Empty(t, s.FrameErrors())
	assert.Equal(t, 1, s.Stats().Losses)
}

// The same, but the server is lost before any frame made a revision (the
// initialize exchange): the session holds no call, so only the sequence
// it had answered (held_sequence) tells the new server that it lost the
// frames which named the agent. Without it the rest was read with the
// generic dialect and the finals were wrong.
func TestSessionRebuildsAfterLosingFramesWithoutRevisions(t *testing.T) {
	ls := lines(t)
	want := reference(t, ls)
	a, b := serve(t, nil), serve(t, nil)
	c, err := client.New([]string{a.addr, b.addr}, client.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	revs := &revisions{t: t}
	s := c.Session("s1", client.OnRevision(revs.on))
	play(t, s, ls, func(i int) {
		if i == 2 {
			require.NoError(t, s.Flush(context.Background()))
			require.Empty(t, s.Calls())
			a.srv.GRPC.Stop()
		}
	})
	t.Logf("%+v", s.Stats())
	sameFinals(t, want, s)
	assert.Empty(t, s.FrameErrors())
	assert.Equal(t, 1, s.Stats().Losses)
}

// Requests not answered yet are what a Session cannot drop: when they
// alone fill the bound, Send fails with ErrSessionFull (backpressure).
// Nothing answers here until the server starts; then the session at its
// bound still closes: SessionClosed is never refused.
func TestSessionBound(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	lis.Close() // nothing listens there yet
	c, err := client.New([]string{addr}, client.WithSessionLimits(2, 1<<20), client.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	s := c.Session("s1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ls := lines(t)
	require.NoError(t, s.Send(ctx, ls[0].Dir, ls[0].Msg))
	require.NoError(t, s.Send(ctx, ls[1].Dir, ls[1].Msg))
	err = s.Send(ctx, ls[2].Dir, ls[2].Msg)
	require.ErrorIs(t, err, client.ErrSessionFull)
	assert.Contains(t, err.Error(), fmt.Sprintf(`session "s1" has 2 requests not answered yet (%d bytes of messages), and with this one of %d bytes they would pass the bound of 2 requests, 1048576 bytes`,
		len(ls[0].Msg)+len(ls[1].Msg), len(ls[2].Msg)))
	assert.Contains(t, err.Error(), "WithSessionLimits")
	assert.Zero(t, s.Stats().Dropped, "a request not answered was dropped")
	err = c.Session("bytes").Send(ctx, ls[0].Dir, bytes.Repeat([]byte("x"), 1<<20+1))
	require.ErrorIs(t, err, client.ErrSessionFull, "a message over the byte bound by itself")

	lis, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	svc, err := service.New(service.DefaultConfig(), nil, nil)
	require.NoError(t, err)
	srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
	go srv.Serve(lis)
	defer srv.GRPC.Stop()
	require.NoError(t, s.Close(ctx))
	assert.Equal(t, 0, s.Stats().Dropped)
}

// ErrSessionFull is raised when the requests not answered yet fill the
// bound, answered ones being dropped to make room: its message names the
// unanswered ones and their bytes. It counted every request kept,
// answered ones too, which are not what fills the bound.
func TestSessionFullNamesTheUnanswered(t *testing.T) {
	srv := serve(t, nil)
	c, err := client.New([]string{srv.addr}, client.WithSessionLimits(100, 1<<20), client.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	s := c.Session("s1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ls := lines(t)
	require.NoError(t, s.Send(ctx, ls[0].Dir, ls[0].Msg))
	require.NoError(t, s.Send(ctx, ls[1].Dir, ls[1].Msg))
	require.NoError(t, s.Flush(ctx))
	srv.srv.GRPC.Stop() // nothing answers from here on
	notice := func(n int) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"x/notice","params":{"text":"` + strings.Repeat("x", n) + `"}}`)
	}
	unanswered, next := notice(600<<10), notice(500<<10)
	require.NoError(t, s.Send(ctx, pb.Direction_DIRECTION_AGENT_TO_CLIENT, unanswered))
	err = s.Send(ctx, pb.Direction_DIRECTION_AGENT_TO_CLIENT, next)
	require.ErrorIs(t, err, client.ErrSessionFull)
	assert.Contains(t, err.Error(), fmt.Sprintf(`session "s1" has 1 requests not answered yet (%d bytes of messages), and with this one of %d bytes they would pass the bound of 100 requests, 1048576 bytes (client.WithSessionLimits)`,
		len(unanswered), len(next)))
	assert.Zero(t, s.Stats().Dropped, "the answered requests were dropped, yet the request refused")
}

// sendPatiently sends lines to s as a caller that takes ErrSessionFull as
// backpressure does: it waits a little and tries again, without Flush.
func sendPatiently(t *testing.T, ctx context.Context, s *client.Session, ls []replay.Line) {
	t.Helper()
	for i, l := range ls {
		var full error
		for {
			err := s.Send(ctx, l.Dir, l.Msg)
			if errors.Is(err, client.ErrSessionFull) {
				full = err
				time.Sleep(time.Millisecond)
				continue
			}
			if err != nil && full != nil {
				err = fmt.Errorf("%w, after %w", err, full)
			}
			require.NoError(t, err, "request %d", i+1)
			break
		}
	}
}

// A healthy session of many more requests than its bound: the Session
// drops its oldest answered requests to stay within it, instead of
// refusing every request past it (ErrSessionFull) until Close, which
// ended the server's session; sent again under the same id it started
// without initialize and session/new, read with the generic dialect. It
// ends with one process's finals and says what it dropped.
func TestSessionLongerThanItsBound(t *testing.T) {
	ls := lines(t)
	want := reference(t, ls)
	for _, lim := range []struct{ requests, bytes int }{{8, 1 << 20}, {1 << 20, 64 << 10}} {
		c, err := client.New([]string{serve(t, nil).addr}, client.WithSessionLimits(lim.requests, lim.bytes))
		require.NoError(t, err)
		defer c.Close()
		s := c.Session("s1", client.OnRevision((&revisions{t: t}).on))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		sendPatiently(t, ctx, s, ls)
		require.NoError(t, s.Flush(ctx))
		assert.Equal(t, len(ls), s.Answered())
		require.NoError(t, s.Close(ctx))
		st := s.Stats()
		t.Logf("bound %d requests, %d bytes: %+v", lim.requests, lim.bytes, st)
		sameFinals(t, want, s)
		assert.Empty(t, s.FrameErrors())
		assert.NoError(t, s.Err())
		assert.Zero(t, st.Losses)
		if lim.requests == 8 {
			assert.GreaterOrEqual(t, st.Dropped, len(ls)-8, "the requests past the bound")
		} else {
			assert.Positive(t, st.Dropped)
		}
	}
}

// An agent streaming message chunks makes no revision, so nothing answers
// those frames on the stream: the Session ends its stream once half its
// bound is unanswered, and the trailer answers them, so it can drop them
// and go on. Before, it failed once it held its bound.
func TestSessionOfFramesWithoutRevisionsLongerThanItsBound(t *testing.T) {
	ls := lines(t)[:4] // initialize and session/new, with their answers
	for i := range 200 {
		ls = append(ls, replay.Line{Dir: pb.Direction_DIRECTION_AGENT_TO_CLIENT, Msg: []byte(fmt.Sprintf(
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk %d"}}}}`, i))})
	}
	c, err := client.New([]string{serve(t, nil).addr}, client.WithSessionLimits(8, 1<<20))
	require.NoError(t, err)
	defer c.Close()
	s := c.Session("s1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sendPatiently(t, ctx, s, ls)
	require.NoError(t, s.Close(ctx))
	st := s.Stats()
	t.Logf("%+v", st)
	assert.GreaterOrEqual(t, st.Dropped, len(ls)-8)
	assert.Empty(t, s.FrameErrors())
}

// Once a Session dropped requests, the session can no longer be rebuilt
// from its first one: a server that lost it (DATA_LOSS) ends the Session
// at once, with an error that says so, instead of a rebuild that would
// miss initialize and session/new. What was folded stays readable.
func TestSessionGivesUpALossAfterItDroppedRequests(t *testing.T) {
	ls := lines(t)
	a, b := serve(t, nil), serve(t, nil)
	c, err := client.New([]string{a.addr, b.addr}, client.WithBackoff(5*time.Millisecond, 20*time.Millisecond), client.WithSessionLimits(8, 1<<20))
	require.NoError(t, err)
	defer c.Close()
	s := c.Session("s1", client.OnRevision((&revisions{t: t}).on))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	half := len(ls) / 2
	sendPatiently(t, ctx, s, ls[:half])
	require.NoError(t, s.Flush(ctx))
	require.Positive(t, s.Stats().Dropped)
	before := s.Calls()
	require.NotEmpty(t, before)
	a.srv.GRPC.Stop()
	require.NoError(t, s.Send(ctx, ls[half].Dir, ls[half].Msg))
	err = s.Flush(ctx)
	require.ErrorIs(t, err, client.ErrCannotRebuild)
	st := s.Stats()
	t.Logf("%+v: %v", st, err)
	assert.Contains(t, err.Error(), `session "s1"`)
	assert.Contains(t, err.Error(), "the server lost the session, and it cannot be rebuilt")
	assert.Contains(t, err.Error(), fmt.Sprintf("its first %d requests were no longer kept", st.Dropped))
	assert.Contains(t, err.Error(), "client.WithSessionLimits")
	assert.NoError(t, ctx.Err(), "it tried to rebuild")
	assert.Equal(t, 1, st.Losses)
	assert.ErrorIs(t, s.Err(), client.ErrCannotRebuild)
	assert.ErrorIs(t, s.Send(ctx, ls[half+1].Dir, ls[half+1].Msg), client.ErrCannotRebuild)
	assert.ErrorIs(t, s.Close(ctx), client.ErrCannotRebuild)
	after := s.Calls()
	require.Len(t, after, len(before))
	for i := range before {
		assert.True(t, proto.Equal(before[i], after[i]), "call %s", before[i].GetToolCallId())
	}
}

// A stream that starts with a turn end sends the last answered frame
// again first, to state what is held (heldFrom), when it is still kept;
// once dropped, it starts with the turn end, as when no frame is found,
// instead of reaching for a request no longer kept.
func TestSessionTurnEndAfterItsFramesWereDropped(t *testing.T) {
	ls := lines(t)
	c, err := client.New([]string{serve(t, nil).addr}, client.WithSessionLimits(2, 1<<20))
	require.NoError(t, err)
	defer c.Close()
	s := c.Session("s1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sendPatiently(t, ctx, s, ls)
	require.NoError(t, s.Flush(ctx)) // ends the stream: the next starts with what comes
	calls := s.Calls()
	resent := s.Stats().Resent
	require.NoError(t, s.TurnEnded(ctx, false)) // drops all but the last frame
	require.NoError(t, s.Flush(ctx))
	assert.Equal(t, resent+1, s.Stats().Resent, "the last frame, still kept, is sent again before the turn end")
	require.NoError(t, s.TurnEnded(ctx, false)) // drops the last frame
	require.NoError(t, s.Flush(ctx))
	assert.Equal(t, resent+1, s.Stats().Resent, "no frame kept to send again")
	require.NoError(t, s.Close(ctx))
	assert.Equal(t, len(ls), s.Stats().Dropped, "all but the turn ends and the close")
	assert.Empty(t, s.FrameErrors())
	require.Len(t, s.Calls(), len(calls))
	for i := range calls {
		assert.Equal(t, calls[i].GetOutcome(), s.Calls()[i].GetOutcome(), "call %s", calls[i].GetToolCallId())
	}
}

// Before any request was dropped, a loss still rebuilds the session from
// its first request; the session then goes on within its bound, dropping
// what it must.
func TestSessionRebuildsALossBeforeItDroppedRequests(t *testing.T) {
	ls := lines(t)
	want := reference(t, ls)
	for _, tc := range []struct{ bound, at int }{{8, 4}, {16, 14}} {
		a, b := serve(t, nil), serve(t, nil)
		c, err := client.New([]string{a.addr, b.addr}, client.WithBackoff(5*time.Millisecond, 20*time.Millisecond), client.WithSessionLimits(tc.bound, 1<<20))
		require.NoError(t, err)
		defer c.Close()
		s := c.Session("s1", client.OnRevision((&revisions{t: t}).on))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		sendPatiently(t, ctx, s, ls[:tc.at])
		require.NoError(t, s.Flush(ctx))
		require.Zero(t, s.Stats().Dropped)
		a.srv.GRPC.Stop()
		// The loss is found (and the session rebuilt) on the next request,
		// before any is dropped: requests answered before a loss is found
		// may be dropped as any answered one, which makes it final.
		sendPatiently(t, ctx, s, ls[tc.at:tc.at+1])
		require.NoError(t, s.Flush(ctx))
		require.Equal(t, 1, s.Stats().Losses)
		require.Zero(t, s.Stats().Dropped)
		sendPatiently(t, ctx, s, ls[tc.at+1:])
		require.NoError(t, s.Close(ctx))
		st := s.Stats()
		t.Logf("bound %d, lost after %d: %+v", tc.bound, tc.at, st)
		assert.Equal(t, 1, st.Losses)
		assert.Positive(t, st.Dropped, "it went on within its bound")
		sameFinals(t, want, s)
		assert.Empty(t, s.FrameErrors())
	}
}

// A session whose servers are all down gives up when its context ends,
// saying why, instead of waiting forever.
func TestSessionGivesUpWithItsContext(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	lis.Close() // nothing listens there
	c, err := client.New([]string{addr}, client.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	s := c.Session("s1")
	ls := lines(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	require.NoError(t, s.Send(ctx, ls[0].Dir, ls[0].Msg))
	err = s.Close(ctx)
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.Contains(t, err.Error(), "the last stream: "+addr, "it does not say why")
	assert.Greater(t, s.Stats().Reconnects, 1)
}

// A request over the server's message limit ends the stream (gRPC reads
// nothing after it). The Session reports it, naming its sequence, and
// sends the requests after it without it, as docs/contract.md says; it
// gave up the whole session before (probe R).
func TestSessionLeavesOutARequestTooLarge(t *testing.T) {
	ls := lines(t)
	limit := 0
	for _, l := range ls {
		limit = max(limit, len(l.Msg))
	}
	limit += 4 << 10
	big := []byte(`{"jsonrpc":"2.0","method":"x/notice","params":{"text":"` + strings.Repeat("x", limit) + `"}}`)
	at := len(ls) / 2
	opts := service.DefaultServerOptions()
	opts.MaxMessageBytes = limit
	c, err := client.New([]string{serveWith(t, nil, opts).addr}, client.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	s := c.Session("s1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, l := range ls {
		if i == at {
			require.NoError(t, s.Send(ctx, pb.Direction_DIRECTION_AGENT_TO_CLIENT, big))
		}
		require.NoError(t, s.Send(ctx, l.Dir, l.Msg))
	}
	require.NoError(t, s.Close(ctx))
	errs := s.FrameErrors()
	require.Len(t, errs, 1)
	assert.Equal(t, int32(codes.ResourceExhausted), errs[0].GetCode())
	assert.Equal(t, s.FirstSequence()+uint64(at), errs[0].GetSequence())
	assert.Contains(t, errs[0].GetMessage(), "larger than the server's limit")
	assert.Contains(t, errs[0].GetMessage(), "--max-message-bytes")
	want := reference(t, ls)
	for _, x := range s.Calls() {
		w := want[x.GetToolCallId()]
		require.NotNil(t, w, x.GetToolCallId())
		assert.Equal(t, w.GetOutcome(), x.GetOutcome(), x.GetToolCallId())
		assert.Equal(t, w.GetExitCode(), x.GetExitCode(), x.GetToolCallId())
		assert.Equal(t, w.GetOutput().GetText(), x.GetOutput().GetText(), x.GetToolCallId())
	}
	assert.Len(t, s.Calls(), len(want))
}

// flaky is a store whose commits fail while it is down, as a Redis that
// cannot be reached. Armed, its next commit is slow (and made), and those
// after it fail: frames that arrive meanwhile are applied as one batch,
// which is refused whole.
type flaky struct {
	store.Store
	mu    sync.Mutex
	state int // 0 up, 1 armed, 2 down
}

func (f *flaky) Commit(ctx context.Context, session string, base uint64, c *store.Change) (uint64, error) {
	f.mu.Lock()
	state := f.state
	if state == 1 {
		f.state = 2
	}
	f.mu.Unlock()
	switch state {
	case 1:
		time.Sleep(50 * time.Millisecond)
	case 2:
		return 0, errors.New("flaky: the store is down")
	}
	return f.Store.Commit(ctx, session, base, c)
}

func (f *flaky) set(state int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = state
}

// While the store refuses commits, the frames sent (several at once, which
// the server applies as one batch, refused whole) are answered UNAVAILABLE;
// the Session sends them all again once the store is back, from the first
// one not applied, and ends with one process's finals.
func TestSessionSendsAgainWhatWasNotApplied(t *testing.T) {
	ls := lines(t)
	want := reference(t, ls)
	st := &flaky{Store: store.NewMemory()}
	c, err := client.New([]string{serve(t, st).addr}, client.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	revs := &revisions{t: t}
	s := c.Session("s1", client.OnRevision(revs.on))
	play(t, s, ls, func(i int) {
		switch i {
		case len(ls) / 3:
			require.NoError(t, s.Flush(context.Background()))
			st.set(1)
		case len(ls) / 2:
			for s.Stats().NotApplied == 0 {
				time.Sleep(time.Millisecond)
			}
			st.set(0)
		}
	})
	t.Logf("%+v", s.Stats())
	sameFinals(t, want, s)
	assert.Empty(t, s.FrameErrors())
}

// WithTLS and WithToken reach a server that asks for a client
// certificate and a bearer token; a wrong token ends the Session at once
// with Unauthenticated, not after retries.
func TestSessionOverMutualTLSWithAToken(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, testcerts.Write(dir))
	file := func(name string) string { return filepath.Join(dir, name) }
	srvTLS, err := service.NewTLSConfig(service.TLSFiles{Cert: file(testcerts.ServerCert), Key: file(testcerts.ServerKey), ClientCA: file(testcerts.CA)}, nil)
	require.NoError(t, err)
	token, err := service.NewToken(file(testcerts.Token), nil)
	require.NoError(t, err)
	opts := service.DefaultServerOptions()
	opts.TLS, opts.Token = srvTLS, token
	addr := serveWith(t, nil, opts).addr

	pem, err := os.ReadFile(file(testcerts.CA))
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(pem))
	cert, err := tls.LoadX509KeyPair(file(testcerts.ClientCert), file(testcerts.ClientKey))
	require.NoError(t, err)
	cfg := &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, ServerName: testcerts.ServerName, MinVersion: tls.VersionTLS12}
	readToken := func(name string) string {
		b, err := os.ReadFile(file(name))
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	ls := lines(t)
	for _, tc := range []struct {
		token string
		want  string // empty: the session ends well
	}{{readToken(testcerts.Token), ""}, {readToken(testcerts.WrongToken), "Unauthenticated"}} {
		c, err := client.New([]string{addr}, client.WithTLS(cfg), client.WithToken(tc.token))
		require.NoError(t, err)
		s := c.Session("s1")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		for _, l := range ls[:20] {
			require.NoError(t, s.Send(ctx, l.Dir, l.Msg))
		}
		err = s.Close(ctx)
		if tc.want == "" {
			require.NoError(t, err)
			assert.NotEmpty(t, s.Calls())
		} else {
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NoError(t, ctx.Err(), "it retried until its context ended")
		}
		cancel()
		c.Close()
	}
}

// A server restarted on the same address is used again within the
// client's own backoff (WithBackoff), not after gRPC's reconnect backoff
// (1 s growing to 2 min by default), which had grown while it was down.
func TestSessionUsesARestartedServerWithinItsBackoff(t *testing.T) {
	a := serve(t, nil)
	addr := a.addr
	a.srv.GRPC.Stop()
	c, err := client.New([]string{addr}, client.WithBackoff(5*time.Millisecond, 50*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	s := c.Session("s1")
	ls := lines(t)
	require.NoError(t, s.Send(context.Background(), ls[0].Dir, ls[0].Msg))
	time.Sleep(3 * time.Second) // gRPC's own backoff would grow past 2 s
	lis, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	cfg := service.DefaultConfig()
	svc, err := service.New(cfg, nil, nil)
	require.NoError(t, err)
	srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
	go srv.Serve(lis)
	defer srv.GRPC.Stop()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Flush(ctx))
	assert.Less(t, time.Since(start), time.Second, "the restarted server was used only after %v", time.Since(start))
}

// A process that dies without closing its session, and a later one that
// goes on under the same session id (a proxy restarted on the ACP
// session it served, session/load): the server skips the sequences it
// applied before, so a Session numbering from 1 again had its frames
// skipped as sent before, silently. Numbered from the clock, they come
// after the first process's and are applied.
func TestSessionOfALaterProcessIsApplied(t *testing.T) {
	ls := lines(t)
	addr := serve(t, nil).addr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := client.New([]string{addr})
	require.NoError(t, err)
	s1 := first.Session("s1")
	half := len(ls) / 2
	for _, l := range ls[:half] {
		require.NoError(t, s1.Send(ctx, l.Dir, l.Msg))
	}
	require.NoError(t, s1.Flush(ctx))
	require.NoError(t, first.Close()) // dies: its session is never closed
	time.Sleep(2 * time.Microsecond)  // a later process starts later

	later, err := client.New([]string{addr})
	require.NoError(t, err)
	defer later.Close()
	s2 := later.Session("s1")
	assert.Greater(t, s2.FirstSequence(), s1.FirstSequence()+uint64(half))
	for _, l := range ls[half:] {
		require.NoError(t, s2.Send(ctx, l.Dir, l.Msg))
	}
	require.NoError(t, s2.Flush(ctx))
	assert.Equal(t, len(ls)-half, s2.Answered(), "every request of the later process answered")
	require.NoError(t, s2.Close(ctx))
	assert.Empty(t, s2.FrameErrors())
	var ended int
	for _, x := range s2.Calls() {
		if x.GetState() == pb.ShellState_SHELL_STATE_ENDED {
			ended++
		}
	}
	assert.NotZero(t, ended, "the later process's frames made revisions")
	want := reference(t, ls)
	for _, x := range s2.Calls() {
		assert.Equal(t, want[x.GetToolCallId()].GetOutcome(), x.GetOutcome(), "call %s", x.GetToolCallId())
	}
}

// A server lost while a call is open, and the next request is a turn end
// or a close, which carry no held fields: applied to the new server's
// empty session, the open call never ended and nobody knew (probe R).
// The Session sends its last answered frame again first, with what it
// holds, so the loss is found and the session rebuilt: its calls end as
// the same requests end them on a server that lost nothing.
func TestSessionFindsALossBeforeItsClose(t *testing.T) {
	ls := lines(t)
	k := len(ls) / 2
	for !bytes.Contains(ls[k-1].Msg, []byte(`"sessionUpdate":"tool_call"`)) {
		k++
	}
	for _, turnEnd := range []bool{false, true} {
		run := func(lose bool) *client.Session {
			a, b := serve(t, nil), serve(t, nil)
			c, err := client.New([]string{a.addr, b.addr}, client.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			s := c.Session("s1", client.OnRevision((&revisions{t: t}).on))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, l := range ls[:k] {
				require.NoError(t, s.Send(ctx, l.Dir, l.Msg))
			}
			require.NoError(t, s.Flush(ctx))
			open := 0
			for _, x := range s.Calls() {
				if x.GetState() != pb.ShellState_SHELL_STATE_ENDED {
					open++
				}
			}
			require.NotZero(t, open, "a call is open when the server is lost")
			if lose {
				a.srv.GRPC.Stop()
			}
			if turnEnd {
				require.NoError(t, s.TurnEnded(ctx, false))
			}
			require.NoError(t, s.Close(ctx))
			return s
		}
		want := map[string]*pb.ShellExec{}
		ref := run(false)
		for _, x := range ref.Calls() {
			x = proto.Clone(x).(*pb.ShellExec)
			x.Sequence -= ref.FirstSequence() - 1
			want[x.GetToolCallId()] = x
		}
		s := run(true)
		t.Logf("turn end %v: %+v", turnEnd, s.Stats())
		assert.Equal(t, 1, s.Stats().Losses, "turn end %v", turnEnd)
		sameFinals(t, want, s)
	}
}

// A session id, dialect or working directory that is not valid UTF-8 (a
// Linux path may be any bytes) cannot go in a request: gRPC refuses to
// marshal it, on every stream. Send says so at once, naming the field,
// instead of the Session reconnecting until its context ends.
func TestSessionRefusesFieldsThatAreNotUTF8(t *testing.T) {
	c, err := client.New([]string{serve(t, nil).addr}, client.WithBackoff(time.Millisecond, 5*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	ls := lines(t)
	for _, tc := range []struct {
		name  string
		s     *client.Session
		field string
	}{
		{"cwd", c.Session("u1", client.Cwd("/home/dev/caf\xe9")), `working directory "/home/dev/caf\xe9"`},
		{"id", c.Session("u\xff2"), `session id "u\xff2"`},
		{"dialect", c.Session("u3", client.Dialect("gen\xc3eric")), `dialect "gen\xc3eric"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := tc.s.Send(ctx, ls[0].Dir, ls[0].Msg)
			require.ErrorIs(t, err, client.ErrInvalid)
			assert.Contains(t, err.Error(), tc.field)
			assert.Contains(t, err.Error(), "not valid UTF-8")
			require.ErrorIs(t, tc.s.TurnEnded(ctx, false), client.ErrInvalid)
			require.ErrorIs(t, tc.s.Close(ctx), client.ErrInvalid, "Close ends at once, not on its context")
			assert.NoError(t, ctx.Err())
			assert.Zero(t, tc.s.Stats().Streams, "nothing was sent")
		})
	}
}

// update is a session/update notification of the ACP session.
func update(u string) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":` + u + `}}`)
}

// A long session's first frame on a new stream states what it holds of
// every call it saw, released ones included (they count as held), so its
// claim grows past 2 × --max-calls-per-session. The server checks what it
// can of it and applies the frame. Before, it refused the frame whole
// (INVALID_ARGUMENT, not applied), and the Session, taking the answer
// for one of a frame applied, never sent it again: the call it opened
// ended with no command.
func TestSessionLongerThanTheServersCallsPerSession(t *testing.T) {
	st := store.NewMemory()
	cfg := service.DefaultConfig()
	cfg.Store, cfg.MaxCallsPerSession, cfg.Grace = st, 2, time.Millisecond // a claim checked for 4 calls; ended calls released at once
	var addrs []string
	var servers []*service.Server
	for range 2 {
		svc, err := service.New(cfg, nil, nil)
		require.NoError(t, err)
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
		go srv.Serve(lis)
		t.Cleanup(srv.GRPC.Stop)
		addrs, servers = append(addrs, lis.Addr().String()), append(servers, srv)
	}
	c, err := client.New(addrs, client.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	s := c.Session("long")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	call := func(i int) {
		id := fmt.Sprintf("c%d", i)
		for _, m := range []string{
			`{"sessionUpdate":"tool_call","toolCallId":"` + id + `","kind":"execute","title":"echo ` + id + `","status":"in_progress","rawInput":{"command":"echo ` + id + `"}}`,
			`{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","_meta":{"terminal_output":{"terminal_id":"` + id + `","data":"out` + id + `"}}}`,
			`{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"completed","_meta":{"terminal_exit":{"terminal_id":"` + id + `","exit_code":0,"signal":null}}}`,
		} {
			require.NoError(t, s.Send(ctx, pb.Direction_DIRECTION_AGENT_TO_CLIENT, update(m)))
		}
		require.NoError(t, s.Flush(ctx))
		time.Sleep(5 * time.Millisecond) // past the grace: the next request releases it
	}
	for i := 1; i <= 10; i++ {
		call(i)
	}
	servers[0].GRPC.Stop() // the next stream, to the other server, states what the Session holds
	call(11)
	require.NoError(t, s.Close(ctx))
	assert.Empty(t, s.FrameErrors())
	assert.GreaterOrEqual(t, s.Stats().Reconnects, 1)
	for i := 1; i <= 11; i++ {
		id := fmt.Sprintf("c%d", i)
		x := s.Call(id)
		if assert.NotNil(t, x, id) {
			assert.Equal(t, "echo "+id, x.GetCommand(), id)
			assert.Equal(t, "out"+id, x.GetOutput().GetText(), id)
			assert.Equal(t, pb.ShellOutcome_SHELL_OUTCOME_SUCCEEDED, x.GetOutcome(), id)
		}
	}
}

// A server ends a stream that sent nothing for its idle timeout with
// UNAVAILABLE; the session opens a new one when it next sends, and
// folds as one process.
func TestSessionGoesOnAfterItsStreamWasEndedIdle(t *testing.T) {
	ls := lines(t)
	want := reference(t, ls)
	cfg := service.DefaultConfig()
	cfg.StreamIdleTimeout = 200 * time.Millisecond
	srv := serveConfig(t, cfg, service.DefaultServerOptions())
	c, err := client.New([]string{srv.addr}, client.WithBackoff(5*time.Millisecond, 50*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	s := c.Session("s1")
	var idle client.Stats
	play(t, s, ls, func(i int) {
		if i == len(ls)/2 {
			time.Sleep(600 * time.Millisecond) // past the idle timeout
			idle = s.Stats()
		}
	})
	sameFinals(t, want, s)
	assert.Empty(t, s.FrameErrors())
	assert.NoError(t, s.Err())
	// The trailer answered every request: no stream is opened again
	// while the session has nothing to send, and nothing is sent again.
	assert.Equal(t, 1, idle.Reconnects, "%+v", idle)
	assert.Equal(t, 1, idle.Streams, "a stream opened while the session had nothing to send: %+v", idle)
	st := s.Stats()
	assert.Equal(t, 2, st.Streams, "%+v", st)
	assert.Zero(t, st.Resent, "%+v", st)
}
