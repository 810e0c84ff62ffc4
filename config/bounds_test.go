//go:build unix

package config

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lagscope/lagscope/internal/boundedfile"
)

// A config file too large to be one, or a path naming something that is
// not a regular file, is a bad file: a *fileError of one line naming it, with
// the *boundedfile.Error behind it.
func TestConfigLoadRefusesWhatIsNotAConfigFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.toml")
	body := "# " + strings.Repeat("x", maxConfigBytes) + "\n"
	if err := os.WriteFile(big, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, says := range map[string]string{
		big:         "larger than the 64 KiB a config file may be",
		fifo:        "not a regular file (a named pipe (FIFO))",
		"/dev/zero": "not a regular file (a character device)",
		dir:         "not a regular file (a directory)",
	} {
		_, err := loadFile(path)
		var ce *fileError
		var be *boundedfile.Error
		if !errors.As(err, &ce) || !errors.As(err, &be) {
			t.Errorf("%s: %v (%T), want a *fileError over a *boundedfile.Error", path, err, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, path+": ") || !strings.Contains(msg, says) || strings.Contains(msg, "\n") {
			t.Errorf("%s: message %q, want one line naming the file and saying %q", path, msg, says)
		}
	}
}

// An error of the system is not a bad file: it is not a *fileError, and it
// keeps the system's words.
func TestConfigLoadOSError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(file, "config.toml")
	_, err := loadFile(path)
	var ce *fileError
	var pe *fs.PathError
	if err == nil || errors.As(err, &ce) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("%v (%T), want the system's *fs.PathError, not a *fileError", err, err)
	}
}

func TestConfigKeyFileBounds(t *testing.T) {
	dir := t.TempDir()
	at := filepath.Join(dir, "at")
	if err := os.WriteFile(at, bytes.Repeat([]byte("k"), maxKeyBytes), 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := (Settings{KeyFile: at}).Key(); err != nil || len(k) != maxKeyBytes {
		t.Fatalf("a key of exactly %d bytes: %d bytes, %v", maxKeyBytes, len(k), err)
	}
	over := filepath.Join(dir, "over")
	if err := os.WriteFile(over, bytes.Repeat([]byte("k"), 5<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		over:        "key file " + over + ": 5 KiB, larger than the 4 KiB a key file may be",
		fifo:        "key file " + fifo + ": not a regular file (a named pipe (FIFO))",
		"/dev/zero": "key file /dev/zero: not a regular file (a character device)",
	} {
		_, err := Settings{KeyFile: path}.Key()
		var be *boundedfile.Error
		if !errors.As(err, &be) || err.Error() != want {
			t.Errorf("%s: %v (%T), want %q", path, err, err, want)
		}
	}
	// The system's error stays one, under key_file.
	_, err := Settings{KeyFile: filepath.Join(at, "x")}.Key()
	var be *boundedfile.Error
	var pe *fs.PathError
	if errors.As(err, &be) || !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "key_file: open ") {
		t.Fatalf("path through a file: %v (%T), want the system's error under key_file", err, err)
	}
}

// SaveLastHost never writes over a file it cannot read whole: a config file
// too large, a FIFO, or one that the new line would push past the limit is
// left exactly as it was.
func TestConfigSaveLastHostLeavesWhatItRefuses(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.toml")
	bigBody := []byte("# " + strings.Repeat("x", maxConfigBytes) + "\n")
	full := filepath.Join(dir, "full.toml")
	// Within the limit by a few bytes: adding last_host passes it.
	fullBody := []byte("# " + strings.Repeat("x", maxConfigBytes-10) + "\n")
	for path, body := range map[string][]byte{big: bigBody, full: fullBody} {
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadFile(path); (err == nil) != (path == full) {
			t.Fatalf("%s loads: %v", path, err)
		}
		if err := SaveLastHost(path, "192.0.2.1:7373"); err == nil || !strings.Contains(err.Error(), "larger than the 64 KiB") {
			t.Errorf("%s: saved, or not for the size: %v", path, err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, body) {
			t.Errorf("%s: changed (%d bytes, was %d)", path, len(got), len(body))
		}
	}
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	err := SaveLastHost(fifo, "192.0.2.1:7373")
	var be *boundedfile.Error
	if !errors.As(err, &be) {
		t.Errorf("FIFO: %v, want a *boundedfile.Error", err)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v, %v", st, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".config.toml.*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}
