package probe

import (
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
)

// TracedPath is the hop trace of the link to peer (named name) as ep
// traces it: Available false with the endpoint's reason where it cannot
// trace, no hops yet while the trace has none (or the link is not traced).
// It reads the trace's figures, which are ms rounded to 0.1, into
// durations.
func TracedPath(ep *netcore.Endpoint, peer netcore.PeerID, name string) feed.PathView {
	pv := feed.PathView{Peer: name}
	if ok, why := ep.TraceAvailable(); !ok {
		pv.Why = why
		return pv
	}
	pv.Available = true
	r, ok := ep.Path(peer)
	if !ok {
		return pv
	}
	if len(r.Hops) > 0 {
		pv.Hops = make([]feed.PathHop, len(r.Hops))
	}
	for i, h := range r.Hops {
		ph := feed.PathHop{TTL: h.TTL, Link: h.Link, Sent: h.Sent, Loss: h.Loss, RateLimited: h.RateLimited, Judged: h.Judged,
			LossLo: h.LossCI[0], LossHi: h.LossCI[1]}
		if h.BaseMS != nil {
			ph.Base, ph.HasBase = units.FromMillis(*h.BaseMS), true
		}
		if h.Addr != nil {
			ph.Addr = *h.Addr
		}
		if h.BestMS != nil && h.RTTMS != nil && h.WorstMS != nil {
			ph.Answered = true
			ph.Best, ph.Median, ph.Worst = units.FromMillis(*h.BestMS), units.FromMillis(*h.RTTMS), units.FromMillis(*h.WorstMS)
			ph.Last = ph.Median
			if h.LastMS != nil {
				ph.Last = units.FromMillis(*h.LastMS)
			}
		}
		pv.Hops[i] = ph
	}
	if d := r.DelayStarts; d != nil {
		pv.DelayStarts = &feed.PathStart{TTL: d.TTL, Link: d.Link, Added: units.FromMillis(d.AddedMS)}
	}
	if l := r.LossStarts; l != nil {
		pv.LossStarts = &feed.PathStart{TTL: l.TTL, Link: l.Link, Loss: l.Loss}
	}
	pv.Complete, pv.OneHop, pv.Bursting = r.Complete, r.OneHop, r.Bursting
	if l := r.LossPending; l != nil {
		pv.LossPending = &feed.PathLossPending{Loss: l.Loss, More: l.More}
	}
	return pv
}
