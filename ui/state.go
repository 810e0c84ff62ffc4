package ui

import (
	"time"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

// interval is the width of one column of the charts and lanes, and of one
// loss interval: the totals are differenced once per interval of engine
// time (L5), which gives enough datagrams per interval for a share to mean
// something at a few packets a second.
const interval = time.Second

// historyCap is how many intervals of history a link keeps: wider than the
// widest chart a large terminal gives (a 300-column screen).
const historyCap = 320

// tableWindow is how many intervals the link table's shares span: short
// enough to follow a change, long enough not to flicker.
const tableWindow = 10

// maxMessages bounds the message list.
const maxMessages = 1000

// sample is one interval of one link: the last values seen in it, and
// whether anything alarming happened during it.
type sample struct {
	bucket int64 // View.At / interval

	srtt, rto       float64
	hasSRTT, hasRTO bool

	sent, retx, exp, miss uint64
	hasOwn                bool // our own totals known (L1)
	peerExp, peerMiss     uint64
	hasPeer               bool // the peer has reported (L4)

	bad bool // the link was bad at some point of the interval (T11)
}

// share is a fraction that may be unknown (L3): ok is false when there is
// nothing to divide (no reading, or nothing sent in the span).
type share struct {
	v  float64
	ok bool
}

func ratio(num, den uint64) share {
	if den == 0 {
		return share{}
	}
	return share{v: float64(num) / float64(den), ok: true}
}

// linkHist is what the UI remembers of one link.
type linkHist struct {
	peer    string
	last    feed.LinkView
	present bool // in the newest View
	samples []sample
}

// msOf is a duration in milliseconds, the unit the charts scale in, with
// whether it is known (L3).
func msOf(d time.Duration, known bool) (float64, bool) {
	if !known {
		return 0, false
	}
	return units.Millis(d), true
}

func (h *linkHist) observe(at time.Duration, lv feed.LinkView) {
	s := sample{bucket: int64(at / interval)}
	s.srtt, s.hasSRTT = msOf(lv.SRTT, lv.RTTKnown)
	s.rto, s.hasRTO = units.Millis(lv.RTO), true
	s.sent, s.retx, s.exp, s.miss, s.hasOwn = lv.Sent, lv.Retransmitted, lv.Expected, lv.Missing, lv.LossKnown
	s.peerExp, s.peerMiss, s.hasPeer = lv.PeerExpected, lv.PeerMissing, lv.PeerKnown
	s.bad = lv.Bad || lv.State == feed.LinkBad

	if n := len(h.samples); n > 0 {
		prev := &h.samples[n-1]
		// Totals never decrease on one link (L5); when they do, the link
		// ended and a new one began, and its history starts over.
		if (s.hasOwn && prev.hasOwn && (s.sent < prev.sent || s.exp < prev.exp)) ||
			(s.hasPeer && prev.hasPeer && s.peerExp < prev.peerExp) {
			h.samples = h.samples[:0]
		} else if prev.bucket == s.bucket {
			s.bad = s.bad || prev.bad
			*prev = s
			h.last = lv
			return
		} else if prev.bucket > s.bucket {
			// A picture from the past (a restarted replay): start over.
			h.samples = h.samples[:0]
		} else {
			// Intervals without a picture repeat the last one, so that one
			// column is always one interval.
			gap := min(s.bucket-prev.bucket-1, historyCap)
			fill := *prev
			fill.bad = false
			for i := int64(0); i < gap; i++ {
				fill.bucket = s.bucket - gap + i
				h.samples = append(h.samples, fill)
			}
		}
	}
	h.samples = append(h.samples, s)
	if len(h.samples) > 2*historyCap {
		h.samples = append(h.samples[:0], h.samples[len(h.samples)-historyCap:]...)
	}
	h.last = lv
}

// shares are one span's resend share (Retransmitted/Sent), observed
// inbound loss share (Missing/Expected) and the peer-reported outbound loss
// share (the peer's Missing/Expected for this link), each differenced from
// the cumulative totals (L5).
type shares struct{ resend, in, out share }

func diffShares(a, b *sample) shares {
	var sh shares
	if b.hasOwn {
		if a == nil || !a.hasOwn {
			sh.resend = ratio(b.retx, b.sent)
			sh.in = ratio(b.miss, b.exp)
		} else {
			sh.resend = ratio(b.retx-a.retx, b.sent-a.sent)
			sh.in = ratio(b.miss-a.miss, b.exp-a.exp)
		}
	}
	if b.hasPeer {
		if a == nil || !a.hasPeer {
			sh.out = ratio(b.peerMiss, b.peerExp)
		} else {
			sh.out = ratio(b.peerMiss-a.peerMiss, b.peerExp-a.peerExp)
		}
	}
	return sh
}

// intervalShares is interval i's shares: against the interval before it.
// The oldest interval kept has no predecessor and is unknown.
func (h *linkHist) intervalShares(i int) shares {
	if i <= 0 || i >= len(h.samples) {
		return shares{}
	}
	return diffShares(&h.samples[i-1], &h.samples[i])
}

// windowShares are the shares over the last tableWindow intervals. With a
// single reading the link's start stands in for the first reading: totals
// begin at zero when the link does.
func (h *linkHist) windowShares() shares {
	n := len(h.samples)
	if n == 0 {
		return shares{}
	}
	if n == 1 {
		return diffShares(nil, &h.samples[0])
	}
	from := max(0, n-1-tableWindow)
	return diffShares(&h.samples[from], &h.samples[n-1])
}

// retried reports whether interval i saw resends.
func (h *linkHist) retried(i int) bool {
	if i <= 0 || i >= len(h.samples) {
		return false
	}
	a, b := &h.samples[i-1], &h.samples[i]
	return a.hasOwn && b.hasOwn && b.retx > a.retx
}

// msgKind picks a message's look.
type msgKind uint8

const (
	msgInfo           msgKind = iota
	msgTier                   // S18: Connection quality target: <tier>
	msgAlarm                  // a bad connection, a desync
	msgMember                 // the master changed, a player left
	msgAlert                  // an alert (feed.AlertEvent) with no line of its own: rings the bell when it is on
	msgIncident               // an incident opened (msglines.go)
	msgIncidentClosed         // an incident closed
)

// alertMark starts an alert's line in the message list, so it reads as one
// without colour.
const alertMark = "ALERT "

type message struct {
	at      time.Duration // session time (msglines.go)
	pregame bool          // before the game started: no session time
	frame   int
	text    string
	kind    msgKind
	tier    string // for msgTier
	n       uint64 // the line's number, in order
	// key pairs an alert with its message's line; alert: an alert marks
	// the line; fromMsg: the line has its message (not only an alert).
	key     lineKey
	alert   bool
	fromMsg bool
}

// session is everything the UI has learnt from the feed.
type session struct {
	view    feed.View
	have    bool
	links   map[string]*linkHist
	order   []string    // peers in the order first seen (house order)
	mx      *matrixHist // every player's links, for the Matrix view
	msgs    []message
	status  status // the header's state, changed at most once per calmEvery
	masters int    // master events seen, to tell the first from a handoff
	alerts  int    // alert events seen: the bell rings when this grows
	gen     uint64 // updates taken: what the cached parts of the picture are drawn from
	msgN    uint64 // changes to the message list, for the cached message list
	lineN   uint64 // lines numbered so far
	// open are the incidents whose open line is in the list; absorb the
	// loss lines whose alert marked an incident's line instead.
	open   []openIncident
	absorb []absorbing
	// gameStamped: the feed's lines carry their session time (game_ms).
	gameStamped bool
	done        bool
	err         error
	// worded is the diagnosis the verdict is worded from and the timings
	// the view showed when it arrived (sessionVerdict).
	worded verdictBase
	// incidents is every incident told, as its latest line (incidents.go).
	incidents incidentLog
}

// verdictBase is a diagnosis and the target and timing in force that the
// view showed when it arrived.
type verdictBase struct {
	d               *diagnosis.Diagnosis
	target, inForce rungs.Timing
}

// verdict is the verdict's sentences in their order of priority, worded
// at the frame shown (so that "in about 40 s" counts down): with the
// diagnosis's own target while the timings are those it arrived with (it
// may name the target just decided, whose timing event has not executed
// yet), with the header's once either changes, so that the verdict never
// names a rung the header does not. No diagnosis, no sentences.
func (s *session) verdict() []string {
	v := &s.view
	b := &s.worded
	if b.d == nil {
		return nil
	}
	t := diagnosis.Timings{Target: v.Target, InForce: v.InForce, Frame: v.Frame, FPS: v.FPS}
	if v.Target == b.target && v.InForce == b.inForce {
		if w := b.d.Worded(); w.Target.Valid() {
			t.Target = w.Target
		}
	}
	return b.d.Sentences(t)
}

func newSession() *session { return &session{links: map[string]*linkHist{}, mx: &matrixHist{}} }

const tierPrefix = "Connection quality target: "

// apply takes in one update: every event, then the newest picture.
func (s *session) apply(u feed.Update) {
	s.gen++
	u.View = safeView(u.View)
	for _, e := range u.Events {
		s.event(&u.View, e)
		s.incidentEvent(&u.View, e)
	}
	if u.Done {
		s.done = true
		s.err = u.Err
		// A feed that ends without a picture of its own keeps the last one.
		if u.View.At != 0 || u.View.Session != "" || len(u.View.Links) > 0 || len(u.View.Players) > 0 {
			s.take(u.View)
		}
		return
	}
	s.take(u.View)
}

func (s *session) take(v feed.View) {
	s.view, s.have = v, true
	if v.Diagnosis != s.worded.d {
		s.worded = verdictBase{d: v.Diagnosis, target: v.Target, inForce: v.InForce}
	}
	s.calm(v)
	for _, h := range s.links {
		h.present = false
	}
	for _, lv := range v.Links {
		h := s.links[lv.Peer]
		if h == nil {
			h = &linkHist{peer: lv.Peer}
			s.links[lv.Peer] = h
			s.order = append(s.order, lv.Peer)
		}
		h.present = true
		h.observe(v.At, lv)
	}
	s.mx.observe(v.At, matrixOf(&v))
}

// event turns an event into a message line (msglines.go). Sentences about
// this machine's player are in the second person ("you are the master").
func (s *session) event(v *feed.View, e feed.Event) {
	self := v.Self
	h := feed.Head(e)
	at, ok := s.eventTime(v, h)
	m := message{at: at, pregame: !ok, frame: h.Frame}
	switch e := e.(type) {
	case *feed.MessageEvent:
		m.text = textOf(e.Text)
		switch {
		case e.Kind == feed.MessageTier:
			m.kind, m.tier = msgTier, textOf(e.Subject)
		case e.Kind.Alarm():
			m.kind = msgAlarm
		}
		if s.keyedMessage(m, e) {
			return
		}
	case *feed.RemovedEvent:
		player := textOf(e.Player)
		m.text, m.kind = player+" left the session", msgMember
		if self != "" && player == self {
			m.text = "you left the session"
		}
	case *feed.MasterEvent:
		s.masters++
		m.kind = msgMember
		player := textOf(e.Player)
		you := self != "" && player == self
		switch {
		case s.masters == 1 && you:
			m.text = "you are the master"
		case s.masters == 1:
			m.text = player + " is the master"
		case you:
			m.text = "you took over as master"
		default:
			m.text = player + " took over as master"
		}
	case *feed.AlertEvent:
		m.text, m.kind = alertText(e), msgAlert
		s.alerts++
		s.alertLine(m, e)
		return
	case *feed.IncidentEvent:
		s.incidentLine(m, e)
		return
	default:
		return
	}
	s.add(m)
}

// calmEvery is the least time between two changes of the header's state:
// without it, during a spike the header switches between "frame N" and
// "waiting for bob" 16 times in 10 s, which reads as noise, not news.
const calmEvery = time.Second

type statusKind uint8

const (
	statusLobby statusKind = iota
	statusFrame
	statusWaiting
)

// status is what the header says the game is doing: in the lobby, at a
// frame, or waiting for a player's commands.
type status struct {
	kind     statusKind
	frame    int
	waitedOn string
	since    time.Duration // View.At when it was last changed
	set      bool
}

func statusOf(v *feed.View) status {
	switch {
	case !v.Started:
		return status{kind: statusLobby}
	case v.Stalled && v.WaitedOn != "":
		return status{kind: statusWaiting, waitedOn: v.WaitedOn}
	}
	return status{kind: statusFrame, frame: v.Frame}
}

// calm takes v's status into the header at most once per calmEvery of
// session time (the View's clock, so a replay and a simulation are as calm
// as a live game). A picture from the past (a replay sought back) is taken
// at once.
func (s *session) calm(v feed.View) {
	c := statusOf(&v)
	if s.status.set && v.At >= s.status.since && v.At-s.status.since < calmEvery {
		return
	}
	if s.status.set && c.kind == s.status.kind && c.waitedOn == s.status.waitedOn && c.frame == s.status.frame {
		return
	}
	c.since, c.set = v.At, true
	s.status = c
}

// alertText is an alert's line: the engine's own words, or, when it sent
// none, what the alert is about in words.
func alertText(e *feed.AlertEvent) string {
	if e.Text != "" {
		return textOf(e.Text)
	}
	link := "the session"
	if from, to := safePtr(e.From), safePtr(e.To); from != nil && to != nil {
		link = "the link " + *from + " → " + *to
	}
	switch e.Kind {
	case feed.AlertBad:
		return link + " has gone bad"
	case feed.AlertLoss:
		return link + " is losing packets"
	case feed.AlertTier:
		return "the connection quality target got worse"
	}
	return link + ": " + string(e.Kind)
}

// clone copies the session deeply enough that applying updates to the
// original leaves the copy unchanged (the paused display).
func (s *session) clone() *session {
	c := *s
	c.links = make(map[string]*linkHist, len(s.links))
	for k, h := range s.links {
		hc := *h
		hc.samples = append([]sample(nil), h.samples...)
		c.links[k] = &hc
	}
	c.order = append([]string(nil), s.order...)
	c.mx = s.mx.clone()
	c.msgs = append([]message(nil), s.msgs...)
	c.incidents = s.incidents.clone()
	c.open = append([]openIncident(nil), s.open...)
	c.absorb = append([]absorbing(nil), s.absorb...)
	c.view.Links = append([]feed.LinkView(nil), s.view.Links...)
	c.view.Players = append([]feed.PlayerView(nil), s.view.Players...)
	c.view.Paths = append([]feed.PathView(nil), s.view.Paths...)
	return &c
}

// current lists the links of the newest picture in house order.
func (s *session) current() []*linkHist {
	out := make([]*linkHist, 0, len(s.view.Links))
	for _, lv := range s.view.Links {
		if h := s.links[lv.Peer]; h != nil {
			out = append(out, h)
		}
	}
	return out
}
