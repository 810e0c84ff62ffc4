package session

import (
	"net/netip"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// Priming. A router that only masquerades, with no rule that drops what
// nobody inside asked for, hands a peer's datagram that arrives before its
// inside machine sent anything to that peer to its own input: it answers
// ICMP port unreachable and keeps the conntrack entry. That entry holds
// the public port the inside machine's own datagrams to the peer need, so
// masquerade gives them another port, which the peer's router does not let
// in; and Linux reuses that port for the machine's later destinations too.
// So before anything else goes to a peer's address, this side sends it
// primes (punchwire.go) with small hop limits, when the transport sets hop
// limits per datagram (netcore.HopTransport): they open this side's
// mappings and die on the way, short of the peer's router. The peer does
// the same when its link opens, at about the same time (both learn of the
// pair from the same roster); primeHeld says how long this side's own
// datagrams to the peer then wait, so that each side's first datagram
// that arrives finds the other's mapping open even when the peer's roster
// comes a little later. A candidate that first turns up while the pair
// punches is primed a round before its first check, for the same reason.
// Without hop limits (the simulator, a system without them) nothing is
// primed and checks go at once.

const (
	// primeLateHops is the hop limit of the last prime to an address,
	// primeLateAfter after the first ones: past a second NAT (a carrier's
	// in front of the home router), which the first primes do not reach.
	// It may reach the peer's router on a short path, so it waits until
	// the peer, whose link opened at about the same time, has primed its
	// side.
	primeLateHops  = 3
	primeLateAfter = 50 * time.Millisecond
	// primeHold is how long after a pair's link opened, its address
	// primed, the lobby holds back its own datagrams to the peer
	// (primeHeld), so that the peer, whose roster may arrive a little
	// later, primes its side before anything of this side's reaches its
	// router.
	primeHold = 100 * time.Millisecond
	// maxPrimed bounds the addresses a pair remembers as primed.
	maxPrimed = 2 * maxCands
)

// primeHops are the hop limits of the primes that go out at once: 1 opens
// a NAT on this machine itself (a router that forwards a datagram drops it
// at hop limit 1 before its conntrack keeps anything), 2 the router in
// front of it; the next router drops the datagram.
var primeHops = [...]int{1, 2}

// path is how a pair's datagrams travel.
// latePrime is an address's prime at primeLateHops, due at at.
type latePrime struct {
	to netip.AddrPort
	at time.Duration
}

// primeHeld: the lobby's datagrams to m wait, because this side primed
// m's address when the link opened less than primeHold ago and has heard
// nothing from m yet (once m is heard, both sides' mappings are open).
func (s *Session) primeHeld(now time.Duration, m *member) bool {
	return s.punches(m) && !m.heard && m.path.open && now-m.path.opened < primeHold &&
		slices.Contains(m.path.primed, m.Addr)
}

// hopLimited is the transport when it sets hop limits per datagram.
func (s *Session) hopLimited() (netcore.HopTransport, bool) {
	ht, ok := s.tr.(netcore.HopTransport)
	return ht, ok && ht.TraceUnavailable() == ""
}

// prime sends the primes to a, a's first datagrams of this pair: at once
// with primeHops, and one with primeLateHops primeLateAfter later. It
// reports false when the transport cannot limit hops (nothing is sent).
// A prime to a watcher draws on the watchers' budget like everything else
// this machine sends it (watchbudget.go): when the budget holds every
// prime back, a stays unprimed, so its checks wait for a round whose
// primes go.
func (s *Session) prime(now time.Duration, m *member, a netip.AddrPort) bool {
	ht, ok := s.hopLimited()
	if !ok || !a.IsValid() || isRelayed(a) {
		return false
	}
	s.nat.check = appendPrime(s.nat.check[:0], s.token, s.self, m.ID)
	sent := false
	for _, h := range primeHops {
		if !s.noteSend(a, s.nat.check) {
			continue
		}
		sent = true
		if err := ht.SendHopLimit(a, s.nat.check, h); err != nil {
			s.log.Debug("prime not sent", "to", a, "hops", h, "err", err)
		}
	}
	if !sent {
		return true
	}
	m.path.markPrimed(a)
	if len(m.path.late) < maxCands {
		m.path.late = append(m.path.late, latePrime{to: a, at: now + primeLateAfter})
	}
	return true
}

// sendLatePrimes sends m's primes at primeLateHops that are due.
func (s *Session) sendLatePrimes(now time.Duration, m *member) {
	if len(m.path.late) == 0 || now < m.path.late[0].at {
		return
	}
	ht, ok := s.hopLimited()
	for len(m.path.late) > 0 && now >= m.path.late[0].at {
		a := m.path.late[0].to
		m.path.late = m.path.late[1:]
		if !ok {
			continue
		}
		s.nat.check = appendPrime(s.nat.check[:0], s.token, s.self, m.ID)
		if !s.noteSend(a, s.nat.check) {
			continue // held back by the watchers' budget: the first primes went
		}
		if err := ht.SendHopLimit(a, s.nat.check, primeLateHops); err != nil {
			s.log.Debug("prime not sent", "to", a, "hops", primeLateHops, "err", err)
		}
	}
}

// markPrimed records that this side's mapping toward a is open: primed,
// or a datagram from a came in through it.
func (p *pairPath) markPrimed(a netip.AddrPort) {
	if slices.Contains(p.primed, a) {
		return
	}
	if len(p.primed) >= maxPrimed {
		p.primed = p.primed[1:]
	}
	p.primed = append(p.primed, a)
}

// addHeardCand adds a peer-reflexive candidate, an address a datagram of
// the pair came from: it came in through this side's NAT, whose mapping
// toward it is open, so its checks need no prime.
func (s *Session) addHeardCand(m *member, a netip.AddrPort) {
	s.addCand(m, a)
	if slices.Contains(m.path.cands, a) {
		m.path.markPrimed(a)
	}
}
