package service

import (
	"testing"
	"time"

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
