package dialect

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// claudeNoticePattern is the one pattern claudeNotice matches in two
// parts (see claudeNotice).
var claudeNoticePattern = regexp.MustCompile(`(?s)^(?:User refused permission to run tool\.?|The user doesn't want to (?:proceed with|take) this (?:tool use|action)\b.*|\[Request interrupted by user(?: for tool use)?\]|Tool cancelled by user\.?)$`)

// claudeNoticeTexts are the notices and near misses: each notice whole,
// cut short at every byte, and followed by what may and may not follow it.
func claudeNoticeTexts() []string {
	notices := []string{
		"User refused permission to run tool", "User refused permission to run tool.",
		"The user doesn't want to proceed with this tool use", "The user doesn't want to take this action",
		"The user doesn't want to proceed with this action", "The user doesn't want to take this tool use",
		"[Request interrupted by user]", "[Request interrupted by user for tool use]",
		"Tool cancelled by user", "Tool cancelled by user.",
	}
	tails := []string{
		"", ".", "..", " ", "s", "_", "1", "é", "\xff", "\n", "\nmore", ". The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.",
		"r", "\u00a0", "-", "]", " for tool use]", "\x00",
	}
	texts := append([]string(nil), dialectGuardSamples...)
	for _, n := range notices {
		for i := range len(n) {
			texts = append(texts, n[:i], n[:i]+"x", strings.ToLower(n[:i+1])+n[i+1:])
		}
		for _, t := range tails {
			texts = append(texts, n+t, t+n, strings.Repeat(n+t, 2))
		}
		texts = append(texts, n+strings.Repeat("x", 600), n+" "+strings.Repeat("reason ", 100))
	}
	return texts
}

func TestClaudeNoticeIsItsPattern(t *testing.T) {
	matched := 0
	for _, text := range claudeNoticeTexts() {
		want := claudeNoticePattern.MatchString(text)
		if want {
			matched++
		}
		assert.Equal(t, want, claudeNotice(text), "%q", text)
	}
	assert.Greater(t, matched, 30, "the texts hold notices")
}

func FuzzClaudeNotice(f *testing.F) {
	for _, text := range claudeNoticeTexts() {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := claudeNotice(text), claudeNoticePattern.MatchString(text); got != want {
			t.Fatalf("claudeNotice(%q) = %v, the pattern %v", text, got, want)
		}
	})
}

// BenchmarkClaudeNotice is claudeNotice against its one pattern on a
// rejection as claude-agent-acp sends it (600 bytes of reason) and on a
// command's output that starts as a notice does.
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkClaudeNotice
func BenchmarkClaudeNotice(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"rejection", "The user doesn't want to proceed with this tool use. The tool use was rejected " + strings.Repeat("reason ", 75)},
		{"output", "Tests passed\n" + strings.Repeat("ok\n", 200)},
	} {
		want := claudeNoticePattern.MatchString(c.text)
		b.Run(c.name+"/pattern", func(b *testing.B) {
			for b.Loop() {
				if claudeNoticePattern.MatchString(c.text) != want {
					b.Fatal()
				}
			}
		})
		b.Run(c.name+"/claudeNotice", func(b *testing.B) {
			for b.Loop() {
				if claudeNotice(c.text) != want {
					b.Fatal()
				}
			}
		})
	}
}
