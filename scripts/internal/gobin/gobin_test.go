package gobin_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/scripts/internal/gobin"
)

func run(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return strings.TrimSpace(string(out))
}

// A program built with its flags, into place over one that is running,
// and each set of flags its own program: the cache is keyed by what was
// linked, not by the package.
func TestBuildKeepsEachProgramApart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dest := filepath.Join(dir, "bin", "hello")
	if err := gobin.Build(ctx, ".", "./testdata/hello", dest, nil, "-trimpath"); err != nil {
		t.Fatal(err)
	}
	if got := run(t, dest); got != "hello" {
		t.Fatalf("built program says %q, want hello", got)
	}
	// The running program's file is replaced, not written over (on
	// Linux, text file busy).
	running := exec.Command(dest, "30s")
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = running.Process.Kill(); _ = running.Wait() }()
	for _, greeting := range []string{"hej", "goddag"} {
		if err := gobin.Build(ctx, ".", "./testdata/hello", dest, nil, "-trimpath", "-ldflags", "-X main.greeting="+greeting); err != nil {
			t.Fatal(err)
		}
		if got := run(t, dest); got != greeting {
			t.Fatalf("built with greeting %s, the program says %q", greeting, got)
		}
	}
	// Nothing is left beside it.
	if left, _ := filepath.Glob(filepath.Join(dir, "bin", "*")); len(left) != 1 {
		t.Errorf("the folder holds %v, want the program alone", left)
	}
}

// The premise: go run keeps what it linked in go's cache, so the second
// build of the same program with the same flags is a copy (go run's -exec
// program is given the cached executable, not one in a work folder).
func TestGoRunKeepsTheExecutable(t *testing.T) {
	ctx := context.Background()
	flags := []string{"-trimpath", "-ldflags", "-X main.greeting=cached"}
	if err := gobin.Build(ctx, ".", "./testdata/hello", filepath.Join(t.TempDir(), "hello"), nil, flags...); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", append(append([]string{"run", "-exec", "echo"}, flags...), "./testdata/hello")...).Output()
	if err != nil {
		t.Fatal(err)
	}
	cache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	got, root := strings.TrimSpace(string(out)), strings.TrimSpace(string(cache))
	if !strings.HasPrefix(got, root+string(os.PathSeparator)) {
		t.Errorf("go run ran %s, not an executable from its cache %s: gobin.Build would link every time", got, root)
	}
}

// A program that does not compile is an error that says why, and leaves
// no file behind.
func TestBuildSaysWhyItFailed(t *testing.T) {
	dir := t.TempDir()
	err := gobin.Build(context.Background(), ".", "./testdata/nosuch", filepath.Join(dir, "x"), nil)
	if err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("err = %v, want go's complaint about ./testdata/nosuch", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
