package service

import (
	"context"
	"fmt"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/benchcpu"
	"github.com/stretchr/testify/require"
)

// BenchmarkMarshalRevisions sizes (as a stream does when it queues a
// response) and encodes (as gRPC does when it sends one, through the
// codec) the responses a recording's frames make. One op is every
// response of the recording.
//
//	go test ./internal/service -run '^$' -bench BenchmarkMarshalRevisions
func BenchmarkMarshalRevisions(b *testing.B) {
	names, all := pathClasses(b)
	for i, name := range names {
		if strings.HasPrefix(name, "grok-") {
			continue
		}
		var outs []*pb.NormalizeResponse
		ss := newSessions(DefaultConfig(), NewMetrics(nil), nil)
		feed := ss.newFeeder(context.Background(), nil, func(r *pb.NormalizeResponse) error {
			outs = append(outs, r)
			return nil
		})
		for j, f := range all[i] {
			r := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
				SessionId: "marshal", Dialect: "auto", Sequence: uint64(j + 1), Direction: f.Dir, Message: f.Msg,
			}}}
			_, err := feed.handle(r, nil)
			require.NoError(b, err)
		}
		codec := newTolerantCodec()
		b.Run(fmt.Sprintf("%s/%d", name, len(outs)), func(b *testing.B) {
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for _, r := range outs {
					_ = sizeOf(r)
					bs, err := codec.Marshal(r)
					if err != nil {
						b.Fatal(err)
					}
					bs.Free()
				}
			}
			benchcpu.Report(b, cpu)
		})
	}
}
