package housetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNoVocabLiterals: a cause, a hop link, a load or incident phase and
// an event type are spelled once, in package vocab. Anywhere else in the
// code that ships, a string literal that is one of them — one the type
// checker gives a vocab type, by conversion or by the place it goes — is
// a second spelling, and fails the test.
func TestNoVocabLiterals(t *testing.T) {
	out, err := exec.Command("go", "list", "-export", "-deps", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	type pkg struct {
		ImportPath, Dir, Export string
		GoFiles                 []string
		Standard                bool
	}
	exports := map[string]string{}
	var ours []pkg
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if strings.HasPrefix(p.ImportPath, module) && p.ImportPath != module+"/vocab" && len(p.GoFiles) > 0 {
			ours = append(ours, p)
		}
	}
	if len(ours) < 10 {
		t.Fatalf("go list found %d packages of ours", len(ours))
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if e := exports[path]; e != "" {
			return os.Open(e)
		}
		return nil, fmt.Errorf("no export data for %s", path)
	})
	checked := 0
	for _, p := range ours {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
		conf := types.Config{Importer: imp}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-checking %s: %v", p.ImportPath, err)
		}
		checked++
		var found []string
		for e, tv := range info.Types {
			lit, ok := e.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || lit.Value == `""` {
				continue // the empty string is no word: a zero value
			}
			if n, ok := tv.Type.(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == module+"/vocab" {
				found = append(found, fmt.Sprintf("%s: %s as a vocab.%s", fset.Position(lit.Pos()), lit.Value, n.Obj().Name()))
			}
		}
		slices.Sort(found)
		for _, f := range found {
			t.Errorf("%s: spell it with its constant in package vocab", f)
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d packages", checked)
	}
}
