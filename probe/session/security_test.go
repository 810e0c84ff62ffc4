package session

import (
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/simworld"
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
)

// stranger is a machine that speaks the handshake by hand.
type stranger struct {
	ep      *netcore.Endpoint
	sent    []int // sizes of datagrams it sent
	replies []int // sizes of datagrams it got
	got     []netcore.HandshakeMsg
}

type sizeTransport struct {
	netcore.Transport
	sizes *[]int
}

func (s sizeTransport) Send(to netip.AddrPort, p []byte) error {
	*s.sizes = append(*s.sizes, len(p))
	return s.Transport.Send(to, p)
}

func newStranger(t *testing.T, w *world, key []byte) *stranger {
	st := &stranger{}
	m := w.attach("stranger")
	w.net.Detach(m.addr) // the stranger speaks the handshake itself, undriven
	node := w.net.Attach(m.addr, func(now time.Duration, from netip.AddrPort, p []byte) {
		st.replies = append(st.replies, len(p))
		st.ep.Receive(now, from, p)
	})
	ep, err := netcore.NewEndpoint(netcore.Config{Self: netcore.PeerUnassigned, Key: key,
		Handshake: func(_ time.Duration, _ netip.AddrPort, _ netcore.PeerID, msg netcore.HandshakeMsg) {
			st.got = append(st.got, msg)
		}}, sizeTransport{node, &st.sent}, func(time.Duration, netcore.PeerID, netcore.Channel, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	st.ep = ep
	return st
}

// An unverified source never gets a reply larger than its request: a Hello
// smaller than the Challenge gets nothing; a Response with a wrong cookie
// gets a Refuse, which is smaller than any Response; and a joiner's own Hello
// is padded so that it is answered.
func TestNoReplyLargerThanRequest(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("k")} {
		w := newWorld(t, 21, lan30)
		host := w.host("alice", Config{Players: 2, Key: key})
		st := newStranger(t, w, key)
		send := func(m netcore.HandshakeMsg) {
			if err := st.ep.SendHandshake(host.addr, m); err != nil {
				t.Fatal(err)
			}
			w.runFor(100 * time.Millisecond)
		}
		for _, name := range []string{"", "a", "0123456789"} {
			send(netcore.Hello{Nonce: 1, Role: netcore.RolePlayer, Name: name})
		}
		if len(st.replies) != 0 {
			t.Fatalf("key %q: small Hellos got %d replies", key, len(st.replies))
		}
		if r := host.s.Rejected(); r.Handshake != 3 {
			t.Fatalf("rejected %+v, want 3 handshake", r)
		}
		send(netcore.Hello{Nonce: 2, Role: netcore.RolePlayer, Name: paddedHello("x")})
		send(netcore.Response{Nonce: 2, Role: netcore.RolePlayer, Name: "x"}) // zero cookie
		if len(st.replies) != 2 || len(st.sent) != 5 {
			t.Fatalf("replies %v to %v", st.replies, st.sent)
		}
		for i, n := range st.replies {
			if req := st.sent[3+i]; n > req {
				t.Fatalf("key %q: reply of %d bytes to a request of %d", key, n, req)
			}
		}
		if _, ok := st.got[0].(netcore.Challenge); !ok {
			t.Fatalf("first reply %T, want a Challenge", st.got[0])
		}
		if r, ok := st.got[1].(netcore.Refuse); !ok || r.Reason != netcore.RefuseBadCookie {
			t.Fatalf("second reply %+v, want a bad-cookie Refuse", st.got[1])
		}
		if host.s.seated() != 1 {
			t.Fatal("a bad cookie got a seat")
		}
	}
}

// A Response whose cookie was made for another address is refused.
func TestCookieBoundToAddress(t *testing.T) {
	w := newWorld(t, 22, lan30)
	host := w.host("alice", Config{})
	a := netip.MustParseAddrPort("10.9.9.9:1000")
	b := netip.MustParseAddrPort("10.9.9.9:1001")
	c := host.s.cookieFor(a, 77, host.s.epoch(w.now()))
	if !host.s.cookieOK(w.now(), a, 77, c) {
		t.Fatal("own cookie refused")
	}
	if host.s.cookieOK(w.now(), b, 77, c) || host.s.cookieOK(w.now(), a, 78, c) {
		t.Fatal("cookie accepted for another address or nonce")
	}
	if !host.s.cookieOK(w.now()+cookieEpoch, a, 77, c) || host.s.cookieOK(w.now()+2*cookieEpoch, a, 77, c) {
		t.Fatal("cookie lifetime is not one to two epochs")
	}
}

// floodRun plays a session of three for 40 s and, when flood is set, throws
// 10 000 datagrams at alice from 12 s on: 5 000 random ones from strangers
// and from bob's and carol's addresses, and 5 000 truncated copies of what
// bob and carol really sent her.
func floodRun(t *testing.T, flood bool) (events [3][]string, rejected feed.RejectedCounts, injected int) {
	w := newWorld(t, 31, lan30)
	alice := w.host("alice", Config{Players: 3, DropTimeout: 10 * time.Second})
	bob := w.join("bob", RolePlayer, alice, Config{})
	carol := w.join("carol", RolePlayer, alice, Config{})
	bob.tr.Keep, carol.tr.Keep = true, true
	if !w.runUntil(5*time.Second, started(alice, bob, carol)) {
		t.Fatal("no start")
	}
	w.runFor(10 * time.Second)
	before := alice.s.Rejected()
	if flood {
		rng := rand.New(rand.NewPCG(5, 6))
		var real []simworld.Sent
		for _, m := range []*machine{bob, carol} {
			for _, d := range m.tr.Sent {
				if d.To == alice.addr && len(d.Data) > netcore.HeaderLen+1 {
					d.To = m.addr // remember the real sender
					real = append(real, d)
				}
			}
		}
		froms := []netip.AddrPort{bob.addr, carol.addr, netip.MustParseAddrPort("10.66.0.1:5000"), netip.MustParseAddrPort("[2001:db8::1]:7373")}
		start := w.now()
		for i := range 10000 {
			var from netip.AddrPort
			var d []byte
			if i%2 == 0 {
				d = make([]byte, rng.IntN(1500)) // up to oversize
				for j := range d {
					d[j] = byte(rng.Uint32())
				}
				from = froms[rng.IntN(len(froms))]
			} else {
				src := real[rng.IntN(len(real))]
				// Any cut but at the end of the header: a header with an
				// empty body is a well-formed (if pointless) datagram.
				n := 1 + rng.IntN(len(src.Data)-1)
				if n == netcore.HeaderLen {
					n--
				}
				d, from = src.Data[:n], src.To
			}
			injected++
			w.at(start+time.Duration(i)*2*time.Millisecond, func() { alice.s.Receive(w.now(), from, d); w.after(alice) })
		}
	}
	w.runFor(30 * time.Second)
	after := alice.s.Rejected()
	rejected = feed.RejectedCounts{Total: after.Total - before.Total, Malformed: after.Malformed - before.Malformed,
		Oversize: after.Oversize - before.Oversize, Token: after.Token - before.Token, Sender: after.Sender - before.Sender}
	for i, m := range []*machine{alice, bob, carol} {
		for _, e := range m.events {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			events[i] = append(events[i], string(b))
		}
		if len(m.cks) < 1000 {
			t.Fatalf("%s executed %d frames", m.name, len(m.cks))
		}
	}
	return
}

// 10 000 random and truncated datagrams thrown at a live peer change
// nothing: every machine publishes exactly the events it publishes without
// them, and the rejected counter accounts for every one.
func TestFloodOfBadDatagramsChangesNothing(t *testing.T) {
	quiet, _, _ := floodRun(t, false)
	flooded, rej, n := floodRun(t, true)
	for i := range quiet {
		if strings.Join(quiet[i], "\n") != strings.Join(flooded[i], "\n") {
			for j := range min(len(quiet[i]), len(flooded[i])) {
				if quiet[i][j] != flooded[i][j] {
					t.Fatalf("machine %d: event %d differs:\n%s\n%s", i, j, quiet[i][j], flooded[i][j])
				}
			}
			t.Fatalf("machine %d: %d events vs %d", i, len(quiet[i]), len(flooded[i]))
		}
	}
	if rej.Total != uint64(n) {
		t.Fatalf("rejected %d of %d injected: %+v", rej.Total, n, rej)
	}
	if rej.Oversize == 0 || rej.Malformed == 0 {
		t.Fatalf("rejections %+v: want oversize and malformed among them", rej)
	}
}

// fuzzWorld is a running session of two plus a joiner still in the lobby
// of another host, and real datagrams each has sent, for seeds.
func fuzzWorld(t testing.TB) (w *world, alice, bob *machine) {
	w = newWorld(t, 41, lan30)
	alice = w.host("alice", Config{Players: 2})
	bob = w.join("bob", RolePlayer, alice, Config{})
	alice.tr.Keep, bob.tr.Keep = true, true
	w.runFor(3 * time.Second)
	return
}

// FuzzSessionReceive: whatever arrives, the session neither panics nor
// ends; and what a blind attacker can send (from a stranger's address, or
// without the session token) changes nothing: play goes on. A datagram with
// the right token from a member's address is the one thing a session
// without a key takes on trust (the token guards against blind spoofing
// only; --key closes the rest, Q7).
func FuzzSessionReceive(f *testing.F) {
	w, alice, bob := fuzzWorld(f)
	for _, m := range []*machine{alice, bob} {
		for i, d := range m.tr.Sent {
			if i%7 == 0 {
				f.Add(d.Data, uint8(i))
			}
		}
	}
	f.Add([]byte("LS\x01\x00"), uint8(0))
	_ = w
	f.Fuzz(func(t *testing.T, d []byte, who uint8) {
		w, alice, bob := fuzzWorld(t)
		froms := []netip.AddrPort{bob.addr, alice.addr, netip.MustParseAddrPort("10.99.0.1:9")}
		targets := []*machine{alice, bob, alice}
		from, to := froms[int(who)%3], targets[int(who)%3]
		to.s.Receive(w.now(), from, d)
		w.after(to)
		f0 := bob.s.Frame()
		w.runFor(time.Second)
		if bob.s.Done() || alice.s.Done() {
			t.Fatalf("session ended: %v %v", alice.s.Err(), bob.s.Err())
		}
		var token [8]byte
		le.PutUint64(token[:], alice.s.token)
		blind := from == froms[2] || len(d) < 12 || string(d[4:12]) != string(token[:])
		if blind && bob.s.Frame() < f0+25 {
			t.Fatalf("a blind datagram stalled the game: frames %d → %d", f0, bob.s.Frame())
		}
	})
}
