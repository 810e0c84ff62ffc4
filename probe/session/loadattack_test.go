package session

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// The attacks on load tests, each sent over a real member's own link (a
// machine that holds the session code and sends what no conforming peer
// does): what the peer sends back, and what it counts and shows.

// watchedLoadWorld is loadWorld with a watcher, eve, who joined before
// the start.
func watchedLoadWorld(t *testing.T) (w *world, a, b, c, eve *machine) {
	t.Helper()
	w = newWorld(t, 7, lan30)
	key := []byte("load test key")
	cfg := func() Config { return Config{Load: LoadConfig{Cap: loadCap}, Key: key} }
	hc := cfg()
	hc.Players = 3
	a = w.host("ada", hc)
	b = w.join("bob", RolePlayer, a, cfg())
	c = w.join("cyd", RolePlayer, a, cfg())
	eve = w.join("eve", RoleObserver, a, cfg())
	if !w.runUntil(20*time.Second, started(a, b, c, eve)) {
		t.Fatal("the game did not start")
	}
	w.runFor(5 * time.Second)
	return w, a, b, c, eve
}

// rawRequest is a load-test request as docs/load-test.md gives it.
func rawRequest(id uint32) []byte {
	b := []byte{0x30}
	b = binary.LittleEndian.AppendUint32(b, id)
	b = append(b, 1)
	return binary.LittleEndian.AppendUint64(b, uint64(loadCap))
}

// rawPace is a pace command: the peer's load in phase at rate, of size
// bytes, with nonce.
func rawPace(id uint32, phase byte, rate uint64, size uint16, nonce uint32) []byte {
	b := []byte{0x34}
	b = binary.LittleEndian.AppendUint32(b, id)
	b = append(b, phase)
	b = binary.LittleEndian.AppendUint64(b, rate)
	b = binary.LittleEndian.AppendUint16(b, size)
	return binary.LittleEndian.AppendUint32(b, nonce)
}

// rawLoad is the 14-byte load datagram of the first wire: kind, id,
// phase, number and stamp, no nonce and no padding.
func rawLoad(id uint32, phase byte) []byte {
	b := []byte{0x32}
	b = binary.LittleEndian.AppendUint32(b, id)
	b = append(b, phase)
	return append(b, 1, 0, 0, 0, 0, 0, 0, 0)
}

// repeat sends msg from m to the member to every every, n times from now.
func repeat(w *world, m *machine, to netcore.PeerID, msg []byte, every time.Duration, n int) {
	for i := range n {
		w.at(w.now()+time.Duration(i)*every, func() {
			_ = m.s.ep.SendUnnumbered(w.now(), to, msg, false)
			w.after(m)
		})
	}
}

// loadTo is the bytes of load-sized datagrams (1000 bytes and more) m sent
// to the address to since its recorder kept them.
func loadTo(m, to *machine) (n, bytes int) {
	for _, d := range m.tr.Sent {
		if d.To == to.addr && len(d.Data) >= 1000 {
			n++
			bytes += len(d.Data)
		}
	}
	return n, bytes
}

// refusals counts m's messages that show a refusal from the member named.
func refusals(m *machine, from string) (n int, lines []string) {
	for _, msg := range m.messages() {
		if strings.HasPrefix(msg, "Load test from "+from+" refused") {
			n++
			lines = append(lines, msg)
		}
	}
	return n, lines
}

