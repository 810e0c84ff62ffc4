package session

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/simworld"
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
)

// counts is a machine's watcher-budget counters at one moment.
type counts struct {
	at                          time.Duration
	out, feed, relay, all       uint64
	outDg, feedDg, relayDg, dgs uint64
}

func countsOf(w *world, m *machine) counts {
	b := &m.s.wb
	return counts{at: w.now(), out: b.outBytes, feed: b.feedBytes, relay: b.relayBytes, all: b.allBytes,
		outDg: b.outDatagrams, feedDg: b.feedDatagrams, relayDg: b.relayDatagrams, dgs: b.allDatagrams}
}

// perSecond is how many units a second c2 is past c1, in virtual time.
func perSecond(c1, c2 counts, f func(c counts) uint64) float64 {
	return float64(f(c2)-f(c1)) / (c2.at - c1.at).Seconds()
}

// budgetWorld runs a 3-player game with n late watchers and returns the
// players' and the watchers' machines once every watcher follows and the
// session has settled.
func budgetWorld(t *testing.T, n int) (*world, []*machine, []*machine) {
	w := newWorld(t, 13, lan30)
	host := w.host("alice", Config{Players: 3})
	bob := w.join("bob", RolePlayer, host, Config{})
	carol := w.join("carol", RolePlayer, host, Config{})
	players := []*machine{host, bob, carol}
	if !w.runUntil(10*time.Second, started(players...)) {
		t.Fatal("the game did not start")
	}
	w.runFor(2 * time.Second)
	var watchers []*machine
	for i := range n {
		watchers = append(watchers, w.join(fmt.Sprintf("w%02d", i), RoleObserver, host, Config{}))
	}
	if !w.runUntil(30*time.Second, started(watchers...)) {
		t.Fatal("not every watcher attached")
	}
	w.runFor(10 * time.Second)
	return w, players, watchers
}

// Whatever the number of watchers, each player sends them together at most
// 32 KiB/s, and the host at most 64 KiB/s more for their feed and relay,
// measured from the sessions' own counters over 30 s of virtual time; the
// watchers still follow the game (their frame moves on with the players',
// their timing events are the players'), and each still gets telemetry,
// less often as watchers are added.
func TestWatchersCostABoundedShare(t *testing.T) {
	const window = 30 * time.Second
	for _, n := range []int{0, 1, maxObservers} {
		w, players, watchers := budgetWorld(t, n)
		host := players[0]
		before := map[*machine]counts{}
		for _, m := range players {
			before[m] = countsOf(w, m)
		}
		tel := map[*machine]uint64{}
		frames := map[*machine]int{}
		for _, m := range watchers {
			tel[m] = m.s.Peer().TelemetryUpdates()
			frames[m] = m.s.Peer().View(w.now()).Frame
		}
		attach := host.s.Peer().View(w.now()).Frame
		host.s.SetSpeed(20) // timing events while the watchers follow
		w.after(host)
		w.runFor(window)
		for _, m := range players {
			c1, c2 := before[m], countsOf(w, m)
			out := perSecond(c1, c2, func(c counts) uint64 { return c.out })
			extra := perSecond(c1, c2, func(c counts) uint64 { return c.feed + c.relay })
			all := perSecond(c1, c2, func(c counts) uint64 { return c.all })
			dgs := perSecond(c1, c2, func(c counts) uint64 { return c.dgs })
			t.Logf("%2d watchers: %-5s to watchers %6.0f B/s (%5.1f datagrams/s), feed and relay %6.0f B/s, all sent %7.0f B/s (%6.1f datagrams/s)",
				n, m.name, out, perSecond(c1, c2, func(c counts) uint64 { return c.outDg }), extra, all, dgs)
			if out > 32<<10 {
				t.Errorf("%d watchers: %s sends them %.0f B/s, above 32 KiB/s", n, m.name, out)
			}
			if extra > 64<<10 {
				t.Errorf("%d watchers: %s spends %.0f B/s on their feed and relay, above 64 KiB/s", n, m.name, extra)
			}
			if m != host && c2.feed != c1.feed {
				t.Errorf("%s fed the watchers while the host is there", m.name)
			}
			if n == 0 && (c2.out != 0 || c2.feed != 0 || c2.relay != 0) {
				t.Errorf("no watchers: %s counted %+v to watchers", m.name, c2)
			}
		}
		hv := host.s.Peer().View(w.now())
		var slowest time.Duration
		for _, m := range watchers {
			p := m.s.Peer()
			if m.s.Done() || !p.Spectator() {
				t.Fatalf("%s stopped following: %v", m.name, m.s.Err())
			}
			v := p.View(w.now())
			if v.Frame <= frames[m] || hv.Frame-v.Frame > 2*hv.FPS || v.Frame > hv.Frame {
				t.Errorf("%s at frame %d (was %d), the host at %d: it does not follow", m.name, v.Frame, frames[m], hv.Frame)
			}
			got := p.TelemetryUpdates() - tel[m]
			if got == 0 {
				t.Errorf("%s got no telemetry in %v", m.name, window)
				continue
			}
			slowest = max(slowest, window*time.Duration(len(players))/time.Duration(got))
			if !matrixComplete(p.Matrix(w.now()), []string{"alice", "bob", "carol"}) {
				t.Errorf("%s's matrix is not complete", m.name)
			}
		}
		if n > 0 {
			t.Logf("%2d watchers: each watcher got an update from each player every %v on average", n, slowest.Round(time.Millisecond))
		}
		// The timing events after the window began are the players', on
		// the same frames.
		want := timingFrom(host, attach)
		if len(want) == 0 {
			t.Errorf("%d watchers: no timing event after the change of speed", n)
		}
		for _, m := range watchers {
			if got := timingFrom(m, attach); !slices.Equal(got, want) {
				t.Errorf("%s timing events %q, host %q", m.name, got, want)
			}
		}
	}
}

