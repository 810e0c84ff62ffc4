package netcore

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/trace"
)

// hopCapture is a capture that also sends with hop limits (HopTransport):
// it records each probe's hop limit, and a test queues the ICMP answers.
type hopCapture struct {
	capture
	hops    []int
	probes  []sentDatagram
	answers []HopAnswer
}

func (c *hopCapture) SendHopLimit(to netip.AddrPort, p []byte, hops int) error {
	c.hops = append(c.hops, hops)
	c.probes = append(c.probes, sentDatagram{to, append([]byte(nil), p...)})
	return nil
}

func (c *hopCapture) HopAnswers(dst []HopAnswer) []HopAnswer {
	dst = append(dst, c.answers...)
	c.answers = c.answers[:0]
	return dst
}

func (c *hopCapture) TraceUnavailable() string { return "" }

// hopWorld: endpoint A traces B across routers; a probe whose hop limit
// reaches B is delivered to B, the rest draw a router's Time Exceeded.
type hopWorld struct {
	a, b    *Endpoint
	ta, tb  *hopCapture
	routers []netip.Addr
	rtt     time.Duration // per hop
}

func newHopWorld(t *testing.T, key []byte, routers ...netip.Addr) *hopWorld {
	t.Helper()
	w := &hopWorld{ta: &hopCapture{capture: capture{addr: addrA}}, tb: &hopCapture{capture: capture{addr: addrB}}, routers: routers, rtt: 4 * time.Millisecond}
	mk := func(self PeerID, tr *hopCapture) *Endpoint {
		ep, err := NewEndpoint(Config{Self: self, Session: token, Key: key}, tr, func(time.Duration, PeerID, Channel, []byte) {})
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	w.a, w.b = mk(peerA, w.ta), mk(peerB, w.tb)
	if err := w.a.AddLink(0, peerB, addrB, w.b.PublicKey()); err != nil {
		t.Fatal(err)
	}
	if err := w.b.AddLink(0, peerA, addrA, w.a.PublicKey()); err != nil {
		t.Fatal(err)
	}
	return w
}

// run ticks A at its deadlines until end, answering every probe.
func (w *hopWorld) run(t *testing.T, end time.Duration) {
	for now := time.Duration(0); now < end; {
		w.a.Tick(now)
		for i, p := range w.ta.probes {
			hops := w.ta.hops[i]
			back := now + time.Duration(min(hops, len(w.routers)+1))*w.rtt
			if hops <= len(w.routers) {
				a, _ := trace.ParseErrQueue(errCmsg(2, 11, 0, w.routers[hops-1], time.Time{}))
				a.Probe, a.Quote = quoteOf(p.data)
				w.ta.answers = append(w.ta.answers, HopAnswer{To: p.to, At: back, Answer: a})
				continue
			}
			w.b.Receive(back, addrA, p.data)
			for _, r := range w.tb.take() {
				w.a.Receive(back, addrB, r.data)
			}
		}
		w.ta.probes, w.ta.hops = w.ta.probes[:0], w.ta.hops[:0]
		w.ta.take()
		w.tb.take()
		next, ok := w.a.NextDeadline()
		if !ok {
			t.Fatal("no deadline while tracing")
		}
		now = max(now+time.Millisecond, next)
	}
}

func TestEndpointTracesThePath(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		var key []byte
		if keyed {
			key = make([]byte, 32)
		}
		r1, r2 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
		w := newHopWorld(t, key, r1, r2)
		if ok, why := w.a.TraceAvailable(); !ok {
			t.Fatalf("not available: %s", why)
		}
		w.a.SetTraced(peerB, true)
		w.run(t, 30*time.Second)
		res, ok := w.a.Path(peerB)
		if !ok || !res.Complete || len(res.Hops) != 3 {
			t.Fatalf("keyed %v: path %+v (%v), want 3 hops to the peer", keyed, res, ok)
		}
		for i, want := range []netip.Addr{r1, r2, addrB.Addr()} {
			h := res.Hops[i]
			if h.Addr == nil || *h.Addr != want || h.Sent < 10 || h.Loss != 0 {
				t.Errorf("keyed %v: hop %d %+v, want %v answering every probe", keyed, i+1, h, want)
			}
		}
		if h := res.Hops[2]; !h.Answered || h.Median < 11900*time.Microsecond || h.Median > 12100*time.Microsecond {
			t.Errorf("keyed %v: the peer's round trip %v, want 12ms", keyed, h.Median)
		}
		w.a.SetTraced(peerB, false)
		if _, ok := w.a.Path(peerB); ok {
			t.Errorf("a path after tracing stopped")
		}
	}
}

