//go:build unix

package boundedfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned after d: a
// blocking open becomes a failure instead of a hung test. unblock, when
// set, is called on the timeout to let the stuck call go.
func within(t *testing.T, d time.Duration, unblock func(), f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		if unblock != nil {
			unblock()
		}
		t.Fatalf("still running after %v: the read blocks", d)
	}
}

func TestReadDevZero(t *testing.T) {
	var err error
	within(t, 10*time.Second, nil, func() { _, err = Read("key file", "/dev/zero", 4096) })
	badInput(t, err, "key file", "/dev/zero", "not a regular file (a character device)")
}

func mkfifo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return path
}

// unblockFIFO opens the FIFO's other end, which lets a reader blocked in
// its open go on.
func unblockFIFO(path string) func() {
	return func() {
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	}
}

func TestReadFIFO(t *testing.T) {
	path := mkfifo(t)
	var err error
	within(t, 10*time.Second, unblockFIFO(path), func() { _, err = Read("key file", path, 4096) })
	badInput(t, err, "key file", path, "not a regular file (a named pipe (FIFO))")
}

// The second line of defence, for a FIFO put in place between the stat and
// the open: the open itself returns at once, and the check on the opened
// file refuses it.
func TestOpenFIFODoesNotBlock(t *testing.T) {
	path := mkfifo(t)
	var f *os.File
	var err error
	within(t, 10*time.Second, unblockFIFO(path), func() { f, err = open(path) })
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer f.Close()
	var b []byte
	within(t, 10*time.Second, nil, func() { b, err = readOpened("key file", path, f, 4096) })
	if b != nil {
		t.Errorf("read %d bytes of a FIFO", len(b))
	}
	badInput(t, err, "key file", path, "not a regular file (a named pipe (FIFO))")
}

// A device opened in place of the file is refused on the opened file, not
// read: /dev/zero would never end.
func TestReadOpenedDevice(t *testing.T) {
	f, err := open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b []byte
	within(t, 10*time.Second, nil, func() { b, err = readOpened("key file", "/dev/zero", f, 4096) })
	if b != nil {
		t.Errorf("read %d bytes of /dev/zero", len(b))
	}
	badInput(t, err, "key file", "/dev/zero", "a character device")
}

// A file whose stat says less than it holds (as one that grows between the
// stat and the read does) is refused once the read passes the limit.
// Linux's /proc files are regular and stat as 0 bytes.
func TestReadFileLargerThanItsStat(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	const path = "/proc/self/status"
	if st, err := os.Stat(path); err != nil || st.Size() != 0 || !st.Mode().IsRegular() {
		t.Skipf("%s: %v, %v: not a regular file that stats as 0 bytes", path, st, err)
	}
	_, err := Read("config file", path, 16)
	badInput(t, err, "config file", path, "grew past the 16 bytes a config file may be")
	b, err := Read("config file", path, 1<<20)
	if err != nil || !strings.Contains(string(b), "Name:") {
		t.Fatalf("under the limit: %q, %v", b, err)
	}
}

// Permission denied is the system's error, not bad input. Root reads a
// file of mode 000, so the test needs another user; the exit-1 path is
// covered for root by the ENOTDIR case of TestReadOSErrorsPassThrough.
func TestReadPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a file of mode 000")
	}
	path := write(t, 3)
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	_, err := Read("key file", path, 4096)
	var pe *fs.PathError
	var be *Error
	if !errors.As(err, &pe) || errors.As(err, &be) || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("%v (%T), want an *fs.PathError for ErrPermission", err, err)
	}
}
