// Command apicount measures how much of the module's exported API other
// packages use. Run it from the module's root:
//
//	go run ./scripts/apicount                # totals
//	go run ./scripts/apicount -list          # and the unused names, per package
//	go run ./scripts/apicount -pkg netcore   # only netcore's names (the rest still count as users)
//
// With -list, each unused name shows where it is still referred to: by its
// own package's non-test code ("package"), by tests only ("tests") or
// nowhere, and which other packages' tests refer to it.
//
// It counts the exported names declared in a package's non-test files:
// top-level functions, types, vars and consts (every name of a grouped
// const or var block), and the exported methods of exported types. Struct
// fields and the methods of interface types are not counted.
//
// A name is used by other packages when a non-test file of another package
// refers to it. Names used only by tests, the package's own or anyone's,
// count as unused. A name is used nowhere when no file at all refers to it
// apart from its own declaration: not the package's own files, not any
// test.
//
// What it counts:
//   - Packages named main (the module's root, scripts/, internal commands)
//     declare nothing that counts: a command has no importers. Their files
//     still count as users of other packages' names.
//   - Library packages under internal/ count like any other: other packages
//     of the module import them.
//   - Files that build constraints leave out on this platform (the
//     IgnoredGoFiles of `go list`) count too, when their package clause is
//     the package's, so the numbers do not depend on the platform it runs
//     on.
//
// The analysis is syntactic (go/parser, no type checking), so it
// approximates:
//   - A top-level name is referred to by a selector pkg.Name whose pkg is
//     the file's import name of the declaring package (or by a bare Name in
//     a file that dot-imports it); inside its own package, by any
//     identifier spelled Name, struct literal keys included. A local
//     variable that shadows an import name or a package-level name is not
//     told apart.
//   - A method is referred to by any selector .Name in a file of a package
//     that imports the declaring package, directly or through other
//     packages of the module; so two methods of the same name are not told
//     apart.
//   - A method whose name is a method of an interface type declared in the
//     module, or of a common standard-library interface (String, Error,
//     MarshalJSON, ...), counts as used by other packages: satisfying an
//     interface is a use no selector shows.
//
// The output is sorted and depends only on the source.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

func main() {
	list := flag.Bool("list", false, "print the names other packages do not use, per package")
	only := flag.String("pkg", "", "comma-separated packages (import paths, or paths relative to the module) whose names to count; all when empty")
	dir := flag.String("C", ".", "the module's directory")
	flag.Parse()

	m, err := load(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(1)
	}
	r := analyze(m)
	if *only != "" {
		r = r.filter(m.Path, strings.Split(*only, ","))
	}
	r.write(os.Stdout, m.Path, *list)
}

// pkgMeta is what the analysis needs to know of a package besides its files.
type pkgMeta struct {
	Path string   // import path
	Name string   // package clause of its non-test files
	Deps []string // import paths it depends on, directly or not
}

// source is one parsed file of a package.
type source struct {
	Pkg  string // import path of the package whose directory holds it
	Test bool   // a _test.go file
	File *ast.File
}

// module is the input of the analysis: its packages and their files, all
// parsed into one FileSet so positions are unique across files.
type module struct {
	Path  string
	Pkgs  []pkgMeta
	Files []source
}

type listedPackage struct {
	ImportPath     string
	Name           string
	Dir            string
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string
	TestGoFiles    []string
	XTestGoFiles   []string
	Deps           []string
	Module         *struct{ Path string }
}

