// Package modroot finds this module's folder (the one whose go.mod names
// github.com/practice-api/practice-api) at run time: from the working
// directory up, then from the running binary's folder up.
//
// Code that reads the repository's files (the docs the OpenAPI build
// embeds, the e2e suite's tools) finds them here rather than through
// runtime.Caller, whose file names are module paths, not folders, in a
// build with -trimpath (make's builds and tests use it, so one build cache
// serves every clone of the repository).
package modroot

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Module is the module path a go.mod must declare.
const Module = "github.com/practice-api/practice-api"

// ErrNotFound says neither the working directory nor the binary lies in
// the module.
var ErrNotFound = errors.New("modroot: not inside the practice-api module (run from the repository)")

// Find returns the module's folder.
func Find() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		if root, ok := up(dir); ok {
			return root, nil
		}
	}
	return "", ErrNotFound
}

// up walks from dir to the file system's root for the module's go.mod.
func up(dir string) (string, bool) {
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && declares(string(b)) {
			return d, true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// declares reports whether a go.mod's text declares Module.
func declares(gomod string) bool {
	for _, line := range strings.Split(gomod, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == Module {
			return true
		}
	}
	return false
}
