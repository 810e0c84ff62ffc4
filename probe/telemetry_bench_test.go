package probe

import (
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/snapshot"
	"github.com/lagscope/lagscope/rungs"
)

// BenchmarkTelemetryWire measures what the telemetry costs on the wire in a
// whole session of 8 players in virtual time (the bytes per second of the
// telemetry at 8 players): the same session run twice, with and
// without telemetry, and every datagram's bytes counted, netcore's header
// included. The difference is the telemetry: the updates that ride inside
// unreliable frame packets, and the datagrams of their own beside reliable
// ones. On paths that lose nothing and do not jitter both runs make the
// same datagrams otherwise.
//
// Reported: wire_B/s (all 8 players together, after 10 s of warm-up, over
// 30 s), wire_B/s/player, and B/update (the updates alone, with their 7-byte
// head, as the hook sees them).
func BenchmarkTelemetryWire(b *testing.B) {
	for _, c := range []struct {
		name string
		prof impair.Profile
	}{
		{"lan", impair.Profile{Delay: time.Millisecond}},
		{"internet", impair.Profile{Delay: 30 * time.Millisecond}},
		// Loss and jitter draw from each path's random stream, so the two
		// runs differ a little besides the telemetry: wire_B/s is then an
		// estimate; B/update stays exact.
		{"internet_loss2", impair.Profile{Delay: 30 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.02}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			const players = 8
			warm, span := 10*time.Second, 30*time.Second
			prof := c.prof
			var wire, perUpdate float64
			for range b.N {
				bytes := [2]uint64{}
				var updates, updateBytes uint64
				for i, on := range []bool{false, true} {
					w := newTMWorld(b, players, 0, on, prof, 21, rungs.Timing{})
					for _, m := range w.ms {
						m.peer.tm.onSend = func(_ netcore.PeerID, msg []byte, _ *snapshot.Telemetry) {
							if w.sched.Now() >= warm {
								updates++
								updateBytes += uint64(len(msg) - len(msg[telemetryHead+int(le16(msg[5:])):]))
							}
						}
					}
					w.sched.RunUntil(warm)
					start := uint64(0)
					for _, m := range w.ms {
						start += m.bytes
					}
					w.sched.RunUntil(warm + span)
					for _, m := range w.ms {
						bytes[i] += m.bytes
					}
					bytes[i] -= start
				}
				wire = float64(bytes[1]-bytes[0]) / span.Seconds()
				perUpdate = float64(updateBytes) / float64(updates)
			}
			b.ReportMetric(wire, "wire_B/s")
			b.ReportMetric(wire/players, "wire_B/s/player")
			b.ReportMetric(perUpdate, "B/update")
		})
	}
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }

// BenchmarkTelemetryUpdate is one update's work at 8 players: the sender
// fills its state and encodes a delta for each of its 7 recipients, and
// each recipient takes its update in and acks it (the engine's hot path
// for telemetry; the datagrams themselves are not sent).
func BenchmarkTelemetryUpdate(b *testing.B) {
	b.ReportAllocs()
	w := newTMWorld(b, 8, 0, true, impair.Profile{Delay: 5 * time.Millisecond}, 4, rungs.Timing{})
	w.sched.RunUntil(10 * time.Second)
	now := w.sched.Now()
	sp := w.ms[0].peer
	frame := (&framePacket{Kind: kindFrame, Frame: 300, Through: 304}).appendTo(nil)
	b.ResetTimer()
	for range b.N {
		sp.tm.armed = false
		if !sp.tm.due(now, sp) {
			b.Fatal("no update due")
		}
		for _, m := range w.ms[1:] {
			rp := m.peer
			msg := sp.tm.wrap(sp.players[rp.self.idx], frame)
			if inner, ok := rp.tm.deliver(now, rp, rp.players[0], msg); !ok || len(inner) != len(frame) {
				b.Fatal("update not taken in")
			}
			sp.tm.snd.Acked(int(rp.cfg.Self), rp.tm.ackFor(sp.cfg.Self))
		}
	}
}
