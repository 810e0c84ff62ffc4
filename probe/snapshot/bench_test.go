package snapshot

import (
	"bytes"
	"compress/flate"
	"fmt"
	"testing"
)

// BenchmarkTelemetryBytesPerSecond streams every scenario's telemetry
// between 8 players, all to all, ten updates a second: full (no ack ever
// returns, so every update is against the baseline) against delta (each
// receiver's ack returns before the next update). One op is one update
// interval of the whole session: 56 updates encoded and decoded.
//
// The "plain" tables are the same fields with every Near set to 0 (each
// changed value in full, the Quake 3 example's form): what the near form saves.
func BenchmarkTelemetryBytesPerSecond(b *testing.B) {
	tables := []struct {
		name  string
		table *fieldTable[Telemetry]
	}{{"near", telemetryTable}, {"plain", mustTelemetryTable(false)}}
	for _, sc := range scenarios {
		for _, tab := range tables {
			for _, acks := range []bool{false, true} {
				kind := "full"
				if acks {
					kind = "delta"
				}
				b.Run(fmt.Sprintf("%s/%dplayers/%s/%s", sc.name, sc.players, tab.name, kind), func(b *testing.B) {
					s := newSession(sc, 1)
					m := newMesh(tab.table, sc.players, acks)
					for range warmTicks {
						s.step()
						m.send(s)
					}
					m.bytes, m.updates = 0, 0
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						s.step()
						if !m.send(s) {
							b.Fatal("a receiver does not hold the sender's state")
						}
					}
					b.ReportMetric(float64(m.bytes)/float64(b.N)*updatesPerSecond, "B/s")
					b.ReportMetric(float64(m.bytes)/float64(m.updates), "B/update")
				})
			}
		}
	}
}

// steadyStream is one sender-receiver pair of the internet scenario after
// warm-up, and the next state to send.
func steadyStream(b *testing.B, acks bool) (*session, *Sender[Telemetry], *Receiver[Telemetry]) {
	s := newSession(scenarios[1], 1)
	snd, rcv := NewTelemetrySender(), NewTelemetryReceiver()
	var buf []byte
	for range warmTicks {
		s.step()
		buf = snd.encode(buf[:0], 1, &s.players[0].tel)
		if _, _, err := rcv.Decode(buf); err != nil {
			b.Fatal(err)
		}
		if acks {
			snd.Acked(1, rcv.Ack())
		}
	}
	return s, snd, rcv
}

// BenchmarkEncode is one update of one player's telemetry (7 links) to
// one receiver, in a steady state, the state moving on between updates as
// the scenario says. 0 allocs/op: the ring and dst are reused.
func BenchmarkEncode(b *testing.B) {
	for _, acks := range []bool{false, true} {
		name := map[bool]string{false: "full", true: "delta"}[acks]
		b.Run(name, func(b *testing.B) {
			s, snd, rcv := steadyStream(b, acks)
			states := make([]Telemetry, 64)
			for i := range states {
				s.step()
				states[i] = s.players[0].tel
			}
			buf := make([]byte, 0, HeaderLen+telemetryTable.maxLen())
			total := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				buf = snd.encode(buf[:0], 1, &states[i%len(states)])
				total += len(buf)
				if acks {
					// The receiver got it; its ack is the new sequence.
					snd.Acked(1, rcv.Ack()+uint32(i)+1)
				}
			}
			b.ReportMetric(float64(total)/float64(b.N), "B/update")
		})
	}
}

