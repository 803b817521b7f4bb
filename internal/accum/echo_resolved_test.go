package accum

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A file argument's resolved form is filepath.Join(cwd, word), whether
// the pattern spells it out or matches it as the cwd, a separator and the
// word; and matching the parts is matching the joined string.
func TestEchoResolvedIsJoin(t *testing.T) {
	cwds := []string{"/w", "/", "/w/p", "/w/", "/w//p", "/w/./p", "/w/../p", "rel", "rel/x", "../up", ".", "./x"}
	words := []string{"a.txt", "src/a.go", "./a", "../a", "a/./b", "a/../b", "a//b", "a/", "src/", "..", ".", "a.b/c.d"}
	for _, cwd := range cwds {
		p := newEchoPattern("cat "+strings.Join(words, " "), cwd)
		require.Len(t, p.lines, 1)
		line := p.lines[0]
		require.Len(t, line, len(words)+1)
		for i, w := range words {
			ew := line[i+1]
			assert.Equal(t, filepath.Join(cwd, w), p.resolvedOf(ew), "cwd %q word %q", cwd, w)
			for _, s := range []string{p.resolvedOf(ew), p.resolvedOf(ew) + " rest", p.resolvedOf(ew)[:len(p.resolvedOf(ew))/2], "/elsewhere/" + w} {
				wantM, wantN := matchPrefix(s, p.resolvedOf(ew))
				if ew.joined {
					m, n := matchJoined(s, p.dir, p.sep, ew.verbatim)
					assert.Equal(t, [2]int{int(wantM), wantN}, [2]int{int(m), n}, "cwd %q word %q text %q", cwd, w, s)
				}
			}
		}
	}
}

// FuzzEchoResolved holds the parts of a joined file argument to
// filepath.Join, and matching them to matching the joined string.
func FuzzEchoResolved(f *testing.F) {
	f.Add("/w", "a.txt", "/w/a.txt")
	f.Add("/", "a", "/a")
	f.Add("/w/p", "../b", "/w/b")
	f.Add("/w", "a//b/", "/w/a/")
	f.Fuzz(func(t *testing.T, cwd, w, s string) {
		if strings.ContainsAny(cwd+w, " \n\r") || !fileArgument(w) || cwd == "" {
			return
		}
		p := newEchoPattern("cat "+w, cwd)
		if len(p.lines) != 1 || len(p.lines[0]) != 2 {
			return
		}
		ew := p.lines[0][1]
		if got := p.resolvedOf(ew); got != filepath.Join(cwd, w) {
			t.Fatalf("cwd %q word %q: resolved %q, want %q", cwd, w, got, filepath.Join(cwd, w))
		}
		if ew.joined {
			wm, wn := matchPrefix(s, p.resolvedOf(ew))
			if m, n := matchJoined(s, p.dir, p.sep, ew.verbatim); m != wm || n != wn {
				t.Fatalf("text %q against %q: %v %d, want %v %d", s, p.resolvedOf(ew), m, n, wm, wn)
			}
		}
	})
}
