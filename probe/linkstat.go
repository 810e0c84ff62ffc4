package probe

import "github.com/lagscope/lagscope/netcore"

// linkStat turns netcore's link statistics into the NDJSON link object.
// Round-trip values are null until the link has an estimate; loss totals
// are always counted by our transports; peer totals are null until the
// peer's first LinkReport (L3, L4).
func linkStat(from, to string, st netcore.LinkStats) LinkStat {
	ls := LinkStat{From: from, To: to, State: st.State.String(),
		RTOMs: msp(st.RTO), ConnTimeoutMs: msp(st.ConnTimeout),
		Sent: u64p(st.Loss.Sent), Retransmitted: u64p(st.Loss.Retransmitted),
		Expected: u64p(st.Loss.Expected), Missing: u64p(st.Loss.Missing)}
	if st.Estimate != netcore.Unmeasured {
		ls.SRTTMs = msp(st.SRTT)
		ls.RTTVARMs = msp(st.RTTVAR)
	}
	if st.PeerLoss.Known {
		ls.PeerExpected = u64p(st.PeerLoss.Expected)
		ls.PeerMissing = u64p(st.PeerLoss.Missing)
	}
	return ls
}

// NewLinkStat describes a link whose statistics come straight from an
// endpoint (a live session's links before its peer exists).
func NewLinkStat(from, to string, st netcore.LinkStats) LinkStat { return linkStat(from, to, st) }

// TotalsOf turns an endpoint's totals into the View's.
func TotalsOf(t netcore.Totals) LossTotals {
	return LossTotals{Sent: t.Loss.Sent, Retransmitted: t.Loss.Retransmitted, Expected: t.Loss.Expected,
		Missing: t.Loss.Missing, PeerExpected: t.PeerLoss.Expected, PeerMissing: t.PeerLoss.Missing, PeerKnown: t.PeerLoss.Known}
}

// measured: the link has a clean sample (S6, S8 count only those).
func measured(st netcore.LinkStats) bool { return st.Estimate == netcore.Measured }

func (p *Peer) totals() LossTotals { return TotalsOf(p.ep.Totals()) }
