package proxy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// afterNext lists the stages that still work after the rest of the
// pipeline returns, each with why that cannot race a handed-off stream.
var afterNext = map[string]string{
	"proxy/card/serve/serve.go": "GetExtendedCard is answered once, into a Recorder: never a stream",
	"proxy/list/list.go":        "ListTasks is answered once, into a Recorder: never a stream",
	"dedupe/dedupe.go":          "attach reads what its probe decided at the stream's first write, before any hand-off, and falls back to a GetTask answered into a buffer",
}

// TestStagesEndWorkWaitsForTheRequest: a stream may leave its handler
// (handoff.go) while the rest of the pipeline returns, so work a stage does
// once the request has ended belongs in Scope.OnEnd. Code after a call of
// next would run while the stream goes on, and race it. The test reads the
// module's source: every call of a stage's next(w, r, s) is returned
// as it is, outside the files listed in afterNext.
func TestStagesEndWorkWaitsForTheRequest(t *testing.T) {
	root := filepath.Join("..")
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		returned := map[*ast.CallExpr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if ret, ok := n.(*ast.ReturnStmt); ok {
				for _, e := range ret.Results {
					if c, ok := e.(*ast.CallExpr); ok {
						returned[c] = true
					}
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) != 3 {
				return true
			}
			if id, ok := c.Fun.(*ast.Ident); !ok || id.Name != "next" || returned[c] {
				return true
			}
			if _, ok := afterNext[rel]; ok {
				seen[rel] = true
				return true
			}
			t.Errorf("%s: next(...) is not returned as it is: work after it races a handed-off stream; use Scope.OnEnd", fset.Position(c.Pos()))
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range afterNext {
		if !seen[rel] {
			t.Errorf("%s is listed in afterNext but calls no next(...) it does not return: take it off the list", rel)
		}
	}
}
