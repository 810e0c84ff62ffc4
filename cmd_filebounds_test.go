//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The files a command reads whole — the config file, its key file, a sim
// scenario — are read with bounds: what is not a regular file of at most
// its size (a device, a FIFO, a file too large) is refused at once with one
// line naming it and exit 2; a file the system will not let us read is exit
// 1 in the system's words.

// childResult is one lagscope run in a child process.
type childResult struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runChild runs lagscope with args in a child process (TestMain's
// LAGSCOPE_TEST_CHILD) with its config directory at configDir. A run that
// blocks is killed after 10 s and fails the test: the bound is generous so
// that only a hang fails it, never a slow machine.
func runChild(t *testing.T, configDir string, args ...string) childResult {
	t.Helper()
	return runChildWith(t, os.Args[0], nil, configDir, args...)
}

// runChildWith is runChild with another copy of the test binary and a
// credential to run it under (nil: this process's).
func runChildWith(t *testing.T, bin string, cred *syscall.Credential, configDir string, args ...string) childResult {
	t.Helper()
	const hang = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "LAGSCOPE_TEST_CHILD="+strings.Join(args, "\x1f"), "XDG_CONFIG_HOME="+configDir)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := childResult{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("lagscope %s still running after %v: it blocks (stderr %q)", strings.Join(args, " "), hang, r.stderr)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	t.Logf("lagscope %s: exit %d after %v: %s", strings.Join(args, " "), r.code, r.took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
	return r
}

// wantLine asserts the run exited code, wrote nothing on stdout, and wrote
// one line on stderr that is want exactly, or, when want ends in "…",
// starts with the rest.
func (r childResult) wantLine(t *testing.T, code int, want string) {
	t.Helper()
	ok := r.stderr == want+"\n"
	if p, cut := strings.CutSuffix(want, "…"); cut {
		ok = strings.HasPrefix(r.stderr, p) && strings.Count(r.stderr, "\n") == 1 && strings.HasSuffix(r.stderr, "\n")
	}
	if r.code != code || r.stdout != "" || !ok {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, no stdout and one line %q", r.code, r.stdout, r.stderr, code, want)
	}
}

// hostArgs are a host run that, past its checks, would open a session on
// loopback for a moment: every case here stops before that.
var hostArgs = []string{"host", "--listen", "127.0.0.1:0", "--json", "--duration", "2s"}

func mkfifo(t *testing.T, path string) string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, path string, size int) string {
	t.Helper()
	if err := os.WriteFile(path, bytes.Repeat([]byte("k"), size), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A key file that is a device, a FIFO or larger than a key: exit 2 at once,
// one line naming the config file's line, the key file and what is wrong.
func TestFileBoundsHostKeyFileBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, keyFile, says string
	}{
		{"dev zero", "/dev/zero", "not a regular file (a character device)"},
		{"fifo", mkfifo(t, filepath.Join(dir, "key.fifo")), "not a regular file (a named pipe (FIFO))"},
		{"5 KiB", writeFile(t, filepath.Join(dir, "key.big"), 5<<10), "5 KiB, larger than the 4 KiB a key file may be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cdir := t.TempDir()
			cfg := writeUserConfig(t, cdir, "key_file = "+strconv.Quote(tc.keyFile)+"\n")
			r := runChild(t, cdir, hostArgs...)
			r.wantLine(t, 2, "lagscope host: "+cfg+":1: key file "+tc.keyFile+": "+tc.says)
		})
	}
}

// A config file over 64 KiB, or one that is a FIFO: exit 2 naming it.
func TestFileBoundsHostConfigBadInput(t *testing.T) {
	t.Run("oversized", func(t *testing.T) {
		cdir := t.TempDir()
		cfg := writeUserConfig(t, cdir, "# "+strings.Repeat("x", 70<<10)+"\n")
		r := runChild(t, cdir, hostArgs...)
		r.wantLine(t, 2, "lagscope host: "+cfg+": 70 KiB, larger than the 64 KiB a config file may be")
	})
	t.Run("fifo", func(t *testing.T) {
		cdir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(cdir, "lagscope"), 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := mkfifo(t, filepath.Join(cdir, "lagscope", "config.toml"))
		r := runChild(t, cdir, hostArgs...)
		r.wantLine(t, 2, "lagscope host: "+cfg+": not a regular file (a named pipe (FIFO))")
	})
}

