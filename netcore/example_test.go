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
// virtual time; the live driver does the same with a UDP reader and a
// time.Timer.
type driver struct {
	ep   *netcore.Endpoint
	wake *simnet.Event
}

func (d *driver) arm() {
	if t, ok := d.ep.NextDeadline(); ok {
		d.wake.Reschedule(t)
	}
}

func attach(n *simnet.Network, self netcore.PeerID, addr netip.AddrPort, deliver netcore.DeliverFunc) *driver {
	s := n.Scheduler()
	d := &driver{}
	node := n.Attach(addr, func(now time.Duration, from netip.AddrPort, p []byte) {
		d.ep.Receive(now, from, p)
		d.arm()
	})
	ep, err := netcore.NewEndpoint(netcore.Config{Self: self, Session: 0xC0FFEE}, node, deliver)
	if err != nil {
		panic(err)
	}
	d.ep = ep
	d.wake = s.At(0, func() { d.ep.Tick(s.Now()); d.arm() })
	return d
}

func ExampleEndpoint() {
	s := simnet.NewScheduler()
	n := simnet.NewNetwork(s, 1)
	alice := netip.MustParseAddrPort("10.0.0.1:7373")
	bob := netip.MustParseAddrPort("10.0.0.2:7373")
	n.SetLink(alice, bob, impair.Profile{Delay: 40 * time.Millisecond}) // 80 ms round trip

	a := attach(n, 1, alice, func(time.Duration, netcore.PeerID, netcore.Channel, []byte) {})
	b := attach(n, 2, bob, func(now time.Duration, from netcore.PeerID, ch netcore.Channel, msg []byte) {
		fmt.Printf("%v: bob got %q from %d on %v\n", now, msg, from, ch)
	})
	a.ep.AddLink(0, 2, bob)
	b.ep.AddLink(0, 1, alice)

	s.At(10*time.Millisecond, func() {
		a.ep.Send(s.Now(), 2, netcore.ChannelReliable, []byte("gg"))
		a.arm()
	})
	s.RunUntil(time.Second)

	st, _ := a.ep.Stats(2)
	fmt.Printf("alice→bob: %v, SRTT %v, RTO %v, conn timeout %v, sent %d\n",
		st.State, st.SRTT, st.RTO, st.ConnTimeout, st.Loss.Sent)
	// Output:
	// 50ms: bob got "gg" from 1 on reliable
	// alice→bob: measured, SRTT 80ms, RTO 240ms, conn timeout 2s, sent 1
}
