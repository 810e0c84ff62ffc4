package session

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// Path verification. A link moves to a new address only after that
// address answered a check this machine sent to it: an answer carries
// back the pair's random Tx, which only the checked address has seen
// (with a key the check is also authenticated). So no single datagram,
// forged from anywhere, can point a live link (and the game's traffic)
// at a third party:
//
//   - a nomination is taken only on the controlled side (the higher
//     PeerID), and only from the link's current address or one that this
//     side has verified; an unverified nomination during punching gets a
//     plain answer and waits for this side's own check to reach that
//     address;
//   - outside punching, a check from an address that is neither the
//     link's nor a candidate gets no answer; during punching it gets one
//     answer of its own size, and the checks back it draws are bounded
//     (checkbudget.go);
//   - an authentic datagram of a linked peer from a new source (a NAT
//     that rebound its mapping) starts a check of this side's to that
//     source, at most one a pair every probeEvery, and the link follows
//     once it is answered.

// probeEvery paces the checks a pair's new source addresses get.
const probeEvery = 250 * time.Millisecond

// verify records that addr answered one of this machine's checks.
func (m *member) verify(addr netip.AddrPort) {
	if slices.Contains(m.path.verified, addr) {
		return
	}
	m.path.answeredBy(addr)
	if len(m.path.verified) >= maxCands {
		m.path.verified = m.path.verified[1:]
	}
	m.path.verified = append(m.path.verified, addr)
}

// sentTo reports whether one of this machine's latest checks to the
// member went to addr with secret tx.
func (m *member) sentTo(addr netip.AddrPort, tx uint64) bool {
	for _, c := range m.path.sent {
		if c.to == addr && c.tx == tx && c.to.IsValid() {
			return true
		}
	}
	return false
}

// checkedAt: this machine sends the pair's checks to addr (so an answer
// from it proves the path).
func (m *member) checkedAt(addr netip.AddrPort) bool {
	return addr == m.Addr || addr == m.path.probe || slices.Contains(m.path.cands, addr)
}

// onCheck: a check or an answer arrived from addr.
func (s *Session) onCheck(now time.Duration, from netip.AddrPort, p []byte) {
	if isPrime(p) {
		return // meant to die on the way: a peer close by, nothing to do
	}
	if s.token == 0 {
		s.rejected.Lobby++
		return
	}
	c, err := decodeCheck(p, s.ep.Sealed())
	if err != nil || c.Token != s.token || c.To != s.self {
		s.rejected.Lobby++
		return
	}
	m := s.byID[c.From]
	if m == nil || m.removed || !m.linked || m.ID == s.self {
		s.rejected.Lobby++
		return
	}
	if key, ok := s.checkKey(m, false); !ok || (key != nil && !checkTagOK(p, key)) {
		s.rejected.Lobby++ // not made by the member it names
		return
	}
	if c.Answer {
		s.onAnswer(now, m, from, c)
		return
	}
	punches := s.punches(m)
	if punches && m.path.state == pathNone && s.punchOpen(m) {
		s.startPunch(now, m) // the other side punches: so do we
	}
	punching := punches && m.path.state == pathPunching
	if !punching && !m.checkedAt(from) {
		s.rejected.Path++ // not a path of this pair: no answer at all
		return
	}
	take := false
	if c.Nominate {
		switch {
		case !punches || s.controlling(m):
			s.rejected.Path++ // only the lower PeerID nominates
			return
		case c.Seq <= m.path.peerSeq:
			s.rejected.Path++ // a replayed nomination
			return
		case from == m.Addr || slices.Contains(m.path.verified, from):
			take = true
		case !punching:
			s.rejected.Path++
			return
		}
	}
	// One answer, the check's own size, to where it came from: the other
	// side may still be looking. It says Nominate only when this side took
	// the nomination, so the other side keeps nominating until then.
	if key, ok := s.checkKey(m, true); ok {
		s.nat.check = appendCheck(s.nat.check[:0], check{Answer: true, Nominate: take, Token: s.token,
			From: s.self, To: m.ID, Tx: c.Tx, Seq: c.Seq}, key)
		_ = (pathTransport{s}).Send(from, s.nat.check) // a watcher's, within its budget
	}
	if punching {
		s.addHeardCand(m, from) // a peer-reflexive candidate: checked at the next round
		m.path.checkBack(from)  // or checked back, within its bound (checkbudget.go)
	}
	if take {
		m.path.peerSeq = c.Seq
		if m.path.state != pathDirect || m.Addr != from {
			s.usePath(now, m, pathDirect, from)
		}
	}
}

// onAnswer: an answer to one of this machine's checks.
func (s *Session) onAnswer(now time.Duration, m *member, from netip.AddrPort, c check) {
	if !m.sentTo(from, c.Tx) {
		// No check of ours with that secret went to that address: a
		// secret seen elsewhere proves nothing of this path.
		s.rejected.Path++
		return
	}
	m.verify(from)
	if from == m.path.probe && m.path.state != pathPunching {
		m.path.probe = netip.AddrPort{}
		if from != m.Addr {
			s.movePath(now, m, from)
		}
		return
	}
	if !s.punches(m) || !s.controlling(m) {
		return // the controlling side picks; an answer only says the way is open
	}
	switch {
	case m.path.state == pathPunching:
		s.usePath(now, m, pathDirect, from)
		m.path.nextCheck = now
		s.sendCheck(now, m, from, true)
	case m.path.state == pathDirect && c.Nominate && from == m.Addr:
		m.path.nominated = true
	}
}

// onNewSource: an authentic datagram of m's link came from another
// address than the link's. Check that address; the link follows only
// when it answers (onAnswer). n is the datagram's size: a check is sent
// only for one at least as large, so nobody gets more bytes than came.
func (s *Session) onNewSource(now time.Duration, id netcore.PeerID, from netip.AddrPort, n int) {
	m := s.byID[id]
	if m == nil || m.removed || !m.linked || isRelayed(from) || from == m.Addr || n < s.checkSize() {
		return
	}
	if s.punches(m) && m.path.state == pathPunching {
		s.addHeardCand(m, from)
		return
	}
	s.probePath(now, m, from)
}

// probePath sends a check to addr, a new address of m's that is not yet
// verified, at most one every probeEvery a pair.
func (s *Session) probePath(now time.Duration, m *member, from netip.AddrPort) {
	if m.path.probe.IsValid() && now-m.path.probeAt < probeEvery {
		return
	}
	m.path.probe, m.path.probeAt = from, now
	s.sendCheck(now, m, from, false)
}

// checkSize is the size of one check on the wire.
func (s *Session) checkSize() int {
	if s.ep.Sealed() {
		return checkLen + checkTag
	}
	return checkLen
}

// movePath: the pair's datagrams now come from addr, which answered this
// machine's check (a NAT rebinding, or a direct path after relaying).
func (s *Session) movePath(now time.Duration, m *member, addr netip.AddrPort) {
	old := m.Addr
	m.Addr = addr
	s.membersChanged()
	if m.path.state == pathRelayed {
		m.path.state = pathDirect
	}
	_ = s.ep.MoveLink(m.ID, addr)
	if s.role == roleHost {
		s.nat.tableDirty = true
	}
	s.log.Info("path moved", "peer", m.Name, "from", old, "to", addr)
	s.message(fmt.Sprintf("%s ↔ %s: path moved to %v (verified)", s.cfg.Name, m.Name, addr))
}
