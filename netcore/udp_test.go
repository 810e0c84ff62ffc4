package netcore

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/simnet"
	"go.uber.org/goleak"
)

// Both worlds satisfy the one interface the Endpoint sends through.
var (
	_ Transport = (*UDPTransport)(nil)
	_ Transport = (*simnet.Node)(nil)
)

// simnet restates Machine because it cannot import netcore; both directions
// of assignment compile only while the two method sets are the same.
var (
	_ simnet.Machine = Machine(nil)
	_ Machine        = simnet.Machine(nil)
)

// udpBound caps how long a loopback test waits for datagrams that should
// arrive within microseconds; reaching it is a failure, not a timing result.
const udpBound = 5 * time.Second

func listenLoopback(t testing.TB) *UDPTransport {
	t.Helper()
	tr, err := ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// receive takes n datagrams from tr's inbox, copying and releasing each.
func receive(t *testing.T, tr *UDPTransport, n int) (from []netip.AddrPort, data [][]byte) {
	t.Helper()
	deadline := time.After(udpBound)
	for range n {
		select {
		case d, ok := <-tr.Inbox():
			if !ok {
				t.Fatal("inbox closed early")
			}
			from = append(from, d.From)
			data = append(data, bytes.Clone(d.Bytes()))
			d.Release()
		case <-deadline:
			t.Fatalf("received %d of %d datagrams within %v", len(data), n, udpBound)
		}
	}
	return from, data
}

func TestUDPTransportCarriesDatagramsBothWays(t *testing.T) {
	a, b := listenLoopback(t), listenLoopback(t)
	if !a.LocalAddr().Addr().IsLoopback() || a.LocalAddr().Port() == 0 {
		t.Fatalf("LocalAddr = %v", a.LocalAddr())
	}
	var want [][]byte
	for i := range 50 {
		p := bytes.Repeat([]byte{byte(i)}, 1+i*28) // 1 .. 1373 bytes
		want = append(want, p)
		if err := a.Send(b.LocalAddr(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Send(b.LocalAddr(), make([]byte, MaxDatagram)); err != nil {
		t.Fatalf("a datagram of exactly MaxDatagram: %v", err)
	}
	want = append(want, make([]byte, MaxDatagram))
	from, got := receive(t, b, len(want))
	for _, f := range from {
		if f != a.LocalAddr() {
			t.Fatalf("datagram from %v, want %v", f, a.LocalAddr())
		}
	}
	sortBytes := func(s [][]byte) { slices.SortFunc(s, bytes.Compare) }
	sortBytes(want)
	sortBytes(got)
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatal("received datagrams differ from those sent")
	}

	if err := b.Send(a.LocalAddr(), []byte("back")); err != nil {
		t.Fatal(err)
	}
	if from, got := receive(t, a, 1); from[0] != b.LocalAddr() || string(got[0]) != "back" {
		t.Fatalf("got %q from %v", got[0], from[0])
	}
	if st := a.Stats(); st.Sent != 51 || st.Received != 1 {
		t.Fatalf("a's stats %+v", st)
	}
}

// Nothing of ours exceeds 1400 bytes (Q5): Send refuses to, and the
// reader drops and counts what arrives larger, truncated or not.
func TestUDPTransportOversizeDatagrams_Q5(t *testing.T) {
	tr := listenLoopback(t)
	if err := tr.Send(tr.LocalAddr(), make([]byte, MaxDatagram+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Send of %d bytes: %v", MaxDatagram+1, err)
	}
	raw, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	to := tr.LocalAddr()
	for _, size := range []int{MaxDatagram + 1, readBufferSize, 9000} {
		if _, err := raw.WriteToUDPAddrPort(make([]byte, size), to); err != nil {
			t.Fatal(err)
		}
	}
	// A well-formed datagram after them proves the reader kept going; it
	// reads in order, so by the time it arrives the others were judged.
	raw.WriteToUDPAddrPort([]byte("fine"), to)
	_, got := receive(t, tr, 1)
	if string(got[0]) != "fine" {
		t.Fatalf("first datagram through was %d bytes, want the 4-byte one", len(got[0]))
	}
	if st := tr.Stats(); st.Oversize != 3 || st.Received != 1 {
		t.Fatalf("stats %+v, want 3 oversize and 1 received", st)
	}
}

func TestUDPTransportCloseStopsTheReader(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, err := ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.Inbox() // the first Inbox starts the reader
	// Fill a's inbox past its depth so its reader is blocked handing over a
	// datagram when Close comes: Close must still stop it.
	// Sent in small batches: a burst of hundreds can overflow the kernel's
	// socket buffer before the reader gets to it.
	deadline := time.Now().Add(udpBound)
	for a.Stats().Received < inboxDepth+1 && time.Now().Before(deadline) {
		for range 8 {
			b.Send(a.LocalAddr(), []byte("x"))
		}
		time.Sleep(time.Millisecond) // letting the reader catch up, not measuring time
	}
	if got := a.Stats().Received; got < inboxDepth+1 {
		t.Fatalf("reader received %d, want it blocked on a full inbox", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	drained := 0
	for d := range a.Inbox() { // ends: the reader closed the inbox
		d.Release()
		drained++
	}
	if drained != inboxDepth { // the one the reader held when Close came is not delivered
		t.Fatalf("drained %d datagrams after Close, want the %d queued", drained, inboxDepth)
	}
	b.Close()
}

// A dual-stack socket reports IPv4 peers as IPv4-mapped IPv6 addresses; the
// transport hands them on as plain IPv4 so peers are known by one address.
func TestUDPTransportUnmapsIPv4Peers(t *testing.T) {
	dual, err := ListenUDP(":0")
	if err != nil {
		t.Fatal(err)
	}
	defer dual.Close()
	v4 := listenLoopback(t)
	to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), dual.LocalAddr().Port())
	if err := v4.Send(to, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	from, _ := receive(t, dual, 1)
	if from[0] != v4.LocalAddr() {
		t.Fatalf("From = %v, want %v", from[0], v4.LocalAddr())
	}
}

func TestListenUDPBadAddress(t *testing.T) {
	if _, err := ListenUDP("not an address"); err == nil {
		t.Fatal("ListenUDP accepted a bad address")
	}
}

// BenchmarkUDPSendReceive is one datagram through loopback: Send on one
// transport, the reader of the other, the inbox, Release. Nothing allocates
// per datagram in steady state.
func BenchmarkUDPSendReceive(b *testing.B) {
	for _, size := range []int{64, MaxDatagram} {
		b.Run(map[int]string{64: "64B", MaxDatagram: "1400B"}[size], func(b *testing.B) {
			src, dst := listenLoopback(b), listenLoopback(b)
			p := make([]byte, size)
			to := dst.LocalAddr()
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := src.Send(to, p); err != nil {
					b.Fatal(err)
				}
				(<-dst.Inbox()).Release()
			}
		})
	}
}

// BenchmarkUDPBurst is a burst of 63 datagrams — one from each other machine
// of a 64-player session — sent, then drained from the inbox; per datagram.
// Where reads take batches (recvmmsg) the reader wakes once per burst
// rather than once per datagram.
func BenchmarkUDPBurst(b *testing.B) {
	const burst = 63
	src, dst := listenLoopback(b), listenLoopback(b)
	p := make([]byte, 64)
	to := dst.LocalAddr()
	b.ReportAllocs()
	for b.Loop() {
		for range burst {
			if err := src.Send(to, p); err != nil {
				b.Fatal(err)
			}
		}
		for range burst {
			(<-dst.Inbox()).Release()
		}
	}
	st := dst.Stats()
	b.ReportMetric(float64(b.Elapsed())/float64(b.N*burst), "ns/datagram")
	b.ReportMetric(float64(st.Received)/float64(max(st.Reads, 1)), "datagrams/read")
}

// TestUDPSendBatch_Q5: SendBatch delivers every datagram of a
// batch to its own destination, in order, from an IPv4 socket and from a
// dual-stack one (IPv4 peers reached v4-mapped); one longer than
// MaxDatagram fails alone (Q5) and the rest still go.
func TestUDPSendBatch_Q5(t *testing.T) {
	for _, bind := range []string{"127.0.0.1:0", "[::]:0"} {
		t.Run(bind, func(t *testing.T) {
			src, err := ListenUDP(bind)
			if err != nil {
				t.Skipf("no socket on %s here: %v", bind, err)
			}
			defer src.Close()
			d1, d2 := listenLoopback(t), listenLoopback(t)
			to1 := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), d1.LocalAddr().Port())
			to2 := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), d2.LocalAddr().Port())
			const n = 100 // more than one system call's worth
			var tos []netip.AddrPort
			var ps [][]byte
			for i := range n {
				tos = append(tos, []netip.AddrPort{to1, to2}[i%2])
				ps = append(ps, []byte{byte(i)})
			}
			tos = append(tos, to1)
			ps = append(ps, make([]byte, MaxDatagram+1))
			if failed := src.SendBatch(tos, ps); failed != 1 {
				t.Fatalf("%d failed, want the oversize one", failed)
			}
			for k, d := range []*UDPTransport{d1, d2} {
				from, data := receive(t, d, n/2)
				for j := range data {
					if want := byte(2*j + k); len(data[j]) != 1 || data[j][0] != want || from[j].Port() != src.LocalAddr().Port() {
						t.Fatalf("receiver %d datagram %d: % x from %v, want %02x from port %d", k, j, data[j], from[j], want, src.LocalAddr().Port())
					}
				}
			}
			if st := src.Stats(); st.Sent != n || st.SendErrors != 0 {
				t.Fatalf("stats %+v: want %d sent (the oversize one is refused before the socket, as by Send)", st, n)
			}
		})
	}
}

// BenchmarkUDPSendBatch is a flush of 63 due datagrams (the demo's
// impaired sockets): one SendBatch, then the receiver drains them. Nothing
// allocates per datagram.
func BenchmarkUDPSendBatch(b *testing.B) {
	const burst = 63
	src, dst := listenLoopback(b), listenLoopback(b)
	tos := make([]netip.AddrPort, burst)
	ps := make([][]byte, burst)
	for i := range burst {
		tos[i], ps[i] = dst.LocalAddr(), make([]byte, 64)
	}
	b.ReportAllocs()
	for b.Loop() {
		if failed := src.SendBatch(tos, ps); failed != 0 {
			b.Fatal(failed)
		}
		for range burst {
			(<-dst.Inbox()).Release()
		}
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N*burst), "ns/datagram")
}
