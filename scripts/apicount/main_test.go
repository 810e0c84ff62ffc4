package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// files is a tiny module: a declares names of every kind of use, b and c
// use some of them, cmd is a command.
var files = []struct{ pkg, name, src string }{
	{"m/a", "a.go", `package a

const (
	Used     = 1
	InPkg    = 2
	ForTests = 3
	Nowhere, AlsoUsed = 4, 5
)

type T struct{}

func (T) M()             {}
func (T) Deep()          {}
func (T) Solo()          {}
func (T) String() string { return "" }
func (t T) Rec()         { t.Rec() }

func Recursive(n int) int {
	if n == 0 {
		return 0
	}
	return Recursive(n - 1)
}

func helper() int { return InPkg }

type hidden struct{}

func (hidden) Exported() {}
`},
	{"m/a", "a_test.go", `package a

var _ = ForTests
`},
	{"m/a", "x_test.go", `package a_test

import "m/a"

var _ = a.InPkg
`},
	{"m/b", "b.go", `package b

import alias "m/a"

var _ = alias.Used + alias.AlsoUsed

func Get() alias.T { return alias.T{} }

func F(t alias.T) { t.M() }
`},
	{"m/c", "c.go", `package c

import "m/b"

var _ = func() int { b.Get().Deep(); return 0 }
`},
	{"m/cmd", "main.go", `package main

import "m/c"

func Exported() {}

func main() {}
`},
}

var metas = []pkgMeta{
	{Path: "m/a", Name: "a"},
	{Path: "m/b", Name: "b", Deps: []string{"m/a"}},
	{Path: "m/c", Name: "c", Deps: []string{"m/a", "m/b"}},
	{Path: "m/cmd", Name: "main", Deps: []string{"m/a", "m/b", "m/c"}},
}

// want is each counted name's use, as "pkg name use".
var want = []string{
	"m/a AlsoUsed used",
	"m/a ForTests tests",
	"m/a InPkg package",
	"m/a Nowhere nowhere",
	"m/a Recursive nowhere",
	"m/a T used",
	"m/a T.Deep used",
	"m/a T.M used",
	"m/a T.Rec nowhere",
	"m/a T.Solo nowhere",
	"m/a T.String used",
	"m/a Used used",
	"m/b F nowhere",
	"m/b Get used",
}

func uses(r *report) []string {
	var out []string
	for _, d := range r.Decls {
		out = append(out, d.Pkg+" "+d.Name+" "+d.Use)
	}
	return out
}

func TestAnalyzeSources(t *testing.T) {
	fset := token.NewFileSet()
	m := &module{Path: "m", Pkgs: metas}
	for _, f := range files {
		af, err := parser.ParseFile(fset, f.name, f.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		m.Files = append(m.Files, source{Pkg: f.pkg, Test: strings.HasSuffix(f.name, "_test.go"), File: af})
	}
	r := analyze(m)
	if got := uses(r); !slices.Equal(got, want) {
		t.Errorf("uses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(r.Skipped, []string{"m/cmd"}) {
		t.Errorf("skipped %v, want [m/cmd]", r.Skipped)
	}
	for _, d := range r.Decls {
		if d.Name == "InPkg" && !slices.Equal(d.TestUsers, []string{"m/a_test"}) {
			t.Errorf("InPkg's test users %v, want [m/a_test]", d.TestUsers)
		}
	}

	var out bytes.Buffer
	r.write(&out, "m", false)
	for _, line := range []string{
		"exported names:              14\n",
		"unused by other packages:    7 (50.0%)\n",
		"  used nowhere:              5\n",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q:\n%s", line, out.String())
		}
	}
	only := r.filter("m", []string{"b"})
	if got := uses(only); !slices.Equal(got, want[len(want)-2:]) {
		t.Errorf("-pkg b: %v", got)
	}
}

// TestLoadModule runs the whole program's path, go list included, on the
// tiny module written to disk, twice, and wants the same report both times.
func TestLoadModule(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	write := func(name, text string) {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module m\n\ngo 1.21\n")
	for _, f := range files {
		write(filepath.Join(strings.TrimPrefix(f.pkg, "m/"), f.name), f.src)
	}
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", "-mod=mod")

	var outs []string
	for range 2 {
		m, err := load(dir)
		if err != nil {
			t.Fatal(err)
		}
		r := analyze(m)
		if got := uses(r); !slices.Equal(got, want) {
			t.Fatalf("uses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		var out bytes.Buffer
		r.write(&out, m.Path, true)
		outs = append(outs, out.String())
	}
	if outs[0] != outs[1] {
		t.Errorf("two runs differ:\n%s\n---\n%s", outs[0], outs[1])
	}
	if !strings.Contains(outs[0], "  nowhere  method  T.Solo\n") {
		t.Errorf("-list lacks T.Solo:\n%s", outs[0])
	}
}
