package service

import (
	"bytes"
	"fmt"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// BenchmarkCodecUnmarshal reads one frame request as the server's codec
// does, arriving in one buffer or in 16 KiB pieces (HTTP/2's default
// frame size).
//
//	go test ./internal/service -run '^$' -bench BenchmarkCodecUnmarshal
func BenchmarkCodecUnmarshal(b *testing.B) {
	c := newTolerantCodec()
	for _, size := range []int{512, 8 << 10, 64 << 10} {
		msg := bytes.Repeat([]byte("x"), size)
		wire, err := proto.Marshal(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "session-1", Sequence: 7, Message: msg}}})
		if err != nil {
			b.Fatal(err)
		}
		var pieces mem.BufferSlice
		for p := wire; len(p) > 0; {
			n := min(len(p), 16<<10)
			pieces = append(pieces, mem.SliceBuffer(p[:n]))
			p = p[n:]
		}
		b.Run(fmt.Sprintf("%d/pieces=%d", size, len(pieces)), func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Unmarshal(pieces, new(pb.NormalizeRequest)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
