package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/config"
)

// testConfigDir is the tests' own config directory (isolateUserConfig).
var testConfigDir string

// isolateUserConfig points the user's config directory, and the home
// directory it falls back to, at an empty temporary one for the whole test
// binary and every process it starts (TestMain), so a developer's own
// ~/.config/lagscope/config.toml never changes what a test sees, and no
// test writes there: a test that clears or replaces XDG_CONFIG_HOME, or a
// child that ignores it, still lands in the temporary directory. Tests
// share it (a successful join saves last_host in it): a test that needs a
// known file sets its own XDG_CONFIG_HOME. The Go tool's own directories
// (build cache, module cache, its env file) are pinned first to where they
// were, so the tests' `go build` finds what it always did. It returns the
// cleanup.
func isolateUserConfig() func() {
	dir, err := os.MkdirTemp("", "lagscope-test-config-")
	if err != nil {
		panic(err)
	}
	testConfigDir = dir
	pinGoDirs()
	os.Setenv("XDG_CONFIG_HOME", dir) // Linux, BSDs
	switch runtime.GOOS {
	case "windows":
		os.Setenv("AppData", dir)
	case "plan9":
		os.Setenv("home", dir)
	default:
		// macOS's config directory is under $HOME; elsewhere $HOME/.config
		// is where an unset or relative XDG_CONFIG_HOME leads.
		os.Setenv("HOME", dir)
	}
	return func() { os.RemoveAll(dir) }
}

// pinGoDirs sets GOCACHE, GOPATH and GOENV, where the environment leaves
// them unset, to the directories the Go tool derives from the home and
// config directories now (the rules of `go help environment`), before
// isolateUserConfig moves those.
func pinGoDirs() {
	pin := func(name string, at func() (string, error), elem ...string) {
		if os.Getenv(name) != "" {
			return
		}
		if d, err := at(); err == nil && d != "" {
			os.Setenv(name, filepath.Join(append([]string{d}, elem...)...))
		}
	}
	pin("GOCACHE", os.UserCacheDir, "go-build")
	pin("GOPATH", os.UserHomeDir, "go")
	pin("GOENV", os.UserConfigDir, "go", "env")
}

// settled parses args for a live command's shared flags and settles them
// against the config file in dir, as the command does before it runs.
func settled(t *testing.T, dir, cmd string, args ...string) (*liveFlags, error) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", dir)
	fs := pflag.NewFlagSet(cmd, pflag.ContinueOnError)
	lf := addLiveFlags(fs, cmd)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return lf, lf.settle()
}

// Every way a test reaches a config file lands in the tests' own
// directory: the path config.Load gives, the one it gives with
// XDG_CONFIG_HOME cleared or relative (the home directory's), and the one a
// child process started from the test binary reports. So no test, and no
// process a test starts with the inherited environment, writes the user's
// real config file.
func TestMainIsolatesUserConfig(t *testing.T) {
	under := func(how, path string) {
		t.Helper()
		if testConfigDir == "" || !strings.HasPrefix(path, testConfigDir+string(filepath.Separator)) {
			t.Errorf("%s: config path %s is not under the tests' own directory %q: the user's config leaks into tests", how, path, testConfigDir)
		}
	}
	load := func(how string) {
		t.Helper()
		c, err := config.Load()
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		under(how, c.Path)
	}
	load("as set up")
	if runtime.GOOS != "windows" {
		t.Setenv("XDG_CONFIG_HOME", "")
		load("XDG_CONFIG_HOME cleared")
		t.Setenv("XDG_CONFIG_HOME", "relative/dir")
		load("XDG_CONFIG_HOME relative")
		t.Setenv("XDG_CONFIG_HOME", testConfigDir)
	}
	child := exec.Command(os.Args[0]) // TestMain runs LAGSCOPE_TEST_CHILD's arguments
	child.Env = append(os.Environ(), "LAGSCOPE_TEST_CHILD=config")
	out, err := child.Output()
	if err != nil {
		t.Fatalf("lagscope config in a child: %v", err)
	}
	path, _, ok := strings.Cut(strings.TrimPrefix(string(out), "config file: "), "\n")
	if !ok || !strings.HasPrefix(string(out), "config file: ") {
		t.Fatalf("lagscope config in a child printed %q", out)
	}
	under("a child process", path)
}

