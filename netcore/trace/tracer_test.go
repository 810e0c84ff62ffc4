package trace

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// simHop is one hop of a virtual path: its address (invalid: it never
// answers), the round trip to it, whether its ICMP answers quote the probe
// (false: only the IP header and 8 bytes), and the chance that a probe to
// it or past it is lost on the way there or back.
type simHop struct {
	addr  netip.Addr
	rtt   time.Duration
	quote bool
	loss  float64
}

type delivery struct {
	at    time.Duration
	link  Link
	ans   Answer
	reply Probe
	peer  bool
}

// runTracer drives a Tracer on a virtual clock for d, waking it only at
// its NextDeadline or when an answer arrives. The last hop of each path is
// the peer, which answers with its probe record.
func runTracer(t *testing.T, tr *Tracer, paths map[Link][]simHop, d time.Duration) {
	t.Helper()
	runForged(t, tr, paths, 0, d, nil)
}

// forger makes forged answers on the virtual clock: one at each time next
// gives, what make makes.
type forger struct {
	next func(now time.Duration) time.Duration
	make func(at time.Duration) delivery
	sent int
}

// runForged is runTracer from from to d, with the forger's answers, if
// any, delivered beside the path's.
func runForged(t *testing.T, tr *Tracer, paths map[Link][]simHop, from, d time.Duration, f *forger) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var queue []delivery
	forgeAt := time.Duration(-1)
	if f != nil {
		forgeAt = f.next(from)
	}
	for now := from; now < d; {
		for f != nil && forgeAt <= now {
			queue = append(queue, f.make(forgeAt))
			slices.SortStableFunc(queue, func(a, b delivery) int { return int(a.at - b.at) })
			f.sent++
			forgeAt = f.next(forgeAt)
		}
		for len(queue) > 0 && queue[0].at <= now {
			q := queue[0]
			queue = queue[1:]
			if q.peer {
				tr.Reply(q.link, q.reply, q.at)
			} else {
				tr.Answer(q.link, q.ans, q.at)
			}
		}
		tr.Tick(now)
		for {
			link, p, ok := tr.Next(now)
			if !ok {
				break
			}
			if q, ok := simAnswer(t, rng, paths[link], link, p, now); ok {
				queue = append(queue, q)
				slices.SortStableFunc(queue, func(a, b delivery) int { return int(a.at - b.at) })
			}
		}
		next, ok := tr.NextDeadline(now)
		if len(queue) > 0 && (!ok || queue[0].at < next) {
			next, ok = queue[0].at, true
		}
		if f != nil && (!ok || forgeAt < next) {
			next, ok = forgeAt, true
		}
		if !ok || next <= now {
			next = now + time.Millisecond
		}
		now = next
	}
}

// simAnswer is what comes back for probe p sent at now, if anything.
func simAnswer(t *testing.T, rng *rand.Rand, path []simHop, link Link, p Probe, now time.Duration) (delivery, bool) {
	hit := min(int(p.TTL), len(path)) - 1
	for _, h := range path[:hit+1] {
		if rng.Float64() < h.loss || rng.Float64() < h.loss {
			return delivery{}, false
		}
	}
	h := path[hit]
	if !h.addr.IsValid() {
		return delivery{}, false
	}
	at := now + h.rtt + time.Duration(rng.IntN(int(time.Millisecond)))
	if hit == len(path)-1 {
		return delivery{at: at, link: link, reply: p.Reply(), peer: true}, true
	}
	var quote []byte
	if h.quote {
		quote = quotedBody(p)
	}
	a, err := parseQuoted(recvErr(113, originICMP, icmpTimeExceeded, 0, h.addr), quote)
	if err != nil {
		t.Fatal(err)
	}
	return delivery{at: at, link: link, ans: a}, true
}

