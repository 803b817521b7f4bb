package service

import (
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// nopRecv is a stream whose every RecvMsg returns a request at once.
type nopRecv struct {
	pb.NormalizerService_NormalizeServer
}

func (nopRecv) RecvMsg(any) error { return nil }

// BenchmarkIdleStreamRecv is what the idle timeout adds to each request a
// stream reads (the default 15 minutes; the request itself costs nothing
// here), eight streams at once as at c=8.
//
//	go test ./internal/service -run '^$' -bench BenchmarkIdleStreamRecv
func BenchmarkIdleStreamRecv(b *testing.B) {
	b.SetParallelism(4) // 8 goroutines on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		idle := newIdleStream(nopRecv{}, 15*time.Minute, func() {})
		defer idle.stop()
		for pb.Next() {
			_ = idle.RecvMsg(nil)
		}
	})
}
