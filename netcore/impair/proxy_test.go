package impair

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// proxyBound caps every wait on loopback. Reaching it fails the test; no
// assertion here is about how long anything took.
const proxyBound = 5 * time.Second

func udpSocket(t testing.TB) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(1 << 20) // tests send bursts of a few hundred datagrams
	t.Cleanup(func() { c.Close() })
	return c
}

func addrOf(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// echoServer sends every datagram back to its sender and counts them.
type echoServer struct {
	conn *net.UDPConn
	got  atomic.Int64 // datagrams received
	done chan struct{}
}

func startEcho(t testing.TB) *echoServer {
	t.Helper()
	e := &echoServer{conn: udpSocket(t), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		buf := make([]byte, 2048)
		for {
			n, from, err := e.conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			e.got.Add(1)
			e.conn.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	t.Cleanup(func() { e.conn.Close(); <-e.done })
	return e
}

func startProxy(t testing.TB, target netip.AddrPort, up, down Profile, seed uint64) *Proxy {
	t.Helper()
	r, err := ListenProxy(ProxyConfig{Listen: "127.0.0.1:0", Target: target.String(), Upstream: up, Downstream: down, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// readSeqs reads n numbered datagrams from c.
func readSeqs(t *testing.T, c *net.UDPConn, n int) []uint32 {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(proxyBound))
	buf := make([]byte, 2048)
	var seqs []uint32
	for len(seqs) < n {
		m, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(seqs), n, err)
		}
		seqs = append(seqs, binary.LittleEndian.Uint32(buf[:m]))
	}
	return seqs
}

func sendSeqs(t *testing.T, c *net.UDPConn, to netip.AddrPort, n int) {
	t.Helper()
	for i := range n {
		if _, err := c.WriteToUDPAddrPort(binary.LittleEndian.AppendUint32(nil, uint32(i)), to); err != nil {
			t.Fatal(err)
		}
	}
}

// eventually polls cond until it holds, failing at proxyBound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(proxyBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, proxyBound)
		}
		time.Sleep(time.Millisecond) // polling the other goroutines, not measuring
	}
}

func TestProxyForwardsBothWaysInOrder(t *testing.T) {
	echo := startEcho(t)
	r := startProxy(t, addrOf(echo.conn), Profile{}, Profile{Delay: time.Millisecond}, 1)
	client := udpSocket(t)
	sendSeqs(t, client, r.Addr(), 200)
	got := readSeqs(t, client, 200)
	for i, s := range got {
		if s != uint32(i) {
			t.Fatalf("datagram %d came back as %d: a path without jitter or reordering must keep order", i, s)
		}
	}
	eventually(t, "downstream counts settle", func() bool { return r.Stats().Downstream.Forwarded == 200 })
	st := r.Stats()
	if st.Upstream.Offered != 200 || st.Upstream.Forwarded != 200 || st.Downstream.Offered != 200 ||
		st.Upstream.Dropped+st.Downstream.Dropped != 0 || st.Downstream.Ignored != 0 {
		t.Fatalf("stats %+v", st)
	}
	if r.to != addrOf(echo.conn) {
		t.Fatalf("forwarding to %v", r.to)
	}
}

// What the proxy drops is counted as asked-for loss, and the target really
// never sees it (L7).
func TestProxyDropsWhatWasAskedFor_L7(t *testing.T) {
	echo := startEcho(t)
	r := startProxy(t, addrOf(echo.conn), Profile{Loss: 1}, Profile{}, 1)
	client := udpSocket(t)
	sendSeqs(t, client, r.Addr(), 50)
	eventually(t, "all 50 offered", func() bool { return r.Stats().Upstream.Offered == 50 })
	st := r.Stats().Upstream
	if st.Dropped != 50 || st.Forwarded != 0 || st.Pending != 0 {
		t.Fatalf("upstream %+v, want all 50 dropped and nothing queued", st)
	}
	if n := echo.got.Load(); n != 0 {
		t.Fatalf("target received %d datagrams through a proxy losing all", n)
	}
}

