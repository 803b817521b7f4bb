package service

import (
	"io"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// idleNote is a request the server applies and answers nothing to: a
// notification of a method no agent sends.
const idleNote = `{"jsonrpc":"2.0","method":"$/acpnorm/left_out"}`

// A Normalize stream that sends no request for StreamIdleTimeout is ended
// with UNAVAILABLE (which clients reconnect on), so that streams opened and
// left idle do not hold --max-streams slots for ever; one that keeps
// sending is not.
func TestIdleStreamEnded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StreamIdleTimeout = 400 * time.Millisecond
	h := newHarness(t, cfg)

	busy := h.open()
	idle := h.open()
	idle.send("s-idle", idleNote) // a request, then silence
	start := time.Now()
	for time.Since(start) < 1500*time.Millisecond {
		busy.send("s-busy", idleNote)
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case err := <-busy.done:
		t.Fatalf("a stream sending every 100ms was ended: %v", err)
	default:
	}
	select {
	case err := <-idle.done:
		st := status.Convert(err)
		assert.Equal(t, codes.Unavailable, st.Code(), st.Message())
		assert.Contains(t, st.Message(), "no request for 400ms")
		assert.Equal(t, []string{"1"}, idle.s.Trailer().Get(TrailerRequestsApplied))
	case <-time.After(5 * time.Second):
		t.Fatal("a stream with no request for 1.5s (idle timeout 400ms) was not ended")
	}
}

// StreamIdleTimeout 0 keeps idle streams; a negative one is refused.
func TestIdleStreamTimeoutOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StreamIdleTimeout = -time.Second
	require.Error(t, cfg.Validate())
	cfg.StreamIdleTimeout = 0
	h := newHarness(t, cfg)
	st := h.open()
	st.send("s", idleNote)
	select {
	case err := <-st.done:
		t.Fatalf("a stream was ended with the idle timeout off: %v", err)
	case <-time.After(time.Second):
	}
}

// recvGate is a stream whose RecvMsg returns a request when next is sent
// to, and io.EOF once quit is closed.
type recvGate struct {
	pb.NormalizerService_NormalizeServer
	next, quit chan struct{}
}

func newRecvGate() *recvGate {
	return &recvGate{next: make(chan struct{}), quit: make(chan struct{})}
}

func (g *recvGate) RecvMsg(any) error {
	select {
	case <-g.next:
		return nil
	case <-g.quit:
		return io.EOF
	}
}

// The idle timer counts one wait at a time: many short waits with requests
// between them, together far longer than d, do not fire it; a wait of d
// does, once.
func TestIdleStreamCountsOneWait(t *testing.T) {
	const d = 250 * time.Millisecond
	g := newRecvGate()
	defer close(g.quit)
	fired := make(chan struct{}, 4)
	idle := newIdleStream(g, d, func() { fired <- struct{}{} })
	defer idle.stop()
	go func() {
		for idle.RecvMsg(nil) == nil {
		}
	}()
	// Requests every d/5 for 4d: no wait lasts d.
	for start := time.Now(); time.Since(start) < 4*d; {
		time.Sleep(d / 5)
		g.next <- struct{}{}
	}
	select {
	case <-fired:
		t.Fatal("the idle timer fired on a stream whose client sent a request every d/5")
	default:
	}
	// Then silence: the wait in progress lasts d.
	start := time.Now()
	select {
	case <-fired:
		assert.GreaterOrEqual(t, time.Since(start), d-d/5, "fired before the wait could last d")
	case <-time.After(10 * d):
		t.Fatal("a wait of 10d did not fire the idle timer")
	}
	select {
	case <-fired:
		t.Fatal("the idle timer fired twice")
	case <-time.After(3 * d):
	}
}

// A stream stopped while its reader waits is never fired on.
func TestIdleStreamStopped(t *testing.T) {
	const d = 100 * time.Millisecond
	g := newRecvGate()
	defer close(g.quit)
	fired := make(chan struct{}, 1)
	idle := newIdleStream(g, d, func() { fired <- struct{}{} })
	go func() { _ = idle.RecvMsg(nil) }()
	time.Sleep(d / 2)
	idle.stop()
	select {
	case <-fired:
		t.Fatal("the idle timer fired after stop")
	case <-time.After(3 * d):
	}
}
