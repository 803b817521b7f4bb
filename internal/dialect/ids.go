package dialect

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// replacement is U+FFFD as UTF-8: what the decode makes of invalid UTF-8
// and of a lone surrogate escape (as encoding/json does).
const replacement = string(utf8.RuneError)

// unsoundIDs returns an error when an id the frame names a call or a
// terminal by holds U+FFFD that the frame did not send as such: a string
// literal with invalid UTF-8 or a lone surrogate escape (`"id\ud800"`)
// decodes to it. Two such ids that differ only there ("id\ud800" and
// "id\udfff") decode alike, so they would be read as one call, one's
// result taken for the other's. An id that holds U+FFFD itself (sent as
// its UTF-8 or as `\ufffd`) is sound. The scan runs only when an id holds
// U+FFFD, which no agent's ids do.
func unsoundIDs(msg []byte, f *Frame) error {
	var odd []string
	note := func(id string) {
		if strings.Contains(id, replacement) {
			odd = append(odd, id)
		}
	}
	for i := range f.Observations {
		note(f.Observations[i].ToolCallID)
		note(f.Observations[i].TerminalID)
	}
	if f.Terminal != nil {
		note(f.Terminal.TerminalID)
	}
	if f.Response != nil {
		note(f.Response.TerminalID)
	}
	if odd == nil {
		return nil
	}
	for i := 0; i < len(msg); {
		q := bytes.IndexByte(msg[i:], '"')
		if q < 0 {
			break
		}
		start := i + q
		end := jsonlit.StringEnd(msg, start)
		lit := msg[start:end]
		i = end
		if !bytes.Contains(lit, []byte(`\u`)) && utf8.Valid(lit) {
			continue // decodes to U+FFFD only where it holds it
		}
		s, ok := jsonlit.Unquote(lit)
		if !ok {
			continue
		}
		for _, id := range odd {
			if s == id && !jsontext.Value(lit).IsValid() {
				return fmt.Errorf("the id %s is not valid Unicode (invalid UTF-8 or a lone surrogate escape), so it cannot be told from ids that differ only there", shownLiteral(lit))
			}
		}
	}
	return nil
}

// shownLiteral is a string literal as an error shows it: as sent when it
// is valid UTF-8 (a lone surrogate escape shows as its escape), else
// its text quoted by Go (an invalid byte shows as \xNN); at most 80
// bytes of it.
func shownLiteral(lit []byte) string {
	if len(lit) > 80 {
		lit = lit[:80]
	}
	if utf8.Valid(lit) {
		return string(lit)
	}
	return fmt.Sprintf("%q", bytes.TrimSuffix(lit[1:], []byte{'"'}))
}
