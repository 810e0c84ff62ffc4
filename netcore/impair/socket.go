package impair

import (
	"net/netip"
	"time"
)

// Socket is an access link in front of a real socket: Send decides each
// datagram's fate on the path to its destination (a seeded Path, set by the
// Script) and holds it in the delay line; the owner flushes what is due.
// It is not safe for concurrent use: everything happens on the owner's
// goroutine (the demo's drivers), so it needs no lock.
//
// It takes what to do as data (a Script) and never reaches back into its
// owner, so the same script can be read by a test on virtual time.
type Socket struct {
	out        Sender
	script     Script
	paths      map[netip.AddrPort]*socketPath
	line       delayLine
	pools      [][]*[]byte // free buffers by size class (buffer)
	dst        []time.Duration
	sendErrors uint64 // held datagrams the real socket refused when they came due
	// A flush's due datagrams, for a batchSender.
	batchTo  []netip.AddrPort
	batchP   [][]byte
	batchBuf []*[]byte
}

// Sender is the real socket under a Socket (*netcore.UDPTransport is one).
type Sender interface {
	Send(to netip.AddrPort, p []byte) error
}

// batchSender is a Sender that writes several datagrams in one call
// (*netcore.UDPTransport: sendmmsg on Linux) and says how many failed.
// Flush hands it every datagram that came due together.
type batchSender interface {
	SendBatch(to []netip.AddrPort, ps [][]byte) (failed int)
}

// Script is what a Socket's link does, as data.
type Script struct {
	// Start is the script's zero on the wall clock: a datagram sent at
	// wall time t is decided at t - Start.
	Start time.Time
	// Changes are the times at which some path's profile changes; a path
	// re-reads its profile from Path the first time it sends after one.
	Changes []time.Duration
	// Path is the profile of the path to `to` at now.
	Path func(to netip.AddrPort, now time.Duration) Profile
	// Seed is the seed of the path to `to`'s random stream, read once,
	// when the path is first used.
	Seed func(to netip.AddrPort) uint64
	// BufferSize is the capacity of a pooled datagram buffer (the largest
	// datagram the owner sends); bigger datagrams get their own, and ones
	// of at most smallBuffer bytes are held in a pool of smaller buffers.
	BufferSize int
}

// flushSlack sends datagrams due within this much together: finer than
// the timers' own precision, and it saves a wake-up per datagram.
const flushSlack = 200 * time.Microsecond

// NewSocket puts script's link in front of out.
func NewSocket(out Sender, script Script) *Socket {
	return &Socket{out: out, script: script, paths: map[netip.AddrPort]*socketPath{}}
}

// socketPath is one path from the socket, with the script's epoch it was
// last set for.
type socketPath struct {
	path  *Path
	epoch int
}

// epoch counts the script's changes that have happened by now.
func (s *Socket) epoch(now time.Duration) int {
	n := 0
	for _, at := range s.script.Changes {
		if now >= at {
			n++
		}
	}
	return n
}

// Send holds a copy of p (the caller reuses it) for each copy the path to
// `to` delivers, at the script's time of the wall clock now.
func (s *Socket) Send(to netip.AddrPort, p []byte) error {
	s.sendAt(time.Since(s.script.Start), to, p)
	return nil
}

// sendAt is Send at the script's time now.
func (s *Socket) sendAt(now time.Duration, to netip.AddrPort, p []byte) {
	pp := s.paths[to]
	if pp == nil {
		pp = &socketPath{epoch: -1}
		s.paths[to] = pp
	}
	if e := s.epoch(now); e != pp.epoch {
		// The script moved on: the path takes its new profile and keeps
		// its random stream.
		pp.epoch = e
		prof := s.script.Path(to, now)
		if pp.path == nil {
			pp.path = NewPath(prof, s.script.Seed(to))
		} else {
			pp.path.SetProfile(prof)
		}
	}
	s.dst = pp.path.Decide(s.dst[:0])
	for _, delay := range s.dst {
		b := s.buffer(len(p))
		*b = append((*b)[:0], p...)
		s.line.push(now+delay, to, b)
	}
}

// Buffers come in size classes: powers of two from minClass below
// BufferSize, then BufferSize. A busy session's datagrams are mostly frame
// packets and acks of well under 128 bytes, and a stalled machine's status
// packets a few hundred; holding each in a buffer of BufferSize (1400)
// made the delay lines of a 64-player demo hold 19.5 MB, and one small
// class of 256 still 13 MB.
const minClass = 64

// class is the index and capacity of the smallest class that holds n
// bytes; above BufferSize, the BufferSize class (append grows the buffer,
// which then goes back to no pool).
func (s *Socket) class(n int) (int, int) {
	i, size := 0, minClass
	for size < n && size < s.script.BufferSize {
		i, size = i+1, size*2
	}
	return i, min(size, max(s.script.BufferSize, minClass))
}

// buffer takes a pooled buffer for a datagram of n bytes.
func (s *Socket) buffer(n int) *[]byte {
	i, size := s.class(n)
	if i < len(s.pools) {
		if pool := s.pools[i]; len(pool) > 0 {
			b := pool[len(pool)-1]
			s.pools[i] = pool[:len(pool)-1]
			return b
		}
	}
	b := make([]byte, 0, size)
	return &b
}

// release returns a buffer to the pool of its class; one that grew past
// its class (a datagram above BufferSize) is left to the collector.
func (s *Socket) release(b *[]byte) {
	i, size := s.class(cap(*b))
	if size != cap(*b) {
		return
	}
	for len(s.pools) <= i {
		s.pools = append(s.pools, nil)
	}
	s.pools[i] = append(s.pools[i], b)
}

// Flush sends every datagram due by now (the script's time): in one batch
// when the real socket takes batches, each alone otherwise.
func (s *Socket) Flush(now time.Duration) {
	bs, batched := s.out.(batchSender)
	for {
		it, ok := s.line.popDue(now + flushSlack)
		if !ok {
			break
		}
		if !batched {
			if err := s.out.Send(it.to, *it.buf); err != nil {
				s.sendErrors++
			}
			s.release(it.buf)
			continue
		}
		s.batchTo = append(s.batchTo, it.to)
		s.batchP = append(s.batchP, *it.buf)
		s.batchBuf = append(s.batchBuf, it.buf)
	}
	if len(s.batchP) == 0 {
		return
	}
	s.sendErrors += uint64(bs.SendBatch(s.batchTo, s.batchP))
	for _, b := range s.batchBuf {
		s.release(b)
	}
	clear(s.batchP)
	clear(s.batchBuf)
	s.batchTo, s.batchP, s.batchBuf = s.batchTo[:0], s.batchP[:0], s.batchBuf[:0]
}

// NextDue is the due time of the earliest held datagram.
func (s *Socket) NextDue() (time.Duration, bool) { return s.line.next() }

// held is how many datagrams wait in the delay line.
func (s *Socket) held() int { return s.line.len() }

// Drop forgets every held datagram (the real socket is closing).
func (s *Socket) Drop() {
	s.line.drop(s.release)
}
