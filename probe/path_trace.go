package probe

import (
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
)

// TracedPath is the hop trace of the link to peer (named name) as ep
// traces it: Available false with the endpoint's reason where it cannot
// trace, no hops yet while the trace has none (or the link is not traced).
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
		ph.Base, ph.HasBase = h.Base, h.HasBase
		if h.Addr != nil {
			ph.Addr = *h.Addr
		}
		ph.Answered, ph.Best, ph.Median, ph.Worst, ph.Last = h.Answered, h.Best, h.Median, h.Worst, h.Last
		pv.Hops[i] = ph
	}
	if d := r.DelayStarts; d != nil {
		pv.DelayStarts = &feed.PathStart{TTL: d.TTL, Link: d.Link, Added: d.Added}
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
