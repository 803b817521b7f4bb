package dialect

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// opencodeHeaderTexts are truncation headers with what may follow them,
// and near misses.
func opencodeHeaderTexts() []string {
	heads := []string{
		"...output truncated...\n\n", "...output truncated...\n\nFull output saved to: /tmp/f\n\n",
		"...output truncated...\n\nFull output saved to: /tmp/f\nUse Grep to search it\n\n",
		"...12 lines truncated...\n\nThe output was saved to: f\nline\nline\n\n", "...truncated...\n\nsaved to x\n",
		"...truncated...\n\nsaved to x\n\n\n", "...truncated...\n\n\nsaved to x\n\n", "...truncated...\n\nnothing here\n\n",
		"...truncated...\n", "...\ntruncated...\n\n", "..truncated...\n\n", "...truncated..\n\n", "...truncated...\n\nFull output\n",
	}
	tails := []string{"", "(no output)", "rest\n", "\n", "\n\nmore", "a\n\nb\n\nc", strings.Repeat("1234\n", 3000), strings.Repeat("x", 5000) + "\n\n"}
	var texts []string
	texts = append(texts, dialectGuardSamples...)
	for _, h := range heads {
		for _, t := range tails {
			texts = append(texts, h+t)
			for i := range len(h) {
				texts = append(texts, h[:i]+t, h[:i]+"\n"+h[i:]+t)
			}
		}
	}
	return texts
}

func TestOpencodeTruncHeaderInIsThePattern(t *testing.T) {
	matched := 0
	for _, text := range opencodeHeaderTexts() {
		want := opencodeTruncHeader.Regexp.FindStringIndex(text)
		if want != nil {
			matched++
		}
		assert.Equal(t, want, opencodeTruncHeaderIn(text), "%.80q", text)
	}
	assert.Greater(t, matched, 50, "the texts hold headers")
}

func FuzzOpencodeTruncHeaderIn(f *testing.F) {
	for _, text := range opencodeHeaderTexts() {
		if len(text) < 1024 {
			f.Add(text)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, want := opencodeTruncHeaderIn(text), opencodeTruncHeader.Regexp.FindStringIndex(text)
		if !assert.ObjectsAreEqual(want, got) {
			t.Fatalf("opencodeTruncHeaderIn(%q) = %v, the pattern %v", text, got, want)
		}
	})
}

// BenchmarkOpencodeTruncHeaderIn is the header found on a cut output's
// head against the pattern on its whole text (12 KB, as recorded).
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkOpencodeTruncHeaderIn
func BenchmarkOpencodeTruncHeaderIn(b *testing.B) {
	text := "...output truncated...\n\nFull output saved to: /home/dev/.local/share/opencode/tool-output/tool_1\n\n" + strings.Repeat("1234\n", 2400)
	b.Run("pattern", func(b *testing.B) {
		for b.Loop() {
			if opencodeTruncHeader.FindStringIndex(text) == nil {
				b.Fatal()
			}
		}
	})
	b.Run("head", func(b *testing.B) {
		for b.Loop() {
			if opencodeTruncHeaderIn(text) == nil {
				b.Fatal()
			}
		}
	})
}