// Flag > file > default for each live command, as the commands apply it:
// name, theme, key file and the alerts for host/join/watch; the
// theme and the alerts alone for the demo.
func TestLiveCommandsConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("filekey\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeUserConfig(t, dir, "name = \"carol\"\ntheme = \"light\"\nkey_file = \""+keyFile+"\"\n[alerts]\nloss_percent = 2.5\nbell = true\nloss_window = \"30s\"\n")

	for _, cmd := range []string{"host", "join", "watch"} {
		lf, err := settled(t, dir, cmd)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		if lf.name != "carol" || lf.theme != "light" || lf.key != "filekey" {
			t.Errorf("%s from the file: name %q theme %q key %q", cmd, lf.name, lf.theme, lf.key)
		}
		if lf.alerts.LossPercent != 2.5 || lf.alerts.LossWindow != 30*time.Second || !lf.bell {
			t.Errorf("%s alerts %+v bell %v", cmd, lf.alerts, lf.bell)
		}
		rc := lf.runConfig(cmd, &bytes.Buffer{})
		if rc.Name != "carol" || string(rc.Key) != "filekey" || rc.Alerts != lf.alerts {
			t.Errorf("%s run config: name %q key %q alerts %+v", cmd, rc.Name, rc.Key, rc.Alerts)
		}

		lf, err = settled(t, dir, cmd, "--name", "dave", "--theme", "monochrome", "--key", "flagkey")
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		if lf.name != "dave" || lf.theme != "monochrome" || lf.key != "flagkey" {
			t.Errorf("%s flags over the file: name %q theme %q key %q", cmd, lf.name, lf.theme, lf.key)
		}
	}

	// The demo: the file's theme and alerts, never its name or key (its
	// flags' own defaults stay; setupDemo makes the name "you").
	lf, err := settled(t, dir, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if lf.name != defaultName() || lf.key != "" || lf.theme != "light" || lf.alerts.LossPercent != 2.5 || !lf.bell {
		t.Errorf("demo: name %q key %q theme %q alerts %+v bell %v", lf.name, lf.key, lf.theme, lf.alerts, lf.bell)
	}

	// No file: the defaults (a loss of 5 % over 10 s raises the alert).
	lf, err = settled(t, t.TempDir(), "join")
	if err != nil {
		t.Fatal(err)
	}
	if lf.name != defaultName() || lf.theme != "" || lf.key != "" || lf.bell ||
		lf.alerts.LossPercent != 5 || lf.alerts.LossWindow != 10*time.Second {
		t.Errorf("defaults: name %q theme %q key %q alerts %+v bell %v", lf.name, lf.theme, lf.key, lf.alerts, lf.bell)
	}
}

// A file whose name or key file cannot be used stops a live command with
// one line naming the file's line and exit 2, as a bad flag does.
func TestLiveCommandsBadConfigExit2(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"theme = \"plaid\"\n", ":1: theme \"plaid\""},
		{"\nname = \"  spaced\"\n", ":2: name \"  spaced\""},
		{"key_file = \"/nonexistent-dir/key\"\n", ":1: key_file: open /nonexistent-dir/key"},
	} {
		dir := t.TempDir()
		path := writeUserConfig(t, dir, tc.body)
		t.Setenv("XDG_CONFIG_HOME", dir)
		var out, errb bytes.Buffer
		code := run([]string{"join", "127.0.0.1:9", "--json"}, &out, &errb)
		if code != 2 || out.Len() != 0 || !strings.HasPrefix(errb.String(), "lagscope join: "+path+tc.want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tc.body, code, out.String(), errb.String())
		}
	}
	// --key given: a broken key_file is not read at all.
	dir := t.TempDir()
	writeUserConfig(t, dir, "key_file = \"/nonexistent-dir/key\"\n")
	if _, err := settled(t, dir, "join", "--key", "k"); err != nil {
		t.Errorf("--key given, yet the key file was read: %v", err)
	}
}