func TestProxyDuplicatesEachWay(t *testing.T) {
	echo := startEcho(t)
	r := startProxy(t, addrOf(echo.conn), Profile{Dup: 1}, Profile{Dup: 1}, 2)
	client := udpSocket(t)
	sendSeqs(t, client, r.Addr(), 30)
	got := readSeqs(t, client, 120) // ×2 on the way there, ×2 on the way back
	count := map[uint32]int{}
	for _, s := range got {
		count[s]++
	}
	for i := range uint32(30) {
		if count[i] != 4 {
			t.Fatalf("datagram %d came back %d times, want 4", i, count[i])
		}
	}
	// A direction counts its copies once their batch is written, so the
	// echoes can come back before the count moves: both settle first.
	eventually(t, "the counts settle", func() bool {
		st := r.Stats()
		return st.Upstream.Forwarded == 60 && st.Downstream.Forwarded == 120
	})
	st := r.Stats()
	if st.Upstream.Duplicated != 30 || st.Upstream.Forwarded != 60 || st.Downstream.Offered != 60 || st.Downstream.Duplicated != 60 {
		t.Fatalf("stats %+v", st)
	}
}

// The proxy's decisions are the Path's, from the same seed: the datagrams it
// holds back are exactly the ones a Path with that seed picks, and every
// datagram sent after them overtakes them.
func TestProxyReorderIsTheSeededPathsDecision(t *testing.T) {
	const n, seed = 60, 7
	up := Profile{Reorder: 0.3, ReorderDelay: time.Second}
	model := NewPath(up, seed)
	var held, prompt []uint32
	var dst []time.Duration
	for i := range uint32(n) {
		if dst = model.Decide(dst); dst[0] > 0 {
			held = append(held, i)
		} else {
			prompt = append(prompt, i)
		}
	}
	if len(held) == 0 {
		t.Fatal("seed picks no datagram to hold back; choose another")
	}
	echo := startEcho(t)
	r := startProxy(t, addrOf(echo.conn), up, Profile{}, seed)
	client := udpSocket(t)
	sendSeqs(t, client, r.Addr(), n)
	got := readSeqs(t, client, n)
	// A second's hold is far longer than sending 60 datagrams takes, so the
	// prompt ones all come first, in order, then the held ones, in order.
	if want := append(prompt, held...); !slices.Equal(got, want) {
		t.Fatalf("arrival order %v, want %v", got, want)
	}
	if st := r.Stats().Upstream; st.Reordered != uint64(len(held)) {
		t.Fatalf("upstream %+v, want %d reordered", st, len(held))
	}
}

// The target knows the client by the proxy's forward address, and only the
// target's own datagrams travel back to the client.
func TestProxyForwardAddrAndStrangers(t *testing.T) {
	target := udpSocket(t)
	r := startProxy(t, addrOf(target), Profile{}, Profile{}, 1)
	client, stranger := udpSocket(t), udpSocket(t)
	sendSeqs(t, client, r.Addr(), 1)
	target.SetReadDeadline(time.Now().Add(proxyBound))
	buf := make([]byte, 64)
	_, from, err := target.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatal(err)
	}
	if from != r.ForwardAddr() {
		t.Fatalf("target saw the proxy at %v, ForwardAddr says %v", from, r.ForwardAddr())
	}
	// The stranger writes first; a proxy that forwarded it would hand it to
	// the client before the target's reply.
	stranger.WriteToUDPAddrPort(binary.LittleEndian.AppendUint32(nil, 666), r.ForwardAddr())
	target.WriteToUDPAddrPort(binary.LittleEndian.AppendUint32(nil, 7), from)
	if got := readSeqs(t, client, 1); got[0] != 7 {
		t.Fatalf("client got %d, want the target's 7", got[0])
	}
}

func TestProxyAnswersTheLatestClient(t *testing.T) {
	echo := startEcho(t)
	r := startProxy(t, addrOf(echo.conn), Profile{}, Profile{}, 1)
	a, b := udpSocket(t), udpSocket(t)
	sendSeqs(t, a, r.Addr(), 1)
	readSeqs(t, a, 1)
	sendSeqs(t, b, r.Addr(), 1)
	readSeqs(t, b, 1)
}

