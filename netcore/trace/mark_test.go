package trace

import (
	"net/netip"
	"testing"
	"time"
)

// A stretch since a mark is read alone: minutes of an idle line before it
// do not pull the loaded hops' medians down, a hop is judged from three
// outcomes, and a hop that answered nothing since is no evidence.
func TestResultSinceMark(t *testing.T) {
	peer := netip.MustParseAddr("203.0.113.9")
	addrs := []netip.Addr{netip.MustParseAddr("192.168.1.1"), netip.MustParseAddr("198.51.100.1"), peer}
	p := &hopPath{peer: peer}
	add := func(n int, rtts ...time.Duration) {
		for range n {
			for i, rtt := range rtts {
				p.Add(outcome{TTL: i + 1, RTT: rtt, Addr: addrs[i], Reached: i == len(rtts)-1})
			}
		}
	}
	idle := []time.Duration{time.Millisecond, 10 * time.Millisecond, 12 * time.Millisecond}
	loaded := []time.Duration{time.Millisecond, 510 * time.Millisecond, 512 * time.Millisecond}
	add(40, idle...)
	p.Mark()
	if r := p.ResultSinceMark(); r.DelayStarts != nil || len(r.Hops) != 3 || r.Hops[1].Sent != 0 {
		t.Fatalf("right after the mark: %+v, want hops with nothing judged", r)
	}
	add(4, loaded...)
	if r := p.Result(0); r.DelayStarts == nil || r.DelayStarts.Added > 20*time.Millisecond {
		t.Fatalf("the whole window's delay start %+v: want the idle line's (the 4 loaded answers are a tenth of it)", r.DelayStarts)
	}
	r := p.ResultSinceMark()
	if d := r.DelayStarts; d == nil || d.TTL != 2 || d.Link != labelUplink || d.Added < 500*time.Millisecond {
		t.Fatalf("since the mark: delay starts %+v, want ttl 2 (uplink), about 509 ms", d)
	}
	if r.Hops[1].Sent != 4 || !r.Hops[1].Judged {
		t.Errorf("hop 2 since the mark: %+v, want 4 outcomes, judged", r.Hops[1])
	}
	p.Mark()
	add(2, loaded...)
	if r := p.ResultSinceMark(); r.DelayStarts != nil {
		t.Errorf("two outcomes since a new mark judged a delay start: %+v", r.DelayStarts)
	}
}