// join with no address and no last_host: the usage error it always was.
func TestJoinWithoutAddressOrLastHost(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	var out, errb bytes.Buffer
	if code := run([]string{"join", "--json"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no last_host yet") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// freeUDPPort is a loopback port nobody listens on right now.
func freeUDPPort(t *testing.T) string {
	t.Helper()
	l, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.LocalAddr().String()
}

// A join the host welcomes saves the address as last_host (keeping the
// rest of the file); a join with no address goes back to it.
func TestJoinRemembersLastHostConfig(t *testing.T) {
	dir := t.TempDir()
	path := writeUserConfig(t, dir, "# my settings\nname = \"carol\"\n")
	t.Setenv("XDG_CONFIG_HOME", dir)
	addr := freeUDPPort(t)

	hostDone := make(chan int, 1)
	var hostOut, hostErr bytes.Buffer
	go func() {
		// Three seats: the lobby stays open for both joins.
		hostDone <- run([]string{"host", "--open", "--listen", addr, "--players", "3", "--name", "alice", "--json", "--duration", "8s"}, &hostOut, &hostErr)
	}()
	var out, errb bytes.Buffer
	// The host may still be opening its socket: a join that finds no one
	// retries its hello until it is answered.
	if code := run([]string{"join", addr, "--json", "--duration", "1s"}, &out, &errb); code != 0 {
		t.Fatalf("join: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "as carol") {
		t.Errorf("the file's name is not the joiner's:\n%.2000s", out.String())
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "last_host = \"" + addr + "\"\n# my settings\nname = \"carol\"\n"; string(doc) != want {
		t.Fatalf("config file after the join:\n%s\nwant:\n%s", doc, want)
	}

	out.Reset()
	errb.Reset()
	if code := run([]string{"watch", "--json", "--duration", "1s", "--name", "dave"}, &out, &errb); code != 0 {
		t.Fatalf("watch with no address: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "going to "+addr+", the last host") || !strings.Contains(out.String(), "as dave") {
		t.Errorf("watch with no address:\nstderr %q\nstdout %.2000s", errb.String(), out.String())
	}
	if code := <-hostDone; code != 0 {
		t.Fatalf("host: exit %d: %s", code, hostErr.String())
	}
}

// sim, replay and report never read the config file: with a file
// that sets another name, theme and alert thresholds — and with one that is
// not even valid — their output is byte for byte the golden one.
func TestSimReplayReportIgnoreConfig(t *testing.T) {
	committed := filepath.Join("testdata", "golden", "handoff.lsrec")
	runs := []struct {
		golden string
		args   []string
	}{
		{"sim_slow_link.ndjson", []string{"sim", filepath.Join("testdata", "scenarios", "slow_link.json")}},
		{"handoff.replay.ndjson", []string{"replay", "--json", committed}},
		{"handoff.report.txt", []string{"report", committed}},
	}
	for _, body := range []string{
		"name = \"zed\"\ntheme = \"light\"\n[alerts]\nloss_percent = 0.5\nloss_window = \"2s\"\n",
		"this is not = = toml\n",
	} {
		dir := t.TempDir()
		writeUserConfig(t, dir, body)
		t.Setenv("XDG_CONFIG_HOME", dir)
		for _, r := range runs {
			want, err := os.ReadFile(filepath.Join("testdata", "golden", r.golden))
			if err != nil {
				t.Fatal(err)
			}
			if got := runOK(t, r.args...); !bytes.Equal(got, want) {
				t.Errorf("lagscope %s with config %q differs from %s", strings.Join(r.args, " "), body, r.golden)
			}
		}
	}
}
