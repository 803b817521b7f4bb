package service

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/bench/load"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/benchcpu"
	"github.com/stretchr/testify/require"
)

// BenchmarkOneStream sends a generated Grok-like command (100 cumulative
// snapshots up to 150 KiB) on one Normalize stream of the real gRPC
// server, in memory, and waits for the answer to a barrier after it. One
// op is one replay under a fresh session. cores is CPU time over wall
// time: above 1 means the stream used more than one core.
func BenchmarkOneStream(b *testing.B) {
	frames := load.Grok(load.GrokConfig{Snapshots: 100, FinalBytes: 150 << 10})
	svc, err := New(DefaultConfig(), nil, nil)
	require.NoError(b, err)
	srv := NewServer(svc, DefaultServerOptions(), nil)
	defer srv.GRPC.Stop()
	conn := serveBufconn(b, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := pb.NewNormalizerServiceClient(conn).Normalize(ctx)
	require.NoError(b, err)
	var seq uint64
	var size int64
	for _, f := range frames {
		size += int64(len(f.Msg))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	cpu := benchcpu.Now()
	start := time.Now()
	n := 0
	for b.Loop() {
		n++
		sid := fmt.Sprintf("one-%d", n)
		for _, f := range frames {
			seq++
			if err := st.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: sid, Sequence: seq, Direction: f.Dir, Message: f.Msg}}}); err != nil {
				b.Fatal(err)
			}
		}
		seq++
		barrier := seq
		if err := st.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{Sequence: barrier, Message: []byte("{}")}}}); err != nil {
			b.Fatal(err)
		}
		for {
			r, err := st.Recv()
			require.NoError(b, err)
			if fe := r.GetFrameError(); fe != nil {
				if fe.GetSequence() != barrier {
					b.Fatalf("FrameError %v", fe)
				}
				break
			}
		}
	}
	benchcpu.Report(b, cpu)
	b.ReportMetric((benchcpu.Now()-cpu).Seconds()/time.Since(start).Seconds(), "cores")
}
