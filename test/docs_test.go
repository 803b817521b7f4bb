package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is the target of an inline Markdown link or image.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinkOnlyWhatACloneHas: every relative link in the repository's
// Markdown points at a file or directory a clone has, and no document sends
// the reader outside the clone (../shared, absolute paths).
func TestDocsLinkOnlyWhatACloneHas(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files", "*.md").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	docs := strings.Fields(string(out))
	if len(docs) == 0 {
		t.Fatal("no Markdown files found")
	}
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
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if filepath.IsAbs(target) {
				t.Errorf("%s links to the absolute path %s", doc, target)
				continue
			}
			path := filepath.Join("..", filepath.Dir(doc), target)
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which is not in the clone", doc, m[1])
			}
		}
	}
}
