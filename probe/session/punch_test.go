package session

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/simworld"
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
)

// FuzzPunchWire: no input panics a decoder of the session's own datagrams
// and messages (checks, relay frames, address lists, the host's table),
// and whatever decodes encodes back to the same bytes (S19).
func FuzzPunchWire(f *testing.F) {
	key := []byte("a pair's 32-byte check key......")
	f.Add(appendCheck(nil, check{Token: 7, From: 2, To: 3, Tx: 9, Seq: 1}, nil), false)
	f.Add(appendCheck(nil, check{Answer: true, Nominate: true, Token: 7, From: 3, To: 2, Tx: 9, Seq: 4}, key), true)
	a := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:7373"), netip.MustParseAddrPort("[2001:db8::1]:9")}
	f.Add(appendAddrs(nil, kindAddrs, a), false)
	f.Add(appendPeers(nil, []peerAddrs{{ID: 2, Addrs: a}, {ID: 3}}), false)
	f.Add(appendPaths(nil, []pairKey{{2, 4}, {3, 4}}), false)
	f.Add(appendPairs(nil, []pairReport{{4, pathPunching}, {5, pathRelayed}}), false)
	f.Add([]byte("LR\x03\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x02\x00\x01\x00\x00\x00\x00\x00\x00\x00"), false)
	f.Fuzz(func(t *testing.T, b []byte, keyed bool) {
		if c, err := decodeCheck(b, keyed); err == nil {
			k := []byte(nil)
			if keyed {
				k = key
			}
			again := appendCheck(nil, c, k)
			if !keyed || checkTagOK(b, key) {
				if string(again) != string(b) {
					t.Fatalf("check re-encoded differently:\n%x\n%x", b, again)
				}
			} else if len(again) != len(b) || string(again[:checkLen]) != string(b[:checkLen]) {
				t.Fatalf("check fields re-encoded differently:\n%x\n%x", b, again)
			}
		}
		if l, err := decodeAddrs(b); err == nil {
			if again := appendAddrs(nil, kindAddrs, l); string(again) != string(b) {
				t.Fatalf("addresses re-encoded differently:\n%x\n%x", b, again)
			}
		}
		if l, err := decodePeers(b); err == nil {
			if again := appendPeers(nil, l); string(again) != string(b) {
				t.Fatalf("table re-encoded differently:\n%x\n%x", b, again)
			}
		}
		if l, err := decodePairs(b); err == nil {
			if again := appendPairs(nil, l); string(again) != string(b) {
				t.Fatalf("pairs re-encoded differently:\n%x\n%x", b, again)
			}
		}
		if l, err := decodePaths(b); err == nil {
			if again := appendPaths(nil, l); string(again) != string(b) {
				t.Fatalf("paths re-encoded differently:\n%x\n%x", b, again)
			}
		}
		if to, _, _, ok := relayDest(b); ok {
			c := append([]byte(nil), b...)
			fromRelayFrame(c)
			toRelayFrame(c, to)
			if string(c) != string(b) {
				t.Fatalf("relay frame rewritten differently")
			}
		}
	})
}

// natWorld: a host, bob and cyd behind endpoint-independent NATs, dan
// behind one that maps per destination; the game running.
func natWorld(t *testing.T, key []byte) (*world, []*machine) {
	w := newWorld(t, 5, impair.Profile{Delay: 5 * time.Millisecond})
	cfg := Config{Players: 3, Key: key}
	ada := w.host("ada", cfg)
	bob := w.joinAt(w.behind("bob", w.nat("10.0.1.1", false), "192.168.1.2:7373"), RolePlayer, ada.addr, cfg)
	dan := w.joinAt(w.behind("dan", w.nat("10.0.3.1", true), "192.168.3.2:7373"), RolePlayer, ada.addr, cfg)
	if !w.runUntil(10*time.Second, allStarted(ada, bob, dan)) {
		t.Fatal("game did not start")
	}
	if bob.s.pathTo("dan") != pathRelayed {
		t.Fatalf("bob → dan %v, want relayed", bob.s.pathTo("dan"))
	}
	return w, []*machine{ada, bob, dan}
}

