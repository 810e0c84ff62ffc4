package trace

import (
	"net/netip"
	"slices"
	"time"

	"github.com/lagscope/lagscope/units"
)

// What a hop keeps (docs/path.md, "The baseline").
const (
	// histLen is how many outcomes a hop keeps, each with its time: at a
	// probe a second, over four minutes' worth.
	histLen = 256
	// lossSpan is the window the figures (loss, best, worst) are taken
	// over, and the baseline too: the last minutes.
	lossSpan = 5 * time.Minute
	// recentN answers, at most recentAge old, are a hop's recent ones: a
	// queue switching on shows in them within a few rounds, and draining
	// leaves them as fast. recentMin of them are enough for the rule
	// against the baseline.
	recentN   = 5
	recentMin = 3
	recentAge = time.Minute
	// minBase is how many answers before the recent ones make a baseline.
	minBase = 10
	// baseEvery is how often a baseline is worked out anew (unless the
	// link is held: in an incident it stays as it was).
	baseEvery = 5 * time.Second
)

// lostMark stands for a timeout in a hop's history (round trips are never
// negative: the matcher refuses an answer before its probe); voidMark for a
// timeout that counts for nothing: one before the hop's first answer ever.
// Until a hop answers, its silence may be the path not being there yet — a
// peer that has not linked this machine yet answers no probe — and a hop
// that never answers is silent, its losses kept.
const (
	lostMark = time.Duration(-1)
	voidMark = time.Duration(-2)
)

// sample is one outcome: when its probe left and its round trip
// (lostMark: lost).
type sample struct{ at, rtt time.Duration }

// hopPath gathers one link's outcomes by hop limit.
type hopPath struct {
	end  int        // hop limit the peer answered at; 0 while unknown
	peer netip.Addr // the address the link's datagrams go to
	hops [maxHops + 1]pathHop
	// baseAt is when the baselines were last worked out (based: ever).
	baseAt time.Duration
	based  bool
	// ver counts the changes to the path: outcomes and baselines.
	ver uint64
}

type pathHop struct {
	addr netip.Addr
	// ring holds the latest outcomes, made at the hop's first.
	ring    *[histLen]sample
	n, next int
	// total counts every outcome ever added and mark its value at the
	// last Mark: the outcomes since are the ring's last total-mark.
	total, mark int
	// base is the hop's baseline (ok: it has one); above counts the
	// answers in a row above it by its margin, lostRun the losses in a
	// row (the link leaving its baseline).
	base    baseline
	baseOK  bool
	above   int
	lostRun int
	// heard: the hop has answered. Its first answer voids the losses
	// before it (voidMark).
	heard bool
}

// Add takes in one outcome; a void one is in no figure.
func (p *hopPath) Add(o outcome) {
	if o.Void || o.TTL < 1 || o.TTL > maxHops {
		return
	}
	h := &p.hops[o.TTL]
	v := o.RTT
	if o.Lost {
		v = lostMark
	} else if o.Addr.IsValid() {
		h.addr = o.Addr
	}
	if h.ring == nil {
		h.ring = new([histLen]sample)
	}
	if !o.Lost && !h.heard {
		h.heard = true
		for k := range h.n {
			if i := (h.next - 1 - k + histLen) % histLen; h.ring[i].rtt == lostMark {
				h.ring[i].rtt = voidMark
			}
		}
	}
	h.ring[h.next] = sample{at: o.Sent, rtt: v}
	h.next = (h.next + 1) % histLen
	h.n = min(h.n+1, histLen)
	h.total++
	p.ver++
	p.end = endAfter(p.end, o)
	switch {
	case o.Lost:
		h.lostRun++
		h.above = 0
	case h.baseOK && units.Millis(v) > h.base.med+h.base.margin:
		h.lostRun = 0
		h.above++
	default:
		h.lostRun, h.above = 0, 0
	}
}

// at is the k-th newest outcome of h (0 the newest).
func (h *pathHop) at(k int) sample { return h.ring[(h.next-1-k+histLen)%histLen] }

