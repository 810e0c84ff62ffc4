package session

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// handshakeDatagram is an unsealed handshake datagram holding records.
func handshakeDatagram(t testing.TB, records ...netcore.HandshakeMsg) []byte {
	d := make([]byte, netcore.HeaderLen)
	netcore.PutHeader(d, netcore.Header{Sender: netcore.PeerUnassigned, Channel: netcore.ChannelControl})
	for _, r := range records {
		var err error
		switch r := r.(type) {
		case netcore.Hello:
			d, err = netcore.AppendHello(d, r)
		case netcore.Response:
			d, err = netcore.AppendResponse(d, r)
		default:
			t.Fatalf("record %T", r)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// sentTo sums what m sent to addr since its transport started keeping.
func sentTo(m *machine, addr netip.AddrPort) (n, bytes int) {
	for _, d := range m.tr.Sent {
		if d.To == addr {
			n++
			bytes += len(d.Data)
		}
	}
	return n, bytes
}

// Several handshake records in one datagram get one reply at most, never
// larger than the datagram: four empty-name Hellos (76 bytes) would
// otherwise draw 204 bytes, four bad-cookie Responses (140) 144.
func TestOneReplyPerDatagram_Q7(t *testing.T) {
	w := newWorld(t, 23, lan30)
	host := w.host("alice", Config{Players: 2})
	host.tr.Keep = true
	src := netip.MustParseAddrPort("10.66.0.7:4000")
	hello := netcore.Hello{Nonce: 9, Role: netcore.RolePlayer, Name: ""}
	resp := netcore.Response{Nonce: 9, Role: netcore.RolePlayer, Name: "x"}
	for _, d := range [][]byte{
		handshakeDatagram(t, hello, hello, hello, hello),
		handshakeDatagram(t, resp, resp, resp, resp),
		handshakeDatagram(t, netcore.Hello{Nonce: 1, Role: netcore.RolePlayer, Name: paddedHello("y")}, hello, resp),
	} {
		host.tr.Sent = nil
		host.s.Receive(w.now(), src, d)
		w.after(host)
		n, b := sentTo(host, src)
		if n > 1 || b > len(d) {
			t.Fatalf("%d bytes in, %d replies of %d bytes out", len(d), n, b)
		}
		if n != 1 {
			t.Fatalf("%d bytes in: no reply at all (want the first record answered)", len(d))
		}
	}
}

// FuzzUnverifiedAmplification: whatever datagram a source nobody verified
// sends a host, keyed or not, it gets at most one datagram back and never
// more bytes than it sent (amplification ≤ 1×).
func FuzzUnverifiedAmplification(f *testing.F) {
	hello := netcore.Hello{Nonce: 3, Role: netcore.RolePlayer, Name: paddedHello("z")}
	resp := netcore.Response{Nonce: 3, Role: netcore.RolePlayer, Name: "z"}
	for _, d := range [][]byte{
		handshakeDatagram(f, hello),
		handshakeDatagram(f, hello, hello, hello),
		handshakeDatagram(f, resp, resp, resp, resp),
		handshakeDatagram(f, netcore.Hello{Nonce: 1, Role: netcore.RolePlayer}),
	} {
		f.Add(d[netcore.HeaderLen:], false, false)
		f.Add(d, true, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, raw, keyed bool) {
		var key []byte
		if keyed {
			key = []byte("k")
		}
		w := newWorld(t, 24, lan30)
		host := w.host("alice", Config{Players: 2, Key: key})
		w.runFor(10 * time.Millisecond)
		d := b
		if !raw {
			d = make([]byte, netcore.HeaderLen, netcore.HeaderLen+len(b))
			netcore.PutHeader(d, netcore.Header{Sender: netcore.PeerUnassigned, Channel: netcore.ChannelControl})
			d = append(d, b...)
		}
		host.tr.Keep = true
		src := netip.MustParseAddrPort("10.66.0.8:4000")
		host.s.Receive(w.now(), src, d)
		w.after(host)
		w.runFor(time.Second)
		if n, out := sentTo(host, src); n > 1 || out > len(d) {
			t.Fatalf("%d bytes in, %d datagrams of %d bytes out", len(d), n, out)
		}
	})
}

// helloFloodRun plays a session of three for 20 s and, when rate > 0,
// throws spoofed Hellos at the host at that many a second for 4 s from 8 s
// on, each from a different address (large enough to be answered). It
// returns every machine's events as JSON, the host's Challenges, and how
// many Hellos it threw.
func helloFloodRun(t *testing.T, rate int) (events [3]string, replies, thrown int) {
	w := newWorld(t, 33, lan30)
	alice := w.host("alice", Config{Players: 3})
	bob := w.join("bob", RolePlayer, alice, Config{})
	carol := w.join("carol", RolePlayer, alice, Config{})
	if !w.runUntil(5*time.Second, started(alice, bob, carol)) {
		t.Fatal("no start")
	}
	w.runUntil(8*time.Second, func() bool { return w.now() >= 8*time.Second })
	sent0, _ := alice.s.replyBudget()
	if rate > 0 {
		start := w.now()
		every := time.Second / time.Duration(rate)
		for i := range 4 * rate {
			a := netip.AddrFrom4([4]byte{172, 16, byte(i >> 8), byte(i)})
			from := netip.AddrPortFrom(a, uint16(1024+i%60000))
			d := handshakeDatagram(t, netcore.Hello{Nonce: uint64(i), Role: netcore.RolePlayer, Name: paddedHello("x")})
			thrown++
			w.at(start+time.Duration(i)*every, func() { alice.s.Receive(w.now(), from, d); w.after(alice) })
		}
	}
	w.runFor(12 * time.Second)
	sent1, _ := alice.s.replyBudget()
	replies = int(sent1 - sent0)
	for i, m := range []*machine{alice, bob, carol} {
		var sb strings.Builder
		for _, e := range m.events {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&sb, "%s\n", b)
		}
		events[i] = sb.String()
		if len(m.cks) < 500 {
			t.Fatalf("%s executed %d frames", m.name, len(m.cks))
		}
	}
	return
}

// A flood of spoofed Hellos (20 000 a second for 4 s, from 80 000
// addresses) leaves every player's event stream byte-identical to a quiet
// run, and the host's Challenges stay within the global budget.
func TestSpoofedHelloFloodWithinBudget_Q7(t *testing.T) {
	quiet, none, _ := helloFloodRun(t, 0)
	flooded, replies, thrown := helloFloodRun(t, 20000)
	if none != 0 {
		t.Fatalf("%d replies without a flood", none)
	}
	for i := range quiet {
		if quiet[i] != flooded[i] {
			q, fl := strings.Split(quiet[i], "\n"), strings.Split(flooded[i], "\n")
			for j := range min(len(q), len(fl)) {
				if q[j] != fl[j] {
					t.Fatalf("machine %d: event %d differs:\n%s\n%s", i, j, q[j], fl[j])
				}
			}
			t.Fatalf("machine %d: %d events vs %d", i, len(q), len(fl))
		}
	}
	// 4 s of flood: the burst plus 4 s at the rate, and a little for the
	// refill while the last Hellos arrive.
	limit := helloBurst + 4*helloRate + 1
	if replies > limit || replies < helloRate {
		t.Fatalf("%d Challenges to %d spoofed Hellos, want %d..%d", replies, thrown, helloRate, limit)
	}
	t.Logf("%d spoofed Hellos, %d Challenges", thrown, replies)
}

// The per-source bucket holds one address to sourceBurst replies, then
// sourceRate a second.
func TestReplyBudgetPerSource(t *testing.T) {
	var b replyBudget
	a := netip.MustParseAddrPort("10.0.0.9:1")
	n := 0
	for i := range 100 {
		b.datagram(100)
		if b.admit(time.Duration(i)*time.Millisecond, a, false) {
			n++
		}
	}
	if n != sourceBurst {
		t.Fatalf("%d admitted in 100 ms, want %d", n, sourceBurst)
	}
	b.datagram(100)
	if !b.admit(time.Second, a, false) {
		t.Fatal("no refill after 1 s")
	}
	if b.admit(time.Second, a, false) {
		t.Fatal("two replies for one datagram")
	}
}

// Loopback sources skip the per-source bucket (nobody off this machine can
// forge one): 64 machines on 127.0.0.1 that Hello and Respond at once are
// all answered, as a demo of 64 needs; the global buckets still bound
// them.
func TestReplyBudgetLoopback_Q7(t *testing.T) {
	var b replyBudget
	for _, host := range []string{"127.0.0.1", "::1"} {
		b = replyBudget{}
		n := 0
		for i := range 64 {
			from := netip.AddrPortFrom(netip.MustParseAddr(host), uint16(40000+i))
			for _, response := range []bool{false, true} {
				b.datagram(100)
				if b.admit(0, from, response) {
					n++
				}
			}
		}
		if n != 128 {
			t.Fatalf("%s: %d of 128 records from 64 loopback sockets admitted at once", host, n)
		}
		b.datagram(100)
		from := netip.AddrPortFrom(netip.MustParseAddr(host), 40000)
		m := 0
		for range 2 * helloBurst {
			b.datagram(100)
			if b.admit(0, from, false) {
				m++
			}
		}
		if want := helloBurst - 64; m != want {
			t.Fatalf("%s: %d more Hellos admitted past the global bucket, want %d", host, m, want)
		}
	}
}

// BenchmarkSpoofedHello is what one forged Hello costs a host past its
// budget: the work a flood buys. Sources rotate over
// 4096 addresses, so the per-source table fills and starts over.
func BenchmarkSpoofedHello(b *testing.B) {
	w := newWorld(b, 25, lan30)
	host := w.host("alice", Config{Players: 2})
	d := handshakeDatagram(b, netcore.Hello{Nonce: 1, Role: netcore.RolePlayer, Name: paddedHello("x")})
	froms := make([]netip.AddrPort, 4096)
	for i := range froms {
		froms[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{172, 16, byte(i >> 8), byte(i)}), 4000)
	}
	now := w.now()
	for i := range 2 * helloBurst { // spend the burst
		host.s.Receive(now, froms[i%len(froms)], d)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		host.s.Receive(now, froms[i%len(froms)], d)
	}
	b.StopTimer()
	sent, silenced := host.s.replyBudget()
	b.ReportMetric(float64(sent), "replies")
	_ = silenced
}

// BenchmarkBucket is a token bucket's per-datagram cost on the relay's
// path: a fits, then a spend.
func BenchmarkBucket(b *testing.B) {
	k := bucket{Rate: 1e6, Burst: 1e5}
	now := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		now += time.Microsecond
		if k.Fits(now, 1200) {
			k.Spend(now, 1200, -1e5)
		}
	}
}
