package service

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
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
	st := benchStream(b)
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

// BenchmarkStreamAllocs plays every recording (and the generated Grok-like
// commands) on one Normalize stream of the real gRPC server, in memory,
// over bufconn, with a real client: every frame of it, both directions,
// under a fresh session, then SessionClosed and a barrier whose answer
// ends the op. A goroutine of the client reads the answers as they come.
// It reports what the whole process allocated per frame (the client's
// marshalling and unmarshalling included: the same in any build, so a
// change between builds is the server's), allocs/frame and B/frame
// (runtime.MemStats around each op), the CPU per op, and the collector's
// share of the CPU the process used (gc-cpu-%, runtime/metrics).
//
//	go test ./internal/service -run '^$' -bench BenchmarkStreamAllocs -benchtime 20x
func BenchmarkStreamAllocs(b *testing.B) {
	names, all := pathClasses(b)
	for i, name := range names {
		frames := all[i]
		b.Run(name, func(b *testing.B) {
			st := benchStream(b)
			barriers := readBarriers(st)
			var seq uint64
			var size int64
			for _, f := range frames {
				size += int64(len(f.Msg))
			}
			b.SetBytes(size)
			b.ReportAllocs()
			var before, after runtime.MemStats
			var mallocs, bytes uint64
			gcCPU := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/idle:cpu-seconds"}}
			metrics.Read(gcCPU)
			gc0, busy0 := gcCPU[0].Value.Float64(), gcCPU[1].Value.Float64()-gcCPU[2].Value.Float64()
			cpu := benchcpu.Now()
			n := 0
			for b.Loop() {
				n++
				sid := fmt.Sprintf("allocs-%d", n)
				runtime.ReadMemStats(&before)
				for _, f := range frames {
					seq++
					if err := st.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: sid, Sequence: seq, Direction: f.Dir, Message: f.Msg}}}); err != nil {
						b.Fatal(err)
					}
				}
				seq++
				if err := st.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid, Sequence: seq}}}); err != nil {
					b.Fatal(err)
				}
				seq++
				// A frame without a session is refused: its FrameError
				// comes after everything the frames before it made.
				if err := st.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{Sequence: seq, Message: []byte("{}")}}}); err != nil {
					b.Fatal(err)
				}
				if err := <-barriers; err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&after)
				mallocs += after.Mallocs - before.Mallocs
				bytes += after.TotalAlloc - before.TotalAlloc
			}
			benchcpu.Report(b, cpu)
			metrics.Read(gcCPU)
			if busy := gcCPU[1].Value.Float64() - gcCPU[2].Value.Float64() - busy0; busy > 0 {
				b.ReportMetric(100*(gcCPU[0].Value.Float64()-gc0)/busy, "gc-cpu-%")
			}
			perOp := float64(n * (len(frames) + 2))
			b.ReportMetric(float64(mallocs)/perOp, "allocs/frame")
			b.ReportMetric(float64(bytes)/perOp, "B/frame")
		})
	}
}

// benchStream serves a service with the default config over bufconn and
// opens one Normalize stream to it; both end with the benchmark.
// readBarriers reads st's answers until it fails: it hands on nil for
// each barrier's answer (a FrameError of no session), or the stream's
// error or the first unexpected FrameError, and stops.
func readBarriers(st pb.NormalizerService_NormalizeClient) <-chan error {
	barriers := make(chan error, 1)
	go func() {
		for {
			r, err := st.Recv()
			if err != nil {
				barriers <- err
				return
			}
			if fe := r.GetFrameError(); fe != nil {
				if fe.GetSessionId() != "" || fe.GetMessage() == "" {
					barriers <- fmt.Errorf("FrameError %v", fe)
					return
				}
				barriers <- nil
			}
		}
	}()
	return barriers
}

func benchStream(b *testing.B) pb.NormalizerService_NormalizeClient {
	svc, err := New(DefaultConfig(), nil, nil)
	require.NoError(b, err)
	srv := NewServer(svc, DefaultServerOptions(), nil)
	b.Cleanup(srv.GRPC.Stop)
	conn := serveBufconn(b, srv)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	st, err := pb.NewNormalizerServiceClient(conn).Normalize(ctx)
	require.NoError(b, err)
	return st
}