// A watcher runs no load test: its own machine refuses to ask, and a
// watcher that asks anyway — claims to the host, requests to a player —
// gets no turn and no load; every claim and request is counted, and each
// machine shows the episode once.
func TestLoadTestFromAWatcherRefused(t *testing.T) {
	w, a, b, _, eve := watchedLoadWorld(t)
	w.at(w.now(), func() { eve.s.StartLoadTest(w.now(), "bob", true); w.after(eve) })
	w.runFor(time.Second)
	if eve.s.load.want != nil || len(loads(eve)) != 0 {
		t.Fatal("a watcher's machine asked for a load test")
	}
	if !containsPrefix(eve.messages(), "No load test from a watcher") {
		t.Errorf("eve's messages %q lack the refusal", eve.messages())
	}

	b.tr.Keep = true
	aBefore, bBefore := a.s.Rejected().Load, b.s.Rejected().Load
	const claims, requests = 10, 20
	claim := appendLoadTurn(nil, kindLoadClaim, loadTurnMsg{ID: 77, Tester: eve.s.self, Peer: b.s.self, Flag: turnAsk})
	repeat(w, eve, hostID, claim, 500*time.Millisecond, claims)
	repeat(w, eve, b.s.self, rawRequest(77), 250*time.Millisecond, requests)
	w.runFor(6 * time.Second)

	if n, bytes := loadTo(b, eve); n != 0 {
		t.Errorf("bob sent the watcher %d load-sized datagrams (%d bytes)", n, bytes)
	}
	if got := b.s.Rejected().Load - bBefore; got != requests {
		t.Errorf("bob counted %d refusals, want the watcher's %d requests", got, requests)
	}
	if got := a.s.Rejected().Load - aBefore; got != claims {
		t.Errorf("the host counted %d refusals, want the watcher's %d claims", got, claims)
	}
	if a.s.load.turn.held {
		t.Errorf("the host holds the turn for %v after a watcher's claims", a.s.load.turn.holder)
	}
	for _, m := range []*machine{a, b} {
		if n, lines := refusals(m, "eve"); n != 1 || !strings.Contains(lines[0], whyWatcher) {
			t.Errorf("%s shows %q, want one line of the watcher's refusal", m.name, lines)
		}
	}
}

// A watcher that claims the turn without end never holds it: two players'
// tests, asked for at once, both run, one after the other.
func TestWatcherCannotHoldTheTurn(t *testing.T) {
	w, a, b, c, eve := watchedLoadWorld(t)
	claim := appendLoadTurn(nil, kindLoadClaim, loadTurnMsg{ID: 5, Tester: eve.s.self, Peer: a.s.self, Flag: turnAsk})
	repeat(w, eve, hostID, claim, 250*time.Millisecond, 90*4)
	w.at(w.now()+time.Second, func() {
		b.s.StartLoadTest(w.now(), "ada", true)
		c.s.StartLoadTest(w.now(), "ada", true)
		w.after(b)
		w.after(c)
	})
	held := ever(w, 100*time.Millisecond, 900, func() bool { t := a.s.load.turn; return t.held && t.holder == eve.s.self })
	w.runFor(90 * time.Second)
	if *held {
		t.Error("the watcher held the session's turn")
	}
	bs, cs := loads(b), loads(c)
	if len(bs) != 1 || stopped(bs[0]) != "" || len(cs) != 1 || stopped(cs[0]) != "" {
		t.Fatalf("bob's tests %v, cyd's %v: want one complete test each", bs, cs)
	}
}

