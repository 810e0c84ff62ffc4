package netcore

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// benchPair is two endpoints wired through sinks: what one sends, the
// benchmark hands to the other by hand, so only endpoint work is measured.
func benchPair(b *testing.B, key []byte) (a, c *Endpoint, at, ct *sink) {
	b.Helper()
	at, ct = &sink{}, &sink{}
	nop := func(time.Duration, PeerID, Channel, []byte) {}
	var err error
	if a, err = NewEndpoint(Config{Self: peerA, Session: token, Key: key}, at, nop); err != nil {
		b.Fatal(err)
	}
	if c, err = NewEndpoint(Config{Self: peerB, Session: token, Key: key}, ct, nop); err != nil {
		b.Fatal(err)
	}
	a.AddLink(0, peerB, addrB, PublicKey{})
	c.AddLink(0, peerA, addrA, PublicKey{})
	return a, c, at, ct
}

func keyName(key []byte) string {
	if key == nil {
		return "plain"
	}
	return "sealed"
}

// BenchmarkReliableSendAndAck: send one reliable datagram, the peer
// receives it and acks at once, the ack frees the packet and gives an RTT
// sample (T1, T2, L6).
func BenchmarkReliableSendAndAck(b *testing.B) {
	for _, key := range [][]byte{nil, []byte("pre-shared key")} {
		for _, size := range []int{16, 512} {
			b.Run(fmt.Sprintf("%s/%dB", keyName(key), size), func(b *testing.B) {
				a, c, at, ct := benchPair(b, key)
				msg := make([]byte, size)
				now := time.Duration(0)
				for range 2 * sendWindow { // every slot gets its buffer once
					now += time.Millisecond
					a.Send(now, peerB, ChannelReliable, msg)
					c.Receive(now, addrA, at.last)
					a.Receive(now, addrB, ct.last)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					now += time.Microsecond
					a.Send(now, peerB, ChannelReliable, msg)
					c.Receive(now, addrA, at.last)
					a.Receive(now, addrB, ct.last)
				}
				b.StopTimer()
				if st, _ := a.Stats(peerB); st.InFlight != 0 || st.Estimate != Measured {
					b.Fatalf("in flight %d, %v", st.InFlight, st.Estimate)
				}
			})
		}
	}
}

// BenchmarkReceiveNumbered: receive one numbered (unreliable) datagram:
// decode, check, loss window, deliver (L2, L6).
func BenchmarkReceiveNumbered(b *testing.B) {
	for _, key := range [][]byte{nil, []byte("pre-shared key")} {
		b.Run(keyName(key), func(b *testing.B) {
			a, c, at, _ := benchPair(b, key)
			msg := make([]byte, 64)
			// Pre-seal a ring of datagrams; sealed ones must be fresh for
			// the replay window, so the ring is walked once per counter
			// range and refilled outside the timer.
			const ring = 512
			ds := make([][]byte, ring)
			fill := func() {
				for i := range ds {
					a.Send(0, peerB, ChannelUnreliable, msg)
					ds[i] = append(ds[i][:0], at.last...)
				}
			}
			fill()
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			now := time.Duration(0)
			for b.Loop() {
				if i == ring {
					b.StopTimer()
					fill()
					i = 0
					b.StartTimer()
				}
				now += time.Microsecond
				c.Receive(now, addrA, ds[i])
				i++
			}
			b.StopTimer()
			if r := c.Rejected(); r != (RejectCounts{}) {
				b.Fatalf("rejected %+v", r)
			}
		})
	}
}

// benchLinks is one endpoint (PeerID 1) linked to n peers, each with
// inFlight reliable messages sent and not yet acked, as in a running game
// where every link has a few frame packets on the way.
type benchLinks struct {
	ep    *Endpoint
	addrs []netip.AddrPort
	next  []uint32 // per peer: the oldest packet not yet acked
	acks  [][]byte // scratch: one ack datagram per peer
	msg   []byte
}

func newBenchLinks(b *testing.B, n, inFlight int) *benchLinks {
	b.Helper()
	nop := func(time.Duration, PeerID, Channel, []byte) {}
	ep, err := NewEndpoint(Config{Self: 1, Session: token}, &sink{}, nop)
	if err != nil {
		b.Fatal(err)
	}
	bl := &benchLinks{ep: ep, next: make([]uint32, n), acks: make([][]byte, n), msg: make([]byte, 32)}
	for i := range n {
		addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 7373)
		bl.addrs = append(bl.addrs, addr)
		// Links open at different times, as players join one by one.
		if err := ep.AddLink(time.Duration(i)*time.Millisecond, PeerID(i+2), addr, PublicKey{}); err != nil {
			b.Fatal(err)
		}
		for range inFlight {
			ep.Send(time.Duration(i)*time.Millisecond, PeerID(i+2), ChannelReliable, bl.msg)
		}
	}
	return bl
}

