package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/systool"
)

// A load test from the TUI, on loopback, with both players' screens in
// tmux: L on the host's screen asks before anything is sent — for how
// long, and how much each way at the cap — and y runs the test toward bob.
// While it runs, bob's screen says who is loading his line and how far the
// test is, and the host's status line follows it; once it has finished,
// the Link view's Load section shows both directions graded (loopback
// adds nothing: A+ each way, at the cap) and the host's status line says
// nothing more of it.
func TestLoadKeyInTmux(t *testing.T) {
	t.Parallel()
	systool.Need(t, "tmux", "the players' TUIs are driven in it; .ci/run installs it")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addr := freeUDP(t)
	start := func(name string, args ...string) *tmuxSession {
		s := &tmuxSession{t: t, socket: filepath.Join(t.TempDir(), name+".sock")}
		t.Cleanup(func() { s.run("kill-server") })
		env := "LAGSCOPE_TEST_CHILD=" + strings.Join(args, "\x1f")
		cmd := fmt.Sprintf("%s; echo EXIT=$?; sleep 60", strconv.Quote(exe))
		if out, err := s.run("-f", "/dev/null", "new-session", "-d", "-s", "ui", "-x", "120", "-y", "40", "-e", env, cmd); err != nil {
			t.Fatalf("tmux new-session: %v: %s", err, out)
		}
		return s
	}
	s := start("alice", "host", "--open", "--listen", addr, "--players", "2", "--name", "alice", "--duration", "90s", "--load-cap", "4mbit")
	bob := start("bob", "join", addr, "--name", "bob", "--duration", "90s")
	footer := func(scr string) string {
		lines := strings.Split(strings.TrimRight(scr, "\n"), "\n")
		return lines[len(lines)-1]
	}
	s.waitScreen(15*time.Second, "the game started", func(scr string) bool { return strings.Contains(scr, "The game starts: alice, bob") })
	s.keys("L")
	s.waitScreen(5*time.Second, "the confirmation", func(scr string) bool {
		return strings.Contains(loadColumn(scr), "Load your upload and download to bob for about 25 s? It sends and receives up to 6.5 MB each way, at most 4 Mbit/s.")
	})
	s.keys("y")
	bob.waitScreen(10*time.Second, "the running test on bob's screen", func(scr string) bool {
		return regexp.MustCompile(`alice is load-testing the line to you — \d+ s of 25`).MatchString(footer(scr))
	})
	s.waitScreen(10*time.Second, "the running test on the host's status line", func(scr string) bool {
		return regexp.MustCompile(`load-testing the line to bob — \d+ s of 25`).MatchString(footer(scr))
	})
	// The finished section is awaited whole: tmux can capture a screen
	// while the terminal is still taking a frame, its top lines new and
	// its bottom ones the running test's, so a capture that shows
	// "finished" may not show the rest yet.
	wants := []string{"upload", "download", "A+", "capped", "capped: your cap of 4 Mbit/s ended the ramp before the line did"}
	scr := s.waitScreen(45*time.Second, "the finished test, graded, capped at the host's cap", func(scr string) bool {
		if !strings.Contains(scr, "Load test · bob") || !strings.Contains(scr, "finished") {
			return false
		}
		f := loadColumn(scr)
		for _, want := range wants {
			if !strings.Contains(f, want) {
				return false
			}
		}
		return true
	})
	if ft := footer(scr); strings.Contains(ft, "load test") || strings.Contains(ft, "load-testing") {
		t.Errorf("the host's status line still speaks of the test once it has finished: %q", ft)
	}
	bob.waitScreen(10*time.Second, "bob's status line without the test", func(scr string) bool { return !strings.Contains(footer(scr), "load-testing") })
	s.keys("q")
	if scr := s.waitScreen(10*time.Second, "EXIT= after q", func(scr string) bool { return strings.Contains(scr, "EXIT=") }); !strings.Contains(scr, "EXIT=0") {
		t.Fatalf("the host did not exit 0:\n%s", scr)
	}
}

// loadColumn is the screen's left column, where the Load section is drawn
// beside the ladder at 120 columns, its runs of blanks one space.
func loadColumn(scr string) string {
	var b strings.Builder
	for _, l := range strings.Split(scr, "\n") {
		r := []rune(l)
		b.WriteString(string(r[:min(len(r), 72)]) + " ")
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
