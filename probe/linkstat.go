package probe

import (
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// LinkState is what a link's round-trip estimate is worth (T4), or Bad
// while a packet has outlived the connection timeout (T11). It is
// netcore's own state, named here so that front ends need not import the
// transport; its String is the NDJSON name ("measured", "bad", …).
type LinkState = netcore.LinkState

// The link states a View shows.
const (
	LinkUnmeasured  = netcore.Unmeasured
	LinkProvisional = netcore.Provisional
	LinkMeasured    = netcore.Measured
	LinkBad         = netcore.Bad
)

// Link is one directed private link From → To in the View's units: times
// are durations, counts are counts. A value that is not known yet carries
// a false flag beside it and reads zero; readers check the flag, never the
// zero (L3). The NDJSON sink turns it into a LinkStat (Stat).
type Link struct {
	From, To string
	State    LinkState

	// RTTKnown: the link has a round-trip estimate (its first ack came
	// back, T4); until then SRTT and RTTVAR are unknown.
	RTTKnown     bool
	SRTT, RTTVAR time.Duration
	// RTO and ConnTimeout are always known: fixed values until the link
	// is measured (T9).
	RTO, ConnTimeout time.Duration

	// LossKnown: this end's counts are known (always for this machine's
	// own links; a telemetry row may leave them out).
	LossKnown                              bool
	Sent, Retransmitted, Expected, Missing uint64
	// PeerKnown: the peer has sent its half (L4).
	PeerKnown                 bool
	PeerExpected, PeerMissing uint64

	// Relayed: the pair's datagrams go through the host (no direct
	// path); the round trip is then the relayed path's.
	Relayed bool
}

// LinkOf describes a link whose statistics come straight from an endpoint.
// Round-trip values are unknown until the link has an estimate; loss
// totals are always counted by our transports; peer totals are unknown
// until the peer's first LinkReport (L3, L4).
func LinkOf(from, to string, st netcore.LinkStats) Link {
	l := Link{From: from, To: to, State: st.State, RTO: st.RTO, ConnTimeout: st.ConnTimeout,
		LossKnown: true, Sent: st.Loss.Sent, Retransmitted: st.Loss.Retransmitted,
		Expected: st.Loss.Expected, Missing: st.Loss.Missing}
	if st.Estimate != netcore.Unmeasured {
		l.RTTKnown, l.SRTT, l.RTTVAR = true, st.SRTT, st.RTTVAR
	}
	if st.PeerLoss.Known {
		l.PeerKnown, l.PeerExpected, l.PeerMissing = true, st.PeerLoss.Expected, st.PeerLoss.Missing
	}
	return l
}

// TotalsOf turns an endpoint's totals into the View's.
func TotalsOf(t netcore.Totals) LossTotals {
	return LossTotals{Sent: t.Loss.Sent, Retransmitted: t.Loss.Retransmitted, Expected: t.Loss.Expected,
		Missing: t.Loss.Missing, PeerExpected: t.PeerLoss.Expected, PeerMissing: t.PeerLoss.Missing, PeerKnown: t.PeerLoss.Known}
}

// measured: the link has a clean sample (S6, S8 count only those).
func measured(st netcore.LinkStats) bool { return st.Estimate == netcore.Measured }

func (p *Peer) totals() LossTotals { return TotalsOf(p.ep.Totals()) }
