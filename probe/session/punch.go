package session

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
)

// Hole punching, host-mediated. The address the host sees a
// member at is not always one the others can reach: a NAT that maps per
// destination, a proxy in front of the host, a LAN address behind a
// router. So every pair of members other than the host finds its own
// path, RFC 8445's connectivity checks cut down to what a session needs:
//
//  1. each member tells the host its local addresses (kindAddrs);
//  2. the host tells every member, for each other member, the address it
//     sees it at and the local addresses it reported (kindPeers);
//  3. both sides of a pair send checks to every candidate at once, in
//     rounds every punchEvery (a candidate that has not answered yet with
//     backoff, and within a bound: checkbudget.go); a check is answered to
//     where it came from, and a check from a new address adds that address
//     as a candidate (RFC 8445's peer-reflexive candidates), checked at the
//     next round, which is what opens both NATs' filters;
//  4. the side with the lower PeerID controls: the first answer it gets
//     picks the path, and it nominates it with checks flagged so until one
//     is answered as taken; the other side takes a nomination only from an
//     address it has verified (verify.go);
//  5. no answer within relayAfter: the controlling side relays through the
//     host (relay.go), and the other side follows once a relay frame
//     arrives.
//
// Before anything else goes to a peer's address, this side primes it with
// hop-limited datagrams where the socket can (prime.go). A pair with the
// host needs none of this: the host answers a joiner at the address the
// joiner reached it from.
//
// Why not pion/ice: ICE brings STUN servers, candidate gathering on its
// own sockets, and an agent with goroutines and a wall clock, where
// lagscope already has one socket per machine, a host every member reaches
// (the natural rendezvous and relay), a session token and key, and a
// sans-I/O session that must run in virtual time. The checks are two small
// datagrams on that socket.

const (
	// punchEvery paces checks (RFC 8445's Ta is 50 ms per check; a pair
	// sends to a handful of candidates at once, so a tenth of a second
	// keeps a pair's checks near RFC 8445's pace).
	punchEvery = 100 * time.Millisecond
	// minPunchAfter is the least time a pair's link gets to carry
	// traffic at the address the host saw before hole punching starts: a
	// pair that hears each other at once (a LAN, the simulator) never
	// punches, so it adds neither datagrams nor lobby lines. The wait is
	// also at least three round trips to the host (punchAfter).
	minPunchAfter = 2 * time.Second
	// lateWatcherPunchAfter is how long a player waits to hear a watcher
	// that attached to the running game before it punches (punchAfter).
	lateWatcherPunchAfter = 10 * time.Second
	// relayAfter is how long the controlling side punches before it
	// relays through the host (3 s).
	relayAfter = 3 * time.Second
	// giveUpAfter is how long a pair may stay unconnected in the lobby
	// before the attempt ends with advice (30 s).
	giveUpAfter = 30 * time.Second
	// explainAfter paces the lobby's "waiting for" lines.
	explainAfter = 5 * time.Second
)

type path uint8

const (
	pathNone     path = iota // not worked out (yet)
	pathPunching             // checks under way
	pathDirect               // straight between the two machines
	pathRelayed              // through the host
)

func (p path) String() string {
	switch p {
	case pathPunching:
		return "punching"
	case pathDirect:
		return "direct"
	case pathRelayed:
		return "relayed"
	}
	return "none"
}

// pairPath is this machine's side of its pair with one member.
type pairPath struct {
	state     path
	open      bool          // a pair that may punch: its link is open
	opened    time.Duration // when its link opened
	cands     []netip.AddrPort
	sent      [checkMemory]sentCheck // the latest checks, each with its own secret
	sentAt    int                    // where the next goes in sent
	seq       uint32                 // checks sent
	keyOut    []byte                 // authenticates this machine's checks to the member (sealed sessions)
	keyIn     []byte                 // authenticates the member's checks to this machine
	peerSeq   uint32                 // newest nomination taken (controlled side)
	since     time.Duration
	nextCheck time.Duration
	nominated bool             // controlling: a nomination was answered
	verified  []netip.AddrPort // addresses that answered a check of ours
	probe     netip.AddrPort   // a new source being checked (NAT rebinding)
	probeAt   time.Duration    // when its check went out
	hostSeen  netip.AddrPort   // where the host last said it sees the member
	reported  bool             // the host's table lists addresses the member reported itself
	took      time.Duration    // how long the path took to find
	locals    []netip.AddrPort // host: the member's local addresses
	primed    []netip.AddrPort // addresses primed, or heard from: their checks may go
	late      []latePrime      // primes still to send at primeLateHops
	explained time.Duration    // "waiting for" lines said so far
	reports   []pairReport     // host: the member's pairs not connected yet
	table     []byte           // host: the address table last sent to the member
	paths     []byte           // host: the relayed pairs last sent to the member

	// quietAddrs counts the checks to addresses that never answered one,
	// quietSent their sum (checkbudget.go).
	quietAddrs []quietAddr
	quietSent  int
}

