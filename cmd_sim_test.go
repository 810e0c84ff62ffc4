package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimCommandPrintsNDJSONEndingInSummary(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"sim", "testdata/scenarios/slow_link.json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	types := map[string]int{}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		if _, ok := m["frame"]; !ok {
			t.Fatalf("line without frame: %q", l)
		}
		types[m["type"].(string)]++
	}
	for _, want := range []string{"master", "report", "timing", "timing_active", "message", "summary"} {
		if types[want] == 0 {
			t.Fatalf("no %q line in %v", want, types)
		}
	}
	if !strings.Contains(lines[len(lines)-1], `"type":"summary"`) {
		t.Fatalf("last line is not the summary")
	}
}

func TestSimCommandBadScenario(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct{ body, want string }{
		"unknown key":  {`{"frames": 10, "players": ["a"], "colour": 1}`, `"colour"`},
		"bad value":    {`{"frames": 10, "players": ["a"], "fps": 0.5}`, `"fps"`},
		"no players":   {`{"frames": 10, "players": []}`, `"players"`},
		"unknown pair": {`{"frames": 10, "players": ["a","b"], "links": [{"between": ["a","z"], "rtt_ms": 5}]}`, `"z"`},
		"not json":     {`{`, `scenario`},
		"loss of one":  {`{"frames": 10, "players": ["a","b"], "network": {"loss": 1}}`, `loss`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".json")
			if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := run([]string{"sim", path}, &out, &errb)
			if code != 2 {
				t.Fatalf("exit %d, want 2", code)
			}
			if out.Len() != 0 {
				t.Fatalf("wrote to stdout on bad input: %q", out.String())
			}
			msg := errb.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, c.want) {
				t.Fatalf("error %q: want one line naming %s", msg, c.want)
			}
		})
	}
	var out, errb bytes.Buffer
	if code := run([]string{"sim"}, &out, &errb); code != 2 {
		t.Fatalf("no argument: exit %d, want 2", code)
	}
	if code := run([]string{"sim", filepath.Join(dir, "missing.json")}, &out, &errb); code != 2 {
		t.Fatalf("missing file: exit %d, want 2", code)
	}
}
