package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/live"
	"github.com/lagscope/lagscope/probe/session"
)

// Attacks on a live session with real processes on network namespaces,
// measured with the kernel's own counters (nftables): the redirect of a
// link by a member (docs/security.md, "Paths are verified before they
// carry a link") and watchers that never acknowledge (docs/live.md, "What
// watchers cost").

// The machines of the redirect attack, all on one bridge: the host ada,
// the player bob, the attacker mallory (an in-process watcher) and the
// victim, a machine that takes no part in the session.
var (
	atkHost   = netip.MustParseAddrPort("198.51.100.10:7373")
	atkBob    = netip.MustParseAddrPort("198.51.100.11:7373")
	atkMal    = netip.MustParseAddrPort("198.51.100.30:7373")
	atkSecond = netip.MustParseAddrPort("198.51.100.30:7374") // mallory's second socket
	atkVictim = netip.MustParseAddrPort("198.51.100.99:9999")
)

const (
	// redirectWindow is how long the victim's counter runs from the
	// moment mallory holds back its datagrams to bob: the bound is
	// "under 10 kB in 60 s".
	redirectWindow = 60 * time.Second
	redirectBound  = 10_000
)

// attackMode is what mallory's socket does with the session's datagrams
// to bob.
type attackMode int

const (
	attackPass     attackMode = iota // sent as the session sends them
	attackHold                       // held back, kept for the attack
	attackRedirect                   // sent from the victim's address
	attackSilent                     // checks to bob kept, answers to bob dropped, the rest sent
)

// malSocket is mallory's transport: a real UDP socket in its namespace
// that the session (session.NewJoiner, run by live.Run as `lagscope
// watch` runs it) sends through, with a second socket of mallory's own
// and a socket that sends from the victim's address (IP_TRANSPARENT:
// the kernel lets it use an address that is not its machine's; replies
// to it go to the real victim, on the bridge). It implements only
// live.Socket, so the driver reads it through its inbox.
type malSocket struct {
	main, second *netcore.UDPTransport
	spoof        *net.UDPConn
	bob          netip.AddrPort
	in           chan *netcore.Datagram
	quit         chan struct{}
	wg           sync.WaitGroup
	leaked       chan []byte // checks bob sent to the second socket

	mu           sync.Mutex
	mode         attackMode
	deaf         bool     // datagrams from bob are dropped unread
	checks       [][]byte // attackSilent: the session's checks to bob ("LP", kind 1), not sent
	held         [][]byte // session datagrams to bob held back (netcore's, "LS")
	answers      [][]byte // check answers the session made for bob ("LP", kind 2)
	fromBob      int      // datagrams from bob at the main socket
	spoofed      int      // datagrams sent from the victim's address
	spoofedBytes int
}

// newMalSocket opens mallory's sockets in namespace ns; bob is where
// bob's socket is.
func newMalSocket(t *testing.T, ns string, bob netip.AddrPort) *malSocket {
	t.Helper()
	m := &malSocket{bob: bob, in: make(chan *netcore.Datagram, 256), quit: make(chan struct{}), leaked: make(chan []byte, 8)}
	err := inNetnsDo(ns, func() error {
		var err error
		if m.main, err = netcore.ListenUDP(atkMal.String()); err != nil {
			return err
		}
		if m.second, err = netcore.ListenUDP(atkSecond.String()); err != nil {
			return err
		}
		lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_TRANSPARENT, 1)
			}); err != nil {
				return err
			}
			return serr
		}}
		pc, err := lc.ListenPacket(context.Background(), "udp4", atkVictim.String())
		if err != nil {
			return fmt.Errorf("a socket at the victim's address: %w", err)
		}
		m.spoof = pc.(*net.UDPConn)
		return nil
	})
	if err != nil {
		t.Fatalf("mallory's sockets in %s: %v", ns, err)
	}
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		for d := range m.main.Inbox() {
			if d.From == m.bob {
				m.mu.Lock()
				m.fromBob++
				deaf := m.deaf
				m.mu.Unlock()
				if deaf {
					d.Release()
					continue
				}
			}
			m.deliver(d)
		}
	}()
	go func() {
		// The second socket: a check from bob leaks its secret here, and
		// the session answers it as if it had come to the main socket.
		defer m.wg.Done()
		for d := range m.second.Inbox() {
			p := d.Bytes()
			if d.From != m.bob || !isCheckKind(p, 0x01) {
				d.Release()
				continue
			}
			select {
			case m.leaked <- slices.Clone(p):
			default:
			}
			d.From = m.bob
			m.deliver(d)
		}
	}()
	t.Cleanup(m.close)
	return m
}

// isCheckKind: p is a check (kind 1) or an answer (kind 2) of
// docs/protocol.md, "Check and answer".
func isCheckKind(p []byte, kind byte) bool {
	return len(p) >= 30 && p[0] == 'L' && p[1] == 'P' && p[2] == 1 && p[3] == kind
}

func (m *malSocket) deliver(d *netcore.Datagram) {
	select {
	case m.in <- d:
	case <-m.quit:
		d.Release()
	}
}

func (m *malSocket) Send(to netip.AddrPort, p []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if to != m.bob {
		return m.main.Send(to, p)
	}
	if isCheckKind(p, 0x02) {
		m.answers = append(m.answers, slices.Clone(p))
	}
	switch m.mode {
	case attackHold:
		if len(p) >= netcore.HeaderLen && p[1] == netcore.Magic1 {
			m.held = append(m.held, slices.Clone(p))
		}
		return nil
	case attackRedirect:
		return m.fromVictim(p)
	case attackSilent:
		switch {
		case isCheckKind(p, 0x01):
			m.checks = append(m.checks, slices.Clone(p))
			return nil
		case isCheckKind(p, 0x02):
			return nil
		}
	}
	return m.main.Send(to, p)
}

// fromVictim sends p to bob from the victim's address; m.mu is held.
func (m *malSocket) fromVictim(p []byte) error {
	m.spoofed++
	m.spoofedBytes += len(p)
	_, err := m.spoof.WriteToUDPAddrPort(p, m.bob)
	return err
}

