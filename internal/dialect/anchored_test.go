package dialect

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// anchoredPatterns are patterns whose first bytes are worked out in
// different ways: alternations, classes, optional groups, empty-width
// tests, runes past ASCII, case folding, and ones that can match the
// empty text or any byte.
var anchoredPatterns = []string{
	`^abc`, `^(?:ab|c)d`, `^[a-c]x`, `^a?b`, `^(?:x|y*)z`, `^\bword`, `^$`,
	`^.`, `^(?s).`, `^é`, `^[à-ü]+$`, `^[^a]`, `^(?i)k`, `^(?i)ab`, `^\d+\.`,
	`(?s)^(?:User refused|The user\b.*|\[Req)$`, `^(a*)*b`, `^(?:\(x\))?y`,
}

// anchoredAlphabet builds the texts the guarded regexps are checked on:
// every string of up to three of these pieces (ASCII letters of the
// patterns and others, a newline, a rune past ASCII, a byte that is not
// UTF-8, digits and punctuation).
var anchoredAlphabet = []string{"a", "b", "c", "x", "y", "z", "A", "K", "k", "\n", " ", "é", "\xff", "1", ".", "(", ")", "[", "U", "T"}

func anchoredTexts() []string {
	texts := []string{"", "User refused", "The user said no", "[Req", "word", "wordy", "(x)y", "12.", "aaab"}
	level := []string{""}
	for range 3 {
		var next []string
		for _, t := range level {
			for _, p := range anchoredAlphabet {
				next = append(next, t+p)
			}
		}
		texts = append(texts, next...)
		level = next
	}
	return texts
}

// A guarded regexp answers exactly as the regexp does, on every text, for
// every pattern of the table and every one the dialects guard.
func TestAnchoredMatchesAsRegexp(t *testing.T) {
	patterns := append([]string{}, anchoredPatterns...)
	for _, a := range guardedByDialects {
		patterns = append(patterns, a.String())
	}
	texts := append(anchoredTexts(), dialectGuardSamples...)
	for _, p := range patterns {
		a, re := mustAnchored(p), regexp.MustCompile(p)
		for _, s := range texts {
			require.Equal(t, re.MatchString(s), a.MatchString(s), "MatchString %q on %q", p, s)
			require.Equal(t, re.FindStringSubmatch(s), a.FindStringSubmatch(s), "FindStringSubmatch %q on %q", p, s)
			require.Equal(t, re.FindSubmatch([]byte(s)), a.FindSubmatch([]byte(s)), "FindSubmatch %q on %q", p, s)
			require.Equal(t, re.FindStringIndex(s), a.FindStringIndex(s), "FindStringIndex %q on %q", p, s)
		}
	}
}

// The first bytes are bounded where they can be, so the guard skips
// texts; a pattern that can match the empty text or start with any byte
// always runs.
func TestAnchoredFirstBytes(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		first   string // the ASCII bytes a match can start with; "" unbounded
	}{
		{`^abc`, "a"},
		{`^(?:ab|c)d`, "ac"},
		{`^a?b`, "ab"},
		{`^(?:x|y*)z`, "xyz"},
		{`^\bword`, "w"},
		{`^\d+\.`, "0123456789"},
		{`^$`, ""},
		{`^.`, ""},
		{`^(?i)k`, ""},
	} {
		a := mustAnchored(tc.pattern)
		if tc.first == "" {
			assert.True(t, a.all, "%s: bounded", tc.pattern)
			continue
		}
		require.False(t, a.all, "%s: unbounded", tc.pattern)
		var got []byte
		for c := range 0x80 {
			if a.first[c] {
				got = append(got, byte(c))
			}
		}
		assert.Equal(t, tc.first, string(got), tc.pattern)
	}
	for _, a := range guardedByDialects {
		assert.False(t, a.all, "%s guards nothing", a)
	}
	assert.Panics(t, func() { mustAnchored(`abc`) }, "a pattern not anchored at the start")
	assert.Panics(t, func() { mustAnchored(`(?m)^abc`) }, "a pattern anchored at a line's start")
}

// guardedByDialects are the regexps the dialects match through anchored.
var guardedByDialects = []*anchored{
	claudeNotice, claudeNoOutput, claudeUnfinished, claudeTermHeader,
	claudeTermBackground, claudeExitHeader, claudeBgStarted, opencodeTruncHeader,
}

// dialectGuardSamples are texts the guarded regexps match, and near
// misses of them.
var dialectGuardSamples = []string{
	"User refused permission to run tool", "User refused permission to run tool.",
	"The user doesn't want to proceed with this tool use. The tool use was rejected",
	"[Request interrupted by user for tool use]", "Tool cancelled by user.",
	"(Bash completed with no output)", "(Bash completed with no output) ",
	"Claude stopped this tool call before it ran.",
	"The turn was cancelled before this tool call returned a result.",
	"Exited with code 2.Final output:\n\nboom", "Killed. Signal `SIGKILL`. New output:\n\n",
	"Interrupted by the user. Final output:\n\nx", "Timed out. Exited with code 124.New output:\n\n",
	"Command started in background with id: b1", "Command started in background with id: ",
	"Exit code 1\nfailed", "Exit code -2", "Exit code", " Exit code 1",
	"Command running in background with ID: 7\nmore", "\nUser refused permission to run tool",
	"...output truncated...\n\nFull output saved to /tmp/x\n\nrest", "...truncated...\n\nrest", "..truncated...\n\n",
}
