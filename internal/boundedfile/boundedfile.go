// Package boundedfile reads the small files a user hands the program — a
// key file, a config file, a scenario — with a bound on what they may be:
// only a regular file of at most a given size is read. A path naming
// /dev/zero, a FIFO, a directory or a file far too large fails at once with
// one line saying what is wrong, instead of reading forever, blocking on
// the open or holding hundreds of megabytes.
//
// Two kinds of failure come back, and callers tell them apart: an *Error
// is bad input (the path names something that is not such a file); any
// other error is the operating system's, an *fs.PathError in its own words
// (not found, permission denied, not a directory).
package boundedfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Error is a file that is not one the caller may read: not a regular file,
// or larger than the limit. Its message names the file and what is wrong.
type Error struct {
	What    string // what the file is for: "key file", "config file", "scenario"
	Path    string
	Problem string // e.g. "not a regular file (a character device)"
}

func (e *Error) Error() string { return e.What + " " + e.Path + ": " + e.Problem }

// Read returns the contents of the regular file at path, at most limit
// bytes. what names the file's use in messages ("key file"). A symbolic link
// is followed: the checks apply to the file it names.
//
// The checks, in order: the path is stat'ed and anything but a regular file
// is refused before it is opened (opening some devices has effects of its
// own); it is opened non-blocking where the system has that, so a FIFO put
// in its place meanwhile cannot hold up the open; the opened file is
// stat'ed again and must still be regular and within the limit; and at
// most limit+1 bytes are read, so a file that grew after the stat is
// refused rather than read without end.
func Read(what, path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		// Reported as the open it stands for: the file cannot be read.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, &fs.PathError{Op: "open", Path: pe.Path, Err: pe.Err}
		}
		return nil, err
	}
	if err := check(what, path, st, limit); err != nil {
		return nil, err
	}
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpened(what, path, f, limit)
}

// open opens path for reading, non-blocking where the system has that.
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|openFlags, 0)
}

// readOpened checks the opened file itself (what the path names may have
// changed since the stat) and reads at most limit bytes of it.
func readOpened(what, path string, f *os.File, limit int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := check(what, path, st, limit); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &Error{What: what, Path: path, Problem: fmt.Sprintf("grew past the %s %s may be while it was read", sizeText(limit), article(what))}
	}
	return b, nil
}

// check refuses what is not a regular file of at most limit bytes.
func check(what, path string, st fs.FileInfo, limit int64) error {
	if !st.Mode().IsRegular() {
		return &Error{What: what, Path: path, Problem: "not a regular file (" + kind(st.Mode()) + ")"}
	}
	if n := st.Size(); n > limit {
		size := sizeText(n)
		if size == sizeText(limit) {
			// A size that rounds to the limit's text is given exactly.
			size = fmt.Sprintf("%d bytes", n)
		}
		return &Error{What: what, Path: path, Problem: fmt.Sprintf("%s, larger than the %s %s may be", size, sizeText(limit), article(what))}
	}
	return nil
}

// kind names what a non-regular file is.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a file of another kind"
}

// article puts "a" or "an" before what.
func article(what string) string {
	if what != "" && strings.ContainsRune("aeiouAEIOU", rune(what[0])) {
		return "an " + what
	}
	return "a " + what
}

// sizeText writes n in bytes below 1 KiB, else in KiB, MiB or GiB with at
// most one decimal.
func sizeText(n int64) string {
	if n < 1<<10 {
		if n == 1 {
			return "1 byte"
		}
		return fmt.Sprintf("%d bytes", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n)/(1<<10), 0
	for v >= 1<<10 && u < len(units)-1 {
		v /= 1 << 10
		u++
	}
	s := fmt.Sprintf("%.1f", v)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + units[u]
}
