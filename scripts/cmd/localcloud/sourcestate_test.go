package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSourceStateFollowsEdits: the state localcloud skips its builds by
// is the same while nothing changes, and changes with an edit, a new
// file or a removed one under the folders the functions and infra link,
// or go.mod; files elsewhere and node_modules do not count.
func TestSourceStateFollowsEdits(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/x\n")
	write("functions/a/main.go", "package main\n")
	write("shared/b/b.go", "package b\n")
	write("infra/main.go", "package main\n")
	state := func() string {
		t.Helper()
		s, err := sourceState(root)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	last := state()
	if state() != last {
		t.Fatal("the state changed with nothing changed")
	}
	for _, tc := range []struct {
		what    string
		change  func()
		changes bool
	}{
		{"an edit of the same size", func() { write("shared/b/b.go", "package c\n") }, true},
		{"an embedded file", func() { write("shared/b/doc.json", "{}") }, true},
		{"a removed file", func() { _ = os.Remove(filepath.Join(root, "shared/b/doc.json")) }, true},
		{"go.mod", func() { write("go.mod", "module example.com/x\n\ngo 1.26\n") }, true},
		{"a file only touched", func() {
			later := time.Now().Add(time.Minute)
			_ = os.Chtimes(filepath.Join(root, "infra/main.go"), later, later)
		}, true},
		{"a file outside", func() { write("scripts/x.go", "package x\n") }, false},
		{"node_modules", func() { write("shared/ui/node_modules/p/index.js", "x") }, false},
	} {
		tc.change()
		now := state()
		if (now != last) != tc.changes {
			t.Errorf("%s: state changed %v, want %v", tc.what, now != last, tc.changes)
		}
		last = now
	}
}
