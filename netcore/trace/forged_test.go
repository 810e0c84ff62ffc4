package trace

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// An off-path forger knows the link's addresses and ports, and the
// addresses of the routers on the path, but sees no probe: it sends forged
// ICMP answers and peer replies blind, as many as it likes. On the virtual
// clock, against a path of routers that quote and routers that quote only
// headers, the trace must show only the path's own hops, each with round
// trips its router's answers gave.

// forgedPath is the path the forgers aim at: hop 2 is a 120 ms queue whose
// router quotes only headers, hop 3 silent, hop 5 header-only too.
func forgedPath() []simHop {
	return []simHop{
		{addr: r1, rtt: msec(1), quote: true},
		{addr: r2, rtt: msec(120)},
		{addr: netip.Addr{}, rtt: msec(122)},
		{addr: pub1, rtt: msec(124), quote: true},
		{addr: pub2, rtt: msec(126)},
		{addr: peerA, rtt: msec(128)},
	}
}

// forgery makes the forger's answers for linkA, in turn: Time Exceeded
// quoting only headers from an address on no path (one of 30) and from
// each router of the path, Time Exceeded quoting a guessed probe, the
// peer's host's port unreachable with and without a guessed quote, and the
// peer's answer record with a guessed number.
func forgery(rng *rand.Rand, path []simHop) func(at time.Duration) delivery {
	i := 0
	return func(at time.Duration) delivery {
		i++
		guess := Probe{Num: rng.Uint32(), TTL: uint8(1 + rng.IntN(maxHops))}
		d := delivery{at: at, link: linkA}
		switch i % 6 {
		case 0:
			d.ans = timeExceeded(netip.AddrFrom4([4]byte{203, 0, 113, byte(1 + i%30)}), nil)
		case 1:
			d.ans = timeExceeded(path[i%len(path)].addr, nil)
			if !path[i%len(path)].addr.IsValid() {
				d.ans = timeExceeded(r2, nil)
			}
		case 2:
			d.ans = timeExceeded(netip.AddrFrom4([4]byte{203, 0, 113, byte(1 + i%30)}), quotedBody(guess))
		case 3:
			d.ans = portUnreachable(peerA, nil)
		case 4:
			d.ans = portUnreachable(peerA, quotedBody(guess))
		default:
			d.reply, d.peer = guess.Reply(), true
		}
		return d
	}
}

// checkForgedPath: the hops are the path's, in order, the peer last; every
// round trip is one the path gave (its router's, plus up to the 1 ms of
// jitter the simulation adds); delay starts at the queue.
func checkForgedPath(t *testing.T, tr *Tracer, path []simHop) Result {
	t.Helper()
	r, _ := tr.Result(linkA)
	if !r.Complete || len(r.Hops) != len(path) {
		t.Fatalf("path of %d hops (complete %v), want the %d of the path: %+v", len(r.Hops), r.Complete, len(path), r.Hops)
	}
	for i, h := range r.Hops {
		want := path[i]
		if (h.Addr == nil) != !want.addr.IsValid() || (h.Addr != nil && *h.Addr != want.addr) {
			t.Errorf("hop %d at %v, want %v", h.TTL, h.Addr, want.addr)
		}
		if !h.Answered {
			continue
		}
		if lo, hi := want.rtt, want.rtt+time.Millisecond; h.Best < lo-tenth/2 || h.Worst > hi+tenth/2 {
			t.Errorf("hop %d round trips %v–%v, want within %v–%v: a forged answer counted", h.TTL, h.Best, h.Worst, lo, hi)
		}
	}
	if d := r.DelayStarts; d == nil || d.TTL != 2 {
		t.Errorf("delay_starts %+v, want hop 2", d)
	}
	return r
}

