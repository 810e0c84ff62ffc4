package sim

import (
	"fmt"
	"github.com/lagscope/lagscope/vocab"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
)

// HopSpec is one router on a player's access link (the `hops` list of an
// `access` entry, docs/simulation.md): who answers a hop-limited probe
// there, the round trip to it from the player, the loss on the link out of
// it (away from the player) and its ICMP rate limit.
type HopSpec struct {
	// Addr is the router's address; null (or left out) for a router that
	// never answers.
	Addr *string `json:"addr"`
	// RTTMs is the round trip from the player to the router: required for
	// a router that answers, increasing from hop to hop, within the access
	// link's rtt_ms. A silent router without one sits where the one before
	// it does.
	RTTMs       *float64 `json:"rtt_ms"`
	Loss        *float64 `json:"loss"`
	ICMPEveryMs *float64 `json:"icmp_every_ms"`
	// Quote is what the router's answers quote of the probe: "all" (RFC
	// 1812: as much as fits) or "headers" (only the IP and UDP headers, so
	// the socket's error queue hands back none of the probe's record).
	Quote *string `json:"quote"`
}

// Values of a hop's quote.
const (
	quoteAll     = "all"
	quoteHeaders = "headers"
)

// maxAccessHops is the most routers an access link lists: the tracer's
// highest hop limit.
const maxAccessHops = 30

// checkHops validates an access entry's routers; key names the entry and
// accessRTT is its rtt_ms (0 when left out).
func checkHops(key string, hops []HopSpec, accessRTT float64) error {
	if len(hops) > maxAccessHops {
		return fmt.Errorf("scenario: key %q: %d hops, at most %d", key+".hops", len(hops), maxAccessHops)
	}
	seen := map[netip.Addr]bool{}
	prev, have := 0.0, false
	for i, h := range hops {
		k := fmt.Sprintf("%s.hops[%d]", key, i)
		if h.Addr != nil {
			a, err := hopAddr(*h.Addr)
			if err != nil {
				return fmt.Errorf("scenario: key %q: %v", k+".addr", err)
			}
			if seen[a] {
				return fmt.Errorf("scenario: key %q: %s appears twice on this access link", k+".addr", a)
			}
			seen[a] = true
			if h.RTTMs == nil {
				return fmt.Errorf("scenario: key %q: a hop that answers needs its round trip", k+".rtt_ms")
			}
		}
		if r := h.RTTMs; r != nil {
			switch {
			case *r < 0 || *r > 60000:
				return fmt.Errorf("scenario: key %q: %v is outside 0..60000", k+".rtt_ms", *r)
			case have && *r <= prev:
				return fmt.Errorf("scenario: key %q: %v ms is not more than the hop before (%v ms): round trips grow hop by hop", k+".rtt_ms", *r, prev)
			case *r > accessRTT:
				return fmt.Errorf("scenario: key %q: %v ms is past the access link's rtt_ms (%v): its hops lie on it", k+".rtt_ms", *r, accessRTT)
			}
			prev, have = *r, true
		}
		if h.Loss != nil && (*h.Loss < 0 || *h.Loss >= 1) {
			return fmt.Errorf("scenario: key %q: %v is outside [0, 1)", k+".loss", *h.Loss)
		}
		if e := h.ICMPEveryMs; e != nil && (*e < 0 || *e > 60000) {
			return fmt.Errorf("scenario: key %q: %v is outside 0..60000", k+".icmp_every_ms", *e)
		}
		if q := h.Quote; q != nil && *q != quoteAll && *q != quoteHeaders {
			return fmt.Errorf("scenario: key %q: %q is not %q or %q", k+".quote", *q, quoteAll, quoteHeaders)
		}
	}
	return nil
}

// hopAddr parses a router's address: a unicast IPv4 or IPv6 address
// without a zone, and not loopback (the simulated machines' own range).
func hopAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return netip.Addr{}, fmt.Errorf("%q is not an IP address", s)
	case a.Zone() != "":
		return netip.Addr{}, fmt.Errorf("%q has a zone", s)
	case a.Is4In6():
		return netip.Addr{}, fmt.Errorf("%q is an IPv4-mapped address: write it as IPv4", s)
	case a.IsUnspecified() || a.IsLoopback() || a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return netip.Addr{}, fmt.Errorf("%q is not a router's unicast address", s)
	}
	return a, nil
}

