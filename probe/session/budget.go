package session

import (
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/internal/tokenbucket"
	"github.com/lagscope/lagscope/netcore"
)

// The handshake reply budget. A Hello or a Response arrives from a source
// nobody has verified yet: its address may be spoofed, and whatever the
// host answers goes to a victim. So, before any work that costs (the
// cookie's HMAC) and before any reply:
//
//   - at most one reply per datagram, however many records it holds, and
//     never more bytes than that datagram (no amplification);
//   - a token bucket per source address and one for the whole host, on the
//     session's clock (the session is sans-I/O: it takes now, never reads
//     the wall clock). Past either, silence: the record is counted as
//     refused and dropped without an HMAC.
//
// WireGuard's cookie under load is the model: the cheapest check first, so
// a flood costs a map lookup per datagram and the players' frames keep
// being processed. Hellos and Responses draw on separate global buckets,
// so a flood of spoofed Hellos cannot starve a joiner that already holds a
// cookie. docs/security.md gives the numbers.
const (
	// helloRate and helloBurst bound the Challenges the host sends in
	// all: a LAN party of 64 joining at once sends 64 Hellos, and each
	// joiner retries every helloEvery.
	helloRate  = 256
	helloBurst = 256
	// responseRate and responseBurst bound the Responses the host checks
	// (an HMAC each) and answers, in all.
	responseRate  = 256
	responseBurst = 256
	// sourceRate and sourceBurst bound one address: a joiner sends one
	// Hello or Response per helloEvery; a few machines behind one NAT fit.
	sourceRate  = 8
	sourceBurst = 16
	// maxSources bounds the per-source table; a flood from random
	// addresses fills it, and then it starts over (the global buckets
	// still hold).
	maxSources = 1024
)

// bucket is a token bucket on the session's clock (internal/tokenbucket):
// the handshake budget counts replies in it, the relay a pair's bytes, the
// watcher budget (watchbudget.go) the bytes sent to watchers.
type bucket = tokenbucket.Bucket

// replyBudget is the host's state for the rules above.
type replyBudget struct {
	hello, response bucket
	sources         map[netip.Addr]bucket
	replied         bool // a handshake reply went out for the datagram being received
	rxLen           int  // its size

	Sent     uint64 // replies sent to unverified sources
	Silenced uint64 // records dropped by these rules
}

// datagram starts the rules for one received datagram.
func (b *replyBudget) datagram(n int) { b.rxLen, b.replied = n, false }

// admit decides whether a handshake record from from may be worked on and
// answered; it claims the datagram's one reply. response selects the
// Responses' global bucket.
func (b *replyBudget) admit(now time.Duration, from netip.AddrPort, response bool) bool {
	if b.replied {
		b.Silenced++
		return false
	}
	if b.sources == nil {
		// The zero replyBudget is ready: its buckets get their rates here.
		b.sources = make(map[netip.Addr]bucket)
		b.hello = bucket{Rate: helloRate, Burst: helloBurst}
		b.response = bucket{Rate: responseRate, Burst: responseBurst}
	}
	a := from.Addr().Unmap()
	if a.IsLoopback() {
		// A loopback source is a process on this machine: the kernel drops
		// loopback sources arriving from any other interface, so nobody
		// else can forge one, and a reply to it reaches no third party.
		// Every machine of a demo, or of a LAN party rehearsed on one box,
		// shares 127.0.0.1: at 8 a second, 64 joiners would take 16 s and
		// most would give up. The global buckets still hold.
		return b.global(now, response)
	}
	src, ok := b.sources[a]
	if !ok {
		if len(b.sources) >= maxSources {
			clear(b.sources)
		}
		src = bucket{Rate: sourceRate, Burst: sourceBurst}
	}
	allowed := src.Take(now, 1)
	b.sources[a] = src
	if !allowed {
		b.Silenced++
		return false
	}
	return b.global(now, response)
}

// global is admit's last step: the whole host's bucket for the record's
// kind; a record it admits claims the datagram's one reply.
func (b *replyBudget) global(now time.Duration, response bool) bool {
	g := &b.hello
	if response {
		g = &b.response
	}
	if !g.Take(now, 1) {
		b.Silenced++
		return false
	}
	b.replied = true
	return true
}

// fits reports whether a reply of n bytes is no larger than the datagram
// that caused it.
func (b *replyBudget) fits(n int) bool { return n <= b.rxLen }

// replySize is the size of a handshake datagram carrying record, as the
// endpoint sends it.
func (s *Session) replySize(record []byte) int {
	n := netcore.HeaderLen + len(record)
	if len(s.cfg.Key) > 0 {
		n += netcore.SealOverhead
	}
	return n
}

// replyBudget reports the handshake replies the host sent to unverified
// sources and the records its budget silenced.
func (s *Session) replyBudget() (sent, silenced uint64) { return s.budget.Sent, s.budget.Silenced }
