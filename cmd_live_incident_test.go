package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// Four live machines on loopback; `lagscope impair` delays bob's path to
// the host by 120 ms each way for 15 s while the game runs (bob joins
// through it; bob's other links and the others' go direct). Every machine
// tells an incident about the host–bob path or bob, their opened_frame
// within 3 s of game time of each other, and no machine's incident or
// diagnosis names cyd or dan, who only waited for it.
func TestLiveIncidentThroughImpair(t *testing.T) {
	t.Parallel()
	bin := buildLagscope(t)
	const length = 45 * time.Second
	l, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	relayAddr := l.LocalAddr().String()
	l.Close()
	host := startProc(t, bin, "ada", "host", "--open", "--name", "ada", "--listen", "127.0.0.1:0", "--players", "4",
		"--json", "--duration", (length + 10*time.Second).String())
	addr := hostAddr(t, host)
	relay := startProc(t, bin, "relay", "impair", "--listen", relayAddr, "--to", addr,
		"--after", "16s", "--for", "15s", "--delay", "120ms", "--duration", (length + time.Minute).String())
	defer relay.cmd.Process.Signal(os.Interrupt)
	procs := []*proc{host,
		startProc(t, bin, "bob", "join", relayAddr, "--name", "bob", "--json", "--duration", length.String()),
		startProc(t, bin, "cyd", "join", addr, "--name", "cyd", "--json", "--duration", length.String()),
		startProc(t, bin, "dan", "join", addr, "--name", "dan", "--json", "--duration", length.String()),
	}
	for _, p := range procs {
		if code := p.exit(length + time.Minute); code != 0 {
			t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
		}
	}
	checkIncidentsAgree(t, procs, "bob", []string{"cyd", "dan"}, 3*30)
}

// checkIncidentsAgree: every machine in procs opened an incident naming
// culprit (as its player or one end of its path); their first such
// opened_frames are within slack frames of each other; no incident line
// of any machine names one of bystanders (who only waited for the
// culprit), and no evaluation's diagnosis names one as its culprit. The
// diagnoses' culprits by frame are logged.
func checkIncidentsAgree(t *testing.T, procs []*proc, culprit string, bystanders []string, slack int) {
	t.Helper()
	names := func(e ndjson) []string {
		var out []string
		if p, ok := e["player"].(string); ok {
			out = append(out, p)
		}
		if b, ok := e["between"].([]any); ok {
			for _, x := range b {
				s, _ := x.(string)
				out = append(out, s)
			}
		}
		return out
	}
	lo, hi := -1, -1
	for _, p := range procs {
		first := -1
		var said []string
		for _, e := range p.of("incident") {
			who := names(e)
			said = append(said, fmt.Sprintf("%s %v %s", e.str("phase"), who, e.str("text")))
			for _, b := range bystanders {
				for _, w := range who {
					if w == b {
						t.Errorf("%s: an incident names %s, who only waited for %s: %s", p.name, b, culprit, e.str("text"))
					}
				}
			}
			if e.str("phase") != "open" || first >= 0 {
				continue
			}
			for _, w := range who {
				if w == culprit {
					first = int(e.num("opened_frame"))
				}
			}
		}
		var culprits []string
		for _, d := range p.of("diagnosis") {
			diag, _ := d["diagnosis"].(map[string]any)
			if diag == nil {
				diag = d
			}
			c, _ := diag["culprit"].(string)
			culprits = append(culprits, fmt.Sprintf("%d:%q", int(d.num("frame")), c))
			for _, b := range bystanders {
				if c == b {
					t.Errorf("%s: the diagnosis at frame %d names %s, who only waited for %s: %v", p.name, int(d.num("frame")), b, culprit, diag["verdict"])
				}
			}
		}
		t.Logf("%s: the diagnoses' culprits by frame: %s", p.name, strings.Join(culprits, " "))
		if first < 0 {
			t.Errorf("%s told no incident of %s's; its incident lines:\n%s", p.name, culprit, strings.Join(said, "\n"))
			continue
		}
		t.Logf("%s: %s's incident opened at frame %d; its lines:\n%s", p.name, culprit, first, strings.Join(said, "\n"))
		if lo < 0 || first < lo {
			lo = first
		}
		hi = max(hi, first)
	}
	if lo >= 0 && hi-lo > slack {
		t.Errorf("opened_frame from %d to %d: more than %d frames apart", lo, hi, slack)
	}
}
