package netcore

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/units"
)

// Two kinds of test world:
//   - capture: a Transport that only records what was sent, so a test
//     decides datagram by datagram what arrives, when, and what is lost;
//   - simnet: the simulated network with impairment, on virtual time.

var (
	addrA = netip.MustParseAddrPort("10.0.0.1:7373")
	addrB = netip.MustParseAddrPort("10.0.0.2:7373")
	addrC = netip.MustParseAddrPort("10.0.0.3:7373")
)

const (
	peerA PeerID = 1
	peerB PeerID = 2
	token        = 0x1122334455667788
)

type sentDatagram struct {
	to   netip.AddrPort
	data []byte
}

// capture is a Transport that records datagrams instead of sending them.
type capture struct {
	addr netip.AddrPort
	sent []sentDatagram
}

func (c *capture) Send(to netip.AddrPort, p []byte) error {
	c.sent = append(c.sent, sentDatagram{to, bytes.Clone(p)})
	return nil
}

func (c *capture) LocalAddr() netip.AddrPort { return c.addr }

// take returns and forgets everything sent so far.
func (c *capture) take() []sentDatagram {
	s := c.sent
	c.sent = nil
	return s
}

var _ Transport = (*capture)(nil)

type delivery struct {
	at   time.Duration
	from PeerID
	ch   Channel
	msg  []byte
}

// side is one endpoint of a capture pair with what it delivered.
type side struct {
	ep   *Endpoint
	tr   *capture
	addr netip.AddrPort
	got  []delivery
}

func (s *side) record(now time.Duration, from PeerID, ch Channel, msg []byte) {
	s.got = append(s.got, delivery{now, from, ch, bytes.Clone(msg)})
}

