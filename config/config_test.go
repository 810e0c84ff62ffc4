package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The file lives in the user's config directory: on Linux under
// $XDG_CONFIG_HOME.
func TestConfigPathFollowsXDG(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	got, err := configPath()
	if err != nil {
		t.Fatal(err)
	}
	// os.UserConfigDir reads XDG_CONFIG_HOME on Unix other than macOS;
	// elsewhere the platform's place is not ours to check.
	if want := filepath.Join(dir, "lagscope", "config.toml"); got != want && runtime.GOOS == "linux" {
		t.Fatalf("configPath() = %q, want %q", got, want)
	}
}

func TestConfigMissingFileIsDefaults(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.Found {
		t.Fatal("Found = true for a missing file")
	}
	want := Settings{Trace: true, Alerts: Alerts{LossPercent: 5, Bell: false, LossWindow: Duration(10 * time.Second)}}
	if c.Settings != want {
		t.Fatalf("settings %+v, want %+v", c.Settings, want)
	}
	for _, k := range Keys {
		if c.From[k] != FromDefault {
			t.Errorf("%s from %q, want default", k, c.From[k])
		}
	}
}

func TestConfigFileOverDefaults(t *testing.T) {
	path := writeConfig(t, `# my settings
name = "alice"
theme = "light"
key_file = "/tmp/k"
last_host = "192.0.2.1:7373"
trace = false

[alerts]
loss_percent = 2.5
bell = true
`)
	c, err := loadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Settings
	if s.Name != "alice" || s.Theme != "light" || s.KeyFile != "/tmp/k" || s.LastHost != "192.0.2.1:7373" || s.Trace ||
		s.Alerts.LossPercent != 2.5 || !s.Alerts.Bell || s.Alerts.LossWindow != Duration(10*time.Second) {
		t.Fatalf("settings %+v", s)
	}
	wantLine := map[string]int{"name": 2, "theme": 3, "key_file": 4, "last_host": 5, "trace": 6, "alerts.loss_percent": 9, "alerts.bell": 10}
	for k, line := range wantLine {
		if c.From[k] != FromFile || c.Line[k] != line {
			t.Errorf("%s: from %q line %d, want file line %d", k, c.From[k], c.Line[k], line)
		}
	}
	if c.From["alerts.loss_window"] != FromDefault {
		t.Errorf("loss_window from %q, want default", c.From["alerts.loss_window"])
	}
}

