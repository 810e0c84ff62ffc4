package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lagscope/lagscope/names"
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
		// Names follow the one rule of package names; fps 0 is refused.
		`{"frames":10,"players":["a"],"fps":0}`:                         `"fps": 0`,
		`{"frames":10,"players":["\u001b[2J\u001b]0;pwned\u0007"]}`:     `control character U+001B`,
		`{"frames":10,"players":["bob","\u3164"]}`:                      `U+3164`,
		`{"frames":10,"players":["bob","Ｂｏｂ"]}`:                         `written "Bob"`,
		`{"frames":10,"players":["bob","Bob"]}`:                         `"Bob" looks the same as "bob"`,
		`{"frames":10,"players":["alice","\u0430lice"]}`:                `looks the same as "alice"`,
		`{"frames":10,"players":["a"],"observers":["A"]}`:               `looks the same`,
		`{"frames":10,"players":[""]}`:                                  `empty`,
		`{"frames":10,"players":["123456789012345678901234567890123"]}`: `longer than the 32 a name may take`,
	}
	for in, want := range cases {
		_, err := ParseScenario(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) || strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("%s: error %v, want one line containing %s", in, err, want)
		}
	}
	// A name with inner spaces is a name; leaving fps out means 30.
	sc, err := ParseScenario(strings.NewReader(`{"frames":10,"players":["Bob Smith","Zoë"]}`))
	if err != nil || sc.FPS != 30 {
		t.Fatalf("spaces and accents: %v, fps %v", err, sc)
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
		for _, n := range append(sc.Players, sc.Observers...) {
			if c, err := names.Validate(n); err != nil || c != n {
				t.Fatalf("accepted the name %q: %q, %v", n, c, err)
			}
		}
	})
}
