package trace

import (
	"github.com/lagscope/lagscope/vocab"
	"math"
	"net/netip"
	"slices"
	"time"
)

// The rules (docs/path.md says why each is so).
const (
	// minJudged is how many outcomes (answers and timeouts) a hop needs
	// before it is judged; an unjudged hop is reported but neither starts
	// delay or loss nor stands as evidence for or against another hop.
	minJudged = 10
	// minJudgedSince is minJudged for a stretch since a mark (a few
	// seconds at a probe a second): fewer outcomes, all of the same line.
	minJudgedSince = 3
	// minAddedMS is the least added delay that starts delay, whatever the
	// noise before it.
	minAddedMS = 5.0
	// madFactor times the median absolute deviation of the hops before a
	// hop is the other bound on its added delay.
	madFactor = 3.0
	// lossThreshold is the loss that counts as losing.
	lossThreshold = 0.02
)

// Label names the link into a hop: the words every reader shares
// (package vocab).
type Label = vocab.HopLink

const (
	labelLAN    = vocab.HopLAN    // this machine to its home router: hop 1
	labelUplink = vocab.HopUplink // the home router to the first hop beyond it: hop 2
	labelISP    = vocab.HopISP    // private and CGNAT hops after it, and the first two public ones
	labelBeyond = vocab.HopBeyond // the rest of the way
	labelPeer   = vocab.HopPeer   // the last link, into the peer
)

// Result is a path's analysis, shaped as the trace event.
type Result struct {
	Hops        []Hop       `json:"hops"`
	DelayStarts *DelayStart `json:"delay_starts"`
	LossStarts  *LossStart  `json:"loss_starts"`
	// Complete: the peer answered, so the last hop is the peer.
	Complete bool `json:"complete"`
}

// Hop is one hop's figures. Round trips are in ms, rounded to 0.1, nil
// for a hop that never answered; Addr is nil for a hop that never did.
type Hop struct {
	TTL  int         `json:"ttl"`
	Addr *netip.Addr `json:"addr"`
	Link Label       `json:"link"`
	// Sent counts the probes with an outcome, answered or timed out.
	Sent    int      `json:"sent"`
	Loss    float64  `json:"loss"`
	BestMS  *float64 `json:"best_ms"`
	RTTMS   *float64 `json:"rtt_ms"` // the median
	WorstMS *float64 `json:"worst_ms"`
	// LastMS is the latest answer's round trip, for a live view; the
	// event leaves it out.
	LastMS *float64 `json:"-"`
	// RateLimited: the hop loses probes while the hops after it do not.
	RateLimited bool `json:"rate_limited"`
	// Judged: the hop has minJudged outcomes.
	Judged bool `json:"-"`
}

// DelayStart is the hop delay starts at and the delay it adds.
type DelayStart struct {
	TTL     int     `json:"ttl"`
	Link    Label   `json:"link"`
	AddedMS float64 `json:"added_ms"`
}

// LossStart is the hop loss starts at and its loss.
type LossStart struct {
	TTL  int     `json:"ttl"`
	Link Label   `json:"link"`
	Loss float64 `json:"loss"`
}

// hopSamples is what one hop limit gathered: who answered there last, the
// round trips of the answers oldest first, and how many probes timed out.
type hopSamples struct {
	TTL  int
	Addr netip.Addr
	RTTs []time.Duration
	Lost int
}

// calc is a hop's figures as the rules use them: unrounded, in ms.
type calc struct {
	sorted    []float64
	med, loss float64
	judged    bool
}

func (c calc) answers() bool { return len(c.sorted) > 0 }
func (c calc) counts() bool  { return c.judged && c.answers() }

// analyze applies the rules to hops, ordered by hop limit; complete says
// the last of them is the peer.
func analyze(hops []hopSamples, complete bool) Result { return analyzeTo(hops, complete, netip.Addr{}) }

// analyzeTo is analyze for a path toward the address peer (the zero Addr
// when not known): a hop that answers from it is the peer's link, before
// the peer itself answered too.
func analyzeTo(hops []hopSamples, complete bool, peer netip.Addr) Result {
	return analyzeWith(hops, complete, peer, minJudged)
}

// analyzeWith is analyzeTo with a hop judged from judge outcomes.
func analyzeWith(hops []hopSamples, complete bool, peer netip.Addr, judge int) Result {
	r := Result{Complete: complete, Hops: make([]Hop, len(hops))}
	cs := make([]calc, len(hops))
	for i, h := range hops {
		cs[i] = measure(h, judge)
		r.Hops[i] = hopOf(h, cs[i])
	}
	labelHops(r.Hops, hops, complete, peer)
	if !ready(cs) {
		return r
	}
	if i, added := delayStarts(cs); i >= 0 {
		r.DelayStarts = &DelayStart{TTL: r.Hops[i].TTL, Link: r.Hops[i].Link, AddedMS: round1(added)}
	}
	start := -1
	for i := range cs {
		if !cs[i].counts() || cs[i].loss < lossThreshold {
			continue
		}
		if !lossPersists(cs, i) {
			r.Hops[i].RateLimited = true
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		h := r.Hops[start]
		r.LossStarts = &LossStart{TTL: h.TTL, Link: h.Link, Loss: h.Loss}
	}
	return r
}

// ready: the farthest hop that answers is judged. Until it is, nothing
// after a hop can show whether its delay or loss persists.
func ready(cs []calc) bool {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].answers() {
			return cs[i].judged
		}
	}
	return false
}

