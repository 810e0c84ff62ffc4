package main

// End-to-end tests of the live commands: the real binary, built
// once per test binary, run as separate processes talking UDP on 127.0.0.1, with
// --json --duration so every run is bounded in time. Assertions are about
// what the processes print, never about how long things took.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildLagscope builds the command, once per test binary, into a
// directory of its own: a plain build, without the race detector, so the
// processes run at their real speed. Every test that runs it shares the
// one binary; nothing writes beside it.
func buildLagscope(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "lagscope-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		bin := filepath.Join(dir, "lagscope")
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			gobin = "go"
		}
		if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// built is buildLagscope's binary; TestMain removes its directory.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// procConfig is each test's own config directory for the processes it
// starts (startProc): every successful join writes the last host there,
// so tests that run side by side (t.Parallel) must not share one.
var procConfig sync.Map // *testing.T → string

// procEnv is the environment of a process a test starts: this one's, with
// XDG_CONFIG_HOME the test's own directory — unless the test set one of
// its own (t.Setenv), which its processes then share.
func procEnv(t *testing.T) []string {
	env := os.Environ()
	if os.Getenv("XDG_CONFIG_HOME") != testConfigDir {
		return env
	}
	dir, ok := procConfig.Load(t)
	if !ok {
		dir, _ = procConfig.LoadOrStore(t, t.TempDir())
		t.Cleanup(func() { procConfig.Delete(t) })
	}
	return append(env, "XDG_CONFIG_HOME="+dir.(string))
}

// ndjson is one printed line.
type ndjson map[string]any

func (e ndjson) str(k string) string { s, _ := e[k].(string); return s }
func (e ndjson) num(k string) float64 {
	f, _ := e[k].(float64)
	return f
}
func (e ndjson) frame() int { return int(e.num("frame")) }

// proc is one lagscope process whose stdout is read line by line.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []ndjson
	raw    []string
	stderr lockedBuffer
	done   chan struct{}
	err    error
}

