//go:build linux

package netcore

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lagscope/lagscope/netcore/trace"
)

// A path of two routers in network namespaces, traced from the game's own
// socket:
//
//	client 10.71.1.1 — 10.71.1.2 router1 10.71.2.1 — 10.71.2.2 router2 10.71.3.1 — 10.71.3.2 server
//
// Run with LAGSCOPE_NETNS=1 as root; every namespace goes when the test ends.

type chainNS struct {
	t      *testing.T
	prefix string
}

func (c *chainNS) run(args ...string) {
	c.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		c.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (c *chainNS) in(ns string, args ...string) {
	c.t.Helper()
	c.run(append([]string{"ip", "netns", "exec", c.prefix + ns}, args...)...)
}

// build makes the four namespaces, their veth pairs, addresses and routes.
func (c *chainNS) build() {
	for _, ns := range []string{"c", "r1", "r2", "s"} {
		c.run("ip", "netns", "add", c.prefix+ns)
		name := c.prefix + ns
		c.t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
		c.in(ns, "ip", "link", "set", "lo", "up")
	}
	pairs := []struct{ a, aNS, aIP, b, bNS, bIP string }{
		{"c0", "c", "10.71.1.1/24", "r1a", "r1", "10.71.1.2/24"},
		{"r1b", "r1", "10.71.2.1/24", "r2a", "r2", "10.71.2.2/24"},
		{"r2b", "r2", "10.71.3.1/24", "s0", "s", "10.71.3.2/24"},
	}
	for _, p := range pairs {
		a, b := c.prefix+p.a, c.prefix+p.b
		c.run("ip", "link", "add", a, "netns", c.prefix+p.aNS, "type", "veth", "peer", "name", b, "netns", c.prefix+p.bNS)
		c.in(p.aNS, "ip", "addr", "add", p.aIP, "dev", a)
		c.in(p.bNS, "ip", "addr", "add", p.bIP, "dev", b)
		c.in(p.aNS, "ip", "link", "set", a, "up")
		c.in(p.bNS, "ip", "link", "set", b, "up")
	}
	c.in("c", "ip", "route", "add", "default", "via", "10.71.1.2")
	c.in("r1", "ip", "route", "add", "10.71.3.0/24", "via", "10.71.2.2")
	c.in("r2", "ip", "route", "add", "10.71.1.0/24", "via", "10.71.2.1")
	c.in("s", "ip", "route", "add", "default", "via", "10.71.3.1")
	for _, ns := range []string{"r1", "r2"} {
		c.in(ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	}
	for _, ns := range []string{"r1", "r2", "s"} {
		c.in(ns, "sysctl", "-qw", "net.ipv4.icmp_ratelimit=0")
	}
}

// inNS runs open on a thread switched into namespace ns: a socket belongs
// to the namespace it was made in, whichever thread uses it later.
func inNS[T any](t *testing.T, ns string, open func() (T, error)) T {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer home.Close()
		there, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer there.Close()
		if err := unix.Setns(int(there.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		v, err := open()
		if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else the goroutine ends locked, and its thread with it
		ch <- result{v, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

var (
	nsClient  = netip.MustParseAddrPort("10.71.1.1:7373")
	nsServer  = netip.MustParseAddrPort("10.71.3.2:7373")
	nsRouter1 = netip.MustParseAddr("10.71.1.2")
	nsRouter2 = netip.MustParseAddr("10.71.2.2")
)

func TestTraceAcrossRouters(t *testing.T) {
	if os.Getenv("LAGSCOPE_NETNS") != "1" {
		t.Skip("network-namespace test: run with LAGSCOPE_NETNS=1 as root")
	}
	if os.Geteuid() != 0 {
		t.Skip("network-namespace test: LAGSCOPE_NETNS=1 is set but it needs root to make namespaces")
	}
	c := &chainNS{t: t, prefix: fmt.Sprintf("lst%d", os.Getpid()%100000)}
	c.build()
	listen := func(ns string, at netip.AddrPort) *UDPTransport {
		return inNS(t, c.prefix+ns, func() (*UDPTransport, error) { return ListenUDP(at.String()) })
	}
	ta, tb := listen("c", nsClient), listen("s", nsServer)
	a, b := startTracer(t, ta, peerA), startTracer(t, tb, peerB)
	linkLive(t, a, b, nsClient, nsServer, peerA, peerB)

	t.Run("hops", func(t *testing.T) { traceHops(t, a, b, ta) })
	t.Run("answer ttl", func(t *testing.T) { answerTTL(t, c) })
	t.Run("ttl", func(t *testing.T) { gameKeepsTTL(t, c, ta) })
	t.Run("queue", func(t *testing.T) { traceQueue(t, c, a) })
}

// traceHops traces the idle path while the client also draws a port
// unreachable from the server with every game datagram: the hops come in
// order, the last is the peer, and no game datagram is lost to the ICMP.
func traceHops(t *testing.T, a, b *liveTracer, ta *UDPTransport) {
	a.do(func(time.Duration) { a.ep.SetTraced(peerB, true) })
	closed := netip.AddrPortFrom(nsServer.Addr(), 9) // discard: nothing listens
	const sends = 1200
	for i := range sends {
		a.do(func(now time.Duration) {
			mustNil(t, a.ep.Send(now, peerB, ChannelUnreliable, []byte("state")))
			for range 4 {
				_ = ta.Send(closed, []byte("nobody listens"))
			}
		})
		if i%20 == 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	time.Sleep(3 * time.Second)
	r := a.path(peerB)
	want := []netip.Addr{nsRouter1, nsRouter2, nsServer.Addr()}
	if !r.ok || !r.Complete || len(r.Hops) != len(want) {
		t.Fatalf("path %+v, want %d hops to the peer", r, len(want))
	}
	for i, h := range r.Hops {
		if h.Addr == nil || *h.Addr != want[i] || h.TTL != i+1 {
			t.Errorf("hop %d: %+v, want %v", i+1, h, want[i])
		}
		t.Logf("hop %d %v sent %d loss %.2f rtt %v", h.TTL, *h.Addr, h.Sent, h.Loss, h.Median)
	}
	if got := b.delivered(ChannelUnreliable); got != sends {
		t.Errorf("%d of %d game messages arrived beside the port unreachables", got, sends)
	}
	st := ta.Stats()
	if st.ReadErrors != 0 || ta.errq.read.Load() < sends {
		t.Errorf("read errors %d, error-queue messages %d: want none, and at least %d", st.ReadErrors, ta.errq.read.Load(), sends)
	}
	t.Logf("%d error-queue messages drained, %d game messages delivered", ta.errq.read.Load(), b.delivered(ChannelUnreliable))
}

// answerTTL: an answer on the error queue says the TTL it arrived with
// (IP_RECVTTL works on error-queue messages): 64 from router1, 63 from
// router2, each of which starts its ICMP at 64.
func answerTTL(t *testing.T, c *chainNS) {
	at := netip.AddrPortFrom(nsClient.Addr(), 7475)
	tr := inNS(t, c.prefix+"c", func() (*UDPTransport, error) { return ListenUDP(at.String()) })
	defer tr.Close()
	for ttl := 1; ttl <= 2; ttl++ {
		b := make([]byte, HeaderLen, probeDatagramLen)
		PutHeader(b, Header{Token: token, Sender: peerA, Channel: ChannelControl})
		b = trace.AppendProbe(b, trace.Probe{Num: uint32(7000 + ttl), TTL: uint8(ttl)})
		mustNil(t, tr.SendHopLimit(nsServer, b, ttl))
		var got []HopAnswer
		for deadline := time.Now().Add(2 * time.Second); len(got) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			got = tr.HopAnswers(got)
		}
		if len(got) != 1 {
			t.Fatalf("hop %d: %d answers, want 1", ttl, len(got))
		}
		a := got[0].Answer
		if want := uint8(65 - ttl); a.TTL != want || a.Quote != trace.QuoteProbe || a.Probe.TTL != uint8(ttl) {
			t.Errorf("hop %d: answer from %v arrived with TTL %d (quote %v), want %d", ttl, a.Offender, a.TTL, a.Quote, want)
		}
	}
}

// gameKeepsTTL: a datagram sent after a probe leaves with the socket's own
// hop limit. The far end reads each one's TTL (IP_RECVTTL): 64 less the two
// routers.
func gameKeepsTTL(t *testing.T, c *chainNS, ta *UDPTransport) {
	at := netip.AddrPortFrom(nsServer.Addr(), 7474)
	sink := inNS(t, c.prefix+"s", func() (*net.UDPConn, error) { return net.ListenUDP("udp", net.UDPAddrFromAddrPort(at)) })
	defer sink.Close()
	rc, err := sink.SyscallConn()
	mustNil(t, err)
	rc.Control(func(fd uintptr) {
		mustNil(t, syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_RECVTTL, 1))
	})
	mustNil(t, ta.SendHopLimit(at, []byte("probe-like"), 5))
	mustNil(t, ta.Send(at, []byte("game")))
	for _, want := range []int{3, 62} {
		sink.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf, oob := make([]byte, 64), make([]byte, 64)
		_, oobn, _, _, err := sink.ReadMsgUDP(buf, oob)
		mustNil(t, err)
		msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
		mustNil(t, err)
		got := -1
		for _, m := range msgs {
			if m.Header.Level == syscall.IPPROTO_IP && m.Header.Type == syscall.IP_TTL && len(m.Data) >= 4 {
				got = int(m.Data[0]) // an int, but the value fits a byte
			}
		}
		if got != want {
			t.Errorf("arrived with TTL %d, want %d", got, want)
		}
	}
}

// traceQueue fills router1's egress towards router2 (tbf at 2 Mbit/s
// holding 50 kB: 200 ms full) with a bounded flood from the client and
// traces again: delay starts at hop 2, the hop after the queue.
func traceQueue(t *testing.T, c *chainNS, a *liveTracer) {
	c.in("r1", "tc", "qdisc", "add", "dev", c.prefix+"r1b", "root", "tbf", "rate", "2mbit", "burst", "4kb", "limit", "50000")
	flood := inNS(t, c.prefix+"c", func() (*net.UDPConn, error) { return net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(10, 71, 1, 1)}) })
	defer flood.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // 1200 bytes every 3 ms, about 3.2 Mbit/s, for at most 40 s
		defer close(done)
		to := &net.UDPAddr{IP: net.IPv4(10, 71, 3, 2), Port: 9}
		p := make([]byte, 1200)
		for i := 0; i < 40_000/3; i++ {
			select {
			case <-stop:
				return
			default:
			}
			flood.WriteToUDP(p, to)
			time.Sleep(3 * time.Millisecond)
		}
	}()
	defer func() { close(stop); <-done }()
	time.Sleep(time.Second) // the queue fills
	a.do(func(time.Duration) { a.ep.SetTraced(peerB, false); a.ep.SetTraced(peerB, true) })
	var r pathResult
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if r = a.path(peerB); r.DelayStarts != nil && len(r.Hops) == 3 && r.Hops[2].Judged {
			break
		}
	}
	for _, h := range r.Hops {
		if h.Answered {
			t.Logf("hop %d %v sent %d loss %.2f best %v median %v worst %v", h.TTL, *h.Addr, h.Sent, h.Loss, h.Best, h.Median, h.Worst)
		}
	}
	if r.DelayStarts == nil || r.DelayStarts.TTL != 2 {
		t.Fatalf("delay starts %+v, want at hop 2 (the queue is router1's egress)", r.DelayStarts)
	}
	t.Logf("delay starts at hop %d (%s), added %v; the full queue holds 200 ms", r.DelayStarts.TTL, r.DelayStarts.Link, r.DelayStarts.Added)
}