func measure(h hopSamples, judge int) calc {
	c := calc{sorted: make([]float64, len(h.RTTs))}
	for i, d := range h.RTTs {
		c.sorted[i] = ms(d)
	}
	slices.Sort(c.sorted)
	n := len(h.RTTs) + h.Lost
	c.judged = n >= judge
	if n > 0 {
		c.loss = float64(h.Lost) / float64(n)
	}
	if c.answers() {
		c.med = median(c.sorted)
	}
	return c
}

func hopOf(h hopSamples, c calc) Hop {
	out := Hop{TTL: h.TTL, Sent: len(h.RTTs) + h.Lost, Loss: math.Round(c.loss*1e4) / 1e4, Judged: c.judged}
	if h.Addr.IsValid() {
		a := h.Addr
		out.Addr = &a
	}
	if c.answers() {
		out.BestMS = ptr(round1(c.sorted[0]))
		out.RTTMS = ptr(round1(c.med))
		out.WorstMS = ptr(round1(c.sorted[len(c.sorted)-1]))
		out.LastMS = ptr(round1(ms(h.RTTs[len(h.RTTs)-1])))
	}
	return out
}

// delayStarts is the first counted hop whose added delay — its median
// minus the largest median before it, this machine being hop 0 at 0 ms —
// reaches its margin, max(MinAddedMS, MADFactor × the median absolute
// deviation before it), and after which no counted hop's median falls
// below its median minus that margin. The deviation before a hop pools
// every answer of every counted hop before it, each measured from its own
// hop's median: the spread of round trips at a hop, not the distance
// between hops. It returns the hop's index and added delay, or -1.
func delayStarts(cs []calc) (int, float64) {
	base := 0.0
	var devs []float64
	for i, c := range cs {
		if !c.counts() {
			continue
		}
		margin, added := minAddedMS, c.med-base
		if len(devs) > 0 {
			margin = max(margin, madFactor*median(devs))
		}
		if added >= margin && delayPersists(cs, i, margin) {
			return i, added
		}
		base = max(base, c.med)
		for _, x := range c.sorted {
			devs = append(devs, math.Abs(x-c.med))
		}
		slices.Sort(devs)
	}
	return -1, 0
}

func delayPersists(cs []calc, i int, margin float64) bool {
	for _, c := range cs[i+1:] {
		if c.counts() && c.med < cs[i].med-margin {
			return false
		}
	}
	return true
}

// lossPersists: every counted hop after hop i loses too. A hop that never
// answers is no evidence either way: its silence is its own.
func lossPersists(cs []calc, i int) bool {
	for _, c := range cs[i+1:] {
		if c.counts() && c.loss < lossThreshold {
			return false
		}
	}
	return true
}

// labelHops names the link into each hop. Hop 1 is the LAN and hop 2 the
// uplink; from hop 3 on, private and CGNAT addresses are the ISP's, and so
// are the first two public ones; the rest is beyond. A silent hop takes
// the label of the stretch it is in. The last hop of a complete path is
// the peer, whatever it would be otherwise: a peer on the LAN is hop 1,
// labelled peer. So is a hop that answers from the peer's own address
// (peer, or the last hop's on a complete path): the NAT router in front of
// the peer, which sends its ICMP from the public address the peer is
// reached at, whether or not the peer has answered yet.
func labelHops(out []Hop, hops []hopSamples, complete bool, peer netip.Addr) {
	public := 0
	if !peer.IsValid() && complete && len(hops) > 0 {
		peer = hops[len(hops)-1].Addr
	}
	for i, h := range hops {
		switch {
		case complete && i == len(hops)-1, peer.IsValid() && h.Addr == peer:
			out[i].Link = labelPeer
		case h.TTL <= 1:
			out[i].Link = labelLAN
		case h.TTL == 2:
			out[i].Link = labelUplink
		case public >= 2:
			out[i].Link = labelBeyond
		default:
			if h.Addr.IsValid() && !isPrivate(h.Addr) {
				public++
			}
			out[i].Link = labelISP
		}
	}
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// isPrivate: an address no public network routes — RFC 1918, unique
// local, link-local — or carrier-grade NAT's shared space.
func isPrivate(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsPrivate() || a.IsLinkLocalUnicast() || cgnat.Contains(a)
}

// median of sorted values: the middle one, or the mean of the two middle.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func round1(x float64) float64   { return math.Round(x*10) / 10 }
func ptr(x float64) *float64     { return &x }