// natState is the session's part of hole punching and relaying.
type natState struct {
	tableDirty bool // host: send the address table
	anyLocals  bool // host: some member has reported addresses (tables are in use)
	needAddrs  bool // member: someone punches, so the host wants our addresses
	helloAt    time.Duration
	hostRTT    time.Duration // member: Hello to Challenge
	addrsSent  uint32        // member: roster version its addresses went out with
	relay      relayTable
	// frame is a relay frame going out; rxFrame one coming in (the
	// endpoint may send, an ack, while it reads the one that came in).
	frame, rxFrame [netcore.MaxDatagram]byte
	check          []byte
	failed         bool
	// early holds table entries for members whose roster entry has not
	// arrived yet (the global channel does not keep order).
	early map[netcore.PeerID][]netip.AddrPort
	// relayedPairs: the pairs the host relays (a member learns them from
	// the host's 0x27; the host from its own table); pathsSent is how many
	// the host last told everyone.
	relayedPairs []pairKey
	pathsSent    int
	// pairsSent (member): the pending pairs last reported to the host;
	// pendingSince (host): when a pair was first reported pending.
	pairsSent     []pairReport
	pairsSentYet  bool
	pendingSince  map[pairKey]time.Duration
	hostExplained map[string]time.Duration
}

// interfaceAddrs lists this machine's addresses when the transport is
// bound to a wildcard; tests replace it.
var interfaceAddrs = net.InterfaceAddrs

// localAddrs is what this machine tells the host it can be reached at:
// Config.LocalAddrs, else the socket's address, else (a wildcard socket)
// every unicast address of its interfaces at the socket's port. Loopback
// goes last: it only helps a pair on one machine.
func (s *Session) localAddrs() []netip.AddrPort {
	if len(s.cfg.LocalAddrs) > 0 {
		return s.cfg.LocalAddrs
	}
	la := s.tr.LocalAddr()
	if !la.IsValid() || la.Port() == 0 {
		return nil
	}
	if !la.Addr().IsUnspecified() {
		return []netip.AddrPort{la}
	}
	list, err := interfaceAddrs()
	if err != nil {
		return nil
	}
	var out, loop []netip.AddrPort
	for _, a := range list {
		p, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ad := p.Addr().Unmap()
		if ad.IsMulticast() || ad.IsUnspecified() || ad.IsLinkLocalUnicast() || (la.Addr().Is4() && !ad.Is4()) {
			continue
		}
		if ad.IsLoopback() {
			loop = append(loop, netip.AddrPortFrom(ad, la.Port()))
		} else {
			out = append(out, netip.AddrPortFrom(ad, la.Port()))
		}
	}
	out = append(out, loop...)
	return out[:min(len(out), maxLocals)]
}

// punches: this machine finds its own path to m (a pair of members, the
// host in neither).
func (s *Session) punches(m *member) bool {
	return s.role != roleHost && m.ID != hostID && m.ID != s.self
}

func (s *Session) controlling(m *member) bool { return s.self < m.ID }

// punchOpen: pairs look for their paths in the lobby, and after the start
// only a pair with a late watcher in it, whose links open then (watch.go).
func (s *Session) punchOpen(m *member) bool { return !s.started || m.late || s.lateSelf }

// openPair: a pair's link has just opened at the address the host saw.
func (s *Session) openPair(now time.Duration, m *member) {
	if s.punches(m) && !m.path.open {
		m.path.open, m.path.opened = true, now
		s.prime(now, m, m.Addr) // before the lobby's first datagram to it
	}
}

