package codecheck

import (
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"testing"
)

// indexLiteralAllowed are the production files that may spell an index
// name as a string, each with why.
var indexLiteralAllowed = map[string]string{
	"shared/store/schema.go":          "it defines the IndexName constants",
	"shared/httpapi/routes/routes.go": "it imports nothing (infra, the edge and localcloud all read it); its Indexes table is held to what the code asks of the store by a test that drives every route with every filter",
}

// indexLiteral is a global secondary index's name.
var indexLiteral = regexp.MustCompile(`^GSI[0-9]+$`)

// TestIndexesAreNamedByTheirConstants fails on a string literal that is
// an index's name ("GSI3") in production code: code names an index by
// store.GSI3 (a store.IndexName), so a mistyped index does not compile
// (issue #39 item 6).
func TestIndexesAreNamedByTheirConstants(t *testing.T) {
	seen := 0
	for _, f := range productionFiles(t) {
		file := f.dir + "/" + f.name
		ast.Inspect(f.ast, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !indexLiteral.MatchString(s) {
				return true
			}
			seen++
			if _, ok := indexLiteralAllowed[file]; !ok {
				t.Errorf("%s: the index %q as a string; name it store.%s", file, s, s)
			}
			return true
		})
	}
	if seen == 0 {
		t.Fatal("no index literal found at all, not even in store/schema.go: the scan is broken")
	}
}