// A watcher that stops sending (no keep-alive) is dropped by every player
// 5 s after it was last heard, while a player gone silent waits the drop
// timeout (60 s) as before.
func TestSilentWatcherDroppedAfter5s(t *testing.T) {
	w := newWorld(t, 14, lan30)
	host := w.host("alice", Config{Players: 3})
	bob := w.join("bob", RolePlayer, host, Config{})
	carol := w.join("carol", RolePlayer, host, Config{})
	if !w.runUntil(10*time.Second, started(host, bob, carol)) {
		t.Fatal("the game did not start")
	}
	if host.s.dropTimeout != 60*time.Second || bob.s.dropTimeout != 60*time.Second {
		t.Fatalf("drop timeout %v, %v; want the default 60 s", host.s.dropTimeout, bob.s.dropTimeout)
	}
	eve := w.join("eve", RoleObserver, host, Config{})
	if !w.runUntil(10*time.Second, func() bool { p := eve.s.Peer(); return p != nil && p.Spectator() }) {
		t.Fatal("eve does not follow the game")
	}
	w.runFor(3 * time.Second)
	eveID := eve.s.self
	eve.vanish()
	carol.vanish()
	gone := w.now()
	last := func(m *machine) time.Duration { return m.s.byID[eveID].lastHeard }
	for _, m := range []*machine{host, bob} {
		if gone-last(m) > 1100*time.Millisecond {
			t.Fatalf("%s had not heard eve for %v before she went silent", m.name, gone-last(m))
		}
	}
	dropped := map[*machine]time.Duration{}
	w.runUntil(20*time.Second, func() bool {
		for _, m := range []*machine{host, bob} {
			if _, ok := dropped[m]; !ok && !slices.Contains(m.linkPeers(), eveID) {
				dropped[m] = w.now()
			}
		}
		return len(dropped) == 2
	})
	for _, m := range []*machine{host, bob} {
		at, ok := dropped[m]
		if !ok {
			t.Fatalf("%s still links to eve 20 s after she went silent", m.name)
		}
		silent := at - last(m)
		t.Logf("%s dropped eve %v after it last heard her", m.name, silent)
		if silent < watchSilence || silent > watchSilence+1100*time.Millisecond {
			t.Errorf("%s dropped eve after %v of silence, want %v (within the second's check)", m.name, silent, watchSilence)
		}
		if !slices.Contains(m.messages(), "eve went silent") {
			t.Errorf("%s's messages lack eve going silent: %q", m.name, m.messages())
		}
	}
	// Carol went silent at the same moment: still a player 30 s on.
	w.runFor(25 * time.Second)
	for _, m := range []*machine{host, bob} {
		for _, e := range of[*feed.RemovedEvent](m) {
			t.Errorf("%s removed %s %v after she went silent; the drop timeout is 60 s", m.name, e.Player, w.now()-gone)
		}
	}
	if !w.runUntil(45*time.Second, func() bool { return len(of[*feed.RemovedEvent](bob)) > 0 }) {
		t.Fatal("carol was never removed")
	}
	if took := w.now() - gone; took < 60*time.Second {
		t.Errorf("carol removed %v after she went silent, before the drop timeout", took)
	}
}

