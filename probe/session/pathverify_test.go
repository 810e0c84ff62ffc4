package session

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/simworld"
	"github.com/lagscope/lagscope/netcore"
)

// victim is a third party's address: it counts whatever reaches it.
type victim struct {
	addr             netip.AddrPort
	datagrams, bytes int
}

func (w *world) victim(addr string) *victim {
	v := &victim{addr: netip.MustParseAddrPort(addr)}
	w.net.Attach(v.addr, func(_ time.Duration, _ netip.AddrPort, p []byte) {
		v.datagrams++
		v.bytes += len(p)
	})
	return v
}

// trio is a running game of three players: ada hosts; bob and cyd either
// hear each other at once at the addresses ada sees them at (they never
// punch) or punch a direct path.
func trio(t *testing.T, punched bool, key []byte) (w *world, ada, bob, cyd *machine) {
	t.Helper()
	w = newWorld(t, 77, lan30)
	cfg := Config{Players: 3, Key: key}
	ada = w.host("ada", cfg)
	if punched {
		// bob reaches ada through a proxy, so the address ada sees him at
		// reaches nobody else: bob and cyd punch.
		proxy := w.forwarder("10.0.0.9:9400", "10.0.0.9:50000", ada.addr)
		bob = w.joinAt(w.attach("bob"), RolePlayer, proxy, cfg)
		cyd = w.join("cyd", RolePlayer, ada, cfg)
	} else {
		bob = w.join("bob", RolePlayer, ada, cfg)
		cyd = w.join("cyd", RolePlayer, ada, cfg)
	}
	if !w.runUntil(20*time.Second, allStarted(ada, bob, cyd)) {
		t.Fatal("the game did not start")
	}
	w.runFor(3 * time.Second)
	if punched && (bob.s.pathTo("cyd") != pathDirect || bob.s.byID[cyd.s.self].path.state != pathDirect) {
		t.Fatalf("bob → cyd path %v, want a punched direct path", bob.s.pathTo("cyd"))
	}
	return w, ada, bob, cyd
}

// pathsOf is every machine's address for every other member, and the
// endpoint link's: what a forgery must not change.
func pathsOf(ms ...*machine) map[string]netip.AddrPort {
	out := map[string]netip.AddrPort{}
	for _, m := range ms {
		for _, o := range m.s.members {
			if o.ID != m.s.self {
				out[m.name+"→"+o.Name] = o.Addr
			}
		}
	}
	return out
}

// inStep fails unless every player ran at least frames frames past from
// and all agree on every frame's checksum.
func inStep(t *testing.T, from, frames int, ms ...*machine) {
	t.Helper()
	low := ms[0].s.Frame()
	for _, m := range ms {
		low = min(low, m.s.Frame())
		if m.s.Done() {
			t.Fatalf("%s ended: %v", m.name, m.s.Err())
		}
	}
	if low < from+frames {
		t.Fatalf("frames %d → %d, want at least %d more", from, low, frames)
	}
	for f := range low {
		for _, m := range ms[1:] {
			if m.cks[f] != ms[0].cks[f] {
				t.Fatalf("frame %d: %s's checksum %x, %s's %x", f, m.name, m.cks[f], ms[0].name, ms[0].cks[f])
			}
		}
	}
}

func minFrame(ms ...*machine) int {
	f := ms[0].s.Frame()
	for _, m := range ms {
		f = min(f, m.s.Frame())
	}
	return f
}

// lastTx is the secret of the latest check m sent to the member with ID
// id: what a forger that saw it on its way somewhere would replay.
func lastTx(m *machine, id netcore.PeerID) uint64 {
	p := &m.s.byID[id].path
	return p.sent[(p.sentAt+checkMemory-1)%checkMemory].tx
}