func TestProxyCloseStopsEverything(t *testing.T) {
	echo := startEcho(t) // started first: its goroutine outlives the check
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	r, err := ListenProxy(ProxyConfig{Listen: "127.0.0.1:0", Target: addrOf(echo.conn).String(),
		Upstream: Profile{Delay: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	client := udpSocket(t)
	sendSeqs(t, client, r.Addr(), 10)
	eventually(t, "all queued", func() bool { return r.Stats().Upstream.Pending == 10 })
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if st := r.Stats().Upstream; st.Pending != 10 || st.Forwarded != 0 {
		t.Fatalf("after Close: %+v, want the 10 held copies reported pending", st)
	}
}

func TestListenProxyRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]ProxyConfig{
		"bad profile":     {Listen: "127.0.0.1:0", Target: "127.0.0.1:9", Upstream: Profile{Loss: 2}},
		"target unknown":  {Listen: "127.0.0.1:0", Target: "no such host:9"},
		"target no port":  {Listen: "127.0.0.1:0", Target: "127.0.0.1"},
		"target port 0":   {Listen: "127.0.0.1:0", Target: "127.0.0.1:0"},
		"listen unusable": {Listen: "256.0.0.1:0", Target: "127.0.0.1:9"},
	} {
		if r, err := ListenProxy(cfg); err == nil {
			r.Close()
			t.Errorf("%s: accepted", name)
		}
	}
	r := startProxy(t, netip.MustParseAddrPort("127.0.0.1:9"), Profile{}, Profile{}, 1)
	if err := r.setProfiles(Profile{}, Profile{Dup: -1}); err == nil {
		t.Error("SetProfiles accepted an invalid profile")
	}
}

// BenchmarkProxyRoundTrip measures one datagram's round trip on loopback,
// directly to an echo server and through a proxy adding nothing and adding
// 10 ms each way: the first two show the proxy's own cost, the third how
// closely the wall clock keeps the asked-for delay (max-late-µs is the worst
// lateness of any copy).
func BenchmarkProxyRoundTrip(b *testing.B) {
	for _, c := range []struct {
		name  string
		proxy bool
		delay time.Duration
	}{
		{"direct", false, 0},
		{"proxy-0ms", true, 0},
		{"proxy-10ms-each-way", true, 10 * time.Millisecond},
	} {
		b.Run(c.name, func(b *testing.B) {
			echo := startEcho(b)
			to := addrOf(echo.conn)
			var proxy *Proxy
			if c.proxy {
				proxy = startProxy(b, to, Profile{Delay: c.delay}, Profile{Delay: c.delay}, 1)
				to = proxy.Addr()
			}
			client := udpSocket(b)
			buf := make([]byte, 64)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.WriteToUDPAddrPort(buf[:16], to); err != nil {
					b.Fatal(err)
				}
				if _, _, err := client.ReadFromUDPAddrPort(buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "rtt-µs")
			if proxy != nil {
				st := proxy.Stats()
				b.ReportMetric(float64(max(st.Upstream.MaxLate, st.Downstream.MaxLate).Microseconds()), "max-late-µs")
			}
		})
	}
}

// --after and --for time the impairment: untouched first, impaired from
// After on, untouched again For later. The test reads the profile each
// direction holds (what the next datagram gets), waiting a bounded time
// for each switch.
func TestProxyTimesTheImpairment(t *testing.T) {
	prof := Profile{Delay: 30 * time.Millisecond, Loss: 0.01}
	r, err := ListenProxy(ProxyConfig{Listen: "127.0.0.1:0", Target: "127.0.0.1:9", Upstream: prof, Downstream: prof,
		Seed: 1, After: 50 * time.Millisecond, For: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	profiles := func() (Profile, Profile) {
		r.up.mu.Lock()
		defer r.up.mu.Unlock()
		r.down.mu.Lock()
		defer r.down.mu.Unlock()
		return r.up.path.Profile(), r.down.path.Profile()
	}
	if up, down := profiles(); up != (Profile{}) || down != (Profile{}) {
		t.Fatalf("at the start: %v / %v, want untouched", up, down)
	}
	until := func(want Profile) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			up, down := profiles()
			if up == want && down == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the profiles stayed %v / %v, want %v", up, down, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	until(prof)
	until(Profile{})
}
