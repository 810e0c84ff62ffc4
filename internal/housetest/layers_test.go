package housetest

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/lagscope/lagscope"

// leaves import nothing of ours; every package may import them unless its
// row says otherwise.
var leaves = []string{"units", "textsafe", "names", "themes", "vocab", "internal/systool", "internal/boundedfile"}

var (
	engine  = []string{"probe", "probe/diagnosis", "probe/snapshot", "probe/loadtest"}
	netfam  = []string{"netcore", "netcore/impair", "netcore/simnet", "netcore/trace"}
	rungfam = []string{"rungs", "rungs/ladder"}
)

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// layers is what each package (import path under the module) may import
// of ours. A package missing from the table fails the test: a new package
// gets a row. The module root (the commands) and scripts/ may import
// anything.
var layers = map[string][]string{
	"units":                nil,
	"textsafe":             nil,
	"names":                nil,
	"themes":               nil,
	"vocab":                nil,
	"internal/systool":     nil,
	"internal/boundedfile": nil,
	"internal/housetest":   nil,

	"rungs":        {"units"},
	"rungs/ladder": {"rungs", "units"},

	"netcore":        {"netcore/impair", "netcore/simnet", "netcore/trace", "units"},
	"netcore/impair": {"netcore", "netcore/simnet", "netcore/trace", "units"},
	"netcore/simnet": {"netcore", "netcore/impair", "netcore/trace", "units"},
	"netcore/trace":  {"netcore", "netcore/impair", "netcore/simnet", "units", "vocab"},

	"probe":           join(engine, []string{"netcore", "rungs", "units", "names", "textsafe", "vocab"}),
	"probe/diagnosis": join(engine, []string{"netcore", "rungs", "units", "names", "textsafe", "vocab"}),
	"probe/snapshot":  join(engine, []string{"netcore", "rungs", "units", "names", "textsafe", "vocab"}),

	"probe/session": join(engine, []string{"netcore", "rungs"}, leaves),
	// The load test's pure core: no I/O, no clock, no goroutines.
	"probe/loadtest": {"units", "vocab"},

	// The wirings: never each other, except the live driver's recorder.
	"probe/sim":    join(engine, []string{"probe/session", "rungs"}, netfam, leaves),
	"probe/live":   join(engine, []string{"probe/session", "probe/record", "rungs"}, netfam, leaves),
	"probe/record": join(engine, []string{"probe/session", "rungs"}, netfam, leaves),
	// The simulated world the session's and the live driver's tests share.
	"internal/simworld": join(engine, netfam),
	// A load generator of the live driver's tests.
	"probe/live/internal/hsflood": join(engine, []string{"probe/session", "rungs"}, netfam, leaves),

	"metrics": join(engine, leaves),

	"ui": {"probe", "probe/diagnosis", "probe/loadtest", "rungs", "rungs/ladder", "themes", "textsafe", "units", "vocab"},

	"config": leaves,
}

type listed struct {
	ImportPath string
	Dir        string
}

// TestImportLayers fails, naming the file, when a package's non-test code
// imports one of ours that its row of the layer table does not allow. It
// reads every non-test file of every package itself (whatever its build
// constraints) rather than trusting go list's import list, so that a
// changed or added file also invalidates the test's cached result.
func TestImportLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	seen := 0
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		seen++
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if p.ImportPath == module || strings.HasPrefix(rel, "scripts/") {
			continue
		}
		if !ok {
			t.Errorf("package %s is outside the module", p.ImportPath)
			continue
		}
		allowed, ok := layers[rel]
		if !ok {
			t.Errorf("package %s has no row in the layer table", rel)
			continue
		}
		imports := importsOf(t, p.Dir)
		for _, file := range slices.Sorted(maps.Keys(imports)) {
			for _, imp := range imports[file] {
				ir, ours := strings.CutPrefix(imp, module+"/")
				if ours && !slices.Contains(allowed, ir) {
					t.Errorf("%s/%s imports %s, which the layer table does not allow %s", rel, file, ir, rel)
				}
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list found %d packages: the module is not where the test looks", seen)
	}
}

// importsOf is what each non-test Go file in dir imports.
func importsOf(t *testing.T, dir string) map[string][]string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range f.Imports {
			v, _ := strconv.Unquote(s.Path.Value)
			out[name] = append(out[name], v)
		}
	}
	return out
}
