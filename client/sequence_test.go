package client

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

// A later process on the same session id whose clock is behind the
// earlier one's (an NTP step back, another host) numbers its requests
// below what the server applied: each is answered ALREADY_EXISTS and not
// applied. The Session took those for requests sent again and said
// nothing (probe R); it had never sent them, so it reports each.
func TestSessionSaysRequestsNumberedBelowTheApplied(t *testing.T) {
	lines, err := replay.ReadFile("../test/testdata/recordings/claude-agent-acp-0.101.0_terminal-meta.ndjson")
	require.NoError(t, err)
	second := len(lines) / 2
	for !strings.Contains(string(lines[second].Msg), `"method":"session/prompt"`) {
		second++
	}
	svc, err := service.New(service.DefaultConfig(), nil, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
	go srv.Serve(lis)
	defer srv.GRPC.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c1, err := New([]string{lis.Addr().String()})
	require.NoError(t, err)
	s1 := c1.Session("s")
	for _, l := range lines[:second] {
		require.NoError(t, s1.Send(ctx, l.Dir, l.Msg))
	}
	require.NoError(t, s1.Flush(ctx))
	c1.Close() // the first process dies without closing the session

	c2, err := New([]string{lis.Addr().String()})
	require.NoError(t, err)
	defer c2.Close()
	s2 := c2.Session("s")
	s2.mu.Lock()
	s2.base = s1.base - 1_000_000 // this host's clock is 1 s behind
	s2.mu.Unlock()
	for _, l := range lines[second:] {
		require.NoError(t, s2.Send(ctx, l.Dir, l.Msg))
	}
	require.NoError(t, s2.Close(ctx))
	errs := s2.FrameErrors()
	require.Len(t, errs, len(lines)-second+1, "every request, the close too, is said")
	for _, fe := range errs {
		assert.Equal(t, int32(codes.AlreadyExists), fe.GetCode())
		assert.Contains(t, fe.GetMessage(), "this Session had not sent it before")
	}
}
