package main

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestMetricsNote(t *testing.T) {
	every := func(addr, local string) string {
		return "--metrics " + addr + " listens on every interface, so the metrics are reachable from the network; use --metrics " + local + " to keep them on this machine"
	}
	for addr, want := range map[string]string{
		":9373":                 every(":9373", "127.0.0.1:9373"),
		"0.0.0.0:9373":          every("0.0.0.0:9373", "127.0.0.1:9373"),
		"[::]:9373":             every("[::]:9373", "[::1]:9373"),
		"[::ffff:0.0.0.0]:9373": every("[::ffff:0.0.0.0]:9373", "127.0.0.1:9373"),
		"[::%eth0]:9373":        every("[::%eth0]:9373", "[::1]:9373"),
		":0":                    every(":0", "127.0.0.1:0"),
		"127.0.0.1:9373":        "",
		"[::1]:9373":            "",
		"localhost:9373":        "",
		"192.168.1.10:9373":     "",
		"[2001:db8::1]:9373":    "",
		"box.lan:9373":          "",
		"9373":                  "", // does not parse; check refuses it
		": ":                    "", // no such port; the listen says so
		":99999":                "",
		":http":                 every(":http", "127.0.0.1:http"),
	} {
		if got := metricsNote(addr); got != want {
			t.Errorf("metricsNote(%q) = %q, want %q", addr, got, want)
		}
	}
}

// A live run with --metrics on every interface says so on stderr, once,
// before it runs; one on loopback says nothing. The host listens on
// loopback; the metrics listener of the first run is on every interface of
// this machine for the run's 300 ms (port 0: a free one).
func TestMetricsOnEveryInterfaceNoted(t *testing.T) {
	for _, tc := range []struct {
		metrics string
		want    string
	}{
		{":0", "lagscope host: note: " + metricsNote(":0") + "\n"},
		{"127.0.0.1:0", ""},
	} {
		var out, errb bytes.Buffer
		code := run([]string{"host", "--listen", "127.0.0.1:0", "--players", "1", "--json", "--duration", "300ms", "--metrics", tc.metrics}, &out, &errb)
		if code != 0 {
			t.Fatalf("--metrics %s: exit %d, stderr %q", tc.metrics, code, errb.String())
		}
		// The host's join line follows on stderr; the note is the rest.
		got, _, _ := strings.Cut(errb.String(), "lagscope join ")
		if got != tc.want {
			t.Errorf("--metrics %s: stderr %q, want %q", tc.metrics, got, tc.want)
		}
		if tc.want != "" && !strings.Contains(tc.want, "use --metrics 127.0.0.1:0") {
			t.Errorf("the note %q names no loopback address", tc.want)
		}
	}
}

// The address comes from the command line: metricsNote never panics, and a
// note it gives names a loopback address with the port asked for.
func FuzzMetricsNote(f *testing.F) {
	for _, a := range []string{":9373", "0.0.0.0:1", "[::]:0", "[::%lo]:9", "127.0.0.1:9373", "[::ffff:0.0.0.0]:80", "x:y", "", "[", ":"} {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		note := metricsNote(addr)
		if note == "" {
			return
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("a note for %q, which does not parse", addr)
		}
		_, rest, ok := strings.Cut(note, "; use --metrics ")
		local, ok2 := strings.CutSuffix(rest, " to keep them on this machine")
		ok = ok && ok2
		h, p, err := net.SplitHostPort(local)
		if !ok || err != nil || p != port {
			t.Fatalf("note %q for %q: want the port %q on loopback", note, addr, port)
		}
		if ip, err := netip.ParseAddr(h); err != nil || !ip.IsLoopback() {
			t.Fatalf("note %q for %q names %q, not a loopback address", note, addr, h)
		}
	})
}
