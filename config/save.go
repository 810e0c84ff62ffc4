package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/lagscope/lagscope/internal/boundedfile"
)

// newFileMode is the mode of a config file SaveLastHost creates: the
// user's alone, as the file may name a key file.
const newFileMode fs.FileMode = 0o600

// SaveLastHost records host as last_host in the file at path, keeping every
// other line (comments included) as the user wrote it: a top-level
// `last_host = ...` line is replaced, or one is added at the top. The
// directory and the file are created when missing; the file is replaced
// whole (write to a temporary file, then rename) so a crash never leaves
// half a file. A file that cannot be read whole (not a regular file, more
// than maxConfigBytes, unreadable) is left untouched and the error returned.
// The live commands call it after a successful join.
//
// A config file that is a symbolic link (dotfiles kept in a repository
// and linked into place) stays one: the link is resolved and its target
// is replaced, through a temporary file in the target's own directory, so
// the rename never crosses file systems. An existing file keeps its
// permission bits. A link that leads nowhere is left alone, with an error
// saying so.
func SaveLastHost(path, host string) error {
	if host == "" {
		return fmt.Errorf("last_host: empty host")
	}
	target, err := resolveLink(path)
	if err != nil {
		return err
	}
	doc, err := boundedfile.Read("config file", target, maxConfigBytes)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	mode := newFileMode
	if exists {
		st, err := os.Stat(target)
		if err != nil {
			return err
		}
		mode = st.Mode().Perm()
	}
	entry := []byte("last_host = " + strconv.Quote(host))
	lines := bytes.SplitAfter(doc, []byte("\n"))
	replaced := false
	for i, l := range lines {
		t := bytes.TrimSpace(l)
		if bytes.HasPrefix(t, []byte("[")) {
			break // top-level keys end at the first table header
		}
		if k, _, ok := bytes.Cut(t, []byte("=")); ok && string(bytes.TrimSpace(k)) == "last_host" {
			lines[i] = append(append([]byte(nil), entry...), '\n')
			replaced = true
			break
		}
	}
	var out []byte
	if !replaced {
		out = append(append(out, entry...), '\n')
	}
	out = append(out, bytes.Join(lines, nil)...)
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".config.toml.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return err
	}
	// CreateTemp makes the file 0600; the file it replaces keeps its own
	// bits (a shared 0644 stays readable, a 0600 stays private).
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// What we write must read back: never leave a file loadFile refuses.
	if _, err := loadFile(tmp.Name()); err != nil {
		return fmt.Errorf("last_host not saved: %w", err)
	}
	return os.Rename(tmp.Name(), target)
}

// resolveLink is the file a save to path must replace: path itself when
// it is not a symbolic link (or does not exist yet), else the file the
// link leads to, through every link on the way. A link whose end does not
// exist, or that loops, is an error: a save would otherwise turn the link
// into a regular file or create a file the user never named.
func resolveLink(path string) (string, error) {
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return path, nil // a missing file is created; anything else is read and judged as it is
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		dest, _ := os.Readlink(path)
		return "", fmt.Errorf("last_host not saved: %s is a symbolic link to %s, which cannot be followed", path, dest)
	}
	return target, nil
}