// load lists the packages of the module in dir with `go list` and parses
// their files.
func load(dir string) (*module, error) {
	cmd := exec.Command("go", "list", "-e", "-json", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	m := &module{}
	fset := token.NewFileSet()
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list output: %v", err)
		}
		if p.Module != nil && m.Path == "" {
			m.Path = p.Module.Path
		}
		if p.Name == "" {
			continue
		}
		m.Pkgs = append(m.Pkgs, pkgMeta{Path: p.ImportPath, Name: p.Name, Deps: p.Deps})
		add := func(names []string, test, checkClause bool) error {
			for _, n := range names {
				path := filepath.Join(p.Dir, n)
				f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
				if err != nil {
					return err
				}
				if checkClause && f.Name.Name != p.Name && f.Name.Name != p.Name+"_test" {
					continue
				}
				m.Files = append(m.Files, source{Pkg: p.ImportPath, Test: test, File: f})
			}
			return nil
		}
		var ignored, ignoredTests []string
		for _, n := range p.IgnoredGoFiles {
			if strings.HasSuffix(n, "_test.go") {
				ignoredTests = append(ignoredTests, n)
			} else {
				ignored = append(ignored, n)
			}
		}
		for _, step := range []struct {
			names       []string
			test, check bool
		}{
			{p.GoFiles, false, false}, {p.CgoFiles, false, false}, {ignored, false, true},
			{p.TestGoFiles, true, false}, {p.XTestGoFiles, true, false}, {ignoredTests, true, true},
		} {
			if err := add(step.names, step.test, step.check); err != nil {
				return nil, err
			}
		}
	}
	if m.Path == "" {
		return nil, errors.New("go list found no module")
	}
	return m, nil
}

// Where an unused name is still referred to.
const (
	usedByOthers = "used"    // by another package's non-test code
	usedInPkg    = "package" // by its own package's non-test code only
	usedInTests  = "tests"   // by tests only
	usedNowhere  = "nowhere" // by no file but its declaration
)

type decl struct {
	Pkg   string // import path
	Kind  string // func, method, type, var or const
	Name  string // Recv.Method for a method
	Ident string // the name a reference spells: the method's name for a method
	Use   string // one of the used* constants
	// TestUsers are the other packages whose tests refer to the name
	// (<path>_test for the package's own external tests), sorted.
	TestUsers []string

	spans [][2]token.Pos // the declarations, one per file that has one
}

func (d *decl) within(pos token.Pos) bool {
	for _, s := range d.spans {
		if pos >= s[0] && pos < s[1] {
			return true
		}
	}
	return false
}

// fileRefs is what one file refers to.
type fileRefs struct {
	src     source
	xtest   bool                              // package clause is <name>_test
	imports []string                          // import paths
	dot     []string                          // dot-imported paths
	bare    map[string][]token.Pos            // identifiers that are not declarations or selectors
	qual    map[string]map[string][]token.Pos // import path -> selected name
	sel     map[string][]token.Pos            // other selectors' names
}

// stdInterfaceMethods are methods of standard-library interfaces a type
// commonly satisfies without anyone naming the method.
var stdInterfaceMethods = []string{
	"As", "Close", "Error", "Format", "GoString", "Is", "Len", "Less",
	"MarshalBinary", "MarshalJSON", "MarshalText", "Read", "ServeHTTP",
	"String", "Swap", "UnmarshalBinary", "UnmarshalJSON", "UnmarshalText",
	"Unwrap", "Write",
}