// End is the hop limit the peer answered at, false while it has not.
func (p *hopPath) End() (int, bool) { return p.end, p.end > 0 }

// last is the hop limit the path's figures run to: the peer's, or, while
// the peer has not answered, the farthest with an outcome.
func (p *hopPath) last() int {
	if p.end > 0 {
		return p.end
	}
	for ttl := maxHops; ttl >= 1; ttl-- {
		if p.hops[ttl].n > 0 {
			return ttl
		}
	}
	return 0
}

// refreshBase works out every hop's baseline at now: its answers within
// lossSpan before its recent ones (the newest recentN not older than
// recentAge), when there are at least minBase of them. A held path keeps
// the baselines it has; a hop that has none yet gets its first (a link
// that meets an incident in its first minute must have one to judge by).
func (p *hopPath) refreshBase(now time.Duration, held bool) {
	if p.based && now-p.baseAt < baseEvery {
		return
	}
	p.baseAt, p.based = now, true
	p.ver++
	for ttl := 1; ttl <= maxHops; ttl++ {
		h := &p.hops[ttl]
		if h.n == 0 || (held && h.baseOK) {
			continue
		}
		b := h.base.sorted[:0]
		recent := 0
		for k := range h.n {
			s := h.at(k)
			if now-s.at > lossSpan {
				break
			}
			if s.rtt < 0 {
				continue
			}
			if recent < recentN && now-s.at <= recentAge {
				recent++
				continue
			}
			if b == nil {
				b = make([]float64, 0, histLen)
			}
			b = append(b, units.Millis(s.rtt))
		}
		slices.Sort(b)
		h.base.sorted = b
		h.baseOK = len(b) >= minBase
		if h.baseOK {
			h.base.setFrom(b)
		}
	}
}

// Result analyses the path at now: hops 1 to the peer, or, while the peer
// has not answered, to the farthest hop limit with an outcome.
func (p *hopPath) Result(now time.Duration) Result {
	last := p.last()
	in := make([]hopSamples, last)
	for i := range in {
		h := &p.hops[i+1]
		s := hopSamples{TTL: i + 1, Addr: h.addr}
		recent := 0
		for k := range h.n {
			x := h.at(k)
			if now-x.at > lossSpan {
				break
			}
			switch x.rtt {
			case voidMark:
				continue
			case lostMark:
				s.Lost++
				continue
			}
			s.RTTs = append(s.RTTs, x.rtt)
			if recent < recentN && now-x.at <= recentAge {
				recent++
				s.Recent = append(s.Recent, units.Millis(x.rtt))
			}
		}
		slices.Reverse(s.RTTs)
		slices.Reverse(s.Recent)
		if h.baseOK {
			b := h.base
			s.Base = &b
		}
		in[i] = s
	}
	return analyzeWith(in, p.end > 0, p.peer, minJudged)
}

// Mark starts a new stretch: ResultSinceMark reads only what comes after.
func (p *hopPath) Mark() {
	for i := range p.hops {
		p.hops[i].mark = p.hops[i].total
	}
}

// ResultSinceMark analyses only the outcomes since the last Mark, each hop
// judged from minJudgedSince of them by the path's structure alone: a
// stretch of a few seconds, such as a load test's hold, where the figures
// of the minutes before would pull every median toward another line.
func (p *hopPath) ResultSinceMark() Result {
	last := p.last()
	in := make([]hopSamples, last)
	for i := range in {
		h := &p.hops[i+1]
		s := hopSamples{TTL: i + 1, Addr: h.addr}
		for k := range min(h.n, h.total-h.mark) {
			switch x := h.at(k); x.rtt {
			case voidMark:
			case lostMark:
				s.Lost++
			default:
				s.RTTs = append(s.RTTs, x.rtt)
			}
		}
		slices.Reverse(s.RTTs)
		in[i] = s
	}
	return analyzeWith(in, p.end > 0, p.peer, minJudgedSince)
}
