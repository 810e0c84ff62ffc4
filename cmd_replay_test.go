package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/record"
)

// Recording a sim run and replaying it with --json gives the very bytes the
// sim printed, and recording does not change what the sim prints.
func TestReplayJSONMatchesSim_S19(t *testing.T) {
	for _, sc := range []string{"handoff.json", "vanish.json", "lossy.json", "slow_link.json"} {
		t.Run(sc, func(t *testing.T) {
			path := filepath.Join("testdata", "scenarios", sc)
			var replayed, errb bytes.Buffer
			plain := simOutput(t, path)
			file, recorded := recordedScenario(t, sc)
			if !bytes.Equal(plain, recorded) {
				t.Fatal("sim prints something else when it records")
			}
			if code := run([]string{"replay", "--json", file}, &replayed, &errb); code != 0 {
				t.Fatalf("replay: exit %d %s", code, errb.String())
			}
			if !bytes.Equal(plain, replayed.Bytes()) {
				t.Fatalf("replay --json differs from the sim's output (%d vs %d bytes)", replayed.Len(), len(plain))
			}
			if errb.Len() != 0 {
				t.Fatalf("stderr: %s", errb.String())
			}
			rec, err := record.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			views := 0
			for _, r := range rec.Records {
				if r.Kind == record.KindView {
					views++
				}
			}
			if rec.Header.Protocol == 0 || rec.Header.Program != "lagscope sim" || views == 0 {
				t.Fatalf("header %+v, %d views", rec.Header, views)
			}
		})
	}
}

func TestReplayBadInput(t *testing.T) {
	dir := t.TempDir()
	notRec := filepath.Join(dir, "events.ndjson")
	os.WriteFile(notRec, []byte(`{"type":"master","frame":0,"player":"a"}`+"\n"), 0o644)
	cases := map[string]struct {
		args []string
		want string
	}{
		"no file":         {[]string{"replay"}, "exactly one"},
		"missing":         {[]string{"replay", "--json", filepath.Join(dir, "nope")}, "no such file"},
		"not a recording": {[]string{"replay", "--json", notRec}, "not a lagscope recording"},
		"speed":           {[]string{"replay", "--speed", "32", notRec}, "--speed"},
		"bad flag":        {[]string{"replay", "--bogus", notRec}, "bogus"},
	}
	rec := filepath.Join(dir, "run.lsrec")
	var sout, serr bytes.Buffer
	if code := run([]string{"sim", "--record", rec, "testdata/scenarios/handoff.json"}, &sout, &serr); code != 0 {
		t.Fatal(serr.String())
	}
	cases["unknown machine"] = struct {
		args []string
		want string
	}{[]string{"replay", "--as", "zoe", rec}, "zoe"}
	for name, c := range cases {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		if code != exitUsage || out.Len() != 0 || !strings.Contains(errb.String(), c.want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", name, code, out.String(), errb.String())
		}
	}
}

// A cut-off recording replays everything complete and says where it stopped.
func TestReplayCutOffRecording(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run.lsrec")
	var full, errb bytes.Buffer
	if code := run([]string{"sim", "--record", file, "testdata/scenarios/handoff.json"}, &full, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	b, _ := os.ReadFile(file)
	os.WriteFile(file, b[:len(b)-10], 0o644)
	var out bytes.Buffer
	errb.Reset()
	if code := run([]string{"replay", "--json", file}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !bytes.HasPrefix(full.Bytes(), out.Bytes()) || out.Len() == 0 || out.Len() == full.Len() {
		t.Fatalf("replayed %d of %d bytes", out.Len(), full.Len())
	}
	at := bytes.LastIndexByte(b[:len(b)-10], '\n') + 1
	want := fmt.Sprintf("lagscope replay: note: %s was cut short at byte %d (record %d); showing everything before it\n", file, at, bytes.Count(b[:at], []byte("\n")))
	if errb.String() != want {
		t.Fatalf("stderr %q, want %q", errb.String(), want)
	}
}

// The recording is cut by SIGKILL while the sim is writing it: every
// complete record reads back, and the reader names where it stopped.
func TestRecordingSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "long.json")
	os.WriteFile(scen, []byte(`{"fps":30,"frames":2000000,"seed":3,"players":["a","b","c","d"],"commands_per_minute":600,
		"link_every":30,"network":{"rtt_ms":60,"jitter_ms":10,"loss":0.02}}`), 0o644)
	file := filepath.Join(dir, "run.lsrec")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LAGSCOPE_TEST_CHILD="+strings.Join([]string{"sim", "--record", file, scen}, "\x1f"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if st, err := os.Stat(file); err == nil && st.Size() > 256<<10 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the recording did not grow within 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL", err)
	}
	b, _ := os.ReadFile(file)
	rec, err := record.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Records) < 100 {
		t.Fatalf("%d records survived", len(rec.Records))
	}
	switch {
	case rec.Stop == nil && rec.Size != int64(len(b)):
		t.Fatalf("clean end at %d of %d bytes", rec.Size, len(b))
	case rec.Stop != nil && (!errors.Is(rec.Stop, record.ErrTruncated) || rec.Stop.Offset != rec.Size):
		t.Fatalf("stop %v, size %d", rec.Stop, rec.Size)
	}
	for _, r := range rec.Records {
		if r.Kind == record.KindEvent && r.Event == nil {
			t.Fatalf("undecodable event %s", r.Raw)
		}
	}
	t.Logf("SIGKILL at %d bytes: %d complete records, %v", len(b), len(rec.Records), rec.Stop)
}

// TestMain lets a test run lagscope as a child process of the test binary
// (TestRecordingSurvivesSIGKILL kills one): with LAGSCOPE_TEST_CHILD set to
// NUL-separated arguments, the binary runs them as lagscope would and exits.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("LAGSCOPE_TEST_CHILD"); ok {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	if addr, ok := os.LookupEnv(echoChildEnv); ok {
		os.Exit(serveEcho(addr)) // echo_child_test.go
	}
	cleanup := isolateUserConfig() // cmd_settings_test.go
	sideBySide()
	code := m.Run()
	cleanup()
	if built.dir != "" {
		os.RemoveAll(built.dir) // buildLagscope's
	}
	recordingDirs.Range(func(dir, _ any) bool { // recordScenario's
		os.RemoveAll(dir.(string))
		return true
	})
	os.Exit(code)
}

// sideBySide lets up to sideBySideTests of the tests that call t.Parallel
// run at once, unless -test.parallel says how many: they are live
// sessions of real processes that wait on the wall clock far more than
// they compute, each with its own ports, config directory and temporary
// files, so they share nothing but the machine, and go test's default
// (GOMAXPROCS of them) would leave a 2-core machine waiting.
func sideBySide() {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(sideBySideTests, runtime.GOMAXPROCS(0))))
	}
}

const sideBySideTests = 8