func collectRefs(src source, names map[string]string) *fileRefs {
	f := src.File
	r := &fileRefs{
		src:  src,
		bare: map[string][]token.Pos{},
		qual: map[string]map[string][]token.Pos{},
		sel:  map[string][]token.Pos{},
	}
	r.xtest = strings.HasSuffix(f.Name.Name, "_test")
	local := map[string]string{}
	for _, s := range f.Imports {
		path, err := strconv.Unquote(s.Path.Value)
		if err != nil {
			continue
		}
		r.imports = append(r.imports, path)
		name := names[path]
		if name == "" {
			name = filepath.Base(path)
		}
		if s.Name != nil {
			name = s.Name.Name
		}
		switch name {
		case "_":
		case ".":
			r.dot = append(r.dot, path)
		default:
			local[name] = path
		}
	}
	skip := map[*ast.Ident]bool{f.Name: true}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.FuncDecl:
			skip[n.Name] = true
		case *ast.Field:
			for _, id := range n.Names {
				skip[id] = true
			}
		case *ast.TypeSpec:
			skip[n.Name] = true
		case *ast.ValueSpec:
			for _, id := range n.Names {
				skip[id] = true
			}
		case *ast.LabeledStmt:
			skip[n.Label] = true
		case *ast.BranchStmt:
			if n.Label != nil {
				skip[n.Label] = true
			}
		case *ast.SelectorExpr:
			skip[n.Sel] = true
			if x, ok := n.X.(*ast.Ident); ok {
				if path, ok := local[x.Name]; ok {
					skip[x] = true
					if r.qual[path] == nil {
						r.qual[path] = map[string][]token.Pos{}
					}
					r.qual[path][n.Sel.Name] = append(r.qual[path][n.Sel.Name], n.Sel.Pos())
					return false
				}
			}
			r.sel[n.Sel.Name] = append(r.sel[n.Sel.Name], n.Sel.Pos())
		case *ast.Ident:
			if !skip[n] {
				r.bare[n.Name] = append(r.bare[n.Name], n.Pos())
			}
		}
		return true
	})
	return r
}

// declsOf returns the exported names src declares, keyed by Name.
func declsOf(src source, into map[string]*decl, order *[]*decl) {
	add := func(kind, name, ident string, from, to token.Pos) {
		d := into[name]
		if d == nil {
			d = &decl{Pkg: src.Pkg, Kind: kind, Name: name, Ident: ident}
			into[name] = d
			*order = append(*order, d)
		}
		d.spans = append(d.spans, [2]token.Pos{from, to})
	}
	for _, gd := range src.File.Decls {
		switch gd := gd.(type) {
		case *ast.FuncDecl:
			if !gd.Name.IsExported() {
				continue
			}
			if gd.Recv == nil {
				add("func", gd.Name.Name, gd.Name.Name, gd.Pos(), gd.End())
				continue
			}
			recv := receiverType(gd.Recv)
			if recv == "" || !ast.IsExported(recv) {
				continue
			}
			add("method", recv+"."+gd.Name.Name, gd.Name.Name, gd.Pos(), gd.End())
		case *ast.GenDecl:
			for _, s := range gd.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						add("type", s.Name.Name, s.Name.Name, s.Pos(), s.End())
					}
				case *ast.ValueSpec:
					kind := "var"
					if gd.Tok == token.CONST {
						kind = "const"
					}
					for _, id := range s.Names {
						if id.IsExported() {
							add(kind, id.Name, id.Name, s.Pos(), s.End())
						}
					}
				}
			}
		}
	}
}