// newPair builds endpoints A and B linked to each other over capture
// transports. mod may adjust each config (it gets the PeerID).
func newPair(t testing.TB, mod func(PeerID, *Config)) (a, b *side) {
	t.Helper()
	mk := func(self PeerID, addr netip.AddrPort) *side {
		s := &side{tr: &capture{addr: addr}, addr: addr}
		cfg := Config{Self: self, Session: token}
		if mod != nil {
			mod(self, &cfg)
		}
		ep, err := NewEndpoint(cfg, s.tr, s.record)
		if err != nil {
			t.Fatal(err)
		}
		s.ep = ep
		return s
	}
	a, b = mk(peerA, addrA), mk(peerB, addrB)
	if err := a.ep.AddLink(0, peerB, addrB, b.ep.PublicKey()); err != nil {
		t.Fatal(err)
	}
	if err := b.ep.AddLink(0, peerA, addrA, a.ep.PublicKey()); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// pass hands everything from sent so far to to, at now, and returns how
// many datagrams it passed.
func pass(from, to *side, now time.Duration) int {
	ds := from.tr.take()
	for _, d := range ds {
		to.ep.Receive(now, from.addr, d.data)
	}
	return len(ds)
}

// drop forgets everything from sent so far.
func drop(from *side) int { return len(from.tr.take()) }

// simPeer is an Endpoint on simnet's virtual time, run by simnet's Driver
// (the twin of the live Runner), which checks after every step that the
// kept deadline is the one worked out from scratch.
type simPeer struct {
	ep    *Endpoint
	host  *simnet.Host
	sched *simnet.Scheduler
	got   []delivery
	count map[string]int // reliable payload → times delivered
	tb    testing.TB
}

func newSimPeer(t testing.TB, n *simnet.Network, self PeerID, addr netip.AddrPort, mod func(*Config)) *simPeer {
	t.Helper()
	p := &simPeer{sched: n.Scheduler(), count: map[string]int{}, tb: t, host: simnet.NewDriver(n).Attach(addr)}
	cfg := Config{Self: self, Session: token}
	if mod != nil {
		mod(&cfg)
	}
	ep, err := NewEndpoint(cfg, p.host.Node(), func(now time.Duration, from PeerID, ch Channel, msg []byte) {
		if ch == ChannelReliable {
			p.count[string(msg)]++
		}
		p.got = append(p.got, delivery{now, from, ch, bytes.Clone(msg)})
	})
	if err != nil {
		t.Fatal(err)
	}
	p.ep = ep
	p.host.Drive(ep)
	p.host.OnStep(func() { checkDeadline(p.tb, p.ep) })
	return p
}

// arm tells the driver the endpoint's deadline may have moved (a link
// added, a message sent).
func (p *simPeer) arm() {
	checkDeadline(p.tb, p.ep)
	p.host.Wake()
}

func (p *simPeer) send(t testing.TB, to PeerID, ch Channel, msg []byte) {
	t.Helper()
	if err := p.ep.Send(p.sched.Now(), to, ch, msg); err != nil {
		t.Fatal(err)
	}
	p.arm()
}

// simPair links two simPeers over n with the given profile each way.
func simPair(t testing.TB, seed uint64, prof impair.Profile, mod func(*Config)) (*simnet.Network, *simPeer, *simPeer) {
	t.Helper()
	n := simnet.NewNetwork(simnet.NewScheduler(), seed)
	n.SetLink(addrA, addrB, prof)
	a := newSimPeer(t, n, peerA, addrA, mod)
	b := newSimPeer(t, n, peerB, addrB, mod)
	if err := a.ep.AddLink(0, peerB, addrB, b.ep.PublicKey()); err != nil {
		t.Fatal(err)
	}
	if err := b.ep.AddLink(0, peerA, addrA, a.ep.PublicKey()); err != nil {
		t.Fatal(err)
	}
	a.arm()
	b.arm()
	return n, a, b
}

// ms is units.FromMillis, short for the many times the tests write.
var ms = units.FromMillis

func near(t testing.TB, what string, got, want, tol time.Duration) {
	t.Helper()
	if d := got - want; d > tol || d < -tol {
		t.Errorf("%s = %v, want %v ± %v", what, got, want, tol)
	}
}

// record is one decoded record of a datagram.
type record struct {
	typ     uint8
	payload []byte
}

// parse decodes an unsealed datagram.
func parse(t testing.TB, d []byte) (Header, []record) {
	t.Helper()
	h, err := DecodeHeader(d)
	if err != nil {
		t.Fatalf("datagram does not decode: %v", err)
	}
	var recs []record
	for b := d[HeaderLen:]; len(b) > 0; {
		typ, p, rest, err := NextRecord(b)
		if err != nil {
			t.Fatalf("record does not decode: %v", err)
		}
		recs = append(recs, record{typ, p})
		b = rest
	}
	return h, recs
}

// raw builds an unsealed datagram.
func raw(h Header, body []byte) []byte {
	d := make([]byte, HeaderLen, HeaderLen+len(body))
	PutHeader(d, h)
	return append(d, body...)
}

// runTicks calls Tick at every deadline up to until, calling each after
// every Tick.
func runTicks(t testing.TB, s *side, until time.Duration, each func(now time.Duration)) {
	t.Helper()
	last := time.Duration(-1)
	for range 100000 {
		checkDeadline(t, s.ep)
		d, ok := s.ep.NextDeadline()
		if !ok || d > until {
			return
		}
		if d <= last {
			t.Fatalf("deadline %v does not advance past %v", d, last)
		}
		last = d
		s.ep.Tick(d)
		if each != nil {
			each(d)
		}
	}
	t.Fatal("too many deadlines")
}

// measure gives a's link one clean round trip of rtt, starting at start.
func measure(t testing.TB, a, b *side, start, rtt time.Duration) {
	t.Helper()
	if err := a.ep.Send(start, b.ep.Self(), ChannelReliable, []byte("measure")); err != nil {
		t.Fatal(err)
	}
	pass(a, b, start+rtt/2)
	pass(b, a, start+rtt)
}

// reliableSends returns the times and packet numbers of reliable datagrams
// among ds.
func countChannel(t testing.TB, ds []sentDatagram, ch Channel) int {
	t.Helper()
	n := 0
	for _, d := range ds {
		if h, _ := parse(t, d.data); h.Channel == ch {
			n++
		}
	}
	return n
}

// checkDeadline fails unless the kept NextDeadline, and every link's kept
// part of it, equal what is worked out from scratch: a timer change that
// forgot to touch its link shows here first.
func checkDeadline(tb testing.TB, e *Endpoint) {
	tb.Helper()
	got, gotOK := e.NextDeadline()
	want, wantOK := e.nextReport, len(e.order) > 0
	for _, l := range e.order {
		d, ok := e.linkDeadline(l)
		if at, kept := l.deadline(); kept != ok || (ok && at != d) {
			tb.Fatalf("link %d: kept deadline %v %v, worked out from scratch %v %v", l.peer, at, kept, d, ok)
		}
		if ok && d < want {
			want = d
		}
	}
	if got != want || gotOK != wantOK {
		tb.Fatalf("NextDeadline %v %v, worked out from scratch %v %v", got, gotOK, want, wantOK)
	}
	h := &e.byDue.h
	if h.Len() != len(e.order) {
		tb.Fatalf("%d links in the deadline heap, %d open", h.Len(), len(e.order))
	}
	for i := range h.Len() {
		n := h.At(i)
		l := n.Val
		if n != &l.due || l.closed || (i > 0 && n.Key.Less(h.At((i-1)/2).Key)) {
			tb.Fatalf("deadline heap out of order at %d (link %d)", i, l.peer)
		}
	}
}