// lockedBuffer is a process's stderr, safe to read while it is written.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// joinCode waits for the join line a host prints on stderr under --json
// ("lagscope join ADDR --key CODE") and returns its --key argument.
func joinCode(t *testing.T, host *proc) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^lagscope join \S+ --key ([2-9A-HJ-NP-Z]{4}(?:-[2-9A-HJ-NP-Z]{4}){3})$`)
	end := time.Now().Add(10 * time.Second)
	for time.Now().Before(end) {
		if m := re.FindStringSubmatch(host.stderr.String()); m != nil {
			return m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the host printed no join line with a code: %q", host.stderr.String())
	return ""
}

func startProc(t *testing.T, bin, name string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = procEnv(t)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var e ndjson
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				e = ndjson{"type": "not json", "text": sc.Text()}
			}
			p.mu.Lock()
			p.lines = append(p.lines, e)
			p.raw = append(p.raw, sc.Text())
			p.mu.Unlock()
		}
		p.err = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *proc) events() []ndjson {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

func (p *proc) of(typ string) []ndjson {
	var out []ndjson
	for _, e := range p.events() {
		if e.str("type") == typ {
			out = append(out, e)
		}
	}
	return out
}

// waitFor polls the output until cond holds; limit only bounds a broken run.
func (p *proc) waitFor(what string, limit time.Duration, cond func([]ndjson) bool) {
	p.t.Helper()
	end := time.Now().Add(limit)
	for !cond(p.events()) {
		select {
		case <-p.done:
			if cond(p.events()) {
				return
			}
			p.t.Fatalf("%s ended before %s: %v\n%s", p.name, what, p.err, p.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(end) {
			p.t.Fatalf("%s: no %s within %v", p.name, what, limit)
		}
	}
}

// exit waits for the process to end and returns its exit code.
func (p *proc) exit(limit time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		p.t.Fatalf("%s still running after %v", p.name, limit)
	}
	if p.err == nil {
		return 0
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	p.t.Fatalf("%s: %v", p.name, p.err)
	return -1
}

// hostAddr is the address the host's first line says it listens at.
func hostAddr(t *testing.T, host *proc) string {
	t.Helper()
	host.waitFor("session line", 10*time.Second, func(es []ndjson) bool { return len(es) > 0 })
	first := host.events()[0]
	if first.str("type") != "session" || first.str("role") != "host" {
		t.Fatalf("first line %v", first)
	}
	return first.str("addr")
}

func hasType(typ string) func([]ndjson) bool {
	return func(es []ndjson) bool {
		return slices.ContainsFunc(es, func(e ndjson) bool { return e.str("type") == typ })
	}
}

// timingKeys is what all machines must agree on about timing events.
func timingKeys(p *proc) []string {
	var out []string
	for _, e := range p.of("timing") {
		out = append(out, fmt.Sprintf("f%d d%v %v/%v %vfps %s", e.frame(), e["decided"], e["send_period"], e["look_ahead"], e["fps"], e.str("reason")))
	}
	return out
}

// measuredLinks: the peers p's link lines from machine `from` (p's own
// name) show measured at least once. p prints the other players' links
// too, from their telemetry; those do not count here.
func measuredLinks(p *proc, from string) map[string]bool {
	got := map[string]bool{}
	for _, e := range p.of("link") {
		if e.str("state") == "measured" && e.str("from") == from {
			got[e.str("to")] = true
		}
	}
	return got
}

// A host, two joiners and a watcher, each its own process on loopback, in
// a session keyed by default: the host prints its join line with the code
// and everyone joins with it; every player's links reach measured (T1),
// all four print the same timing events on the same frames, and the
// watcher is in no report.
func TestLiveSessionEndToEnd_T1(t *testing.T) {
	t.Parallel()
	bin := buildLagscope(t)
	host := startProc(t, bin, "alice", "host", "--name", "alice", "--listen", "127.0.0.1:0", "--players", "3",
		"--json", "--duration", "24s")
	addr := hostAddr(t, host)
	code := joinCode(t, host)
	host.mu.Lock()
	inOut := strings.Contains(strings.Join(host.raw, "\n"), code)
	host.mu.Unlock()
	if inOut {
		t.Error("the session code is in the host's NDJSON")
	}
	eve := startProc(t, bin, "eve", "watch", addr, "--name", "eve", "--key", code, "--json", "--duration", "20s")
	eve.waitFor("roster", 10*time.Second, hasType("roster"))
	bob := startProc(t, bin, "bob", "join", addr, "--name", "bob", "--key", code, "--json", "--duration", "20s")
	carol := startProc(t, bin, "carol", "join", addr, "--name", "carol", "--key", code, "--json", "--duration", "20s")
	all := []*proc{host, bob, carol, eve}
	for _, p := range all {
		if code := p.exit(60 * time.Second); code != 0 {
			t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
		}
	}
	players := []*proc{host, bob, carol}
	for _, p := range players {
		got := measuredLinks(p, p.name)
		for _, q := range players {
			if q != p && !got[q.name] {
				t.Errorf("%s's link to %s never measured (measured: %v)", p.name, q.name, got)
			}
		}
	}
	keys := [][]string{timingKeys(host), timingKeys(bob), timingKeys(carol), timingKeys(eve)}
	if len(keys[0]) == 0 {
		t.Fatal("no timing event")
	}
	n := len(keys[0])
	for _, k := range keys {
		n = min(n, len(k))
	}
	if n == 0 {
		t.Fatalf("some machine printed no timing event: %v", keys)
	}
	for i, k := range keys {
		if !slices.Equal(k[:n], keys[0][:n]) {
			t.Errorf("%s's timing events differ from alice's:\n%v\n%v", all[i].name, k, keys[0])
		}
	}
	for _, p := range all {
		reports := p.of("report")
		if len(reports) == 0 {
			t.Errorf("%s printed no report", p.name)
		}
		for _, r := range reports {
			if r.str("player") == "eve" {
				t.Fatalf("%s: the watcher is in a report: %v", p.name, r)
			}
		}
		sums := p.of("summary")
		if len(sums) != 1 {
			t.Fatalf("%s printed %d summaries", p.name, len(sums))
		}
		for _, pl := range sums[0]["players"].([]any) {
			if pl.(map[string]any)["player"] == "eve" {
				t.Fatalf("%s: the watcher is in the summary's players", p.name)
			}
		}
		if es := p.events(); es[len(es)-1].str("type") != "summary" {
			t.Fatalf("%s: last line is not the summary", p.name)
		}
	}
}

// SIGKILL of a joiner: the others log the bad connection (T11), remove it
// after the drop timeout and keep playing; SIGKILL of the host, the master:
// the next player in house order takes over (S16) and plays on.
func TestLiveKilledJoinerAndHost_T11_S16(t *testing.T) {
	t.Parallel()
	bin := buildLagscope(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "alice.log")
	host := startProc(t, bin, "alice", "host", "--open", "--name", "alice", "--listen", "127.0.0.1:0", "--players", "3",
		"--drop-timeout", "4s", "--json", "--duration", "2m", "--log", log)
	addr := hostAddr(t, host)
	bob := startProc(t, bin, "bob", "join", addr, "--name", "bob", "--json", "--duration", "2m")
	carol := startProc(t, bin, "carol", "join", addr, "--name", "carol", "--json", "--duration", "2m")
	eve := startProc(t, bin, "eve", "watch", addr, "--name", "eve", "--json", "--duration", "2m")
	for _, p := range []*proc{host, bob} {
		p.waitFor("the first timing event", 30*time.Second, hasType("timing"))
	}

	carol.cmd.Process.Signal(syscall.SIGKILL)
	removed := func(who string) func([]ndjson) bool {
		return func(es []ndjson) bool {
			return slices.ContainsFunc(es, func(e ndjson) bool { return e.str("type") == "removed" && e.str("player") == who })
		}
	}
	host.waitFor("carol's removal", 30*time.Second, removed("carol"))
	bob.waitFor("carol's removal", 30*time.Second, removed("carol"))
	frameOf := func(p *proc, typ, who string) int {
		for _, e := range p.of(typ) {
			if e.str("player") == who {
				return e.frame()
			}
		}
		return -1
	}
	if a, b := frameOf(host, "removed", "carol"), frameOf(bob, "removed", "carol"); a != b {
		t.Fatalf("carol removed on frame %d by alice, %d by bob", a, b)
	}
	bad := func(p *proc, who string) bool {
		return slices.ContainsFunc(p.of("message"), func(e ndjson) bool {
			return e.str("text") == "Connection to "+who+" has gone bad"
		})
	}
	if !bad(host, "carol") || !bad(bob, "carol") {
		t.Errorf("no bad-connection message: alice %v, bob %v", bad(host, "carol"), bad(bob, "carol"))
	}
	after := frameOf(host, "removed", "carol")
	host.waitFor("play after the removal", 30*time.Second, func(es []ndjson) bool {
		return slices.ContainsFunc(es, func(e ndjson) bool { return e.str("type") == "link" && e.frame() > after+60 })
	})
	if b, _ := os.ReadFile(log); !bytes.Contains(b, []byte("connection has gone bad")) {
		t.Errorf("alice's debug log does not record the bad connection:\n%s", lastLines(b, 20))
	}

	host.cmd.Process.Signal(syscall.SIGKILL)
	bob.waitFor("alice's removal", 30*time.Second, removed("alice"))
	masters := func(p *proc) []string {
		var out []string
		for _, e := range p.of("master") {
			out = append(out, e.str("player"))
		}
		return out
	}
	bob.waitFor("the handoff", 10*time.Second, func([]ndjson) bool { return len(masters(bob)) == 2 })
	if got := masters(bob); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Fatalf("bob's masters %v, want alice then bob", got)
	}
	eve.waitFor("the handoff", 10*time.Second, func([]ndjson) bool { return len(masters(eve)) == 2 })
	handoff := frameOf(bob, "master", "bob")
	if frameOf(eve, "master", "bob") != handoff {
		t.Fatalf("handoff on frame %d for bob, %d for eve", handoff, frameOf(eve, "master", "bob"))
	}
	bob.waitFor("play after the handoff", 30*time.Second, func(es []ndjson) bool {
		return slices.ContainsFunc(es, func(e ndjson) bool { return e.str("type") == "link" && e.frame() > handoff+60 })
	})
	// Ctrl-C: bob leaves cleanly, with his own removal, and exits 0.
	bob.cmd.Process.Signal(os.Interrupt)
	if code := bob.exit(20 * time.Second); code != 0 {
		t.Fatalf("bob exited %d after Ctrl-C: %s", code, bob.stderr.String())
	}
	if frameOf(bob, "removed", "bob") < 0 {
		t.Fatal("bob left without his removal")
	}
	eve.waitFor("bob's removal", 10*time.Second, removed("bob"))
}

func lastLines(b []byte, n int) string {
	ls := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(ls[max(0, len(ls)-n):], "\n")
}

// 10 000 random and truncated datagrams sent at a live host: no crash, no
// change to the session (the joiner sees the same timing, nobody is removed,
// no desync), and the host's rejected counter counts every one.
func TestLiveFloodOfBadDatagrams(t *testing.T) {
	t.Parallel()
	bin := buildLagscope(t)
	host := startProc(t, bin, "alice", "host", "--open", "--name", "alice", "--listen", "127.0.0.1:0", "--players", "2",
		"--json", "--duration", "16s")
	addr := hostAddr(t, host)
	bob := startProc(t, bin, "bob", "join", addr, "--name", "bob", "--json", "--duration", "14s")
	host.waitFor("the game", 10*time.Second, hasType("master"))
	to, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp", nil, to)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 10000
	var buf [1500]byte
	for i := range n {
		size := rng.IntN(len(buf))
		for j := range size {
			buf[j] = byte(rng.Uint32())
		}
		if i%2 == 1 && size >= 4 {
			// A truncated lagscope datagram: the right magic and version,
			// cut short somewhere in the header or the first record.
			size = 4 + rng.IntN(40)
			copy(buf[:], "LS\x01\x00")
		}
		if _, err := c.Write(buf[:size]); err != nil {
			t.Fatal(err)
		}
		if i%500 == 499 {
			time.Sleep(100 * time.Millisecond) // 5 000 a second: within the socket's buffer
		}
	}
	for _, p := range []*proc{host, bob} {
		if code := p.exit(40 * time.Second); code != 0 {
			t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
		}
	}
	sum := host.of("summary")[0]
	rej := sum["rejected"].(map[string]any)
	if total := rej["total"].(float64); total != n {
		t.Fatalf("host rejected %v datagrams of %d sent: %v", total, n, rej)
	}
	if a, b := timingKeys(host), timingKeys(bob); len(a) == 0 || !slices.Equal(a[:min(len(a), len(b))], b[:min(len(a), len(b))]) {
		t.Fatalf("timing differs or missing:\n%v\n%v", a, b)
	}
	for _, p := range []*proc{host, bob} {
		for _, e := range p.of("removed") {
			if e.str("player") != "bob" && e.str("player") != "alice" {
				t.Fatalf("%s: %v", p.name, e)
			}
			if e.num("t_ms") < 13000 {
				t.Fatalf("%s: someone removed at %v ms, before the end", p.name, e["t_ms"])
			}
		}
		for _, m := range p.of("message") {
			if strings.Contains(m.str("text"), "Desync") {
				t.Fatalf("%s: %v", p.name, m)
			}
		}
	}
}

// Bad flags: one line on stderr, exit 2, nothing on stdout.
func TestLiveFlagErrors(t *testing.T) {
	// A config dir of its own: another test's join may have saved a
	// last_host in the shared one, and join with no address would go there.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	cases := [][]string{
		{"host", "--players", "0"},
		{"host", "--players", "9999"},
		{"host", "--drop-timeout", "0s"},
		{"host", "--listen", "127.0.0.1:99999"},
		{"host", "--name", ""},
		{"host", "--name", "  spaced"},
		{"host", "--fps", "0"},
		{"host", "--duration", "-1s"},
		{"host", "--theme", "puce"},
		{"host", "--metrics", "nonsense"},
		{"host", "extra"},
		{"host", "--log", "/nonexistent-dir/x.log"},
		{"host", "--record", "/nonexistent-dir/x.lsrec"},
		{"join"},
		{"join", "a", "b"},
		{"join", "no-such-host.invalid:7373"},
		{"join", "127.0.0.1:0"},
		{"watch"},
		{"join", "127.0.0.1", "--key", ""},
		{"join", "127.0.0.1", "--bogus"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, errb.String())
			}
			if out.Len() != 0 {
				t.Fatalf("wrote to stdout: %q", out.String())
			}
			if lines := strings.Count(strings.TrimSpace(errb.String()), "\n"); lines != 0 || errb.Len() == 0 {
				t.Fatalf("stderr %q: want one line", errb.String())
			}
		})
	}
}

// A joiner whose host does not exist gives up with a one-line error and
// exit 1 (not a flag error: the address was fine).
func TestJoinNoHost(t *testing.T) {
	t.Parallel()
	l, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := l.LocalAddr().String()
	l.Close() // nobody there now
	var out, errb bytes.Buffer
	code := run([]string{"join", addr, "--json", "--name", "bob"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "does not answer") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// lagscope demo: one process, four players on their own loopback sockets
// with impaired links. Within its first seconds your links are measured,
// the master's first timing arrives and the demo says what it does to the
// network; a bare `lagscope` runs the same demo.
func TestDemoEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildLagscope(t)
	demo := startProc(t, bin, "demo", "demo", "--json", "--duration", "15s", "--seed", "3")
	if code := demo.exit(60 * time.Second); code != 0 {
		t.Fatalf("demo exited %d: %s", code, demo.stderr.String())
	}
	got := measuredLinks(demo, "you")
	for _, peer := range []string{"ada", "bob", "cyd"} {
		if !got[peer] {
			t.Errorf("link to %s never measured: %v", peer, got)
		}
	}
	if len(timingKeys(demo)) == 0 {
		t.Error("no timing event in 15 s")
	}
	var narrated bool
	for _, m := range demo.of("message") {
		narrated = narrated || strings.HasPrefix(m.str("text"), "Demo: ada's connection slows down")
	}
	if !narrated {
		t.Error("the spike was not announced")
	}
	sum := demo.of("summary")
	if len(sum) != 1 || sum[0]["process"] == nil {
		t.Fatalf("summary %v", sum)
	}
	proc := ndjson(sum[0]["process"].(map[string]any))
	if proc.num("datagrams_sent") < 1000 || proc.num("cpu_ms") <= 0 {
		t.Fatalf("process line %v", proc)
	}

	bare := startProc(t, bin, "bare", "--json", "--duration", "3s")
	if code := bare.exit(30 * time.Second); code != 0 {
		t.Fatalf("bare lagscope exited %d: %s", code, bare.stderr.String())
	}
	if first := bare.events()[0]; first.str("type") != "session" || first.str("name") != "you" || first.num("need") != 4 {
		t.Fatalf("bare lagscope's first line %v, want the demo's host", first)
	}
}

func TestDemoFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--players", "0"},
		{"demo", "--players", "1000"},
		{"demo", "--profile", "dialup"},
		{"demo", "extra"},
		{"demo", "--seed", "-1"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || out.Len() != 0 || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}

// Keyed by default, on loopback: a joiner without the code gets one line
// that says what to type and exits 1; one with the code is seated; --open
// and --key together are bad input.
func TestLiveHostKeyedByDefault(t *testing.T) {
	t.Parallel()
	bin := buildLagscope(t)
	host := startProc(t, bin, "alice", "host", "--name", "alice", "--listen", "127.0.0.1:0", "--players", "3",
		"--json", "--duration", "15s")
	addr := hostAddr(t, host)
	code := joinCode(t, host)
	stranger := startProc(t, bin, "eve", "join", addr, "--name", "eve", "--json", "--duration", "10s")
	if got := stranger.exit(15 * time.Second); got != 1 {
		t.Fatalf("a joiner without the code exited %d, want 1: %s", got, stranger.stderr.String())
	}
	if want := "lagscope join: this session needs its code: lagscope join " + addr + " --key CODE\n"; stranger.stderr.String() != want {
		t.Errorf("stderr %q, want %q", stranger.stderr.String(), want)
	}
	bob := startProc(t, bin, "bob", "join", addr, "--name", "bob", "--key", code, "--json", "--duration", "5s")
	bob.waitFor("a roster with bob seated", 10*time.Second, func(es []ndjson) bool {
		for _, e := range es {
			if e.str("type") == "roster" && strings.Contains(fmt.Sprint(e["players"]), "bob") {
				return true
			}
		}
		return false
	})
	var out, errb bytes.Buffer
	if code := run([]string{"host", "--open", "--key", "s3cret", "--listen", "127.0.0.1:0"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--open") {
		t.Errorf("host --open --key: exit %d, %q; want 2 naming --open", code, errb.String())
	}
}
