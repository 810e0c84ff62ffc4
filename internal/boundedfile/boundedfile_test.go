package boundedfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// write makes a file of n bytes in a fresh directory.
func write(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, bytes.Repeat([]byte("k"), n), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// badInput asserts err is an *Error naming path and saying says, in one line.
func badInput(t *testing.T, err error, what, path, says string) {
	t.Helper()
	var be *Error
	if !errors.As(err, &be) {
		t.Fatalf("err %v (%T), want *boundedfile.Error", err, err)
	}
	msg := err.Error()
	if be.Path != path || !strings.HasPrefix(msg, what+" "+path+": ") || !strings.Contains(msg, says) || strings.Contains(msg, "\n") {
		t.Fatalf("message %q: want one line starting %q and saying %q", msg, what+" "+path+": ", says)
	}
}

func TestReadUnderAndAtTheLimit(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096} {
		path := write(t, n)
		b, err := Read("key file", path, 4096)
		if err != nil || len(b) != n {
			t.Errorf("%d bytes under a limit of 4096: got %d bytes, %v", n, len(b), err)
		}
	}
}

func TestReadOneByteOverTheLimit(t *testing.T) {
	path := write(t, 4097)
	b, err := Read("key file", path, 4096)
	if b != nil {
		t.Errorf("returned %d bytes of a file over the limit", len(b))
	}
	badInput(t, err, "key file", path, "4097 bytes, larger than the 4 KiB a key file may be")
}

func TestReadFarOverTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse 300 MiB file: its size is refused from the stat, nothing read.
	if err := f.Truncate(300 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Read("scenario", path, 4<<20)
	badInput(t, err, "scenario", path, "300 MiB, larger than the 4 MiB a scenario may be")
}

func TestReadDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := Read("config file", dir, 64<<10)
	badInput(t, err, "config file", dir, "not a regular file (a directory)")
}

// An OS error is not bad input: it comes back as the *fs.PathError, so a
// caller tells the two apart, in the system's words.
func TestReadOSErrorsPassThrough(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	_, err := Read("key file", missing, 4096)
	var pe *fs.PathError
	var be *Error
	if !errors.As(err, &pe) || errors.As(err, &be) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v (%T), want an *fs.PathError for ErrNotExist", err, err)
	}
	if !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %q does not name the path", err)
	}

	// A path through a regular file fails for root too (ENOTDIR).
	through := filepath.Join(write(t, 3), "x")
	_, err = Read("key file", through, 4096)
	if !errors.As(err, &pe) || errors.As(err, &be) || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("path through a file: %v (%T), want an *fs.PathError that is not ErrNotExist", err, err)
	}
	if !strings.Contains(err.Error(), through) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("path through a file: %q, want the path and the system's words", err)
	}
}

func TestSizeText(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 bytes", 1: "1 byte", 1023: "1023 bytes", 1024: "1 KiB", 5 << 10: "5 KiB",
		1536: "1.5 KiB", 64 << 10: "64 KiB", 4 << 20: "4 MiB", 300 << 20: "300 MiB", 3 << 30: "3 GiB",
	} {
		if got := sizeText(n); got != want {
			t.Errorf("sizeText(%d) = %q, want %q", n, got, want)
		}
	}
}