// Requests the peer may not serve get no load and are counted: in the
// lobby, from a player without the turn, and for a second test while one
// runs (from another player, and from the tester itself under another id).
func TestLoadRequestsWithoutTheTurnRefused(t *testing.T) {
	t.Run("lobby", func(t *testing.T) {
		w := newWorld(t, 7, lan30)
		a := w.host("ada", Config{Players: 3})
		b := w.join("bob", RolePlayer, a, Config{})
		w.runFor(3 * time.Second)
		a.tr.Keep = true
		repeat(w, b, hostID, rawRequest(9), 250*time.Millisecond, 12)
		w.runFor(4 * time.Second)
		if n, _ := loadTo(a, b); n != 0 {
			t.Errorf("the host sent %d load-sized datagrams in the lobby", n)
		}
		if got := a.s.Rejected().Load; got != 12 {
			t.Errorf("the host counted %d refusals, want 12", got)
		}
		if n, lines := refusals(a, "bob"); n != 1 || !strings.Contains(lines[0], whyLobby) {
			t.Errorf("the host shows %q, want one line of the lobby refusal", lines)
		}
	})
	t.Run("no turn", func(t *testing.T) {
		w, _, b, c := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
		b.tr.Keep = true
		before := b.s.Rejected().Load
		repeat(w, c, b.s.self, rawRequest(0x1234), 250*time.Millisecond, 40)
		served := ever(w, 100*time.Millisecond, 120, func() bool { return b.s.load.run != nil })
		w.runFor(12 * time.Second)
		if *served {
			t.Error("bob served a test nobody was granted")
		}
		if n, _ := loadTo(b, c); n != 0 {
			t.Errorf("bob sent %d load-sized datagrams to a request without the turn", n)
		}
		if got := b.s.Rejected().Load - before; got != 40 {
			t.Errorf("bob counted %d refusals, want 40", got)
		}
		if n, lines := refusals(b, "cyd"); n != 1 || !strings.Contains(lines[0], whyNoTurn) {
			t.Errorf("bob shows %q, want one line of the refusal", lines)
		}
	})
	t.Run("second test", func(t *testing.T) {
		w, a, b, c := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
		a.tr.Keep = true
		w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "ada", false); w.after(b) })
		w.runFor(3 * time.Second)
		r := a.s.load.run
		if r == nil || r.m.Name != "bob" {
			t.Fatal("ada does not serve bob's test")
		}
		before := a.s.Rejected().Load
		repeat(w, c, hostID, rawRequest(0x4321), 250*time.Millisecond, 20)
		repeat(w, b, hostID, rawRequest(r.id+1), 250*time.Millisecond, 20)
		w.runFor(30 * time.Second)
		if n, _ := loadTo(a, c); n != 0 {
			t.Errorf("ada sent cyd %d load-sized datagrams during bob's test", n)
		}
		if got := a.s.Rejected().Load - before; got != 40 {
			t.Errorf("ada counted %d refusals, want 40", got)
		}
		if got := loads(b); len(got) != 1 || stopped(got[0]) != "" {
			t.Errorf("bob's test %v, want it complete", got)
		}
		if n, _ := refusals(a, "cyd"); n != 1 {
			t.Errorf("ada shows %d lines for cyd's requests, want 1", n)
		}
	})
}

// A turn held for a test that never starts lapses and passes on: a player
// that claims the turn again and again, under one id or ever new ones,
// and never sends its request, holds it for seconds a minute, and a
// waiting test runs.
func TestUnusedTurnLapses(t *testing.T) {
	for _, rotate := range []bool{false, true} {
		w, a, b, c := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
		for i := range 120 {
			id := uint32(40)
			if rotate {
				id += uint32(i)
			}
			claim := appendLoadTurn(nil, kindLoadClaim, loadTurnMsg{ID: id, Tester: c.s.self, Peer: a.s.self, Flag: turnAsk})
			w.at(w.now()+time.Duration(i)*500*time.Millisecond, func() {
				_ = c.s.ep.SendUnnumbered(w.now(), hostID, claim, false)
				w.after(c)
			})
		}
		heldFor := time.Duration(0)
		every(w, 100*time.Millisecond, 600, func() {
			if t := a.s.load.turn; t.held && t.holder == c.s.self {
				heldFor += 100 * time.Millisecond
			}
		})
		w.at(w.now()+time.Second, func() { b.s.StartLoadTest(w.now(), "ada", true); w.after(b) })
		w.runFor(60 * time.Second)
		t.Logf("rotate %v: cyd held the turn %v of the minute", rotate, heldFor)
		if heldFor > 5*time.Second {
			t.Errorf("rotate %v: cyd held the turn %v of a minute without a test", rotate, heldFor)
		}
		if got := loads(b); len(got) != 1 || stopped(got[0]) != "" {
			t.Errorf("rotate %v: bob's waiting test %v, want it complete", rotate, got)
		}
	}
}

// A turn whose peer never gets ready lapses, and its holder's next claim
// waits a minute: a player that names a peer that never answers (gone, or
// in league with it) cannot keep the turn by claiming again and again,
// and a waiting test runs.
func TestTurnWithoutAReadyPeerPassesOn(t *testing.T) {
	w, a, b, c := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
	b.vanish()
	claim := appendLoadTurn(nil, kindLoadClaim, loadTurnMsg{ID: 40, Tester: c.s.self, Peer: b.s.self, Flag: turnAsk})
	repeat(w, c, hostID, claim, 500*time.Millisecond, 120)
	heldFor := time.Duration(0)
	every(w, 100*time.Millisecond, 600, func() {
		if t := a.s.load.turn; t.held && t.holder == c.s.self {
			heldFor += 100 * time.Millisecond
		}
	})
	w.at(w.now()+time.Second, func() { a.s.StartLoadTest(w.now(), "cyd", true); w.after(a) })
	w.runFor(60 * time.Second)
	t.Logf("cyd held the turn %v of the minute", heldFor)
	if heldFor > 5*time.Second {
		t.Errorf("cyd held the turn %v of a minute toward a peer that never got ready", heldFor)
	}
	if got := loads(a); len(got) != 1 || stopped(got[0]) != "" {
		t.Errorf("ada's waiting test %v, want it complete", got)
	}
}

