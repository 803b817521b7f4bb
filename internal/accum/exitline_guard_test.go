package accum

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// exitLineGuardLines are exit lines and near misses of their ends: every
// tail the pattern allows after the code, and ones it does not.
func exitLineGuardLines() []string {
	heads := []string{"Exit code 3", "exit status -12", "[Command exited with status 3", "<shellId: 1 completed with [exit: 3", "rc=3", "Return code: 2", "ExitCode: 3", "exit status x", "to-stdout", "tick11", "Exit code", "Exit code 12345678901"}
	tails := []string{"", ".", "]", ">", ")", "]]", "]>.", ")))", ")).", " ]", " \t]", "\n]", "\f", "\r", "\v", "\u00a0", "..", ". ", "] .", "a", "3", "x3", " 3]", "] ]", "]\n"}
	var lines []string
	for _, h := range heads {
		for _, t := range tails {
			lines = append(lines, h+t, strings.ToUpper(h+t), t+h)
		}
	}
	return lines
}

// endsAsExitLine never refuses a line exitLinePattern matches.
func TestEndsAsExitLineKeepsEveryMatch(t *testing.T) {
	matched := 0
	for _, line := range exitLineGuardLines() {
		m := exitLinePattern.MatchString(line)
		if m {
			matched++
			assert.True(t, endsAsExitLine([]byte(line)), "%q", line)
		}
	}
	assert.Greater(t, matched, 50, "the lines hold exit lines")
	assert.False(t, endsAsExitLine([]byte("an output line")))
	assert.False(t, endsAsExitLine([]byte("3)))")))
}

func FuzzEndsAsExitLine(f *testing.F) {
	for _, line := range exitLineGuardLines() {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if exitLinePattern.MatchString(line) && !endsAsExitLine([]byte(line)) {
			t.Fatalf("%q matches the pattern, and endsAsExitLine refuses it", line)
		}
	})
}
