package main

import (
	"bytes"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// The exit code table of docs/cli.md holds at the loose ends of the
// commands too: 0 success, 1 runtime failure, 2 bad input.

// A port in use is a runtime failure (exit 1) for join --bind and
// --metrics, as for host and impair: the flag was fine, the world was not.
func TestExitPortInUseIsRuntimeFailure(t *testing.T) {
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	for name, args := range map[string][]string{
		"join --bind":    {"join", "127.0.0.1:7373", "--json", "--bind", udp.LocalAddr().String()},
		"join --metrics": {"join", "127.0.0.1:7373", "--json", "--metrics", tcp.Addr().String()},
		"host --metrics": {"host", "--listen", "127.0.0.1:0", "--json", "--metrics", tcp.Addr().String()},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 1 || !strings.Contains(errb.String(), "in use") {
			t.Errorf("%s: exit %d, stderr %q; want 1 and the port in use named", name, code, errb.String())
		}
	}
}

// join that never joined exits 1, even when --duration ends it first.
func TestExitJoinNeverJoined(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"join", "127.0.0.1:1", "--json", "--duration", "1s", "--name", "bob"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "host answered") {
		t.Fatalf("exit %d, stderr %q; want 1, never joined", code, errb.String())
	}
}

// A host address with an unbalanced bracket is bad input (exit 2), not
// [::1]:7373.
func TestExitJoinBadBrackets(t *testing.T) {
	for _, a := range []string{"[::1", "::1]", "[[::1]]", "[::1]x"} {
		var out, errb bytes.Buffer
		if code := run([]string{"join", a, "--json", "--duration", "1ms"}, &out, &errb); code != exitUsage {
			t.Errorf("join %q: exit %d, stderr %q; want 2", a, code, errb.String())
		}
	}
	for _, a := range []string{"[::1]", "[::1]:7373", "::1"} {
		if _, err := hostPort(a); err != nil {
			t.Errorf("hostPort(%q): %v", a, err)
		}
	}
}

// replay --as a machine the recording has no view of is bad input (exit 2)
// with --json too.
func TestExitReplayAsNobody(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "run.lsrec")
	var sout, serr bytes.Buffer
	if code := run([]string{"sim", "--record", rec, "testdata/scenarios/handoff.json"}, &sout, &serr); code != 0 {
		t.Fatal(serr.String())
	}
	var out, errb bytes.Buffer
	if code := run([]string{"replay", rec, "--json", "--as", "nobody"}, &out, &errb); code != exitUsage || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %d bytes, stderr %q; want 2 and nothing on stdout", code, out.Len(), errb.String())
	}
}

// A socket the system will not open (here an address this machine does
// not have) is a runtime failure in the system's words (exit 1); an
// address that does not parse stays bad input (exit 2).
func TestExitUnopenableSocketIsRuntimeFailure(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"host", "--open", "--listen", "192.0.2.1:7373", "--json", "--duration", "1s"}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "cannot assign requested address") {
		t.Errorf("host --listen 192.0.2.1:7373: exit %d, stderr %q; want 1 and the system's reason", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"host", "--listen", "127.0.0.1:99999", "--json"}, &out, &errb); code != exitUsage {
		t.Errorf("host --listen 127.0.0.1:99999: exit %d, stderr %q; want 2", code, errb.String())
	}
}