// punchAfter is how long a pair's link with m may stay silent before it
// punches: minPunchAfter, or three round trips to the host on a slow
// network (the other side's first ping takes about one to arrive). A
// player waits lateWatcherPunchAfter for a watcher that attached to the
// running game, until the host's address table lists addresses the
// watcher reported itself: watchers arriving in a crowd get their rosters
// as the host's budget for them allows, and until its roster comes a
// watcher cannot answer a check, so an early punch would end in the
// relay. A machine reports its addresses only once it holds a roster
// (sendAddrs), so a watcher they came from can answer; a pair that needs
// the relay then has it 3 s after the punch, not 13 s after the link
// opened.
func (s *Session) punchAfter(m *member) time.Duration {
	d := max(minPunchAfter, 3*s.nat.hostRTT)
	if m.late && s.role != RoleObserver && !m.path.reported && len(s.nat.early[m.ID]) < 2 {
		d = max(d, lateWatcherPunchAfter)
	}
	return d
}

// startPunch: the pair has not heard each other at the address the host
// saw (or the other side has started punching).
func (s *Session) startPunch(now time.Duration, m *member) {
	if !s.punches(m) || m.path.state != pathNone {
		return
	}
	s.nat.needAddrs = true
	m.path.state = pathPunching
	m.path.since = now
	m.path.nextCheck = now
	s.addCand(m, m.Addr)
	for _, a := range s.nat.early[m.ID] {
		s.addCand(m, a)
	}
	delete(s.nat.early, m.ID)
}

func (s *Session) addCand(m *member, a netip.AddrPort) bool {
	if !a.IsValid() || isRelayed(a) || slices.Contains(m.path.cands, a) || len(m.path.cands) >= maxCands {
		return false
	}
	m.path.cands = append(m.path.cands, a)
	return true
}

// sendAddrs (member): tell the host the local addresses, once per roster
// version (the global channel may drop one; a new roster repeats it).
func (s *Session) sendAddrs(now time.Duration) {
	if s.role == roleHost || !s.nat.needAddrs || s.nat.addrsSent == s.version {
		return
	}
	s.nat.addrsSent = s.version
	s.buf = appendAddrs(s.buf[:0], kindAddrs, s.localAddrs())
	_ = s.ep.Send(now, hostID, netcore.ChannelGlobal, s.buf)
}

// onAddrs (host): a member's local addresses.
func (s *Session) onAddrs(m *member, addrs []netip.AddrPort) {
	if s.role != roleHost || slices.Equal(m.path.locals, addrs) {
		return
	}
	m.path.locals = addrs
	s.nat.tableDirty, s.nat.anyLocals = true, true
}

// sendTables (host): every member learns what to try for each other.
func (s *Session) sendTables(now time.Duration) {
	if s.role != roleHost || !s.nat.tableDirty {
		return
	}
	s.nat.tableDirty = false
	for _, to := range s.members {
		if to.ID == s.self || to.removed || !to.linked {
			continue
		}
		var list []peerAddrs
		for _, o := range s.members {
			if o.ID == s.self || o.ID == to.ID || o.removed || (o.Observer && to.Observer) {
				continue
			}
			list = append(list, peerAddrs{ID: o.ID, Addrs: append([]netip.AddrPort{o.Addr}, o.path.locals...)})
		}
		if len(list) == 0 {
			continue
		}
		s.buf = appendPeers(s.buf[:0], list)
		if bytes.Equal(s.buf, to.path.table) {
			// Nothing new for this member: a watcher joining changes no
			// other watcher's table, and n watchers joining must not cost
			// n² tables.
			continue
		}
		to.path.table = append(to.path.table[:0], s.buf...)
		_ = s.ep.Send(now, to.ID, netcore.ChannelGlobal, s.buf)
	}
}

