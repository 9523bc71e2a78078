package codecheck

import (
	"go/ast"
	"go/token"
	"testing"
)

// TestTheSynthRangesOverNoMap: the CDK app (infra/) adds constructs, alarm
// metrics and dashboard widgets in the order its code runs, and the
// template lists them in that order. A range over a Go map runs in a
// random order: the dashboard's "Queue and DLQ depth" graph listed the
// delivery and enrichment queues either way round, so two synths of the
// same code differed in half the cases. cfn-lint's kept result (keyed by
// the templates' bytes) then missed, and a deploy would rewrite the
// dashboard for nothing. So infra's production code ranges over no map:
// not a map-typed field of its structs (Stack.Queues, Stack.Functions, …)
// nor a package-level map; it ranges over their names, sorted.
func TestTheSynthRangesOverNoMap(t *testing.T) {
	files := productionFiles(t)
	fields, vars := map[string]bool{}, map[string]bool{}
	var infra []sourceFile
	for _, f := range files {
		if f.dir != "infra" {
			continue
		}
		infra = append(infra, f)
		for _, d := range f.ast.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, fl := range st.Fields.List {
							if _, ok := fl.Type.(*ast.MapType); ok {
								for _, n := range fl.Names {
									fields[n.Name] = true
								}
							}
						}
					}
				case *ast.ValueSpec:
					if g.Tok != token.VAR {
						continue
					}
					_, typed := s.Type.(*ast.MapType)
					for i, n := range s.Names {
						lit := false
						if i < len(s.Values) {
							if cl, ok := s.Values[i].(*ast.CompositeLit); ok {
								_, lit = cl.Type.(*ast.MapType)
							}
						}
						if typed || lit {
							vars[n.Name] = true
						}
					}
				}
			}
		}
	}
	if !fields["Queues"] || !fields["Functions"] {
		t.Fatalf("found no Stack.Queues or Stack.Functions among infra's map fields (%v): the scan is broken", fields)
	}
	for _, f := range infra {
		ast.Inspect(f.ast, func(n ast.Node) bool {
			r, ok := n.(*ast.RangeStmt)
			if !ok {
				return true
			}
			switch x := r.X.(type) {
			case *ast.SelectorExpr:
				if fields[x.Sel.Name] {
					t.Errorf("infra/%s: a range over the map %s runs in a random order; range over its sorted names", f.name, x.Sel.Name)
				}
			case *ast.Ident:
				if vars[x.Name] {
					t.Errorf("infra/%s: a range over the map %s runs in a random order; range over its sorted names", f.name, x.Name)
				}
			}
			return true
		})
	}
}
