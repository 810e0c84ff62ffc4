//go:build unix

package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config file kept elsewhere and linked into place stays a link: the
// save writes the link's target, through a chain of links too, and the
// target keeps its permission bits; nothing is left beside either.
func TestConfigSaveLastHostWritesThroughSymlink(t *testing.T) {
	for _, mode := range []fs.FileMode{0o644, 0o600, 0o640} {
		root := t.TempDir()
		dotfiles := filepath.Join(root, "dotfiles")
		confDir := filepath.Join(root, "config", "lagscope")
		for _, d := range []string{dotfiles, confDir} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		target := filepath.Join(dotfiles, "lagscope.toml")
		if err := os.WriteFile(target, []byte("# mine\nname = \"alice\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(target, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		// config.toml -> middle.toml -> ../../dotfiles/lagscope.toml
		middle := filepath.Join(confDir, "middle.toml")
		if err := os.Symlink(filepath.Join("..", "..", "dotfiles", "lagscope.toml"), middle); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(confDir, "config.toml")
		if err := os.Symlink("middle.toml", path); err != nil {
			t.Fatal(err)
		}

		if err := SaveLastHost(path, "192.0.2.1:7373"); err != nil {
			t.Fatal(err)
		}
		for link, dest := range map[string]string{path: "middle.toml", middle: filepath.Join("..", "..", "dotfiles", "lagscope.toml")} {
			st, err := os.Lstat(link)
			if err != nil || st.Mode()&fs.ModeSymlink == 0 {
				t.Fatalf("%v: %s is no longer a symbolic link: %v, %v", mode, link, st.Mode(), err)
			}
			if got, _ := os.Readlink(link); got != dest {
				t.Fatalf("%v: %s now leads to %q, want %q", mode, link, got, dest)
			}
		}
		got, err := os.ReadFile(target)
		if err != nil {
			t.Fatal(err)
		}
		if want := "last_host = \"192.0.2.1:7373\"\n# mine\nname = \"alice\"\n"; string(got) != want {
			t.Fatalf("%v: target after the save:\n%s\nwant:\n%s", mode, got, want)
		}
		st, err := os.Stat(target)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("target's mode %v after the save, was %v", st.Mode().Perm(), mode)
		}
		c, err := loadFile(path)
		if err != nil || c.Settings.LastHost != "192.0.2.1:7373" {
			t.Fatalf("%v: reading back through the link: %+v, %v", mode, c, err)
		}
		for _, d := range []string{dotfiles, confDir} {
			if left, _ := filepath.Glob(filepath.Join(d, ".config.toml.*")); len(left) != 0 {
				t.Errorf("temporary files left in %s: %v", d, left)
			}
		}
	}
}

// A plain file keeps its mode too (CreateTemp's 0600 would otherwise
// replace a shared 0644); a file SaveLastHost creates is 0600.
func TestConfigSaveLastHostKeepsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte("name = \"alice\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := SaveLastHost(path, "h:1"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("mode after the save: %v, %v; want 0644", st.Mode().Perm(), err)
	}
	fresh := filepath.Join(dir, "sub", "config.toml")
	if err := SaveLastHost(fresh, "h:1"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(fresh); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("a new file's mode: %v, %v; want 0600", st.Mode().Perm(), err)
	}
}

// A link that leads nowhere (a dotfiles checkout not there yet) or loops is
// left as it is, with an error naming the link, and nothing is created.
func TestConfigSaveLastHostRefusesBrokenLink(t *testing.T) {
	dir := t.TempDir()
	dangling := filepath.Join(dir, "config.toml")
	if err := os.Symlink(filepath.Join(dir, "absent", "lagscope.toml"), dangling); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(dir, "loop.toml")
	if err := os.Symlink("loop.toml", loop); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{dangling, loop} {
		before, _ := os.Readlink(link)
		err := SaveLastHost(link, "h:1")
		if err == nil || !strings.Contains(err.Error(), link+" is a symbolic link to") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line naming the link", link, err)
		}
		if after, lerr := os.Readlink(link); lerr != nil || after != before {
			t.Errorf("%s changed: now %q (%v), was %q", link, after, lerr, before)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "absent")); err == nil {
		t.Error("the dangling link's directory was created")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".config.toml.*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
