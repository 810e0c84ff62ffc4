package session

// The watchers' budget: whatever the number of watchers, what a machine
// sends them costs it a bounded share of its upload.
//
//   - Every datagram a player (the host included) sends a watcher draws on
//     one token bucket on the session's clock, out: watchOutRate a second,
//     watchOutBurst at most, so that no second sees more than 32 KiB of
//     what the budget admits (what must go is paid back after). Each
//     watcher has a fair share of it, a bucket of its own refilled at
//     watchOutRate divided by the watchers linked: as watchers are added,
//     each one's share, and so its telemetry rate, goes down.
//   - The peer asks the budget (watcherGate, probe's SetObserverGate)
//     before it sends a watcher anything of the game, so what the budget
//     holds back is never sent, never numbered, and never reads as loss:
//     a telemetry update goes when the watcher's share holds the size of
//     the last one it got; a late watcher (a spectator, which discards
//     frame packets: it follows the feed) gets no unreliable frame or
//     status packet, and a reliable one (its ack measures the link) only
//     when its share holds it; a lobby observer, which runs the lockstep,
//     gets every reliable frame packet (its commands) and unreliable ones
//     as its share allows.
//   - What must go (acks, keep-alive replies, resends, the lobby's global
//     messages) goes while the machine's bucket holds it, and its bytes
//     are taken from the watcher's share all the same: the share's debt is
//     paid before anything the gate admits goes to that watcher again.
//     Past the bucket, or past its share's debt, it is held back (not
//     sent; the link resends it later, as after a loss): a watcher that
//     never acknowledges, whose resends would pile up, costs no more than
//     one that does, in every second.
//   - The machine that feeds the late watchers (the host; the master once
//     the host is removed) and the host's relay for pairs with a watcher
//     draw on a second bucket, extra: watchExtraRate, watchExtraBurst. A
//     round of updates goes when the bucket holds one update's size for
//     every watcher; until then the network events wait in the pending
//     list and go with the next round. The relay for watchers may take at
//     most half of it, as shares per watcher, so it never starves the feed;
//     a relayed frame past its share is refused (control frames, keep-alives
//     and acks, always pass).
//   - A watcher is dropped once it has been silent for watchSilence (its
//     keep-alive comes every second), not after the drop timeout; one never
//     heard yet keeps the drop timeout, for its paths may still be punching.
//
// docs/live.md explains the budget; the counters here are what its tests
// measure in virtual time.

