package impair

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Proxy is the live impairment proxy behind `lagscope impair`: it listens on
// one UDP address, forwards what a client sends there to a target, forwards
// the target's replies back to the client, and applies a Path to each
// direction on the wall clock.
//
// The client is whoever last sent to the listening address; a proxy serves
// one client at a time (a client that restarts on a new port takes over).
//
// A datagram's journey, in order:
//  1. a direction's reader goroutine reads it and asks the direction's Path
//     for the delays of its copies (none: dropped; two: duplicated);
//  2. each copy goes into the direction's delay line, due at arrival time
//     plus its delay;
//  3. the direction's writer goroutine sends each copy when it is due, to the
//     target (upstream) or to the client known at arrival time (downstream).
type Proxy struct {
	client *net.UDPConn   // the listening socket; talks to the client
	target *net.UDPConn   // talks to the target
	to     netip.AddrPort // where the proxy forwards
	start  time.Time

	up, down *direction

	mu       sync.Mutex
	peer     netip.AddrPort // the client, once one has sent something
	havePeer bool

	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// ProxyConfig says where a proxy listens, where it forwards, and what it does
// to each direction.
type ProxyConfig struct {
	Listen     string  // address the client sends to, "host:port"
	Target     string  // address datagrams are forwarded to
	Upstream   Profile // client → target
	Downstream Profile // target → client
	// Seed seeds the upstream path; the downstream path's seed is derived
	// from it, so one number reproduces both directions' decisions.
	Seed uint64
	// After and For time the impairment: datagrams pass untouched until
	// After has gone by since the proxy started, are impaired for For (0:
	// for good), then pass untouched again — a spike in a running game.
	After, For time.Duration
}

// DirectionStats is what one direction of a proxy did. The impairment
// counts are asked-for, not measured, loss (L7).
type DirectionStats struct {
	Stats            // offered, dropped, duplicated, reordered
	Forwarded uint64 // copies written to the far side
	// MaxLate is the most any copy left after its due time: how faithfully
	// the wall clock and the scheduler kept the asked-for delay. A large
	// value means the machine was too busy for the proxy's timing to hold.
	MaxLate     time.Duration
	Pending     uint64 // copies still waiting in the delay line
	WriteErrors uint64
	Ignored     uint64 // datagrams from a stranger (downstream) or before any client was known
}

// ProxyStats is both directions' counts.
type ProxyStats struct {
	Upstream, Downstream DirectionStats // client → target, target → client
}

// socketBuffer is the receive buffer the proxy asks for: a second of a busy
// session's datagrams rather than the system default of a few hundred.
const socketBuffer = 1 << 20

// maxUDP is the largest UDP payload; the proxy carries whatever it is given
// (pooled buffers hold a typical datagram and grow for the rare larger one).
const maxUDP = 65535

var proxyBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// downstreamSeed derives the second direction's seed; any fixed odd
// constant keeps the two streams apart.
const downstreamSeed = 0x9e3779b97f4a7c15

// ListenProxy binds the proxy's two sockets and starts forwarding. It fails
// on an invalid profile or an address that cannot be resolved or bound.
func ListenProxy(cfg ProxyConfig) (*Proxy, error) {
	for _, p := range []Profile{cfg.Upstream, cfg.Downstream} {
		if err := p.Validate(); err != nil {
			return nil, err
		}
	}
	ta, err := net.ResolveUDPAddr("udp", cfg.Target)
	if err != nil {
		return nil, err
	}
	to := ta.AddrPort()
	to = netip.AddrPortFrom(to.Addr().Unmap(), to.Port())
	if !to.Addr().IsValid() || to.Port() == 0 {
		return nil, errors.New("target needs a host and a port")
	}
	la, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	client, err := net.ListenUDP("udp", la)
	if err != nil {
		return nil, err
	}
	// Connected to the target: the kernel picks a concrete source address
	// (so ForwardAddr is what the target really sees) and filters out
	// datagrams from anyone else.
	target, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		client.Close()
		return nil, err
	}
	// Bursts (a reordered batch, a duplicated one) should queue in the
	// kernel rather than be dropped there; best effort, as the system caps it.
	client.SetReadBuffer(socketBuffer)
	target.SetReadBuffer(socketBuffer)
	up, down := cfg.Upstream, cfg.Downstream
	if cfg.After > 0 {
		up, down = Profile{}, Profile{}
	}
	r := &Proxy{
		client: client,
		target: target,
		to:     to,
		start:  time.Now(),
		up:     newDirection(NewPath(up, cfg.Seed)),
		down:   newDirection(NewPath(down, cfg.Seed^downstreamSeed)),
		done:   make(chan struct{}),
	}
	if cfg.After > 0 || cfg.For > 0 {
		r.wg.Add(1)
		go r.timed(cfg)
	}
	r.wg.Add(4)
	go r.readUpstream()
	go r.readDownstream()
	go r.write(r.up, func(b []byte, _ netip.AddrPort) error { _, err := r.target.Write(b); return err })
	go r.write(r.down, func(b []byte, to netip.AddrPort) error { _, err := r.client.WriteToUDPAddrPort(b, to); return err })
	return r, nil
}

