package snapshot

import (
	"errors"
	"github.com/lagscope/lagscope/internal/longtest"
	"math/rand/v2"
	"slices"
	"testing"
)

// netModel is a seeded, lossy, duplicating, reordering path for updates
// and, independently, for the acks that ride back.
type netModel struct {
	loss, dup  float64 // chance per message
	maxDelay   int     // ticks; a uniform delay in [0, maxDelay] reorders
	blackoutAt int     // from this tick ...
	blackout   int     // ... this many ticks lose everything
}

type inFlight struct {
	at  int
	msg []byte
	ack uint32
}

// mutate changes a few fields of s: small steps (the near form), jumps
// anywhere in the field's range (the full form), and back to zero.
func mutate[S any](rng *rand.Rand, tb *fieldTable[S], s *S) {
	for range rng.IntN(6) {
		f := tb.Field(rng.IntN(tb.numFields()))
		v := int64(f.Get(s))
		switch rng.IntN(4) {
		case 0:
			v += int64(rng.IntN(9)) - 4
		case 1:
			v += int64(rng.IntN(600))
		case 2:
			v = int64(rng.Uint64N(uint64(f.Max) + 1))
		case 3:
			v = 0
		}
		f.Set(s, uint32(min(max(v, 0), int64(f.Max))))
	}
}

// runLossy streams a changing state through the model and checks Q4's
// promise on every update that arrives: whatever was lost, duplicated or
// reordered before it, a fresh update leaves the receiver exactly at the
// sender's state for that snapshot, and a stale one changes nothing. It
// ends with a clean stretch and checks the receiver caught up.
func runLossy[S comparable](t *testing.T, tb *fieldTable[S], seed uint64, ticks int, nm netModel) (fresh, noBase int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	snd, rcv := newSender(tb), newReceiver(tb)
	var cur S
	history := make([]S, 1) // history[seq] is the state sent as seq
	var updates, acks []inFlight
	send := func(q []inFlight, now int, msg []byte, ack uint32, clean bool) []inFlight {
		copies := 1
		if !clean && rng.Float64() < nm.dup {
			copies = 2
		}
		for range copies {
			if !clean && (rng.Float64() < nm.loss || (now >= nm.blackoutAt && now < nm.blackoutAt+nm.blackout)) {
				continue
			}
			d := 0
			if !clean {
				d = rng.IntN(nm.maxDelay + 1)
			}
			q = append(q, inFlight{at: now + d, msg: slices.Clone(msg), ack: ack})
		}
		return q
	}
	due := func(q []inFlight, now int) (ready, rest []inFlight) {
		for _, m := range q {
			if m.at <= now {
				ready = append(ready, m)
			} else {
				rest = append(rest, m)
			}
		}
		rng.Shuffle(len(ready), func(i, j int) { ready[i], ready[j] = ready[j], ready[i] })
		return ready, rest
	}
	var buf []byte
	const cleanTail = 10
	for now := range ticks + cleanTail {
		clean := now >= ticks
		mutate(rng, tb, &cur)
		buf = snd.encode(buf[:0], 0, &cur)
		history = append(history, cur)
		updates = send(updates, now, buf, 0, clean)

		var ready []inFlight
		ready, updates = due(updates, now)
		for _, m := range ready {
			before := rcv.Ack()
			st, isFresh, err := rcv.Decode(m.msg)
			switch {
			case errors.Is(err, ErrNoBase):
				noBase++
				if rcv.Ack() != before {
					t.Fatalf("seed %d tick %d: a dropped update moved the ack", seed, now)
				}
				continue
			case err != nil:
				t.Fatalf("seed %d tick %d: decoding our own update: %v", seed, now, err)
			}
			seq := parseSeq(m.msg)
			if isFresh {
				fresh++
				if rcv.Ack() != seq || *st != history[seq] {
					t.Fatalf("seed %d tick %d: after update %d the receiver holds %d and differs from the sender's snapshot", seed, now, seq, rcv.Ack())
				}
			} else if rcv.Ack() != before || *st != history[before] {
				t.Fatalf("seed %d tick %d: stale update %d changed the receiver", seed, now, seq)
			}
		}
		acks = send(acks, now, nil, rcv.Ack(), clean)
		ready, acks = due(acks, now)
		for _, a := range ready {
			snd.Acked(0, a.ack)
		}
	}
	if st, ok := rcv.State(); !ok || *st != cur {
		t.Fatalf("seed %d: after %d clean ticks the receiver has not caught up (holds %d of %d)", seed, cleanTail, rcv.Ack(), len(history)-1)
	}
	return fresh, noBase
}

func parseSeq(msg []byte) uint32 {
	return uint32(msg[0]) | uint32(msg[1])<<8 | uint32(msg[2])<<16 | uint32(msg[3])<<24
}

var lossyModels = map[string]netModel{
	"clean":         {},
	"loss30":        {loss: 0.3},
	"reorder":       {maxDelay: 5},
	"dup+reorder":   {dup: 0.3, maxDelay: 8},
	"harsh":         {loss: 0.5, dup: 0.2, maxDelay: 12},
	"blackout":      {loss: 0.1, maxDelay: 3, blackoutAt: 50, blackout: 60}, // longer than the ring
	"late-acks":     {maxDelay: 40},                                         // acks and updates older than the ring
	"nearly-mute":   {loss: 0.9, maxDelay: 2},
	"dup-only":      {dup: 0.9},
	"loss+blackout": {loss: 0.4, maxDelay: 6, blackoutAt: 20, blackout: 25},
}

// Every network model, on both tables, over forty seeds under
// LAGSCOPE_LONG (CI) and twelve otherwise: whatever arrives, the receiver
// holds one of the sender's snapshots, never a mix, and catches up once
// the network is clean.
func TestLatestStateSurvivesLossDupReorder_Q4(t *testing.T) {
	for name, nm := range lossyModels {
		t.Run(name, func(t *testing.T) {
			var fresh, noBase int
			for seed := range uint64(longtest.Count(12, 40)) {
				f, nb := runLossy(t, seedTable(t), seed, 200, nm)
				fresh, noBase = fresh+f, noBase+nb
				f, nb = runLossy(t, telemetryTable, seed, 120, nm)
				fresh, noBase = fresh+f, noBase+nb
			}
			if fresh == 0 {
				t.Fatal("no update ever applied")
			}
			t.Logf("%d fresh updates applied, %d dropped for want of their base", fresh, noBase)
		})
	}
}
