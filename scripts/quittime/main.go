//go:build linux

// Command quittime measures how fast the TUI lets go after `q`:
// it runs lagscope on a pseudo-terminal it opens itself, waits until the
// game runs, presses q, and times (1) until the terminal is restored — the
// program leaves the alternate screen, `ESC[?1049l` in what it writes — and
// (2) until the process has exited. Run it from the repository's root:
//
//	go run ./scripts/quittime                 # join, host and demo on loopback; 10 runs each
//	go run ./scripts/quittime -runs 5 -only demo
//	go run ./scripts/quittime -settle 25s     # quit inside the demo's spike (10 s to 30 s in)
//	go run ./scripts/quittime -cpu 30s        # the TUI's CPU against --json's, demo, 3 runs each
//
// For the joined session a `lagscope host --players 2 --json` runs beside
// the joiner, which is the one on the terminal and the one that quits. It
// prints each run and the medians and maximum. -cpu instead runs
// `lagscope demo --duration D` on the terminal (120×40) and `lagscope demo
// --json --duration D` into /dev/null, and prints user+system CPU of each
// run and the ratio of the medians. Measurements, not pass/fail: the
// numbers go in docs/live.md. Linux only (it opens /dev/ptmx).
//
// The processes it starts read and write a config directory it makes
// for the run ($XDG_CONFIG_HOME), never the user's own config file.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/lagscope/lagscope/units"
	"golang.org/x/sys/unix"
)

const (
	enterAlt = "\x1b[?1049h"
	leaveAlt = "\x1b[?1049l"
	// running is in the header once the game runs ("frame N"): the lobby
	// says "lobby" there instead.
	running = "frame "
	// Bounds on every wait, so a run that goes wrong ends.
	startLimit = 60 * time.Second
	quitLimit  = 20 * time.Second
)

// settle is how long after the game runs q is pressed (-settle).
var settle = 2 * time.Second

func main() {
	runs := flag.Int("runs", 10, "runs of each case")
	only := flag.String("only", "", "one case only: join, host or demo")
	flag.DurationVar(&settle, "settle", settle, "how long after the game runs to press q")
	bin := flag.String("bin", "", "the lagscope binary (default: built from this checkout)")
	cpu := flag.Duration("cpu", 0, "measure the TUI's CPU against --json's over runs of this length instead")
	cpuRuns := flag.Int("cpu-runs", 3, "runs of each mode with -cpu")
	flag.Parse()
	if *bin == "" {
		dir, err := os.MkdirTemp("", "quittime")
		if err != nil {
			fail(err)
		}
		removeAtExit(dir)
		*bin = filepath.Join(dir, "lagscope")
		build := exec.Command("go", "build", "-o", *bin, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fail(fmt.Errorf("building lagscope (run from the repository's root): %w", err))
		}
	}
	// Every lagscope this starts gets a config directory of its own: a
	// join the host welcomes saves last_host, and the user's real config
	// file (and the name or theme it sets) is no part of a measurement.
	conf, err := os.MkdirTemp("", "quittime-config")
	if err != nil {
		fail(err)
	}
	removeAtExit(conf)
	defer cleanup()
	if err := os.Setenv("XDG_CONFIG_HOME", conf); err != nil {
		fail(err)
	}
	if *cpu > 0 {
		cpuCompare(*bin, *cpu, *cpuRuns)
		return
	}
	for _, c := range []string{"join", "host", "demo"} {
		if *only != "" && *only != c {
			continue
		}
		var restored, exited []time.Duration
		for i := 0; i < *runs; i++ {
			r, e, err := quitRun(*bin, c)
			if err != nil {
				fmt.Printf("%s run %d: %v\n", c, i+1, err)
				continue
			}
			fmt.Printf("%s run %2d: restored %7.1f ms  exited %7.1f ms\n", c, i+1, units.Millis(r), units.Millis(e))
			restored, exited = append(restored, r), append(exited, e)
		}
		if len(restored) > 0 {
			fmt.Printf("%s: %d runs  q→restored median %.1f ms max %.1f ms  q→exit median %.1f ms max %.1f ms\n",
				c, len(restored), units.Millis(median(restored)), units.Millis(slices.Max(restored)), units.Millis(median(exited)), units.Millis(slices.Max(exited)))
		}
	}
}

