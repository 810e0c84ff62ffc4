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
				m.mu.Unlock()
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
	s, err := session.NewJoiner(session.Config{Name: "mallory", Key: key}, session.RoleObserver, sock, atkHost)
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

// TestNetnsRedirectAttack_Q7: the attack that once moved a live link to a
// third party, by a member with real processes. The host ada and the
// player bob run `lagscope`; mallory is a real watcher of the session
// (keyed: a holder of the code; open: a stranger, who needs none), whose
// socket holds back its datagrams to bob and sends one of them from a
// second socket of its own (bob checks that socket: the check's secret
// leaks), one from the victim's address (bob checks the victim), and
// answers the victim's check itself, from the victim's address, with the
// leaked secret — tagged under mallory's own check key with bob, which a
// member has: its session makes the answer. Then it asks bob for a load
// test with every datagram to bob sent from the victim's address, as it
// did once the link had moved (the victim then received 191 MB). bob's
// link never moves to an address that did not answer its own check: no
// "path moved", its link lines to mallory stay direct, it counts the
// forged answer under rejected.path, and the victim's namespace counts
// under 10 kB in the 60 s from the hold on.
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
	// 5. What the attack did once the link had moved: a load test asked
	// for, every datagram to bob from the victim's address, until
	// mallory's test gives up (or 6 s).
	sock.setMode(attackRedirect)
	mal.r.Control(feed.Control{LoadTest: "bob"})
	for end := time.Now().Add(6 * time.Second); len(mal.of("load")) == 0 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	for _, l := range mal.of("load") {
		t.Logf("mallory's load test: %v", l)
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