// BenchmarkDecode applies one steady-state update that is new to the
// receiver (the full path: decode, keep in the ring, write the state);
// 0 allocs/op.
func BenchmarkDecode(b *testing.B) {
	for _, acks := range []bool{false, true} {
		name := map[bool]string{false: "full", true: "delta"}[acks]
		b.Run(name, func(b *testing.B) {
			s, snd, rcv := steadyStream(b, acks)
			// The next ringLen−1 updates, all against the base the receiver
			// acked last (no further acks, so each carries everything
			// since that base), replayed in a loop: rewinding the receiver
			// to that base is forgetting the slots after it.
			held := rcv.Ack()
			var msgs [][]byte
			for range ringLen - 1 {
				s.step()
				msgs = append(msgs, snd.encode(nil, 1, &s.players[0].tel))
			}
			total := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := i % len(msgs)
				if k == 0 {
					for j, seq := range rcv.seq {
						if seq > held {
							rcv.seq[j] = 0
						}
					}
					rcv.newest, rcv.cur = held, rcv.find(held)
					rcv.Ack()
				}
				if _, fresh, err := rcv.Decode(msgs[k]); err != nil || !fresh {
					b.Fatalf("update %d: fresh %v err %v", k, fresh, err)
				}
				total += len(msgs[k])
			}
			b.ReportMetric(float64(total)/float64(b.N), "B/update")
		})
	}
}

// BenchmarkFlate_Q7 measures optional compression (Q7) on the updates of
// the 8-player scenarios: each update compressed on its own with
// compress/flate at best compression (updates travel unreliable, so no
// compression stream can span two of them), against the raw bytes. A
// packed update needs a flag to say so: one byte, counted, and an update
// that does not shrink goes raw. One op compresses one update.
func BenchmarkFlate_Q7(b *testing.B) {
	for _, sc := range scenarios {
		for _, kind := range []string{"full", "delta"} {
			b.Run(sc.name+"/"+kind, func(b *testing.B) {
				// Steady state only: skip the warm-up's updates.
				var msgs [][]byte
				skip := warmTicks * sc.players * (sc.players - 1)
				measure(b, telemetryTable, sc, 1, warmTicks, measureTicks, func(full bool, msg []byte) {
					if full != (kind == "full") {
						return
					}
					if skip > 0 {
						skip--
						return
					}
					if len(msgs) < 4096 {
						msgs = append(msgs, bytes.Clone(msg))
					}
				})
				var zbuf bytes.Buffer
				zw, err := flate.NewWriter(&zbuf, flate.BestCompression)
				if err != nil {
					b.Fatal(err)
				}
				pack := func(msg []byte) int {
					zbuf.Reset()
					zw.Reset(&zbuf)
					zw.Write(msg)
					zw.Close()
					return 1 + min(zbuf.Len(), len(msg))
				}
				raw, packed := 0, 0
				for _, m := range msgs {
					raw += len(m)
					packed += pack(m)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					pack(msgs[i%len(msgs)])
				}
				b.ReportMetric(float64(raw)/float64(len(msgs)), "raw-B/update")
				b.ReportMetric(float64(packed)/float64(len(msgs)), "flate-B/update")
			})
		}
	}
}

// BenchmarkFanOut64 is one update interval of a 64-player LAN session's
// telemetry: every machine sends its one state (63
// links) to its 63 receivers, each as a delta against what that receiver
// acked, and every machine takes in the 63 updates it gets. One op is the
// whole session's interval; ns/machine is one machine's share of it.
func BenchmarkFanOut64(b *testing.B) {
	sc := scenarios[0]
	sc.players = 64
	s := newSession(sc, 1)
	m := newMesh(telemetryTable, sc.players, true)
	for range warmTicks {
		s.step()
		if !m.send(s) {
			b.Fatal("a receiver does not hold the sender's state")
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s.step()
		b.StartTimer()
		m.fanOut(s)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(sc.players), "ns/machine")
}

// fanOut is send as the live peer runs it: the state set once for all
// receivers, each update taken in without building the state.
func (m *mesh) fanOut(s *session) {
	for p := range s.players {
		m.senders[p].Set(&s.players[p].tel)
		for q := range s.players {
			if q == p {
				continue
			}
			m.buf = m.senders[p].Next(m.buf[:0], q)
			r := m.receivers[q][p]
			if _, err := r.Apply(m.buf); err != nil {
				panic(err)
			}
			m.senders[p].Acked(q, r.Ack())
		}
	}
}
