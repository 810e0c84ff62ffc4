package housetest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "write the layer table into docs/architecture.md")

const (
	tableBegin = "<!-- layer table: written by `go test ./internal/housetest -update`; TestArchitectureShowsTheLayerTable checks it -->"
	tableEnd   = "<!-- end of the layer table -->"
)

// markdown is the layer table as docs/architecture.md shows it.
func markdown() string {
	var b strings.Builder
	b.WriteString("| package | may import of ours | |\n|---|---|---|\n")
	for _, r := range table {
		b.WriteString("| " + code(r.pkgs) + " | ")
		if len(r.may) == 0 {
			b.WriteString("nothing")
		} else {
			b.WriteString(code(r.may))
		}
		b.WriteString(" | " + r.why + " |\n")
	}
	b.WriteString("| the commands (module root), `scripts/` | anything | |\n")
	return b.String()
}

func code(pkgs []string) string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = "`" + p + "`"
	}
	return strings.Join(out, ", ")
}

// TestArchitectureShowsTheLayerTable: the table in docs/architecture.md is
// this package's table, written from it, so the two never disagree.
func TestArchitectureShowsTheLayerTable(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "architecture.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i, j := strings.Index(text, tableBegin), strings.Index(text, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no layer table between %q and %q", path, tableBegin, tableEnd)
	}
	want := tableBegin + "\n" + markdown() + tableEnd
	got := text[i : j+len(tableEnd)]
	if got == want {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(text[:i]+want+text[j+len(tableEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/architecture.md's layer table is not the test's; run go test ./internal/housetest -update. It should read:\n%s", want)
}
