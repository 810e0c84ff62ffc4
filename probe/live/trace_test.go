package live

import (
	"runtime"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/session"
)

// The Path view's controls reach the session through the driver: after
// Control{Path: "bob"} the host's Views hold bob's path, traced on the
// loopback socket to the peer itself, and its updates carry `path`
// events; after Control{PathClosed: true} both stop. Times only bound a
// broken run.
func TestPathControlTracesTheLink(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the hop tracer reads the error queue, which only Linux has")
	}
	listen := func() *netcore.UDPTransport {
		u, err := netcore.ListenUDP("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { u.Close() })
		return u
	}
	hu, ju := listen(), listen()
	hs, err := session.NewHost(session.Config{Name: "alice"}, hu)
	if err != nil {
		t.Fatal(err)
	}
	js, err := session.NewJoiner(session.Config{Name: "bob"}, session.RolePlayer, ju, hu.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	host := Run(hs, hu, Options{Publish: true, PublishEvery: 20 * time.Millisecond, LinkEvery: 200 * time.Millisecond})
	join := Run(js, ju, Options{Publish: true, PublishEvery: 20 * time.Millisecond})
	go func() {
		for range join.Updates() {
		}
	}()
	end := time.After(20 * time.Second)
	next := func() feed.Update {
		t.Helper()
		select {
		case u, ok := <-host.Updates():
			if !ok {
				t.Fatalf("host ended: %v", host.Wait())
			}
			return u
		case <-end:
			t.Fatal("no trace within 20 s")
		}
		return feed.Update{}
	}
	for u := next(); len(u.View.Links) == 0; u = next() {
	}
	host.Control(feed.Control{Path: "bob"})
	events := 0
	for complete := false; !complete || events == 0; {
		u := next()
		for _, e := range u.Events {
			if p, ok := e.(*feed.PathEvent); ok && p.From == "alice" && p.To == "bob" && p.Available {
				events++
			}
		}
		for _, p := range u.View.Paths {
			complete = complete || (p.Peer == "bob" && p.Complete && len(p.Hops) == 1 && p.Hops[0].Link == "peer")
		}
	}
	host.Control(feed.Control{PathClosed: true})
	for u := next(); len(u.View.Paths) > 0; u = next() {
	}
	join.Stop()
	host.Stop()
	for _, r := range []*Runner{host, join} {
		go func() {
			for range r.Updates() {
			}
		}()
		if err := r.Wait(); err != nil {
			t.Fatalf("run ended with %v", err)
		}
	}
}
