package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BenchmarkSendUnanswered is Send on a Session that keeps near its byte
// bound (as one does once it dropped requests), with n requests not
// answered yet: frames that made no revision, which only a stream's
// trailer answers. Whether half the bound is unanswered is asked on every
// Send; the time of one Send should not grow with n. It logs the time
// with 4 000 unanswered over the time with 40, measured in the same run
// (compare that ratio, not the times: the machine may be busy):
//
//	go test -run '^$' -bench SendUnanswered -v ./client
func BenchmarkSendUnanswered(b *testing.B) {
	per := map[int]float64{}
	for _, n := range []int{40, 4000} {
		b.Run(fmt.Sprintf("unanswered=%d", n), func(b *testing.B) {
			s, msg := unansweredSession(b, n)
			ctx := context.Background()
			for b.Loop() {
				if err := s.Send(ctx, pb.Direction_DIRECTION_AGENT_TO_CLIENT, msg); err != nil {
					b.Fatal(err)
				}
				// Take it back, so that every Send finds n unanswered.
				s.mu.Lock()
				s.unqueueLast()
				s.mu.Unlock()
			}
			per[n] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		})
	}
	if per[40] > 0 && per[4000] > 0 {
		b.Logf("Send with 4000 requests unanswered takes %.1f times as long as with 40", per[4000]/per[40])
	}
}

// unqueueLast takes back the last request queued, which nothing sent
// (s.mu held; the benchmark's server is stopped).
func (s *Session) unqueueLast() {
	last := s.reqs[len(s.reqs)-1]
	s.reqs = s.reqs[:len(s.reqs)-1]
	s.bytes -= msgSize(last)
	s.unanswered -= msgSize(last)
}

// unansweredSession is a Session whose first request, of more than half
// its byte bound, was answered, followed by n small requests sent while
// its server is down. It returns it and the small message.
func unansweredSession(b *testing.B, n int) (*Session, []byte) {
	b.Helper()
	svc, err := service.New(service.DefaultConfig(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
	go srv.Serve(lis)
	defer srv.GRPC.Stop()
	const bound = 4 << 20
	// The Session waits an hour before trying again: nothing changes its
	// requests while it is measured.
	c, err := New([]string{lis.Addr().String()}, WithSessionLimits(100_000, bound), WithBackoff(time.Hour, time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	s := c.Session("bench")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	big := []byte(`{"jsonrpc":"2.0","method":"x/notice","params":{"text":"` + strings.Repeat("x", bound*6/10) + `"}}`)
	if err := s.Send(ctx, pb.Direction_DIRECTION_AGENT_TO_CLIENT, big); err != nil {
		b.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	srv.GRPC.Stop()
	msg := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk"}}}}`)
	for range n {
		if err := s.Send(ctx, pb.Direction_DIRECTION_AGENT_TO_CLIENT, msg); err != nil {
			b.Fatal(err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.confirmed != 1 || s.total() != n+1 || s.cycle {
		b.Fatalf("answered %d of %d requests (cycle %v): want 1 of %d", s.confirmed, s.total(), s.cycle, n+1)
	}
	return s, msg
}

// unansweredSum adds up the messages of the requests not answered yet, as
// halfUnanswered did on every Send (s.mu held).
func (s *Session) unansweredSum() int {
	b := 0
	for i := max(s.confirmed, s.dropped); i < s.total(); i++ {
		b += msgSize(s.req(i))
	}
	return b
}

// The count of unanswered bytes halfUnanswered reads stays what adding
// them up gives, through a session that cycles its stream, drops answered
// requests, and is refused at its bound (frames without revisions, a
// byte bound, a server that answers).
func TestSessionKeepsItsUnansweredBytesInStep(t *testing.T) {
	svc, err := service.New(service.DefaultConfig(), nil, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
	go srv.Serve(lis)
	defer srv.GRPC.Stop()
	c, err := New([]string{lis.Addr().String()}, WithSessionLimits(1000, 8<<10))
	require.NoError(t, err)
	defer c.Close()
	s := c.Session("s1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	check := func(when string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		require.Equal(t, s.unansweredSum(), s.unanswered, "%s: %d of %d answered, %d dropped", when, s.confirmed, s.total(), s.dropped)
	}
	full := 0
	for i := range 400 {
		msg := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk %d %s"}}}}`, i, strings.Repeat("y", i%97)))
		for {
			check(fmt.Sprintf("before request %d", i))
			err := s.Send(ctx, pb.Direction_DIRECTION_AGENT_TO_CLIENT, msg)
			if errors.Is(err, ErrSessionFull) {
				full++
				time.Sleep(time.Millisecond)
				continue
			}
			require.NoError(t, err)
			break
		}
		if i%50 == 49 {
			require.NoError(t, s.Flush(ctx))
			check(fmt.Sprintf("after the flush at %d", i))
		}
	}
	require.NoError(t, s.Flush(ctx))
	check("at the end")
	t.Logf("%+v, refused %d times", s.Stats(), full)
	assert.Positive(t, s.Stats().Dropped)
	require.NoError(t, s.Close(ctx))
}