import (
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

const (
	// watchOutRate and watchOutBurst bound what a player sends all its
	// watchers together: refilled at 28 KiB/s and holding 4 KiB, no
	// second (nor any longer time) exceeds 32 KiB a second but for the
	// debt of what must go, which the seconds after pay back.
	watchOutRate  = 28 << 10
	watchOutBurst = 4 << 10
	// watchExtraRate and watchExtraBurst bound the feeder's updates to
	// late watchers and the host's relay for watchers, on top of its
	// own share: no second exceeds 64 KiB. The burst holds a snapshot
	// whole (a few kilobytes even at 64 players), since a snapshot cut
	// short by the bucket waits for its link's retry.
	watchExtraRate  = 48 << 10
	watchExtraBurst = 16 << 10
	// watchRelayPart is the part of the extra the relay for watchers
	// may take, cut in shares per watcher.
	watchRelayPart = 0.5
	// shareHold is how long of its rate a watcher's share holds, so an
	// update saved up for goes at once; at least minShareBurst, one
	// datagram.
	shareHold     = 4 * time.Second
	minShareBurst = netcore.MaxDatagram
	// watchSilence drops a watcher silent this long: four keep-alives
	// missed in a row.
	watchSilence = 5 * time.Second
	// unheardWatcherLimit is the least time a player waits to hear from a
	// late watcher it has never heard: the host lets a crowd of watchers
	// in as their budget refills, 64 of them in some 15 s.
	unheardWatcherLimit = 30 * time.Second
	// debtHold bounds a bucket's debt to this long of its rate: what must
	// go past it (the roster to every watcher as many join) is counted,
	// never held against the telemetry for longer.
	debtHold = 2 * time.Second
	// mustGoReserve is what the gate leaves in the watchers' bucket for
	// what must go (acks, keep-alive replies, link reports, a roster):
	// the game's telemetry to watchers never takes the last of it, so
	// what must go is not held back behind what may wait.
	mustGoReserve = 2 << 10
	// starveAfter is how long a watcher waits for a telemetry update
	// before its next one may take the reserve: with 64 watchers, updates
	// come every few seconds, and none waits far longer than the rest.
	starveAfter = 4 * time.Second
	// shareSlack is what a watcher may be sent beyond its part of the
	// rate before what must go to it waits: one arriving needs its roster,
	// its address table and the first acks at once, a few kilobytes, while
	// its part refills at a 64th of the rate.
	shareSlack = 8 << 10
	// wireOverhead is what netcore adds to a message in its own
	// datagram: the header and a data record's head (the seal aside).
	wireOverhead = netcore.HeaderLen + 8
)

// watchShare is one watcher's part of the buckets: out paces what the gate
// admits (everything sent counts), relay the host's relay for it, and
// sent holds back what must go once a watcher takes more than its part
// for long (its resends pile up: it never acknowledges), so it cannot eat
// the other watchers' part of the bucket.
type watchShare struct {
	out, relay, sent bucket
	lastUpdate       time.Duration // when the gate last let a telemetry update go to it
}

// watchBudget is a machine's state for the rules above, with its counts in
// wire bytes and datagrams.
type watchBudget struct {
	out, extra bucket
	shares     map[netcore.PeerID]*watchShare
	n          int           // watchers the shares are cut for
	armed      bool          // the gate is on the peer
	now        time.Duration // the time of the input being handled: the sends' time

	// counts: datagrams and bytes this machine sent its watchers (out,
	// the feed aside), its updates to late watchers (feed), what it
	// relayed for watchers and refused to, and everything it sent.
	outBytes, outDatagrams     uint64
	feedBytes, feedDatagrams   uint64
	relayBytes, relayDatagrams uint64
	relayRefused               uint64
	allBytes, allDatagrams     uint64
	// held counts datagrams to watchers the buckets held back.
	held, heldBytes uint64
}

// ready gives the zero watchBudget its buckets' rates.
func (b *watchBudget) ready() {
	if b.shares == nil {
		b.shares = map[netcore.PeerID]*watchShare{}
		b.out = bucket{Rate: watchOutRate, Burst: watchOutBurst}
		b.extra = bucket{Rate: watchExtraRate, Burst: watchExtraBurst}
	}
}

// share is w's part of the buckets, cut for the watchers linked now.
func (b *watchBudget) share(w netcore.PeerID) *watchShare {
	b.ready()
	sh := b.shares[w]
	if sh == nil {
		sh = &watchShare{}
		b.shares[w] = sh
		b.cut(sh)
	}
	return sh
}

// cut sets sh's rates for b.n watchers.
func (b *watchBudget) cut(sh *watchShare) {
	n := float64(max(b.n, 1))
	out := watchOutRate / n
	sh.out.Resize(out, max(out*shareHold.Seconds(), minShareBurst))
	relay := watchExtraRate * watchRelayPart / n
	sh.relay.Resize(relay, max(relay*shareHold.Seconds(), minShareBurst))
	sh.sent.Resize(out, shareSlack)
}

// floor is the most debt a bucket of this rate carries.
func floor(b *bucket) float64 { return -b.Rate * debtHold.Seconds() }

// watcherOf is the watcher a datagram to addr goes to, if it is one:
// this machine is a player, and addr is a watcher's link (or its relay
// address).
func (s *Session) watcherOf(addr netip.AddrPort) *member {
	if s.role == RoleObserver {
		return nil
	}
	if id, ok := relayPeer(addr); ok {
		if m := s.byID[id]; m != nil && m.Observer {
			return m
		}
		return nil
	}
	for _, m := range s.members {
		if m.Observer && m.Addr == addr && !m.removed {
			return m
		}
	}
	return nil
}

// noteSend counts one datagram this machine's endpoint sends to addr and
// reports whether it may go. One to a watcher goes only while the
// machine's bucket holds it (a reliable one from the feeder to a late
// watcher is the feed's, the extra bucket; everything else the watchers'
// bucket) and the watcher's share is not past its debt: so no second of
// this machine's upload to its watchers exceeds a bucket's burst and
// rate, whatever the watchers do.
func (s *Session) noteSend(addr netip.AddrPort, p []byte) bool {
	b := &s.wb
	m := s.watcherOf(addr)
	if m == nil {
		b.allBytes += uint64(len(p))
		b.allDatagrams++
		return true
	}
	now := b.now
	n := float64(len(p))
	if m.late && len(p) >= netcore.HeaderLen && netcore.Channel(p[14]) == netcore.ChannelReliable && s.feedsWatchers() {
		b.ready()
		if !b.extra.Fits(now, n) {
			b.hold(p)
			return false
		}
		b.extra.Spend(now, n, floor(&b.extra))
		b.feedBytes += uint64(len(p))
		b.feedDatagrams++
		b.allBytes += uint64(len(p))
		b.allDatagrams++
		return true
	}
	sh := b.share(m.ID)
	if !b.out.Fits(now, n) || !sh.sent.Fits(now, n) {
		b.hold(p)
		return false
	}
	sh.sent.Spend(now, n, 0)
	sh.out.Spend(now, n, floor(&sh.out))
	b.out.Spend(now, n, floor(&b.out))
	b.outBytes += uint64(len(p))
	b.outDatagrams++
	b.allBytes += uint64(len(p))
	b.allDatagrams++
	return true
}

// hold counts a datagram to a watcher that the buckets held back.
func (b *watchBudget) hold(p []byte) {
	b.held++
	b.heldBytes += uint64(len(p))
}

// watcherGate is the peer's ObserverGate (probe.Peer.SetObserverGate): see
// the rules at the top.
func (s *Session) watcherGate(now time.Duration, to netcore.PeerID, n int, update, reliable bool) bool {
	m := s.byID[to]
	if m == nil || !m.Observer {
		return true
	}
	switch {
	case !m.late && reliable && !update:
		return true // a lobby observer's commands: it runs the lockstep
	case m.late && !update && (!reliable || s.feedsWatchers()):
		// A spectator discards frame packets; the feed's acks measure
		// the feeder's link to it.
		return false
	}
	size := float64(n + wireOverhead + s.sealOverhead())
	sh := s.wb.share(to)
	if !sh.out.Fits(now, size) {
		return false
	}
	// A watcher whose share has filled, or that has waited starveAfter
	// for an update, may take the reserve; the others leave it for what
	// must go. So the watchers take turns, whatever order the peer asks
	// in.
	ok := false
	if sh.out.Full() || (update && now-sh.lastUpdate >= starveAfter) {
		ok = s.wb.out.Fits(now, size)
	} else {
		ok = s.wb.out.Fits(now, size+mustGoReserve)
	}
	if ok && update {
		sh.lastUpdate = now
	}
	return ok
}

func (s *Session) sealOverhead() int {
	if s.ep.Sealed() {
		return netcore.SealOverhead
	}
	return 0
}

// feedFits (the feeder) reports whether an update of n bytes to one late
// watcher fits the extra bucket now; when it does not, the next try is set
// for when it will.
func (s *Session) feedFits(now time.Duration, n int) bool {
	s.wb.ready()
	frags := (n + netcore.MaxDataPayload - 1) / netcore.MaxDataPayload
	cost := float64(n + max(frags, 1)*(wireOverhead+s.sealOverhead()))
	if s.wb.extra.Fits(now, cost) {
		return true
	}
	wait := max(s.wb.extra.Until(cost), time.Millisecond)
	if s.watch.next <= now || now+wait < s.watch.next {
		s.watch.next = now + wait
	}
	return false
}

// relayFits (the host) takes a relayed frame of a pair with a watcher from
// that watcher's relay share and the extra bucket, and reports whether it
// may go: a control frame always goes, at the buckets' cost.
func (s *Session) relayFits(now time.Duration, src, dst *member, p []byte) bool {
	w := src
	if !w.Observer {
		w = dst
	}
	if !w.Observer {
		return true
	}
	sh := s.wb.share(w.ID)
	n := float64(len(p))
	// A control frame (an ack, a keep-alive) always goes toward a player;
	// toward a watcher it too waits for the extra bucket, so the host's
	// upload to watchers stays within it in every second.
	control := netcore.Channel(p[14]) == netcore.ChannelControl
	if (!control && !sh.relay.Fits(now, n)) || ((!control || w == dst) && !s.wb.extra.Fits(now, n)) {
		s.wb.relayRefused++
		return false
	}
	sh.relay.Spend(now, n, floor(&sh.relay))
	s.wb.extra.Spend(now, n, floor(&s.wb.extra))
	s.wb.relayBytes += uint64(len(p))
	s.wb.relayDatagrams++
	return true
}

// tickWatchBudget runs after every input: it puts the gate on a new peer, cuts the shares again when the
// number of watchers changed, and drops the watchers gone silent.
func (s *Session) tickWatchBudget(now time.Duration) {
	if s.role == RoleObserver || s.peer == nil {
		return
	}
	if !s.wb.armed {
		s.wb.armed = true
		s.peer.SetObserverGate(s.watcherGate)
	}
	n := 0
	for _, m := range s.members {
		if m.Observer && m.linked && !m.removed {
			n++
		}
	}
	if n != s.wb.n {
		s.wb.n = n
		for _, sh := range s.wb.shares {
			s.wb.cut(sh)
		}
	}
	if s.started {
		s.dropSilentWatchers(now)
	}
}

// dropSilentWatchers forgets every watcher heard once and silent for
// watchSilence since: a watcher sends a keep-alive every second.
func (s *Session) dropSilentWatchers(now time.Duration) {
	for _, m := range s.members {
		if m.Observer && !m.removed && m.heard && now-m.lastHeard > watchSilence {
			s.forgetObserver(m, "went silent")
		}
	}
}
