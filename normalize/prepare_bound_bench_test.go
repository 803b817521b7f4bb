package normalize

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkBoundReader is the reader id's look-up that PrepareIn makes
// for each frame read ahead: eight sessions, of one agent build and client
// (their ids equal, each its own string) or of four, in turn.
//
//	go test ./normalize -run '^$' -bench BenchmarkBoundReader
func BenchmarkBoundReader(b *testing.B) {
	for _, builds := range []int{1, 4} {
		b.Run(strconv.Itoa(builds), func(b *testing.B) { benchBoundReader(b, builds) })
	}
}

func benchBoundReader(b *testing.B, builds int) {
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = strings.Clone("claude\n0.10" + strconv.Itoa(i%builds) + ".0\n" + `{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}`)
	}
	i := 0
	for b.Loop() {
		if _, ok := boundReader(ids[i%len(ids)]); !ok {
			b.Fatal("not found")
		}
		i++
	}
}
