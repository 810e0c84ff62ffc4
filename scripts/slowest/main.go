// Command slowest reads `go test -json` on its standard input, prints the
// tests' own output as `go test` would have, and then the slowest tests,
// so that the next slow one is seen where it is run (.ci/run):
//
//	go test -race -json ./... | go run ./scripts/slowest
//	go test -json ./... | go run ./scripts/slowest -n 20
//
// Subtests count on their own (a parent's time holds its subtests').
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

func main() {
	n := flag.Int("n", 10, "how many of the slowest tests to print")
	flag.Parse()
	slow, failed, err := read(os.Stdin, os.Stdout, *n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowest:", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stdout, "== the %d slowest tests\n", len(slow))
	for _, s := range slow {
		fmt.Fprintf(os.Stdout, "%8.2fs  %s  %s\n", s.Elapsed.Seconds(), s.Package, s.Test)
	}
	if failed {
		os.Exit(1)
	}
}

// read copies the stream's output to out and returns its n slowest tests,
// slowest first, and whether anything failed.
func read(in io.Reader, out io.Writer, n int) (slow []timing, failed bool, err error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var all []timing
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
		case "build-fail":
			failed = true
		case "pass", "fail":
			if e.Action == "fail" {
				failed = true
			}
			if e.Test != "" {
				all = append(all, timing{e.Package, e.Test, time.Duration(e.Elapsed * float64(time.Second))})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, failed, err
	}
	if lines == 0 {
		return nil, true, fmt.Errorf("no go test -json events on the input")
	}
	slices.SortStableFunc(all, func(a, b timing) int { return cmp.Compare(b.Elapsed, a.Elapsed) })
	return all[:min(n, len(all))], failed, nil
}
