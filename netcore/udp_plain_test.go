package netcore

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"
)

func listenPlain(t testing.TB, addr string) *UDPTransport {
	t.Helper()
	tr, err := listenUDP(addr, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// A socket without the options only some systems have (the Windows shape:
// no kernel stamps, no PKTINFO, no error queue, no batched writes) still
// carries every datagram both ways, one read per datagram, each timed by
// the reader's clock; SendBatch falls back to one send each; the trace
// says why it cannot run and sends nothing.
func TestPlainSocketCarriesTheGame(t *testing.T) {
	a, b := listenPlain(t, "127.0.0.1:0"), listenPlain(t, "127.0.0.1:0")
	before := time.Now()
	for i := range 30 {
		if err := a.Send(b.LocalAddr(), bytes.Repeat([]byte{byte(i)}, 1+i*40)); err != nil {
			t.Fatal(err)
		}
	}
	to := make([]netip.AddrPort, 20)
	ps := make([][]byte, 20)
	for i := range ps {
		to[i], ps[i] = a.LocalAddr(), []byte(fmt.Sprintf("batch %d", i))
	}
	if failed := b.SendBatch(to, ps); failed != 0 {
		t.Fatalf("SendBatch: %d failed", failed)
	}
	from, got := receive(t, b, 30)
	for i, f := range from {
		if f != a.LocalAddr() || len(got[i]) == 0 {
			t.Fatalf("datagram %d from %v (%d bytes)", i, f, len(got[i]))
		}
	}
	deadline := time.After(udpBound)
	for i := range 20 {
		select {
		case d := <-a.Inbox():
			if d.At.Before(before) || d.At.After(time.Now()) {
				t.Errorf("datagram %d timed at %v, outside the test's run", i, d.At)
			}
			d.Release()
		case <-deadline:
			t.Fatalf("received %d of 20 batched datagrams", i)
		}
	}
	ast, bst := a.Stats(), b.Stats()
	if ast.KernelStamped != 0 || bst.KernelStamped != 0 {
		t.Errorf("kernel stamps on a plain socket: %d, %d", ast.KernelStamped, bst.KernelStamped)
	}
	if bst.Batches != 0 || bst.Sent != 20 {
		t.Errorf("b's sends: %+v, want 20 single sends and no batch", bst)
	}
	if ast.Reads != ast.Received || bst.Reads != bst.Received {
		t.Errorf("reads %d/%d, %d/%d received: want one read per datagram", ast.Reads, ast.Received, bst.Reads, bst.Received)
	}
	if a.TraceUnavailable() == "" {
		t.Error("a plain socket claims to trace")
	}
	if err := a.SendHopLimit(b.LocalAddr(), []byte("probe"), 1); err == nil {
		t.Error("a plain socket sent a hop-limited probe")
	}
	if got := a.HopAnswers(nil); len(got) != 0 {
		t.Errorf("answers on a plain socket: %v", got)
	}
}

// A plain socket bound to every interface has no PKTINFO: the system picks
// the source of each answer, and the peer still hears from the port it
// sent to.
func TestPlainWildcardSocketAnswers(t *testing.T) {
	host := listenPlain(t, "0.0.0.0:0")
	if host.from != nil {
		t.Fatal("a plain socket keeps reply addresses")
	}
	peer := listenPlain(t, "127.0.0.1:0")
	dst := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), host.LocalAddr().Port())
	if err := peer.Send(dst, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	from, _ := receive(t, host, 1)
	if err := host.Send(from[0], []byte("welcome")); err != nil {
		t.Fatal(err)
	}
	back, got := receive(t, peer, 1)
	if back[0] != dst || string(got[0]) != "welcome" {
		t.Fatalf("answer %q from %v, want welcome from %v", got[0], back[0], dst)
	}
}