func (m *malSocket) LocalAddr() netip.AddrPort       { return m.main.LocalAddr() }
func (m *malSocket) Inbox() <-chan *netcore.Datagram { return m.in }

func (m *malSocket) setMode(mode attackMode) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mode = mode
}

// heldFresh is a held datagram bob has never seen, at least as large as a
// check (bob checks a new source only for such a one), not taken before.
func (m *malSocket) heldFresh(taken *int) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	for ; *taken < len(m.held); *taken++ {
		if p := m.held[*taken]; len(p) >= 46 {
			*taken++
			return p
		}
	}
	return nil
}

// answerWith is the newest answer the session made for bob that carries
// secret tx.
func (m *malSocket) answerWith(tx uint64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.answers) - 1; i >= 0; i-- {
		if a := m.answers[i]; le64(a[18:]) == tx {
			return a
		}
	}
	return nil
}

func (m *malSocket) spoof1(p []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fromVictim(p)
}

func (m *malSocket) close() {
	select {
	case <-m.quit:
		return
	default:
	}
	close(m.quit)
	m.main.Close()
	m.second.Close()
	m.spoof.Close()
	m.wg.Wait()
	for {
		select {
		case d := <-m.in:
			d.Release()
		default:
			return
		}
	}
}

func le64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// malRun is mallory's session, run by the live driver, with the lines it
// printed (its messages and load results), as `lagscope watch --json`
// would print them.
type malRun struct {
	r     *live.Runner
	mu    sync.Mutex
	lines []ndjson
	done  chan struct{}
}

func startMallory(t *testing.T, sock *malSocket, key []byte) *malRun {
	t.Helper()
	return startMalloryWith(t, sock, session.Config{Key: key})
}

