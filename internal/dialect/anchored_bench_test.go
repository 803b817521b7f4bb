package dialect

import (
	"fmt"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/benchcpu"
)

// BenchmarkAnchored tries claude-agent-acp's cancel notice (claudeNotice)
// and OpenCode's truncation header (opencodeTruncHeader), which the
// dialects try on every output text, on command outputs that are
// neither, as the regexp alone and guarded by the first bytes a match can
// start with (anchored).
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkAnchored
func BenchmarkAnchored(b *testing.B) {
	var seq strings.Builder
	for i := 1; seq.Len() < 64<<10; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	for _, size := range []int{64, 1 << 10, 64 << 10} {
		text := seq.String()[:size]
		for _, g := range []struct {
			name string
			a    *anchored
		}{{"claudeNotice", claudeNotice}, {"opencodeTruncHeader", opencodeTruncHeader}} {
			a, name := g.a, fmt.Sprintf("%s/%d", g.name, size)
			b.Run(name+"/regexp", func(b *testing.B) {
				defer benchcpu.Report(b, benchcpu.Now())
				for b.Loop() {
					if a.Regexp.FindStringIndex(text) != nil {
						b.Fatal("matched")
					}
				}
			})
			b.Run(name+"/anchored", func(b *testing.B) {
				defer benchcpu.Report(b, benchcpu.Now())
				for b.Loop() {
					if a.FindStringIndex(text) != nil {
						b.Fatal("matched")
					}
				}
			})
		}
	}
}
