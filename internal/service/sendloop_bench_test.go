package service

import (
	"context"
	"sync/atomic"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/benchcpu"
)

// nopSend is a stream whose every send returns at once.
type nopSend struct {
	pb.NormalizerService_NormalizeServer
}

func (nopSend) Send(*pb.NormalizeResponse) error { return nil }
func (nopSend) SendMsg(any) error                { return nil }

// BenchmarkSendLoop is what a stream's send loop costs for each response,
// beyond its encoding and gRPC's send (here nothing): the queue's hand-off
// from the stream's loop, as the loop queues (the one-case send, else the
// select), the stall clock, the byte count. Eight streams at once on two
// cores, as at c=8; one op is one response on each.
//
//	go test ./internal/service -run '^$' -bench BenchmarkSendLoop
func BenchmarkSendLoop(b *testing.B) {
	s, err := New(DefaultConfig(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	r := &pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: &pb.ShellExec{SessionId: "s", ToolCallId: "c", Command: "ls"}}}
	const streams = 8
	var total atomic.Int64
	b.ReportAllocs()
	cpu := benchcpu.Now()
	done := make(chan struct{})
	start := make(chan struct{})
	for range streams {
		go func() {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			out := make(chan outgoing, s.cfg.SendQueue)
			q := newSendBytes(s.cfg.SendQueueBytes, &total)
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				s.sendLoop(ctx, cancel, make(chan struct{}), nopSend{}, out, q, &streamStats{})
			}()
			<-start
			for range b.N {
				it := outgoing{r: r, n: 64}
				q.held(it.n)
				q.queued(it.n)
				if !trySend(out, it) {
					select {
					case out <- it:
					case <-ctx.Done():
					}
				}
			}
			close(out)
			<-sent
			done <- struct{}{}
		}()
	}
	b.ResetTimer()
	close(start)
	for range streams {
		<-done
	}
	benchcpu.Report(b, cpu)
}

// BenchmarkReadAheadLearn is what the loop's telling the read-ahead each
// applied frame's dialect costs, for a stream whose frames come from four
// sessions in runs of eight (as a stream replaying recordings sends them).
//
//	go test ./internal/service -run '^$' -bench BenchmarkReadAheadLearn
func BenchmarkReadAheadLearn(b *testing.B) {
	a := newReadAhead(2, "")
	var reqs [4]*pb.NormalizeRequest
	for i := range reqs {
		reqs[i] = &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "ses_" + string(rune('a'+i)) + "0123456789abcdef"}}}
	}
	cpu := benchcpu.Now()
	i := 0
	for b.Loop() {
		a.learn(reqs[i/8%4], "claude")
		i++
	}
	benchcpu.Report(b, cpu)
}

// BenchmarkPendingWait is the loop's taking of a frame read ahead on a
// worker, once the read is done (as most are when the loop comes to them),
// on a stream that has not ended.
//
//	go test ./internal/service -run '^$' -bench BenchmarkPendingWait
func BenchmarkPendingWait(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &asyncRead{done: make(chan struct{})}
	close(r.done)
	p := pending{async: r}
	cpu := benchcpu.Now()
	for b.Loop() {
		if _, ok := p.wait(ctx); !ok {
			b.Fatal("wait gave up on a live context")
		}
	}
	benchcpu.Report(b, cpu)
}