// A complete test sends at most the documented bound of load each way:
// the cap for 13 s on the path (docs/load-test.md, "What it costs").
func TestLoadTestStaysWithinItsBound(t *testing.T) {
	w, a, b, _ := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
	a.tr.Keep, b.tr.Keep = true, true
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "ada", false); w.after(b) })
	w.runFor(35 * time.Second)
	if got := loads(b); len(got) != 1 || stopped(got[0]) != "" {
		t.Fatalf("bob's test %v, want it complete", got)
	}
	bound := loadCap * 13 / 8
	for _, pair := range [][2]*machine{{b, a}, {a, b}} {
		n, bytes := loadTo(pair[0], pair[1])
		t.Logf("%s → %s: %d load datagrams, %d bytes (bound %d)", pair[0].name, pair[1].name, n, bytes, int(bound))
		if bytes > int(bound) || bytes < int(bound)/2 {
			t.Errorf("%s sent %s %d bytes of load, want at most the bound of %d (and a test's worth)",
				pair[0].name, pair[1].name, bytes, int(bound))
		}
	}
}

// Load datagrams under the minimum size, and pace commands asking for
// them, are refused and counted, and the test goes on; a pace without the
// peer's latest nonce is ignored and counted: no load follows it.
func TestForgedLoadMessagesIgnored(t *testing.T) {
	w, a, b, _ := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
	a.tr.Keep = true
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "ada", false); w.after(b) })
	w.runFor(time.Second) // the idle phase: nobody sends load
	r := a.s.load.run
	if r == nil {
		t.Fatal("ada does not serve bob's test")
	}
	id := r.id
	before := a.s.Rejected().Load
	sentBefore, _ := loadTo(a, b)
	repeat(w, b, hostID, rawLoad(id, 2), 10*time.Millisecond, 50)
	repeat(w, b, hostID, rawPace(id, 4, uint64(loadCap), 14, 0), 100*time.Millisecond, 5)
	repeat(w, b, hostID, rawPace(id, 4, uint64(loadCap), 1336, 0), 100*time.Millisecond, 5)
	repeat(w, b, hostID, rawPace(id, 5, uint64(loadCap), 1336, 0xdeadbeef), 100*time.Millisecond, 5)
	w.runFor(800 * time.Millisecond)
	if n, _ := loadTo(a, b); n != sentBefore {
		t.Errorf("ada sent %d load datagrams after paces without her nonce", n-sentBefore)
	}
	if got := a.s.Rejected().Load - before; got != 65 {
		t.Errorf("ada counted %d refusals, want the 50 short loads, 5 short paces and 10 paces without the nonce", got)
	}
	if n, lines := refusals(a, "bob"); n != 1 || !strings.Contains(lines[0], whyNonce) {
		t.Errorf("ada shows %q, want one line for the paces without the nonce", lines)
	}
	w.runFor(30 * time.Second)
	if got := loads(b); len(got) != 1 || stopped(got[0]) != "" {
		t.Fatalf("bob's test %v, want it complete despite the forged messages", got)
	}
}

// every runs fn every period, n times from now.
func every(w *world, period time.Duration, n int, fn func()) {
	for i := range n {
		w.at(w.now()+time.Duration(i)*period, fn)
	}
}

