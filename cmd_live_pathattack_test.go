package main

// The forged-nomination attack on a live session, with the real binary on
// loopback. A stranger attaches as a watcher for a moment, reads the
// session token and the players' PeerIDs and addresses off the plaintext
// headers of the datagrams that reach its socket, leaves, and then sends
// one connectivity check per direction (docs/protocol.md, "Session
// datagrams: checks and relay frames") to a player, from a third party's
// address, claiming to come from the other player and nominating that
// address. A link moves only to an address that answered a check of its
// own machine's (docs/security.md, "Paths are verified before they carry
// a link"), so the third party gets nothing and the game goes on; a
// machine that took the nomination would point the pair's traffic at the
// third party and the game would freeze.
//
// With --key only a member can attach: the member learns the token the
// same way, and the stranger's checks use it too (a stranger who knows
// the token still lacks the key).

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"maps"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/live"
	"github.com/lagscope/lagscope/probe/session"
)

// attackWindow is how long the session runs after the forged checks.
const attackWindow = 18 * time.Second

// sniffSocket is the stranger's socket: a UDP transport whose inbound
// datagrams it reads on the way to the session. A netcore header is not
// encrypted, with or without a key (docs/protocol.md, "Header"): bytes
// 4–11 are the session token, 12–13 the sender's PeerID. It implements
// only live.Socket, so the driver reads it through its inbox.
type sniffSocket struct {
	udp  *netcore.UDPTransport
	in   chan *netcore.Datagram
	quit chan struct{}
	done chan struct{}

	mu      sync.Mutex
	token   uint64
	senders map[netcore.PeerID]netip.AddrPort // where each sender's datagrams came from
}

func newSniffSocket(t *testing.T) *sniffSocket {
	t.Helper()
	udp, err := netcore.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sniffSocket{udp: udp, in: make(chan *netcore.Datagram, 256), quit: make(chan struct{}),
		done: make(chan struct{}), senders: map[netcore.PeerID]netip.AddrPort{}}
	go func() {
		defer close(s.done)
		defer close(s.in)
		for d := range udp.Inbox() {
			s.sniff(d.From, d.Bytes())
			select {
			case s.in <- d:
			case <-s.quit:
				d.Release()
			}
		}
	}()
	return s
}

func (s *sniffSocket) sniff(from netip.AddrPort, p []byte) {
	if len(p) < 24 || p[0] != 'L' || p[1] != 'S' {
		return
	}
	token := binary.LittleEndian.Uint64(p[4:])
	sender := netcore.PeerID(binary.LittleEndian.Uint16(p[12:]))
	if token == 0 || sender == netcore.PeerUnassigned {
		return // a handshake datagram
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
	s.senders[sender] = from
}

// seen is what the socket has learned so far.
func (s *sniffSocket) seen() (uint64, map[netcore.PeerID]netip.AddrPort) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[netcore.PeerID]netip.AddrPort{}
	for id, a := range s.senders {
		out[id] = a
	}
	return s.token, out
}

func (s *sniffSocket) Send(to netip.AddrPort, p []byte) error { return s.udp.Send(to, p) }
func (s *sniffSocket) LocalAddr() netip.AddrPort              { return s.udp.LocalAddr() }
func (s *sniffSocket) Inbox() <-chan *netcore.Datagram        { return s.in }

func (s *sniffSocket) close() {
	close(s.quit)
	s.udp.Close()
	<-s.done
	for d := range s.in {
		d.Release()
	}
}

// stolen is what the stranger learned: the token and, for each joiner
// (the host aside), its PeerID and the address its datagrams come from.
type stolen struct {
	token   uint64
	joiners map[netcore.PeerID]netip.AddrPort
}

