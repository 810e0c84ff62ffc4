package session

import (
	"bytes"
	"errors"
	"net/netip"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
)

// Relaying through the host: a pair that found no direct path
// within relayAfter sends its datagrams to the host as relay frames
// (punchwire.go), and the host forwards them to the other member. The
// host checks that a frame carries the session's token and comes from the
// address its sender is linked at, and gives every pair a byte budget, so
// the relay cannot be used to flood anyone; pairs with a watcher also draw
// on the watchers' budget (watchbudget.go). The frames are the members'
// own netcore datagrams, sealed end to end with the key when there is
// one: the host forwards what it cannot read or forge. A relayed link's
// round trip is the relayed path's (through the host), since that is the
// path the game's datagrams take.

const (
	// relayRate and relayBurst are a pair's budget: a lockstep game's
	// frame packets are a few kilobytes a second each way, so 128 KiB/s
	// is ample for a game and small as a flood.
	relayRate  = 128 << 10 // bytes per second
	relayBurst = 256 << 10
)

type pairKey struct{ a, b netcore.PeerID } // a < b

func keyOf(x, y netcore.PeerID) pairKey {
	if x > y {
		x, y = y, x
	}
	return pairKey{x, y}
}

// relayCount is what the host did for one pair.
type relayCount struct {
	key                       pairKey
	budget                    bucket // the pair's bytes, relayRate and relayBurst
	forwarded, forwardedBytes uint64
	refused, refusedBytes     uint64
	aName, bName              string
}

type relayTable struct {
	pairs []*relayCount // in the order pairs first relayed
	total uint64        // datagrams forwarded, every pair
}

func (t *relayTable) get(k pairKey) *relayCount {
	for _, c := range t.pairs {
		if c.key == k {
			return c
		}
	}
	c := &relayCount{key: k, budget: bucket{Rate: relayRate, Burst: relayBurst}}
	t.pairs = append(t.pairs, c)
	return c
}

// pathTransport is the transport the session's endpoint sends through: a
// datagram addressed to a relay address goes to the host as a relay
// frame; everything else goes straight out.
type pathTransport struct{ s *Session }

func (t pathTransport) Send(to netip.AddrPort, p []byte) error {
	if !t.s.noteSend(to, p) {
		return nil // held back by the watchers' budget (watchbudget.go): as if lost on the way
	}
	if id, ok := relayPeer(to); ok {
		return t.s.sendRelayed(id, p)
	}
	return t.s.tr.Send(to, p)
}

func (t pathTransport) LocalAddr() netip.AddrPort { return t.s.tr.LocalAddr() }

// Now passes on the socket's clock (netcore.Clock), so the endpoint reads
// send times at the write; 0 (the endpoint keeps its now) without one.
func (t pathTransport) Now() time.Duration {
	if c, ok := t.s.tr.(netcore.Clock); ok {
		return c.Now()
	}
	return 0
}

// errRelayedTrace: a relayed pair's datagrams leave toward the host, so a
// hop-limited probe would trace the path to the host, not to the peer.
var errRelayedTrace = errors.New("a relayed link cannot be traced")

// SendHopLimit passes a hop-limited probe to the socket (netcore.HopTransport);
// a relayed pair has no path of its own to trace.
func (t pathTransport) SendHopLimit(to netip.AddrPort, p []byte, hops int) error {
	if _, ok := relayPeer(to); ok {
		return errRelayedTrace
	}
	ht, ok := t.s.tr.(netcore.HopTransport)
	if !ok {
		return errors.New(t.TraceUnavailable())
	}
	return ht.SendHopLimit(to, p, hops)
}

// HopAnswers passes on the socket's ICMP answers.
func (t pathTransport) HopAnswers(dst []netcore.HopAnswer) []netcore.HopAnswer {
	if ht, ok := t.s.tr.(netcore.HopTransport); ok {
		return ht.HopAnswers(dst)
	}
	return dst
}

// TraceUnavailable is the socket's own answer, or why a transport that is
// not a socket (the simulated network) cannot trace.
func (t pathTransport) TraceUnavailable() string {
	if ht, ok := t.s.tr.(netcore.HopTransport); ok {
		return ht.TraceUnavailable()
	}
	return "this transport has no hop limit or error queue to trace with"
}

func (s *Session) sendRelayed(to netcore.PeerID, p []byte) error {
	if len(p) < netcore.HeaderLen || len(p) > len(s.nat.frame) {
		return netcore.ErrOversize
	}
	b := s.nat.frame[:len(p)]
	copy(b, p)
	toRelayFrame(b, to)
	return s.tr.Send(s.hostAddr, b)
}