// A scenario over 4 MiB, a FIFO or a device: exit 2 naming it, nothing on
// stdout.
func TestFileBoundsSimScenarioBadInput(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	// Valid JSON but for its size: only the bound refuses it.
	body := `{"frames": 10, "players": ["a"]}` + strings.Repeat(" ", 5<<20)
	if err := os.WriteFile(big, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, says string }{
		{"oversized", big, "5 MiB, larger than the 4 MiB a scenario may be"},
		{"fifo", mkfifo(t, filepath.Join(dir, "s.fifo")), "not a regular file (a named pipe (FIFO))"},
		{"dev zero", "/dev/zero", "not a regular file (a character device)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runChild(t, t.TempDir(), "sim", tc.path)
			r.wantLine(t, 2, "lagscope sim: scenario "+tc.path+": "+tc.says)
		})
	}
	// At the bound's side of the line, the same scenario reads.
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte(body[:4<<20]), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runChild(t, t.TempDir(), "sim", small); r.code != 0 || !strings.Contains(r.stdout, `"type":"summary"`) {
		t.Errorf("a 4 MiB scenario: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A path the system refuses (here through a regular file: ENOTDIR, which
// root gets too) is a runtime failure: exit 1, one line in the system's
// words. For the key file, the config file and a scenario.
func TestFileBoundsOSErrorExit1(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "file"), 3)
	through := filepath.Join(file, "x")

	t.Run("key file", func(t *testing.T) {
		cdir := t.TempDir()
		cfg := writeUserConfig(t, cdir, "key_file = "+strconv.Quote(through)+"\n")
		r := runChild(t, cdir, hostArgs...)
		r.wantLine(t, 1, "lagscope host: "+cfg+":1: key_file: open "+through+": not a directory")
	})
	t.Run("config file", func(t *testing.T) {
		// The config directory is a regular file.
		r := runChild(t, file, hostArgs...)
		r.wantLine(t, 1, "lagscope host: config file: open "+filepath.Join(file, "lagscope", "config.toml")+": not a directory")
	})
	t.Run("scenario", func(t *testing.T) {
		r := runChild(t, t.TempDir(), "sim", through)
		r.wantLine(t, 1, "lagscope sim: open "+through+": not a directory")
	})
}

// Permission denied is exit 1 too, in the system's words. Root reads a
// file of mode 000, so as root the child runs as user 65534 ("nobody"):
// from a copy of the test binary that user can run, with a config it can
// read, naming a key file of mode 000 that only root could read.
func TestFileBoundsPermissionDeniedExit1(t *testing.T) {
	bin, cred := os.Args[0], (*syscall.Credential)(nil)
	open := func(dir string) string { return dir }
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		open = func(dir string) string {
			for d := dir; d != os.TempDir() && d != "/" && d != "."; d = filepath.Dir(d) {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			return dir
		}
		bin = filepath.Join(open(t.TempDir()), "lagscope.test")
		exe, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, exe, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	key := writeFile(t, filepath.Join(open(t.TempDir()), "key"), 3)
	if err := os.Chmod(key, 0); err != nil {
		t.Fatal(err)
	}
	cdir := open(t.TempDir())
	cfg := writeUserConfig(t, cdir, "key_file = "+strconv.Quote(key)+"\n")
	if cred != nil {
		// The config is readable by all, so only the key file is refused.
		if err := filepath.WalkDir(cdir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Chmod(p, map[bool]fs.FileMode{true: 0o755, false: 0o644}[d.IsDir()])
		}); err != nil {
			t.Fatal(err)
		}
	}
	r := runChildWith(t, bin, cred, cdir, hostArgs...)
	r.wantLine(t, 1, "lagscope host: "+cfg+":1: key_file: open "+key+": permission denied")
}