func TestConfigInlineTableAndIntegerPercent(t *testing.T) {
	c, err := loadFile(writeConfig(t, "alerts = { loss_percent = 7, loss_window = \"30s\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Settings.Alerts.LossPercent != 7 || c.Settings.Alerts.LossWindow != Duration(30*time.Second) {
		t.Fatalf("alerts %+v", c.Settings.Alerts)
	}
	if c.From["alerts.loss_percent"] != FromFile || c.From["alerts.loss_window"] != FromFile || c.From["alerts.bell"] != FromDefault {
		t.Fatalf("sources %v", c.From)
	}
}

// Flag > file > default, key by key.
func TestConfigPrecedenceFlagOverFileOverDefault(t *testing.T) {
	c, err := loadFile(writeConfig(t, "name = \"alice\"\ntheme = \"light\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("join", pflag.ContinueOnError)
	fs.String("name", "login", "")
	fs.String("theme", "", "")
	// --theme left at its default: the file's theme stays in force.
	if err := fs.Parse([]string{"--name", "bob"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyFlags(fs); err != nil {
		t.Fatal(err)
	}
	if c.Settings.Name != "bob" || c.From["name"] != FromFlag {
		t.Errorf("name %q from %q, want bob from flag", c.Settings.Name, c.From["name"])
	}
	if c.Settings.Theme != "light" || c.From["theme"] != FromFile {
		t.Errorf("theme %q from %q, want light from file", c.Settings.Theme, c.From["theme"])
	}
	if c.Settings.Alerts.LossPercent != 5 || c.From["alerts.loss_percent"] != FromDefault {
		t.Errorf("loss_percent %v from %q, want 5 from default", c.Settings.Alerts.LossPercent, c.From["alerts.loss_percent"])
	}
}

func TestConfigBadFlagValue(t *testing.T) {
	c := defaults("x")
	fs := pflag.NewFlagSet("join", pflag.ContinueOnError)
	fs.String("theme", "", "")
	_ = fs.Parse([]string{"--theme", "plaid"})
	err := c.ApplyFlags(fs)
	if err == nil || !strings.HasPrefix(err.Error(), "--theme: ") {
		t.Fatalf("err %v, want a --theme error", err)
	}
}

// A bad file is one line naming the file and the line.
func TestConfigBadFileNamesTheLine(t *testing.T) {
	cases := []struct {
		name, body string
		line       int
		says       string
	}{
		{"unknown key", "name = \"a\"\n\n[alerts]\nbel = true\n", 4, "unknown key alerts.bel"},
		{"unknown top-level key", "colour = \"red\"\n", 1, "unknown key colour"},
		{"wrong type", "name = \"a\"\n[alerts]\nbell = \"yes\"\n", 3, "alerts.bell"},
		{"bad duration", "[alerts]\nloss_window = \"ten\"\n", 2, "not a duration"},
		{"percent out of range", "\n[alerts]\nloss_percent = 150\n", 3, "at most 100"},
		{"zero percent", "alerts.loss_percent = 0\n", 1, "more than 0"},
		{"unknown theme", "theme = \"plaid\"\n", 1, "theme \"plaid\""},
		{"empty name", "\nname = \"  \"\n", 2, "name is empty"},
		{"window too short", "[alerts]\nloss_window = \"10ms\"\n", 2, "between 1s and 1h"},
		{"syntax", "name = \"a\"\nthis is not toml\n", 2, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.body)
			_, err := loadFile(path)
			var ce *fileError
			if !errors.As(err, &ce) {
				t.Fatalf("err %v (%T), want *fileError", err, err)
			}
			if ce.Line != tc.line || ce.Path != path {
				t.Errorf("line %d path %q, want line %d path %q", ce.Line, ce.Path, tc.line, path)
			}
			msg := err.Error()
			t.Log(msg)
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, path+":") || !strings.Contains(msg, tc.says) {
				t.Errorf("message %q: want one line starting %q and saying %q", msg, path+":", tc.says)
			}
		})
	}
}

func TestConfigKeyFile(t *testing.T) {
	dir := t.TempDir()
	kf := filepath.Join(dir, "key")
	if err := os.WriteFile(kf, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := Settings{KeyFile: kf}.Key()
	if err != nil || string(k) != "s3cret" {
		t.Fatalf("Key() = %q, %v", k, err)
	}
	if k, err := (Settings{}).Key(); k != nil || err != nil {
		t.Fatalf("no key file: %q, %v", k, err)
	}
	if _, err := (Settings{KeyFile: filepath.Join(dir, "missing")}).Key(); err == nil {
		t.Fatal("a missing key file is not an error")
	}
}

func TestConfigSaveLastHostKeepsTheRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "config.toml")
	if err := SaveLastHost(path, "192.0.2.1:7373"); err != nil {
		t.Fatal(err)
	}
	c, err := loadFile(path)
	if err != nil || c.Settings.LastHost != "192.0.2.1:7373" {
		t.Fatalf("after a first save: %+v, %v", c, err)
	}
	body := "# mine\nname = \"alice\"\nlast_host = \"old:1\"\n\n[alerts]\nbell = true # ring\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SaveLastHost(path, "[2001:db8::1]:7373"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := strings.Replace(body, `"old:1"`, `"[2001:db8::1]:7373"`, 1)
	if string(got) != want {
		t.Fatalf("file after save:\n%s\nwant:\n%s", got, want)
	}
	// A broken file is left as it is.
	if err := os.WriteFile(path, []byte("bogus = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SaveLastHost(path, "h:1"); err == nil {
		t.Fatal("saving into a file with an unknown key succeeded")
	}
	if got, _ := os.ReadFile(path); string(got) != "bogus = 1\n" {
		t.Fatalf("the broken file was changed: %q", got)
	}
}

// The file comes from the user: decoding never panics, and every error is
// a *fileError of one line.
func FuzzConfigDecode(f *testing.F) {
	f.Add("name = \"a\"\n[alerts]\nloss_percent = 5\nbell = true\nloss_window = \"10s\"\n")
	f.Add("alerts = { bell = 1 }\n")
	f.Add("[[alerts]]\n")
	f.Fuzz(func(t *testing.T, body string) {
		path := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := loadFile(path)
		var ce *fileError
		if err != nil && (!errors.As(err, &ce) || strings.Contains(err.Error(), "\n")) {
			t.Fatalf("error %q (%T): want one line of *fileError", err, err)
		}
	})
}

// Each platform's config directory, chosen on any platform: Windows reads
// %AppData%, macOS the Library under $HOME, the others $XDG_CONFIG_HOME when
// it is absolute, else ~/.config. An unset variable is an error that names
// it, never a file written into the working directory.
func TestConfigDirPerPlatform(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	cases := []struct {
		goos    string
		vars    map[string]string
		want    string
		wantErr string
	}{
		{"windows", map[string]string{"AppData": `C:\Users\Ada\AppData\Roaming`, "HOME": "/ignored"}, `C:\Users\Ada\AppData\Roaming`, ""},
		{"windows", map[string]string{"HOME": "/home/ada"}, "", "%AppData%"},
		{"darwin", map[string]string{"HOME": "/Users/ada", "XDG_CONFIG_HOME": "/ignored"}, "/Users/ada/Library/Application Support", ""},
		{"darwin", nil, "", "$HOME"},
		{"linux", map[string]string{"HOME": "/home/ada", "XDG_CONFIG_HOME": "/xdg"}, "/xdg", ""},
		{"linux", map[string]string{"HOME": "/home/ada", "XDG_CONFIG_HOME": "relative/dir"}, "/home/ada/.config", ""},
		{"freebsd", map[string]string{"HOME": "/home/ada"}, "/home/ada/.config", ""},
		{"linux", nil, "", "$HOME"},
	}
	for _, c := range cases {
		got, err := configDir(c.goos, env(c.vars))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s %v: got %q, %v; want an error naming %s", c.goos, c.vars, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %v: got %q, %v; want %q", c.goos, c.vars, got, err, c.want)
		}
	}
	// On this machine, the directory is the one the standard library gives.
	std, stdErr := os.UserConfigDir()
	got, err := configDir(runtime.GOOS, os.Getenv)
	if (err == nil) != (stdErr == nil) || (err == nil && got != std) {
		t.Errorf("configDir here = %q, %v; os.UserConfigDir = %q, %v", got, err, std, stdErr)
	}
}
