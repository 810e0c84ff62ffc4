package feed

import (
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/vocab"
)

// PathView is one traced link's hop trace, as this machine traced it on
// the link's own socket (docs/path.md): the `path` event's body. Every
// link is traced at a low rate, and looked at closely while the Path view
// shows it, an incident is open on it or it leaves its own baseline.
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
	// OneHop: the peer is the only hop (the same machine, or one LAN): a
	// trace cannot tell this machine, its LAN and the peer's machine
	// apart, so it places nothing.
	OneHop bool
	// Bursting: the link is looked at closely, a round of probes a second.
	Bursting bool
	// LossPending: the peer loses, and too few probes say yet where the
	// loss starts; nil otherwise.
	LossPending *PathLossPending
}

// PathLossPending is the peer's loss share while no hop is placed yet, and
// about how many more probes a hop needs before the trace can say where
// it starts (0: no estimate — the hops before lose about as much).
type PathLossPending struct {
	Loss float64
	More int
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
	// Judged: the hop has enough evidence for the rules to judge it.
	Judged bool
	// LossLo and LossHi are the 95 % interval of Loss.
	LossLo, LossHi float64
	// Base is the hop's baseline round trip (the median of its answers
	// over the minutes before its recent ones, Median theirs), when
	// HasBase.
	Base    time.Duration
	HasBase bool
}

// PathStart is the hop where delay or loss starts and how much: Added for
// delay_starts, Loss for loss_starts.
type PathStart struct {
	TTL   int
	Link  vocab.HopLink
	Added time.Duration
	Loss  float64
}