// ever checks cond every period, n times from now, and reports whether it
// ever held.
func ever(w *world, period time.Duration, n int, cond func() bool) *bool {
	held := new(bool)
	every(w, period, n, func() {
		if cond() {
			*held = true
		}
	})
	return held
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// The per-datagram paths allocate nothing (L6): a load datagram of a
// running test, and a request refused in a flood (its episode's message
// shown already).
func TestLoadDatagramPathsAllocateNothing(t *testing.T) {
	w, a, b, c := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "ada", false); w.after(b) })
	w.runFor(3 * time.Second)
	r := a.s.load.run
	if r == nil {
		t.Fatal("ada does not serve bob's test")
	}
	load := make([]byte, 1336)
	load[0] = 0x32
	binary.LittleEndian.PutUint32(load[1:], r.id)
	load[5] = 2 // the upload ramp
	bob, cyd := a.s.byID[b.s.self], a.s.byID[c.s.self]
	now := w.now()
	if n := testing.AllocsPerRun(100, func() { a.s.loadMessage(now, bob, load) }); n != 0 {
		t.Errorf("a load datagram allocates %v times", n)
	}
	req := rawRequest(99)
	if n := testing.AllocsPerRun(100, func() { a.s.loadMessage(now, cyd, req) }); n != 0 {
		t.Errorf("a refused request allocates %v times", n)
	}
}

// A tester that keeps pacing, with the peer's latest nonce, does not keep
// the peer serving: the peer stops 25 s after its answer, on its own
// clock. Bob's machine runs its test until the download hold, then stops
// running it without a word, and the test script takes over bob's link:
// a probe every 10 ms and a pace every 100 ms for a quarter of the cap
// (under the budget to the end), each pace with ada's current nonce — a
// tester that hears everything ada sends.
func TestPeerStopsServingAt25sWhateverTheTesterSends(t *testing.T) {
	w, a, b, _ := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
	a.tr.Keep = true
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "ada", false); w.after(b) })
	var began time.Duration
	every(w, 10*time.Millisecond, 300, func() {
		if began == 0 && a.s.load.run != nil {
			began = w.now()
		}
	})
	w.runFor(15 * time.Second) // bob's test is in the download hold
	r := a.s.load.run
	if began == 0 || r == nil || b.s.load.run == nil {
		t.Fatal("bob's test does not run")
	}
	id := r.id
	b.s.load.run = nil // bob's machine stops its end silently: no stop, no probes of its own
	for i := range 20 * 100 {
		w.at(w.now()+time.Duration(i)*10*time.Millisecond, func() {
			probe := binary.LittleEndian.AppendUint32([]byte{0x35}, id)
			probe = binary.LittleEndian.AppendUint32(probe, uint32(100000+i))
			probe = binary.LittleEndian.AppendUint32(probe, uint32(w.now()/time.Microsecond))
			probe = binary.LittleEndian.AppendUint32(probe, 0)
			_ = b.s.ep.SendUnnumbered(w.now(), hostID, probe, false)
			if i%10 == 0 {
				_ = b.s.ep.SendUnnumbered(w.now(), hostID, rawPace(id, 5, loadCap/4, 1336, r.t.Nonce()), false)
			}
			w.after(b)
		})
	}
	// Watch ada's datagrams to bob as they leave: when the last load went,
	// and when her end of the test was over.
	var lastLoad, over time.Duration
	seen := len(a.tr.Sent)
	every(w, 10*time.Millisecond, 2000, func() {
		for ; seen < len(a.tr.Sent); seen++ {
			if d := a.tr.Sent[seen]; d.To == b.addr && len(d.Data) >= 1000 {
				lastLoad = w.now()
			}
		}
		if over == 0 && a.s.load.run == nil {
			over = w.now()
		}
	})
	w.runFor(20 * time.Second)
	if over == 0 {
		t.Fatalf("ada still serves bob's test %v after her answer", w.now()-began)
	}
	t.Logf("ada answered at %v; her end was over %v later, her last load %v after her answer", began, over-began, lastLoad-began)
	const grace = 100 * time.Millisecond
	if over-began > 25*time.Second+grace || lastLoad-began > 25*time.Second+grace {
		t.Errorf("ada served until %v after her answer (last load at %v), want at most 25 s", over-began, lastLoad-began)
	}
	if lastLoad-began < 24*time.Second {
		t.Errorf("ada's load ended %v after her answer: the script's paces should have kept it until the 25 s bound", lastLoad-began)
	}
}
