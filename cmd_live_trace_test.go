package main

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// `--trace bob`: the host looks closely at its link to bob from the
// start, and its NDJSON has `path` events to bob while it runs. On
// loopback the path is one hop, the peer itself at 127.0.0.1, which
// answers, so the trace is complete — and places nothing: one hop cannot
// tell this machine, its LAN and the peer's machine apart, so no event
// says where delay starts, and each says one_hop. The events come about
// once a second (counted with generous bounds: timing is for benchmarks).
// A --trace that names no player is a usage error, and so is one beside
// --no-trace.
func TestLiveTraceFlag(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the hop tracer reads the error queue, which only Linux has")
	}
	bin := buildLagscope(t)
	host := startProc(t, bin, "ada", "host", "--open", "--name", "ada", "--listen", "127.0.0.1:0", "--json",
		"--duration", "9s", "--trace", "bob")
	addr := hostAddr(t, host)
	bob := startProc(t, bin, "bob", "join", addr, "--name", "bob", "--json", "--duration", "8s")
	for _, p := range []*proc{host, bob} {
		if code := p.exit(40 * time.Second); code != 0 {
			t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
		}
	}
	paths := host.of("path")
	if n := len(paths); n < 2 || n > 12 {
		t.Fatalf("%d path events in a 9 s run, want about one a second", n)
	}
	complete := 0
	for _, e := range paths {
		if e.str("from") != "ada" || e.str("to") != "bob" || e["available"] != true || e["why"] != nil {
			t.Fatalf("path event %v", e)
		}
		if e["delay_starts"] != nil || e["loss_starts"] != nil || (e["complete"] == true && e["one_hop"] != true) {
			t.Fatalf("a one-hop path places something: %v", e)
		}
		if _, ok := e["frame"]; ok {
			t.Fatalf("path event with a frame: %v", e)
		}
		hops, _ := e["hops"].([]any)
		if e["complete"] != true {
			continue
		}
		complete++
		if len(hops) != 1 {
			t.Fatalf("a complete loopback path of %d hops: %v", len(hops), e)
		}
		h := hops[0].(map[string]any)
		if h["ttl"] != 1.0 || h["link"] != "peer" || h["addr"] != "127.0.0.1" || h["loss"] != 0.0 || h["rtt_ms"] == nil {
			t.Fatalf("loopback hop %v", h)
		}
	}
	if complete == 0 {
		t.Fatalf("no complete path among %d: %v", len(paths), paths)
	}
	if es := host.events(); es[len(es)-1].str("type") != "summary" {
		t.Fatal("the host's last line is not the summary")
	}

	out, err := exec.Command(bin, "host", "--open", "--trace", "a\x1bb", "--json").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--trace") {
		t.Fatalf("a --trace that is no name: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "host", "--open", "--trace", "bob", "--no-trace", "--json").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || strings.Count(string(out), "\n") != 1 || !strings.Contains(string(out), "--no-trace") {
		t.Fatalf("--trace beside --no-trace: %v\n%s", err, out)
	}
}