// onPeers (member): the host's table. Someone punches: the host wants
// this machine's addresses too.
func (s *Session) onPeers(now time.Duration, list []peerAddrs) {
	s.nat.needAddrs = true
	for _, e := range list {
		m := s.byID[e.ID]
		if m == nil && e.ID != hostID && e.ID != s.self && len(s.nat.early) < maxMembers {
			if s.nat.early == nil {
				s.nat.early = map[netcore.PeerID][]netip.AddrPort{}
			}
			if len(e.Addrs) > 0 {
				e.Addrs[0] = s.seenFromHere(e.Addrs[0])
			}
			s.nat.early[e.ID] = e.Addrs
			continue
		}
		if m == nil || !s.punches(m) {
			continue
		}
		if len(e.Addrs) > 1 {
			m.path.reported = true // the member holds a roster (punchAfter)
		}
		if len(e.Addrs) > 0 {
			// The host saw the member at a new address (its NAT rebound):
			// a path of this pair's may have moved there too. Check it; the
			// link follows if it answers.
			a := s.seenFromHere(e.Addrs[0])
			seen := m.path.hostSeen
			m.path.hostSeen = a
			if seen.IsValid() && a != seen && a != m.Addr && m.path.state != pathPunching {
				s.probePath(now, m, a)
			}
		}
		for i, a := range e.Addrs {
			if i == 0 {
				a = s.seenFromHere(a)
			}
			if s.addCand(m, a) && m.path.state == pathPunching {
				m.path.nextCheck = now
			}
		}
	}
}

// seenFromHere: an address the host saw on its own loopback is, from
// another machine, at the host's address.
func (s *Session) seenFromHere(a netip.AddrPort) netip.AddrPort {
	if a.Addr().IsLoopback() && !s.hostAddr.Addr().IsLoopback() {
		return netip.AddrPortFrom(s.hostAddr.Addr(), a.Port())
	}
	return a
}

// tickPunch sends the checks that are due and decides to relay.
func (s *Session) tickPunch(now time.Duration) {
	for _, m := range s.members {
		if m.removed || !m.linked {
			continue
		}
		s.sendLatePrimes(now, m)
		if m.path.state == pathNone && m.path.open && !m.heard && s.punchOpen(m) && now-m.path.opened >= s.punchAfter(m) {
			s.startPunch(now, m)
		}
		switch m.path.state {
		case pathPunching:
			if s.controlling(m) && now-m.path.since >= relayAfter {
				s.usePath(now, m, pathRelayed, relayAddr(m.ID))
				continue
			}
			if now >= m.path.nextCheck {
				m.path.nextCheck = now + punchEvery
				for _, a := range m.path.cands {
					if !slices.Contains(m.path.primed, a) && s.prime(now, m, a) {
						continue // checked from the next round on, once the peer primed too
					}
					if m.path.checkDue(now, a) {
						s.sendCheck(now, m, a, false)
					}
				}
			}
		case pathDirect:
			if s.controlling(m) && !m.path.nominated && now >= m.path.nextCheck && now-m.path.since < giveUpAfter {
				m.path.nextCheck = now + punchEvery
				s.sendCheck(now, m, m.Addr, true)
			}
		}
	}
}

// punchDeadline is when tickPunch next has work.
func (s *Session) punchDeadline() (time.Duration, bool) {
	var d time.Duration
	ok := false
	for _, m := range s.members {
		if m.removed || !m.linked {
			continue
		}
		if len(m.path.late) > 0 && (!ok || m.path.late[0].at < d) {
			d, ok = m.path.late[0].at, true
		}
		if m.path.state == pathNone && m.path.open && !m.heard && s.punchOpen(m) {
			if t := m.path.opened + s.punchAfter(m); !ok || t < d {
				d, ok = t, true
			}
		}
		if m.path.state == pathPunching || (m.path.state == pathDirect && s.controlling(m) && !m.path.nominated &&
			m.path.nextCheck-m.path.since < giveUpAfter) {
			if !ok || m.path.nextCheck < d {
				d, ok = m.path.nextCheck, true
			}
		}
	}
	return d, ok
}

