package session

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// kindVictim is a third party's address that counts what reaches it by
// kind (prime, check, answer, other).
type kindVictim struct {
	addr  netip.AddrPort
	count map[string]int
	bytes map[string]int
}

func (w *world) kindVictim(addr string) *kindVictim {
	v := &kindVictim{addr: netip.MustParseAddrPort(addr), count: map[string]int{}, bytes: map[string]int{}}
	w.net.Attach(v.addr, func(_ time.Duration, _ netip.AddrPort, p []byte) {
		v.count[kindOf(p)]++
		v.bytes[kindOf(p)] += len(p)
	})
	return v
}

// beyond is what the victim got beyond one answer to each of the n checks
// sent from its address: what the pair sent it on its own.
func (v *kindVictim) beyond() int { return v.bytes["prime"] + v.bytes["check"] + v.bytes["other"] }

// quietBound is the most an address that never answers gets from one pair
// on its own (checkbudget.go): quietChecks checks and three primes.
func quietBound(s *Session) int { return quietChecks*s.checkSize() + 3*checkLen }

// A member that spoofs a victim's address cannot make a pair's hole
// punching flood it, nor can one that names the victim among its own
// addresses; the victim gets at most quietChecks checks and three primes
// from the pair, beside one answer of its own size to each check sent from
// its address (docs/security.md, "Paths are verified before they carry a
// link"). bob's socket sets hop limits, on one LAN, so its primes arrive
// too.
//
//   - spoofed: mon watches a running game from bob's LAN and answers none
//     of bob's checks; it tags checks for bob with its own key and sends
//     them from the victim's address, one and then one every 200 ms for
//     10 s. The first starts bob punching (a late watcher's pair is not
//     settled); bob answers each, checks the victim back and relays
//     through the host after 3 s.
//   - listed: mal joins the lobby before bob, naming the victim as its
//     local address, and sends bob nothing (no answer, no relay frame), so
//     bob punches, as the side that does not pick the path, until the
//     lobby gives up after 30 s; mal also spoofs checks from the victim.
//   - spread: the same with eight victims named (as many addresses as a
//     member reports) and checks spoofed from eight more: each victim gets
//     at most the bound, and all of them together at most quietPairChecks
//     checks and three primes for each of the pair's candidates.
func TestUnansweredAddressGetsABoundedShare_Q7(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("the session code")} {
		t.Run(fmt.Sprintf("spoofed/keyed=%v", key != nil), func(t *testing.T) {
			w := newWorld(t, 91, lan30)
			cfg := Config{Players: 2, Key: key}
			ada := w.host("ada", cfg)
			bob := w.attach("bob")
			s, err := NewJoiner(w.config(bob, cfg), RolePlayer, lanHops{bob.tr}, ada.addr)
			if err != nil {
				t.Fatal(err)
			}
			w.start(bob, s)
			if !w.runUntil(20*time.Second, allStarted(ada, bob)) {
				t.Fatal("the game did not start")
			}
			w.runFor(2 * time.Second)
			mon := w.join("mon", RoleObserver, ada, cfg)
			if !w.runUntil(10*time.Second, func() bool {
				m := bob.s.byID[mon.s.self]
				return m != nil && m.linked && m.heard
			}) {
				t.Fatal("bob never heard the watcher")
			}
			m := bob.s.byID[mon.s.self]
			if m.path.state != pathNone || !bob.s.punchOpen(m) {
				t.Fatalf("bob's pair with the watcher: %v, open to punching %v; want not settled", m.path.state, bob.s.punchOpen(m))
			}
			// mon answers none of bob's checks from here on.
			mon.tr.Divert = func(to netip.AddrPort, p []byte) bool { return to == bob.addr && kindOf(p) == "answer" }
			v := w.kindVictim("10.0.0.99:9999")
			mk, _ := mon.s.checkKey(mon.s.byID[bob.s.self], true)
			sent := 0
			spoof := func(seq uint32) {
				c := appendCheck(nil, check{Token: ada.s.token, From: mon.s.self, To: bob.s.self, Tx: uint64(seq), Seq: seq}, mk)
				bob.s.Receive(w.now(), v.addr, c)
				w.after(bob)
				sent++
			}
			spoof(1)
			w.runFor(time.Second)
			if bob.s.byID[mon.s.self].path.state != pathPunching {
				t.Fatalf("the spoofed check did not start bob punching (%v): the test proves nothing", bob.s.byID[mon.s.self].path.state)
			}
			one := v.count["answer"] + v.count["check"] + v.count["prime"]
			oneBytes := v.bytes["answer"] + v.bytes["check"] + v.bytes["prime"]
			w.runFor(5 * time.Second)
			t.Logf("one %d-byte check: the victim got %d datagrams (%d bytes) in its first second, %d (%d bytes) in 6 s",
				bob.s.checkSize(), one, oneBytes, v.count["answer"]+v.count["check"]+v.count["prime"],
				v.bytes["answer"]+v.bytes["check"]+v.bytes["prime"])
			for i := range 50 {
				spoof(uint32(i + 2))
				w.runFor(200 * time.Millisecond)
			}
			w.runFor(10 * time.Second)
			t.Logf("%d checks spoofed: the victim got %v (bytes %v); bob → mon %v", sent, v.count, v.bytes, bob.s.pathTo("mon"))
			if v.count["answer"] > sent || v.bytes["answer"] > sent*bob.s.checkSize() {
				t.Errorf("%d answers (%d bytes) to %d checks", v.count["answer"], v.bytes["answer"], sent)
			}
			if v.count["check"] > quietChecks || v.beyond() > quietBound(bob.s) {
				t.Errorf("the victim got %d checks, %d bytes beyond the answers: want at most %d checks, %d bytes",
					v.count["check"], v.beyond(), quietChecks, quietBound(bob.s))
			}
			if v.count["other"] != 0 {
				t.Errorf("the victim got %d datagrams of the link's own", v.count["other"])
			}
			if bob.s.pathTo("mon") != pathRelayed {
				t.Errorf("bob → mon %v, want relayed (mon answers nothing)", bob.s.pathTo("mon"))
			}
		})
		t.Run(fmt.Sprintf("listed/keyed=%v", key != nil), func(t *testing.T) {
			w := newWorld(t, 92, lan30)
			cfg := Config{Players: 3, Key: key}
			ada := w.host("ada", cfg)
			v := w.kindVictim("10.0.0.99:9999")
			mcfg := cfg
			mcfg.LocalAddrs = []netip.AddrPort{v.addr}
			mal := w.join("mal", RolePlayer, ada, mcfg)
			w.runFor(time.Second)
			bob := w.attach("bob")
			// mal sends bob nothing, and the host no relay frame for bob.
			mal.tr.Divert = func(to netip.AddrPort, p []byte) bool {
				return to == bob.addr || (to == ada.addr && len(p) >= 2 && p[1] == relayMagic1)
			}
			s, err := NewJoiner(w.config(bob, cfg), RolePlayer, lanHops{bob.tr}, ada.addr)
			if err != nil {
				t.Fatal(err)
			}
			w.start(bob, s)
			if !w.runUntil(10*time.Second, func() bool {
				m := bob.s.byID[mal.s.self]
				return m != nil && m.path.state == pathPunching && slices.Contains(m.path.cands, v.addr)
			}) {
				t.Fatal("bob never punched towards mal with the victim among the candidates")
			}
			if bob.s.controlling(bob.s.byID[mal.s.self]) {
				t.Fatal("bob picks the path: mal should")
			}
			w.runFor(5 * time.Second)
			t.Logf("bob punched 5 s: the victim got %v (bytes %v)", v.count, v.bytes)
			mk, _ := mal.s.checkKey(mal.s.byID[bob.s.self], true)
			sent := 0
			for i := range 20 {
				c := appendCheck(nil, check{Token: ada.s.token, From: mal.s.self, To: bob.s.self, Tx: uint64(i + 1), Seq: uint32(i + 1)}, mk)
				bob.s.Receive(w.now(), v.addr, c)
				w.after(bob)
				sent++
				w.runFor(500 * time.Millisecond)
			}
			w.runUntil(40*time.Second, func() bool { return bob.s.Done() })
			t.Logf("bob: %v; %d checks spoofed: the victim got %v (bytes %v)", bob.s.Err(), sent, v.count, v.bytes)
			if v.count["answer"] > sent {
				t.Errorf("%d answers to %d checks", v.count["answer"], sent)
			}
			if v.count["check"] > quietChecks || v.beyond() > quietBound(bob.s) {
				t.Errorf("the victim got %d checks, %d bytes beyond the answers: want at most %d checks, %d bytes",
					v.count["check"], v.beyond(), quietChecks, quietBound(bob.s))
			}
			if v.count["prime"] == 0 {
				t.Error("bob primed no address of mal's: the bound's primes were not tried")
			}
		})
		t.Run(fmt.Sprintf("spread/keyed=%v", key != nil), func(t *testing.T) {
			w := newWorld(t, 93, lan30)
			cfg := Config{Players: 3, Key: key}
			ada := w.host("ada", cfg)
			var listed, spoofed []*kindVictim
			mcfg := cfg
			for i := range maxLocals {
				listed = append(listed, w.kindVictim(fmt.Sprintf("10.0.0.%d:9999", 100+i)))
				spoofed = append(spoofed, w.kindVictim(fmt.Sprintf("10.0.0.%d:9999", 120+i)))
				mcfg.LocalAddrs = append(mcfg.LocalAddrs, listed[i].addr)
			}
			mal := w.join("mal", RolePlayer, ada, mcfg)
			w.runFor(time.Second)
			bob := w.attach("bob")
			mal.tr.Divert = func(to netip.AddrPort, p []byte) bool {
				return to == bob.addr || (to == ada.addr && len(p) >= 2 && p[1] == relayMagic1)
			}
			s, err := NewJoiner(w.config(bob, cfg), RolePlayer, lanHops{bob.tr}, ada.addr)
			if err != nil {
				t.Fatal(err)
			}
			w.start(bob, s)
			if !w.runUntil(10*time.Second, func() bool {
				m := bob.s.byID[mal.s.self]
				return m != nil && m.path.state == pathPunching && slices.Contains(m.path.cands, listed[maxLocals-1].addr)
			}) {
				t.Fatal("bob never punched towards mal with the victims among the candidates")
			}
			w.runFor(time.Second)
			mk, _ := mal.s.checkKey(mal.s.byID[bob.s.self], true)
			seq := uint32(0)
			sent := map[*kindVictim]int{}
			for range 5 {
				for _, v := range append(slices.Clone(listed), spoofed...) {
					seq++
					c := appendCheck(nil, check{Token: ada.s.token, From: mal.s.self, To: bob.s.self, Tx: uint64(seq), Seq: seq}, mk)
					bob.s.Receive(w.now(), v.addr, c)
					w.after(bob)
					sent[v]++
				}
				w.runFor(time.Second)
			}
			w.runUntil(40*time.Second, func() bool { return bob.s.Done() })
			checks, beyond := 0, 0
			for _, v := range append(slices.Clone(listed), spoofed...) {
				checks += v.count["check"]
				beyond += v.beyond()
				if v.count["answer"] > sent[v] {
					t.Errorf("%v: %d answers to %d checks", v.addr, v.count["answer"], sent[v])
				}
				if v.count["check"] > quietChecks || v.beyond() > quietBound(bob.s) {
					t.Errorf("%v got %d checks, %d bytes beyond the answers: want at most %d checks, %d bytes",
						v.addr, v.count["check"], v.beyond(), quietChecks, quietBound(bob.s))
				}
			}
			bound := quietPairChecks*bob.s.checkSize() + 3*maxCands*checkLen
			t.Logf("bob: %v; 16 victims got %d checks, %d bytes beyond the answers (at most %d)", bob.s.Err(), checks, beyond, bound)
			if checks > quietPairChecks || beyond > bound {
				t.Errorf("the victims got %d checks, %d bytes beyond the answers: want at most %d checks, %d bytes",
					checks, beyond, quietPairChecks, bound)
			}
		})
	}
}
