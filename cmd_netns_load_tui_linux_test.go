package main

import (
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/systool"
	"github.com/lagscope/lagscope/vocab"
)

// The Link view's where during a load test, on real network stacks: the
// host ada and bob in network namespaces on one veth pair, a kernel tbf
// queue on ada's way out (2 Mbit/s holding 50 kB: about 200 ms when
// full), nothing of lagscope's on the path. ada's TUI runs in tmux inside
// its namespace (unprivileged, as every lagscope of the namespace tests
// runs), bob with --json. On ada's screen L asks for a test toward bob
// and y starts it, at a cap of 8 Mbit/s: the upload fills ada's queue.
// While the upload hold runs, the Load section's where names ada's
// uplink — hop 1, where the peer is hop 1, is the tester's own way out in
// the upload hold — and the finished test's where names it too.
//
//	ada (10.0.0.1) [tbf 2mbit, 50 kB] ── bob (10.0.0.2)
func TestNetnsLoadWhereInTmux(t *testing.T) {
	n := newNetns(t, "lw", false, "ip", "tc", "setpriv")
	systool.Need(t, "tmux", "the tester's TUI is driven in it; .ci/run installs it")
	adaAddr, bobAddr := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	adaNS, bobNS := n.ns("ada"), n.ns("bob")
	n.veth(adaNS, "eth0", adaAddr, bobNS, "eth0", bobAddr)
	n.run("tc", "-n", adaNS, "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "2mbit", "burst", "4kb", "limit", "50000")
	bin, cfg := buildLagscopeShared(t)
	at := netip.AddrPortFrom(adaAddr, 7373).String()

	s := &tmuxSession{t: t, socket: filepath.Join(t.TempDir(), "ada.sock")}
	t.Cleanup(func() { s.run("kill-server") })
	var line []string
	for _, a := range unprivArgs(adaNS, bin, cfg, "host", "--open", "--name", "ada", "--listen", at, "--players", "2",
		"--duration", "120s", "--load-cap", "8mbit") {
		line = append(line, strconv.Quote(a))
	}
	cmd := strings.Join(line, " ") + "; echo EXIT=$?; sleep 60"
	if out, err := s.run("-f", "/dev/null", "new-session", "-d", "-s", "ui", "-x", "120", "-y", "40", cmd); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	bob := startUnpriv(t, bobNS, bin, cfg, "bob", "join", at, "--name", "bob", "--json", "--duration", "120s")

	s.waitScreen(30*time.Second, "the game started", func(scr string) bool { return strings.Contains(scr, "The game starts: ada, bob") })
	s.keys("L")
	s.waitScreen(10*time.Second, "the confirmation", func(scr string) bool {
		return strings.Contains(loadColumn(scr), "Load your upload and download to bob for about 25 s?") &&
			strings.Contains(loadColumn(scr), "at most 8 Mbit/s")
	})
	s.keys("y")

	// The upload hold lasts 5 s; the trace's reading comes every 250 ms
	// once the hold's probes rose over the idle ones. The screen is read
	// until the where names the uplink in the hold, or a later phase shows.
	phase := regexp.MustCompile(`Load test · bob ─* ?phase (upload ramp|download ramp|asking|idle|upload|download|both|done|stopped)`)
	finished := regexp.MustCompile(`Load test · bob ─* ?finished`)
	where := regexp.MustCompile(`where the delay is hop 1 · uplink · \+\d+(\.\d)? ms`)
	var scr, seen, hold string
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		scr = s.capture()
		col := loadColumn(scr)
		ph := ""
		if m := phase.FindStringSubmatch(col); m != nil {
			ph = m[1]
		}
		if ph == "upload" {
			if seen = where.FindString(col); seen != "" {
				hold = phase.FindString(col)
				break
			}
		}
		switch past := slices.Index(vocab.LoadPhases[:], vocab.LoadPhase(ph)) > slices.Index(vocab.LoadPhases[:], vocab.LoadUpload); {
		case past || ph == string(vocab.LoadStopped) || finished.MatchString(col):
			t.Fatalf("the upload hold is over (phase %q) and its where never named ada's uplink:\n%s\nbob: %s", ph, scr, bob.stderr.String())
		case time.Now().After(deadline):
			t.Fatalf("within 90 s: no upload hold whose where names ada's uplink on screen:\n%s\nbob: %s", scr, bob.stderr.String())
		}
	}
	t.Logf("%s: %s", hold, seen)

	scr = s.waitScreen(60*time.Second, "the finished test", func(scr string) bool {
		return strings.Contains(scr, "Load test · bob") && strings.Contains(scr, "finished")
	})
	done := where.FindString(loadColumn(scr))
	if done == "" {
		t.Errorf("the finished test's where does not name ada's uplink:\n%s", scr)
	}
	t.Logf("finished: %s", done)
	s.keys("q")
	if scr := s.waitScreen(10*time.Second, "EXIT= after q", func(scr string) bool { return strings.Contains(scr, "EXIT=") }); !strings.Contains(scr, "EXIT=0") {
		t.Fatalf("ada did not exit 0:\n%s", scr)
	}
}