// The attack a watcher can mount once it has learnt the token and the
// roster: one check, from a third party's address, that claims to come
// from bob (the lower PeerID, the side that nominates) and nominates that
// address for bob's link with cyd. Open and keyed, from a stranger (no
// tag), with a wrong key, and from a member (ada) that tags with its own
// pair key toward the victim of the forgery; on a pair that never punched
// and on one that punched its direct path. The link, the frames and the
// victim stay untouched.
func TestForgedNominationMovesNothing(t *testing.T) {
	key := []byte("correct horse battery staple")
	const (
		noTag = iota
		wrongKey
		memberKey
	)
	for _, punched := range []bool{false, true} {
		for _, c := range []struct {
			name    string
			session []byte // the session's key
			forge   int    // what the forger tags its checks with
		}{
			{"open, stranger", nil, noTag},
			{"open, member", nil, memberKey},
			{"keyed, stranger", key, noTag},
			{"keyed, stranger with a wrong key", key, wrongKey},
			{"keyed, member", key, memberKey},
		} {
			t.Run(fmt.Sprintf("%s/punched=%v", c.name, punched), func(t *testing.T) {
				w, ada, bob, cyd := trio(t, punched, c.session)
				v := w.victim("10.0.0.99:9999")
				tag := func(to *machine) []byte {
					switch c.forge {
					case wrongKey:
						return []byte("32 bytes that are not the key..")
					case memberKey:
						k, _ := ada.s.checkKey(ada.s.byID[to.s.self], true)
						return k
					}
					return nil
				}
				before := pathsOf(ada, bob, cyd)
				rejBefore := cyd.s.Rejected()
				f0 := minFrame(ada, bob, cyd)
				forged := []check{
					{Nominate: true, Token: ada.s.token, From: bob.s.self, To: cyd.s.self, Tx: 1, Seq: 1 << 30},
					// The same from the side that may not nominate.
					{Nominate: true, Token: ada.s.token, From: cyd.s.self, To: bob.s.self, Tx: 1, Seq: 1 << 30},
					// A plain check and a forged answer.
					{Token: ada.s.token, From: bob.s.self, To: cyd.s.self, Tx: 2, Seq: 1 << 30},
					{Answer: true, Nominate: true, Token: ada.s.token, From: cyd.s.self, To: bob.s.self,
						Tx: lastTx(bob, cyd.s.self), Seq: 1},
				}
				for _, f := range forged {
					to := cyd
					if f.To == bob.s.self {
						to = bob
					}
					to.s.Receive(w.now(), v.addr, appendCheck(nil, f, tag(to)))
					w.after(to)
					if now := pathsOf(ada, bob, cyd); !maps(before, now) {
						t.Fatalf("%+v moved a path:\n before %v\n after  %v", f, before, now)
					}
				}
				w.runFor(10 * time.Second)
				if v.datagrams != 0 {
					t.Errorf("the victim got %d datagrams (%d bytes)", v.datagrams, v.bytes)
				}
				if after := pathsOf(ada, bob, cyd); !maps(before, after) {
					t.Errorf("paths moved:\n before %v\n after  %v", before, after)
				}
				inStep(t, f0, 250, ada, bob, cyd)
				rej := cyd.s.Rejected()
				refused := rej.Path + rej.Lobby - rejBefore.Path - rejBefore.Lobby
				if refused == 0 {
					t.Errorf("cyd counted no refusal: %+v", rej)
				}
				for _, m := range []*machine{bob, cyd} {
					for _, msg := range m.messages() {
						if strings.Contains(msg, v.addr.String()) || strings.Contains(msg, "gone bad") {
							t.Errorf("%s: %q", m.name, msg)
						}
					}
				}
			})
		}
	}
}

func maps(a, b map[string]netip.AddrPort) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// During punching a check from a new address is a candidate (RFC 8445's
// peer-reflexive ones), so it gets one answer of its own size; a forged
// nomination from it still moves nothing, since the address never answers
// a check of cyd's, and the pair finds its real path.
func TestForgedNominationWhilePunching(t *testing.T) {
	w := newWorld(t, 78, lan30)
	cfg := Config{Players: 3}
	ada := w.host("ada", cfg)
	proxy := w.forwarder("10.0.0.9:9400", "10.0.0.9:50000", ada.addr)
	bob := w.joinAt(w.attach("bob"), RolePlayer, proxy, cfg)
	cyd := w.join("cyd", RolePlayer, ada, cfg)
	punching := func() bool {
		m := cyd.s.byID[bob.s.self]
		return m != nil && m.path.state == pathPunching
	}
	if !w.runUntil(20*time.Second, punching) {
		t.Fatal("cyd never punched towards bob")
	}
	v := w.victim("10.0.0.99:9999")
	forged := appendCheck(nil, check{Nominate: true, Token: cyd.s.token, From: bob.s.self, To: cyd.s.self, Tx: 9, Seq: 1 << 30}, nil)
	cyd.s.Receive(w.now(), v.addr, forged)
	w.after(cyd)
	if !w.runUntil(20*time.Second, allStarted(ada, bob, cyd)) {
		t.Fatal("the game did not start")
	}
	w.runFor(5 * time.Second)
	if v.datagrams > 1 || v.bytes > len(forged) {
		t.Errorf("the victim got %d datagrams, %d bytes, for one check of %d", v.datagrams, v.bytes, len(forged))
	}
	if got := cyd.s.byID[bob.s.self].Addr; got != bob.addr {
		t.Errorf("cyd's path to bob is %v, want bob's own address %v", got, bob.addr)
	}
	if cyd.s.pathTo("bob") != pathDirect {
		t.Errorf("cyd → bob %v, want direct", cyd.s.pathTo("bob"))
	}
}

