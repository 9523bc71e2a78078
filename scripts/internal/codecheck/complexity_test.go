package codecheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"slices"
	"testing"
)

// maxComplexity is the most cyclomatic complexity a production function
// may have (gocyclo's count: 1, plus one per if, for, range, non-default
// case or select clause, && and ||; function literals count toward the
// function that holds them).
const maxComplexity = 25

// complexityAllowed are the production functions (package-path.Func or
// package-path.Type.Method) still over maxComplexity, each with why it
// may stay for now. It is empty (#39 item 8): split a function that grows
// past maxComplexity (a table, a function per case) rather than name it
// here; a name left here once its function is split fails the test.
var complexityAllowed = map[string]string{}

// complexity is gocyclo's cyclomatic complexity of fn.
func complexity(fn *ast.FuncDecl) int {
	n := 1
	ast.Inspect(fn, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

// funcName is pkg.Func or pkg.Type.Method of fn in the package at dir.
func funcName(dir string, fn *ast.FuncDecl) string {
	name := fn.Name.Name
	if fn.Recv != nil && len(fn.Recv.List) == 1 {
		t := fn.Recv.List[0].Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		switch r := t.(type) {
		case *ast.Ident:
			name = r.Name + "." + name
		case *ast.IndexExpr:
			name = fmt.Sprint(r.X) + "." + name
		case *ast.IndexListExpr:
			name = fmt.Sprint(r.X) + "." + name
		}
	}
	return dir + "." + name
}

// TestNoProductionFunctionIsTooComplex fails on a production function over
// maxComplexity that complexityAllowed does not name, and on a name there
// that is no longer over it (or no longer exists).
func TestNoProductionFunctionIsTooComplex(t *testing.T) {
	over := map[string]int{}
	for _, f := range productionFiles(t) {
		for _, d := range f.ast.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
				if c := complexity(fn); c > maxComplexity {
					over[funcName(f.dir, fn)] = c
				}
			}
		}
	}
	var names []string
	for name := range over {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, ok := complexityAllowed[name]; !ok {
			t.Errorf("%s has cyclomatic complexity %d (most %d): split it (a table, a function per case)", name, over[name], maxComplexity)
		} else {
			t.Logf("allowed: %s %d: %s", name, over[name], complexityAllowed[name])
		}
	}
	for name := range complexityAllowed {
		if _, ok := over[name]; !ok {
			t.Errorf("%s is in complexityAllowed but not over %d: take it off the list", name, maxComplexity)
		}
	}
}
