package trace

import (
	"github.com/lagscope/lagscope/internal/longtest"
	"math"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"
)

// fresh forgets every answer t keeps between calls: the scheduler's
// NextAt and quiet Next, the matcher's NextTimeout and the baselines' due
// time. A Tracer made to forget before every call works everything out
// anew each time, as it would keep nothing.
func fresh(t *Tracer) {
	t.s.gen++
	t.m.known = false
	t.baseDue = math.MinInt64
}

// scratchDeadline is t's NextDeadline worked out from the state alone,
// with nothing kept: the scheduler's and the matcher's scans.
func scratchDeadline(t *Tracer, now time.Duration) (time.Duration, bool) {
	send, okS, _ := t.s.nextAt(max(now, t.now))
	lost, okL := t.m.nextTimeout()
	return t.earliest(send, okS, lost, okL)
}

// twins drives two Tracers of one seed through the same calls on a
// virtual clock: kept keeps its answers between calls as every Tracer
// does, and scratch is made to forget them before each call (fresh). Any
// call whose answer differs, or a kept NextDeadline that differs from one
// worked out from scratch, fails the test.
type twins struct {
	t              *testing.T
	rng            *rand.Rand
	kept, scratch  *Tracer
	paths          map[Link][]simHop
	traced         []Link
	queue          []delivery
	now            time.Duration
	calls, checked int
}

func (w *twins) deadline(now time.Duration) {
	w.t.Helper()
	fresh(w.scratch)
	got, gotOK := w.kept.NextDeadline(now)
	want, wantOK := w.scratch.NextDeadline(now)
	if got != want || gotOK != wantOK {
		w.t.Fatalf("call %d at %v: NextDeadline(%v) kept %v %v, worked out anew %v %v", w.calls, w.now, now, got, gotOK, want, wantOK)
	}
	if d, ok := scratchDeadline(w.kept, now); d != got || ok != gotOK {
		w.t.Fatalf("call %d at %v: NextDeadline(%v) kept %v %v, from the kept tracer's state %v %v", w.calls, w.now, now, got, gotOK, d, ok)
	}
	w.checked++
}

// same fails the test unless the twins' states agree: the scheduler's
// links and plan, the tracer's clock and idle time, and each path's
// outcomes and baselines (how many, and when worked out).
func (w *twins) same() {
	w.t.Helper()
	a, b := w.kept, w.scratch
	if a.now != b.now || a.idle != b.idle || a.idleAt != b.idleAt || a.s.planned != b.s.planned || a.s.basePeriod != b.s.basePeriod ||
		a.s.turn != b.s.turn || a.s.lastSend != b.s.lastSend || len(a.s.links) != len(b.s.links) || len(a.links) != len(b.links) {
		w.t.Fatalf("call %d at %v: the twins' tracers differ", w.calls, w.now)
	}
	for i, l := range a.s.links {
		if !reflect.DeepEqual(*l, *b.s.links[i]) {
			w.t.Fatalf("call %d at %v: link %d's schedule kept %+v, anew %+v", w.calls, w.now, l.id, *l, *b.s.links[i])
		}
	}
	for id, l := range a.links {
		m := b.links[id]
		if m == nil || l.path.ver != m.path.ver || l.path.baseAt != m.path.baseAt || l.path.based != m.path.based || l.holdUntil != m.holdUntil {
			w.t.Fatalf("call %d at %v: link %d's path differs", w.calls, w.now, id)
		}
		for ttl := range l.path.hops {
			if h, g := &l.path.hops[ttl], &m.path.hops[ttl]; h.total != g.total || h.baseOK != g.baseOK || h.above != g.above || h.lostRun != g.lostRun {
				w.t.Fatalf("call %d at %v: link %d's hop %d differs", w.calls, w.now, id, ttl)
			}
		}
	}
}

// sweep asks both twins' NextDeadline from moments after the tracer's
// time, nothing else happening: the first nanoseconds one by one, then
// steps up to a minute. Time alone moves the answer as it moves a silent
// hop's wait, a burst's or a round's end.
func (w *twins) sweep() {
	w.t.Helper()
	at := w.kept.now
	for i := range 300 {
		if i < 5 {
			at++
		} else {
			at += time.Duration(w.rng.IntN(int(time.Duration(w.rng.IntN(4)+1) * 200 * time.Millisecond)))
		}
		w.deadline(at)
	}
}

