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

// SaveLastHost records host as last_host in the file at path, keeping every
// other line (comments included) as the user wrote it: a top-level
// `last_host = ...` line is replaced, or one is added at the top. The
// directory and the file are created when missing; the file is replaced
// whole (write to a temporary file, then rename) so a crash never leaves
// half a file. A file that cannot be read whole (not a regular file, more
// than maxConfigBytes, unreadable) is left untouched and the error returned.
// The live commands call it after a successful join.
func SaveLastHost(path, host string) error {
	if host == "" {
		return fmt.Errorf("last_host: empty host")
	}
	doc, err := boundedfile.Read("config file", path, maxConfigBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
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
	// What we write must read back: never leave a file loadFile refuses.
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config.toml.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if _, err := loadFile(tmp.Name()); err != nil {
		return fmt.Errorf("last_host not saved: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}
