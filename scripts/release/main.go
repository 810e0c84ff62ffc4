// Command release builds lagscope's release archives with Go alone: for
// linux, darwin and windows on amd64 and arm64 it cross-compiles the
// command with the version stamped in (-ldflags -X main.version), packs the
// binary with README.md and LICENSE (tar.gz; zip for windows), and writes
// the SHA-256 of every archive to checksums.txt in `sha256sum -c` form.
//
//	go run ./scripts/release -version v1.2.3            # into dist/
//	go run ./scripts/release -version v1.2.3 -out /tmp/x -clean
//
// .goreleaser.yaml describes the same archives for goreleaser; this program
// is the one that needs nothing but Go (CI runs it). It publishes nothing.
// Archives are reproducible: fixed file times and order, -trimpath, no VCS
// stamp, so the same version from the same tree gives the same bytes.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// targets are the platforms a release carries.
var targets = []struct{ goos, goarch string }{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// docs go into every archive beside the binary.
var docs = []string{"README.md", "LICENSE"}

// epoch is every archived file's time: archives depend on their contents only.
var epoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// versionRE keeps what is stamped into binaries and file names tame.
var versionRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)

func main() {
	version := flag.String("version", "", "version to stamp in and name the archives after, e.g. v1.2.3 (required)")
	out := flag.String("out", "dist", "directory to write the archives and checksums.txt to")
	clean := flag.Bool("clean", false, "remove the -out directory first (without it, a non-empty one is an error)")
	flag.Parse()
	if flag.NArg() > 0 || !versionRE.MatchString(*version) {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/release -version VERSION [-out DIR]  (VERSION like v1.2.3)")
		os.Exit(2)
	}
	if err := release(*version, *out, *clean); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func release(version, out string, clean bool) error {
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run it from the repository's root (no go.mod here)")
	}
	if clean {
		if err := os.RemoveAll(out); err != nil {
			return err
		}
	} else if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty: old archives would mix with new ones (-clean removes it first)", out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	build, err := os.MkdirTemp("", "lagscope-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(build)
	var sums bytes.Buffer
	for _, t := range targets {
		exe := "lagscope"
		if t.goos == "windows" {
			exe += ".exe"
		}
		bin := filepath.Join(build, t.goos+"-"+t.goarch, exe)
		cmd := exec.Command(goTool(), "build", "-trimpath", "-buildvcs=false",
			"-ldflags", "-s -w -X main.version="+version, "-o", bin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.goos, "GOARCH="+t.goarch)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build for %s/%s: %v\n%s", t.goos, t.goarch, err, msg)
		}
		name := fmt.Sprintf("lagscope_%s_%s_%s", strings.TrimPrefix(version, "v"), t.goos, t.goarch)
		var archive string
		if t.goos == "windows" {
			archive, err = writeZip(out, name, bin, exe)
		} else {
			archive, err = writeTarGz(out, name, bin, exe)
		}
		if err != nil {
			return err
		}
		sum, err := sha256File(archive)
		if err != nil {
			return err
		}
		fmt.Fprintf(&sums, "%x  %s\n", sum, filepath.Base(archive))
		fmt.Println(archive)
	}
	sumsPath := filepath.Join(out, "checksums.txt")
	fmt.Println(sumsPath)
	return os.WriteFile(sumsPath, sums.Bytes(), 0o644)
}

// goTool is the go command of the toolchain running this program.
func goTool() string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}

// member is one file of an archive: its name inside, where it is, its mode.
type member struct {
	name, path string
	mode       int64
}

func members(name, bin, exe string) []member {
	m := []member{{name + "/" + exe, bin, 0o755}}
	for _, d := range docs {
		m = append(m, member{name + "/" + d, d, 0o644})
	}
	return m
}

func writeTarGz(dir, name, bin, exe string) (string, error) {
	path := filepath.Join(dir, name+".tar.gz")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	gz.ModTime = epoch
	tw := tar.NewWriter(gz)
	for _, m := range members(name, bin, exe) {
		b, err := os.ReadFile(m.path)
		if err != nil {
			return "", err
		}
		hdr := &tar.Header{Name: m.name, Mode: m.mode, Size: int64(len(b)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return "", err
		}
		if _, err := tw.Write(b); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	return path, f.Close()
}

func writeZip(dir, name, bin, exe string) (string, error) {
	path := filepath.Join(dir, name+".zip")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, m := range members(name, bin, exe) {
		b, err := os.ReadFile(m.path)
		if err != nil {
			return "", err
		}
		hdr := &zip.FileHeader{Name: m.name, Method: zip.Deflate, Modified: epoch}
		hdr.SetMode(os.FileMode(m.mode))
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return "", err
		}
		if _, err := w.Write(b); err != nil {
			return "", err
		}
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return path, f.Close()
}

func sha256File(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
