package probe

import (
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
)

// LinkOf describes a link whose statistics come straight from an endpoint.
// Round-trip values are unknown until the link has an estimate; loss
// totals are always counted by our transports; peer totals are unknown
// until the peer's first LinkReport (L3, L4).
func LinkOf(from, to string, st netcore.LinkStats) feed.Link {
	l := feed.Link{From: from, To: to, State: feed.LinkState(st.State), RTO: st.RTO, ConnTimeout: st.ConnTimeout,
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
func TotalsOf(t netcore.Totals) feed.LossTotals {
	return feed.LossTotals{Sent: t.Loss.Sent, Retransmitted: t.Loss.Retransmitted, Expected: t.Loss.Expected,
		Missing: t.Loss.Missing, PeerExpected: t.PeerLoss.Expected, PeerMissing: t.PeerLoss.Missing, PeerKnown: t.PeerLoss.Known}
}

// measured: the link has a clean sample (S6, S8 count only those).
func measured(st netcore.LinkStats) bool { return st.Estimate == netcore.Measured }

func (p *Peer) totals() feed.LossTotals { return TotalsOf(p.ep.Totals()) }