// temps are the directories this run made, removed on every way out.
var temps []string

func removeAtExit(dir string) { temps = append(temps, dir) }

func cleanup() {
	for _, d := range temps {
		os.RemoveAll(d)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "quittime:", err)
	cleanup()
	os.Exit(1)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// quitRun runs one case and returns the times from q to the terminal
// restored and to the process's exit.
func quitRun(bin, which string) (restored, exited time.Duration, err error) {
	var args []string
	switch which {
	case "demo":
		args = []string{"demo"}
	case "join":
		addr, err := freeUDP()
		if err != nil {
			return 0, 0, err
		}
		host := exec.Command(bin, "host", "--open", "--players", "2", "--json", "--listen", addr, "--name", "hostess")
		host.Stdout, host.Stderr = io.Discard, io.Discard
		if err := host.Start(); err != nil {
			return 0, 0, err
		}
		defer func() {
			_ = host.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = host.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = host.Process.Kill()
				<-done
			}
		}()
		args = []string{"join", addr, "--name", "joiner"}
	case "host":
		// The host on the terminal, a joiner beside it: the host quits.
		addr, err := freeUDP()
		if err != nil {
			return 0, 0, err
		}
		args = []string{"host", "--open", "--players", "2", "--listen", addr, "--name", "hostess"}
		// A joiner started first repeats its Hello until the host answers.
		joiner := exec.Command(bin, "join", addr, "--json", "--name", "joiner")
		joiner.Stdout, joiner.Stderr = io.Discard, io.Discard
		if err := joiner.Start(); err != nil {
			return 0, 0, err
		}
		defer func() {
			_ = joiner.Process.Kill()
			_ = joiner.Wait()
		}()
	default:
		return 0, 0, fmt.Errorf("unknown case %q", which)
	}
	t, err := startOnTerminal(bin, args, 120, 40)
	if err != nil {
		return 0, 0, err
	}
	defer t.close()
	if !t.waitFor(func(out []byte) bool {
		i := bytes.Index(out, []byte(enterAlt))
		return i >= 0 && bytes.Contains(out[i:], []byte(running))
	}, startLimit) {
		return 0, 0, fmt.Errorf("the game did not start on the terminal within %v", startLimit)
	}
	time.Sleep(settle)
	mark := t.length()
	q := time.Now()
	if _, err := t.master.Write([]byte("q")); err != nil {
		return 0, 0, err
	}
	if !t.waitFor(func(out []byte) bool { return bytes.Contains(out[mark:], []byte(leaveAlt)) }, quitLimit) {
		return 0, 0, fmt.Errorf("the terminal was not restored within %v of q", quitLimit)
	}
	restored = t.seen(leaveAlt, mark).Sub(q)
	select {
	case <-t.exited:
		exited = t.exitAt.Sub(q)
	case <-time.After(quitLimit):
		return restored, 0, fmt.Errorf("the process did not exit within %v of q", quitLimit)
	}
	return restored, exited, nil
}

// freeUDP is a loopback address with a UDP port nothing uses now.
func freeUDP() (string, error) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.LocalAddr().String(), nil
}

// term is a child process on a pseudo-terminal of our own, with everything
// it writes kept and the time each piece arrived.
type term struct {
	cmd    *exec.Cmd
	master *os.File

	mu     sync.Mutex
	out    []byte
	chunks []chunk
	grew   chan struct{} // signalled whenever out grows

	exited chan struct{}
	exitAt time.Time
	usage  *syscall.Rusage
}

type chunk struct {
	end int // out[:end] had arrived by at
	at  time.Time
}

