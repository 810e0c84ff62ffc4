package netcore

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/netcore/simnet"
)

// TestReliableOverLossySimnet is the acceptance run: 5 % loss each
// way, 10 000 reliable messages, on the simulated network. Every message
// arrives exactly once and in order (T8, T11), the receiver's observed
// inbound loss is within one point of 5 % (L2), and the sender's resend
// share is at least the observed loss (L8).
func TestReliableOverLossySimnet_L8(t *testing.T) {
	const msgs = 10000
	prof := impair.Profile{Delay: 20 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 0.05}
	n, a, b := simPair(t, 7, prof, nil)
	s := n.Scheduler()
	// A game-like pace: a message every 5 ms.
	sent := 0
	var next func()
	next = func() {
		a.send(t, peerB, ChannelReliable, fmt.Appendf(nil, "msg %05d", sent))
		sent++
		if sent < msgs {
			s.At(s.Now()+5*time.Millisecond, next)
		}
	}
	s.At(0, next)
	s.RunUntil(msgs*5*time.Millisecond + 30*time.Second)

	if len(b.got) != msgs {
		t.Fatalf("delivered %d messages, want %d", len(b.got), msgs)
	}
	for i, d := range b.got {
		if want := fmt.Sprintf("msg %05d", i); string(d.msg) != want || d.ch != ChannelReliable {
			t.Fatalf("delivery %d = %q on %v, want %q in order", i, d.msg, d.ch, want)
		}
	}
	for m, c := range b.count {
		if c != 1 {
			t.Fatalf("%q delivered %d times", m, c)
		}
	}
	in, _ := b.ep.Stats(peerA)
	observed := float64(in.Loss.Missing) / float64(in.Loss.Expected)
	if observed < 0.04 || observed > 0.06 {
		t.Errorf("observed inbound loss %.4f (%d/%d), want 0.05 ± 0.01", observed, in.Loss.Missing, in.Loss.Expected)
	}
	out, _ := a.ep.Stats(peerB)
	resend := float64(out.Loss.Retransmitted) / float64(out.Loss.Sent)
	if resend < observed {
		t.Errorf("resend share %.4f below observed loss %.4f", resend, observed)
	}
	if out.InFlight != 0 || out.Backlog != 0 {
		t.Errorf("sender still has %d in flight, %d waiting", out.InFlight, out.Backlog)
	}
	near(t, "SRTT", out.SRTT, 40*time.Millisecond, 5*time.Millisecond)
	t.Logf("observed loss %.4f, resend share %.4f, SRTT %v RTTVAR %v RTO %v, sent %d", observed, resend,
		out.SRTT, out.RTTVAR, out.RTO, out.Loss.Sent)
}

// TestExactlyOnceUnderDuplicationAndReordering_T11: the network duplicates,
// reorders and loses datagrams; the reliable channel still delivers every
// message once, in order, and the global channel each message at most once.
func TestExactlyOnceUnderDuplicationAndReordering_T11(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("psk")} {
		prof := impair.Profile{Delay: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.05,
			Dup: 0.05, Reorder: 0.1, ReorderDelay: 40 * time.Millisecond}
		n, a, b := simPair(t, 11, prof, func(c *Config) { c.Key = key })
		s := n.Scheduler()
		const msgs = 2000
		i := 0
		var next func()
		next = func() {
			a.send(t, peerB, ChannelReliable, fmt.Appendf(nil, "r%05d", i))
			a.send(t, peerB, ChannelGlobal, fmt.Appendf(nil, "g%05d", i))
			a.send(t, peerB, ChannelUnreliable, fmt.Appendf(nil, "u%05d", i))
			i++
			if i < msgs {
				s.At(s.Now()+10*time.Millisecond, next)
			}
		}
		s.At(0, next)
		s.RunUntil(msgs*10*time.Millisecond + 20*time.Second)
		var rel, glob []string
		seenGlobal := map[string]bool{}
		lastU := ""
		for _, d := range b.got {
			switch d.ch {
			case ChannelReliable:
				rel = append(rel, string(d.msg))
			case ChannelGlobal:
				if seenGlobal[string(d.msg)] {
					t.Fatalf("global %q delivered twice", d.msg)
				}
				seenGlobal[string(d.msg)] = true
				glob = append(glob, string(d.msg))
			case ChannelUnreliable:
				if string(d.msg) <= lastU {
					t.Fatalf("unreliable %q delivered after %q", d.msg, lastU)
				}
				lastU = string(d.msg)
			}
		}
		if len(rel) != msgs {
			t.Fatalf("key %q: %d reliable messages, want %d", key, len(rel), msgs)
		}
		for j, m := range rel {
			if m != fmt.Sprintf("r%05d", j) {
				t.Fatalf("key %q: reliable %d is %q", key, j, m)
			}
		}
		// Global packets are dropped only after 10 s of retries; none here.
		if len(glob) != msgs {
			t.Errorf("key %q: %d global messages, want %d", key, len(glob), msgs)
		}
		if r := b.ep.Rejected(); r.Token+r.Sender+r.Malformed+r.Auth+r.Window != 0 {
			t.Errorf("key %q: rejects %+v", key, r)
		}
		st, _ := b.ep.Stats(peerA)
		loss := float64(st.Loss.Missing) / float64(st.Loss.Expected)
		if loss < 0.035 || loss > 0.065 {
			t.Errorf("key %q: observed loss %.4f with 5%% asked for (duplicates must count once)", key, loss)
		}
	}
}

