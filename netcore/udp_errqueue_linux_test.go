//go:build linux

package netcore

import (
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lagscope/lagscope/netcore/trace"
)

// The error queue where the kernel reports it, on real loopback sockets:
// a datagram to a port where nothing listens draws an ICMP port
// unreachable, which the kernel queues on the sender's error queue
// (IP_RECVERR) and reports by failing the socket's next send or read once.

// pollErr reports whether the socket has an error to report or an error
// queue that is not empty (poll's POLLERR), without reading either.
func pollErr(t *testing.T, tr *UDPTransport) bool {
	t.Helper()
	rc, err := tr.conn.SyscallConn()
	mustNil(t, err)
	var revents int16
	var perr error
	mustNil(t, rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		_, perr = unix.Poll(fds, 0)
		revents = fds[0].Revents
	}))
	mustNil(t, perr)
	return revents&unix.POLLERR != 0
}

// queueError draws a port unreachable onto tr's error queue and waits,
// boundedly, until the kernel has queued it.
func queueError(t *testing.T, tr *UDPTransport) {
	t.Helper()
	mustNil(t, tr.Send(closedPort(t), []byte("nobody listens")))
	for end := time.Now().Add(udpBound); !pollErr(t, tr); {
		if time.Now().After(end) {
			t.Fatalf("no ICMP error queued within %v", udpBound)
		}
		time.Sleep(time.Millisecond)
	}
}

// readN reads tr (ReadUntil) until n datagrams arrive, boundedly.
func readN(t *testing.T, tr *UDPTransport, n int) [][]byte {
	t.Helper()
	var got [][]byte
	for end := time.Now().Add(udpBound); len(got) < n; {
		if time.Now().After(end) {
			t.Fatalf("%d of %d datagrams arrived within %v", len(got), n, udpBound)
		}
		ds, err := tr.ReadUntil(end, nil)
		mustNil(t, err)
		for _, d := range ds {
			got = append(got, append([]byte(nil), d.Bytes()...))
			d.Release()
		}
	}
	return got
}

// A queued error fails the socket's next send, to any peer: the queue is
// drained there and the datagram sent at once — by Send, SendHopLimit and
// SendBatch alike.
func TestQueuedErrorFailsASendTheDatagramGoes(t *testing.T) {
	a, b := listenLoopback(t), listenLoopback(t)
	if a.errq == nil {
		t.Fatal("no error queue on a loopback socket")
	}
	for _, c := range []struct {
		name string
		send func() error
		sent int
	}{
		{"Send", func() error { return a.Send(b.LocalAddr(), []byte("game")) }, 1},
		{"SendHopLimit", func() error { return a.SendHopLimit(b.LocalAddr(), []byte("game"), 8) }, 1},
		{"SendBatch", func() error {
			if failed := a.SendBatch([]netip.AddrPort{b.LocalAddr(), b.LocalAddr()}, [][]byte{[]byte("game"), []byte("game")}); failed != 0 {
				t.Errorf("SendBatch: %d failed", failed)
			}
			return nil
		}, 2},
	} {
		queueError(t, a)
		before := a.Stats()
		if err := c.send(); err != nil {
			t.Fatalf("%s after a queued error: %v", c.name, err)
		}
		st := a.Stats()
		if st.Resent != before.Resent+1 || st.ErrQueueRead != before.ErrQueueRead+1 {
			t.Errorf("%s: resent %d, error-queue messages read %d; want one of each since (%d, %d)",
				c.name, st.Resent, st.ErrQueueRead, before.Resent, before.ErrQueueRead)
		}
		if pollErr(t, a) {
			t.Errorf("%s: the error queue still holds the entry after the failed send", c.name)
		}
		if st.SendErrors != before.SendErrors || st.Sent != before.Sent+uint64(c.sent) {
			t.Errorf("%s: sent %d, send errors %d; want %d more sent and no error", c.name, st.Sent-before.Sent, st.SendErrors-before.SendErrors, c.sent)
		}
		for _, got := range readN(t, b, c.sent) {
			if string(got) != "game" {
				t.Fatalf("%s: %q arrived, want the datagram the queued error failed", c.name, got)
			}
		}
	}
}

// A queued error fails the socket's next read: the read drains the queue
// in the same wake-up and returns the datagram waiting behind it.
func TestQueuedErrorFailsAReadTheDatagramComes(t *testing.T) {
	a, b := listenLoopback(t), listenLoopback(t)
	queueError(t, a)
	mustNil(t, b.Send(a.LocalAddr(), []byte("game")))
	ds, err := a.ReadUntil(time.Now().Add(udpBound), nil)
	mustNil(t, err)
	if len(ds) != 1 || string(ds[0].Bytes()) != "game" {
		t.Fatalf("one read after a queued error: %d datagrams, want the one waiting", len(ds))
	}
	ds[0].Release()
	st := a.Stats()
	if st.ReadErrors != 0 || st.ErrQueueRead != 1 || pollErr(t, a) {
		t.Fatalf("read errors %d, error-queue messages read %d, still queued %v; want 0, 1, false", st.ReadErrors, st.ErrQueueRead, pollErr(t, a))
	}
}