// A relay frame is followed only by a pair without a direct path: one the
// host would forward for a member that spoofs bob's address (or a member
// holding the key) does not pull cyd's direct link with bob onto the
// relay.
func TestRelayFrameDoesNotMoveDirectPath(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("k")} {
		w, ada, bob, cyd := trio(t, true, key)
		bob.tr.Keep = true
		w.runFor(time.Second)
		i := slices.IndexFunc(bob.tr.Sent, func(d simworld.Sent) bool {
			return d.To == ada.s.byID[cyd.s.self].Addr || d.To.Addr() == netip.MustParseAddr("10.0.2.1")
		})
		if i < 0 {
			t.Fatal("bob sent cyd nothing")
		}
		frame := append([]byte(nil), bob.tr.Sent[i].Data...)
		toRelayFrame(frame, cyd.s.self)
		before := pathsOf(ada, bob, cyd)
		rej0 := cyd.s.Rejected().Path
		f0 := minFrame(ada, bob, cyd)
		for range 5 {
			cyd.s.Receive(w.now(), ada.addr, frame)
			w.after(cyd)
		}
		w.runFor(5 * time.Second)
		if cyd.s.pathTo("bob") != pathDirect {
			t.Errorf("key=%v: cyd → bob %v after relay frames, want direct", key != nil, cyd.s.pathTo("bob"))
		}
		if after := pathsOf(ada, bob, cyd); !maps(before, after) {
			t.Errorf("key=%v: paths moved:\n before %v\n after  %v", key != nil, before, after)
		}
		if got := cyd.s.Rejected().Path - rej0; got != 5 {
			t.Errorf("key=%v: %d relay frames counted under path, want 5", key != nil, got)
		}
		inStep(t, f0, 120, ada, bob, cyd)
	}
}

// A NAT that forgets its mappings mid-game (a router restart, a flushed
// conntrack table): bob's datagrams now leave from new public ports. Each
// machine that hears bob's authentic datagrams from the new source checks
// it, and moves its link once the check is answered; the game goes on.
func TestNATRebindingFollowsVerifiedCheck(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("correct horse battery staple")} {
		w := newWorld(t, 79, lan30)
		cfg := Config{Players: 3, Key: key}
		ada := w.host("ada", cfg)
		bobNAT := w.nat("10.0.1.1", false)
		bob := w.joinAt(w.behind("bob", bobNAT, "192.168.1.2:7373"), RolePlayer, ada.addr, cfg)
		cyd := w.joinAt(w.behind("cyd", w.nat("10.0.2.1", false), "192.168.2.2:7373"), RolePlayer, ada.addr, cfg)
		if !w.runUntil(20*time.Second, allStarted(ada, bob, cyd)) {
			t.Fatal("the game did not start")
		}
		w.runFor(3 * time.Second)
		oldAtAda, oldAtCyd := ada.s.byID[bob.s.self].Addr, cyd.s.byID[bob.s.self].Addr
		f0 := minFrame(ada, bob, cyd)
		bobNAT.rebind()
		w.runFor(10 * time.Second)
		newAtAda, newAtCyd := ada.s.byID[bob.s.self].Addr, cyd.s.byID[bob.s.self].Addr
		if newAtAda == oldAtAda || newAtAda.Addr() != bobNAT.pub {
			t.Errorf("key=%v: ada's link to bob at %v (was %v), want a new port of bob's NAT", key != nil, newAtAda, oldAtAda)
		}
		if newAtCyd == oldAtCyd || newAtCyd.Addr() != bobNAT.pub {
			t.Errorf("key=%v: cyd's link to bob at %v (was %v), want a new port of bob's NAT", key != nil, newAtCyd, oldAtCyd)
		}
		if !slices.Contains(ada.s.byID[bob.s.self].path.verified, newAtAda) {
			t.Errorf("key=%v: ada moved to %v without it answering a check", key != nil, newAtAda)
		}
		if cyd.s.pathTo("bob") != pathDirect {
			t.Errorf("key=%v: cyd → bob %v", key != nil, cyd.s.pathTo("bob"))
		}
		moved := slices.ContainsFunc(cyd.messages(), func(s string) bool { return strings.Contains(s, "cyd ↔ bob: path moved to "+newAtCyd.String()) })
		if !moved {
			t.Errorf("key=%v: cyd says nothing of the move: %q", key != nil, cyd.messages())
		}
		inStep(t, f0, 200, ada, bob, cyd)
	}
}

