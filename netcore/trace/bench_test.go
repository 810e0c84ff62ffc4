package trace

import (
	"net/netip"
	"testing"
	"time"
)

// BenchmarkProbeSendAndMatch: encode a probe into its datagram, record it
// sent, parse the router's error-queue answer quoting it, match it and
// add the outcome to the path — the per-probe work of a live tracer.
func BenchmarkProbeSendAndMatch(b *testing.B) {
	m := makeMatcher()
	m.AddLink(linkA, peerA)
	var path hopPath
	buf := quotedBody(Probe{Num: 0, TTL: 1})
	oob := cat(recvErr(113, originICMP, icmpTimeExceeded, 0, r1), stampNS(time.Unix(1_700_000_000, 0)))
	now := time.Duration(0)
	num := uint32(0)
	b.ReportAllocs()
	for b.Loop() {
		num++
		now += time.Millisecond
		buf = AppendProbe(buf[:0], Probe{Num: num, TTL: 1})
		m.Sent(linkA, num, 1, now, time.Second, false)
		a, err := parseQuoted(oob, buf)
		if err != nil {
			b.Fatal(err)
		}
		o, ok := m.Answer(linkA, a, now+500*time.Microsecond)
		if !ok {
			b.Fatal("no match")
		}
		path.Add(o)
	}
}

// benchWorld is a machine's links on a virtual clock for the benchmarks:
// each link's routers answer every probe at once (a router that quotes,
// or the peer), silent ones never.
type benchWorld struct {
	tr     *Tracer
	routes map[Link][]netip.Addr // by hop limit; the last is the peer; invalid: silent
	oob    map[netip.Addr][]byte // each router's error-queue control messages
	body   []byte
	now    time.Duration
	probes int
}

func newBenchWorld(routes map[Link][]netip.Addr) *benchWorld {
	w := &benchWorld{tr: newSeeded([32]byte{9}), routes: routes, oob: map[netip.Addr][]byte{}}
	for id, r := range routes {
		w.tr.AddLink(id, r[len(r)-1])
		for _, a := range r {
			if a.IsValid() && w.oob[a] == nil {
				w.oob[a] = recvErr(113, originICMP, icmpTimeExceeded, 0, a)
			}
		}
	}
	return w
}

// second runs one second of virtual time: the probes due, each answered
// 1 ms later unless its hop is silent, the timeouts, and each link's
// figures read ten times (as the View reads them).
func (w *benchWorld) second() {
	end := w.now + time.Second
	for w.now < end {
		w.wake()
		if w.now%(100*time.Millisecond) == 0 {
			for id := range w.routes {
				w.tr.Result(id)
			}
		}
		next, ok := w.tr.NextDeadline(w.now)
		step := w.now + 10*time.Millisecond
		if ok && next > w.now && next < step {
			step = next
		}
		w.now = step
	}
}

// wake is one wake-up of the machine at w.now: the tracer's Tick, then
// the probes due, each answered 1 ms later unless its hop is silent.
func (w *benchWorld) wake() {
	w.tr.Tick(w.now)
	for {
		link, p, ok := w.tr.Next(w.now)
		if !ok {
			return
		}
		w.probes++
		r := w.routes[link]
		hit := min(int(p.TTL), len(r)) - 1
		at := w.now + time.Millisecond
		switch a := r[hit]; {
		case hit == len(r)-1:
			w.tr.Reply(link, p.Reply(), at)
		case a.IsValid():
			w.body = AppendProbe(w.body[:0], p)
			ans, err := parseQuoted(w.oob[a], w.body)
			if err == nil {
				w.tr.Answer(link, ans, at)
			}
		}
	}
}

func addr4(a, b, c, d byte) netip.Addr { return netip.AddrFrom4([4]byte{a, b, c, d}) }

// homeRoutes: a home line with 7 links through the home router and two
// ISP routers, each 12 hops to its peer with one silent router.
func homeRoutes() map[Link][]netip.Addr {
	routes := map[Link][]netip.Addr{}
	for id := Link(1); id <= 7; id++ {
		r := []netip.Addr{addr4(192, 168, 1, 1), addr4(100, 64, 0, 1), addr4(100, 64, 1, 1)}
		for i := range 8 {
			if i == 3 {
				r = append(r, netip.Addr{})
				continue
			}
			r = append(r, addr4(82, byte(id), 0, byte(i+1)))
		}
		routes[id] = append(r, addr4(83, 0, 0, byte(id)))
	}
	return routes
}

