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
var leaves = []string{"units", "textsafe", "names", "themes", "vocab", "internal/systool", "internal/boundedfile", "internal/minheap", "internal/tokenbucket", "internal/longtest"}

var (
	// engine is the engine and the pure packages it runs.
	engine  = []string{"probe", "probe/feed", "probe/diagnosis", "probe/incident", "probe/snapshot", "probe/loadtest"}
	netfam  = []string{"netcore", "netcore/impair", "netcore/simnet", "netcore/trace"}
	readers = []string{"probe/feed", "probe/diagnosis", "probe/loadtest"}
)

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// row is one line of the layer table: the packages it is about, what they
// may import of ours, and why, in a few words.
type row struct {
	pkgs []string
	may  []string
	why  string
}

// table is what each package (import path under the module) may import of
// ours; docs/architecture.md shows it (TestArchitectureShowsTheLayerTable).
// A package missing from it fails the test: a new package gets a row. The
// module root (the commands) and scripts/ may import anything.
var table = []row{
	{append(slices.Clone(leaves), "internal/housetest"), nil, "the leaves"},
	{[]string{"rungs"}, []string{"units"}, "pure timing policy"},
	{[]string{"rungs/ladder"}, []string{"rungs", "units"}, ""},
	{[]string{"netcore/trace"}, []string{"units", "vocab"}, "pure: never netcore, which drives it"},
	{[]string{"netcore/impair"}, []string{"units", "internal/minheap"}, ""},
	{[]string{"netcore/simnet"}, []string{"netcore/impair", "units", "internal/minheap"}, ""},
	{[]string{"netcore"}, []string{"netcore/impair", "netcore/trace", "units", "vocab", "internal/minheap", "internal/tokenbucket"}, ""},
	{[]string{"probe/loadtest"}, []string{"units", "vocab"}, "pure: the load test's core"},
	{[]string{"probe/diagnosis"}, []string{"rungs", "units", "vocab"}, "pure: never probe"},
	{[]string{"probe/feed"}, []string{"probe/diagnosis", "probe/loadtest", "rungs", "units", "vocab", "names", "textsafe"}, "the contract: never the engine"},
	{[]string{"probe/incident"}, []string{"probe/feed", "units", "vocab"}, "pure: reads the matrix the contract carries"},
	{[]string{"probe/snapshot"}, []string{"netcore", "units"}, ""},
	{[]string{"probe"}, join([]string{"probe/feed", "probe/diagnosis", "probe/incident", "probe/snapshot", "probe/loadtest", "netcore", "rungs"}, leaves), "the engine"},
	{[]string{"probe/session"}, join(engine, []string{"netcore", "rungs"}, leaves), ""},
	{[]string{"probe/sim"}, join(engine, []string{"probe/session", "rungs"}, netfam, leaves), "a wiring: never probe/live"},
	{[]string{"probe/live"}, join(engine, []string{"probe/session", "probe/record", "rungs"}, netfam, leaves), "a wiring: never probe/sim; the recorder"},
	{[]string{"probe/live/internal/hsflood"}, join(engine, []string{"probe/session", "rungs"}, netfam, leaves), "a load generator for tests"},
	{[]string{"internal/simworld"}, join(engine, netfam), "the tests' simulated world"},
	{[]string{"probe/record"}, join(readers, []string{"rungs"}, leaves), "a reader: never the engine"},
	{[]string{"metrics"}, join(readers, leaves), "a reader: never the engine"},
	{[]string{"ui"}, join(readers, []string{"rungs", "rungs/ladder"}, leaves), "a reader: never the engine, never netcore"},
	{[]string{"config"}, leaves, ""},
}

// layers is table by package.
var layers = func() map[string][]string {
	m := map[string][]string{}
	for _, r := range table {
		for _, p := range r.pkgs {
			m[p] = r.may
		}
	}
	return m
}()

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