// wake is a driver's wake-up at w.now: the answers arrived, Tick, the
// probes due (their answers queued), NextDeadline.
func (w *twins) wake() {
	w.t.Helper()
	for len(w.queue) > 0 && w.queue[0].at <= w.now {
		q := w.queue[0]
		w.queue = w.queue[1:]
		fresh(w.scratch)
		var a, b bool
		if q.peer {
			a, b = w.kept.Reply(q.link, q.reply, q.at), w.scratch.Reply(q.link, q.reply, q.at)
		} else {
			a, b = w.kept.Answer(q.link, q.ans, q.at), w.scratch.Answer(q.link, q.ans, q.at)
		}
		if a != b {
			w.t.Fatalf("call %d at %v: an answer at %v counted %v kept, %v anew", w.calls, w.now, q.at, a, b)
		}
	}
	fresh(w.scratch)
	w.kept.Tick(w.now)
	w.scratch.Tick(w.now)
	for {
		fresh(w.scratch)
		l1, p1, ok1 := w.kept.Next(w.now)
		l2, p2, ok2 := w.scratch.Next(w.now)
		if l1 != l2 || p1 != p2 || ok1 != ok2 {
			w.t.Fatalf("call %d at %v: Next kept %v %+v %v, anew %v %+v %v", w.calls, w.now, l1, p1, ok1, l2, p2, ok2)
		}
		if !ok1 {
			break
		}
		if q, ok := simAnswer(w.t, w.rng, w.paths[l1], l1, p1, w.now); ok {
			if w.rng.IntN(20) == 0 {
				q.at += 3 * time.Second // past its timeout
			}
			w.enqueue(q)
		}
	}
	w.deadline(0)
}

func (w *twins) enqueue(q delivery) {
	w.queue = append(w.queue, q)
	slices.SortStableFunc(w.queue, func(a, b delivery) int { return int(a.at - b.at) })
}

// both makes the same call on both tracers.
func (w *twins) both(f func(t *Tracer)) {
	fresh(w.scratch)
	f(w.kept)
	f(w.scratch)
}

// step makes one random move: time passes (to just before, at or just
// after the deadline, or by a random span) and the machine wakes; a link
// is added, removed, pinned or burst; a forged header-only answer
// arrives; the deadline is asked from a later moment; a Result is read.
func (w *twins) step() {
	w.t.Helper()
	w.calls++
	r := w.rng
	switch k := r.IntN(100); {
	case k < 60:
		d, ok := w.kept.NextDeadline(0)
		switch n := r.IntN(6); {
		case ok && n == 0 && d > w.now:
			w.now = d - 1
		case ok && n == 1:
			w.now = max(w.now, d)
		case ok && n == 2:
			w.now = max(w.now, d+1)
		case n == 3:
			w.now += time.Duration(r.IntN(int(3 * time.Second)))
		default:
			w.now += time.Duration(r.IntN(int(20 * time.Millisecond)))
		}
		if len(w.queue) > 0 && r.IntN(2) == 0 {
			w.now = max(w.now, w.queue[0].at)
		}
		w.wake()
	case k < 66:
		id := Link(1 + r.IntN(len(w.paths)))
		p := w.paths[id]
		w.both(func(t *Tracer) { t.AddLink(id, p[len(p)-1].addr) })
		if !slices.Contains(w.traced, id) {
			w.traced = append(w.traced, id)
		}
	case k < 70:
		if len(w.traced) > 0 {
			id := w.traced[r.IntN(len(w.traced))]
			w.both(func(t *Tracer) { t.RemoveLink(id) })
			w.traced = slices.DeleteFunc(w.traced, func(l Link) bool { return l == id })
		}
	case k < 76:
		id, on := Link(1+r.IntN(len(w.paths))), r.IntN(2) == 0
		w.both(func(t *Tracer) { t.Pin(id, on) })
	case k < 82:
		id, hold := Link(1+r.IntN(len(w.paths))), r.IntN(2) == 0
		until := w.now + time.Duration(r.IntN(int(20*time.Second)))
		w.both(func(t *Tracer) { t.Burst(id, w.now, until, hold) })
	case k < 88:
		// A header-only answer no probe drew, from a router of the
		// paths or from anywhere.
		id := Link(1 + r.IntN(len(w.paths)))
		from := netip.AddrFrom4([4]byte{198, 18, 0, byte(r.IntN(4))})
		if p := w.paths[id]; r.IntN(2) == 0 && p[0].addr.IsValid() {
			from = p[r.IntN(len(p))].addr
		}
		if from.IsValid() {
			w.enqueue(delivery{at: w.now + time.Duration(r.IntN(int(time.Second))), link: id, ans: timeExceeded(from, nil)})
		}
	case k < 92:
		w.deadline(w.now + time.Duration(r.IntN(int(5*time.Second))))
	case k < 94:
		w.sweep()
	default:
		id := Link(1 + r.IntN(len(w.paths)))
		fresh(w.scratch)
		a, okA := w.kept.Result(id)
		b, okB := w.scratch.Result(id)
		if okA != okB || !reflect.DeepEqual(a, b) {
			w.t.Fatalf("call %d at %v: Result(%d) kept %+v %v, anew %+v %v", w.calls, w.now, id, a, okA, b, okB)
		}
	}
	w.deadline(0)
	w.same()
}

