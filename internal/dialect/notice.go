package dialect

import (
	"strings"
	"unicode/utf8"
)

// noticeLimit bounds the notice a dialect quotes in an outcome reason.
const noticeLimit = 160

// notice shortens an agent's cancel or refusal text for
// accum.Observation.CancelNotice: its first non-empty line, trimmed, cut
// on a rune boundary with "…" past noticeLimit bytes. Such a text is never
// output; the notice only says in words why the call was cancelled.
func notice(s string) string {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if len(line) > noticeLimit {
			cut := noticeLimit
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut--
			}
			line = line[:cut] + "…"
		}
		return line
	}
	return ""
}

// Agents written in JavaScript measure and cut text in UTF-16 units, the
// length JavaScript gives a string; their limits and cut marks are read
// in those units.

// utf16Units is how many UTF-16 units r takes.
func utf16Units(r rune) int {
	if r >= 0x10000 && r <= utf8.MaxRune {
		return 2
	}
	return 1
}

// utf16Len is the length JavaScript gives s.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Units(r)
	}
	return n
}

// utf16Index is the byte offset in s after its first n UTF-16 units: the
// i with utf16Len(s[:i]) == n, or -1 when s is shorter or unit n falls
// inside a surrogate pair (JavaScript's slice there splits a character).
func utf16Index(s string, n int) int {
	u := 0
	for i, r := range s {
		if u == n {
			return i
		}
		if u > n {
			return -1
		}
		u += utf16Units(r)
	}
	if u == n {
		return len(s)
	}
	return -1
}
