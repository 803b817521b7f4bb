package normalize_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
)

// BenchmarkFeedAllocs feeds every frame of each real recording through
// the whole engine (normalize.Feed, the dialect named or found by the
// session, accumulation, revisions), on a fresh session closed at the end
// of each op, and reports what Feed alone allocates: allocs/frame and
// B/frame (runtime.MemStats around the Feed calls, nothing else in
// between), the collector cycles per 1,000 frames, and the collector's
// share of the CPU the process used (not idle) over the whole benchmark (gc-cpu-%, from
// runtime/metrics: the runtime's own estimate, updated at each cycle).
//
//	go test ./normalize -run '^$' -bench BenchmarkFeedAllocs -benchtime 200x
func BenchmarkFeedAllocs(b *testing.B) {
	files, _ := filepath.Glob("../test/testdata/recordings/*.ndjson")
	if len(files) == 0 {
		b.Fatal("no recordings")
	}
	for _, file := range files {
		fs := frames(file)
		name := strings.TrimSuffix(filepath.Base(file), ".ndjson")
		b.Run(name, func(b *testing.B) {
			n := normalize.New()
			var before, after runtime.MemStats
			var mallocs, bytes uint64
			var gcs uint32
			cpu := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/idle:cpu-seconds"}}
			metrics.Read(cpu)
			gc0, busy0 := cpu[0].Value.Float64(), cpu[1].Value.Float64()-cpu[2].Value.Float64()
			i := 0
			for b.Loop() {
				i++
				id := fmt.Sprint("s", i)
				runtime.ReadMemStats(&before)
				for _, f := range fs {
					n.Feed(id, f)
				}
				n.CloseSession(id)
				runtime.ReadMemStats(&after)
				mallocs += after.Mallocs - before.Mallocs
				bytes += after.TotalAlloc - before.TotalAlloc
				gcs += after.NumGC - before.NumGC
			}
			metrics.Read(cpu)
			if busy := cpu[1].Value.Float64() - cpu[2].Value.Float64() - busy0; busy > 0 {
				b.ReportMetric(100*(cpu[0].Value.Float64()-gc0)/busy, "gc-cpu-%")
			}
			frames := float64(i * len(fs))
			b.ReportMetric(float64(mallocs)/frames, "allocs/frame")
			b.ReportMetric(float64(bytes)/frames, "B/frame")
			b.ReportMetric(float64(gcs)*1000/frames, "gc/1kframes")
		})
	}
}