// Addr is the address clients send to.
func (r *Proxy) Addr() netip.AddrPort {
	a := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// ForwardAddr is the address the target sees the client's datagrams come
// from: a peer behind the proxy is known to the target by this address.
func (r *Proxy) ForwardAddr() netip.AddrPort {
	a := r.target.LocalAddr().(*net.UDPAddr).AddrPort()
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// setProfiles changes both directions' profiles from the next datagram on,
// keeping their random streams (a scripted spike, say).
func (r *Proxy) setProfiles(upstream, downstream Profile) error {
	for _, p := range []Profile{upstream, downstream} {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	r.up.setProfile(upstream)
	r.down.setProfile(downstream)
	return nil
}

// timed switches the impairment on at cfg.After and off again cfg.For
// later (when For is set).
func (r *Proxy) timed(cfg ProxyConfig) {
	defer r.wg.Done()
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-r.done:
			return false
		}
	}
	if cfg.After > 0 {
		if !wait(cfg.After) {
			return
		}
		r.setProfiles(cfg.Upstream, cfg.Downstream) // validated by ListenProxy
	}
	if cfg.For > 0 {
		if !wait(cfg.For) {
			return
		}
		r.setProfiles(Profile{}, Profile{})
	}
}

// Stats reads both directions' counts; safe from any goroutine.
func (r *Proxy) Stats() ProxyStats {
	return ProxyStats{Upstream: r.up.stats(), Downstream: r.down.stats()}
}

// Close stops forwarding, closes both sockets and waits for the proxy's
// goroutines to exit. Copies still in a delay line are discarded (Stats
// counts them as Pending).
func (r *Proxy) Close() error {
	err := net.ErrClosed
	r.once.Do(func() {
		close(r.done)
		err = errors.Join(r.client.Close(), r.target.Close())
		r.wg.Wait()
	})
	return err
}

// now is the proxy's clock: monotonic time since it started.
func (r *Proxy) now() time.Duration { return time.Since(r.start) }

func (r *Proxy) readUpstream() {
	r.readFrom(r.client, func(from netip.AddrPort, b []byte) {
		r.mu.Lock()
		r.peer, r.havePeer = from, true
		r.mu.Unlock()
		r.up.offer(r.now(), r.to, b)
	})
}

func (r *Proxy) readDownstream() {
	r.readFrom(r.target, func(from netip.AddrPort, b []byte) {
		r.mu.Lock()
		peer, ok := r.peer, r.havePeer
		r.mu.Unlock()
		if from != r.to || !ok {
			r.down.ignore()
			return
		}
		r.down.offer(r.now(), peer, b)
	})
}

// readFrom is a direction's reader goroutine: it reads conn until conn
// closes and hands got each datagram with its sender's address (an
// IPv4-mapped one unmapped); b is valid only during the call.
func (r *Proxy) readFrom(conn *net.UDPConn, got func(from netip.AddrPort, b []byte)) {
	defer r.wg.Done()
	buf := make([]byte, maxUDP)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // transient (e.g. an ICMP error); the datagram is gone either way
		}
		got(netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), buf[:n])
	}
}

// write is a direction's writer goroutine: it sleeps until the earliest copy
// is due (or a new one arrives), then sends everything due.
func (r *Proxy) write(d *direction, send func(b []byte, to netip.AddrPort) error) {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var batch []lineItem
	for {
		d.mu.Lock()
		now := r.now()
		batch = batch[:0]
		for {
			it, ok := d.line.popDue(now)
			if !ok {
				break
			}
			batch = append(batch, it)
			d.maxLate = max(d.maxLate, now-it.due)
		}
		next, pending := d.line.next()
		d.mu.Unlock()

		var forwarded, failed uint64
		for i := range batch {
			if err := send(*batch[i].buf, batch[i].to); err != nil {
				failed++
			} else {
				forwarded++
			}
			proxyBufPool.Put(batch[i].buf)
			batch[i] = lineItem{}
		}
		if forwarded+failed > 0 {
			d.mu.Lock()
			d.forwarded += forwarded
			d.writeErrors += failed
			d.mu.Unlock()
		}

		if pending {
			timer.Reset(max(next-r.now(), 0))
			select {
			case <-timer.C:
			case <-d.wake:
			case <-r.done:
				return
			}
		} else {
			select {
			case <-d.wake:
			case <-r.done:
				return
			}
		}
	}
}

// direction is one way through the proxy: its Path and delay line, shared
// by its reader and writer goroutines under mu.
type direction struct {
	mu          sync.Mutex
	path        *Path
	line        delayLine
	delays      []time.Duration
	forwarded   uint64
	maxLate     time.Duration
	writeErrors uint64
	ignored     uint64
	wake        chan struct{} // capacity 1: "the delay line changed"
}

func newDirection(p *Path) *direction {
	return &direction{path: p, wake: make(chan struct{}, 1)}
}

// offer decides a datagram's fate and queues its copies for delivery to to.
func (d *direction) offer(now time.Duration, to netip.AddrPort, p []byte) {
	d.mu.Lock()
	d.delays = d.path.Decide(d.delays)
	for _, delay := range d.delays {
		b := proxyBufPool.Get().(*[]byte)
		*b = append((*b)[:0], p...)
		d.line.push(now+delay, to, b)
	}
	queued := len(d.delays) > 0
	d.mu.Unlock()
	if queued {
		select {
		case d.wake <- struct{}{}:
		default: // the writer is already due to look
		}
	}
}

func (d *direction) ignore() {
	d.mu.Lock()
	d.ignored++
	d.mu.Unlock()
}

func (d *direction) setProfile(p Profile) {
	d.mu.Lock()
	d.path.SetProfile(p)
	d.mu.Unlock()
}

func (d *direction) stats() DirectionStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return DirectionStats{
		Stats:       d.path.Stats(),
		Forwarded:   d.forwarded,
		MaxLate:     d.maxLate,
		Pending:     uint64(d.line.len()),
		WriteErrors: d.writeErrors,
		Ignored:     d.ignored,
	}
}
