package netcore

// What the Endpoint shows of itself, read by the probe, the UI, the metrics
// and the reports; nothing here changes a link's behaviour:
//
//  1. the shapes: RejectCounts, LinkStats, Totals;
//  2. ResetMeasurement: forget the round-trip estimates, keep the totals (T5, L5);
//  3. Stats of one link, Totals of every link live or retired (L5), Rejected.

import (
	"net/netip"
	"time"
)

// RejectCounts counts datagrams dropped before they reached a link.
type RejectCounts struct {
	Token     uint64 // wrong session token
	Sender    uint64 // unknown sender, or a sender at the wrong address
	Malformed uint64 // header or records that do not decode
	Auth      uint64 // sealing missing, unexpected or failing to authenticate
	Replay    uint64 // a counter already seen, too old, or another instance
	Oversize  uint64 // datagram above MaxDatagram, message above maxMessage
	// Window counts datagrams whose numbers the link's windows do not
	// take: a reliable packet number outside the receive window, or a
	// datagram number more than MaxJump from the newest on its channel,
	// held back until believed (resyncAfter).
	Window uint64
	// Implausible counts link reports claiming more datagrams than were
	// sent on the link, which no conforming peer sends: refused, the
	// peer's totals kept.
	Implausible uint64
}

// LinkStats is one link as the UI and the metrics see it.
type LinkStats struct {
	Peer PeerID
	Addr netip.AddrPort
	// State is Bad while a packet is older than the connection timeout
	// (T11), otherwise the estimate's state; Estimate is always the
	// latter.
	State, Estimate   LinkState
	SRTT, RTTVAR      time.Duration // 0 while unmeasured: show "not measured"
	RTO, ConnTimeout  time.Duration // in force (fixed values while unmeasured, T9)
	Loss              Loss
	PeerLoss          PeerLoss // Known false until the peer reports (L3, L4)
	Global            GlobalStats
	InFlight, Backlog int // reliable datagrams in flight, messages waiting
	GlobalInFlight    int
	Bad               bool
	// OldestSent is when the oldest reliable packet still in flight was
	// first sent (valid while InFlight > 0): while every packet is resent
	// before its ack comes, no clean sample arrives and SRTT keeps its old
	// value (T2, T13), but the age of this packet grows with the delay.
	OldestSent time.Duration
}

// Totals is the whole endpoint: every live link plus every link that has
// been removed, so each counter only ever grows (L5).
type Totals struct {
	Loss       Loss
	PeerLoss   PeerLoss // Known once any link has ever reported
	Global     GlobalStats
	SendErrors uint64 // Transport.Send failures (covered by retries)
}

// ResetMeasurement starts every link's round-trip measurement over (T5):
// estimates are forgotten and acks of datagrams sent before now give no
// sample, so loading time never counts. Loss totals are not touched (L5).
func (e *Endpoint) ResetMeasurement() {
	e.epoch++
	for _, l := range e.order {
		l.est.Reset()
		e.touch(l) // the connection timeout changes with the estimate
	}
}

// Stats describes the link to peer.
func (e *Endpoint) Stats(peer PeerID) (LinkStats, bool) {
	l := e.links[peer]
	if l == nil {
		return LinkStats{}, false
	}
	s := LinkStats{
		Peer:           l.peer,
		Addr:           l.addr,
		State:          l.est.State(),
		Estimate:       l.est.State(),
		SRTT:           l.est.SRTT(),
		RTTVAR:         l.est.RTTVAR(),
		RTO:            l.est.RTO(),
		ConnTimeout:    l.est.ConnTimeout(),
		Loss:           l.loss,
		PeerLoss:       l.peerLoss,
		Global:         l.global,
		InFlight:       l.rel.inFlight(),
		Backlog:        len(l.rel.backlog),
		GlobalInFlight: l.glob.inFlight(),
		Bad:            l.bad,
	}
	if q := &l.rel; q.oldest != q.next {
		s.OldestSent = q.at(q.oldest).firstSent
	}
	if l.bad {
		s.State = Bad
	}
	return s, true
}

// Totals sums every link, live and removed (L5).
func (e *Endpoint) Totals() Totals {
	t := e.retired
	for _, l := range e.order {
		t.Loss.add(l.loss)
		t.PeerLoss.add(l.peerLoss)
		t.Global.add(l.global)
	}
	t.SendErrors = e.sendErrs
	return t
}

// Rejected counts datagrams dropped before they reached a link.
func (e *Endpoint) Rejected() RejectCounts { return e.rejected }