// learnAsWatcher attaches to the session at host as a watcher over a real
// UDP socket, the way `lagscope watch` does (session.NewJoiner, the live
// driver), waits until datagrams of both joiners have reached it, and
// leaves cleanly. key is nil for a stranger without one.
func learnAsWatcher(t *testing.T, host netip.AddrPort, key []byte) stolen {
	t.Helper()
	sock := newSniffSocket(t)
	defer sock.close()
	s, err := session.NewJoiner(session.Config{Name: "mallory", Key: key}, session.RoleObserver, sock, host)
	if err != nil {
		t.Fatal(err)
	}
	r := live.Run(s, sock, live.Options{})
	defer func() {
		r.Stop()
		select {
		case <-r.Done():
			if err := r.Wait(); err != nil {
				t.Errorf("the watcher's session ended with %v", err)
			}
		case <-time.After(15 * time.Second):
			r.Abort()
			t.Errorf("the watcher did not leave within 15 s")
			<-r.Done()
		}
	}()
	end := time.Now().Add(20 * time.Second)
	for {
		token, senders := sock.seen()
		joiners := map[netcore.PeerID]netip.AddrPort{}
		for id, a := range senders {
			if a != host {
				joiners[id] = a
			}
		}
		if token != 0 && len(joiners) == 2 {
			return stolen{token: token, joiners: joiners}
		}
		select {
		case <-r.Done():
			t.Fatalf("the watcher's session ended before it saw both joiners: %v (seen %v)", r.Wait(), senders)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(end) {
			t.Fatalf("the watcher saw token %#x and senders %v within 20 s, not both joiners", token, senders)
		}
	}
}

// forgedCheck is a check (docs/protocol.md) as a holder of the code
// would forge it without the pair's own key: 30 bytes, and with a key a
// 16-byte tag, HMAC-SHA256 of bytes 0–29 under a key derived from the
// code alone (HKDF-SHA256(key, salt = token, info "lagscope/1 check
// key")), the best a code holder can do.
func forgedCheck(t *testing.T, token uint64, from, to netcore.PeerID, nominate bool, tx uint64, seq uint32, key []byte) []byte {
	t.Helper()
	var flags byte
	if nominate {
		flags = 0x01
	}
	b := []byte{'L', 'P', 1, 0x01, flags, 0}
	b = binary.LittleEndian.AppendUint64(b, token)
	b = binary.LittleEndian.AppendUint16(b, uint16(from))
	b = binary.LittleEndian.AppendUint16(b, uint16(to))
	b = binary.LittleEndian.AppendUint64(b, tx)
	b = binary.LittleEndian.AppendUint32(b, seq)
	if key != nil {
		salt := binary.LittleEndian.AppendUint64(nil, token)
		k, err := hkdf.Key(sha256.New, key, salt, "lagscope/1 check key", 32)
		if err != nil {
			t.Fatal(err)
		}
		m := hmac.New(sha256.New, k)
		m.Write(b)
		b = append(b, m.Sum(nil)[:16]...)
	}
	return b
}

// victim is the third party's socket: it sends the forged checks and
// counts everything that arrives at it until closed.
type victim struct {
	conn      *net.UDPConn
	datagrams atomic.Uint64
	bytes     atomic.Uint64
	done      chan struct{}
	mu        sync.Mutex
	sources   map[netip.AddrPort]int
}

func newVictim(t *testing.T, ip string) *victim {
	t.Helper()
	addr := netip.MustParseAddr(ip)
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 9999)))
	if err != nil {
		// Port 9999 is only the example's; any port of the address will do.
		conn, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	}
	if err != nil {
		t.Fatalf("victim socket at %s: %v", ip, err)
	}
	v := &victim{conn: conn, done: make(chan struct{}), sources: map[netip.AddrPort]int{}}
	go func() {
		defer close(v.done)
		buf := make([]byte, 65536)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			v.datagrams.Add(1)
			v.bytes.Add(uint64(n))
			v.mu.Lock()
			v.sources[from]++
			v.mu.Unlock()
		}
	}()
	t.Cleanup(v.close)
	return v
}

