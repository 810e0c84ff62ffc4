package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every shipped scenario parses.
func TestShippedScenariosParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "scenarios", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseScenario(strings.NewReader(string(b))); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

func TestScenarioErrorsNameTheKey(t *testing.T) {
	cases := map[string]string{
		`{"frames":10,"players":["a"],"bogus":1}`:                                 `"bogus"`,
		`{"frames":"ten","players":["a"]}`:                                        `"frames"`,
		`{"frames":10,"players":["a","a"]}`:                                       `"players"`,
		`{"frames":10,"players":["a"],"fps":2000}`:                                `"fps"`,
		`{"frames":10,"players":["a"],"network":{"rtt_ms":-1}}`:                   `network.rtt_ms`,
		`{"frames":10,"players":["a"],"process_ms":{"z":1}}`:                      `"process_ms"`,
		`{"frames":10,"players":["a"],"timeline":[{"remove":"a"}]}`:               `timeline[0]`,
		`{"frames":10,"players":["a"],"timeline":[{"at_frame":5}]}`:               `changes nothing`,
		`{"frames":10,"players":["a","b"],"timeline":[{"at_ms":5,"remove":"c"}]}`: `timeline[0].remove`,
		`{"frames":10,"players":["a"]} {}`:                                        `trailing`,
	}
	for in, want := range cases {
		_, err := ParseScenario(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %s", in, err, want)
		}
	}
}

// FuzzParseScenario: no input makes the scenario decoder panic, and what it
// accepts can be run (a scenario that parses is runnable).
func FuzzParseScenario(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "scenarios", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"frames":3,"players":["a","b"],"timeline":[{"at_frame":1,"fps":5}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := ParseScenario(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		if sc.FPS < 1 || sc.Frames < 1 || len(sc.Players) == 0 {
			t.Fatalf("accepted an invalid scenario: %+v", sc)
		}
	})
}
