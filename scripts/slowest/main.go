// Command slowest reads `go test -json` on its standard input, prints the
// tests' own output as `go test` would have, and then the slowest tests,
// so that the next slow one is seen where it is run (.ci/run):
//
//	go test -race -json ./... | go run ./scripts/slowest
//	go test -json ./... | go run ./scripts/slowest -n 20
//
// Subtests count on their own (a parent's time holds its subtests').
// Last come the failed tests, each with the end of its own output, so that
// a log cut to its tail still says what failed and why.
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
	"slices"
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
}

// tailLines is how many of a failed test's last output lines are printed
// again at the end.
const tailLines = 30

// key names one test of one package.
type key struct{ Package, Test string }

func main() {
	n := flag.Int("n", 10, "how many of the slowest tests to print")
	flag.Parse()
	slow, fails, failed, err := read(os.Stdin, os.Stdout, *n)
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
	fmt.Fprintf(out, "== %d failed\n", len(fails))
	for _, f := range fails {
		fmt.Fprintf(out, "FAILED %s %s\n", f.Package, f.Test)
	}
}

// read copies the stream's output to out and returns its n slowest tests,
// slowest first, the failed tests and packages with the end of their
// output, and whether anything failed.
func read(in io.Reader, out io.Writer, n int) (slow []timing, fails []failure, failed bool, err error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var all []timing
	// The last lines of each running test's output; a test's lines are
	// dropped when it ends.
	tails := map[key][]string{}
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
			}
		case "build-fail":
			failed = true
		case "pass", "fail", "skip":
			k := key{e.Package, e.Test}
			if e.Action == "fail" {
				failed = true
				fails = append(fails, failure{e.Package, e.Test, tails[k]})
			}
			delete(tails, k)
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
