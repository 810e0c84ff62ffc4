package trace

import (
	"net/netip"
	"time"
)

// window is how many outcomes a hop keeps: the figures are those of its
// latest window probes, so a path that changes shows it.
const window = 100

// lostMark stands for a timeout in a hop's ring (round trips are never
// negative: the matcher refuses an answer before its probe).
const lostMark = time.Duration(-1)

// hopPath gathers one link's outcomes by hop limit.
type hopPath struct {
	end  int        // hop limit the peer answered at; 0 while unknown
	peer netip.Addr // the address the link's datagrams go to
	hops [maxHops + 1]pathHop
}

type pathHop struct {
	addr    netip.Addr
	ring    [window]time.Duration
	n, next int
	// total counts every outcome ever added and mark its value at the
	// last Mark: the outcomes since are the ring's last total-mark.
	total, mark int
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
	h.ring[h.next] = v
	h.next = (h.next + 1) % window
	h.n = min(h.n+1, window)
	h.total++
	p.end = endAfter(p.end, o)
}

// End is the hop limit the peer answered at, false while it has not.
func (p *hopPath) End() (int, bool) { return p.end, p.end > 0 }

// Result analyses the path: hops 1 to the peer, or, while the peer has
// not answered, to the farthest hop limit with an outcome.
func (p *hopPath) Result() Result { return p.result(false) }

// Mark starts a new stretch: ResultSinceMark reads only what comes after.
func (p *hopPath) Mark() {
	for i := range p.hops {
		p.hops[i].mark = p.hops[i].total
	}
}

// ResultSinceMark analyses only the outcomes since the last Mark, each hop
// judged from minJudgedSince of them: a stretch of a few seconds, such as
// a load test's hold, where the figures of the minutes before would pull
// every median toward another line.
func (p *hopPath) ResultSinceMark() Result { return p.result(true) }

func (p *hopPath) result(sinceMark bool) Result {
	last := p.end
	if last == 0 {
		for ttl := maxHops; ttl >= 1 && last == 0; ttl-- {
			if p.hops[ttl].n > 0 {
				last = ttl
			}
		}
	}
	in := make([]hopSamples, last)
	for i := range in {
		h := &p.hops[i+1]
		s := hopSamples{TTL: i + 1, Addr: h.addr}
		n := h.n
		if sinceMark {
			n = min(n, h.total-h.mark)
		}
		for k := range n {
			v := h.ring[(h.next-n+k+window)%window]
			if v == lostMark {
				s.Lost++
			} else {
				s.RTTs = append(s.RTTs, v)
			}
		}
		in[i] = s
	}
	judge := minJudged
	if sinceMark {
		judge = minJudgedSince
	}
	return analyzeWith(in, p.end > 0, p.peer, judge)
}