// Datagrams received with nothing reported draw no drain but the
// backstop's, one per errBackstop at most.
func TestNoDrainPerBatch(t *testing.T) {
	a, b := listenLoopback(t), listenLoopback(t)
	start := time.Now()
	const n = 300
	for range n {
		mustNil(t, b.Send(a.LocalAddr(), []byte("game")))
		readN(t, a, 1)
	}
	elapsed := time.Since(start)
	st := a.Stats()
	if most := uint64(elapsed/errBackstop) + 1; st.ErrQueueDrains > most {
		t.Fatalf("%d drains for %d datagrams in %v, want at most the backstop's %d", st.ErrQueueDrains, n, elapsed, most)
	}
	if st.Received != n {
		t.Fatalf("received %d, want %d", st.Received, n)
	}
}

// BenchmarkUDPReadUntilErrQueue is BenchmarkUDPReadUntil with an ICMP
// error queued before every datagram: the reader's socket draws a port
// unreachable, so each read fails once, drains the queue in the same
// wake-up and reads the datagram. Nothing allocates per datagram.
func BenchmarkUDPReadUntilErrQueue(b *testing.B) {
	src, dst := listenLoopback(b), listenLoopback(b)
	closed := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 9) // discard: nothing listens
	p := make([]byte, 64)
	to := dst.LocalAddr()
	ds := make([]*Datagram, 0, MaxReadBatch)
	until := time.Now().Add(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		if err := dst.Send(closed, p); err != nil {
			b.Fatal(err)
		}
		if err := src.Send(to, p); err != nil {
			b.Fatal(err)
		}
		for len(ds) == 0 {
			var err error
			if ds, err = dst.ReadUntil(until, ds); err != nil {
				b.Fatal(err)
			}
		}
		for _, d := range ds {
			d.Release()
		}
		ds = ds[:0]
	}
	st := dst.Stats()
	b.ReportMetric(float64(st.ErrQueueRead)/float64(b.N), "errq-msgs/op")
	b.ReportMetric(float64(st.ErrQueueDrains)/float64(b.N), "drains/op")
	b.ReportMetric(float64(st.Resent)/float64(b.N), "resent/op")
}

// BenchmarkProbeOnTheSocket is a probe's whole cost on a live socket: a
// probe record sent with a hop limit of its own (SendHopLimit) draws an
// ICMP answer (here the port unreachable of a loopback port where nothing
// listens: loopback has no router to answer), which fails the socket's
// next send once — that game datagram is sent again at once and the queue
// drained in the same call — and the drained answer is handed over
// (HopAnswers). Nothing allocates.
func BenchmarkProbeOnTheSocket(b *testing.B) {
	src, sink := listenLoopback(b), listenLoopback(b)
	closed := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 9) // discard: nothing listens
	probe := make([]byte, HeaderLen, probeDatagramLen)
	PutHeader(probe, Header{Token: token, Sender: peerA, Channel: ChannelControl})
	game := make([]byte, 64)
	to := sink.LocalAddr()
	var answers []HopAnswer
	num := uint32(0)
	pending := errPending(b, src)
	b.ReportAllocs()
	for b.Loop() {
		num++
		probe = trace.AppendProbe(probe[:HeaderLen], trace.Probe{Num: num, TTL: 64})
		if err := src.SendHopLimit(closed, probe, 64); err != nil {
			b.Fatal(err)
		}
		// The answer arrives within microseconds on loopback; the game's
		// next send meets it.
		for !pending() {
		}
		if err := src.Send(to, game); err != nil {
			b.Fatal(err)
		}
		answers = src.HopAnswers(answers[:0])
	}
	st := src.Stats()
	b.ReportMetric(float64(st.ErrQueueRead)/float64(b.N), "answers/op")
	b.ReportMetric(float64(st.Resent)/float64(b.N), "resent/op")
}

// errPending is pollErr for a benchmark, made once: whether the socket has
// an error to report. Asking allocates nothing.
func errPending(b *testing.B, tr *UDPTransport) func() bool {
	rc, err := tr.conn.SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	fds := make([]unix.PollFd, 1)
	poll := func(fd uintptr) {
		fds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		_, _ = unix.Poll(fds, 0)
	}
	return func() bool {
		_ = rc.Control(poll)
		return fds[0].Revents&unix.POLLERR != 0
	}
}
