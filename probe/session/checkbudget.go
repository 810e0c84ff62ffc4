package session

import (
	"net/netip"
	"slices"
	"time"
)

// Checks to addresses that never answered. A pair's candidates come from
// the host's table, which lists the addresses a member says it has, and
// from checks that arrive from new addresses while the pair punches, which
// a member can send from any address it spoofs; a probe of a new source
// (NAT rebinding) goes wherever a member's authentic datagram came from.
// Any of them may be a third party's. So what a pair sends an address that
// has never answered one of its checks is bounded, whatever the member
// does, and an address that answers (verify) is free of the bound from
// then on:
//
//   - quietScheduled checks on the pair's own schedule, with backoff: at
//     once, then 1, 2, 4 and 8 times punchEvery after the one before (at
//     0, 0.1, 0.3, 0.7 and 1.5 s; RFC 8445 backs off its retransmissions
//     too). Two NATs open to each other within the first few, when both
//     sides punch at about the same time;
//   - a check back at the next round each time a check of the member's
//     arrives from the address (a peer that starts punching late opened
//     its NAT toward this side with that check), up to quietChecks in all;
//   - quietPairChecks at most over all of the pair's addresses that never
//     answered, scheduled checks stopping quietReserve short of it, so a
//     check back still has room.
//
// With the primes (prime.go: at most three to an address per pair, which
// die on the way unless the address is a hop or two away), an address that
// never answers gets at most quietChecks checks and three primes from one
// pair: 8 × 46 + 3 × 30 = 458 bytes in a sealed session, beside one answer,
// of its own size, to each check that came from it (docs/security.md,
// "Paths are verified before they carry a link").
const (
	quietScheduled  = 5
	quietChecks     = 8
	quietPairChecks = 40
	quietReserve    = 8
)

// quietAddr is a pair's count of checks to an address that has not
// answered one.
type quietAddr struct {
	to   netip.AddrPort
	sent int           // checks sent to it
	next time.Duration // when its next scheduled check is due
	back bool          // a check of the member's came from it: check back at the next round
}

// quietOf returns the pair's record of a, nil if it has none.
func (p *pairPath) quietOf(a netip.AddrPort) *quietAddr {
	for i := range p.quietAddrs {
		if p.quietAddrs[i].to == a {
			return &p.quietAddrs[i]
		}
	}
	return nil
}

// answered reports whether a answered one of this machine's checks.
func (p *pairPath) answered(a netip.AddrPort) bool { return slices.Contains(p.verified, a) }

// checkRoom reports whether a check to a stays within the bounds above:
// any check, to an address that answered, or under quietChecks for it
// and quietPairChecks for the pair.
func (p *pairPath) checkRoom(a netip.AddrPort) bool {
	if p.answered(a) {
		return true
	}
	if q := p.quietOf(a); q != nil && q.sent >= quietChecks {
		return false
	}
	return p.quietSent < quietPairChecks
}

// checkDue reports whether a round of punching checks a now: an address
// that answered at every round, one that has not on its schedule or when a
// check of the member's came from it.
func (p *pairPath) checkDue(now time.Duration, a netip.AddrPort) bool {
	if p.answered(a) {
		return true
	}
	q := p.quietOf(a)
	switch {
	case !p.checkRoom(a):
		return false
	case q != nil && q.back:
		return true
	case q != nil && (q.sent >= quietScheduled || now < q.next):
		return false
	}
	return p.quietSent < quietPairChecks-quietReserve
}

// charge counts a check sent to a, unless a answered before.
func (p *pairPath) charge(now time.Duration, a netip.AddrPort) {
	if p.answered(a) {
		return
	}
	q := p.quietOf(a)
	if q == nil {
		p.quietAddrs = append(p.quietAddrs, quietAddr{to: a})
		q = &p.quietAddrs[len(p.quietAddrs)-1]
	}
	q.sent++
	q.back = false
	q.next = now + punchEvery<<(q.sent-1)
	p.quietSent++
}

// checkBack: a check of the member's came from a, so the next round checks
// a back, if a's bound leaves room.
func (p *pairPath) checkBack(a netip.AddrPort) {
	if q := p.quietOf(a); q != nil {
		q.back = true
	}
}

// answeredBy: a answered a check; it leaves the count.
func (p *pairPath) answeredBy(a netip.AddrPort) {
	i := slices.IndexFunc(p.quietAddrs, func(q quietAddr) bool { return q.to == a })
	if i < 0 {
		return
	}
	p.quietSent -= p.quietAddrs[i].sent
	p.quietAddrs = slices.Delete(p.quietAddrs, i, i+1)
}
