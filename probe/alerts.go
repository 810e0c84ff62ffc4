package probe

// Alerts: what a person who has looked away from the screen
// would want to be called back for. Each machine watches its own links and
// the session's target and raises an `alert` event, once per episode, when
//
//   - a link goes bad: a packet to the peer has outlived the connection
//     timeout (T11);
//   - a link's loss over the last LossWindow passes LossPercent, either
//     way: inbound from this machine's own counts (L1, L2), outbound from
//     what the peer reports of the same link (L4);
//   - the target tier worsens: a timing event executes with a target in a
//     worse tier than the previous target (S17, S18).
//
// An episode ends when its condition has been clear for ClearAfter; only
// the next time it holds after that is a new alert. While a load test runs
// (QuietPair) there is no alert about the link under test and none about
// the tier: the test fills the link on purpose. A link's state and
// loss are looked at with the bad-connection messages (watchLinks, ten
// times a second), and the loss is the difference of two cumulative
// readings a window apart (L5: whoever has two readings divides): a ring
// of eleven readings per link, taken every tenth of the window, so the
// watch allocates nothing once every link has its ring.
//
// The alert is the event; the line in the message list is the one the
// peer writes anyway where there is one: "has gone bad" for a bad link,
// "Connection quality target: …" for the tier. Loss has no other line,
// so a loss alert also adds an alarm message (lossMessage).