// ackOne acks the oldest packet in flight on link i and sends a new one,
// so the number in flight stays the same: the steady state of a game.
func (bl *benchLinks) ackOne(now time.Duration, i int) {
	pk := bl.next[i]
	bl.next[i]++
	d := bl.acks[i][:0]
	d = append(d, make([]byte, HeaderLen)...)
	PutHeader(d, Header{Token: token, Sender: PeerID(i + 2), Channel: ChannelControl})
	d = appendAck1(d, ChannelReliable, 0, pk)
	bl.acks[i] = d
	bl.ep.Receive(now, bl.addrs[i], d)
	bl.ep.Send(now, PeerID(i+2), ChannelReliable, bl.msg)
}

// BenchmarkNextDeadline measures when-to-wake-up at 8 and 64 links (a
// 64-player session: 63 links). idle: called again with nothing changed
// (every wake-up that found nothing to do, every datagram that moved no
// timer); afterAck: one ack arrives on one link and one packet goes out,
// then the deadline is asked for — what a driver does per datagram;
// ackOnly: the same without the deadline, so afterAck − ackOnly is what
// the deadline costs there.
func BenchmarkNextDeadline(b *testing.B) {
	for _, n := range []int{8, 64} {
		for _, inFlight := range []int{4, 64} {
			b.Run(fmt.Sprintf("idle/links=%d/inflight=%d", n, inFlight), func(b *testing.B) {
				bl := newBenchLinks(b, n, inFlight)
				b.ReportAllocs()
				for b.Loop() {
					if _, ok := bl.ep.NextDeadline(); !ok {
						b.Fatal("no deadline")
					}
				}
			})
			// The same work without asking for the deadline: what the
			// ack and the send cost on their own.
			b.Run(fmt.Sprintf("ackOnly/links=%d/inflight=%d", n, inFlight), func(b *testing.B) {
				bl := newBenchLinks(b, n, inFlight)
				for range 2 * sendWindow {
					for i := range n {
						bl.ackOne(time.Millisecond, i)
					}
				}
				b.ReportAllocs()
				now, i := 2*time.Millisecond, 0
				for b.Loop() {
					now += time.Microsecond
					bl.ackOne(now, i)
					i = (i + 1) % n
				}
			})
			b.Run(fmt.Sprintf("afterAck/links=%d/inflight=%d", n, inFlight), func(b *testing.B) {
				bl := newBenchLinks(b, n, inFlight)
				for range 2 * sendWindow { // every buffer and slot grows once
					for i := range n {
						bl.ackOne(time.Millisecond, i)
					}
				}
				b.ReportAllocs()
				now, i := 2*time.Millisecond, 0
				for b.Loop() {
					now += time.Microsecond
					bl.ackOne(now, i)
					if _, ok := bl.ep.NextDeadline(); !ok {
						b.Fatal("no deadline")
					}
					i = (i + 1) % n
				}
			})
		}
	}
}

// BenchmarkIdleWakeUps runs ten virtual seconds of an endpoint whose links
// carry nothing but their LinkReports (L4), waking at every deadline, and
// reports the wake-ups per second.
func BenchmarkIdleWakeUps(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("links=%d", n), func(b *testing.B) {
			bl := newBenchLinks(b, n, 0)
			b.ReportAllocs()
			wakes := 0
			start := time.Second
			for b.Loop() {
				for end := start + 10*time.Second; ; {
					d, ok := bl.ep.NextDeadline()
					if !ok || d > end {
						break
					}
					bl.ep.Tick(d)
					wakes++
				}
				start += 10 * time.Second
			}
			b.ReportMetric(float64(wakes)/(10*float64(b.N)), "wakeups/s")
		})
	}
}

// BenchmarkKeepAlive: one keep-alive that wants a reply, the peer delivers
// it and replies, the reply clears the silence (L2, T11, L6).
func BenchmarkKeepAlive(b *testing.B) {
	for _, key := range [][]byte{nil, []byte("pre-shared key")} {
		b.Run(keyName(key), func(b *testing.B) {
			a, c, at, ct := benchPair(b, key)
			msg := []byte{0x24}
			now := time.Duration(0)
			b.ReportAllocs()
			for b.Loop() {
				now += time.Microsecond
				a.SendUnnumbered(now, peerB, msg, true)
				c.Receive(now, addrA, at.last)
				a.Receive(now, addrB, ct.last)
			}
			b.StopTimer()
			if st, _ := a.Stats(peerB); st.Loss != (Loss{}) || a.links[peerB].alive.waiting {
				b.Fatalf("loss %+v, waiting %v", st.Loss, a.links[peerB].alive.waiting)
			}
		})
	}
}
