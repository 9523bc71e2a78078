// Package docs holds the project's documents; its test keeps them usable:
// the README short enough to read to the end, and every link between the
// documents pointing at a file the repository has.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/httpapi"
)

func TestTheREADMEIsReadToTheEnd(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n >= 250 {
		t.Fatalf("README.md has %d lines; keep it under 250 and move detail to a page under docs/", n)
	}
	for _, want := range []string{"make run", "make test", "make unit", "make help", "docs/settings.md", "docs/guide.md", "docs/deploying.md", "docs/local-runtimes.md"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("README.md does not mention %s", want)
		}
	}
}

// TestLinksResolve: every relative link of the README, DEVELOPERS.md and
// docs/*.md names a file of the repository (anchors aside), and none leaves
// the repository.
func TestLinksResolve(t *testing.T) {
	pages, _ := filepath.Glob("*.md")
	pages = append(pages, "../README.md", "../DEVELOPERS.md")
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	root, _ := filepath.Abs("..")
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(raw), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			abs, _ := filepath.Abs(filepath.Join(filepath.Dir(page), target))
			if !strings.HasPrefix(abs, root+string(filepath.Separator)) {
				t.Errorf("%s links outside the repository: %s", page, target)
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
			}
		}
	}
}

// TestEveryErrorCodeIsDocumented: api.md's table of error codes lists
// every code the API answers with, with its status.
func TestEveryErrorCodeIsDocumented(t *testing.T) {
	raw, err := os.ReadFile("api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range httpapi.Codes {
		if row := fmt.Sprintf("| `%s` | %d |", c.Code, c.Status); !strings.Contains(string(raw), row) {
			t.Errorf("api.md lacks the row %s", row)
		}
	}
}
