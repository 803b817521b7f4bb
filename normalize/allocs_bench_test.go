package normalize_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
)

// BenchmarkFeedAllocs feeds every frame of each real recording through
// the whole engine (normalize.Feed, the dialect named or found by the
// session, accumulation, revisions), on a fresh session closed at the end
// of each op, and reports what Feed alone allocates: allocs/frame and
// B/frame (runtime.MemStats around the Feed calls, nothing else in
// between), and the collector cycles per 1,000 frames.
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
			frames := float64(i * len(fs))
			b.ReportMetric(float64(mallocs)/frames, "allocs/frame")
			b.ReportMetric(float64(bytes)/frames, "B/frame")
			b.ReportMetric(float64(gcs)*1000/frames, "gc/1kframes")
		})
	}
}