func (v *victim) addr() netip.AddrPort { return v.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (v *victim) send(t *testing.T, to netip.AddrPort, p []byte) {
	t.Helper()
	if _, err := v.conn.WriteToUDPAddrPort(p, to); err != nil {
		t.Fatalf("forged check to %v: %v", to, err)
	}
}

func (v *victim) close() {
	v.conn.Close()
	<-v.done
}

// frameMark is a frame of a process and when (its t_ms) it printed it.
type frameMark struct {
	frame int
	ms    float64
}

// lastFrame is p's newest link line's frame and time: p prints its link
// lines once a second, each with the frame it is on.
func lastFrame(p *proc) frameMark {
	m := frameMark{frame: -1}
	for _, e := range p.of("link") {
		if e.frame() >= m.frame {
			m = frameMark{e.frame(), e.num("t_ms")}
		}
	}
	return m
}

// firstFrame is p's first link line once the game runs.
func firstFrame(p *proc) frameMark {
	for _, e := range p.of("link") {
		if e.frame() > 0 {
			return frameMark{e.frame(), e.num("t_ms")}
		}
	}
	return frameMark{frame: -1}
}

// fps is the game's pace between two marks of one process.
func fps(a, b frameMark) float64 {
	if b.ms <= a.ms {
		return 0
	}
	return float64(b.frame-a.frame) / (b.ms - a.ms) * 1000
}

func portOf(t *testing.T, p *proc) uint16 {
	t.Helper()
	p.waitFor("session line", 10*time.Second, func(es []ndjson) bool { return len(es) > 0 })
	ap, err := netip.ParseAddrPort(p.events()[0].str("addr"))
	if err != nil {
		t.Fatalf("%s's session line %v: %v", p.name, p.events()[0], err)
	}
	return ap.Port()
}

// forgery is one check the attack sends: its bytes, where to, and what
// it is, for the log.
type forgery struct {
	what string
	to   netip.AddrPort
	p    []byte
}

// TestForgedNominationOnLoopback: host --players 3 and two joiners, each
// its own process; a stranger learns the token and PeerIDs as a watcher
// and sends forged nominations from a third party's address. The third
// party receives nothing, every player's frames go on at the game's pace,
// the pair's link stays where it was, and the targeted players count
// every refusal. Open or keyed, a check must carry the tag of its pair's
// own key: a stranger's, and a member's tagged with the code, are refused
// alike.
func TestForgedNominationOnLoopback(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("127.0.0.99 on the loopback: Linux")
	}
	// Each case's processes save last_host in a config dir of the case's
	// own (startProc), and each has a victim address of its own: they run
	// side by side.
	bin := buildLagscope(t)
	t.Run("unkeyed", func(t *testing.T) {
		t.Parallel()
		runPathAttack(t, bin, nil, "127.0.0.99")
	})
	t.Run("keyed", func(t *testing.T) {
		t.Parallel()
		runPathAttack(t, bin, []byte("correct horse battery staple"), "127.0.0.98")
	})
}

