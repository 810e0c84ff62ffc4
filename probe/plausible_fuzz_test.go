package probe

import (
	"bytes"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// Any one datagram from a member's address, at a peer of an
// unkeyed session in virtual time, may move that link's counters no further
// than one datagram can account for, and changes nothing in the game unless
// it is what only a key stops: a datagram that takes a packet number on an
// acked channel (the real packet is then a duplicate), or a frame packet
// inside every bound (which a keyless session must take at its word).
//
// The world is three players; the datagram reaches p1 (the master) as from
// p2, just before p2's first datagram to p1 on or after frame 100.

type fuzzOutcome struct {
	delivered, refused bool              // reached p1's peer layer; counted there as refused
	before, after      netcore.LinkStats // p1's link to p2 around the datagram
}

// fuzzWorld runs the session to frame 300 with inject (if any) thrown in,
// and returns the world, what the datagram did, and the real datagrams p2
// sent p1 from frame 100 on (the seed corpus).
func fuzzWorld(tb testing.TB, inject []byte) (*truthWorld, *fuzzOutcome, [][]byte) {
	w := newTruthWorld(tb, 3, impair.Profile{Delay: 20 * time.Millisecond}, func(_ int, c *Config) {
		c.CommandsPerMinute = 600
	})
	out := &fuzzOutcome{}
	var real [][]byte
	done := false
	p1 := w.ms[0].peer
	w.filter = func(from, to int, p []byte) []byte {
		if from != 1 || to != 0 || p1.Frame() < 100 {
			return p
		}
		if len(real) < 40 {
			real = append(real, bytes.Clone(p))
		}
		if inject != nil && !done {
			done = true
			pl := p1.byID[2]
			heard, refused := pl.lastHeard, p1.badPackets+p1.implausible
			pl.lastHeard = -1
			out.before, _ = p1.ep.Stats(2)
			p1.Receive(w.sched.Now(), p1.byID[2].Addr, bytes.Clone(inject))
			out.after, _ = p1.ep.Stats(2)
			out.delivered = pl.lastHeard != -1
			out.refused = p1.badPackets+p1.implausible > refused
			if !out.delivered {
				pl.lastHeard = heard
			}
		}
		return p
	}
	w.start()
	for range 2_000_000 {
		if w.ms[0].peer.Frame() > 300 && w.ms[1].peer.Frame() > 300 && w.ms[2].peer.Frame() > 300 {
			break
		}
		if w.sched.Now() > 60*time.Second || !w.sched.Step() {
			break
		}
	}
	for i, m := range w.ms {
		if m.peer.Frame() <= 300 {
			tb.Fatalf("p%d stuck at frame %d at %v", i+1, m.peer.Frame(), w.sched.Now())
		}
	}
	return w, out, real
}

func FuzzDatagramFromPeer_S13(f *testing.F) {
	_, _, real := fuzzWorld(f, nil)
	if len(real) < 10 {
		f.Fatalf("only %d real datagrams to seed with", len(real))
	}
	for _, d := range real {
		f.Add(d)
	}
	// The forgeries of finding 4, built on real frame packets.
	forge := func(fn func(ch netcore.Channel, pk *framePacket) bool) {
		for _, d := range real {
			if q := rewriteFrame(d, fn); q != nil {
				f.Add(q)
				return
			}
		}
	}
	forge(func(_ netcore.Channel, pk *framePacket) bool { pk.Through = 1 << 30; return true })
	forge(func(_ netcore.Channel, pk *framePacket) bool { pk.Frame, pk.Through = 1<<29, 1<<29; return true })
	forge(func(ch netcore.Channel, pk *framePacket) bool {
		pk.Commands = append(pk.Commands, feed.Command{Tag: pk.Through, Seq: 1 << 20, Type: cmdTiming,
			Payload: timingPayload{Decided: pk.Frame, SendPeriod: 10, LookAhead: 250, FPS: 30, Reason: uint8(rungs.Worse)}.bytes()})
		return ch == netcore.ChannelReliable
	})
	forge(func(ch netcore.Channel, pk *framePacket) bool {
		pk.Commands = append(pk.Commands, feed.Command{Tag: pk.Through, Seq: 1 << 20, Type: cmdRemove,
			Payload: removePayload{Player: 3, Last: pk.Through}.bytes()})
		return ch == netcore.ChannelReliable
	})
	report := netcore.AppendLinkReport(nil, netcore.LinkReport{Expected: 4_600_000_000_000_000_000})
	hdr := make([]byte, netcore.HeaderLen)
	netcore.PutHeader(hdr, netcore.Header{Token: 77, Sender: 2, Channel: netcore.ChannelControl})
	f.Add(append(hdr, report...))

	f.Fuzz(func(t *testing.T, d []byte) {
		w, out, _ := fuzzWorld(t, d)
		// Counters: one datagram moves a loss window at most MaxJump
		// (more is held back), so Expected and Missing grow by at most
		// that; a link report never claims more than was sent plus the
		// margin, nor missing above expected.
		dExp := out.after.Loss.Expected - out.before.Loss.Expected
		dMiss := out.after.Loss.Missing - out.before.Loss.Missing
		if dExp > netcore.MaxJump+1 || dMiss > dExp {
			t.Fatalf("one datagram moved expected by %d, missing by %d", dExp, dMiss)
		}
		for i, m := range w.ms {
			for _, o := range w.ms {
				if o == m {
					continue
				}
				st, _ := m.peer.ep.Stats(o.peer.cfg.Self)
				real, _ := o.peer.ep.Stats(m.peer.cfg.Self)
				if st.Loss.Missing > st.Loss.Expected || st.PeerLoss.Missing > st.PeerLoss.Expected {
					t.Fatalf("p%d: link to %s: %+v, peer %+v", i+1, o.peer.Name(), st.Loss, st.PeerLoss)
				}
				// What the peer reported can lag what it counted, never
				// lead it by more than forged windows may (3 channels).
				if st.PeerLoss.Expected > real.Loss.Expected+3*netcore.MaxJump {
					t.Fatalf("p%d: peer_expected %d of %s, which counted %d", i+1, st.PeerLoss.Expected, o.peer.Name(), real.Loss.Expected)
				}
			}
		}
		// Completeness within bounds: no player is taken as complete past
		// the widest look-ahead beyond p1's promise.
		for _, pl := range w.ms[0].peer.players {
			if pl.through > w.ms[0].peer.self.through+1+maxLead {
				t.Fatalf("p1 holds %s complete through %d, its own promise %d", pl.Name, pl.through, w.ms[0].peer.self.through)
			}
		}
		h, err := netcore.DecodeHeader(d)
		acked := err == nil && (h.Channel == netcore.ChannelReliable || h.Channel == netcore.ChannelGlobal)
		if acked || (out.delivered && !out.refused) {
			return // only a key stops these (docs/security.md)
		}
		// Anything else changed nothing: no desync, the same checksum.
		for i, evs := range w.events {
			for _, e := range evs {
				if m, ok := e.(*feed.MessageEvent); ok && m.Kind == feed.MessageDesync {
					t.Fatalf("p%d: %q", i+1, m.Text)
				}
			}
		}
		for i := 1; i < 3; i++ {
			if a, b := w.ms[0].peer.ckHist[300%ckHistory], w.ms[i].peer.ckHist[300%ckHistory]; a != b {
				t.Fatalf("frame 300: p1 %+v, p%d %+v", a, i+1, b)
			}
		}
	})
}
