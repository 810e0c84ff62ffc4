package live

import (
	"github.com/lagscope/lagscope/vocab"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/session"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// nullSocket is a socket nobody else is on: the driver's wall-clock logic
// runs on synctest's fake clock with it.
type nullSocket struct {
	in   chan *netcore.Datagram
	addr netip.AddrPort
	sent int
}

func newNullSocket() *nullSocket {
	return &nullSocket{in: make(chan *netcore.Datagram), addr: netip.MustParseAddrPort("127.0.0.1:7373")}
}

func (n *nullSocket) Send(netip.AddrPort, []byte) error { n.sent++; return nil }
func (n *nullSocket) LocalAddr() netip.AddrPort         { return n.addr }
func (n *nullSocket) Inbox() <-chan *netcore.Datagram   { return n.in }

type feedLog struct {
	updates []feed.Update
	events  []feed.Event
	done    chan struct{}
}

func readFeed(f feed.Feed) *feedLog {
	l := &feedLog{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for u := range f.Updates() {
			l.updates = append(l.updates, u)
			l.events = append(l.events, u.Events...)
		}
	}()
	return l
}

// soloHost is a host that starts alone (one seat), on the fake clock.
func soloHost(t *testing.T, cfg session.Config) (*Runner, *feedLog) {
	cfg.Name = "alice"
	if cfg.Players == 0 {
		cfg.Players = 1
	}
	sock := newNullSocket()
	s, err := session.NewHost(cfg, sock)
	if err != nil {
		t.Fatal(err)
	}
	r := Run(s, sock, Options{Publish: true})
	return r, readFeed(r)
}

// Frames are paced to the frame rate in force on the wall clock (S15):
// ten seconds at 30 fps are 300 frames, whatever else the driver does.
func TestDriverPacesFrames_S15(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, log := soloHost(t, session.Config{Speed: 30})
		time.Sleep(10 * time.Second)
		r.Stop()
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
		<-log.done
		last := log.updates[len(log.updates)-1]
		if !last.Done {
			t.Fatal("last update not marked done")
		}
		sum, ok := last.Events[len(last.Events)-1].(*feed.SummaryEvent)
		if !ok {
			t.Fatalf("last event %T, want the summary", last.Events[len(last.Events)-1])
		}
		if f := sum.Players[0].Frames; f < 299 || f > 310 {
			t.Fatalf("%d frames in 10 s at 30 fps (and a quit)", f)
		}
		if sum.Rejected == nil || sum.Rejected.Total != 0 {
			t.Fatalf("summary rejected %+v", sum.Rejected)
		}
	})
}

// A feed delivers at most ten updates a second, every event exactly once
// and in order, each stamped with its time since the start; the last
// update is marked done and ends with the summary.
func TestDriverFeedRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, log := soloHost(t, session.Config{})
		time.Sleep(20 * time.Second)
		r.Stop()
		r.Wait()
		<-log.done
		if n := len(log.updates); n < 190 {
			t.Fatalf("only %d updates in 20 s", n)
		}
		for i := 1; i < len(log.updates)-1; i++ {
			if gap := log.updates[i].View.At - log.updates[i-1].View.At; gap < 100*time.Millisecond {
				t.Fatalf("updates %d and %d only %v apart", i-1, i, gap)
			}
		}
		var last float64
		for _, e := range log.events {
			h := feed.Head(e)
			if h.TMs == nil || *h.TMs < last {
				t.Fatalf("%s at %v after %v", h.Type, h.TMs, last)
			}
			last = *h.TMs
		}
		types := map[vocab.EventType]int{}
		for _, e := range log.events {
			types[feed.Head(e).Type]++
		}
		for _, want := range []vocab.EventType{vocab.EventSession, vocab.EventRoster, vocab.EventMaster, vocab.EventTimingActive, vocab.EventReport, vocab.EventTiming, vocab.EventRemoved, vocab.EventSummary} {
			if types[want] == 0 {
				t.Errorf("no %s event: %v", want, types)
			}
		}
		if types["summary"] != 1 {
			t.Fatalf("%d summaries", types["summary"])
		}
		for i, u := range log.updates[:len(log.updates)-1] {
			if u.Done {
				t.Fatalf("update %d marked done", i)
			}
		}
	})
}

// Controls reach the session on its own goroutine: Start starts a host's
// game with whoever is seated; Speed is a game-speed event (S17) that the
// master's next timing carries as the frame rate (S15).
func TestDriverControls_S15_S17(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, log := soloHost(t, session.Config{Players: 3})
		time.Sleep(2 * time.Second)
		r.Control(feed.Control{Start: true})
		time.Sleep(time.Second)
		r.Control(feed.Control{Speed: 60})
		time.Sleep(30 * time.Second)
		r.Control(feed.Control{Quit: true})
		r.Wait()
		<-log.done
		var fps []int
		for _, e := range log.events {
			if tm, ok := e.(*feed.TimingEvent); ok {
				fps = append(fps, tm.FPS)
			}
		}
		if len(fps) == 0 || fps[len(fps)-1] != 60 {
			t.Fatalf("timing events' frame rates %v, want the last at 60", fps)
		}
		if v := log.updates[len(log.updates)-2].View; !v.Started || v.FPS != 60 {
			t.Fatalf("view: started %v fps %d", v.Started, v.FPS)
		}
	})
}

// A closed socket ends the session with an error, and the feed still
// closes with a last update.
func TestDriverSocketClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sock := newNullSocket()
		s, err := session.NewHost(session.Config{Name: "alice", Players: 2}, sock)
		if err != nil {
			t.Fatal(err)
		}
		r := Run(s, sock, Options{Publish: true})
		log := readFeed(r)
		time.Sleep(time.Second)
		close(sock.in)
		if err := r.Wait(); err != errSocketClosed {
			t.Fatalf("err = %v", err)
		}
		<-log.done
		if last := log.updates[len(log.updates)-1]; !last.Done || last.Err != errSocketClosed {
			t.Fatalf("last update %+v", last)
		}
	})
}
