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
		"hop key":      {`{"frames": 10, "players": ["a"], "access": {"a": {"rtt_ms": 9, "hops": [{"addr": "10.0.0.1", "rtt_ms": 1, "ttl": 3}]}}}`, `"ttl"`},
		"hop addr":     {`{"frames": 10, "players": ["a"], "access": {"a": {"rtt_ms": 9, "hops": [{"addr": "router", "rtt_ms": 1}]}}}`, `hops[0].addr`},
		"hop order":    {`{"frames": 10, "players": ["a"], "access": {"a": {"rtt_ms": 9, "hops": [{"rtt_ms": 3}, {"rtt_ms": 2}]}}}`, `hops[1].rtt_ms`},
		"hop past rtt": {`{"frames": 10, "players": ["a"], "access": {"a": {"rtt_ms": 9, "hops": [{"addr": "10.0.0.1", "rtt_ms": 10}]}}}`, `hops[0].rtt_ms`},
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

// sim --trace: the run traces the named link and prints its path events;
// ada's, toward bob through her routers, are golden. A bad --trace is a
// usage error.
func TestSimTraceGolden(t *testing.T) {
	out := runOK(t, "sim", "--trace", "ada:bob", filepath.Join("testdata", "scenarios", "hops.json"))
	var paths []byte
	for _, l := range strings.SplitAfter(string(out), "\n") {
		if strings.HasPrefix(l, `{"type":"path",`) && strings.Contains(l, `"from":"ada","to":"bob"`) {
			paths = append(paths, l...)
		}
	}
	if len(paths) == 0 {
		t.Fatal("no path event from ada to bob")
	}
	golden(t, "sim_hops_trace_ada_bob.ndjson", paths)
	for _, bad := range []string{"ada", "ada:zed", "ada:ada"} {
		var o, e bytes.Buffer
		if code := run([]string{"sim", "--trace", bad, filepath.Join("testdata", "scenarios", "hops.json")}, &o, &e); code != 2 || o.Len() != 0 || strings.Count(e.String(), "\n") != 1 {
			t.Errorf("--trace %q: exit %d, stdout %d bytes, stderr %q", bad, code, o.Len(), e.String())
		}
	}
}
