package main

// Goldens: the byte-for-byte output of `lagscope sim` for every scenario in
// testdata/scenarios, and one recording (handoff.json: a removal and a master
// handoff) with what `replay --json` and `report` make of it. They pin the
// engine's decisions, the NDJSON contract, the event IDs and the recording
// format (S19): any change that alters them updates them in the same commit
// and says why. Regenerate with `go test -run Golden -update .`.

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update . to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got  %.300s\n want %.300s", name, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs in length: got %d lines, want %d", name, len(gl), len(wl))
	}
}

// simOutput is what `lagscope sim path` prints: the sim is deterministic
// (the goldens pin it), so each scenario runs once per test binary and
// every test that reads its output shares the bytes, which it must not
// change.
func simOutput(t *testing.T, path string) []byte {
	t.Helper()
	c, _ := simRuns.LoadOrStore(path, &simRun{})
	r := c.(*simRun)
	r.once.Do(func() {
		var out, errb bytes.Buffer
		if code := run([]string{"sim", path}, &out, &errb); code != 0 {
			r.err = fmt.Errorf("lagscope sim %s: exit %d: %s", path, code, errb.String())
			return
		}
		r.out = out.Bytes()
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.out
}

var simRuns sync.Map // path → *simRun

type simRun struct {
	once sync.Once
	out  []byte
	err  error
}

func runOK(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("lagscope %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.Bytes()
}

func TestGoldenSimEveryScenario_S19(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			golden(t, "sim_"+name+".ndjson", simOutput(t, f))
		})
	}
}

func TestGoldenRecording_S19(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "handoff.lsrec")
	runOK(t, "sim", "--record", rec, filepath.Join("testdata", "scenarios", "handoff.json"))
	got, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "handoff.lsrec", got)

	// The committed recording, read back: event IDs and the format are
	// what a recording made today and replayed tomorrow depends on.
	committed := filepath.Join("testdata", "golden", "handoff.lsrec")
	golden(t, "handoff.replay.ndjson", runOK(t, "replay", "--json", committed))
	golden(t, "handoff.report.txt", runOK(t, "report", committed))
	golden(t, "handoff.report.json", runOK(t, "report", "--format", "json", committed))
}