// startMalloryWith is startMallory with a config of the test's (its name
// is mallory's), over any socket of the test's.
func startMalloryWith(t *testing.T, sock live.Socket, cfg session.Config) *malRun {
	t.Helper()
	cfg.Name = "mallory"
	s, err := session.NewJoiner(cfg, session.RoleObserver, sock, atkHost)
	if err != nil {
		t.Fatal(err)
	}
	mr := &malRun{r: live.Run(s, sock, live.Options{Publish: true}), done: make(chan struct{})}
	go func() {
		defer close(mr.done)
		for u := range mr.r.Updates() {
			for _, e := range u.Events {
				b, err := json.Marshal(e)
				if err != nil {
					continue
				}
				var l ndjson
				if json.Unmarshal(b, &l) == nil {
					mr.mu.Lock()
					mr.lines = append(mr.lines, l)
					mr.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() { mr.stop(t) })
	return mr
}

func (mr *malRun) of(typ string) []ndjson {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	var out []ndjson
	for _, l := range mr.lines {
		if l.str("type") == typ {
			out = append(out, l)
		}
	}
	return out
}

// stop has mallory leave, as Ctrl-C would.
func (mr *malRun) stop(t *testing.T) {
	mr.r.Stop()
	select {
	case <-mr.r.Done():
	case <-time.After(15 * time.Second):
		mr.r.Abort()
		t.Errorf("mallory did not leave within 15 s")
		<-mr.r.Done()
	}
	<-mr.done
}

// flatLAN is an "internet" namespace with a bridge, and a machine on it
// for each address (its interface "wan").
func (n *netns) flatLAN(machines map[string]netip.Addr) map[string]string {
	inet := n.ns("inet")
	n.run("ip", "-n", inet, "link", "add", "br0", "type", "bridge")
	n.run("ip", "-n", inet, "link", "set", "br0", "up")
	out := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(machines)) {
		ns := n.ns(name)
		n.wire(inet, ns, machines[name].String()+"/24")
		out[name] = ns
	}
	return out
}

// nsProc starts the command in namespace ns with a config directory of
// the test's own (a joiner saves the host it joined there).
func nsProc(t *testing.T, bin, cfg, ns, name string, args ...string) *proc {
	return startProc(t, "ip", name, append([]string{"netns", "exec", ns, "env", "XDG_CONFIG_HOME=" + cfg, bin}, args...)...)
}

// TestNetnsRedirectAttack_Q7: the redirect attack of docs/security.md
// ("Paths are verified before they carry a link") by a member, with real
// processes. The host ada and the player bob run `lagscope`; mallory is a
// real watcher of the session (keyed: a holder of the code; open: a
// stranger, who needs none), whose socket holds back its datagrams to bob
// and sends one of them from a second socket of its own (bob checks that
// socket: the check's secret leaks), one from the victim's address (bob
// checks the victim), and answers the victim's check itself, from the
// victim's address, with the leaked secret — tagged under mallory's own
// check key with bob, which a member has: its session makes the answer
// (given bob's check as if it had come to its main socket, which also sets
// it punching). Then it does what it would with a link at the victim's
// address: for 6 s every datagram to bob, its checks included, goes from
// the victim's address, and it asks for a load test toward bob. bob's link
// never moves to an address that did not answer its own check: no "path
// moved"; its link lines to mallory are direct, and relayed through the
// host once bob gives up on a path that answers none of its checks; it
// counts the forged answer under rejected.path; what it sends the victim
// is checks and answers only (nft, in bob's namespace), and the victim's
// namespace counts under 10 kB in the 60 s from the hold on.
func TestNetnsRedirectAttack_Q7(t *testing.T) {
	if os.Getenv(netnsEnv) != "1" {
		t.Skip("network-namespace test: set " + netnsEnv + "=1 (needs root, iproute2 and nftables)")
	}
	bin := buildLagscope(t)
	t.Run("keyed", func(t *testing.T) {
		t.Parallel()
		runRedirectAttack(t, bin, true)
	})
	t.Run("open", func(t *testing.T) {
		t.Parallel()
		runRedirectAttack(t, bin, false)
	})
}

func runRedirectAttack(t *testing.T, bin string, keyed bool) {
	began := time.Now()
	prefix := "ro"
	if keyed {
		prefix = "rk"
	}
	n := newNetns(t, prefix, false, "ip", "nft")
	ns := n.flatLAN(map[string]netip.Addr{"h": atkHost.Addr(), "b": atkBob.Addr(), "m": atkMal.Addr(), "v": atkVictim.Addr()})
	v := atkVictim.Addr().String()
	// The victim counts every IP datagram that reaches it; bob what it
	// sends the victim and what reaches it from the victim's address.
	n.nft(ns["v"], "count", `table ip atk {
	counter rx { }
	chain pre { type filter hook prerouting priority -300; ip daddr `+v+` counter name rx; }
}
`)
	// A check or an answer is 46 bytes of UDP payload (udp length 54);
	// anything else bob sent the victim would be the link's own.
	n.nft(ns["b"], "count", `table ip atk {
	counter tovictim { }
	counter tovictimchecks { }
	counter fromvictim { }
	chain out {
		type filter hook output priority 0;
		ip daddr `+v+` counter name tovictim;
		ip daddr `+v+` udp length 54 @th,64,16 0x4c50 counter name tovictimchecks;
	}
	chain pre { type filter hook prerouting priority -300; ip saddr `+v+` counter name fromvictim; }
}
`)
	sink(t, ns["v"], atkVictim)
	victimCount := newNftReader(t, ns["v"], "atk")
	bobCount := newNftReader(t, ns["b"], "atk")

	cfg := t.TempDir()
	hostArgs := []string{"host", "--name", "ada", "--listen", atkHost.String(), "--players", "2", "--json", "--duration", "150s"}
	if !keyed {
		hostArgs = append(hostArgs, "--open")
	}
	host := nsProc(t, bin, cfg, ns["h"], "ada", hostArgs...)
	hostAddr(t, host)
	var key []byte
	var keyArgs []string
	if keyed {
		code := joinCode(t, host)
		key, keyArgs = []byte(code), []string{"--key", code}
	}
	bob := nsProc(t, bin, cfg, ns["b"], "bob", append([]string{"join", atkHost.String(), "--bind", atkBob.String(),
		"--name", "bob", "--json", "--duration", "150s"}, keyArgs...)...)
	// The game runs: bob's link lines are past frame 60.
	bob.waitFor("frame 60", 30*time.Second, func([]ndjson) bool { return lastFrame(bob).frame >= 60 })

	// mallory attaches and bob takes it in: its link lines to mallory,
	// and mallory hears bob at its socket.
	sock := newMalSocket(t, ns["m"], atkBob)
	mal := startMallory(t, sock, key)
	bobToMal := func(es []ndjson) bool {
		return slices.ContainsFunc(es, func(e ndjson) bool {
			return e.str("type") == "link" && e.str("from") == "bob" && e.str("to") == "mallory" && e.str("path") == "direct"
		})
	}
	bob.waitFor("a link line to mallory", 30*time.Second, bobToMal)
	time.Sleep(time.Second)
	sock.mu.Lock()
	heard := sock.fromBob
	sock.mu.Unlock()
	if heard == 0 {
		t.Fatal("mallory heard nothing from bob at its socket")
	}
	before, err := victimCount.read()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before["rx"]; !ok {
		t.Fatalf("the victim's counter is missing: %v", before)
	}

	// The victim's counter and bob's, every 100 ms from here: when the
	// victim's datagrams came.
	counts := startNftSampler(t, 100*time.Millisecond, redirectWindow+10*time.Second, victimCount, bobCount)

	// 1. Hold back every datagram to bob.
	linesBefore := bob.of("link")
	holdAt := time.Now()
	sock.setMode(attackHold)
	taken := 0
	fresh := func(what string) []byte {
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if p := sock.heldFresh(&taken); p != nil {
				return p
			}
		}
		t.Fatalf("mallory's session sent bob nothing to use for %s within 3 s", what)
		return nil
	}
	// 2. One of them from the second socket: bob checks that socket, and
	// the check's secret leaks there.
	p := fresh("the second socket")
	if err := sock.second.Send(atkBob, p); err != nil {
		t.Fatal(err)
	}
	secondAt := time.Now()
	var leaked []byte
	select {
	case leaked = <-sock.leaked:
	case <-time.After(3 * time.Second):
		t.Fatal("bob sent no check to mallory's second socket within 3 s")
	}
	tx := le64(leaked[18:])
	t.Logf("bob checked mallory's second socket %v after a %d-byte datagram from it: secret %#x", time.Since(secondAt).Round(time.Millisecond), len(p), tx)
	// mallory's session answers that check (it came in as if at the main
	// socket), tagged under mallory's own key with bob: the forged answer.
	var answer []byte
	for end := time.Now().Add(3 * time.Second); answer == nil && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		answer = sock.answerWith(tx)
	}
	if answer == nil {
		t.Fatal("mallory's session made no answer to bob's check within 3 s")
	}
	// 3. One from the victim's address, past the 250 ms a pair's new
	// sources are checked at most once in: bob checks the victim.
	time.Sleep(time.Until(secondAt.Add(400 * time.Millisecond)))
	if err := sock.spoof1(fresh("the victim's address")); err != nil {
		t.Fatal(err)
	}
	// 4. The answer, from the victim's address, with the secret that
	// leaked at the second socket: it proves the second socket, not the
	// victim. Sent three times, 100 ms apart, so that at least one comes
	// after bob's check to the victim went out.
	forged := 0
	for range 3 {
		time.Sleep(100 * time.Millisecond)
		if err := sock.spoof1(answer); err != nil {
			t.Fatal(err)
		}
		forged++
	}
	mid, err := victimCount.read()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the victim got %d datagrams (%d bytes) by the forged answers", mid["rx"].packets-before["rx"].packets, mid["rx"].bytes-before["rx"].bytes)
	// 5. What the attack does with a link that moved: everything to bob
	// from the victim's address for 6 s, and a load test asked for (a
	// watcher's own session refuses to ask; bob would serve only a seated
	// player that holds the host's turn).
	sock.setMode(attackRedirect)
	mal.r.Control(feed.Control{LoadTest: "bob"})
	time.Sleep(6 * time.Second)
	for _, l := range mal.of("load") {
		t.Logf("mallory's load test: %v", l)
	}
	for _, m := range mal.of("message") {
		if strings.Contains(strings.ToLower(m.str("text")), "load") {
			t.Logf("mallory: %s", m.str("text"))
		}
	}
	mal.stop(t)
	sock.mu.Lock()
	spoofed, spoofedBytes := sock.spoofed, sock.spoofedBytes
	sock.mu.Unlock()
	sock.close()
	t.Logf("mallory sent bob %d datagrams (%d bytes) from the victim's address; attack over %v after the hold",
		spoofed, spoofedBytes, time.Since(holdAt).Round(time.Millisecond))

	// 6. The victim's counter over the window from the hold on.
	time.Sleep(time.Until(holdAt.Add(redirectWindow)))
	after, err := victimCount.read()
	if err != nil {
		t.Fatal(err)
	}
	atBob, err := bobCount.read()
	if err != nil {
		t.Fatal(err)
	}
	samples, _, err := counts.taken()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*proc{host, bob} {
		p.cmd.Process.Signal(os.Interrupt)
	}
	for _, p := range []*proc{host, bob} {
		if code := p.exit(30 * time.Second); code != 0 {
			t.Fatalf("%s exited %d after Ctrl-C: %s", p.name, code, p.stderr.String())
		}
	}

	got := after["rx"].bytes - before["rx"].bytes
	t.Logf("the victim received %d datagrams, %d bytes (IP), in %v from the hold; by half second from the hold to the last: %v",
		after["rx"].packets-before["rx"].packets, got, redirectWindow, perHalfSecond(samples, ns["v"], "rx", holdAt, before["rx"].packets))
	t.Logf("bob sent the victim %d datagrams (%d bytes), %d of them checks or answers; %d datagrams (%d bytes) reached bob from the victim's address",
		atBob["tovictim"].packets, atBob["tovictim"].bytes, atBob["tovictimchecks"].packets, atBob["fromvictim"].packets, atBob["fromvictim"].bytes)
	if got >= redirectBound {
		t.Errorf("the victim received %d bytes in %v, want under %d", got, redirectWindow, redirectBound)
	}
	if after["rx"].packets == before["rx"].packets {
		t.Errorf("bob never checked the victim: the datagram from the victim's address did not reach bob as mallory's, so the attack proved nothing")
	}
	// Nothing of the link went to the victim: only checks and answers.
	if other := atBob["tovictim"].packets - atBob["tovictimchecks"].packets; other != 0 {
		t.Errorf("bob sent the victim %d datagrams that are not checks or answers: the link's own traffic", other)
	}
	for _, m := range bob.of("message") {
		text := m.str("text")
		if strings.Contains(text, "path moved") || strings.Contains(text, atkVictim.Addr().String()) || strings.Contains(text, atkSecond.String()) {
			t.Errorf("bob: %q", text)
		}
		if strings.Contains(text, "mallory") {
			t.Logf("bob: %s", text)
		}
	}
	// bob's link to mallory stays at mallory's real address: direct, or,
	// once mallory answers no check of bob's (it holds its datagrams
	// back), relayed through the host, which sends them to the address
	// mallory joined from.
	byPath := map[string]int{}
	for _, e := range bob.of("link") {
		if e.str("from") == "bob" && e.str("to") == "mallory" {
			byPath[e.str("path")]++
			if e.str("path") != "direct" && e.str("path") != "relayed" {
				t.Errorf("bob's link to mallory: %v", e)
			}
		}
	}
	directBefore := 0
	for _, e := range linesBefore {
		if e.str("from") == "bob" && e.str("to") == "mallory" && e.str("path") == "direct" {
			directBefore++
		}
	}
	if directBefore == 0 {
		t.Errorf("bob printed no direct link line to mallory before the attack (%v)", byPath)
	}
	t.Logf("bob's link lines to mallory by path: %v", byPath)
	for _, sum := range host.of("summary") {
		if rel, ok := sum["relay"].([]any); ok {
			for _, r := range rel {
				t.Logf("the host relayed %v", r)
			}
		}
	}
	sums := bob.of("summary")
	if len(sums) != 1 {
		t.Fatalf("bob printed %d summaries", len(sums))
	}
	rej, _ := sums[0]["rejected"].(map[string]any)
	path, ok := rej["path"].(float64)
	if !ok {
		t.Fatalf("bob's summary has no rejected.path: %v", sums[0]["rejected"])
	}
	t.Logf("bob rejected: %v (%d forged answers sent)", rej, forged)
	if path < 1 {
		t.Errorf("bob counted %v path refusals, want the forged answer's", path)
	}
	t.Logf("run took %v", time.Since(began).Round(time.Second))
}

