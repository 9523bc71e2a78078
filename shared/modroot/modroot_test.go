package modroot

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	t.Run("from a package folder", func(t *testing.T) {
		root, err := Find()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, "shared", "modroot", "modroot.go")); err != nil {
			t.Fatalf("Find() = %s, which does not hold this package: %v", root, err)
		}
	})
	t.Run("a go.mod of another module is passed over", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if root, ok := up(dir); ok {
			t.Fatalf("up(%s) = %s, want none", dir, root)
		}
	})
	t.Run("the module's go.mod, quoted or not", func(t *testing.T) {
		for _, text := range []string{"module " + Module + "\n\ngo 1.25\n", "// x\nmodule \"" + Module + "\"\n"} {
			if !declares(text) {
				t.Errorf("declares(%q) = false", text)
			}
		}
		if declares("module " + Module + "/sub\n") {
			t.Error("a submodule's go.mod counted as the module's")
		}
	})
}
