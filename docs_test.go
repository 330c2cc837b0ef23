package kubeapplier

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsLinks: every relative link of README.md and docs/*.md names a file that exists and,
// with #anchor, a heading of that file (GitHub's anchor rule: lower case, punctuation but '-'
// and '_' dropped, spaces to '-'), so moving a section cannot leave a dead link.
func TestDocsLinks(t *testing.T) {
	files, _ := filepath.Glob("docs/*.md")
	files = append(files, "README.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		b, _ := os.ReadFile(path)
		inCode := false
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "```") {
				inCode = !inCode
			}
			if !inCode && strings.HasPrefix(l, "#") {
				h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
				h = regexp.MustCompile(`[^\p{L}\p{N}\- _]`).ReplaceAllString(h, "")
				a[strings.ReplaceAll(h, " ", "-")] = true
			}
		}
		anchors[path] = a
		return a
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			if path == "" {
				path = f
			} else {
				path = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %q: %v", f, target, err)
				continue
			}
			if anchor != "" && !anchorsOf(path)[anchor] {
				t.Errorf("%s: link %q: no heading with that anchor in %s", f, target, path)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("%d links checked, want the docs' links (>= 20)", checked)
	}
}
