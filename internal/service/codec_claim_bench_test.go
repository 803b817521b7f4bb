package service

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/benchcpu"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"
)

// BenchmarkClaim sends, on one stream of the real server (in memory, over
// bufconn, defaults), a frame of a session of its own whose
// held_revisions names calls the session never had: at the bound (65536
// calls, 0.7 MB) and far over it (1.1 million, 12 MB, under
// --max-message-bytes), then a barrier whose answer ends the op. The
// client sends the encoded bytes as they are (no marshalling counted).
// B/op is what the whole process allocated per request; cpu-ns/op its
// CPU time. Before the bound, both were decoded whole and 2048 of their
// ids selected by sorting every id; now the one over is refused unread.
//
//	go test ./internal/service -run '^$' -bench BenchmarkClaim -benchtime 5x
func BenchmarkClaim(b *testing.B) {
	for _, c := range []struct {
		name  string
		calls int
	}{{"at-bound", 1 << 16}, {"over", 1_100_000}} {
		b.Run(c.name, func(b *testing.B) {
			held := make(map[string]uint32, c.calls)
			for i := range c.calls {
				held[fmt.Sprintf("%x", i)] = 1
			}
			const sid = "claim-00000000"
			wire, err := proto.Marshal(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
				SessionId: sid, Message: []byte(openCall("c1", "make")), HeldRevisions: held}}})
			if err != nil {
				b.Fatal(err)
			}
			at := bytes.Index(wire, []byte(sid))
			svc, err := New(DefaultConfig(), nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			srv := NewServer(svc, DefaultServerOptions(), nil)
			b.Cleanup(srv.GRPC.Stop)
			conn := serveBufconn(b, srv)
			ctx, cancel := context.WithCancel(context.Background())
			b.Cleanup(cancel)
			st, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
				"/acpnorm.v1.NormalizerService/Normalize", grpc.ForceCodecV2(rawCodec{encoding.GetCodecV2("proto")}))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			codes := map[int32]int{}
			n := 0
			cpu := benchcpu.Now()
			for b.Loop() {
				n++
				// A session of its own: the bytes are not sent any more
				// once the barrier after them was answered.
				copy(wire[at:], fmt.Sprintf("claim-%08d", n))
				barrier, _ := proto.Marshal(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{Sequence: uint64(n), Message: []byte("{}")}}})
				if err := st.SendMsg(wire); err != nil {
					b.Fatal(err)
				}
				if err := st.SendMsg(barrier); err != nil {
					b.Fatal(err)
				}
				for {
					var r pb.NormalizeResponse
					if err := st.RecvMsg(&r); err != nil {
						b.Fatal(err)
					}
					if fe := r.GetFrameError(); fe != nil {
						if fe.GetSessionId() == "" && fe.GetSequence() == uint64(n) {
							break
						}
						codes[fe.GetCode()]++
					}
				}
			}
			benchcpu.Report(b, cpu)
			b.Logf("%d requests: FrameError codes %v", n, codes)
		})
	}
}
