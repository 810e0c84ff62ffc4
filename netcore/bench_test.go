package netcore

import (
	"fmt"
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
	a.AddLink(0, peerB, addrB)
	c.AddLink(0, peerA, addrA)
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
				for range 2 * SendWindow { // every slot gets its buffer once
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
