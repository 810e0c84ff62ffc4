//go:build linux

package netcore

import (
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/trace"
)

// Tracing on real sockets: over loopback here (any Linux machine), across
// routers in network namespaces in trace_netns_linux_test.go.

// liveTracer is an Endpoint driven as the live driver does: its own
// goroutine reads the socket (ReadUntil) up to the next deadline, ticks,
// and runs calls from the test.
type liveTracer struct {
	ep    *Endpoint
	tr    *UDPTransport
	start time.Time
	calls chan func(now time.Duration)
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	got   map[Channel]int // messages delivered, by channel
}

func startTracer(t *testing.T, tr *UDPTransport, self PeerID) *liveTracer {
	t.Helper()
	l := &liveTracer{tr: tr, start: time.Now(), calls: make(chan func(time.Duration), 1), stop: make(chan struct{}), done: make(chan struct{}), got: map[Channel]int{}}
	ep, err := NewEndpoint(Config{Self: self, Session: token}, tr, func(_ time.Duration, _ PeerID, ch Channel, _ []byte) {
		l.mu.Lock()
		l.got[ch]++
		l.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	l.ep = ep
	tr.SetEpoch(l.start)
	go l.run()
	t.Cleanup(func() {
		close(l.stop)
		tr.Wake()
		<-l.done
		tr.Close()
	})
	return l
}

func (l *liveTracer) run() {
	defer close(l.done)
	var last time.Duration
	ds := make([]*Datagram, 0, MaxReadBatch)
	for {
		select {
		case f := <-l.calls:
			last = max(last, time.Since(l.start))
			f(last)
			continue
		case <-l.stop:
			return
		default:
		}
		at, ok := l.ep.NextDeadline()
		if !ok {
			at = time.Since(l.start) + time.Hour
		}
		var err error
		ds, err = l.tr.ReadUntil(l.start.Add(at), ds[:0])
		for _, d := range ds {
			last = max(last, d.Arrival(l.start))
			l.ep.Receive(last, d.From, d.Bytes())
			d.Release()
		}
		if err != nil {
			return
		}
		if now := time.Since(l.start); now >= at {
			last = max(last, now)
			l.ep.Tick(last)
		}
	}
}

// do runs f on the owning goroutine.
func (l *liveTracer) do(f func(now time.Duration)) {
	ran := make(chan struct{})
	l.calls <- func(now time.Duration) { f(now); close(ran) }
	l.tr.Wake()
	<-ran
}

func (l *liveTracer) delivered(ch Channel) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.got[ch]
}

func (l *liveTracer) path(peer PeerID) (r pathResult) {
	l.do(func(time.Duration) { r.Result, r.ok = l.ep.Path(peer) })
	return r
}

// linkLive links a and b at the addresses their sockets are reached at.
func linkLive(t *testing.T, a, b *liveTracer, aAt, bAt netip.AddrPort, aID, bID PeerID) {
	t.Helper()
	var errA, errB error
	a.do(func(now time.Duration) { errA = a.ep.AddLink(now, bID, bAt, PublicKey{}) })
	b.do(func(now time.Duration) { errB = b.ep.AddLink(now, aID, aAt, PublicKey{}) })
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
}

// The loopback path is one hop, the peer; port unreachables drawn while the
// link runs are drained, never read errors, and the link loses nothing.
func TestLoopbackTrace(t *testing.T) {
	ta, err := ListenUDP("127.0.0.1:0")
	mustNil(t, err)
	tb, err := ListenUDP("127.0.0.1:0")
	mustNil(t, err)
	if why := ta.TraceUnavailable(); why != "" {
		t.Fatalf("no trace on loopback: %s", why)
	}
	a, b := startTracer(t, ta, peerA), startTracer(t, tb, peerB)
	linkLive(t, a, b, ta.LocalAddr(), tb.LocalAddr(), peerA, peerB)
	a.do(func(time.Duration) { a.ep.SetTraced(peerB, true) })
	closed := closedPort(t)
	const sends = 150
	for i := range sends {
		a.do(func(now time.Duration) {
			mustNil(t, a.ep.Send(now, peerB, ChannelUnreliable, []byte("state")))
			_ = ta.Send(closed, []byte("nobody listens"))
		})
		if i%10 == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	time.Sleep(2500 * time.Millisecond)
	r := a.path(peerB)
	if !r.ok || !r.Complete || len(r.Hops) != 1 || r.Hops[0].Addr == nil || *r.Hops[0].Addr != tb.LocalAddr().Addr() {
		t.Fatalf("loopback path %+v", r)
	}
	st := ta.Stats()
	if st.ReadErrors != 0 || ta.errq.read.Load() == 0 {
		t.Fatalf("read errors %d, error-queue messages read %d: want none and some", st.ReadErrors, ta.errq.read.Load())
	}
	if got := b.delivered(ChannelUnreliable); got != sends {
		t.Fatalf("%d of %d game messages arrived", got, sends)
	}
	t.Logf("path %d hop(s), the peer at %v; %d error-queue messages drained", len(r.Hops), r.Hops[0].Median, ta.errq.read.Load())
}

type pathResult struct {
	trace.Result
	ok bool
}

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) netip.AddrPort {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	mustNil(t, err)
	at := c.LocalAddr().(*net.UDPAddr).AddrPort()
	c.Close()
	return at
}

func mustNil(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