// perHalfSecond is how many datagrams a counter of namespace ns counted
// in each half second from start on, by the sampler's readings; base is
// its count at start.
func perHalfSecond(samples []nftSample, ns, name string, start time.Time, base uint64) []uint64 {
	var out []uint64
	last := base
	for _, s := range samples {
		k := int(s.at.Sub(start) / (500 * time.Millisecond))
		if k < 0 {
			continue
		}
		for len(out) <= k {
			out = append(out, 0)
		}
		c := s.counts[ns][name].packets
		out[k] += c - last
		last = c
	}
	for len(out) > 0 && out[len(out)-1] == 0 {
		out = out[:len(out)-1]
	}
	return out
}

// unansweredBound is the most an address that never answers a check gets
// from one pair of the session on its own, in UDP payload bytes
// (docs/security.md, "Paths are verified before they carry a link"): 8
// checks of 46 bytes and 3 primes of 30, beside one answer, of its own
// size, to each check sent from the address.
const unansweredBound = 8*46 + 3*30

// TestNetnsUnansweredAddressBounded_Q7: hole punching cannot be turned on
// a third party, with real processes (the host ada and the player bob run
// `lagscope`, keyed) and the kernel's counters. mallory, an in-process
// watcher of the session on bob's LAN (a holder of the code), tries two
// ways:
//
//   - spoofed: it hears nothing from bob and answers none of bob's checks,
//     so its session punches; it keeps its checks to bob and sends one of
//     them, tagged under its own key with bob, from the victim's address.
//     bob's pair with a late watcher is not settled, so the check starts
//     bob punching: it answers the victim once and checks it, then relays
//     through the host after 3 s;
//   - listed: it names the victim as its local address (Config.LocalAddrs)
//     and sends bob nothing, so bob punches toward every address the host's
//     table lists for it, the victim's among them, primes included (bob's
//     socket sets hop limits; on one LAN the primes arrive).
//
// The victim's namespace counts everything that reaches it, bob's what it
// sends there by kind: only checks, answers and primes, and beyond one
// answer to the spoofed check, at most unansweredBound bytes of payload.
func TestNetnsUnansweredAddressBounded_Q7(t *testing.T) {
	if os.Getenv(netnsEnv) != "1" {
		t.Skip("network-namespace test: set " + netnsEnv + "=1 (needs root, iproute2 and nftables)")
	}
	bin := buildLagscope(t)
	t.Run("spoofed", func(t *testing.T) {
		t.Parallel()
		runUnanswered(t, bin, false)
	})
	t.Run("listed", func(t *testing.T) {
		t.Parallel()
		runUnanswered(t, bin, true)
	})
}