// FuzzForgedPaths: checks, answers and relay frames in any shape, from
// third parties' addresses, the host's and the members' own, to a running
// session of three (two behind NATs with a punched direct path), without
// a key: no link moves, no machine falls out of step, no victim gets more
// bytes than were sent, and each datagram is counted at most once.
func FuzzForgedPaths(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{0x11, 0x03, 0x01, 0x02, 0xff, 0xff, 0xff, 0x7f, 0x22, 0x05, 0x02, 0x01, 0, 0, 0, 1})
	// The attack itself: a nomination for the pair's link, from a third
	// party's address, in both directions (which of bob and cyd has the
	// lower PeerID depends on who finished joining first).
	f.Add([]byte{0x02, 0x02, 0x01, 0x02, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{0x01, 0x02, 0x02, 0x01, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{0x40, 0x02, 0x01, 0x03, 1, 0, 0, 0, 0x41, 0x01, 0x03, 0x02, 2, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 8*32 {
			ops = ops[:8*32]
		}
		w, ada, bob, cyd := trio(t, true, nil)
		victims := []*victim{w.victim("10.0.0.99:9999"), w.victim("10.0.0.98:53"), w.victim("10.0.1.1:40999")}
		ms := []*machine{ada, bob, cyd}
		ids := []uint16{uint16(ada.s.self), uint16(bob.s.self), uint16(cyd.s.self), 0, 7}
		before := pathsOf(ada, bob, cyd)
		var rej0 [3]uint64
		for i, m := range ms {
			rej0[i] = m.s.Rejected().Total
		}
		f0 := minFrame(ada, bob, cyd)
		sent, sentBytes := 0, 0
		for ; len(ops) >= 8; ops = ops[8:] {
			op := ops[:8]
			to := ms[int(op[0]&3)%3]
			var from netip.AddrPort
			switch src := int(op[0]>>2) % 6; {
			case src < 3:
				from = victims[src].addr
			case src == 3:
				from = ada.addr
			default:
				// As if spoofed from a member's own address.
				from = victims[0].addr
				if m := to.s.byID[ms[src-3].s.self]; m != nil && m.ID != to.s.self {
					from = m.Addr
				}
			}
			c := check{Answer: op[1]&1 != 0, Nominate: op[1]&2 != 0, Token: ada.s.token,
				From: netcore.PeerID(ids[int(op[2])%len(ids)]), To: netcore.PeerID(ids[int(op[3])%len(ids)]),
				Seq: uint32(op[4]) | uint32(op[5])<<8 | uint32(op[6])<<16 | uint32(op[7])<<24}
			if op[1]&4 != 0 {
				// An on-path forger that saw a check's secret on its way.
				if m := to.s.byID[c.From]; m != nil {
					c.Tx = lastTx(to, c.From)
				}
			}
			var d []byte
			if op[1]&8 != 0 {
				// A relay frame: a netcore datagram of the claimed sender's.
				d = make([]byte, 40)
				d[0], d[1], d[2] = netcore.Magic0, netcore.Magic1, netcore.Version
				le.PutUint64(d[4:], ada.s.token)
				le.PutUint16(d[12:], uint16(c.From))
				toRelayFrame(d, c.To)
			} else {
				// Tagged by the member the check names, speaking as itself
				// from anywhere (op[1]&16), or by ada with its own key to the
				// receiver: only the pair's own key passes.
				var key []byte
				if from := ms[0]; op[1]&16 != 0 {
					for _, m := range ms {
						if m.s.self == c.From {
							from = m
						}
					}
					if fm := from.s.byID[to.s.self]; fm != nil && from != to {
						key, _ = from.s.checkKey(fm, true)
					}
				} else if am := ada.s.byID[to.s.self]; am != nil && to != ada {
					key, _ = ada.s.checkKey(am, true)
				}
				d = appendCheck(nil, c, key)
			}
			sent++
			sentBytes += len(d)
			to.s.Receive(w.now(), from, d)
			w.after(to)
			if now := pathsOf(ada, bob, cyd); !maps(before, now) {
				t.Fatalf("%+v from %v moved a path:\n before %v\n after  %v", c, from, before, now)
			}
			w.runFor(time.Duration(op[7]%8) * 10 * time.Millisecond)
		}
		w.runFor(5 * time.Second)
		for _, v := range victims {
			if v.bytes > sentBytes {
				t.Errorf("victim %v got %d bytes for %d sent", v.addr, v.bytes, sentBytes)
			}
		}
		if after := pathsOf(ada, bob, cyd); !maps(before, after) {
			t.Errorf("paths moved:\n before %v\n after  %v", before, after)
		}
		for i, m := range ms {
			if got := m.s.Rejected().Total - rej0[i]; got > uint64(sent) {
				t.Errorf("%s counted %d refusals for %d datagrams", m.name, got, sent)
			}
		}
		inStep(t, f0, 100, ada, bob, cyd)
	})
}

// The redirect attack of a member that holds the session code (here a
// watcher): it holds back its own datagrams to bob and sends one from a
// second socket of its own, which bob checks — so the member sees that
// check's secret; it spoofs another from a victim's address, which bob
// checks too; and it answers, from the victim's address, with the secret
// it saw. Each check carries a secret of its own, and an answer moves a
// link only with the secret of the check sent to the address it comes
// from: bob's link to the watcher stays where it is, and the victim gets
// at most the one check bob sent it.
func TestCheckSecretProvesOnlyItsOwnAddress(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("the session code")} {
		t.Run(fmt.Sprintf("keyed=%v", key != nil), func(t *testing.T) {
			w, ada, bob, cyd := trio(t, false, key)
			mon := w.join("mon", RoleObserver, ada, Config{Key: key})
			if !w.runUntil(10*time.Second, func() bool {
				m := bob.s.byID[mon.s.self]
				return m != nil && m.linked && m.heard
			}) {
				t.Fatal("bob never linked to the watcher")
			}
			w.runFor(2 * time.Second)
			monAt := bob.s.byID[mon.s.self].Addr
			second := netip.MustParseAddrPort("10.0.0.77:4000") // the watcher's second socket
			var seen [][]byte                                   // what bob sends there
			w.net.Attach(second, func(_ time.Duration, _ netip.AddrPort, p []byte) { seen = append(seen, bytes.Clone(p)) })
			v := w.victim("10.0.0.99:9997")
			var held [][]byte
			mon.tr.Divert = func(to netip.AddrPort, p []byte) bool {
				if to == bob.addr && len(p) >= netcore.HeaderLen && p[1] == netcore.Magic1 {
					held = append(held, bytes.Clone(p))
					return true
				}
				return false
			}
			if !w.runUntil(5*time.Second, func() bool { return len(held) >= 2 }) {
				t.Fatal("the watcher sent bob nothing")
			}
			bob.s.Receive(w.now(), second, held[0])
			w.after(bob)
			w.runFor(100 * time.Millisecond) // the check on its way
			var tx uint64
			for _, p := range seen {
				if c, err := decodeCheck(p, key != nil || bob.s.ep.Sealed()); err == nil && !c.Answer {
					tx = c.Tx
				}
			}
			if tx == 0 {
				t.Fatalf("bob sent no check to the watcher's second socket (%d datagrams)", len(seen))
			}
			w.runFor(300 * time.Millisecond) // past probeEvery
			bob.s.Receive(w.now(), v.addr, held[1])
			w.after(bob)
			rej := bob.s.Rejected().Path
			mk, _ := mon.s.checkKey(mon.s.byID[bob.s.self], true)
			answer := appendCheck(nil, check{Answer: true, Token: ada.s.token, From: mon.s.self, To: bob.s.self, Tx: tx, Seq: 1}, mk)
			bob.s.Receive(w.now(), v.addr, answer)
			w.after(bob)
			w.runFor(5 * time.Second)
			if got := bob.s.byID[mon.s.self].Addr; got != monAt {
				t.Fatalf("bob's link to the watcher moved to %v (was %v)", got, monAt)
			}
			if bob.s.Rejected().Path == rej {
				t.Error("the replayed secret was not counted as a path refusal")
			}
			if v.bytes > bob.s.checkSize() {
				t.Errorf("the victim got %d datagrams, %d bytes", v.datagrams, v.bytes)
			}
			for _, msg := range bob.messages() {
				if strings.Contains(msg, v.addr.String()) {
					t.Errorf("bob: %q", msg)
				}
			}
			inStep(t, 0, 100, ada, bob, cyd)
		})
	}
}
