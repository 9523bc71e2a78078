package codecheck

import (
	"go/ast"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the module's path (go.mod).
const module = "github.com/practice-api/practice-api"

// globalsAllowed are the exported package-level variables of shared/ that
// production code may still write outside an init function, each with why
// that is fine. A process's settings (stage, shard count, default rate
// limit, logger) are not among them: they are passed through constructors
// and config (issue #39 item 7).
var globalsAllowed = map[string]string{}

// setDefaultAllowed are the functions of shared/ that may replace slog's
// default logger, each with why.
var setDefaultAllowed = map[string]string{
	"shared/lambdahttp.JSONLogs": "a process's main calls it once, first: the log package's default then writes through the redacting handler too (aws-lambda-go's own lines)",
}

// mutators are the method names that change the value they are called on
// (slog.LevelVar, sync/atomic, sync.Map).
var mutators = []string{"Set", "Store", "Swap", "Add", "CompareAndSwap", "Delete", "LoadOrStore", "LoadAndDelete", "Clear", "UnmarshalText"}

// TestNoProcessWideMutableState fails when production code writes an
// exported package-level variable of shared/ outside an init function
// (assigns it or one of its elements or fields, takes its address, or
// calls a mutating method on it), or replaces slog's default logger,
// unless the allow-lists above say why that is fine.
func TestNoProcessWideMutableState(t *testing.T) {
	files := productionFiles(t)
	vars := map[string]bool{} // "shared/metrics.Stage"
	pkgName := map[string]string{}
	for _, f := range files {
		if f.dir != "shared" && !strings.HasPrefix(f.dir, "shared/") {
			continue
		}
		pkgName[f.dir] = f.ast.Name.Name
		for _, d := range f.ast.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, s := range g.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						if n.IsExported() {
							vars[f.dir+"."+n.Name] = true
						}
					}
				}
			}
		}
	}
	if !vars["shared/config.Vars"] {
		t.Fatalf("found no config.Vars among %d exported variables: the scan is broken", len(vars))
	}
	found := map[string][]string{}
	for _, f := range files {
		imports := map[string]string{} // local name -> dir of a shared package
		for _, im := range f.ast.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			dir, ok := strings.CutPrefix(p, module+"/")
			if !ok || pkgName[dir] == "" {
				continue
			}
			name := pkgName[dir]
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = dir
		}
		// ref is the exported shared variable e names, if any.
		ref := func(e ast.Expr) string {
			for {
				switch x := e.(type) {
				case *ast.ParenExpr:
					e = x.X
					continue
				case *ast.IndexExpr:
					e = x.X
					continue
				case *ast.StarExpr:
					e = x.X
					continue
				case *ast.Ident:
					if vars[f.dir+"."+x.Name] {
						return f.dir + "." + x.Name
					}
					return ""
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok {
						if dir, ok := imports[id.Name]; ok {
							if vars[dir+"."+x.Sel.Name] {
								return dir + "." + x.Sel.Name
							}
							return ""
						}
					}
					e = x.X // a field of a variable
					continue
				}
				return ""
			}
		}
		for _, d := range f.ast.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || (fn.Recv == nil && fn.Name.Name == "init") {
				continue
			}
			where := path.Join(f.dir, f.name) + ": " + funcName(f.dir, fn)
			note := func(e ast.Expr, how string) {
				if v := ref(e); v != "" {
					found[v] = append(found[v], where+" ("+how+")")
				}
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.AssignStmt:
					if x.Tok != token.DEFINE {
						for _, l := range x.Lhs {
							note(l, "assigns it")
						}
					}
				case *ast.IncDecStmt:
					note(x.X, "assigns it")
				case *ast.UnaryExpr:
					if x.Op == token.AND {
						note(x.X, "takes its address")
					}
				case *ast.CallExpr:
					if s, ok := x.Fun.(*ast.SelectorExpr); ok {
						if slices.Contains(mutators, s.Sel.Name) {
							note(s.X, "calls "+s.Sel.Name)
						}
						if id, ok := s.X.(*ast.Ident); ok && id.Name == "slog" && s.Sel.Name == "SetDefault" &&
							(f.dir == "shared" || strings.HasPrefix(f.dir, "shared/")) {
							if _, ok := setDefaultAllowed[funcName(f.dir, fn)]; !ok {
								t.Errorf("%s replaces slog's default logger: pass the process's logger in instead", where)
							}
						}
					}
				}
				return true
			})
		}
	}
	for v, at := range found {
		if _, ok := globalsAllowed[v]; !ok {
			t.Errorf("%s is process-wide mutable state, written at %s: pass it through a constructor or config.Config instead", v, strings.Join(at, "; "))
		}
	}
	for v := range globalsAllowed {
		if _, ok := found[v]; !ok {
			t.Errorf("%s is in globalsAllowed but nothing writes it any more: take it off the list", v)
		}
	}
}
