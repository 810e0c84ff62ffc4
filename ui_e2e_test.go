package main

// End-to-end test of the terminal UI: the real program, in a real
// terminal (tmux at 120×40), driven by keys the way a person would.

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/systool"
	"github.com/lagscope/lagscope/probe/record"
	"github.com/lagscope/lagscope/ui"
)

// uiReplayEnv makes the test binary show a recording in the TUI through the
// same ui.Run a live session calls, fed by the recording's record.Player;
// docs/ui.md's screen captures can be made with it, for any player's view.
const uiReplayEnv = "LAGSCOPE_UI_E2E_REPLAY"

func init() {
	path := os.Getenv(uiReplayEnv)
	if path == "" {
		return
	}
	rec, err := record.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// LAGSCOPE_UI_E2E_AS picks whose view to show (docs/ui.md's captures).
	err = ui.Run(record.NewPlayer(ctx, rec, os.Getenv("LAGSCOPE_UI_E2E_AS"), 1), ui.Options{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// tmuxSession is a detached tmux server of the test's own (its own socket,
// so it never touches a user's sessions).
type tmuxSession struct {
	t      *testing.T
	socket string
}

func (s *tmuxSession) run(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	return string(out), err
}

func (s *tmuxSession) capture() string {
	out, err := s.run("capture-pane", "-p", "-t", "ui")
	if err != nil {
		s.t.Fatalf("capture-pane: %v: %s", err, out)
	}
	return out
}

func (s *tmuxSession) keys(keys ...string) {
	if out, err := s.run(append([]string{"send-keys", "-t", "ui"}, keys...)...); err != nil {
		s.t.Fatalf("send-keys: %v: %s", err, out)
	}
}

// waitScreen polls the screen until every check passes or the time is up.
func (s *tmuxSession) waitScreen(within time.Duration, what string, ok func(string) bool) string {
	deadline := time.Now().Add(within)
	for {
		scr := s.capture()
		if ok(scr) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("within %v: %s not on screen:\n%s", within, what, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var measuredRow = regexp.MustCompile(`(?m)^[ >!]{2}\S+\s+measured\s+\d+(\.\d)?\s+\d`)

// TestUIEndToEndInTmux runs lagscope's UI in tmux at 120×40: within ten
// seconds the header, the link table with measured values, both charts, the
// ladder and the messages are on screen; `o` opens the options dialog with
// its "(rung N)" label (S17); `q` exits 0 and leaves the terminal as it was
// (main screen back, cursor shown, mouse reporting off).
func TestUIEndToEndInTmux(t *testing.T) {
	t.Parallel()
	systool.Need(t, "tmux", "the UI end-to-end test drives the UI in it; .ci/run installs it")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := "LAGSCOPE_TEST_CHILD=demo" // tmux hands it to the program as is
	if _, ok := commands["demo"]; !ok {
		// No demo in this build yet: the same UI on a live session over
		// loopback instead — `lagscope host` in the terminal, two players
		// joining it in the background.
		t.Log("lagscope demo is not in this build; driving `lagscope host` with two joiners instead")
		addr := freeUDP(t)
		env = "LAGSCOPE_TEST_CHILD=" + strings.Join([]string{"host", "--open", "--listen", addr, "--players", "3", "--name", "alice"}, "\x1f")
		for _, name := range []string{"bob", "carol"} {
			joinChild(t, exe, addr, name)
		}
	}
	s := &tmuxSession{t: t, socket: filepath.Join(dir, "tmux.sock")}
	t.Cleanup(func() { s.run("kill-server") })
	// The shell prints the exit code after the program, and then waits so
	// that the pane (and what the program left on it) can still be read.
	cmd := fmt.Sprintf("%s; echo EXIT=$?; sleep 60", strconv.Quote(exe))
	if out, err := s.run("-f", "/dev/null", "new-session", "-d", "-s", "ui", "-x", "120", "-y", "40", "-e", env, cmd); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	start := time.Now()

	scr := s.waitScreen(10*time.Second, "header, measured link table, charts, ladder and messages", func(scr string) bool {
		return strings.Contains(scr, "lagscope") && strings.Contains(scr, "you ") && strings.Contains(scr, "master ") &&
			regexp.MustCompile(`\d+/\d+`).MatchString(scr) &&
			measuredRow.MatchString(scr) &&
			strings.Contains(scr, "Round trip ·") && strings.Contains(scr, "Loss ·") &&
			strings.Contains(scr, "Rungs") && strings.Contains(scr, "10 10/30") && strings.Contains(scr, "1 1/4") &&
			strings.Contains(scr, "Messages")
	})
	t.Logf("everything on screen after %v", time.Since(start).Round(100*time.Millisecond))

	// An idle UI's CPU share, over a few seconds of nothing but the feed.
	if share, ok := cpuShare(t, s, 5*time.Second); ok {
		t.Logf("CPU share of the process under the UI while idle: %.1f%% of one core", 100*share)
	}

	s.keys("o")
	scr = s.waitScreen(5*time.Second, "options dialog with a (rung N) label", func(scr string) bool {
		return regexp.MustCompile(`(Fast|Normal|Poor|Bad) \(rung \d+\)`).MatchString(scr) && strings.Contains(scr, "Speed") && strings.Contains(scr, "┤ fast")
	})
	// o closes the dialog again (Escape would do too, but a terminal sends
	// Escape followed at once by another key as one Alt chord).
	s.keys("o")
	// The header's verdict names a rung too, so the dialog is known by its
	// Speed slider's track.
	s.waitScreen(5*time.Second, "the dialog closed", func(scr string) bool { return !strings.Contains(scr, "┤ fast") })
	s.keys("q")
	scr = s.waitScreen(5*time.Second, "EXIT=0 after q", func(scr string) bool { return strings.Contains(scr, "EXIT=") })
	if !strings.Contains(scr, "EXIT=0") {
		t.Fatalf("the program did not exit 0:\n%s", scr)
	}
	if strings.Contains(scr, "Round trip") || strings.Contains(scr, "Rungs") {
		t.Errorf("the UI was left on the screen after exit:\n%s", scr)
	}
	flags, _ := s.run("display-message", "-p", "-t", "ui", "#{alternate_on} #{cursor_flag} #{mouse_any_flag}")
	if strings.TrimSpace(flags) != "0 1 0" {
		t.Errorf("terminal not restored (alternate screen, cursor shown, mouse reporting): %q, want \"0 1 0\"", strings.TrimSpace(flags))
	}
}

// cpuShare measures the CPU time of the program in the pane (the child of
// the pane's shell) over d, as a share of one core.
func cpuShare(t *testing.T, s *tmuxSession, d time.Duration) (float64, bool) {
	out, err := s.run("display-message", "-p", "-t", "ui", "#{pane_pid}")
	if err != nil {
		return 0, false
	}
	shell := strings.TrimSpace(out)
	kids, err := os.ReadFile("/proc/" + shell + "/task/" + shell + "/children")
	if err != nil || len(strings.Fields(string(kids))) == 0 {
		t.Logf("no child process found under the pane's shell %s", shell)
		return 0, false
	}
	pid := strings.Fields(string(kids))[0]
	ticks := func() (float64, bool) {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return 0, false
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		u, _ := strconv.ParseFloat(f[11], 64) // utime (field 14)
		k, _ := strconv.ParseFloat(f[12], 64) // stime (field 15)
		return u + k, true
	}
	a, ok1 := ticks()
	t0 := time.Now()
	time.Sleep(d)
	b, ok2 := ticks()
	if !ok1 || !ok2 {
		return 0, false
	}
	const clkTck = 100 // USER_HZ on Linux
	return (b - a) / clkTck / time.Since(t0).Seconds(), true
}

// freeUDP finds a loopback UDP port nobody uses right now.
func freeUDP(t *testing.T) string {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := c.LocalAddr().String()
	c.Close()
	return addr
}

// joinChild starts `lagscope join ADDR --name NAME --json` in the
// background (the test binary as lagscope), ended by the test's cleanup.
func joinChild(t *testing.T, exe, addr, name string) {
	c := exec.Command(exe)
	c.Env = append(os.Environ(), "LAGSCOPE_TEST_CHILD="+strings.Join([]string{"join", addr, "--name", name, "--json", "--duration", "60s"}, "\x1f"))
	c.Stdout, c.Stderr = io.Discard, io.Discard
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
	})
}