// A queue on the uplink, a silent router and routers that quote only 8
// bytes: the whole machinery, from Next to Result.
func TestTracerFindsTheUplinkQueue(t *testing.T) {
	tr := New()
	tr.AddLink(linkA, peerA)
	path := []simHop{
		{addr: r1, rtt: msec(1), quote: true},
		{addr: r2, rtt: msec(120)},
		{addr: netip.Addr{}, rtt: msec(122)},
		{addr: pub1, rtt: msec(124), quote: true},
		{addr: pub2, rtt: msec(126)},
		{addr: peerA, rtt: msec(128)},
	}
	runTracer(t, tr, map[Link][]simHop{linkA: path}, time.Minute)
	r, ok := tr.Result(linkA)
	if !ok || !r.Complete || len(r.Hops) != len(path) {
		t.Fatalf("result %+v %v: want a complete path of %d hops", r, ok, len(path))
	}
	for i, h := range r.Hops {
		want := path[i].addr
		if (h.Addr == nil) != !want.IsValid() || (h.Addr != nil && *h.Addr != want) {
			t.Errorf("hop %d addr %v, want %v", h.TTL, h.Addr, want)
		}
		if !h.Judged && want.IsValid() {
			t.Errorf("hop %d not judged after a minute (%d outcomes)", h.TTL, h.Sent)
		}
	}
	if h := r.Hops[2]; h.Loss != 1 || h.RateLimited || h.Link != labelISP {
		t.Errorf("silent hop: %+v", h)
	}
	if d := r.DelayStarts; d == nil || d.TTL != 2 || d.Link != labelUplink || d.Added < 115*time.Millisecond || d.Added > 122*time.Millisecond {
		t.Errorf("delay_starts %+v, want hop 2 on the uplink, about 119 ms", d)
	}
	if r.LossStarts != nil {
		t.Errorf("loss_starts %+v on a lossless path", r.LossStarts)
	}
	// Each header-only hop's first answer is held: its address is
	// confirmed by its second.
	if tr.Unmatched() != 2 {
		t.Errorf("%d answers unmatched, want 2 (the first of hops 2 and 5)", tr.Unmatched())
	}
	if r.Hops[len(r.Hops)-1].Link != labelPeer {
		t.Errorf("last hop %s, want peer", r.Hops[len(r.Hops)-1].Link)
	}
}

// A lossy link between hops 3 and 4 starts loss at hop 4, on both links
// that cross it; the other link's own hops are judged apart.
func TestTracerFindsLossOnTwoLinks(t *testing.T) {
	tr := New()
	tr.AddLink(linkA, peerA)
	tr.AddLink(linkB, peerB)
	lossy := simHop{addr: pub2, rtt: msec(12), loss: 0.05}
	common := []simHop{{addr: r1, rtt: msec(1)}, {addr: r2, rtt: msec(4)}, {addr: pub1, rtt: msec(8)}, lossy}
	paths := map[Link][]simHop{
		linkA: append(slices.Clone(common), simHop{addr: pub3, rtt: msec(14)}, simHop{addr: peerA, rtt: msec(16)}),
		linkB: append(slices.Clone(common), simHop{addr: peerB, rtt: msec(15)}),
	}
	runTracer(t, tr, paths, 10*time.Minute)
	for _, link := range []Link{linkA, linkB} {
		r, _ := tr.Result(link)
		if l := r.LossStarts; l == nil || l.TTL != 4 || l.Loss < 0.04 || l.Loss > 0.2 {
			t.Errorf("link %d: loss_starts %+v, want hop 4 with about 0.0975", link, l)
		}
		if r.DelayStarts != nil {
			t.Errorf("link %d: delay_starts %+v", link, r.DelayStarts)
		}
	}
}

func TestTracerLinks(t *testing.T) {
	tr := New()
	if _, ok := tr.Result(linkA); ok {
		t.Fatal("a result for a link never traced")
	}
	tr.AddLink(linkA, peerA)
	link, p, ok := tr.Next(0)
	if !ok || link != linkA || p.TTL != 1 || p.Answer {
		t.Fatalf("first probe %v %+v %v", link, p, ok)
	}
	if at, ok := tr.NextDeadline(0); !ok || at != minTimeout {
		t.Fatalf("deadline %v %v, want the probe's timeout at %v", at, ok, minTimeout)
	}
	tr.Tick(minTimeout)
	if r, _ := tr.Result(linkA); len(r.Hops) != 1 || r.Hops[0].Loss != 1 || r.Hops[0].Sent != 1 {
		t.Fatalf("after a timeout: %+v", r.Hops)
	}
	tr.RemoveLink(linkA)
	if _, _, ok := tr.Next(time.Hour); ok {
		t.Fatal("a probe for a removed link")
	}
	if _, ok := tr.Result(linkA); ok {
		t.Fatal("a result for a removed link")
	}
}

// A router two links cross is probed once a round for both, and its
// answers serve both: each link's hop there gains an outcome a round,
// though the router hears one probe a second in all.
func TestTracerSharesARoutersAnswers(t *testing.T) {
	tr := New()
	tr.AddLink(linkA, peerA)
	tr.AddLink(linkB, peerB)
	tr.Pin(linkA, true)
	tr.Pin(linkB, true)
	common := []simHop{{addr: r1, rtt: msec(1), quote: true}, {addr: r2, rtt: msec(5), quote: true}}
	paths := map[Link][]simHop{
		linkA: append(slices.Clone(common), simHop{addr: pub1, rtt: msec(9), quote: true}, simHop{addr: peerA, rtt: msec(12)}),
		linkB: append(slices.Clone(common), simHop{addr: peerB, rtt: msec(11)}),
	}
	runTracer(t, tr, paths, time.Minute)
	for _, link := range []Link{linkA, linkB} {
		r, _ := tr.Result(link)
		for _, h := range r.Hops {
			if h.Sent < 50 {
				t.Errorf("link %d hop %d: %d outcomes in a minute of bursting, want about 60", link, h.TTL, h.Sent)
			}
		}
	}
}