// randomPaths makes n links' paths over a few routers that several of
// them share: some silent, some quoting only headers, some lossy, the
// last hop each link's peer (some peers one hop away).
func randomPaths(r *rand.Rand, n int) map[Link][]simHop {
	routers := make([]simHop, 10)
	for i := range routers {
		routers[i] = simHop{addr: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), rtt: msec(float64(1 + r.IntN(60))), quote: r.IntN(3) > 0}
		switch r.IntN(8) {
		case 0:
			routers[i].addr = netip.Addr{}
		case 1:
			routers[i].loss = 0.3
		}
	}
	paths := map[Link][]simHop{}
	for id := Link(1); id <= Link(n); id++ {
		var p []simHop
		if r.IntN(4) > 0 {
			for range 1 + r.IntN(7) {
				p = append(p, routers[r.IntN(len(routers))])
			}
		}
		peer := simHop{addr: netip.AddrFrom4([4]byte{203, 0, 113, byte(id)}), rtt: msec(float64(5 + r.IntN(300)))}
		if r.IntN(6) == 0 {
			peer.loss = 0.2
		}
		paths[id] = append(p, peer)
	}
	return paths
}

// A Tracer keeps its deadline, its quiet Next and its due baselines
// between calls; every change of state and every moment at which time
// alone changes the answer must forget them. Under random links, pins,
// bursts, answers (late, forged, header-only) and wake-ups — just before,
// at and just after the deadline, or anywhere — it answers every call as
// one that keeps nothing does, and its NextDeadline is the one worked out
// from its state. Twenty seeds under LAGSCOPE_LONG (CI), six otherwise.
func TestTracerKeepsNothingStale(t *testing.T) {
	for seed := range uint64(longtest.Count(6, 20)) {
		r := rand.New(rand.NewPCG(seed, 7))
		w := &twins{t: t, rng: rand.New(rand.NewPCG(seed, 8)), kept: newSeeded([32]byte{byte(seed)}), scratch: newSeeded([32]byte{byte(seed)}), paths: randomPaths(r, 1+r.IntN(8))}
		wait := func(link Link, now time.Duration) time.Duration { return time.Duration(link) * 150 * time.Millisecond }
		w.kept.SetWait(wait)
		w.scratch.SetWait(wait)
		for range 4000 {
			w.step()
		}
		if w.kept.Unmatched() != w.scratch.Unmatched() {
			t.Fatalf("seed %d: %d answers unmatched kept, %d anew", seed, w.kept.Unmatched(), w.scratch.Unmatched())
		}
	}
}

// NextAt keeps its answer only until time alone changes it: a silent
// hop's wait ending, or another link's probe of a router both cross
// falling before a round that would begin now. Asked at every moment
// around those, it says what a scheduler that keeps nothing says.
func TestScheduleNextAtFollowsTime(t *testing.T) {
	const T = 20 * time.Second
	x := netip.MustParseAddr("10.9.0.1")
	for _, c := range []struct {
		name string
		set  func(s *scheduler)
		at   []time.Duration // NextAt asked, in order
		want []time.Duration // its answers (-1: none)
	}{{
		// The link's one hop never answered and missed three rounds: it
		// is left out of every round until silentEvery has passed since
		// its last probe, then due at once.
		name: "silent hop",
		set: func(s *scheduler) {
			s.AddLink(linkA, peerA)
			l := s.link(linkA)
			l.hops[1] = schedHop{missed: silentRounds, probed: true, last: T}
		},
		at:   []time.Duration{T + time.Second, T + silentEvery - 1, T + silentEvery, T + silentEvery + 1},
		want: []time.Duration{-1, -1, T + silentEvery, T + silentEvery + 1},
	}, {
		// Link B probed router x at hop 1 at T; a round of link A that
		// begins at T leaves x out (B's answer serves A), one that begins
		// after T probes it once x's second has passed. A's other hop is
		// in flight, and B's round is over until T+2s.
		name: "shared router",
		set: func(s *scheduler) {
			s.AddLink(linkA, peerA)
			s.AddLink(linkB, peerB)
			for _, l := range s.links {
				l.end, l.reach, l.answered = 2, 2, 2
				l.hops[1] = schedHop{addr: x, tell: true, heard: true, probed: true}
				l.hops[2] = schedHop{addr: l.peer, tell: true, heard: true, probed: true, last: T - time.Second}
			}
			a, b := s.link(linkA), s.link(linkB)
			a.flying = 1 << 2
			b.hops[1].last = T
			b.roundAt, b.roundOn, b.done = T, true, 0b110
			s.addrLast[x] = addrUse{at: T, by: linkB, ttl: 1}
		},
		at:   []time.Duration{T, T + 1, T + 2},
		want: []time.Duration{T + baselineMin, T + time.Second, T + time.Second},
	}} {
		s := makeScheduler()
		c.set(s)
		for i, now := range c.at {
			got, ok := s.NextAt(now)
			want, wantOK, _ := s.nextAt(now)
			if got != want || ok != wantOK {
				t.Fatalf("%s: NextAt(%v) kept %v %v, worked out anew %v %v", c.name, now, got, ok, want, wantOK)
			}
			if w := c.want[i]; ok != (w >= 0) || (ok && got != w) {
				t.Errorf("%s: NextAt(%v) = %v %v, want %v", c.name, now, got, ok, w)
			}
		}
	}
}
