package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const stream = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1.5}
{"Action":"pass","Package":"p","Test":"TestB","Elapsed":12}
{"Action":"pass","Package":"p","Test":"TestB/sub","Elapsed":11}
{"Action":"skip","Package":"p","Test":"TestC","Elapsed":0}
{"Action":"output","Package":"p","Output":"ok  \tp\t13.1s\n"}
{"Action":"pass","Package":"p","Elapsed":13.1}
{"Action":"pass","Package":"q","Test":"TestD","Elapsed":3}
`

func TestReadPrintsOutputAndRanksTests(t *testing.T) {
	var out strings.Builder
	slow, _, failed, err := read(strings.NewReader(stream), &out, 3, nil)
	if err != nil || failed {
		t.Fatalf("read: %v, failed %v", err, failed)
	}
	if got, want := out.String(), "=== RUN   TestA\nok  \tp\t13.1s\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	want := []timing{{"p", "TestB", 12 * time.Second}, {"p", "TestB/sub", 11 * time.Second}, {"q", "TestD", 3 * time.Second}}
	if len(slow) != len(want) {
		t.Fatalf("slowest %v, want %v", slow, want)
	}
	for i := range want {
		if slow[i] != want[i] {
			t.Errorf("slowest[%d] = %v, want %v", i, slow[i], want[i])
		}
	}
}

func TestReadSeesAFailure(t *testing.T) {
	in := `{"Action":"fail","Package":"p","Test":"TestA","Elapsed":0.1}
{"Action":"fail","Package":"p","Elapsed":0.2}
`
	var out strings.Builder
	if _, _, failed, err := read(strings.NewReader(in), &out, 10, nil); err != nil || !failed {
		t.Fatalf("failed %v, err %v; want a failure", failed, err)
	}
}

func TestReadSeesABuildFailure(t *testing.T) {
	in := `{"ImportPath":"p.test","Action":"build-output","Output":"# p\n./x.go:1: oops\n"}
{"ImportPath":"p.test","Action":"build-fail"}
`
	var out strings.Builder
	if _, _, failed, err := read(strings.NewReader(in), &out, 10, nil); err != nil || !failed || out.String() != "# p\n./x.go:1: oops\n" {
		t.Fatalf("failed %v, err %v, out %q; want the build's output and a failure", failed, err, out.String())
	}
}

func TestReadRefusesAnEmptyStream(t *testing.T) {
	var out strings.Builder
	if _, _, failed, err := read(strings.NewReader(""), &out, 10, nil); err == nil || !failed {
		t.Fatalf("failed %v, err %v; want an error", failed, err)
	}
}

func TestReadPassesOnWhatIsNotJSON(t *testing.T) {
	var out strings.Builder
	in := "# a build error\n" + `{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1}` + "\n"
	slow, _, _, err := read(strings.NewReader(in), &out, 10, nil)
	if err != nil || out.String() != "# a build error\n" || len(slow) != 1 {
		t.Fatalf("out %q, slow %v, err %v", out.String(), slow, err)
	}
}

func TestFailuresKeepTheEndOfTheirOutput(t *testing.T) {
	var in strings.Builder
	in.WriteString(`{"Action":"output","Package":"p","Test":"TestOK","Output":"fine\n"}` + "\n")
	in.WriteString(`{"Action":"pass","Package":"p","Test":"TestOK","Elapsed":1}` + "\n")
	for i := range tailLines + 5 {
		fmt.Fprintf(&in, `{"Action":"output","Package":"p","Test":"TestBad","Output":"line %d\n"}`+"\n", i)
	}
	in.WriteString(`{"Action":"fail","Package":"p","Test":"TestBad","Elapsed":2}` + "\n")
	in.WriteString(`{"Action":"output","Package":"p","Output":"FAIL\tp\t3s\n"}` + "\n")
	in.WriteString(`{"Action":"fail","Package":"p","Elapsed":3}` + "\n")
	var out strings.Builder
	_, fails, failed, err := read(strings.NewReader(in.String()), &out, 10, nil)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	if len(fails) != 2 || fails[0].Test != "TestBad" || fails[1].Test != "" {
		t.Fatalf("failures %+v, want TestBad then the package", fails)
	}
	if got := fails[0].Tail; len(got) != tailLines || got[0] != "line 5\n" || got[len(got)-1] != fmt.Sprintf("line %d\n", tailLines+4) {
		t.Errorf("TestBad's tail %q, want its last %d lines", got, tailLines)
	}
	var end strings.Builder
	printFailures(&end, fails)
	if s := end.String(); !strings.HasSuffix(s, "== 2 failed\nFAILED p TestBad\nFAILED p (the package)\n") || strings.Contains(s, "fine") {
		t.Errorf("printed %q", s)
	}
}

// A failed test's complaints are its lines written from t.Error-like
// calls, found by their file:line in the package's source, with their
// continuation lines; its t.Log lines are left out.
func TestFailuresSayWhatWasWrong(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n\ngo 1.26\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	src := "package sub\n\tt.Logf(\"a log\")\n\tt.Errorf(\"wrong\")\n\tcheckThing(t)\n"
	os.WriteFile(filepath.Join(root, "sub", "x_test.go"), []byte(src), 0o644)
	var in strings.Builder
	out := func(s string) {
		b, _ := json.Marshal(event{Action: "output", Package: "example.com/m/sub", Test: "TestX", Output: s})
		in.Write(append(b, '\n'))
	}
	out("=== RUN   TestX\n")
	out("    x_test.go:2: a log\n")
	out("        its continuation\n")
	out("    x_test.go:3: wrong\n")
	out("        why 1\n")
	for i := range continued + 2 {
		out(fmt.Sprintf("        more %d\n", i))
	}
	out("    x_test.go:4: a helper's complaint\n")
	out("    y_test.go:9: from a file not found\n")
	out("--- FAIL: TestX (1.00s)\n")
	in.WriteString(`{"Action":"fail","Package":"example.com/m/sub","Test":"TestX","Elapsed":1}` + "\n")
	var w strings.Builder
	_, fails, _, err := read(strings.NewReader(in.String()), &w, 10, newSources(root))
	if err != nil || len(fails) != 1 {
		t.Fatalf("fails %+v, err %v", fails, err)
	}
	want := []string{"    x_test.go:3: wrong\n", "        why 1\n", "        more 0\n", "        more 1\n", "        more 2\n", "    x_test.go:4: a helper's complaint\n"}
	if !slices.Equal(fails[0].Said, want) {
		t.Errorf("said %q, want %q", fails[0].Said, want)
	}
	var end strings.Builder
	printFailures(&end, fails)
	if s := end.String(); !strings.Contains(s, "== what example.com/m/sub TestX said was wrong:\n    x_test.go:3: wrong\n") {
		t.Errorf("printed %q", s)
	}
}
