package normalize_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/stretchr/testify/require"
)

// BenchmarkFeed feeds every frame of each real recording (one agent and
// dialect each) to a Normalizer, on a fresh session closed at the end, and
// decodes the same frames with encoding/json into map[string]any, timing
// the two apart within each op. It reports feed-ns/op, json-ns/op and
// their ratio feed/json, and feed-ns/frame: what normalizing costs next to merely decoding
// the JSON an embedding program reads anyway.
func BenchmarkFeed(b *testing.B) {
	files, _ := filepath.Glob("../test/testdata/recordings/*.ndjson")
	if len(files) == 0 {
		b.Fatal("no recordings")
	}
	for _, file := range files {
		fs := frames(file)
		var size int64
		for _, f := range fs {
			size += int64(len(f))
		}
		name := strings.TrimSuffix(filepath.Base(file), ".ndjson")
		b.Run(name, func(b *testing.B) {
			n := normalize.New()
			b.SetBytes(size)
			b.ReportAllocs()
			var feed, decode time.Duration
			i := 0
			for b.Loop() {
				i++
				id := fmt.Sprint("s", i)
				start := time.Now()
				for _, f := range fs {
					n.Feed(id, f)
				}
				n.CloseSession(id)
				mid := time.Now()
				for _, f := range fs {
					var v map[string]any
					require.NoError(b, json.Unmarshal(f, &v))
				}
				feed, decode = feed+mid.Sub(start), decode+time.Since(mid)
			}
			b.ReportMetric(float64(feed.Nanoseconds())/float64(i*len(fs)), "feed-ns/frame")
			b.ReportMetric(float64(feed.Nanoseconds())/float64(i), "feed-ns/op")
			b.ReportMetric(float64(decode.Nanoseconds())/float64(i), "json-ns/op")
			b.ReportMetric(float64(feed)/float64(decode), "feed/json")
		})
	}
}
