package probe

import (
	"encoding/binary"
	"errors"
	"math"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
)

// Sharing the hop traces. A trace from one machine sees one direction of
// one path; the diagnosis tells whose home a delay starts in, and which hop
// several players' paths share, from all players' traces together
// (docs/diagnosis.md). So each player sends the others, and the watchers,
// a summary of each trace it runs: where its delay starts and the hops'
// addresses. The summaries go unreliably, one at a time, off the frame
// packets' path, and all of them together stay within pathShareRate bytes
// a second per machine in wire bytes: a summary's size times its
// recipients spreads the next one out as far as it must. A lost summary
// is replaced by the next one for the same link.
//
// A summary (kindPathSummary) is, in order, little-endian:
//
//	kind u8 | to u16 (the traced peer's ID) | delay ttl u8 (0: none) |
//	delay link u8 | delay added u32 (µs) | hops u8 (≤ maxTrace; the
//	top bit set: the peer answered, the trace is complete) |
//	per hop: family u8 (0 never answered, 4, 6) and 4 or 16 address bytes
//
// and never more than pathSummaryMax bytes: past it the hops after the one
// delay starts at are left out.
const (
	kindPathSummary uint8 = 5

	pathShareRate  = 200 // bytes a second per machine, every recipient counted
	pathShareEvery = 2 * time.Second
	pathSummaryMax = 240
	// pathSummaryAge drops a shared summary that has not been renewed: its
	// sender stopped tracing that link, or went.
	pathSummaryAge = 30 * time.Second
	maxTrace       = 30
)

var errPathSummary = errors.New("probe: bad path summary")

// completeBit marks, in a summary's hop count, a trace the peer answered.
const completeBit = 0x80

// pathSummary is one machine's summary of a trace it runs.
type pathSummary struct {
	to       netcore.PeerID
	delay    *diagnosis.TraceStart
	hops     []netip.Addr
	complete bool // the peer answered: the trace covers the whole path
}

func (s *pathSummary) appendTo(b []byte) []byte {
	start := len(b)
	b = append(b, kindPathSummary)
	b = binary.LittleEndian.AppendUint16(b, uint16(s.to))
	var ttl, link uint8
	var added uint32
	if d := s.delay; d != nil && d.TTL > 0 && d.TTL <= maxTrace && d.Link.Code() != 0 {
		ttl, link = uint8(d.TTL), d.Link.Code()
		if d.AddedMs > 0 { // NaN and negatives write 0
			added = uint32(min(math.Round(d.AddedMs*1000), float64(^uint32(0))))
		}
	}
	b = append(b, ttl, link)
	b = binary.LittleEndian.AppendUint32(b, added)
	count := len(b)
	b = append(b, 0)
	n := 0
	for i, a := range s.hops {
		if i >= maxTrace {
			break
		}
		size := 1
		switch {
		case !a.IsValid():
		case a.Is4() || a.Is4In6():
			size += 4
		default:
			size += 16
		}
		if len(b)-start+size > pathSummaryMax && i >= int(ttl) {
			break
		}
		switch size {
		case 1:
			b = append(b, 0)
		case 5:
			v4 := a.Unmap().As4()
			b = append(append(b, 4), v4[:]...)
		default:
			v6 := a.As16()
			b = append(append(b, 6), v6[:]...)
		}
		n++
	}
	b[count] = uint8(n)
	if s.complete {
		b[count] |= completeBit
	}
	return b
}

func decodePathSummary(b []byte) (pathSummary, error) {
	var s pathSummary
	if len(b) < 10 || b[0] != kindPathSummary || len(b) > pathSummaryMax+16 {
		return s, errPathSummary
	}
	s.to = netcore.PeerID(binary.LittleEndian.Uint16(b[1:]))
	ttl, link := b[3], b[4]
	added := binary.LittleEndian.Uint32(b[5:])
	s.complete = b[9]&completeBit != 0
	n := int(b[9] &^ completeBit)
	hopLink, linkOK := vocab.HopLinkOf(link)
	if ttl > maxTrace || n > maxTrace || (link != 0 && !linkOK) || (ttl == 0) != (link == 0) {
		return s, errPathSummary
	}
	if ttl > 0 {
		s.delay = &diagnosis.TraceStart{TTL: int(ttl), Link: hopLink, AddedMs: float64(added) / 1000}
	}
	b = b[10:]
	for range n {
		if len(b) == 0 {
			return s, errPathSummary
		}
		switch b[0] {
		case 0:
			s.hops, b = append(s.hops, netip.Addr{}), b[1:]
		case 4:
			if len(b) < 5 {
				return s, errPathSummary
			}
			s.hops, b = append(s.hops, netip.AddrFrom4([4]byte(b[1:5]))), b[5:]
		case 6:
			if len(b) < 17 {
				return s, errPathSummary
			}
			s.hops, b = append(s.hops, netip.AddrFrom16([16]byte(b[1:17])).Unmap()), b[17:]
		default:
			return s, errPathSummary
		}
	}
	if len(b) != 0 {
		return s, errPathSummary
	}
	return s, nil
}

// pathKey is a shared summary's pair: who traced, toward whom.
type pathKey struct{ from, to netcore.PeerID }

type sharedPath struct {
	pathSummary
	at time.Duration
}

