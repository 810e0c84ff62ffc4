package netcore

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// NextDeadline is kept between calls (only links whose timers changed are
// looked at again); each step below changes one kind of timer and checks
// the answer, and checkDeadline checks every link's kept part against one
// worked out from scratch.
func TestNextDeadlineFollowsEveryTimer_T8(t *testing.T) {
	far := time.Hour // LinkReports out of the way
	a, b := newPair(t, func(_ PeerID, c *Config) { c.PingInterval = far })
	expect := func(s *side, want time.Duration, what string) {
		t.Helper()
		checkDeadline(t, s.ep)
		if d, ok := s.ep.NextDeadline(); !ok || d != want {
			t.Fatalf("%s: NextDeadline %v %v, want %v", what, d, ok, want)
		}
	}
	expect(b, far, "idle")

	// Reassembly timeouts start and end with fragments.
	a.ep.Send(0, peerB, ChannelUnreliable, bytes.Repeat([]byte("u"), MaxDataPayload+1))
	u := a.tr.take()
	a.ep.Send(0, peerB, ChannelGlobal, bytes.Repeat([]byte("g"), MaxDataPayload+1))
	g := a.tr.take()
	b.ep.Receive(ms(10), addrA, g[0].data)
	expect(b, ms(10)+defaultGlobalTimeout, "half a global message")
	b.ep.Receive(ms(20), addrA, u[0].data)
	expect(b, ms(20)+minReassemblyTimeout, "and half an unreliable one")
	b.ep.Receive(ms(30), addrA, u[1].data)
	expect(b, ms(10)+defaultGlobalTimeout, "the unreliable one whole")
	b.ep.Tick(ms(10) + defaultGlobalTimeout)
	expect(b, far, "the global one expired")
	drop(b)

	// Retries come and go with sends and acks.
	expect(a, defaultGlobalRetry, "A's global message retried (T14)")
	runTicks(t, a, defaultGlobalTimeout, nil)
	drop(a)
	expect(a, far, "and dropped at its timeout")
	measure(t, a, b, 20*time.Second, ms(100))
	expect(a, far, "a round trip measured")
	start := 30 * time.Second
	a.ep.Send(start, peerB, ChannelReliable, []byte("x"))
	st, _ := a.ep.Stats(peerB)
	expect(a, start+st.RTO, "a reliable packet in flight")
	// Unanswered, its retries double (T8) until the next one comes after
	// the link turns bad: the deadline is then that turn.
	for {
		d, _ := a.ep.NextDeadline()
		st, _ = a.ep.Stats(peerB)
		if d == start+st.ConnTimeout {
			break
		}
		if d > start+st.ConnTimeout {
			t.Fatalf("deadline %v passed the connection timeout %v", d, start+st.ConnTimeout)
		}
		a.ep.Tick(d)
		checkDeadline(t, a.ep)
	}
	// A new round-trip measurement (T5) puts the connection timeout back
	// to the session's: the deadline moves with it.
	a.ep.ResetMeasurement()
	checkDeadline(t, a.ep)
	if d, _ := a.ep.NextDeadline(); d == start+st.ConnTimeout {
		t.Errorf("deadline still %v after the connection timeout changed", d)
	}
	drop(a)
	a.ep.Receive(start+ms(50), addrB, raw(Header{Token: token, Sender: peerB}, appendAck(nil, ChannelReliable, 0, 1)))
	expect(a, far, "acked")

	// A link that goes takes its timers with it.
	a.ep.AddLink(start, 3, addrC, PublicKey{})
	a.ep.Send(start, 3, ChannelReliable, []byte("y"))
	expect(a, start+defaultRetryInterval, "a packet in flight to a third peer")
	a.ep.RemoveLink(3)
	expect(a, far, "that link removed")
}

// Every link reports once per ping interval (L4), and the reports of all
// links go together: an idle endpoint wakes once per interval however many
// links it has, though they opened at different times.
func TestLinkReportsShareOneWakeUp_L4(t *testing.T) {
	tr := &capture{addr: addrA}
	e, err := NewEndpoint(Config{Self: 1, Session: token}, tr, func(time.Duration, PeerID, Channel, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	const links = 63
	for i := range links {
		addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, 0, byte(i)}), 7373)
		if err := e.AddLink(time.Duration(i)*ms(37), PeerID(i+2), addr, PublicKey{}); err != nil {
			t.Fatal(err)
		}
	}
	var wakes []time.Duration
	reports := map[netip.AddrPort]int{}
	for {
		d, ok := e.NextDeadline()
		if !ok || d > 10*time.Second {
			break
		}
		e.Tick(d)
		wakes = append(wakes, d)
		for _, s := range tr.take() {
			if _, recs := parse(t, s.data); len(recs) == 1 && recs[0].typ == recLinkReport {
				reports[s.to]++
			}
		}
	}
	if len(wakes) != 10 || wakes[0] != time.Second || wakes[9] != 10*time.Second {
		t.Errorf("woke at %v, want once a second", wakes)
	}
	if len(reports) != links {
		t.Fatalf("%d links reported, want %d", len(reports), links)
	}
	for to, n := range reports {
		if n != 10 {
			t.Errorf("%v: %d reports in 10 s, want 10", to, n)
		}
	}
	// A link opened later joins the same schedule.
	e.AddLink(ms(10250), 99, addrC, PublicKey{})
	if d, _ := e.NextDeadline(); d != 11*time.Second {
		t.Errorf("after a new link the next wake-up is %v, want 11s", d)
	}
}

// Many links, each sending, acking, timing out, coming and going at random:
// the kept deadline is always the one worked out from scratch, and Tick at
// it always has work to do.
func TestNextDeadlineWithManyLinks_T1(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tr := &capture{addr: addrA}
	e, err := NewEndpoint(Config{Self: 1, Session: token, PingInterval: 700 * time.Millisecond}, tr,
		func(time.Duration, PeerID, Channel, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	addr := func(p PeerID) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 3, 0, byte(p)}), 7373)
	}
	sent := map[PeerID][]uint32{} // reliable packets sent per peer, to ack
	now := time.Duration(0)
	for step := range 5000 {
		p := PeerID(2 + r.IntN(40))
		switch x := r.IntN(100); {
		case x < 5:
			e.RemoveLink(p)
			delete(sent, p)
		case x < 15:
			e.AddLink(now, p, addr(p), PublicKey{})
		case x < 50:
			ch := []Channel{ChannelReliable, ChannelGlobal, ChannelUnreliable}[r.IntN(3)]
			if e.Send(now, p, ch, []byte("m")) == nil && ch == ChannelReliable {
				sent[p] = append(sent[p], e.links[p].rel.next-1)
			}
		case x < 80:
			if ps := sent[p]; len(ps) > 0 {
				i := r.IntN(len(ps))
				e.Receive(now, addr(p), raw(Header{Token: token, Sender: p}, appendAck(nil, ChannelReliable, 0, ps[i])))
				sent[p] = append(ps[:i], ps[i+1:]...)
			}
		case x < 85:
			e.ResetMeasurement()
		default:
			if d, ok := e.NextDeadline(); ok {
				now = max(now, d)
				e.Tick(now)
				if d2, _ := e.NextDeadline(); d2 <= now {
					t.Fatalf("step %d: after Tick(%v) the deadline is %v", step, now, d2)
				}
			}
		}
		tr.take()
		now += time.Duration(r.IntN(50)) * time.Millisecond
		checkDeadline(t, e)
	}
}
