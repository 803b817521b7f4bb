package normalize

import (
	"strings"
	"testing"
)

// BenchmarkBoundReader is the reader id's look-up that PrepareIn makes
// for each frame read ahead: eight sessions of one agent build and client
// (their ids equal, each its own string), in turn.
//
//	go test ./normalize -run '^$' -bench BenchmarkBoundReader
func BenchmarkBoundReader(b *testing.B) {
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = strings.Clone("claude\n0.101.0\n" + `{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}`)
	}
	i := 0
	for b.Loop() {
		if _, ok := boundReader(ids[i%len(ids)]); !ok {
			b.Fatal("not found")
		}
		i++
	}
}