// Checks that do not carry the session's token, or (with a key) are not
// authenticated by it, are refused and move no link: no one outside the
// session can insert a path. A relay frame from anywhere but its
// sender's own address is not forwarded.
func TestForgedChecksAndFrames_Q7(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("k")} {
		w, ms := natWorld(t, key)
		ada, bob, dan := ms[0], ms[1], ms[2]
		evil := netip.MustParseAddrPort("10.66.0.1:4000")
		before := dan.s.Rejected().Lobby
		// Nominations (dan is the controlled side of bob ↔ dan) with a
		// wrong token, tagged with the wrong key, and tagged by another
		// member (ada) with its own key to dan.
		bobKey, _ := bob.s.checkKey(bob.s.byID[dan.s.self], true)
		adaKey, _ := ada.s.checkKey(ada.s.byID[dan.s.self], true)
		for _, c := range []struct {
			c check
			k []byte
		}{
			{check{Nominate: true, Token: bob.s.token + 1, From: bob.s.self, To: dan.s.self, Tx: 1, Seq: 1 << 30}, bobKey},
			{check{Nominate: true, Token: bob.s.token, From: bob.s.self, To: dan.s.self, Tx: 1, Seq: 1 << 30}, []byte("not the key")},
			{check{Nominate: true, Token: bob.s.token, From: bob.s.self, To: dan.s.self, Tx: 1, Seq: 1 << 30}, adaKey},
		} {
			dan.s.Receive(w.now(), evil, appendCheck(nil, c.c, c.k))
			w.after(dan)
		}
		if dan.s.Rejected().Lobby == before {
			t.Errorf("key=%v: forged checks not counted", key != nil)
		}
		if dan.s.pathTo("bob") != pathRelayed {
			t.Errorf("key=%v: a forged nomination moved dan's link to bob: %v", key != nil, dan.s.pathTo("bob"))
		}
		// A relay frame for dan, claiming bob, sent from elsewhere.
		rel := ada.s.relayed()
		frame := make([]byte, netcore.HeaderLen+8)
		netcore.PutHeader(frame, netcore.Header{Token: ada.s.token, Sender: bob.s.self, Channel: netcore.ChannelUnreliable, Seq: 1})
		toRelayFrame(frame, dan.s.self)
		rej := ada.s.Rejected().Lobby
		ada.s.Receive(w.now(), evil, frame)
		if ada.s.Rejected().Lobby != rej+1 {
			t.Errorf("key=%v: spoofed relay frame not refused", key != nil)
		}
		if got := ada.s.relayed(); got[0].Datagrams != rel[0].Datagrams {
			t.Errorf("key=%v: spoofed relay frame forwarded", key != nil)
		}
		w.runFor(3 * time.Second)
		if bob.s.Done() || dan.s.Done() {
			t.Fatal("a forged datagram ended a session")
		}
	}
}

// The relay has a per-pair byte budget: a member that floods through the
// host gets refused past it, and the refusals are counted.
func TestRelayBudget(t *testing.T) {
	w, ms := natWorld(t, nil)
	ada, bob, dan := ms[0], ms[1], ms[2]
	big := make([]byte, 1200)
	netcore.PutHeader(big, netcore.Header{Token: ada.s.token, Sender: bob.s.self, Channel: netcore.ChannelUnreliable, Seq: 1})
	toRelayFrame(big, dan.s.self)
	bobAt := ada.s.byID[bob.s.self].Addr
	for range 1000 { // 1.2 MB at once, far over the burst
		ada.s.Receive(w.now(), bobAt, big)
	}
	var r *relayCount
	for _, c := range ada.s.nat.relay.pairs {
		if c.aName == "bob" && c.bName == "dan" {
			r = c
		}
	}
	if r == nil || r.refused == 0 || r.forwardedBytes > relayBurst+100_000 {
		t.Fatalf("flood through the relay: %+v", r)
	}
	if got := ada.s.Summary().Relay; len(got) == 0 || got[0].RefusedDatagrams == 0 {
		t.Fatalf("summary relay %+v: refusals not reported", got)
	}
}

