package service

import (
	"bytes"
	"fmt"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/benchcpu"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// BenchmarkCodecUnmarshal reads one frame request as the server's codec
// does, arriving in one buffer or in 16 KiB pieces (HTTP/2's default
// frame size): into a request of its own, the message copied (gRPC's
// Recv), and into the stream reader's received, the message read in
// place and its buffer freed after (the request made by the codec, the
// one the reader gives it kept for the next).
//
//	go test ./internal/service -run '^$' -bench BenchmarkCodecUnmarshal
func BenchmarkCodecUnmarshal(b *testing.B) {
	c := newTolerantCodec()
	for _, size := range []int{512, 8 << 10, 64 << 10} {
		msg := bytes.Repeat([]byte("x"), size)
		wire, err := proto.Marshal(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "session-1", Dialect: "auto", Sequence: 7, Message: msg}}})
		if err != nil {
			b.Fatal(err)
		}
		var pieces mem.BufferSlice
		for p := wire; len(p) > 0; {
			n := min(len(p), 16<<10)
			pieces = append(pieces, mem.SliceBuffer(p[:n]))
			p = p[n:]
		}
		name := fmt.Sprintf("%d/pieces=%d", size, len(pieces))
		b.Run(name+"/copied", func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Unmarshal(pieces, new(pb.NormalizeRequest)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/in-place", func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			var r received
			var spare *pb.NormalizeRequest // as the reader keeps one (see recvLoop)
			cpu := benchcpu.Now()
			for b.Loop() {
				if spare == nil {
					spare = new(pb.NormalizeRequest)
				}
				r.NormalizeRequest, r.buf = spare, nil
				if err := c.Unmarshal(pieces, &r); err != nil {
					b.Fatal(err)
				}
				if r.NormalizeRequest == spare {
					spare = nil
				}
				pending{buf: r.buf}.release()
			}
			benchcpu.Report(b, cpu)
		})
	}
}
