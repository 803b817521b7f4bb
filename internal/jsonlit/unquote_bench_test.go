package jsonlit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/benchcpu"
)

// BenchmarkUnquote decodes three 64 KiB outputs as a dialect reads them
// (Unquote of a validated literal) and as the elided decode does
// (DecodeLiteral, validating as it decodes): seq's output (an escape
// every 6 bytes or so), a build log (plain runs of about 45 bytes) and
// non-ASCII text (Cyrillic and CJK lines), plus a short field of a few
// escapes, as a frame's titles and commands are. ValidLiteral, which
// validates without decoding (a member the reader skips), is the floor.
//
//	go test ./internal/jsonlit -run '^$' -bench BenchmarkUnquote
func BenchmarkUnquote(b *testing.B) {
	var seq, log, intl strings.Builder
	for i := 1; seq.Len() < 64<<10; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	for i := 1; log.Len() < 64<<10; i++ {
		fmt.Fprintf(&log, "step %s: compiled package in %d ms\n", strings.Repeat("x", i%7), i%100)
	}
	for i := 1; intl.Len() < 64<<10; i++ {
		fmt.Fprintf(&intl, "строка %d: сборка завершена успешно 构建成功 %d\n", i, i%10)
	}
	texts := []struct{ name, s string }{
		{"seq", seq.String()}, {"log", log.String()}, {"non-ascii", intl.String()},
		{"short", "cd /repo && go test ./... \t# \"quoted\"\n"},
	}
	for _, text := range texts {
		lit, err := json.Marshal(text.s)
		if err != nil {
			b.Fatal(err)
		}
		frame := append(append([]byte{}, lit...), `,"kind":"execute"}`...)
		runReads(b, text.name, len(lit), []benchRead{
			{"Unquote", func() bool { _, ok := Unquote(lit); return ok }},
			{"DecodeLiteral", func() bool { _, _, ok := DecodeLiteral(frame); return ok }},
			{"ValidLiteral", func() bool { _, ok := ValidLiteral(lit); return ok }},
		})
	}
}

// benchRead is one way of reading a literal, for runReads: ok is false
// when the reader refused it.
type benchRead struct {
	name string
	read func() (ok bool)
}

// runReads runs each of reads as the sub-benchmark text/name over size
// bytes, with its CPU time reported; a refusal fails it.
func runReads(b *testing.B, text string, size int, reads []benchRead) {
	for _, c := range reads {
		b.Run(text+"/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			defer benchcpu.Report(b, benchcpu.Now())
			for b.Loop() {
				if !c.read() {
					b.Fatal("refused")
				}
			}
		})
	}
}
