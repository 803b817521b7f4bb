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
