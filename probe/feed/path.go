package feed

import (
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/vocab"
)

// PathView is one traced link's hop trace, as this machine traced it on
// the link's own socket (docs/path.md): the `path` event's body. A link is
// traced while the Path view shows it and while the diagnosis blames it.
type PathView struct {
	Peer string
	// Available is false where this machine cannot trace (no error queue,
	// a relayed link, the simulated network); Why says why.
	Available bool
	Why       string
	Hops      []PathHop // in hop order, ttl 1 first
	// DelayStarts and LossStarts: the first hop from which the added delay
	// (or loss) persists to the peer; nil when none does.
	DelayStarts *PathStart
	LossStarts  *PathStart
	// Complete: the peer answered, so the last hop is the peer.
	Complete bool
}

// PathHop is one hop. Addr is the zero Addr for a hop that never answered;
// the round trips mean something only when Answered is set (unknown is
// shown as —, never as 0).
type PathHop struct {
	TTL  int
	Addr netip.Addr
	// Link names the link into the hop: lan, uplink, isp, beyond, peer.
	Link vocab.HopLink
	// Sent counts probes with an outcome (answered or timed out); Loss is
	// the share of them lost.
	Sent                      int
	Loss                      float64
	Answered                  bool
	Best, Median, Last, Worst time.Duration
	// RateLimited: the hop loses probes while the hops after it do not.
	RateLimited bool
	// Judged: the hop has enough outcomes (10) for the rules to judge it.
	Judged bool
}

// PathStart is the hop where delay or loss starts and how much: Added for
// delay_starts, Loss for loss_starts.
type PathStart struct {
	TTL   int
	Link  vocab.HopLink
	Added time.Duration
	Loss  float64
}
