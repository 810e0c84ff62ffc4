package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad queue or load-test key is a usage error: exit 2, nothing on
// stdout, one line naming the key.
func TestSimCommandBadQueueAndLoadKeys(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct{ body, want string }{
		"queue rate":   {`{"frames": 10, "players": ["a"], "access": {"a": {"queue": {"up_mbit": 0}}}}`, `a.queue.up_mbit`},
		"queue buffer": {`{"frames": 10, "players": ["a"], "access": {"a": {"queue": {"down_buffer_kb": 64}}}}`, `a.queue.down_buffer_kb`},
		"queue key":    {`{"frames": 10, "players": ["a"], "access": {"a": {"queue": {"up_limit_kb": 64}}}}`, `"up_limit_kb"`},
		"load peer":    {`{"frames": 10, "players": ["a"], "load_tests": [{"from": "a", "to": "z", "at_ms": 5}]}`, `load_tests[0].to`},
		"load no time": {`{"frames": 10, "players": ["a", "b"], "load_tests": [{"from": "a", "to": "b"}]}`, `load_tests[0].at_ms`},
		"refuser":      {`{"frames": 10, "players": ["a"], "no_load_tests": ["z"]}`, `no_load_tests`},
		"cap":          {`{"frames": 10, "players": ["a"], "load_cap_mbit": {"a": 0}}`, `load_cap_mbit.a`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".json")
			if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			if code := run([]string{"sim", path}, &out, &errb); code != 2 {
				t.Fatalf("exit %d, want 2", code)
			}
			if msg := errb.String(); out.Len() != 0 || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, c.want) {
				t.Fatalf("stdout %q, stderr %q: want nothing, and one line naming %s", out.String(), msg, c.want)
			}
		})
	}
}

// The shipped bufferbloat scenario prints one load line per tester, each
// with the run's clock and no frame, ada's before bob's.
func TestSimCommandPrintsLoadLines(t *testing.T) {
	out := runOK(t, "sim", filepath.Join("testdata", "scenarios", "bufferbloat.json"))
	var from []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(l, `{"type":"load",`) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		if _, ok := m["frame"]; ok || m["t_ms"] == nil {
			t.Fatalf("load line %q: want t_ms and no frame", l)
		}
		from = append(from, m["from"].(string))
	}
	if strings.Join(from, ",") != "ada,bob" {
		t.Fatalf("load lines from %v, want ada's then bob's", from)
	}
}
