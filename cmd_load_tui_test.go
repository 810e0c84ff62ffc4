package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/systool"
)

// A load test from the TUI, on loopback: L on the host's screen asks
// before anything is sent, y runs the test toward bob, and the Link view's
// Load section shows it finished with both directions graded (loopback
// adds nothing: A+ each way, at the cap).
func TestLoadKeyInTmux(t *testing.T) {
	t.Parallel()
	systool.Need(t, "tmux", "the host's TUI is driven in it; .ci/run installs it")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addr := freeUDP(t)
	joinChild(t, exe, addr, "bob")
	s := &tmuxSession{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() { s.run("kill-server") })
	env := "LAGSCOPE_TEST_CHILD=" + strings.Join([]string{"host", "--open", "--listen", addr, "--players", "2", "--name", "alice",
		"--duration", "90s", "--load-cap", "4mbit"}, "\x1f")
	cmd := fmt.Sprintf("%s; echo EXIT=$?; sleep 60", strconv.Quote(exe))
	if out, err := s.run("-f", "/dev/null", "new-session", "-d", "-s", "ui", "-x", "120", "-y", "40", "-e", env, cmd); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	flat := func(scr string) string { return strings.Join(strings.Fields(scr), " ") }
	s.waitScreen(15*time.Second, "the game started", func(scr string) bool { return strings.Contains(scr, "The game starts: alice, bob") })
	s.keys("L")
	s.waitScreen(5*time.Second, "the confirmation", func(scr string) bool {
		return strings.Contains(flat(scr), "Load your upload and download to bob for about 25 s, at most 4 Mbit/s?")
	})
	s.keys("y")
	scr := s.waitScreen(45*time.Second, "the finished test", func(scr string) bool {
		return strings.Contains(scr, "Load test · bob") && strings.Contains(scr, "finished")
	})
	f := flat(scr)
	for _, want := range []string{"upload", "download", "A+", "capped"} {
		if !strings.Contains(f, want) {
			t.Errorf("the Load section lacks %q:\n%s", want, scr)
		}
	}
	s.keys("q")
	if scr := s.waitScreen(10*time.Second, "EXIT= after q", func(scr string) bool { return strings.Contains(scr, "EXIT=") }); !strings.Contains(scr, "EXIT=0") {
		t.Fatalf("the host did not exit 0:\n%s", scr)
	}
}