// lanRoutes: a LAN party, 63 links, 60 of them to machines on the same LAN
// (one hop), 3 across the internet (10 hops).
func lanRoutes() map[Link][]netip.Addr {
	routes := map[Link][]netip.Addr{}
	for id := Link(1); id <= 63; id++ {
		if id <= 60 {
			routes[id] = []netip.Addr{addr4(192, 168, 1, byte(id+1))}
			continue
		}
		r := []netip.Addr{addr4(192, 168, 1, 1)}
		for i := range 8 {
			r = append(r, addr4(82, byte(id), 0, byte(i+1)))
		}
		routes[id] = append(r, addr4(83, 0, 0, byte(id)))
	}
	return routes
}

// benchSeconds times one virtual second of the tracer's work at a time,
// after a minute of warming (the paths found, the baselines made): the
// ns per op are the tracer's share of a core, in ns per second.
func benchSeconds(b *testing.B, w *benchWorld, burst []Link) {
	for range 60 {
		w.second()
	}
	for _, l := range burst {
		w.tr.Pin(l, true)
	}
	w.probes = 0
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		w.second()
		n++
	}
	b.ReportMetric(float64(w.probes)/float64(n), "probes/s")
	b.ReportMetric(b.Elapsed().Seconds()/float64(n)*100, "%core")
}

// The baseline of a home line: 7 multi-hop links.
func BenchmarkBaseline7Links(b *testing.B) { benchSeconds(b, newBenchWorld(homeRoutes()), nil) }

// The same, one link bursting (an incident on it, or the Path view).
func BenchmarkBaseline7LinksOneBursting(b *testing.B) {
	benchSeconds(b, newBenchWorld(homeRoutes()), []Link{1})
}

// The baseline at LAN-party scale: 63 links, most of them one hop.
func BenchmarkBaseline63Links(b *testing.B) { benchSeconds(b, newBenchWorld(lanRoutes()), nil) }

// One wake-up of a machine's driver, as netcore's Endpoint makes it on
// every datagram and timer (hundreds a second): Tick, Next and
// NextDeadline on the LAN party's 63 links traced at the baseline's pace,
// a microsecond of virtual time after the wake-up before. The tracer has
// work some ten times a second, so all but about one wake-up in 100,000
// find nothing due; those that do send and answer their probes in the op.
func BenchmarkIdleWakeUp63Links(b *testing.B) {
	w := newBenchWorld(lanRoutes())
	for range 60 {
		w.second()
	}
	b.ReportAllocs()
	for b.Loop() {
		w.now += time.Microsecond
		w.wake()
		w.tr.NextDeadline(0)
	}
}

// Per probe sent and per answer matched, in a running tracer of 7 links:
// nothing is allocated.
func TestProbeAndAnswerAllocateNothing(t *testing.T) {
	w := newBenchWorld(homeRoutes())
	for range 60 {
		w.second()
	}
	w.tr.Pin(1, true)
	for range 5 {
		w.second()
	}
	var (
		link Link
		p    Probe
		ok   bool
	)
	sends := testing.AllocsPerRun(200, func() {
		w.now += rateInterval
		w.tr.Tick(w.now)
		link, p, ok = w.tr.Next(w.now)
		if ok {
			w.probes++
		}
	})
	if sends != 0 {
		t.Errorf("%v allocations per probe sent", sends)
	}
	// Answers: a router's quoting one, and the peer's record.
	r := w.routes[1]
	body := AppendProbe(nil, Probe{})
	answers := testing.AllocsPerRun(200, func() {
		w.now += rateInterval
		w.tr.Tick(w.now)
		link, p, ok = w.tr.Next(w.now)
		if !ok {
			return
		}
		hit := min(int(p.TTL), len(w.routes[link])) - 1
		at := w.now + time.Millisecond
		if hit == len(w.routes[link])-1 {
			w.tr.Reply(link, p.Reply(), at)
			return
		}
		if a := w.routes[link][hit]; a.IsValid() {
			body = AppendProbe(body[:0], p)
			ans, err := parseQuoted(w.oob[a], body)
			if err != nil {
				t.Fatal(err)
			}
			w.tr.Answer(link, ans, at)
		}
	})
	if answers != 0 {
		t.Errorf("%v allocations per probe sent and answered", answers)
	}
	_ = r
}