// A flood of forgeries, a thousand a second for a minute after the path is
// known: nothing forged counts, the routers that quote go on being
// measured, and the header-only routers get no outcome while header-only
// answers are being forged (their probes are void, not lost).
func TestForgedFloodCountsForNothing(t *testing.T) {
	tr := newSeeded([32]byte{1})
	tr.AddLink(linkA, peerA)
	path := forgedPath()
	paths := map[Link][]simHop{linkA: path}
	runTracer(t, tr, paths, time.Minute)
	before := checkForgedPath(t, tr, path)

	rng := rand.New(rand.NewPCG(3, 4))
	f := &forger{next: func(now time.Duration) time.Duration { return now + time.Millisecond }, make: forgery(rng, path)}
	runForged(t, tr, paths, time.Minute, 2*time.Minute, f)
	after := checkForgedPath(t, tr, path)
	if f.sent < 59_000 {
		t.Fatalf("the forger sent %d answers, want 60 000", f.sent)
	}
	for i, h := range after.Hops {
		grew := after.Hops[i].Sent > before.Hops[i].Sent || h.Sent >= histLen
		if quotes := path[i].quote || i == len(path)-1; quotes != grew && path[i].addr.IsValid() {
			t.Errorf("hop %d: %d outcomes before the flood, %d after; want more only where the router quotes", h.TTL, before.Hops[i].Sent, h.Sent)
		}
		if h.Loss != before.Hops[i].Loss && path[i].addr.IsValid() {
			t.Errorf("hop %d: loss %v after the flood, %v before", h.TTL, h.Loss, before.Hops[i].Loss)
		}
	}
	if tr.Unmatched() < uint64(f.sent)*9/10 {
		t.Errorf("%d of %d forgeries counted unmatched", tr.Unmatched(), f.sent)
	}
	// Once the forger stops, header-only answers count again.
	runTracer2 := func(from, to time.Duration) { runForged(t, tr, paths, from, to, nil) }
	runTracer2(2*time.Minute, 2*time.Minute+quietFor+20*time.Second)
	later := checkForgedPath(t, tr, path)
	if later.Hops[1].Sent <= after.Hops[1].Sent {
		t.Errorf("hop 2: %d outcomes, none since the flood ended (%d)", later.Hops[1].Sent, after.Hops[1].Sent)
	}
}

// A forger from the start, before the tracer knows any hop, sending one
// forgery at a random moment every 200 ms on average: no forged address or
// round trip is ever shown, nor a hop past the peer.
func TestForgedFromTheStart(t *testing.T) {
	tr := newSeeded([32]byte{2})
	tr.AddLink(linkA, peerA)
	path := forgedPath()
	rng := rand.New(rand.NewPCG(5, 6))
	f := &forger{
		next: func(now time.Duration) time.Duration {
			return now + time.Duration(rng.Int64N(int64(400*time.Millisecond)))
		},
		make: forgery(rng, path),
	}
	for end := 10 * time.Second; end <= 2*time.Minute; end += 10 * time.Second {
		runForged(t, tr, map[Link][]simHop{linkA: path}, end-10*time.Second, end, f)
		r, _ := tr.Result(linkA)
		if len(r.Hops) > len(path) {
			t.Fatalf("%v: %d hops, the path has %d", end, len(r.Hops), len(path))
		}
		for i, h := range r.Hops {
			if h.Addr != nil && *h.Addr != path[i].addr {
				t.Fatalf("%v: hop %d at %v, want %v or none", end, h.TTL, *h.Addr, path[i].addr)
			}
			if h.Answered && (h.Best < path[i].rtt-tenth/2 || h.Worst > path[i].rtt+time.Millisecond+tenth/2) {
				t.Fatalf("%v: hop %d round trips %v–%v, its router gives %v", end, h.TTL, h.Best, h.Worst, path[i].rtt)
			}
		}
		if r.Complete && r.Hops[len(r.Hops)-1].TTL != len(path) {
			t.Fatalf("%v: complete at hop %d, the peer is hop %d", end, len(r.Hops), len(path))
		}
	}
	if f.sent < 500 {
		t.Fatalf("the forger sent %d", f.sent)
	}
	// The routers that quote and the peer were measured all along.
	r, _ := tr.Result(linkA)
	for _, i := range []int{0, 3, 5} {
		if !r.Hops[i].Judged {
			t.Errorf("hop %d not judged: %+v", i+1, r.Hops[i])
		}
	}
}