func runUnanswered(t *testing.T, bin string, listed bool) {
	began := time.Now()
	prefix := "us"
	if listed {
		prefix = "ul"
	}
	n := newNetns(t, prefix, false, "ip", "nft")
	ns := n.flatLAN(map[string]netip.Addr{"h": atkHost.Addr(), "b": atkBob.Addr(), "m": atkMal.Addr(), "v": atkVictim.Addr()})
	v := atkVictim.Addr().String()
	n.nft(ns["v"], "count", `table ip atk {
	counter rx { }
	chain pre { type filter hook prerouting priority -300; ip daddr `+v+` counter name rx; }
}
`)
	// docs/protocol.md: a check, an answer and a prime start "LP", version
	// 1, then their kind: 1, 2 and 3.
	n.nft(ns["b"], "count", `table ip atk {
	counter tovictim { }
	counter check { }
	counter answer { }
	counter prime { }
	chain out {
		type filter hook output priority 0;
		ip daddr `+v+` counter name tovictim;
		ip daddr `+v+` meta l4proto udp @th,64,32 0x4c500101 counter name check;
		ip daddr `+v+` meta l4proto udp @th,64,32 0x4c500102 counter name answer;
		ip daddr `+v+` meta l4proto udp @th,64,32 0x4c500103 counter name prime;
	}
}
`)
	sink(t, ns["v"], atkVictim)
	victimCount := newNftReader(t, ns["v"], "atk")
	bobCount := newNftReader(t, ns["b"], "atk")

	cfg := t.TempDir()
	host := nsProc(t, bin, cfg, ns["h"], "ada", "host", "--name", "ada", "--listen", atkHost.String(), "--players", "2", "--json", "--duration", "90s")
	hostAddr(t, host)
	code := joinCode(t, host)
	bob := nsProc(t, bin, cfg, ns["b"], "bob", "join", atkHost.String(), "--bind", atkBob.String(), "--name", "bob", "--json",
		"--duration", "90s", "--key", code)
	bob.waitFor("frame 60", 30*time.Second, func([]ndjson) bool { return lastFrame(bob).frame >= 60 })

	sock := newMalSocket(t, ns["m"], atkBob)
	mcfg := session.Config{Key: []byte(code)}
	if listed {
		mcfg.LocalAddrs = []netip.AddrPort{atkVictim}
		sock.setMode(attackHold)
	} else {
		sock.mu.Lock()
		sock.deaf, sock.mode = true, attackSilent
		sock.mu.Unlock()
	}
	mal := startMalloryWith(t, sock, mcfg)
	relayed := func(es []ndjson) bool {
		return slices.ContainsFunc(es, func(e ndjson) bool {
			return e.str("type") == "message" && strings.HasPrefix(e.str("text"), "bob ↔ mallory: no direct path")
		})
	}
	spoofed, spoofedBytes := 0, 0
	if !listed {
		// mallory's session punches once it has heard nothing from bob for
		// 2 s: its first check to bob, kept back, goes from the victim.
		var c []byte
		for end := time.Now().Add(20 * time.Second); c == nil && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			sock.mu.Lock()
			if len(sock.checks) > 0 {
				c = sock.checks[0]
			}
			sock.mu.Unlock()
		}
		if c == nil {
			t.Fatal("mallory's session sent bob no check within 20 s")
		}
		if relayed(bob.events()) {
			t.Fatal("bob relayed to mallory before the spoofed check: its pair was settled, the test proves nothing")
		}
		if err := sock.spoof1(c); err != nil {
			t.Fatal(err)
		}
		spoofed, spoofedBytes = 1, len(c)
	}
	// bob punches, then relays 3 s on; what it sends the victim after that
	// is counted for 10 s more.
	bob.waitFor("bob's relay to mallory", 40*time.Second, relayed)
	time.Sleep(10 * time.Second)
	got, err := victimCount.read()
	if err != nil {
		t.Fatal(err)
	}
	atBob, err := bobCount.read()
	if err != nil {
		t.Fatal(err)
	}
	mal.stop(t)
	sock.close()
	for _, p := range []*proc{host, bob} {
		p.cmd.Process.Signal(os.Interrupt)
	}
	for _, p := range []*proc{host, bob} {
		if code := p.exit(30 * time.Second); code != 0 {
			t.Fatalf("%s exited %d after Ctrl-C: %s", p.name, code, p.stderr.String())
		}
	}
	for _, m := range bob.of("message") {
		if strings.Contains(m.str("text"), "mallory") {
			t.Logf("bob: %s", m.str("text"))
		}
	}
	rx := got["rx"]
	t.Logf("from mallory's start, %v: the victim received %d datagrams, %d bytes (IP), %d of UDP payload; bob sent it %d checks, %d answers, %d primes (%d datagrams in all); %d spoofed check of %d bytes",
		time.Since(began).Round(time.Second), rx.packets, rx.bytes, rx.payload(), atBob["check"].packets, atBob["answer"].packets,
		atBob["prime"].packets, atBob["tovictim"].packets, spoofed, spoofedBytes)
	if other := atBob["tovictim"].packets - atBob["check"].packets - atBob["answer"].packets - atBob["prime"].packets; other != 0 {
		t.Errorf("bob sent the victim %d datagrams that are not checks, answers or primes", other)
	}
	if rx.packets != atBob["tovictim"].packets {
		t.Errorf("the victim received %d datagrams, bob sent it %d", rx.packets, atBob["tovictim"].packets)
	}
	if atBob["check"].packets == 0 {
		t.Errorf("bob never checked the victim: the attack proved nothing")
	}
	if a := atBob["answer"]; a.packets > uint64(spoofed) || a.payload() > uint64(spoofedBytes) {
		t.Errorf("bob answered the victim %d times (%d bytes) for %d checks from its address", a.packets, a.payload(), spoofed)
	}
	if beyond := rx.payload() - atBob["answer"].payload(); beyond > unansweredBound {
		t.Errorf("the victim received %d bytes of payload beyond the answers, want at most %d", beyond, unansweredBound)
	}
}