// sendCheck sends one check to the member at to, with a fresh secret
// that only to sees: an answer proves that path only if it carries the
// secret of a check sent to the address the answer comes from (verify.go).
// A check to an address that never answered one goes only within the
// pair's bounds (checkbudget.go).
func (s *Session) sendCheck(now time.Duration, m *member, to netip.AddrPort, nominate bool) {
	if !to.IsValid() || isRelayed(to) || !m.path.checkRoom(to) {
		return
	}
	key, ok := s.checkKey(m, true)
	if !ok {
		return
	}
	var b [8]byte
	if err := s.random(b[:]); err != nil {
		return
	}
	tx := le.Uint64(b[:])
	m.path.sent[m.path.sentAt] = sentCheck{to: to, tx: tx}
	m.path.sentAt = (m.path.sentAt + 1) % checkMemory
	m.path.seq++
	s.nat.check = appendCheck(s.nat.check[:0], check{Nominate: nominate, Token: s.token, From: s.self, To: m.ID,
		Tx: tx, Seq: m.path.seq}, key)
	// A check to a watcher draws on the watchers' budget like everything
	// else this machine sends it; one the budget holds back is as if lost
	// on the way, and counts against no bound of the pair's.
	if !s.noteSend(to, s.nat.check) {
		return
	}
	m.path.charge(now, to)
	if err := s.tr.Send(to, s.nat.check); err != nil {
		s.log.Debug("check not sent", "to", to, "err", err)
	}
}

// usePath moves the pair's link to addr.
func (s *Session) usePath(now time.Duration, m *member, p path, addr netip.AddrPort) {
	first := m.path.state == pathPunching || m.path.state == pathNone
	m.path.state = p
	if first {
		m.path.took = now - m.path.since
	}
	m.Addr = addr
	s.membersChanged()
	if m.linked {
		_ = s.ep.MoveLink(m.ID, addr)
	}
	switch p {
	case pathDirect:
		s.log.Info("direct path", "peer", m.Name, "addr", addr, "after", m.path.took)
		if first {
			s.message(fmt.Sprintf("%s ↔ %s: direct path at %v (found in %v)", s.cfg.Name, m.Name, addr, m.path.took.Round(time.Millisecond)))
		}
	case pathRelayed:
		s.log.Info("relayed through the host", "peer", m.Name)
		s.message(fmt.Sprintf("%s ↔ %s: no direct path after %v, relaying through the host", s.cfg.Name, m.Name,
			m.path.took.Round(100*time.Millisecond)))
	}
}

// pathTo is how this machine's datagrams to the named machine travel:
// direct for the host's links and every pair that found its path, relayed
// through the host, or still being worked out.
func (s *Session) pathTo(name string) path {
	for _, m := range s.members {
		if m.Name == name && m.ID != s.self && !m.removed {
			if m.ID == hostID || s.role == roleHost {
				return pathDirect
			}
			if m.path.state == pathNone {
				return pathDirect
			}
			return m.path.state
		}
	}
	return pathNone
}

// checkUnconnected: a pair of this machine still without traffic after
// giveUpAfter in the lobby ends the attempt with advice.
func (s *Session) checkUnconnected(now time.Duration) {
	if s.started || s.nat.failed {
		return
	}
	if s.role == roleHost {
		// The host has no pair of its own to punch; it says what its
		// members report.
		for _, p := range s.pending(now) {
			k := p.A + "\x00" + p.B
			if p.For >= explainAfter && s.nat.hostExplained[k] < p.For/explainAfter {
				if s.nat.hostExplained == nil {
					s.nat.hostExplained = map[string]time.Duration{}
				}
				s.nat.hostExplained[k] = p.For / explainAfter
				s.message(fmt.Sprintf("waiting for %s ↔ %s: nothing heard yet after %v (trying: %s; giving up at %v)",
					p.A, p.B, p.For.Round(time.Second), p.Trying, giveUpAfter))
			}
		}
		return
	}
	for _, m := range s.members {
		if m.removed || !m.linked || m.heard || !m.path.open {
			continue
		}
		waited := now - m.path.opened
		if waited >= giveUpAfter {
			s.nat.failed = true
			s.fail(unconnectedError{Peer: m.Name, Tried: m.path.state})
			return
		}
		// Say what the lobby waits for, now and then.
		if waited >= explainAfter && m.path.explained < waited/explainAfter {
			m.path.explained = waited / explainAfter
			s.message(fmt.Sprintf("waiting for %s ↔ %s: nothing heard yet after %v (trying: %s; giving up at %v)",
				s.cfg.Name, m.Name, waited.Round(time.Second), trying(m.path.state), giveUpAfter))
		}
	}
}

