// Command slowest reads `go test -json` on its standard input, prints the
// tests' own output as `go test` would have, and then the slowest tests,
// so that the next slow one is seen where it is run (.ci/run):
//
//	go test -race -json ./... | go run ./scripts/slowest
//	go test -json ./... | go run ./scripts/slowest -n 20
//
// Subtests count on their own (a parent's time holds its subtests').
// Last come the failed tests, each with the end of its own output, and
// then what they said was wrong: the lines written from a source line that
// is not a t.Log or t.Logf call (t.Error, t.Fatal and helpers that call
// them), found by the file:line each line starts with, so that a log cut
// to its tail still says what failed and why.
// It exits 1 when the stream reports a failed test or package, or is
// not `go test -json`, so that a pipeline under `set -o pipefail` fails
// as `go test` does.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// timing is one finished test.
type timing struct {
	Package, Test string
	Elapsed       time.Duration
}

// failure is one failed test (or package, with Test empty) and the last
// lines of its own output.
type failure struct {
	Package, Test string
	Tail          []string
	// Said is what the test said was wrong, as the complaints type keeps it.
	Said []string
}

// tailLines is how many of a failed test's last output lines are printed
// again at the end; saidLines how many of its complaint lines, and
// continued how many continuation lines of each complaint.
const (
	tailLines = 15
	saidLines = 40
	continued = 4
)

// key names one test of one package.
type key struct{ Package, Test string }

func main() {
	n := flag.Int("n", 10, "how many of the slowest tests to print")
	flag.Parse()
	slow, fails, failed, err := read(os.Stdin, os.Stdout, *n, newSources("."))
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowest:", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stdout, "== the %d slowest tests\n", len(slow))
	for _, s := range slow {
		fmt.Fprintf(os.Stdout, "%8.2fs  %s  %s\n", s.Elapsed.Seconds(), s.Package, s.Test)
	}
	printFailures(os.Stdout, fails)
	if failed {
		os.Exit(1)
	}
}

// printFailures prints each failed test's name and the end of its output,
// then the list of names again as the log's last lines.
func printFailures(out io.Writer, fails []failure) {
	if len(fails) == 0 {
		return
	}
	for i := range fails {
		if fails[i].Test == "" {
			fails[i].Test = "(the package)"
		}
	}
	for _, f := range fails {
		fmt.Fprintf(out, "== failed: %s %s; the end of its output:\n", f.Package, f.Test)
		for _, l := range f.Tail {
			io.WriteString(out, l)
		}
	}
	for _, f := range fails {
		if len(f.Said) == 0 {
			continue
		}
		fmt.Fprintf(out, "== what %s %s said was wrong:\n", f.Package, f.Test)
		for _, l := range f.Said {
			io.WriteString(out, l)
		}
	}
	fmt.Fprintf(out, "== %d failed\n", len(fails))
	for _, f := range fails {
		fmt.Fprintf(out, "FAILED %s %s\n", f.Package, f.Test)
	}
}

// read copies the stream's output to out and returns its n slowest tests,
// slowest first, the failed tests and packages with the end of their
// output, and whether anything failed.
func read(in io.Reader, out io.Writer, n int, src *sources) (slow []timing, fails []failure, failed bool, err error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var all []timing
	// The last lines of each running test's output; a test's lines are
	// dropped when it ends.
	tails := map[key][]string{}
	said := map[key]*complaints{}
	lines := 0
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			// Not test2json's (a build failure goes to stderr, but be
			// lenient with anything else): passed on as it came.
			fmt.Fprintln(out, sc.Text())
			continue
		}
		lines++
		switch e.Action {
		case "output", "build-output":
			io.WriteString(out, e.Output)
			if e.Action == "output" {
				k := key{e.Package, e.Test}
				t := append(tails[k], e.Output)
				if len(t) > tailLines {
					t = t[len(t)-tailLines:]
				}
				tails[k] = t
				c := said[k]
				if c == nil {
					c = &complaints{}
					said[k] = c
				}
				c.add(src, e.Package, e.Output)
			}
		case "build-fail":
			failed = true
		case "pass", "fail", "skip":
			k := key{e.Package, e.Test}
			if e.Action == "fail" {
				failed = true
				f := failure{Package: e.Package, Test: e.Test, Tail: tails[k]}
				if c := said[k]; c != nil {
					f.Said = c.lines
				}
				fails = append(fails, f)
			}
			delete(tails, k)
			delete(said, k)
			if e.Action != "skip" && e.Test != "" {
				all = append(all, timing{e.Package, e.Test, time.Duration(e.Elapsed * float64(time.Second))})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fails, failed, err
	}
	if lines == 0 {
		return nil, nil, true, fmt.Errorf("no go test -json events on the input")
	}
	slices.SortStableFunc(all, func(a, b timing) int { return cmp.Compare(b.Elapsed, a.Elapsed) })
	return all[:min(n, len(all))], fails, failed, nil
}

// testLine is a line a test wrote through t.Log, t.Error and the like:
// indented, then file.go:line: and the message.
var testLine = regexp.MustCompile(`^\s+([\w.-]+\.go):(\d+): `)

// complaints keeps a test's output lines written from a source line that
// is not a t.Log or t.Logf call, each with its first continuation lines.
type complaints struct {
	lines []string
	// more is how many continuation lines the current complaint may still
	// keep; -1 while the current message is no complaint.
	more int
}

// add takes one output line of a test of package pkg.
func (c *complaints) add(src *sources, pkg, line string) {
	if len(c.lines) >= saidLines {
		return
	}
	m := testLine.FindStringSubmatch(line)
	if m == nil {
		// A continuation line, or the test framework's own.
		if c.more > 0 && strings.HasPrefix(line, "    ") {
			c.lines = append(c.lines, line)
			c.more--
		}
		return
	}
	n, _ := strconv.Atoi(m[2])
	code, ok := src.line(pkg, m[1], n)
	if !ok || strings.Contains(code, ".Log(") || strings.Contains(code, ".Logf(") {
		c.more = -1
		return
	}
	c.lines = append(c.lines, line)
	c.more = continued
}

// sources reads test files of the module rooted at root, for the source
// line an output line names.
type sources struct {
	root, module string
	files        map[string][]string
}

// newSources reads the module path from root's go.mod; without one no
// source line is found and no line counts as a complaint.
func newSources(root string) *sources {
	s := &sources{root: root, files: map[string][]string{}}
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
				s.module = f[1]
			}
		}
	}
	return s
}

// line returns line n of file in package pkg's directory.
func (s *sources) line(pkg, file string, n int) (string, bool) {
	if s == nil || s.module == "" || (pkg != s.module && !strings.HasPrefix(pkg, s.module+"/")) {
		return "", false
	}
	path := filepath.Join(s.root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkg, s.module), "/")), file)
	lines, ok := s.files[path]
	if !ok {
		if b, err := os.ReadFile(path); err == nil {
			lines = strings.Split(string(b), "\n")
		}
		s.files[path] = lines
	}
	if n < 1 || n > len(lines) {
		return "", false
	}
	return lines[n-1], true
}