// The watchers test's machines: the host ada and the players bob and cyd
// on the bridge, and the watchers in one namespace, each at an address of
// its own in watchNet (the host's handshake budget is per source
// address).
var (
	wHost    = netip.MustParseAddrPort("198.51.100.10:7373")
	wBob     = netip.MustParseAddrPort("198.51.100.11:7373")
	wCyd     = netip.MustParseAddrPort("198.51.100.12:7373")
	watchNet = netip.MustParsePrefix("198.51.100.128/26")
)

const (
	nWatchers   = 64
	neverAckFor = 35 * time.Second
	// keepAliveUDP is a watcher's keep-alive as nft's udp length sees it:
	// 8 bytes of UDP header and a sealed "alive" KeepAlive of 65 bytes
	// (docs/protocol.md: header 24, seal prefix 16, the record's 3 + 5 and
	// its 1-byte message, tag 16). An ack, a telemetry ack, a link report
	// or a keep-alive with an ack beside it is longer.
	keepAliveUDP = 8 + 24 + 16 + 3 + 5 + 1 + 16
)

func watcherAddr(i int) netip.Addr {
	a := watchNet.Addr().As4()
	a[3] += byte(i)
	return netip.AddrFrom4(a)
}

// watchBound is the most the watchers' budget lets a machine send all
// its watchers over span, in datagram bytes (docs/live.md, "What watchers
// cost"): every player's bucket refills at 28 KiB/s and holds 4 KiB; the
// feeder's extra, at 48 KiB/s holding 16 KiB. Over a second: 32 KiB, and
// 96 KiB for the feeder.
func watchBound(span time.Duration, feeder bool) float64 {
	rate, burst := 28.0*1024, 4.0*1024
	if feeder {
		rate, burst = rate+48*1024, burst+16*1024
	}
	return burst + rate*span.Seconds()
}

