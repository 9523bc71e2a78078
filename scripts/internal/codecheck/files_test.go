package codecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sourceFile is one parsed production Go file of the module.
type sourceFile struct {
	// dir is its directory relative to the module root, slash-separated
	// (its package's path within the module)
	dir  string
	name string
	ast  *ast.File
}

var (
	parsed     []sourceFile
	parseErr   error
	parseOnce  sync.Once
	moduleRoot string
)

// productionFiles parses every Go file of the module that is not a test,
// not generated, and not under a node_modules, testdata or dot directory.
func productionFiles(t *testing.T) []sourceFile {
	t.Helper()
	parseOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			parseErr = err
			return
		}
		moduleRoot = filepath.Dir(strings.TrimSpace(string(out)))
		fset := token.NewFileSet()
		parseErr = filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); path != moduleRoot && (n == "node_modules" || n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
			if err != nil {
				return err
			}
			if ast.IsGenerated(f) {
				return nil
			}
			rel, _ := filepath.Rel(moduleRoot, filepath.Dir(path))
			parsed = append(parsed, sourceFile{dir: filepath.ToSlash(rel), name: filepath.Base(path), ast: f})
			return nil
		})
	})
	if parseErr != nil {
		t.Fatal(parseErr)
	}
	return parsed
}