// dropRelay is a middlebox on the host's side that drops relay frames.
type dropRelay struct{ netcore.Transport }

func (d dropRelay) Send(to netip.AddrPort, p []byte) error {
	if len(p) > 1 && p[0] == 'L' && p[1] == 'R' {
		return nil
	}
	return d.Transport.Send(to, p)
}

// A pair with no path at all, direct or relayed, ends the lobby after
// 30 s with advice (firewall, port forwarding, --listen), and the lobby
// says meanwhile which pair waits and what is tried.
func TestUnconnectedPairGivesUp(t *testing.T) {
	w := newWorld(t, 6, impair.Profile{Delay: 5 * time.Millisecond})
	cfg := Config{Players: 3}
	ada := w.attach("ada")
	ada.tr = &simworld.Recorder{Inner: dropRelay{ada.h.Node()}}
	s, err := NewHost(w.config(ada, cfg), ada.tr)
	if err != nil {
		t.Fatal(err)
	}
	ada.s = s
	w.machines = append(w.machines, ada)
	ada.h.Drive(s)
	ada.h.Wake()
	bob := w.joinAt(w.behind("bob", w.nat("10.0.1.1", false), "192.168.1.2:7373"), RolePlayer, ada.addr, cfg)
	dan := w.joinAt(w.behind("dan", w.nat("10.0.3.1", true), "192.168.3.2:7373"), RolePlayer, ada.addr, cfg)
	w.runFor(1 * time.Second)
	if p := bob.s.View(w.now()).Lobby.Pending; len(p) != 1 || p[0].B != "dan" || p[0].Trying != "direct" {
		t.Fatalf("bob's pending pairs %+v, want dan, direct (the address the host saw, before punching)", p)
	}
	w.runFor(2 * time.Second)
	p := bob.s.View(w.now()).Lobby.Pending
	if len(p) != 1 || p[0].B != "dan" || p[0].Trying != "punching" {
		t.Fatalf("bob's pending pairs %+v, want dan, punching", p)
	}
	w.runFor(3 * time.Second)
	if p := bob.s.View(w.now()).Lobby.Pending; len(p) != 1 || p[0].Trying != "relayed" {
		t.Fatalf("bob's pending pairs %+v, want dan, relayed", p)
	}
	// The host's lobby says it too, from what bob and dan report.
	if p := ada.s.View(w.now()).Lobby.Pending; len(p) != 1 || p[0].A != "bob" || p[0].B != "dan" || p[0].Trying != "relayed" {
		t.Fatalf("host's pending pairs %+v, want bob ↔ dan, relayed", p)
	}
	w.runFor(5 * time.Second)
	if !slices.ContainsFunc(ada.messages(), func(s string) bool { return strings.HasPrefix(s, "waiting for bob ↔ dan: nothing heard yet") }) {
		t.Errorf("the host's messages do not say what the lobby waits for: %q", ada.messages())
	}
	if !w.runUntil(40*time.Second, func() bool { return bob.s.Done() && dan.s.Done() }) {
		t.Fatal("the lobby did not give up")
	}
	var ue unconnectedError
	if !errors.As(bob.s.Err(), &ue) || ue.Peer != "dan" {
		t.Fatalf("bob ended with %v", bob.s.Err())
	}
	if at := w.now(); at < 30*time.Second || at > 33*time.Second {
		t.Errorf("gave up at %v, want 30 s after the pair began", at)
	}
	for _, word := range []string{"firewall", "forward", "--listen"} {
		if !strings.Contains(bob.s.Err().Error(), word) {
			t.Errorf("advice %q lacks %q", bob.s.Err(), word)
		}
	}
	if !dan.s.Done() {
		t.Error("dan still waits for bob")
	}
	if !slices.ContainsFunc(bob.messages(), func(s string) bool {
		return strings.HasPrefix(s, "waiting for bob ↔ dan: nothing heard yet after ")
	}) {
		t.Errorf("no message says what bob waits for: %q", bob.messages())
	}
	if ada.s.Started() {
		t.Error("the game started without the pair")
	}
}