// receiverType is the name of a method's receiver type, without pointer
// or type parameters.
func receiverType(fl *ast.FieldList) string {
	if fl == nil || len(fl.List) == 0 {
		return ""
	}
	t := fl.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// report is the analysis' result: every counted name, sorted by package
// and name.
type report struct {
	Decls    []*decl
	Packages []string // the packages whose names count, sorted
	Skipped  []string // packages named main, sorted
}

// reachability is which of the module's packages each package reaches, and
// which method names interfaces declare.
type reachability struct {
	reach     map[string]map[string]bool // from the package's non-test files
	testReach map[string]map[string]bool // from all its files
	// ifaceMethods are the methods of interface types declared in the
	// module's non-test files and of stdInterfaceMethods.
	ifaceMethods map[string]bool
}

func analyze(m *module) *report {
	meta := map[string]pkgMeta{}
	names := map[string]string{}
	for _, p := range m.Pkgs {
		meta[p.Path] = p
		names[p.Path] = p.Name
	}
	r := newReport(m.Pkgs)
	refs, rc := collectModuleRefs(m, meta, names)
	all := collectDecls(m, meta)
	for _, d := range all {
		classify(d, refs, rc)
	}
	slices.SortFunc(all, func(a, b *decl) int {
		if c := strings.Compare(a.Pkg, b.Pkg); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	r.Decls = all
	return r
}

// newReport returns a report without names: the packages whose names
// count and the packages named main, each sorted.
func newReport(pkgs []pkgMeta) *report {
	r := &report{}
	for _, p := range pkgs {
		if p.Name == "main" {
			r.Skipped = append(r.Skipped, p.Path)
		} else {
			r.Packages = append(r.Packages, p.Path)
		}
	}
	slices.Sort(r.Packages)
	slices.Sort(r.Skipped)
	return r
}

// collectModuleRefs returns what every file of m refers to, in m.Files'
// order, and the module's reachability: the module's packages each
// package reaches from its non-test files and from all its files, and
// the method names of interfaces.
func collectModuleRefs(m *module, meta map[string]pkgMeta, names map[string]string) ([]*fileRefs, *reachability) {
	rc := &reachability{
		reach:        map[string]map[string]bool{},
		testReach:    map[string]map[string]bool{},
		ifaceMethods: map[string]bool{},
	}
	closure := func(set map[string]bool, imp string) {
		if _, ours := meta[imp]; !ours {
			return
		}
		set[imp] = true
		for _, d := range meta[imp].Deps {
			if _, ours := meta[d]; ours {
				set[d] = true
			}
		}
	}
	var refs []*fileRefs
	for _, n := range stdInterfaceMethods {
		rc.ifaceMethods[n] = true
	}
	for _, src := range m.Files {
		fr := collectRefs(src, names)
		refs = append(refs, fr)
		if rc.reach[src.Pkg] == nil {
			rc.reach[src.Pkg], rc.testReach[src.Pkg] = map[string]bool{}, map[string]bool{}
		}
		for _, imp := range fr.imports {
			if !src.Test {
				closure(rc.reach[src.Pkg], imp)
			}
			closure(rc.testReach[src.Pkg], imp)
		}
		if !src.Test {
			addInterfaceMethods(src.File, rc.ifaceMethods)
		}
	}
	for p, s := range rc.reach {
		for q := range s {
			rc.testReach[p][q] = true
		}
	}
	return refs, rc
}

// addInterfaceMethods adds the method names of every interface type in f
// to into.
func addInterfaceMethods(f *ast.File, into map[string]bool) {
	ast.Inspect(f, func(n ast.Node) bool {
		if it, ok := n.(*ast.InterfaceType); ok {
			for _, f := range it.Methods.List {
				for _, id := range f.Names {
					into[id.Name] = true
				}
			}
		}
		return true
	})
}

// collectDecls returns the exported names the non-test files of m's
// library packages declare, in the order of m.Files.
func collectDecls(m *module, meta map[string]pkgMeta) []*decl {
	byPkg := map[string]map[string]*decl{}
	var all []*decl
	for _, src := range m.Files {
		if src.Test || meta[src.Pkg].Name == "main" || src.File.Name.Name != meta[src.Pkg].Name {
			continue
		}
		if byPkg[src.Pkg] == nil {
			byPkg[src.Pkg] = map[string]*decl{}
		}
		declsOf(src, byPkg[src.Pkg], &all)
	}
	return all
}

// classify sets d.Use and d.TestUsers from the files that refer to d.
func classify(d *decl, refs []*fileRefs, rc *reachability) {
	inPkg, inTests, byOthers := false, false, false
	for _, fr := range refs {
		same := fr.src.Pkg == d.Pkg && !fr.xtest
		if !refersTo(fr, d, same, rc) {
			continue
		}
		switch {
		case fr.src.Test:
			inTests = true
			if !same {
				u := fr.src.Pkg
				if fr.src.Pkg == d.Pkg {
					u += "_test"
				}
				if !slices.Contains(d.TestUsers, u) {
					d.TestUsers = append(d.TestUsers, u)
				}
			}
		case fr.src.Pkg == d.Pkg:
			inPkg = true
		default:
			byOthers = true
		}
	}
	slices.Sort(d.TestUsers)
	if d.Kind == "method" && rc.ifaceMethods[d.Ident] {
		byOthers = true
	}
	switch {
	case byOthers:
		d.Use = usedByOthers
	case inPkg:
		d.Use = usedInPkg
	case inTests:
		d.Use = usedInTests
	default:
		d.Use = usedNowhere
	}
}

// refersTo reports whether the file fr refers to d; same says fr is a
// file of d's package proper (not of its external tests).
func refersTo(fr *fileRefs, d *decl, same bool, rc *reachability) bool {
	outside := func(ps []token.Pos) bool {
		return slices.ContainsFunc(ps, func(p token.Pos) bool { return !d.within(p) })
	}
	switch {
	case d.Kind == "method" && same:
		return outside(fr.sel[d.Ident])
	case d.Kind == "method":
		rs := rc.reach[fr.src.Pkg]
		if fr.src.Test {
			rs = rc.testReach[fr.src.Pkg]
		}
		return (rs[d.Pkg] || fr.src.Pkg == d.Pkg) && len(fr.sel[d.Ident]) > 0
	case same:
		return outside(fr.bare[d.Ident])
	default:
		return len(fr.qual[d.Pkg][d.Ident]) > 0 ||
			slices.Contains(fr.dot, d.Pkg) && len(fr.bare[d.Ident]) > 0
	}
}

// filter keeps the names of the packages named in only.
func (r *report) filter(modPath string, only []string) *report {
	want := map[string]bool{}
	for _, o := range only {
		o = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(o), "./"), "/")
		if o == "" || o == "." {
			want[modPath] = true
		} else if strings.HasPrefix(o, modPath) {
			want[o] = true
		} else {
			want[modPath+"/"+o] = true
		}
	}
	out := &report{Skipped: r.Skipped}
	for _, p := range r.Packages {
		if want[p] {
			out.Packages = append(out.Packages, p)
		}
	}
	for _, d := range r.Decls {
		if want[d.Pkg] {
			out.Decls = append(out.Decls, d)
		}
	}
	return out
}

type tally struct{ exported, unused, inPkg, inTests, nowhere int }

func count(ds []*decl) tally {
	var t tally
	for _, d := range ds {
		t.exported++
		switch d.Use {
		case usedInPkg:
			t.unused++
			t.inPkg++
		case usedInTests:
			t.unused++
			t.inTests++
		case usedNowhere:
			t.unused++
			t.nowhere++
		}
	}
	return t
}

func percent(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

func rel(modPath, p string) string {
	if p == modPath {
		return "."
	}
	return strings.TrimPrefix(p, modPath+"/")
}

func (r *report) write(w io.Writer, modPath string, list bool) {
	t := count(r.Decls)
	fmt.Fprintf(w, "packages counted:            %d (%d named main skipped)\n", len(r.Packages), len(r.Skipped))
	fmt.Fprintf(w, "exported names:              %d\n", t.exported)
	fmt.Fprintf(w, "unused by other packages:    %d (%.1f%%)\n", t.unused, percent(t.unused, t.exported))
	fmt.Fprintf(w, "  used in own package only:  %d\n", t.inPkg)
	fmt.Fprintf(w, "  used by tests only:        %d\n", t.inTests)
	fmt.Fprintf(w, "  used nowhere:              %d\n", t.nowhere)
	if !list {
		return
	}
	for _, p := range r.Packages {
		var ds []*decl
		for _, d := range r.Decls {
			if d.Pkg == p {
				ds = append(ds, d)
			}
		}
		pt := count(ds)
		if pt.unused == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: %d exported, %d unused by other packages (%.1f%%), %d used nowhere\n",
			rel(modPath, p), pt.exported, pt.unused, percent(pt.unused, pt.exported), pt.nowhere)
		for _, d := range ds {
			if d.Use == usedByOthers {
				continue
			}
			line := fmt.Sprintf("  %-8s %-7s %s", d.Use, d.Kind, d.Name)
			if len(d.TestUsers) > 0 {
				var us []string
				for _, u := range d.TestUsers {
					us = append(us, rel(modPath, u))
				}
				line += "  (tests of " + strings.Join(us, ", ") + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
}