// onRelayFrame: the host forwards a frame; a member takes one the host
// forwarded.
func (s *Session) onRelayFrame(now time.Duration, from netip.AddrPort, p []byte) {
	to, token, sender, ok := relayDest(p)
	if !ok || token == 0 || token != s.token {
		s.rejected.Lobby++
		return
	}
	if s.role == roleHost {
		s.forward(now, from, p, to, sender)
		return
	}
	m := s.byID[sender]
	if from != s.hostAddr || to != s.self || m == nil || m.removed || !m.linked || !s.punches(m) {
		s.rejected.Lobby++
		return
	}
	switch {
	case m.path.state == pathDirect:
		// A pair with a direct path never falls back on a relay frame: it
		// moves only through a verified check.
		s.rejected.Path++
		return
	case m.path.state != pathRelayed && !s.controlling(m):
		// The controlling side gave up on a direct path: follow it.
		s.usePath(now, m, pathRelayed, relayAddr(m.ID))
	}
	if len(p) > len(s.nat.rxFrame) {
		s.rejected.Lobby++
		return
	}
	b := s.nat.rxFrame[:len(p)]
	copy(b, p)
	fromRelayFrame(b)
	if s.runsPeer() {
		s.peer.Receive(now, relayAddr(sender), b)
	} else {
		s.ep.Receive(now, relayAddr(sender), b)
	}
}

// forward (host): one frame on to its destination, within the pair's
// budget.
func (s *Session) forward(now time.Duration, from netip.AddrPort, p []byte, to, sender netcore.PeerID) {
	src, dst := s.byID[sender], s.byID[to]
	if src == nil || dst == nil || src.removed || dst.removed || !src.linked || !dst.linked ||
		src.Addr != from || sender == to || to == s.self || (src.Observer && dst.Observer) {
		s.rejected.Lobby++
		return
	}
	c := s.nat.relay.get(keyOf(sender, to))
	if c.aName == "" {
		a, b := src, dst
		if a.ID > b.ID {
			a, b = b, a
		}
		c.aName, c.bName = a.Name, b.Name
		s.message("relaying " + a.Name + " ↔ " + b.Name + " (no direct path between them)")
		s.nat.relayedPairs = append(s.nat.relayedPairs, c.key)
	}
	if !c.budget.Take(now, float64(len(p))) || !s.relayFits(now, src, dst, p) {
		c.refused++
		c.refusedBytes += uint64(len(p))
		return
	}
	if err := s.tr.Send(dst.Addr, p); err != nil {
		c.refused++
		c.refusedBytes += uint64(len(p))
		return
	}
	s.wb.allBytes += uint64(len(p))
	s.wb.allDatagrams++
	c.forwarded++
	c.forwardedBytes += uint64(len(p))
	s.nat.relay.total++
}

// relayed lists what the host relayed, per pair (names in house order).
func (s *Session) relayed() []feed.RelayStat {
	var out []feed.RelayStat
	for _, c := range s.nat.relay.pairs {
		out = append(out, feed.RelayStat{Between: [2]string{c.aName, c.bName}, Datagrams: c.forwarded,
			Bytes: c.forwardedBytes, RefusedDatagrams: c.refused, RefusedBytes: c.refusedBytes})
	}
	return slices.Clip(out)
}

// markPaths sets the path of every link line this machine measures itself
// (the From end is this machine) and of pairs it knows are relayed.
func (s *Session) markPaths(ls []feed.LinkStat) []feed.LinkStat {
	for i := range ls {
		if ls[i].From == s.cfg.Name && s.pathTo(ls[i].To) == pathRelayed {
			ls[i].Path = feed.PathRelayed
		} else if s.relayedPair(ls[i].From, ls[i].To) {
			ls[i].Path = feed.PathRelayed
		}
	}
	return ls
}

// relayedPair: the host relays the pair between two named machines.
func (s *Session) relayedPair(a, b string) bool {
	for _, k := range s.nat.relayedPairs {
		x, y := s.byID[k.a], s.byID[k.b]
		if x != nil && y != nil && ((x.Name == a && y.Name == b) || (x.Name == b && y.Name == a)) {
			return true
		}
	}
	return false
}

// sendPaths (host): tell everyone when a pair starts being relayed.
func (s *Session) sendPaths(now time.Duration) {
	if s.role != roleHost || s.nat.pathsSent == len(s.nat.relayedPairs) {
		return
	}
	s.nat.pathsSent = len(s.nat.relayedPairs)
	var players []pairKey // the pairs a watcher reads: its telemetry is the players'
	for _, k := range s.nat.relayedPairs {
		if a, b := s.byID[k.a], s.byID[k.b]; a != nil && b != nil && !a.Observer && !b.Observer {
			players = append(players, k)
		}
	}
	for _, m := range s.members {
		if m.ID == s.self || !m.linked || m.removed {
			continue
		}
		pairs := s.nat.relayedPairs
		if m.Observer {
			pairs = players
		}
		s.buf = appendPaths(s.buf[:0], pairs)
		if bytes.Equal(s.buf, m.path.paths) {
			continue // nothing new for this member
		}
		m.path.paths = append(m.path.paths[:0], s.buf...)
		_ = s.ep.Send(now, m.ID, netcore.ChannelGlobal, s.buf)
	}
}
