package service

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/dialect"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The stream's reader expects each session to keep the dialect its last
// applied frame was read with, and forgets a closed session.
func TestReadAheadLearnsTheSessionDialect(t *testing.T) {
	a := newReadAhead(2, "")
	ctx := context.Background()
	read := func(req *pb.NormalizeRequest) *normalize.Prepared {
		t.Helper()
		p, ok := a.start(ctx, req)
		if !ok || p.req != req {
			t.Fatalf("start(%v) = %+v", req, p)
		}
		r, ok := p.wait(ctx)
		if !ok {
			t.Fatal("wait gave up on a live context")
		}
		return r
	}
	frame := func(msg string) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Message: []byte(msg)}}}
	}
	first := frame(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)
	if got := read(first); got == nil || got.Dialect() != dialect.GenericName {
		t.Fatalf("first frame read ahead with %v, want generic", got)
	}
	a.learn(first, "claude")
	second := frame(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)
	if got := read(second); got == nil || got.Dialect() != "claude" {
		t.Fatalf("second frame read ahead as %+v, want claude's read", got)
	}
	a.learn(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s"}}}, "")
	third := frame(`{}`)
	if got := read(third); got == nil || got.Dialect() != dialect.GenericName {
		t.Fatalf("after close read ahead with %v, want generic", got)
	}
	bad := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Dialect: "nope", Message: []byte(`{}`)}}}
	if read(bad) != nil {
		t.Fatal("a frame naming an unknown dialect is not read ahead")
	}
}

// Frames of many sessions on one stream, large enough to be read on
// goroutines of their own and of sizes that finish out of order, are
// applied in the order they came: every revision follows the one before
// in sequence, and each call's appended text is what its frames carried.
func TestReadAheadAppliesParallelReadsInOrder(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	const sessions, rounds = 6, 30
	for i := range sessions {
		st.send(fmt.Sprint("s", i), openCall("c", "cat"))
		st.exec()
	}
	want := make([]strings.Builder, sessions)
	for r := range rounds {
		for i := range sessions {
			// Session 0's frames are 64 KiB, the others' 2 KiB: a later,
			// smaller frame is read before an earlier, larger one.
			size := 2 << 10
			if i == 0 {
				size = 64 << 10
			}
			data := fmt.Sprintf("r%d-s%d:", r, i)
			data += strings.Repeat(string(rune('a'+(r+i)%26)), size-len(data)) + "\n"
			want[i].WriteString(data)
			st.send(fmt.Sprint("s", i), delta("c", data))
		}
	}
	got := make([]strings.Builder, sessions)
	var last uint64
	for range sessions * rounds {
		x := st.exec()
		if x.GetSequence() <= last {
			t.Fatalf("revision for sequence %d after one for %d", x.GetSequence(), last)
		}
		last = x.GetSequence()
		var i int
		fmt.Sscanf(x.GetSessionId(), "s%d", &i)
		if x.GetOutput().GetMode() != pb.TextMode_TEXT_MODE_APPEND {
			t.Fatalf("session %d: %v", i, x.GetOutput().GetMode())
		}
		got[i].WriteString(x.GetOutput().GetText())
	}
	for i := range sessions {
		if got[i].String() != want[i].String() {
			t.Fatalf("session %d folded %d bytes, want %d", i, got[i].Len(), want[i].Len())
		}
	}
}

// Every wait of the read-ahead gives up when the stream ends: for a
// worker when all are busy, and for a read that is not done.
func TestReadAheadGivesUp(t *testing.T) {
	a := newReadAhead(1, "")
	a.workers <- struct{}{} // the only worker is busy
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	big := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Message: []byte(delta("c", strings.Repeat("x", 4<<10)))}}}
	if p, ok := a.start(ctx, big); ok {
		t.Fatalf("start with every worker busy and the stream over: %+v", p)
	}
	p := pending{req: big, async: &asyncRead{done: make(chan struct{})}}
	if _, ok := p.wait(ctx); ok {
		t.Fatal("wait on an unfinished read after the stream ended")
	}
}

// Frames read ahead on workers reuse at most cap(workers) goroutines,
// each read is done, and the workers end once the reader stops.
func TestReadAheadWorkersEndWithTheStream(t *testing.T) {
	a := newReadAhead(2, "")
	ctx := context.Background()
	big := []byte(delta("c", strings.Repeat("x", 4<<10)))
	var reads []pending
	for i := range 20 {
		req := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: fmt.Sprint("s", i%3), Message: big}}}
		p, ok := a.start(ctx, req)
		require.True(t, ok)
		require.NotNil(t, p.async, "frame %d is not read on a worker", i)
		reads = append(reads, p)
	}
	for i, p := range reads {
		r, ok := p.wait(ctx)
		require.True(t, ok)
		require.NotNil(t, r, "frame %d", i)
		assert.Equal(t, dialect.GenericName, r.Dialect(), "frame %d", i)
	}
	assert.LessOrEqual(t, a.started, 2, "workers started")
	a.stop()
	done := make(chan struct{})
	go func() { a.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the workers did not end after stop")
	}
	assert.Empty(t, a.workers, "tokens still held")
}

// learn leaves in next what it would write there every time, whatever it
// skips: random frames, closes and new sessions past maxAheadSessions,
// against a map written by every call.
func TestReadAheadLearnSkipsOnlyWhatIsThere(t *testing.T) {
	a := newReadAhead(1, "")
	model := map[string]string{}
	rng := rand.New(rand.NewPCG(3, 4))
	dialects := []string{"claude", "opencode", "generic"}
	cleared := 0
	for i := range 20000 {
		id := fmt.Sprint("s", rng.IntN(8))
		if rng.IntN(8) == 0 {
			id = fmt.Sprint("new", i) // fills next past its bound now and then
		}
		var req *pb.NormalizeRequest
		next := dialects[rng.IntN(len(dialects))]
		switch rng.IntN(10) {
		case 0:
			req = &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: id}}}
			delete(model, id)
		case 1:
			req = &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: id}}}
			next = ""
			delete(model, id)
		default:
			req = &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: id}}}
			if len(model) >= maxAheadSessions {
				clear(model)
				cleared++
			}
			model[id] = next
		}
		a.learn(req, next)
		require.Equal(t, model[id], a.next[id], "step %d", i)
		require.Len(t, a.next, len(model), "step %d", i)
	}
	require.Positive(t, cleared, "next never reached its bound")

	// At the bound, a session's frame starts the memory over even when it
	// names what next holds for it.
	a = newReadAhead(1, "")
	frame := func(id string) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: id}}}
	}
	for i := range maxAheadSessions - 1 {
		a.learn(frame(fmt.Sprint("other", i)), "claude")
	}
	a.learn(frame("s"), "claude")
	require.Len(t, a.next, maxAheadSessions)
	a.learn(frame("s"), "claude")
	require.Equal(t, map[string]string{"s": "claude"}, a.next)
}
