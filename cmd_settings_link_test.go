//go:build unix

package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A config file linked into place from a dotfiles directory stays a link
// after a join the host welcomes saves last_host: the target gets the line,
// keeps its mode, and the link still leads to it.
func TestJoinSavesLastHostThroughSymlinkedConfig(t *testing.T) {
	root := t.TempDir()
	dotfiles := filepath.Join(root, "dotfiles")
	if err := os.MkdirAll(dotfiles, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dotfiles, "lagscope.toml")
	if err := os.WriteFile(target, []byte("# kept in git\nname = \"carol\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o644); err != nil {
		t.Fatal(err)
	}
	xdg := filepath.Join(root, "xdg")
	path := filepath.Join(xdg, "lagscope", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", xdg)
	addr := freeUDPPort(t) // cmd_settings_test.go

	hostDone := make(chan int, 1)
	var hostOut, hostErr bytes.Buffer
	go func() {
		hostDone <- run([]string{"host", "--open", "--listen", addr, "--players", "2", "--name", "alice", "--json", "--duration", "3s"}, &hostOut, &hostErr)
	}()
	var out, errb bytes.Buffer
	if code := run([]string{"join", addr, "--json", "--duration", "1s"}, &out, &errb); code != 0 {
		t.Fatalf("join: exit %d: %s", code, errb.String())
	}
	if code := <-hostDone; code != 0 {
		t.Fatalf("host: exit %d: %s", code, hostErr.String())
	}
	if errb.Len() != 0 {
		t.Errorf("join's stderr: %q", errb.String())
	}
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the config file is no longer a symbolic link: %v, %v", st.Mode(), err)
	}
	if dest, _ := os.Readlink(path); dest != target {
		t.Fatalf("the link now leads to %q, want %q", dest, target)
	}
	doc, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if want := "last_host = \"" + addr + "\"\n# kept in git\nname = \"carol\"\n"; string(doc) != want {
		t.Fatalf("the link's target after the join:\n%s\nwant:\n%s", doc, want)
	}
	if st, err := os.Stat(target); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("the target's mode after the join: %v, %v; want 0644", st.Mode().Perm(), err)
	}
}
