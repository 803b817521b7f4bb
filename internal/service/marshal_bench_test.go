package service

import (
	"context"
	"fmt"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/benchcpu"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
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
		var made []bool // as a stream's feeder made it (feeder.madeHere)
		ss := newSessions(DefaultConfig(), NewMetrics(nil), nil)
		var feed *feeder
		feed = ss.newFeeder(context.Background(), nil, func(r *pb.NormalizeResponse) error {
			outs = append(outs, r)
			made = append(made, feed.madeHere(r))
			return nil
		})
		for j, f := range all[i] {
			r := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
				SessionId: "marshal", Dialect: "auto", Sequence: uint64(j + 1), Direction: f.Dir, Message: f.Msg,
			}}}
			_, err := feed.handle(r, nil)
			require.NoError(b, err)
		}
		send := sender(newTolerantCodec())
		b.Run(fmt.Sprintf("%s/%d", name, len(outs)), func(b *testing.B) {
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for k, r := range outs {
					bs, err := send(r, made[k])
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

// sender sizes a response as a stream does when it queues it, and
// encodes it as the send loop hands it to gRPC (one sized for them all);
// made says the stream's feeder made it (see outgoing.textsValid).
func sender(codec tolerantCodec) func(r *pb.NormalizeResponse, made bool) (mem.BufferSlice, error) {
	msg := new(sized)
	return func(r *pb.NormalizeResponse, made bool) (mem.BufferSlice, error) {
		it := toSendMade(r, made)
		*msg = it.sized()
		return codec.Marshal(msg)
	}
}