// A watcher that falls silent in the lobby leaves it after watchSilence
// too, where a player is given the lobby's ten seconds.
func TestSilentWatcherLeavesTheLobbyAfter5s(t *testing.T) {
	w := newWorld(t, 15, lan30)
	host := w.host("alice", Config{Players: 3})
	bob := w.join("bob", RolePlayer, host, Config{})
	eve := w.join("eve", RoleObserver, host, Config{})
	if !w.runUntil(10*time.Second, func() bool { return slices.Contains(host.linkPeers(), eve.s.self) && eve.s.self != 0 }) {
		t.Fatal("eve never reached the lobby")
	}
	w.runFor(2 * time.Second)
	eveID := eve.s.self
	heard := host.s.byID[eveID].lastHeard
	eve.vanish()
	if !w.runUntil(20*time.Second, func() bool { return host.s.byID[eveID] == nil }) {
		t.Fatal("the host kept eve in the lobby 20 s after she went silent")
	}
	// The lobby's silence is checked once a second, and eve was heard
	// last up to a ping (half a second) before she went.
	if silent := w.now() - heard; silent < watchSilence || silent > watchSilence+2*time.Second || silent >= maxLobbySilence {
		t.Errorf("eve left the lobby after %v of silence, want %v (checked once a second), under the lobby's %v", silent, watchSilence, maxLobbySilence)
	}
	if host.s.byID[bob.s.self] == nil {
		t.Error("bob, a player, left with her")
	}
}

// acksIn reports whether the plain datagram p carries an acknowledgement
// of any kind: an ack (alone or carried), a keep-alive reply, or a
// telemetry ack.
func acksIn(p []byte) bool {
	if len(p) < netcore.HeaderLen || p[1] != netcore.Magic1 {
		return false
	}
	for b := p[netcore.HeaderLen:]; len(b) > 0; {
		typ, pl, rest, err := netcore.NextRecord(b)
		if err != nil {
			return false
		}
		switch {
		case typ == netcore.RecAck, typ == 0x23, typ == 0x24:
			return true
		case typ == netcore.RecData && len(pl) > 4 && pl[4] == 0x04:
			return true
		}
		b = rest
	}
	return false
}

// Watchers that never acknowledge anything — their resends would pile
// up — cost each player no more than its budget in any second: measured
// on the wire (every datagram that leaves a player for a watcher's
// address, at its virtual time), over every one-second window of the 64
// watchers' arrival and the 40 s after. The session runs plain so the
// test can read which datagrams are acks.
func TestWatchersThatNeverAcknowledgeStayWithinBudget(t *testing.T) {
	neverAcknowledged(t, false)
}