// TestNetnsWatchersThatNeverAcknowledge_Q7: 64 `lagscope watch` processes
// follow a game of three (`lagscope host` and two `join`s, each in a
// namespace of its own); once they all do, an nft rule in their namespace
// drops everything they send but their keep-alives, so the players keep
// hearing them (a silent watcher is dropped after 5 s) and get no
// acknowledgement of anything. The kernel's counters in each player's
// namespace, read every 100 ms from the watchers' start to the end, count
// what it sends the watchers: in every window of ten readings (a second)
// the host sends them at most 96 KiB and each other player at most 32 KiB
// (datagram bytes; a window the sampler stretched is held to the budget
// of its length). The host's handshake replies to the arriving watchers
// are counted apart (checkWatchWindows).
func TestNetnsWatchersThatNeverAcknowledge_Q7(t *testing.T) {
	began := time.Now()
	n := newNetns(t, "wn", false, "ip", "nft")
	ns := n.flatLAN(map[string]netip.Addr{"h": wHost.Addr(), "b": wBob.Addr(), "c": wCyd.Addr(), "w": watcherAddr(0)})
	var more strings.Builder
	for i := 1; i < nWatchers; i++ {
		fmt.Fprintf(&more, "addr add %v/24 dev wan\n", watcherAddr(i))
	}
	batch := t.TempDir() + "/addrs"
	if err := os.WriteFile(batch, []byte(more.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	n.run("ip", "-n", ns["w"], "-batch", batch)
	w := watchNet.String()
	for _, p := range []string{"h", "b", "c"} {
		// What each player sends the watchers, in all and by kind: primes
		// (an "LP" of kind 3), checks and answers (the other "LP"s),
		// handshake replies (an "LS" with token 0), relay frames ("LR"); the
		// rest is the session's own. And what it receives from them.
		n.nft(ns[p], "count", `table ip wb {
	counter tow { }
	counter prime { }
	counter path { }
	counter handshake { }
	counter relay { }
	counter fromw { }
	counter fromwother { }
	chain out {
		type filter hook output priority 0;
		ip daddr `+w+` meta l4proto udp counter name tow;
		ip daddr `+w+` meta l4proto udp @th,64,32 0x4c500103 counter name prime;
		ip daddr `+w+` meta l4proto udp @th,64,16 0x4c50 @th,88,8 != 3 counter name path;
		ip daddr `+w+` meta l4proto udp @th,64,16 0x4c53 @th,96,64 0 counter name handshake;
		ip daddr `+w+` meta l4proto udp @th,64,16 0x4c52 counter name relay;
	}
	chain pre {
		type filter hook prerouting priority -300;
		ip saddr `+w+` meta l4proto udp counter name fromw;
		ip saddr `+w+` meta l4proto udp udp length != `+fmt.Sprint(keepAliveUDP)+` counter name fromwother;
	}
}
`)
	}
	n.nft(ns["w"], "count", `table ip wb {
	counter ka { }
	counter other { }
	counter dropped { }
	chain out {
		type filter hook output priority 0;
		meta l4proto udp udp length `+fmt.Sprint(keepAliveUDP)+` counter name ka;
		meta l4proto udp udp length != `+fmt.Sprint(keepAliveUDP)+` counter name other;
	}
}
`)
	readers := map[string]*nftReader{}
	for _, p := range []string{"h", "b", "c", "w"} {
		readers[p] = newNftReader(t, ns[p], "wb")
	}

	bin := buildLagscope(t)
	cfg := t.TempDir()
	host := nsProc(t, bin, cfg, ns["h"], "ada", "host", "--name", "ada", "--listen", wHost.String(), "--players", "3", "--json", "--duration", "300s")
	hostAddr(t, host)
	code := joinCode(t, host)
	bob := nsProc(t, bin, cfg, ns["b"], "bob", "join", wHost.String(), "--key", code, "--bind", wBob.String(), "--name", "bob", "--json", "--duration", "300s")
	cyd := nsProc(t, bin, cfg, ns["c"], "cyd", "join", wHost.String(), "--key", code, "--bind", wCyd.String(), "--name", "cyd", "--json", "--duration", "300s")
	players := []*proc{host, bob, cyd}
	host.waitFor("frame 60", 30*time.Second, func([]ndjson) bool { return lastFrame(host).frame >= 60 })

	// From here the counters every 100 ms.
	sampler := startNftSampler(t, 100*time.Millisecond, 3*time.Minute, readers["h"], readers["b"], readers["c"], readers["w"])
	start := time.Now()
	watchers := make([]*proc, nWatchers)
	for i := range watchers {
		watchers[i] = nsProc(t, bin, cfg, ns["w"], fmt.Sprintf("w%02d", i), "watch", wHost.String(), "--key", code,
			"--bind", netip.AddrPortFrom(watcherAddr(i), 7373).String(), "--name", fmt.Sprintf("w%02d", i), "--json", "--duration", "300s")
	}
	attached := func(es []ndjson) bool {
		return slices.ContainsFunc(es, func(e ndjson) bool {
			return e.str("type") == "message" && strings.HasPrefix(e.str("text"), "Watching a game in progress from frame")
		})
	}
	for _, p := range watchers {
		p.waitFor("its attach", time.Until(start.Add(60*time.Second)), attached)
	}
	allIn := time.Now()
	t.Logf("%d watchers attached within %v of their start", nWatchers, allIn.Sub(start).Round(time.Millisecond))

	// What the watchers send while they follow, by size and destination,
	// captured on their interface for 3 s: the keep-alives are the
	// datagrams of keepAliveUDP, about one a second from each watcher to
	// each player.
	tap := tapInterface(t, ns["w"], "wan", 7373)
	const tapFor = 3 * time.Second
	time.Sleep(tapFor)
	sizes := map[string]int{}
	kas := 0
	for _, p := range tap.packets() {
		if !p.out || !watchNet.Contains(p.src.Addr()) {
			continue
		}
		to := "player"
		if p.dst == wHost {
			to = "host"
		}
		sizes[fmt.Sprintf("%s %dB", to, p.size)]++
		if p.size+8 == keepAliveUDP {
			kas++
		}
	}
	t.Logf("the watchers' datagrams in %v, by destination and payload size: %v", tapFor, sizes)
	perPair := float64(kas) / (nWatchers * 3 * tapFor.Seconds())
	t.Logf("%d keep-alives (%d bytes of payload): %.2f a second per watcher and player", kas, keepAliveUDP-8, perPair)
	if perPair < 0.6 || perPair > 1.4 {
		t.Fatalf("%.2f datagrams of %d bytes a second from each watcher to each player: not the keep-alives (one a second)", perPair, keepAliveUDP-8)
	}

	// From now on the watchers acknowledge nothing: everything but their
	// keep-alives is dropped on its way out.
	n.run("ip", "netns", "exec", ns["w"], "nft", "add", "rule", "ip", "wb", "out",
		"meta", "l4proto", "udp", "udp", "length", "!=", fmt.Sprint(keepAliveUDP), "counter", "name", "dropped", "drop")
	dropAt := time.Now()
	time.Sleep(100 * time.Millisecond) // what was on the wire has arrived
	heard := map[string]map[string]nftCount{}
	for _, p := range []string{"h", "b", "c", "w"} {
		c, err := readers[p].read()
		if err != nil {
			t.Fatal(err)
		}
		heard[p] = c
	}
	for end := dropAt.Add(neverAckFor); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		for _, p := range players {
			select {
			case <-p.done:
				t.Fatalf("%s ended while the watchers acknowledged nothing: %v\n%s", p.name, p.err, p.stderr.String())
			default:
			}
		}
	}
	endAt := time.Now()
	samples, late, err := sampler.taken()
	if err != nil {
		t.Fatal(err)
	}
	said := map[*proc][]ndjson{}
	for _, p := range players {
		said[p] = p.of("message")
	}
	for _, p := range watchers {
		p.cmd.Process.Kill()
	}
	for _, p := range players {
		p.cmd.Process.Signal(os.Interrupt)
	}
	for _, p := range players {
		if code := p.exit(30 * time.Second); code != 0 {
			t.Fatalf("%s exited %d after Ctrl-C: %s", p.name, code, p.stderr.String())
		}
	}

	// The watchers never acknowledged, and every player kept hearing them.
	last := samples[len(samples)-1].counts
	t.Logf("until the drop the watchers sent %d keep-alives and %d other datagrams; in the %v without acknowledgements, %d keep-alives (%.0f a second), and %d datagrams were dropped",
		heard["w"]["ka"].packets, heard["w"]["other"].packets, neverAckFor, last[ns["w"]]["ka"].packets-heard["w"]["ka"].packets,
		float64(last[ns["w"]]["ka"].packets-heard["w"]["ka"].packets)/endAt.Sub(dropAt).Seconds(), last[ns["w"]]["dropped"].packets)
	if last[ns["w"]]["dropped"].packets == 0 {
		t.Errorf("no datagram of the watchers was dropped: they acknowledged as usual")
	}
	for _, p := range []string{"h", "b", "c"} {
		if got, was := last[ns[p]]["fromwother"].packets, heard[p]["fromwother"].packets; got != was {
			t.Errorf("%s received %d datagrams from the watchers other than keep-alives after the drop", ns[p], got-was)
		}
		if last[ns[p]]["fromw"].packets == heard[p]["fromw"].packets {
			t.Errorf("%s heard nothing from the watchers after the drop", ns[p])
		}
	}
	for _, p := range players {
		for _, m := range said[p] {
			if strings.Contains(m.str("text"), "went silent") {
				t.Errorf("%s: %s", p.name, m.str("text"))
			}
		}
	}

	// Every window of ten readings, from the watchers' start to the end.
	t.Logf("%d readings, each at most %v late", len(samples), late.Round(time.Millisecond))
	checkWatchWindows(t, samples, start, dropAt, endAt, "ada", ns["h"], true)
	checkWatchWindows(t, samples, start, dropAt, endAt, "bob", ns["b"], false)
	checkWatchWindows(t, samples, start, dropAt, endAt, "cyd", ns["c"], false)
	t.Logf("run took %v", time.Since(began).Round(time.Second))
}

// checkWatchWindows judges one player's upload to the watchers (its
// namespace's counters) over every window of ten readings between start
// and end. The budget holds what goes to the watchers as members of the
// session; the host's handshake replies to a watcher that is joining (its
// Challenge and Welcome) have the handshake's own budget (docs/security.md,
// "Handshake budget") and are judged apart: they are logged, with the
// most the window held in all. It logs the worst window by kind of
// datagram, and the rates before and after dropAt.
func checkWatchWindows(t *testing.T, samples []nftSample, start, dropAt, end time.Time, name, ns string, feeder bool) {
	t.Helper()
	kinds := []string{"prime", "path", "handshake", "relay"}
	member := func(s nftSample) uint64 { return s.counts[ns]["tow"].payload() - s.counts[ns]["handshake"].payload() }
	var worst, most, mostAll float64
	var worstFrom, worstTo, mostFrom, mostAllFrom nftSample
	var mostSpan, mostAllSpan time.Duration
	windows := 0
	for i := 0; i+10 < len(samples); i++ {
		a, b := samples[i], samples[i+10]
		if a.at.Before(start) || b.at.After(end) {
			continue
		}
		windows++
		// The bytes between the two readings left within this span at
		// most: from the start of the first reading to the end of the
		// second.
		span := b.to[ns].Sub(a.from[ns])
		bytes := float64(member(b) - member(a))
		bound := watchBound(span, feeder)
		if bytes > bound {
			t.Errorf("%s sent its watchers %.0f bytes in the %v from %v after their start: over the budget's %.0f",
				name, bytes, span.Round(time.Millisecond), a.at.Sub(start).Round(time.Millisecond), bound)
		}
		if bytes/bound > worst {
			worst, worstFrom, worstTo = bytes/bound, a, b
		}
		if bytes > most {
			most, mostFrom, mostSpan = bytes, a, span
		}
		if all := float64(b.counts[ns]["tow"].payload() - a.counts[ns]["tow"].payload()); all > mostAll {
			mostAll, mostAllFrom, mostAllSpan = all, a, span
		}
	}
	if windows < 100 {
		t.Fatalf("%s: %d windows of readings, too few to judge", name, windows)
	}
	by := []string{}
	rest := worstTo.counts[ns]["tow"].payload() - worstFrom.counts[ns]["tow"].payload()
	for _, k := range kinds {
		v := worstTo.counts[ns][k].payload() - worstFrom.counts[ns][k].payload()
		rest -= v
		by = append(by, fmt.Sprintf("%s %d", k, v))
	}
	by = append(by, fmt.Sprintf("the session's own %d", rest))
	total := func(at time.Time) float64 {
		var v nftCount
		for _, s := range samples {
			if s.at.After(at) {
				break
			}
			v = s.counts[ns]["tow"]
		}
		return float64(v.payload())
	}
	t.Logf("%s to its watchers: the most in a window %.1f kB (%.1f KiB) in %v, %v after their start; at most %.1f %% of the budget, %v after their start (that window's bytes: %s); %.1f kB/s while they arrived and followed, %.1f kB/s without acknowledgements",
		name, most/1000, most/1024, mostSpan.Round(time.Millisecond), mostFrom.at.Sub(start).Round(100*time.Millisecond),
		100*worst, worstFrom.at.Sub(start).Round(100*time.Millisecond), strings.Join(by, ", "),
		(total(dropAt)-total(start))/dropAt.Sub(start).Seconds()/1000, (total(end)-total(dropAt))/end.Sub(dropAt).Seconds()/1000)
	if samples[len(samples)-1].counts[ns]["handshake"].packets != samples[0].counts[ns]["handshake"].packets {
		t.Logf("%s to its watchers with the handshake replies: the most in a window %.1f kB (%.1f KiB) in %v, %v after their start, %.1f %% of the budget's %.1f KiB",
			name, mostAll/1000, mostAll/1024, mostAllSpan.Round(time.Millisecond), mostAllFrom.at.Sub(start).Round(100*time.Millisecond),
			100*mostAll/watchBound(mostAllSpan, feeder), watchBound(mostAllSpan, feeder)/1024)
	}
}
