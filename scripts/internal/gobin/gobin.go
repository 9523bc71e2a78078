// Package gobin builds Go programs through the go command's own cache of
// executables, the one go run keeps (Go 1.24 and later): a program built
// once on a machine, from the same sources with the same flags and
// environment, is copied out of that cache instead of linked again,
// whichever clone, worktree or temporary folder asks for it.
//
// go build keeps no such cache: it relinks whenever its output file is
// missing or out of date, and a fresh clone, a test's temporary folder or
// localcloud's first start has none. In a fresh clone of an unchanged
// commit, make test's go builds linked 29 programs for 20 s of CPU (every
// function's bootstrap, the infra program twice, the devserver twice,
// localcloud, the operator tools).
//
// What go run links has no symbol table and no DWARF (go run's -s -w):
// stack traces are whole, but a debugger needs a go build of its own.
//
// The cache is content-addressed (the key is go's action ID: every input
// of the link), so two clones building different code at once each get
// their own program.
package gobin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Build builds the main package pkg (as go names it, relative to dir) into
// dest, replacing dest through a rename (a running program's file may not
// be written over). dir is where the go command runs; env is added to the
// process's environment (GOOS, GOARCH, CGO_ENABLED); flags are go build's
// (-trimpath, -tags, -ldflags), without -o.
//
// It is go run with cp as the program that runs what was built: go run
// builds pkg, or finds it in its cache, then runs "cp <executable> <dest>"
// instead of the program, and caches what it linked for the next time.
func Build(ctx context.Context, dir, pkg, dest string, env []string, flags ...string) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(dest), filepath.Base(dest)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_ = f.Close()
	args := append([]string{"run", "-exec", "cp"}, flags...)
	args = append(args, pkg, tmp)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, dest); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