// The same with the players' sockets setting hop limits, as a live
// machine's do: each player primes every watcher's address as their link
// opens (prime.go), and on one LAN the primes arrive. They are datagrams
// to the watchers too, and stay within the budget with the rest.
func TestPrimesToWatchersStayWithinBudget(t *testing.T) {
	neverAcknowledged(t, true)
}

// lanHops is a transport on one LAN that sets hop limits per datagram, as
// a Linux socket does: with no router between two machines, a datagram
// with any hop limit arrives.
type lanHops struct{ *simworld.Recorder }

func (l lanHops) SendHopLimit(to netip.AddrPort, p []byte, _ int) error { return l.Send(to, p) }
func (lanHops) HopAnswers(dst []netcore.HopAnswer) []netcore.HopAnswer  { return dst }
func (lanHops) TraceUnavailable() string                                { return "" }

func neverAcknowledged(t *testing.T, hops bool) {
	w := newWorld(t, 15, lan30)
	plain := Config{Plain: true}
	host := w.host("alice", Config{Players: 3, Plain: true})
	join := func(name string) *machine {
		if !hops {
			return w.join(name, RolePlayer, host, plain)
		}
		m := w.attach(name)
		s, err := NewJoiner(w.config(m, plain), RolePlayer, lanHops{m.tr}, host.addr)
		if err != nil {
			t.Fatal(err)
		}
		return w.start(m, s)
	}
	bob := join("bob")
	carol := join("carol")
	players := []*machine{host, bob, carol}
	if !w.runUntil(10*time.Second, started(players...)) {
		t.Fatal("the game did not start")
	}
	w.runFor(2 * time.Second)
	type sent struct {
		at time.Duration
		n  int
	}
	toWatchers := map[*machine][]sent{}
	primes := map[*machine]int{}
	watcherAt := map[netip.AddrPort]bool{}
	for _, p := range players {
		p.tr.Divert = func(to netip.AddrPort, d []byte) bool {
			if watcherAt[to] || isRelayed(to) {
				toWatchers[p] = append(toWatchers[p], sent{w.now(), len(d)})
				if isPrime(d) {
					primes[p]++
				}
			}
			return false
		}
	}
	var watchers []*machine
	for i := range maxObservers {
		m := w.join(fmt.Sprintf("w%02d", i), RoleObserver, host, plain)
		watcherAt[m.addr] = true
		m.tr.Divert = func(_ netip.AddrPort, d []byte) bool { return acksIn(d) }
		watchers = append(watchers, m)
	}
	w.runFor(40 * time.Second)
	following := 0
	for _, m := range watchers {
		if p := m.s.Peer(); p != nil && p.Spectator() && !m.s.Done() {
			following++
		}
	}
	if following == 0 {
		t.Fatal("no watcher follows the game: the test measured nothing")
	}
	for _, p := range players {
		limit := 32 << 10
		if p == host {
			limit += 64 << 10 // the feed and the relay
		}
		ds := toWatchers[p]
		worst, sum, from := 0, 0, 0
		for _, d := range ds {
			sum += d.n
			for ds[from].at <= d.at-time.Second {
				sum -= ds[from].n
				from++
			}
			worst = max(worst, sum)
		}
		total := 0
		for _, d := range ds {
			total += d.n
		}
		t.Logf("%s: %d datagrams (%d primes), %d bytes to watchers in %v; the worst second %d bytes (budget %d); held back %d datagrams",
			p.name, len(ds), primes[p], total, 40*time.Second, worst, limit, p.s.wb.held)
		if worst > limit {
			t.Errorf("%s sent its watchers %d bytes in one second, over its %d", p.name, worst, limit)
		}
		if hops && p != host && primes[p] == 0 {
			t.Errorf("%s primed no watcher: the test measured no prime", p.name)
		}
	}
	t.Logf("%d of %d watchers follow the game", following, len(watchers))
}