func runPathAttack(t *testing.T, bin string, key []byte, victimIP string) {
	began := time.Now()
	var keyArgs []string
	hostKey := []string{"--open"} // the unkeyed case: an open session
	if key != nil {
		keyArgs = []string{"--key", string(key)}
		hostKey = keyArgs
	}
	host := startProc(t, bin, "ada", append([]string{"host", "--name", "ada", "--listen", "127.0.0.1:0", "--players", "3",
		"--json", "--duration", "2m"}, hostKey...)...)
	hostAP, err := netip.ParseAddrPort(hostAddr(t, host))
	if err != nil {
		t.Fatal(err)
	}
	alice := startProc(t, bin, "alice", append([]string{"join", hostAP.String(), "--name", "alice", "--json", "--duration", "2m"}, keyArgs...)...)
	bob := startProc(t, bin, "bob", append([]string{"join", hostAP.String(), "--name", "bob", "--json", "--duration", "2m"}, keyArgs...)...)
	players := []*proc{host, alice, bob}
	byPort := map[uint16]*proc{portOf(t, alice): alice, portOf(t, bob): bob}

	// 1. The game runs: every player's link lines are past frame 120,
	// which gives the quiet pace a few seconds to be measured over.
	for _, p := range players {
		p.waitFor("frame 120", 30*time.Second, func([]ndjson) bool { return lastFrame(p).frame >= 120 })
	}

	// 2. What a watcher sees: the token and the joiners' IDs and addresses.
	learned := learnAsWatcher(t, hostAP, key)
	ids := slices.Sorted(maps.Keys(learned.joiners))
	low, high := ids[0], ids[1]
	lowAddr, highAddr := learned.joiners[low], learned.joiners[high]
	lowP, highP := byPort[lowAddr.Port()], byPort[highAddr.Port()]
	if lowP == nil || highP == nil || lowP == highP {
		t.Fatalf("the joiners' addresses %v don't match alice's and bob's ports %v", learned.joiners, byPort)
	}
	t.Logf("learned as a watcher: token %#x; %s is PeerID %d at %v (controls), %s is PeerID %d at %v",
		learned.token, lowP.name, low, lowAddr, highP.name, high, highAddr)

	// 3. The forged checks, from the victim's address, once each.
	v := newVictim(t, victimIP)
	const seq = 1 << 30
	var checks []forgery
	add := func(what string, to netip.AddrPort, from, dest netcore.PeerID, k []byte) {
		checks = append(checks, forgery{what, to, forgedCheck(t, learned.token, from, dest, true, 0x5eed0fbadc0ffee, seq, k)})
	}
	if key == nil {
		add("stranger: nominate as "+lowP.name+" → "+highP.name, highAddr, low, high, nil)
		add("stranger: nominate as "+highP.name+" → "+lowP.name, lowAddr, high, low, nil)
	} else {
		add("stranger, no key: nominate as "+lowP.name+" → "+highP.name, highAddr, low, high, nil)
		add("stranger, no key: nominate as "+highP.name+" → "+lowP.name, lowAddr, high, low, nil)
		add("stranger, a wrong key: nominate as "+lowP.name+" → "+highP.name, highAddr, low, high, []byte("a wrong key"))
		add("member, the real key: nominate as "+lowP.name+" → "+highP.name, highAddr, low, high, key)
		add("member, the real key: nominate as "+highP.name+" → "+lowP.name, lowAddr, high, low, key)
	}
	before := map[string]frameMark{}
	for _, p := range players {
		before[p.name] = lastFrame(p)
	}
	for _, c := range checks {
		v.send(t, c.to, c.p)
		t.Logf("sent from %v to %v: %s (%d bytes)", v.addr(), c.to, c.what, len(c.p))
	}

	// 4. The session runs on; then everyone quits cleanly.
	for end := time.Now().Add(attackWindow); time.Now().Before(end); {
		for _, p := range players {
			select {
			case <-p.done:
				t.Fatalf("%s ended during the attack window: %v\n%s", p.name, p.err, p.stderr.String())
			default:
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	after := map[string]frameMark{}
	for _, p := range players {
		after[p.name] = lastFrame(p)
	}
	for _, p := range players {
		p.cmd.Process.Signal(os.Interrupt)
	}
	for _, p := range players {
		if code := p.exit(30 * time.Second); code != 0 {
			t.Fatalf("%s exited %d after Ctrl-C: %s", p.name, code, p.stderr.String())
		}
	}
	v.close()

	// 5. What happened.
	t.Logf("victim %v received %d datagrams, %d bytes (sources %v)", v.addr(), v.datagrams.Load(), v.bytes.Load(), v.sources)
	if n := v.datagrams.Load(); n != 0 {
		t.Errorf("the victim received %d datagrams (%d bytes): a forged check drew traffic to a third party", n, v.bytes.Load())
	}
	for _, p := range players {
		first, b, a := firstFrame(p), before[p.name], after[p.name]
		quiet, attacked := fps(first, b), fps(b, a)
		t.Logf("%s: quiet, frame %d → %d in %.1fs (%.1f fps); after the attack, frame %d → %d in %.1fs (+%d, %.1f fps)",
			p.name, first.frame, b.frame, (b.ms-first.ms)/1000, quiet, b.frame, a.frame, (a.ms-b.ms)/1000, a.frame-b.frame, attacked)
		// The game's pace is 30 fps; a frozen match advances by its
		// look-ahead at most. A third of the pace leaves room for a slow
		// machine and still tells the two apart.
		if a.ms-b.ms < float64((attackWindow/2).Milliseconds()) || attacked < 10 {
			t.Errorf("%s's frames went from %d to %d in %.1fs after the attack (%.1f fps; %.1f fps before): the game did not go on",
				p.name, b.frame, a.frame, (a.ms-b.ms)/1000, attacked, quiet)
		}
	}
	victimText := v.addr().Addr().String()
	for _, p := range players {
		for _, m := range p.of("message") {
			text := m.str("text")
			if strings.Contains(text, "has gone bad") || strings.Contains(text, "Desync") || strings.Contains(text, victimText) {
				t.Errorf("%s: %q", p.name, text)
			}
			if strings.Contains(text, "↔") || strings.Contains(text, "path") {
				t.Logf("%s: %s", p.name, text)
			}
		}
		for _, a := range p.of("alert") {
			if a.str("kind") == "bad" {
				t.Errorf("%s: %v", p.name, a)
			}
		}
		// A player removed before the quit: the attack cost a seat.
		for _, e := range p.of("removed") {
			if e.str("player") != "mallory" && e.frame() < after[p.name].frame {
				t.Errorf("%s: %v", p.name, e)
			}
		}
	}
	// The pair's link stays at the real address: measured and direct on
	// both sides to the end (a link moved to the victim hears nothing
	// from its peer and goes bad).
	for _, pair := range [][2]*proc{{highP, lowP}, {lowP, highP}} {
		from, to := pair[0], pair[1]
		lines, off := 0, 0
		var first ndjson
		for _, e := range from.of("link") {
			if e.str("from") == from.name && e.str("to") == to.name && e.frame() >= before[from.name].frame {
				lines++
				if e.str("state") != "measured" || e.str("path") != "direct" {
					if off++; first == nil {
						first = e
					}
				}
			}
		}
		if lines == 0 {
			t.Errorf("%s printed no link line to %s after the attack", from.name, to.name)
		}
		if off > 0 {
			t.Errorf("%s's link to %s after the attack: %d of %d lines not measured and direct, the first %v",
				from.name, to.name, off, lines, first)
		}
	}
	rejected := map[string]ndjson{}
	for _, p := range players {
		sums := p.of("summary")
		if len(sums) != 1 {
			t.Fatalf("%s printed %d summaries", p.name, len(sums))
		}
		rej, ok := sums[0]["rejected"].(map[string]any)
		if !ok {
			t.Fatalf("%s's summary has no rejected counts: %v", p.name, sums[0])
		}
		rejected[p.name] = rej
		t.Logf("%s rejected: total %v, path %v, lobby %v, auth %v, sender %v, token %v", p.name,
			rej["total"], rej["path"], rej["lobby"], rej["auth"], rej["sender"], rej["token"])
	}
	// Each targeted player refused every forged check: a check is tagged
	// under its pair's own key (docs/protocol.md), which neither a
	// stranger nor a member that holds the code has for another pair, so
	// each is refused as not made by the member it names (lobby) before
	// it reaches the path rules.
	for _, p := range []*proc{highP, lowP} {
		if _, ok := rejected[p.name]["path"]; !ok {
			t.Fatalf("%s's rejected counts have no path key: %v", p.name, rejected[p.name])
		}
		want := 0
		for _, c := range checks {
			if byPort[c.to.Port()] == p {
				want++
			}
		}
		if got := rejected[p.name].num("lobby") + rejected[p.name].num("path"); got < float64(want) {
			t.Errorf("%s refused %v of the %d forged checks sent to it (lobby %v, path %v)", p.name, got, want,
				rejected[p.name]["lobby"], rejected[p.name]["path"])
		}
	}
	t.Logf("run took %v", time.Since(began).Round(time.Second))
}
