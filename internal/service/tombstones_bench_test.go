package service

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/bench/load"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/benchcpu"
	"github.com/acpnorm/acpnorm/internal/gcpace"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/stretchr/testify/require"
)

// BenchmarkStreamTombstonesFull is BenchmarkStreamAllocs's stream, every
// claude and opencode recording in turn an op, as acpnormd runs it: the
// collector paced with acpnormd's floor (gcpace.DefaultFloor), and the
// tombstones full first (normalize.DefaultTombstones released calls,
// sessions of 16 calls with ids as long as an agent's, each closed), as
// they are after a while of a load that closes the sessions it opens.
// Besides the CPU per op it reports the collections per op (gc/op), the
// collector's share of the process's CPU (gc-cpu-%) and the live heap
// after the last collection (live-MiB).
//
//	go test ./internal/service -run '^$' -bench BenchmarkStreamTombstonesFull -benchtime 300x
func BenchmarkStreamTombstonesFull(b *testing.B) {
	// Only these recordings are read: the live heap is the server's,
	// as acpnormd's is, not every recording's.
	files, _ := filepath.Glob("../../test/testdata/recordings/*.ndjson")
	var frames []load.Frame
	for _, file := range files {
		if name := filepath.Base(file); !strings.HasPrefix(name, "claude") && !strings.HasPrefix(name, "opencode") {
			continue
		}
		lines, err := replay.ReadFile(file)
		require.NoError(b, err)
		for _, l := range lines {
			frames = append(frames, load.Frame{Dir: l.Dir, Msg: l.Msg})
		}
	}
	require.NotEmpty(b, frames)
	defer gcpace.Start(gcpace.DefaultFloor).Stop()
	svc, err := New(DefaultConfig(), nil, nil)
	require.NoError(b, err)
	srv := NewServer(svc, DefaultServerOptions(), nil)
	b.Cleanup(srv.GRPC.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	st, err := pb.NewNormalizerServiceClient(serveBufconn(b, srv)).Normalize(ctx)
	require.NoError(b, err)
	barriers := readBarriers(st)
	var seq uint64
	send := func(r *pb.NormalizeRequest) {
		if err := st.Send(r); err != nil {
			b.Fatal(err)
		}
	}
	barrier := func() {
		seq++
		send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{Sequence: seq, Message: []byte("{}")}}})
		if err := <-barriers; err != nil {
			b.Fatal(err)
		}
	}
	const calls = 16
	for s := range normalize.DefaultTombstones / calls {
		sid := fmt.Sprintf("ses_%026d", s)
		for c := range calls {
			seq++
			msg := fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"tool_call","toolCallId":"toolu_01%024d","kind":"execute","title":"ls","rawInput":{"command":"ls"}}}}`, sid, c)
			send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: sid, Sequence: seq, Direction: pb.Direction_DIRECTION_AGENT_TO_CLIENT, Message: []byte(msg)}}})
		}
		seq++
		send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid, Sequence: seq}}})
		if s%256 == 255 {
			barrier()
		}
	}
	barrier()
	stats := svc.sessions.n.Stats()
	require.Equal(b, normalize.DefaultTombstones, stats.Tombstones, "tombstones after the fill")
	require.Zero(b, stats.Sessions, "sessions open after the fill")
	runtime.GC()
	var size int64
	for _, f := range frames {
		size += int64(len(f.Msg))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	m := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/idle:cpu-seconds"}, {Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(m)
	gc0, busy0, cycles0 := m[0].Value.Float64(), m[1].Value.Float64()-m[2].Value.Float64(), m[3].Value.Uint64()
	cpu := benchcpu.Now()
	n := 0
	for b.Loop() {
		n++
		sid := fmt.Sprintf("full-%d", n)
		for _, f := range frames {
			seq++
			send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: sid, Sequence: seq, Direction: f.Dir, Message: f.Msg}}})
		}
		seq++
		send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid, Sequence: seq}}})
		barrier()
	}
	benchcpu.Report(b, cpu)
	metrics.Read(m)
	if busy := m[1].Value.Float64() - m[2].Value.Float64() - busy0; busy > 0 {
		b.ReportMetric(100*(m[0].Value.Float64()-gc0)/busy, "gc-cpu-%")
	}
	b.ReportMetric(float64(m[3].Value.Uint64()-cycles0)/float64(n), "gc/op")
	b.ReportMetric(float64(m[4].Value.Uint64())/(1<<20), "live-MiB")
}
