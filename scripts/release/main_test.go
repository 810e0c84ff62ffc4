package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The archives hold the binary (executable) and the docs under one
// directory named after the archive, and the same inputs give the same
// bytes: release archives are reproducible.
func TestArchivesLayoutAndReproducible(t *testing.T) {
	src := t.TempDir()
	bin := filepath.Join(src, "lagscope")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	// members reads README.md and LICENSE from the working directory: the
	// repository's root in real use, a copy here.
	for _, d := range docs {
		if err := os.WriteFile(filepath.Join(src, d), []byte(d+" text"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(src)
	want := map[string]struct {
		body string
		exec bool
	}{
		"pkg/lagscope": {"binary", true}, "pkg/README.md": {"README.md text", false}, "pkg/LICENSE": {"LICENSE text", false},
	}

	out1, out2 := t.TempDir(), t.TempDir()
	tgz, err := writeTarGz(out1, "pkg", bin, "lagscope")
	if err != nil {
		t.Fatal(err)
	}
	again, err := writeTarGz(out2, "pkg", bin, "lagscope")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(tgz)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Fatal("two tar.gz archives of the same files differ")
	}
	gz, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	seen := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		w, ok := want[h.Name]
		if !ok || string(body) != w.body || (h.Mode&0o111 != 0) != w.exec {
			t.Errorf("tar member %s mode %o body %q", h.Name, h.Mode, body)
		}
		seen++
	}
	if seen != len(want) {
		t.Errorf("tar has %d members, want %d", seen, len(want))
	}

	zp, err := writeZip(out1, "pkg", bin, "lagscope")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(zp)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != len(want) {
		t.Errorf("zip has %d members, want %d", len(zr.File), len(want))
	}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(rc)
		rc.Close()
		w, ok := want[f.Name]
		if !ok || string(body) != w.body || (f.Mode()&0o111 != 0) != w.exec {
			t.Errorf("zip member %s mode %v body %q", f.Name, f.Mode(), body)
		}
	}
}