// A probe answer is never an amplifier: only a datagram that is one probe,
// from a linked peer's current address, draws one, of the same size, and
// at most a burst of them at once. In a keyed session nothing else
// unsealed gets through.
func TestProbeReplies(t *testing.T) {
	w := newHopWorld(t, make([]byte, 32))
	probe := probeDgram(trace.Probe{Num: 5, TTL: 3})
	w.b.Receive(0, addrA, probe)
	got := w.tb.take()
	if len(got) != 1 || len(got[0].data) != len(probe) || got[0].to != addrA {
		t.Fatalf("answer %+v, want one of %d bytes to %v", got, len(probe), addrA)
	}
	if p, err := trace.DecodeProbe(got[0].data[HeaderLen:]); err != nil || !p.Answer || p.Num != 5 || p.TTL != 3 || got[0].data[3] != 0 {
		t.Fatalf("answer % x: %+v %v, want probe 5 answered, unsealed", got[0].data, p, err)
	}
	w.b.Receive(0, addrC, probe)
	if got := w.tb.take(); len(got) != 0 {
		t.Fatalf("answered a stranger: %+v", got)
	}
	before := w.b.Rejected().Auth
	w.b.Receive(0, addrA, append(append([]byte(nil), probe...), recKeepAlive, 0, 0))
	if got := w.tb.take(); len(got) != 0 || w.b.Rejected().Auth != before+1 {
		t.Fatalf("a probe with more in it: answered %d, auth rejections %d → %d", len(got), before, w.b.Rejected().Auth)
	}
	for range 100 {
		w.b.Receive(time.Second, addrA, probe)
	}
	if got := w.tb.take(); len(got) > probeReplyBurst {
		t.Fatalf("%d answers to a flood at one instant, want at most %d", len(got), probeReplyBurst)
	}
}

func TestTraceUnavailable(t *testing.T) {
	a, _ := newPair(t, nil)
	ok, why := a.ep.TraceAvailable()
	if ok || !strings.Contains(why, "simulated network") {
		t.Fatalf("capture transport: available %v, why %q", ok, why)
	}
	a.ep.SetTraced(peerB, true)
	a.ep.Tick(time.Second)
	if _, ok := a.ep.Path(peerB); ok {
		t.Fatal("a path without a tracing transport")
	}
}

// Tracing leaves the game's datagrams alone: none goes out with a hop
// limit, and every probe is a probe datagram.
func TestProbesOnlyCarryHopLimits(t *testing.T) {
	w := newHopWorld(t, nil, netip.MustParseAddr("192.0.2.1"))
	w.a.SetTraced(peerB, true)
	for now := time.Duration(0); now < 5*time.Second; now += 10 * time.Millisecond {
		if err := w.a.Send(now, peerB, ChannelReliable, []byte("move")); err != nil {
			t.Fatal(err)
		}
		w.a.Tick(now)
		for _, p := range w.ta.probes {
			if _, ok := isProbe(mustHeader(t, p.data), p.data); !ok {
				t.Fatalf("a datagram with a hop limit that is not a probe: % x", p.data)
			}
		}
		w.ta.probes = w.ta.probes[:0]
		for _, d := range w.ta.take() {
			if _, ok := isProbe(mustHeader(t, d.data), d.data); ok {
				t.Fatal("a probe sent without its hop limit")
			}
		}
	}
}

func mustHeader(t *testing.T, d []byte) Header {
	t.Helper()
	h, err := DecodeHeader(d)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
