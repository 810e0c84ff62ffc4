package probe

import (
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// Without --key one datagram with the right token
// from a member's address is taken at its word. Each test below rewrites a
// single frame packet in flight from p2 to p1 (the master) — the forgery
// takes the place of a real datagram, so its number is right — and checks
// that the forgery had no effect: every machine executed the same commands
// with the same checksums, nobody saw a desync, and p1 counted exactly one
// refusal.

// rewriteFrame returns datagram d with fn applied to the frame packet it
// carries (unsealed sessions only), or nil when d carries none or fn
// declines (returns false).
func rewriteFrame(d []byte, fn func(ch netcore.Channel, pk *framePacket) bool) []byte {
	h, err := netcore.DecodeHeader(d)
	if err != nil || h.Channel == netcore.ChannelControl {
		return nil
	}
	out := append([]byte(nil), d[:netcore.HeaderLen]...)
	body := d[netcore.HeaderLen:]
	done := false
	for len(body) > 0 {
		typ, payload, rest, err := netcore.NextRecord(body)
		if err != nil {
			return nil
		}
		rec := body[:len(body)-len(rest)]
		body = rest
		if typ == netcore.RecData && !done {
			data, err := netcore.DecodeData(payload)
			if err == nil && len(data.Payload) > 0 && data.Payload[0] == kindFrame {
				if pk, err := decodeFramePacket(data.Payload); err == nil && fn(h.Channel, &pk) {
					out = netcore.AppendData(out, netcore.Data{MsgID: data.MsgID, Payload: pk.appendTo(nil)})
					done = true
					continue
				}
			}
		}
		out = append(out, rec...)
	}
	if !done {
		return nil
	}
	return out
}

// forgery runs a session of n players (game commands flowing) in which the
// first frame packet from p2 to p1 on or after frame 100 that forge
// accepts is replaced by its rewrite, and the session runs to frame 600.
type forgeryRun struct {
	w        *truthWorld
	injected int
	cks      []map[int]uint32 // per machine: frame → checksum
}

func runForgery(t *testing.T, n int, forge func(ch netcore.Channel, pk *framePacket) bool) *forgeryRun {
	t.Helper()
	r := &forgeryRun{cks: make([]map[int]uint32, n)}
	r.w = newTruthWorld(t, n, impair.Profile{Delay: 20 * time.Millisecond}, func(i int, c *Config) {
		c.CommandsPerMinute = 600
		r.cks[i] = map[int]uint32{}
		c.OnFrame = func(f int, ck uint32) { r.cks[i][f] = ck }
	})
	r.w.filter = func(from, to int, p []byte) []byte {
		if from != 1 || to != 0 || r.injected > 0 || r.w.ms[0].peer.Frame() < 100 {
			return p
		}
		if q := rewriteFrame(p, forge); q != nil {
			r.injected++
			return q
		}
		return p
	}
	r.w.start()
	r.w.runUntilFrame(t, 600)
	t.Logf("at %v, frames %d %d", r.w.sched.Now(), r.w.ms[0].peer.Frame(), r.w.ms[1].peer.Frame())
	if r.injected != 1 {
		t.Fatalf("the forgery went out %d times, want once", r.injected)
	}
	return r
}

// inStep fails unless every machine executed frames 0…600 with the same
// checksums and none published a desync.
func (r *forgeryRun) inStep(t *testing.T) {
	t.Helper()
	for f := 0; f <= 600; f++ {
		want, ok := r.cks[1][f]
		if !ok {
			t.Fatalf("p2 never executed frame %d", f)
		}
		for i := range r.cks {
			if got, ok := r.cks[i][f]; !ok || got != want {
				t.Fatalf("frame %d: p%d's checksum %08x (executed %v), p2's %08x: the forgery took effect", f, i+1, got, ok, want)
			}
		}
	}
	for i, evs := range r.w.events {
		for _, e := range evs {
			if m, ok := e.(*feed.MessageEvent); ok && m.Kind == feed.MessageDesync {
				t.Fatalf("p%d published %q", i+1, m.Text)
			}
		}
	}
}

// refused fails unless p1 counted exactly one refusal and the others none.
func (r *forgeryRun) refused(t *testing.T) {
	t.Helper()
	for i, m := range r.w.ms {
		want := uint64(0)
		if i == 0 {
			want = 1
		}
		if got := m.peer.Implausible(); got != want {
			t.Fatalf("p%d counted %d implausible, want %d", i+1, got, want)
		}
	}
}

// A frame packet promising completeness through frame 2^30: p1 would take
// p2 as complete for ever and drop every later command of p2's as "for a
// frame already complete" — a desync.
func TestForgedThroughRefused_S13(t *testing.T) {
	r := runForgery(t, 2, func(_ netcore.Channel, pk *framePacket) bool {
		pk.Through = 1 << 30
		return true
	})
	r.inStep(t)
	r.refused(t)
}

// A frame packet whose sender claims to be far ahead of what p1 promised
// (no player executes past a seated player's through) is refused as well,
// with its Through inside maxLead of that frame.
func TestForgedFrameRefused_S13(t *testing.T) {
	r := runForgery(t, 2, func(_ netcore.Channel, pk *framePacket) bool {
		pk.Frame = 1 << 29
		pk.Through = pk.Frame + 6
		return true
	})
	r.inStep(t)
	r.refused(t)
}

// A timing event from p2, which is not the master: it would change the
// timing on p1 alone.
func TestForgedTimingFromNonMasterRefused_S16(t *testing.T) {
	r := runForgery(t, 2, func(ch netcore.Channel, pk *framePacket) bool {
		if ch != netcore.ChannelReliable {
			return false
		}
		pk.Commands = append(pk.Commands, feed.Command{Tag: pk.Through, Seq: 1 << 20, Type: cmdTiming,
			Payload: timingPayload{Decided: pk.Frame, SendPeriod: 10, LookAhead: 250, FPS: 30, Reason: uint8(rungs.Worse)}.bytes()})
		return true
	})
	r.inStep(t)
	r.refused(t)
	for _, e := range r.w.events[0] {
		if te, ok := e.(*feed.TimingEvent); ok && te.LookAhead == 250 {
			t.Fatalf("p1 executed the forged timing event: %+v", te)
		}
	}
}

// A removal of p3 issued by p2, which is neither the master, nor p3, nor
// the player that removes a silent master: it would remove p3 on p1 alone.
func TestForgedRemovalRefused_S16(t *testing.T) {
	r := runForgery(t, 3, func(ch netcore.Channel, pk *framePacket) bool {
		if ch != netcore.ChannelReliable {
			return false
		}
		pk.Commands = append(pk.Commands, feed.Command{Tag: pk.Through, Seq: 1 << 20, Type: cmdRemove,
			Payload: removePayload{Player: 3, Last: pk.Through}.bytes()})
		return true
	})
	r.inStep(t)
	r.refused(t)
	for i, evs := range r.w.events {
		for _, e := range evs {
			if _, ok := e.(*feed.RemovedEvent); ok {
				t.Fatalf("p%d executed a removal: %+v", i+1, e)
			}
		}
	}
}

// A command on the unreliable channel: every real command travels
// reliably, so one on the unreliable channel is not a peer's.
func TestForgedUnreliableCommandRefused_S13(t *testing.T) {
	r := runForgery(t, 2, func(ch netcore.Channel, pk *framePacket) bool {
		if ch != netcore.ChannelUnreliable {
			return false
		}
		pk.Commands = append(pk.Commands, feed.Command{Tag: pk.Through, Seq: 1 << 20, Type: feed.CmdGame, Payload: []byte("forged")})
		return true
	})
	r.inStep(t)
	r.refused(t)
}

// The bounds never refuse what real peers send: a lossy, jittery session
// with an observer, a player that quits, and a master that falls silent
// and is removed by the next player, who then removes another silent
// player as the new master — nothing counted anywhere.
func TestRealSessionsNothingImplausible_S16(t *testing.T) {
	t.Run("lossy with observer", func(t *testing.T) {
		w := newTMWorld(t, 3, 1, false, impair.Profile{Delay: 30 * time.Millisecond, Jitter: 20 * time.Millisecond, Loss: 0.05}, 7, rungs.StartTiming())
		w.runUntilFrame(t, 700)
		w.ms[2].peer.Quit(w.sched.Now())
		w.ms[2].host.Wake()
		for range 1_000_000 {
			if w.ms[0].peer.Frame() > 900 && w.ms[1].peer.Frame() > 900 && w.ms[3].peer.Frame() > 900 {
				break
			}
			if !w.sched.Step() {
				t.Fatal("the session stopped")
			}
		}
		if !w.ms[2].peer.Done() || w.ms[3].peer.Frame() <= 900 {
			t.Fatalf("p3 done %v, the observer at frame %d: the session did not go on", w.ms[2].peer.Done(), w.ms[3].peer.Frame())
		}
		for i, m := range w.ms {
			if n := m.peer.Implausible(); n != 0 {
				t.Fatalf("machine %d refused %d implausible values from real peers", i+1, n)
			}
		}
	})
	t.Run("silent master then silent player", func(t *testing.T) {
		w := newTruthWorld(t, 4, impair.Profile{Delay: 20 * time.Millisecond}, func(_ int, c *Config) {
			c.CommandsPerMinute, c.DropTimeout = 300, 2*time.Second
		})
		silent := map[int]bool{}
		w.filter = func(from, to int, p []byte) []byte {
			if silent[from] || silent[to] {
				return nil
			}
			return p
		}
		removed := func(i int) map[string]bool {
			out := map[string]bool{}
			for _, e := range w.events[i] {
				if r, ok := e.(*feed.RemovedEvent); ok {
					out[r.Player] = true
				}
			}
			return out
		}
		w.start()
		for _, step := range []struct {
			silence int
			upTo    int
		}{{0, 200}, {3, 600}} {
			silent[step.silence] = true
			for range 100_000 {
				if w.ms[1].peer.Frame() > step.upTo && w.ms[2].peer.Frame() > step.upTo {
					break
				}
				if !w.sched.Step() {
					t.Fatal("the session stopped")
				}
			}
			if f := w.ms[2].peer.Frame(); f <= step.upTo {
				t.Fatalf("p3 stuck at frame %d after p%d fell silent", f, step.silence+1)
			}
		}
		for _, i := range []int{1, 2} {
			if got := removed(i); !got["p1"] || !got["p4"] {
				t.Fatalf("p%d executed removals of %v, want p1 (by p2, the silent master's heir) and p4 (by p2, master)", i+1, got)
			}
			if n := w.ms[i].peer.Implausible(); n != 0 {
				t.Fatalf("p%d refused %d implausible values from real peers", i+1, n)
			}
		}
		if a, b := w.ms[1].peer.ckHist[600%ckHistory], w.ms[2].peer.ckHist[600%ckHistory]; a.frame != 600 || a != b {
			t.Fatalf("frame 600: p2 %+v, p3 %+v: out of step", a, b)
		}
	})
}
