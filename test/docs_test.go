package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mdLink is the target of an inline Markdown link or image.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinkOnlyWhatACloneHas: every relative link in the repository's
// Markdown points at a file or directory a clone has, and at a heading of
// it when it names an anchor (#...); no document sends the reader outside
// the clone (../shared, absolute paths).
func TestDocsLinkOnlyWhatACloneHas(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files", "*.md").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	docs := strings.Fields(string(out))
	if len(docs) == 0 {
		t.Fatal("no Markdown files found")
	}
	anchors := map[string][]string{} // by path, each file's read once
	for _, doc := range docs {
		if strings.Contains(doc, "node_modules/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("..", doc))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, outside := range []string{"../shared/", "/work/shared"} {
			if strings.Contains(text, outside) {
				t.Errorf("%s refers to %s, which a clone does not have", doc, outside)
			}
		}
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, fragment, _ := strings.Cut(target, "#")
			if filepath.IsAbs(target) {
				t.Errorf("%s links to the absolute path %s", doc, target)
				continue
			}
			path := filepath.Join("..", filepath.Dir(doc), target)
			if target == "" {
				path = filepath.Join("..", doc)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s links to %s, which is not in the clone", doc, m[1])
				continue
			}
			if fragment == "" || info.IsDir() || !strings.HasSuffix(path, ".md") {
				continue
			}
			if _, ok := anchors[path]; !ok {
				anchors[path] = headingAnchors(t, path)
			}
			if !slices.Contains(anchors[path], fragment) {
				t.Errorf("%s links to %s, and %s has no heading of that anchor", doc, m[1], filepath.Base(path))
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of the
// Markdown file at path: each heading's text in lower case, with every
// space a hyphen and every other rune dropped that is not a letter, a
// digit, a hyphen or an underscore; a repeated anchor gets -1, -2 and so
// on. Lines in fenced code blocks are not headings.
func headingAnchors(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var anchors []string
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		m := mdHeading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		a := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				return unicode.ToLower(r)
			}
			return -1
		}, strings.TrimSpace(m[1]))
		if n, ok := seen[a]; ok {
			seen[a] = n + 1
			a += "-" + strconv.Itoa(n+1)
		} else {
			seen[a] = 0
		}
		anchors = append(anchors, a)
	}
	return anchors
}

// mdHeading is an ATX heading; its text is the first group.
var mdHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