// startOnTerminal opens a pseudo-terminal of w×h cells (through /dev/ptmx
// and golang.org/x/sys/unix, which the project already uses) and starts
// bin on it as the controlling terminal of a new session.
func startOnTerminal(bin string, args []string, w, h int) (*term, error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening /dev/ptmx: %w", err)
	}
	master := os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, fmt.Errorf("unlocking the terminal: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("naming the terminal: %w", err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(h), Col: uint16(w)}); err != nil {
		master.Close()
		return nil, fmt.Errorf("sizing the terminal: %w", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "COLORTERM=truecolor")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		slave.Close()
		master.Close()
		return nil, err
	}
	slave.Close()
	t := &term{cmd: cmd, master: master, grew: make(chan struct{}, 1), exited: make(chan struct{})}
	go t.read()
	go func() {
		_ = cmd.Wait()
		t.exitAt = time.Now()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			t.usage = ru
		}
		close(t.exited)
	}()
	return t, nil
}

// read keeps what the program writes until the terminal closes (EIO once
// the last process on it has gone).
func (t *term) read() {
	buf := make([]byte, 64<<10)
	for {
		n, err := t.master.Read(buf)
		if n > 0 {
			at := time.Now()
			t.mu.Lock()
			t.out = append(t.out, buf[:n]...)
			t.chunks = append(t.chunks, chunk{len(t.out), at})
			t.mu.Unlock()
			select {
			case t.grew <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

func (t *term) length() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.out)
}

// waitFor waits until ok holds of the output, at most limit.
func (t *term) waitFor(ok func([]byte) bool, limit time.Duration) bool {
	deadline := time.After(limit)
	for {
		t.mu.Lock()
		done := ok(t.out)
		t.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-t.grew:
		case <-deadline:
			return false
		case <-t.exited:
			// Whatever it wrote before it went is in by now or soon.
			select {
			case <-t.grew:
			case <-time.After(100 * time.Millisecond):
				t.mu.Lock()
				done := ok(t.out)
				t.mu.Unlock()
				return done
			}
		}
	}
}

// seen is when the output at or after from first held s in full.
func (t *term) seen(s string, from int) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := bytes.Index(t.out[from:], []byte(s))
	if i < 0 {
		return time.Time{}
	}
	end := from + i + len(s)
	for _, c := range t.chunks {
		if c.end >= end {
			return c.at
		}
	}
	return time.Time{}
}

// close ends the child if it is still there and closes the terminal.
func (t *term) close() {
	select {
	case <-t.exited:
	default:
		_ = t.cmd.Process.Kill()
		<-t.exited
	}
	t.master.Close()
}

// cpuCompare runs the demo for d on the terminal and with --json, runs
// times each, interleaved, and prints the CPU each used.
func cpuCompare(bin string, d time.Duration, runs int) {
	dur := "--duration=" + d.String()
	var tui, js []time.Duration
	for i := 0; i < runs; i++ {
		t, err := startOnTerminal(bin, []string{"demo", dur}, 120, 40)
		if err != nil {
			fail(err)
		}
		select {
		case <-t.exited:
		case <-time.After(d + quitLimit):
			t.close()
			fail(errors.New("the TUI demo did not end after its duration"))
		}
		t.close()
		c := cpuOf(t.usage)
		fmt.Printf("run %d: TUI   %7.0f ms CPU\n", i+1, units.Millis(c))
		tui = append(tui, c)

		cmd := exec.Command(bin, "demo", "--json", dur)
		cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
		if err := cmd.Run(); err != nil {
			fail(err)
		}
		ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		c = cpuOf(ru)
		fmt.Printf("run %d: --json %7.0f ms CPU\n", i+1, units.Millis(c))
		js = append(js, c)
	}
	fmt.Printf("demo %v: TUI median %.0f ms CPU, --json median %.0f ms CPU, ratio %.2f\n",
		d, units.Millis(median(tui)), units.Millis(median(js)), float64(median(tui))/float64(median(js)))
}

func cpuOf(ru *syscall.Rusage) time.Duration {
	if ru == nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