import (
	"github.com/lagscope/lagscope/vocab"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// AlertConfig holds the alert thresholds. Zero values take the defaults.
type AlertConfig struct {
	// LossPercent: a link's loss over LossWindow, inbound or outbound,
	// above this many percent is an alert; default 5.
	LossPercent float64
	// LossWindow is how far back the loss is taken; default 10 s.
	LossWindow time.Duration
	// ClearAfter ends an episode once its condition has been clear this
	// long; default 10 s.
	ClearAfter time.Duration
}

// The defaults of AlertConfig, taken where a field is zero.
const (
	defaultAlertLossPercent = 5
	defaultAlertLossWindow  = 10 * time.Second
	defaultAlertClearAfter  = 10 * time.Second
)

// alertReadings is how many intervals the loss window is cut into: the
// window slides in tenths, so the loss judged is never more than a tenth
// of a window stale, and a ring of alertReadings+1 readings per link is a
// few hundred bytes.
const alertReadings = 10

// alertMinExpected is the fewest datagrams a direction must have expected
// in the window before its loss is judged: one lost datagram out of six
// is not a link losing 17 % (a link that carries next to nothing — an
// observer's way back — would raise alerts on its first loss).
const alertMinExpected = 20

// lossReading is one link's cumulative loss counts at one time (L1, L4).
type lossReading struct {
	expected, missing         uint64
	peerKnown                 bool
	peerExpected, peerMissing uint64
}

// episode is one alert condition's state: on from the alert until the
// condition has been clear for the clear time.
type episode struct {
	on       bool
	clearing bool          // the condition has been seen clear since …
	since    time.Duration // … this time
}

// step feeds the condition as seen at now and reports whether it starts an
// episode (an alert is due).
func (e *episode) step(now time.Duration, holds bool, clearAfter time.Duration) bool {
	switch {
	case holds && !e.on:
		e.on, e.clearing = true, false
		return true
	case holds:
		e.clearing = false
	case e.on && !e.clearing:
		e.clearing, e.since = true, now
	case e.on && now-e.since >= clearAfter:
		e.on, e.clearing = false, false
	}
	return false
}

// linkAlerts is the alert state of one link.
type linkAlerts struct {
	ring    [alertReadings + 1]lossReading
	n, head int // readings held; the next slot to write
	bad     episode
	loss    episode
}

// alerts is a peer's alert watch. One goroutine owns it with the peer.
type alerts struct {
	cfg       AlertConfig // defaults filled in
	ready     bool
	links     []linkAlerts // by house index
	next      time.Duration
	tier      rungs.Tier // the target's tier as last seen
	tierEp    episode
	tierFresh bool // a worsening since the last watch
}

func (a *alerts) init(p *Peer) {
	a.ready = true
	a.cfg = p.cfg.Alerts
	if a.cfg.LossPercent <= 0 {
		a.cfg.LossPercent = defaultAlertLossPercent
	}
	if a.cfg.LossWindow <= 0 {
		a.cfg.LossWindow = defaultAlertLossWindow
	}
	if a.cfg.ClearAfter <= 0 {
		a.cfg.ClearAfter = defaultAlertClearAfter
	}
	a.links = make([]linkAlerts, len(p.players))
	a.tier = p.cfg.Timing.Tier()
}

// watch looks at every link of p at now and queues the alerts due. The
// caller flushes p's events.
func (a *alerts) watch(now time.Duration, p *Peer) {
	if !a.ready {
		a.init(p)
	}
	sample := now >= a.next
	if step := a.cfg.LossWindow / alertReadings; sample {
		// On a fixed grid, so that eleven readings span the window and
		// not a little more: the watch itself runs a little late.
		a.next += step
		if a.next <= now {
			a.next = now + step // a long pause: start the grid over
		}
	}
	for _, pl := range p.players {
		if pl == p.self || pl.removed {
			continue
		}
		st, ok := p.ep.Stats(pl.ID)
		if !ok {
			continue
		}
		la := &a.links[pl.idx]
		if p.load.quietLink(p.self.Name, pl.Name) {
			// A load test runs on this link: its load is what the link
			// shows. The episodes hold as they are, and the loss window
			// starts over, so it is judged again a whole window after
			// the test, on readings the test had no part in.
			la.n = 0
			continue
		}
		if la.bad.step(now, st.Bad, a.cfg.ClearAfter) {
			p.emit(p.alert(feed.AlertBad, pl, feed.LinkBadText(pl.Name)))
		}
		if sample {
			if in, out, holds := la.read(st, a.cfg.LossPercent/100); la.loss.step(now, holds, a.cfg.ClearAfter) {
				text := feed.LossText(pl.Name, in, out, a.cfg.LossWindow)
				p.emit(p.alert(feed.AlertLoss, pl, text))
				p.emit(feed.LossMessage(p.frame, p.self.Name, pl.Name, text))
			}
		}
	}
	if a.tierFresh {
		a.tierFresh = false
		a.tierEp.step(now, true, a.cfg.ClearAfter)
	} else {
		a.tierEp.step(now, false, a.cfg.ClearAfter)
	}
}

// read adds the link's counts at this sample and returns its loss over the
// window each way (-1: not judged) and whether either passes limit.
func (la *linkAlerts) read(st netcore.LinkStats, limit float64) (in, out float64, holds bool) {
	cur := lossReading{expected: st.Loss.Expected, missing: st.Loss.Missing,
		peerKnown: st.PeerLoss.Known, peerExpected: st.PeerLoss.Expected, peerMissing: st.PeerLoss.Missing}
	if la.n > 0 {
		// The newest reading is one behind head; a total that went
		// down means the link started over: so do its readings.
		last := la.ring[(la.head+len(la.ring)-1)%len(la.ring)]
		if cur.expected < last.expected || cur.missing < last.missing ||
			(last.peerKnown && cur.peerKnown && (cur.peerExpected < last.peerExpected || cur.peerMissing < last.peerMissing)) {
			la.n = 0
		}
	}
	la.ring[la.head] = cur
	la.head = (la.head + 1) % len(la.ring)
	la.n = min(la.n+1, len(la.ring))
	old := la.ring[(la.head+len(la.ring)-la.n)%len(la.ring)] // the oldest held
	in, out = -1, -1
	if la.n < len(la.ring) {
		// Not a whole window yet: what the alert says ("in the last
		// 10s") would not be true.
		return in, out, false
	}
	if e := cur.expected - old.expected; e >= alertMinExpected {
		in = float64(cur.missing-old.missing) / float64(e)
	}
	if e := cur.peerExpected - old.peerExpected; old.peerKnown && cur.peerKnown && e >= alertMinExpected {
		out = float64(cur.peerMissing-old.peerMissing) / float64(e)
	}
	return in, out, in > limit || out > limit
}

// leaving reports whether the link's loss over the readings held left its
// own level (the hop trace then looks at it closely): either way, at least
// leaveLoss of at least leaveDatagrams, and more than twice its loss over
// the link's whole life plus leaveLoss/2. st is the link's statistics now.
func (la *linkAlerts) leaving(st netcore.LinkStats) bool {
	if la.n < 2 {
		return false
	}
	cur := la.ring[(la.head+len(la.ring)-1)%len(la.ring)]
	old := la.ring[(la.head+len(la.ring)-la.n)%len(la.ring)]
	left := func(e, m, allE, allM uint64) bool {
		if e < leaveDatagrams || allE == 0 {
			return false
		}
		share, life := float64(m)/float64(e), float64(allM)/float64(allE)
		return share >= leaveLoss && share > 2*life+leaveLoss/2
	}
	if left(cur.expected-old.expected, cur.missing-old.missing, st.Loss.Expected, st.Loss.Missing) {
		return true
	}
	return old.peerKnown && cur.peerKnown && st.PeerLoss.Known &&
		left(cur.peerExpected-old.peerExpected, cur.peerMissing-old.peerMissing, st.PeerLoss.Expected, st.PeerLoss.Missing)
}

// timing sees every timing event this machine executes (S18): a target in
// a worse tier than the previous one raises a tier alert unless a tier
// episode is running.
func (a *alerts) timing(p *Peer, t *feed.TimingEvent) {
	if !a.ready {
		a.init(p)
	}
	tier := rungs.Timing{SendPeriod: t.SendPeriod, LookAhead: t.LookAhead}.Tier()
	prev := a.tier
	a.tier = tier
	if tier <= prev || p.load.testing() {
		// Better, or worse while a load test runs: the test's cost to
		// the match (its result says what), not an alarm.
		return
	}
	a.tierFresh = true
	if !a.tierEp.on {
		a.tierEp.on, a.tierEp.clearing = true, false
		p.emit(&feed.AlertEvent{Header: feed.Header{Type: vocab.EventAlert, Frame: p.frame}, Player: p.self.Name, Kind: feed.AlertTier,
			Text: "Connection quality target worsened from " + prev.String() + " to " + tier.String()})
	}
}

// alert builds an alert about the link to pl.
func (p *Peer) alert(kind feed.AlertKind, pl *player, text string) *feed.AlertEvent {
	from, to := p.self.Name, pl.Name
	return &feed.AlertEvent{Header: feed.Header{Type: vocab.EventAlert, Frame: p.frame}, Player: p.self.Name, Kind: kind, From: &from, To: &to, Text: text}
}