// pathShare is this machine's side of the sharing: when its next summary
// may go, which of its links goes next, what the last summary of each
// said of where its delay starts, and the summaries others sent.
type pathShare struct {
	next   time.Duration
	turn   int
	said   map[netcore.PeerID]delaySaid
	in     map[pathKey]sharedPath
	buf    []byte
	sent   uint64 // wire bytes of summaries sent, every recipient counted
	bad    uint64 // summaries that did not decode
	shared uint64 // summaries taken in
}

// delaySaid is where a summary said a link's delay starts (ttl 0: none).
type delaySaid struct {
	ttl  int
	link vocab.HopLink
}

func saidOf(d *diagnosis.TraceStart) delaySaid {
	if d == nil {
		return delaySaid{}
	}
	return delaySaid{d.TTL, d.Link}
}

// sharePaths sends the summary of the next traced link, when one is due,
// to every other machine of the session: a link whose delay start moved
// since its last summary first (an incident takes its where from it),
// else the next in turn. A path of one hop tells nothing and is not
// shared.
func (p *Peer) sharePaths(now time.Duration) {
	ps := &p.paths
	if now < ps.next || p.self.Observer || !p.started {
		return
	}
	ps.next = now + pathShareEvery
	var links []*player
	var moved *player
	for _, pl := range p.players {
		if pl == p.self || pl.removed || pl.Observer {
			continue
		}
		if r, ok := p.ep.Path(pl.ID); ok && !r.OneHop && len(r.Hops) > 0 {
			links = append(links, pl)
			var d *diagnosis.TraceStart
			if r.DelayStarts != nil {
				d = &diagnosis.TraceStart{TTL: r.DelayStarts.TTL, Link: r.DelayStarts.Link}
			}
			if said, ok := ps.said[pl.ID]; moved == nil && ok && said != saidOf(d) {
				moved = pl
			}
		}
	}
	if len(links) == 0 {
		return
	}
	pl := moved
	if pl == nil {
		pl = links[ps.turn%len(links)]
		ps.turn++
	}
	s := pathSummary{to: pl.ID}
	s.delay, s.hops, s.complete, _ = traceOf(p.ep, pl.ID)
	if ps.said == nil {
		ps.said = map[netcore.PeerID]delaySaid{}
	}
	ps.said[pl.ID] = saidOf(s.delay)
	ps.buf = s.appendTo(ps.buf[:0])
	recipients := 0
	for _, to := range p.players {
		if to == p.self || to.removed {
			continue
		}
		if to.Observer && p.tm.gate != nil && !p.tm.gate(now, to.ID, len(ps.buf), false, false) {
			continue
		}
		if p.ep.Send(now, to.ID, netcore.ChannelUnreliable, ps.buf) == nil {
			recipients++
		}
	}
	// Within the rate: the bytes just sent, spread over as long as they
	// take at pathShareRate.
	cost := len(ps.buf) * recipients
	ps.sent += uint64(cost)
	ps.next = now + max(pathShareEvery, time.Duration(cost)*time.Second/pathShareRate)
}

// traceOf is what the diagnosis takes of the trace of the link to id:
// where its delay starts, its hops' addresses (the zero Addr for a hop
// that never answered) and whether the peer answered; false when the link
// is not traced.
func traceOf(ep *netcore.Endpoint, id netcore.PeerID) (delay *diagnosis.TraceStart, hops []netip.Addr, complete, ok bool) {
	r, ok := ep.Path(id)
	if !ok {
		return nil, nil, false, false
	}
	if d := r.DelayStarts; d != nil {
		delay = &diagnosis.TraceStart{TTL: d.TTL, Link: d.Link, AddedMs: units.Millis(d.Added)}
	}
	hops = make([]netip.Addr, len(r.Hops))
	for i, h := range r.Hops {
		if h.Addr != nil {
			hops[i] = *h.Addr
		}
	}
	return delay, hops, r.Complete, true
}

// takePathSummary keeps a summary another machine sent of a trace it
// runs. It reports whether msg was one.
func (p *Peer) takePathSummary(now time.Duration, from *player, msg []byte) bool {
	if len(msg) == 0 || msg[0] != kindPathSummary {
		return false
	}
	s, err := decodePathSummary(msg)
	if err != nil || from.Observer {
		p.paths.bad++
		return true
	}
	if p.paths.in == nil {
		p.paths.in = map[pathKey]sharedPath{}
	}
	if _, ok := p.byID[s.to]; !ok && len(p.paths.in) >= 4*len(p.players)*len(p.players) {
		return true // toward nobody this machine knows, and the table is full
	}
	p.paths.in[pathKey{from.ID, s.to}] = sharedPath{s, now}
	p.paths.shared++
	return true
}

// sharedTraces appends to dst the summaries others shared that still
// stand, as the diagnosis takes them: house indices of the matrix m.
func (p *Peer) sharedTraces(now time.Duration, m *feed.MatrixView, dst []diagnosis.Trace) []diagnosis.Trace {
	for k, s := range p.paths.in {
		from, to := p.byID[k.from], p.byID[k.to]
		if now-s.at > pathSummaryAge || from == nil || to == nil || from.removed || to.removed {
			delete(p.paths.in, k)
			continue
		}
		a, b := m.Index(from.Name), m.Index(to.Name)
		if a < 0 || b < 0 || a == b {
			continue
		}
		dst = append(dst, diagnosis.Trace{From: a, To: b, Delay: s.delay, Hops: s.hops, Complete: s.complete})
	}
	return dst
}

// SharedPathBytes is the wire bytes of the trace summaries this machine
// has sent, every recipient counted.
func (p *Peer) SharedPathBytes() uint64 { return p.paths.sent }
