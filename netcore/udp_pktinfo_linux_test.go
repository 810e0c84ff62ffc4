//go:build linux

package netcore

import (
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"
)

// A socket bound to every address answers each peer from the address the
// peer's datagram arrived at (as a machine with a LAN and a VPN address
// must). On Linux's loopback, 127.0.0.2 is this machine too, but the
// system would answer a datagram sent there from 127.0.0.1.
func TestUDPAnswersFromArrivalAddress(t *testing.T) {
	tr, err := ListenUDP("0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.from == nil {
		t.Fatal("a wildcard socket did not enable IP_PKTINFO")
	}
	port := tr.LocalAddr().Port()
	for _, dst := range []string{"127.0.0.2", "127.0.0.1"} {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		to := netip.AddrPortFrom(netip.MustParseAddr(dst), port)
		if _, err := c.WriteToUDPAddrPort([]byte("hello"), to); err != nil {
			t.Fatal(err)
		}
		var d *Datagram
		select {
		case d = <-tr.Inbox():
		case <-time.After(5 * time.Second):
			t.Fatal("nothing arrived")
		}
		from := d.From
		d.Release()
		if err := tr.Send(from, []byte("answer")); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [64]byte
		_, src, err := c.ReadFromUDPAddrPort(b[:])
		if err != nil {
			t.Fatal(err)
		}
		if src.Addr().Unmap() != to.Addr() || src.Port() != port {
			t.Errorf("sent to %v, the answer came from %v", to, src)
		}
		c.Close()
	}
}

// The control messages a reader hands over decode to the local address,
// and what appendFrom writes is what arrivedTo reads (IPv4 and IPv6).
func TestPktinfoRoundTrip(t *testing.T) {
	for _, c := range []struct{ to, local string }{{"10.0.0.1:9", "192.0.2.7"}, {"[2001:db8::1]:9", "2001:db8::7"}} {
		to, local := netip.MustParseAddrPort(c.to), netip.MustParseAddr(c.local)
		oob := appendFrom(nil, to, local)
		if local.Is4() {
			// appendFrom writes spec_dst; a received message carries the
			// header's destination after it: mirror it there to read back.
			d := oob[syscall.CmsgLen(0):]
			copy(d[8:12], d[4:8])
		}
		got, ok := arrivedTo(oob)
		if !ok || got != local {
			t.Errorf("%v: read back %v %v", c, got, ok)
		}
	}
	if _, ok := arrivedTo([]byte{1, 2, 3}); ok {
		t.Error("garbage decoded")
	}
}

// BenchmarkUDPAnswerFromArrival is a wildcard socket answering a peer
// from the address the peer reached it at: the reply path of a host that
// listens on every address. Nothing allocates per datagram.
func BenchmarkUDPAnswerFromArrival(b *testing.B) {
	host, err := ListenUDP("0.0.0.0:0")
	if err != nil {
		b.Fatal(err)
	}
	defer host.Close()
	peer := listenLoopback(b)
	if err := peer.Send(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), host.LocalAddr().Port()), []byte("hi")); err != nil {
		b.Fatal(err)
	}
	d := <-host.Inbox()
	to := d.From
	d.Release()
	p := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if err := host.Send(to, p); err != nil {
			b.Fatal(err)
		}
		(<-peer.Inbox()).Release()
	}
}
