package storage

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEngineRules enforces the engine's import rules on its non-test
// sources: no gRPC or status packages anywhere under internal/storage
// (errors become wire errors only in internal/apierr); no "os" outside
// vfs (files go through vfs.FS); no time.Now/Since/Sleep (time comes from
// Options.Clock), except as the documented default clock in db.go.
func TestEngineRules(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		inVFS := strings.HasPrefix(filepath.ToSlash(path), "vfs/")
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "google.golang.org/grpc") || strings.Contains(p, "/status") {
				t.Errorf("%s imports %s: no gRPC under internal/storage", path, p)
			}
			if p == "os" && !inVFS {
				t.Errorf("%s imports os: use vfs.FS", path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" {
				switch sel.Sel.Name {
				case "Now", "Since", "Sleep", "After", "Tick", "NewTimer", "NewTicker":
					if path != "db.go" || sel.Sel.Name != "Now" {
						t.Errorf("%s uses time.%s: use Options.Clock", path, sel.Sel.Name)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