// routers is the checked list as the network takes it.
func routers(hops []HopSpec) []simnet.Hop {
	if len(hops) == 0 {
		return nil
	}
	out := make([]simnet.Hop, len(hops))
	var rtt time.Duration
	for i, h := range hops {
		if h.RTTMs != nil {
			rtt = units.FromMillis(*h.RTTMs)
		}
		r := simnet.Hop{RTT: rtt}
		if h.Addr != nil {
			r.Addr, _ = hopAddr(*h.Addr)
		}
		if h.Loss != nil {
			r.Loss = *h.Loss
		}
		if h.ICMPEveryMs != nil {
			r.ICMPEvery = units.FromMillis(*h.ICMPEveryMs)
		}
		r.HeaderOnly = h.Quote != nil && *h.Quote == quoteHeaders
		out[i] = r
	}
	return out
}

// hasHops reports whether any access entry of the scenario, timeline
// included, lists routers: the run then traces (docs/simulation.md).
func (s *Scenario) hasHops() bool {
	for _, c := range append([]Change{{Access: s.Access}}, s.Timeline...) {
		for _, a := range c.Access {
			if len(a.Hops) > 0 {
				return true
			}
		}
	}
	return false
}

// ParseTrace reads `sim --trace FROM:TO` values: machine FROM traces its
// link to TO for the whole run, as `--trace TO` does on FROM's host or
// join command. Either name may hold a colon: the split taken is the one
// that leaves two of the scenario's names.
func ParseTrace(sc *Scenario, specs []string) (map[string]string, error) {
	known := map[string]bool{}
	for _, n := range append(append([]string{}, sc.Players...), sc.Observers...) {
		known[n] = true
	}
	out := map[string]string{}
	for _, s := range specs {
		from, to, ok := "", "", false
		for i := range len(s) {
			if s[i] != ':' || !known[s[:i]] || !known[s[i+1:]] {
				continue
			}
			if ok {
				return nil, fmt.Errorf("--trace %q: splits into names two ways", s)
			}
			from, to, ok = s[:i], s[i+1:], true
		}
		switch {
		case !ok:
			return nil, fmt.Errorf("--trace %q: want FROM:TO, two of the scenario's machines", s)
		case from == to:
			return nil, fmt.Errorf("--trace %q: a machine has no link to itself", s)
		case out[from] != "":
			return nil, fmt.Errorf("--trace %q: %s traces %s already (one link per machine)", s, from, out[from])
		}
		out[from] = to
	}
	return out, nil
}

// schedulePaths prints, once a second of virtual time from the game's
// start, a `path` event per traced link whose line is due on each running
// machine (session.DuePaths), as a live machine does. It only reads, and re-arms only while other events are
// pending, so it never keeps a stuck run alive.
func (r *runner) schedulePaths() {
	if !r.tracing {
		return
	}
	var tick func()
	tick = func() {
		tms := units.Millis(r.now())
		for _, m := range r.machines {
			if m.peer == nil || m.host.Stopped() || m.peer.Done() {
				continue
			}
			for _, pv := range m.sess.DuePaths(r.sched.Now()) {
				r.write(m.name, &feed.PathEvent{Header: feed.Header{Type: vocab.EventPath, TMs: &tms}, PathStat: pv.Stat(m.name)})
			}
		}
		if r.sched.Pending() > 0 {
			r.sched.At(r.sched.Now()+time.Second, tick)
		}
	}
	r.sched.At(r.startAt+time.Second, tick)
}

// transport is machine name's transport: its node, which traces when the
// run does.
func (r *runner) transport(name string, node *simnet.Node) netcore.Transport {
	if !r.tracing {
		return node
	}
	h := &hopNode{Node: node, now: r.sched.Now}
	if f := r.opt.onProbe; f != nil {
		h.onProbe = func(at time.Duration, to netip.AddrPort, hops int) { f(name, at-r.startAt, to, hops) }
	}
	return h
}
