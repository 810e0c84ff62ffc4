package live

import (
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/session"
)

// On a real UDP socket the driver reads the socket itself
// (directSocket): a host and a joiner on loopback get into a game and measure
// their link (T1, T2), a Control reaches an owner waiting in its socket,
// and Stop ends both; no reader goroutine was started (the socket still
// takes ReadUntil) or is left behind (goleak in TestMain). Times here only
// bound a broken run.
func TestDriverReadsItsOwnSocket_T1(t *testing.T) {
	listen := func() *netcore.UDPTransport {
		u, err := netcore.ListenUDP("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { u.Close() })
		return u
	}
	hu, ju := listen(), listen()
	hs, err := session.NewHost(session.Config{Name: "alice", Players: 3}, hu)
	if err != nil {
		t.Fatal(err)
	}
	js, err := session.NewJoiner(session.Config{Name: "bob"}, session.RolePlayer, ju, hu.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	host := Run(hs, hu, Options{Publish: true, PublishEvery: 20 * time.Millisecond})
	join := Run(js, ju, Options{Publish: true, PublishEvery: 20 * time.Millisecond})
	var _ directSocket = hu // what makes the driver read it itself
	// Two seats of three taken: the game starts on the host's Start
	// control.
	var last feed.Update
	started := false
	end := time.After(20 * time.Second)
	for !started {
		select {
		case u, ok := <-host.Updates():
			if !ok {
				t.Fatalf("host ended: %v", host.Wait())
			}
			last = u
			if len(u.View.Links) > 0 && !u.View.Started {
				host.Control(feed.Control{Start: true})
			}
			started = u.View.Started
		case <-join.Updates():
		case <-end:
			t.Fatalf("no game within 20 s; host view %+v", last.View)
		}
	}
	for measured := false; !measured; {
		select {
		case u := <-join.Updates():
			for _, l := range u.View.Links {
				measured = measured || l.SRTT > 0
			}
		case <-host.Updates():
		case <-end:
			t.Fatal("bob's link to alice never measured")
		}
	}
	join.Stop()
	host.Stop()
	for _, r := range []*Runner{join, host} {
		go func() {
			for range r.Updates() {
			}
		}()
		select {
		case <-r.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Stop did not end a driver waiting in its socket")
		}
	}
	for _, u := range []*netcore.UDPTransport{hu, ju} {
		if st := u.Stats(); st.Received == 0 {
			t.Fatalf("socket stats %+v", st)
		}
		if _, err := u.ReadUntil(time.Now(), nil); err != nil {
			t.Fatalf("the driver left the socket to a reader goroutine: %v", err)
		}
	}
}