// unconnectedError ends a lobby in which a pair found no path at all.
type unconnectedError struct {
	Peer  string
	Tried path
}

func (e unconnectedError) Error() string {
	return fmt.Sprintf("no path to %s after %v (tried %s): a firewall may drop UDP between you "+
		"(allow lagscope's port), the host may need its UDP port forwarded on its router, "+
		"or give --listen an address the others can reach", e.Peer, giveUpAfter, e.Tried)
}

// pending lists the lobby's pairs that carry no traffic yet, with what
// is being tried: this machine's own and, on the host, every pair its
// members report (kind 0x28), once each. It is what the lobby shows while
// it waits.
func (s *Session) pending(now time.Duration) []feed.PendingPair {
	var out []feed.PendingPair
	seen := map[pairKey]bool{}
	for _, m := range s.members {
		if m.removed || !m.linked || m.heard || m.ID == s.self {
			continue
		}
		since := time.Duration(0)
		if m.path.open {
			since = now - m.path.opened
		}
		seen[keyOf(s.self, m.ID)] = true
		out = append(out, feed.PendingPair{A: s.cfg.Name, B: m.Name, Trying: trying(m.path.state), For: since})
	}
	if s.role != roleHost {
		return out
	}
	if s.nat.pendingSince == nil {
		s.nat.pendingSince = map[pairKey]time.Duration{}
	}
	for _, m := range s.members {
		if m.removed || m.ID == s.self {
			continue
		}
		for _, r := range m.path.reports {
			o := s.byID[r.Peer]
			k := keyOf(m.ID, r.Peer)
			if o == nil || o.removed || seen[k] {
				continue
			}
			seen[k] = true
			t, ok := s.nat.pendingSince[k]
			if !ok {
				t = now
				s.nat.pendingSince[k] = t
			}
			a, b := m, o
			if a.ID > b.ID {
				a, b = b, a
			}
			out = append(out, feed.PendingPair{A: a.Name, B: b.Name, Trying: trying(r.Trying), For: now - t})
		}
	}
	return out
}

// sendPairs (member): tell the host which pairs still wait, when that
// changes, so the host's lobby can say it too.
func (s *Session) sendPairs(now time.Duration) {
	if s.role == roleHost {
		return
	}
	var list []pairReport
	for _, m := range s.members {
		if m.removed || !m.linked || m.heard || m.ID == s.self || m.ID == hostID || m.path.state == pathNone {
			continue
		}
		list = append(list, pairReport{Peer: m.ID, Trying: m.path.state})
	}
	// Pairs that hear each other at once never report: nothing to say.
	if slices.Equal(list, s.nat.pairsSent) && (s.nat.pairsSentYet || len(list) == 0) {
		return
	}
	s.nat.pairsSent, s.nat.pairsSentYet = list, true
	s.buf = appendPairs(s.buf[:0], list)
	_ = s.ep.Send(now, hostID, netcore.ChannelGlobal, s.buf)
}

// checkKey is the key of the pair with m that authenticates checks in
// one direction (out: this machine's), nil in a session that does not
// seal. ok is false when a sealing session has no key for m (no link).
func (s *Session) checkKey(m *member, out bool) (key []byte, ok bool) {
	if !s.ep.Sealed() {
		return nil, true
	}
	k := &m.path.keyIn
	if out {
		k = &m.path.keyOut
	}
	if *k == nil {
		var ok bool
		if *k, ok = s.ep.LinkKey(m.ID, checkPurpose, out); !ok {
			return nil, false
		}
	}
	return *k, true
}

// sentCheck is one check this machine sent: where, and its secret.
type sentCheck struct {
	to netip.AddrPort
	tx uint64
}

// checkMemory is how many of a pair's latest checks an answer may answer:
// a round of punching goes to every candidate (at most maxCands) at once,
// and answers may come a round late.
const checkMemory = 2 * maxCands

// trying is what a pair tries, in the lobby's words: "direct" (the address
// the host saw) until it punches.
func trying(p path) string {
	if p == pathNone {
		return "direct"
	}
	return p.String()
}
