package main

import (
	"fmt"
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
	slow, _, failed, err := read(strings.NewReader(stream), &out, 3)
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
	if _, _, failed, err := read(strings.NewReader(in), &out, 10); err != nil || !failed {
		t.Fatalf("failed %v, err %v; want a failure", failed, err)
	}
}

func TestReadSeesABuildFailure(t *testing.T) {
	in := `{"ImportPath":"p.test","Action":"build-output","Output":"# p\n./x.go:1: oops\n"}
{"ImportPath":"p.test","Action":"build-fail"}
`
	var out strings.Builder
	if _, _, failed, err := read(strings.NewReader(in), &out, 10); err != nil || !failed || out.String() != "# p\n./x.go:1: oops\n" {
		t.Fatalf("failed %v, err %v, out %q; want the build's output and a failure", failed, err, out.String())
	}
}

func TestReadRefusesAnEmptyStream(t *testing.T) {
	var out strings.Builder
	if _, _, failed, err := read(strings.NewReader(""), &out, 10); err == nil || !failed {
		t.Fatalf("failed %v, err %v; want an error", failed, err)
	}
}

func TestReadPassesOnWhatIsNotJSON(t *testing.T) {
	var out strings.Builder
	in := "# a build error\n" + `{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1}` + "\n"
	slow, _, _, err := read(strings.NewReader(in), &out, 10)
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
	_, fails, failed, err := read(strings.NewReader(in.String()), &out, 10)
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
