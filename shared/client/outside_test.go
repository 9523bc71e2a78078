package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAnOutsideModuleBuildsOnTheClient takes the README's go.mod and
// main.go of an integrator's own module, points its replace at this
// checkout, and builds it as they would (go build, go.mod read-only): the
// snippet compiles as shown, and the client needs nothing of the service
// (the build fetches no module besides this one).
func TestAnOutsideModuleBuildsOnTheClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and links another module's program (1.5 to 8 s of make unit's tail): skipped with -short, as a Lambda bootstrap's link is; make test runs it")
	}
	root, _ := filepath.Abs("../..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := func(marker string) string {
		m := regexp.MustCompile("(?s)<!-- " + regexp.QuoteMeta(marker) + "[^>]*-->\n```[a-z]*\n(.*?)```").FindSubmatch(readme)
		if m == nil {
			t.Fatalf("README has no block after <!-- %s", marker)
		}
		return string(m[1])
	}
	gomod := strings.Replace(block("go.mod of an outside module"), "=> ../practice-api", "=> "+root, 1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(block("main.go of that module")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "crm-sync"), ".")
	cmd.Dir = dir
	// Exactly as an integrator builds it: no -mod=mod to paper over a
	// go.mod that needs updating (GOFLAGS cleared, in case the caller set it).
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's outside module does not build: %v\n%s", err, out)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "go.sum"))
	if len(strings.TrimSpace(string(sum))) != 0 {
		t.Fatalf("building on the client needed other modules:\n%s", sum)
	}
}
