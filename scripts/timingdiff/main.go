// Command timingdiff checks that a change to the simulator kept the timing
// decisions: for every scenario in testdata/scenarios it compares the
// `timing` lines of the committed golden at a git revision with those the
// simulator prints now (a change such as simulating the lobby shifts the
// seeded draws, so the goldens change, but the decisions — frame, evaluation
// frame, send period, look-ahead, rung, tier, frame rate, reason — should
// not). Run it from the repository's root:
//
//	go run ./scripts/timingdiff            # against HEAD's goldens
//	go run ./scripts/timingdiff -rev main  # against another revision
//
// It prints one line per scenario and every timing line that moved, and
// exits 1 when any did.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lagscope/lagscope/probe/sim"
)

func main() {
	rev := flag.String("rev", "HEAD", "the git revision whose goldens are the reference")
	flag.Parse()
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.json"))
	if err != nil || len(files) == 0 {
		fmt.Fprintln(os.Stderr, "timingdiff: no scenarios here (run it from the repository's root)")
		os.Exit(2)
	}
	moved := false
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		old, err := exec.Command("git", "show", *rev+":testdata/golden/sim_"+name+".ndjson").Output()
		if err != nil {
			fmt.Printf("%-14s no golden at %s\n", name, *rev)
			continue
		}
		now, err := run(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "timingdiff: %s: %v\n", f, err)
			os.Exit(2)
		}
		a, b := timings(old), timings(now)
		if slices.Equal(a, b) {
			fmt.Printf("%-14s same (%d timing events)\n", name, len(a))
			continue
		}
		moved = true
		fmt.Printf("%-14s MOVED (%d timing events before, %d now)\n", name, len(a), len(b))
		for i := range max(len(a), len(b)) {
			var x, y string
			if i < len(a) {
				x = a[i]
			}
			if i < len(b) {
				y = b[i]
			}
			if x != y {
				fmt.Printf("  - %s\n  + %s\n", x, y)
			}
		}
	}
	if moved {
		os.Exit(1)
	}
}

func run(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc, err := sim.ParseScenario(f)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	_, err = sim.Run(sc, &out)
	return out.Bytes(), err
}

// timings keeps the `timing` lines: the printer writes "type" first, so a
// prefix picks them out exactly.
func timings(ndjson []byte) []string {
	var out []string
	s := bufio.NewScanner(bytes.NewReader(ndjson))
	s.Buffer(nil, 1<<24)
	for s.Scan() {
		if l := s.Text(); strings.HasPrefix(l, `{"type":"timing",`) {
			out = append(out, l)
		}
	}
	return out
}
