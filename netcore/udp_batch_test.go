//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || loong64)

package netcore

import (
	"net/netip"
	"testing"
	"time"
)

// TestUDPReadsTakeBatches: datagrams waiting in the socket are
// taken many per read (recvmmsg), each whole, from its own sender, in
// order, with its own kernel stamp.
func TestUDPReadsTakeBatches(t *testing.T) {
	a, c, b := listenLoopback(t), listenLoopback(t), listenLoopback(t)
	if !b.stamped {
		t.Skip("the kernel refused SO_TIMESTAMPNS: reads stay one datagram each, by design")
	}
	// More than the inbox holds, with nobody draining it: the reader (the
	// first Inbox starts it) blocks on a full inbox and the rest wait in
	// the socket buffer.
	b.Inbox()
	const n = 3 * inboxDepth
	for i := range n {
		src := a
		if i%2 == 1 {
			src = c
		}
		if err := src.Send(b.LocalAddr(), []byte{byte(i), byte(i >> 8)}); err != nil {
			t.Fatal(err)
		}
	}
	const clockSlack = 2 * time.Millisecond
	deadline := time.After(udpBound)
	var last time.Time
	for i := range n {
		select {
		case d := <-b.Inbox():
			got := int(d.Bytes()[0]) | int(d.Bytes()[1])<<8
			want := a.LocalAddr()
			if i%2 == 1 {
				want = c.LocalAddr()
			}
			if got != i || len(d.Bytes()) != 2 || d.From != netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), want.Port()) {
				t.Fatalf("datagram %d: %d bytes, number %d, from %v (want %v)", i, len(d.Bytes()), got, d.From, want)
			}
			// Each read maps its kernel stamps (wall clock) onto the
			// monotonic clock through one pair of readings, so two reads'
			// mappings differ by however far the wall clock moved against
			// the monotonic one in between (a VM's clock is corrected in
			// steps): a later batch may read up to clockSlack earlier.
			if d.At.Before(last.Add(-clockSlack)) {
				t.Fatalf("datagram %d arrived at %v, before the one before it (%v)", i, d.At, last)
			}
			last = d.At
			d.Release()
		case <-deadline:
			t.Fatalf("received %d of %d", i, n)
		}
	}
	st := b.Stats()
	if st.Received != n || st.KernelStamped != n {
		t.Fatalf("stats %+v", st)
	}
	if st.Reads*2 > st.Received {
		t.Errorf("%d reads for %d datagrams: the waiting ones were not taken in batches", st.Reads, st.Received)
	}
	t.Logf("%d datagrams in %d reads", st.Received, st.Reads)
}

// TestUDPSendBatchUsesSendmmsg: on 64-bit Linux a batch of 100 takes a
// few system calls, not 100.
func TestUDPSendBatchUsesSendmmsg(t *testing.T) {
	src, dst := listenLoopback(t), listenLoopback(t)
	var tos []netip.AddrPort
	var ps [][]byte
	for i := range 100 {
		tos = append(tos, dst.LocalAddr())
		ps = append(ps, []byte{byte(i)})
	}
	if failed := src.SendBatch(tos, ps); failed != 0 {
		t.Fatalf("%d failed", failed)
	}
	if st := src.Stats(); st.Sent != 100 || st.Batches == 0 || st.Batches > 100/readBatch+1 {
		t.Fatalf("stats %+v: want 100 sent in at most %d batches", st, 100/readBatch+1)
	}
	for i := range 100 {
		select {
		case d := <-dst.Inbox():
			if d.Bytes()[0] != byte(i) {
				t.Fatalf("datagram %d arrived as %d", d.Bytes()[0], i)
			}
			d.Release()
		case <-time.After(udpBound):
			t.Fatalf("received %d of 100", i)
		}
	}
}
