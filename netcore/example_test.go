package netcore_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/netcore/simnet"
)

// A driver owns an Endpoint: it hands it every datagram that arrives, and
// calls Tick at the endpoint's next deadline. Here the world is simnet's
// virtual time and its Driver; the live Runner does the same with a UDP
// reader and a time.Timer.
func attach(d *simnet.Driver, self netcore.PeerID, addr netip.AddrPort, deliver netcore.DeliverFunc) (*netcore.Endpoint, *simnet.Host) {
	h := d.Attach(addr)
	ep, err := netcore.NewEndpoint(netcore.Config{Self: self, Session: 0xC0FFEE}, h.Node(), deliver)
	if err != nil {
		panic(err)
	}
	h.Drive(ep)
	return ep, h
}

func ExampleEndpoint() {
	s := simnet.NewScheduler()
	n := simnet.NewNetwork(s, 1)
	alice := netip.MustParseAddrPort("10.0.0.1:7373")
	bob := netip.MustParseAddrPort("10.0.0.2:7373")
	n.SetLink(alice, bob, impair.Profile{Delay: 40 * time.Millisecond}) // 80 ms round trip

	d := simnet.NewDriver(n)
	a, ah := attach(d, 1, alice, func(time.Duration, netcore.PeerID, netcore.Channel, []byte) {})
	b, bh := attach(d, 2, bob, func(now time.Duration, from netcore.PeerID, ch netcore.Channel, msg []byte) {
		fmt.Printf("%v: bob got %q from %d on %v\n", now, msg, from, ch)
	})
	a.AddLink(0, 2, bob, netcore.PublicKey{})
	b.AddLink(0, 1, alice, netcore.PublicKey{})
	ah.Wake() // a new link has timers: tell the driver
	bh.Wake()

	s.At(10*time.Millisecond, func() {
		a.Send(s.Now(), 2, netcore.ChannelReliable, []byte("gg"))
		ah.Wake()
	})
	s.RunUntil(time.Second)

	st, _ := a.Stats(2)
	fmt.Printf("alice→bob: %v, SRTT %v, RTO %v, conn timeout %v, sent %d\n",
		st.State, st.SRTT, st.RTO, st.ConnTimeout, st.Loss.Sent)
	// Output:
	// 50ms: bob got "gg" from 1 on reliable
	// alice→bob: measured, SRTT 80ms, RTO 240ms, conn timeout 2s, sent 1
}