// TestSimulationIsDeterministic: the same seed gives the same numbers.
func TestSimulationIsDeterministic(t *testing.T) {
	run := func() string {
		prof := impair.Profile{Delay: 25 * time.Millisecond, Jitter: 15 * time.Millisecond, Loss: 0.1, Dup: 0.02}
		n, a, b := simPair(t, 99, prof, nil)
		s := n.Scheduler()
		for i := range 500 {
			s.At(time.Duration(i)*7*time.Millisecond, func() {
				a.send(t, peerB, ChannelReliable, []byte{byte(i)})
				b.send(t, peerA, ChannelUnreliable, []byte{byte(i)})
			})
		}
		s.RunUntil(15 * time.Second)
		sa, _ := a.ep.Stats(peerB)
		sb, _ := b.ep.Stats(peerA)
		return fmt.Sprintf("%+v\n%+v\n%d %d", sa, sb, len(a.got), len(b.got))
	}
	if x, y := run(), run(); x != y {
		t.Errorf("two runs differ:\n%s\n%s", x, y)
	}
}

// TestManyPeersOverSimnet_T1: every machine keeps one link to every other;
// five peers exchange reliable messages all to all over lossy links.
func TestManyPeersOverSimnet_T1(t *testing.T) {
	n := simnet.NewNetwork(simnet.NewScheduler(), 4)
	n.SetDefault(impair.Profile{Delay: 15 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.03})
	s := n.Scheduler()
	var peers []*simPeer
	addr := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 1, byte(i)}), 7373)
	}
	for i := range 5 {
		peers = append(peers, newSimPeer(t, n, PeerID(i+1), addr(i), nil))
	}
	for i, p := range peers {
		for j := range peers {
			if i != j {
				p.ep.AddLink(0, PeerID(j+1), addr(j), PublicKey{})
			}
		}
		p.arm()
	}
	for k := range 200 {
		s.At(time.Duration(k)*20*time.Millisecond, func() {
			for i, p := range peers {
				for j := range peers {
					if i != j {
						p.send(t, PeerID(j+1), ChannelReliable, fmt.Appendf(nil, "%d→%d #%d", i, j, k))
					}
				}
			}
		})
	}
	s.RunUntil(20 * time.Second)
	for j, p := range peers {
		if len(p.got) != 4*200 {
			t.Errorf("peer %d got %d messages, want 800", j+1, len(p.got))
		}
		for _, q := range p.ep.Peers(nil) {
			st, _ := p.ep.Stats(q)
			if st.Estimate != Measured || st.InFlight != 0 || !st.PeerLoss.Known {
				t.Errorf("link %d→%d: %v, in flight %d, peer loss known %v", j+1, q, st.Estimate, st.InFlight, st.PeerLoss.Known)
			}
		}
	}
}
