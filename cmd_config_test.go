package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runConfig runs `lagscope config` with the config directory at dir.
func runConfig(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", dir)
	var out, errb bytes.Buffer
	code = run(append([]string{"config"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func writeUserConfig(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "lagscope", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// settingLine is the listing's line for key, its words split on spaces.
func settingLine(t *testing.T, out, key string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == key {
			return strings.Join(f, " ")
		}
	}
	t.Fatalf("no %s line in:\n%s", key, out)
	return ""
}

func TestConfigCommandMissingFileShowsDefaults(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runConfig(t, dir)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	path := filepath.Join(dir, "lagscope", "config.toml")
	if !strings.HasPrefix(out, "config file: "+path+"\n  (no such file: the defaults are in force)\n") {
		t.Fatalf("head of output:\n%s", out)
	}
	for key, want := range map[string]string{
		"name":                "name (unset: your login name) default",
		"trace":               "trace true default",
		"alerts.loss_percent": "alerts.loss_percent 5 default",
		"alerts.bell":         "alerts.bell false default",
		"alerts.loss_window":  "alerts.loss_window 10s default",
	} {
		if got := settingLine(t, out, key); got != want {
			t.Errorf("%s line %q, want %q", key, got, want)
		}
	}
}

// Flag > file > default, as `lagscope config` lists it.
func TestConfigCommandPrecedence(t *testing.T) {
	dir := t.TempDir()
	writeUserConfig(t, dir, "name = \"alice\"\ntheme = \"light\"\n\n[alerts]\nloss_percent = 3\n")
	code, out, errs := runConfig(t, dir, "--theme", "monochrome")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for key, want := range map[string]string{
		"name":                `name "alice" file, line 1`,
		"theme":               `theme "monochrome" flag --theme`,
		"alerts.loss_percent": "alerts.loss_percent 3 file, line 5",
		"alerts.loss_window":  "alerts.loss_window 10s default",
	} {
		if got := settingLine(t, out, key); got != want {
			t.Errorf("%s line %q, want %q", key, got, want)
		}
	}
	if strings.Contains(out, "no such file") {
		t.Errorf("the file exists, yet:\n%s", out)
	}
}

// A bad file: one line on stderr naming the file's line, exit 2, nothing on
// stdout.
func TestConfigCommandBadFileExits2(t *testing.T) {
	dir := t.TempDir()
	path := writeUserConfig(t, dir, "name = \"alice\"\n[alerts]\nloss_percent = 500\n")
	code, out, errs := runConfig(t, dir)
	want := "lagscope config: " + path + ":3: alerts.loss_percent 500: must be more than 0 and at most 100\n"
	if code != 2 || out != "" || errs != want {
		t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant exit 2, stderr %q", code, out, errs, want)
	}
	code, _, errs = runConfig(t, t.TempDir(), "--theme", "plaid")
	if code != 2 || !strings.HasPrefix(errs, "lagscope config: --theme: theme \"plaid\"") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("bad --theme: exit %d, stderr %q", code, errs)
	}
}
