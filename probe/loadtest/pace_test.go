package loadtest

import (
	"math"
	"testing"
	"time"
)

// feed runs a ramp against a receiver that gets min(offered, bottleneck),
// lag steps late, and returns it when it ends.
func feed(t *testing.T, capRate, bottleneck float64, lag int) ramp {
	r := newRamp(0, capRate)
	var got sample
	var offered []float64
	total := 0.0 // bits received
	for k := 0; k < 100 && !r.done; k++ {
		offered = append(offered, r.rate)
		rate := 0.0
		if i := len(offered) - 1 - lag; i >= 0 {
			rate = min(offered[i], bottleneck)
		}
		total += rate * rampStep.Seconds()
		got = received(got.at+rampStep, total)
		r.step(r.stepEnd, got, true)
	}
	if !r.done {
		t.Fatal("the ramp never ended")
	}
	return r
}

// received is the sample of a receiver that got total bits in full-size
// datagrams by at.
func received(at time.Duration, total float64) sample {
	count := uint32(total / wireBits(maxMessage))
	return sample{at: at, count: count, bytes: uint64(total/8) - uint64(count)*carrierOverhead}
}

func TestRampFindsTheBottleneck(t *testing.T) {
	for _, tc := range []struct {
		capRate, bottleneck float64
		lag                 int
		capped              bool
		hold                float64
	}{
		{50e6, 10e6, 0, false, 11e6},
		{50e6, 10e6, 1, false, 11e6},
		{50e6, 2e6, 0, false, 2.2e6},
		{50e6, 48e6, 0, true, 50e6},  // within 5 % of the cap: the cap held it
		{50e6, 400e6, 0, true, 50e6}, // the line is faster than the cap
		{5e6, 10e6, 1, true, 5e6},
		{50e6, 40e6, 0, false, 44e6},
		{50e6, 46e6, 0, false, 50e6}, // 110 % of it is above the cap
	} {
		r := feed(t, tc.capRate, tc.bottleneck, tc.lag)
		if r.capped != tc.capped || math.Abs(r.hold-tc.hold) > 0.03*tc.hold {
			t.Errorf("cap %.0f, bottleneck %.0f, lag %d: capped %v, hold %.2f Mbit/s; want %v, %.2f",
				tc.capRate/1e6, tc.bottleneck/1e6, tc.lag, r.capped, r.hold/1e6, tc.capped, tc.hold/1e6)
		}
		if r.rate > tc.capRate {
			t.Errorf("cap %.0f: the ramp offered %.1f Mbit/s", tc.capRate/1e6, r.rate/1e6)
		}
	}
}

// The ramp ends within 3 s whatever it hears, nothing at all included.
func TestRampEndsWithinThreeSeconds(t *testing.T) {
	r := newRamp(0, 1e9)
	for k := 0; k < 100 && !r.done; k++ {
		r.step(r.stepEnd, sample{}, false)
	}
	if !r.done || r.stepEnd > rampMax {
		t.Fatalf("the ramp ran to %v (done %v)", r.stepEnd, r.done)
	}
	if r.capped || r.hold != r.rate {
		t.Errorf("with nothing received: capped %v, hold %.1f, rate %.1f", r.capped, r.hold, r.rate)
	}
	// A received rate still rising at 3 s (+10 % a step, far below the
	// cap) holds at 110 % of the best received.
	r = newRamp(0, 50e6)
	total, rate := 0.0, 1e6
	for k := 0; k < 100 && !r.done; k++ {
		total += rate * rampStep.Seconds()
		rate *= 1.1
		r.step(r.stepEnd, received(r.stepEnd, total), true)
	}
	if r.stepEnd > rampMax || r.capped || math.Abs(r.hold-holdOver*r.best) > 1 {
		t.Errorf("rising at 3 s: ended at %v, capped %v, hold %.1f, best %.1f", r.stepEnd, r.capped, r.hold, r.best)
	}
}

// A step with fewer than minJudged datagrams is not judged: a slow start
// cannot look flat.
func TestRampIgnoresThinSteps(t *testing.T) {
	r := newRamp(0, 1e6)
	got := sample{}
	for k := 0; k < 6; k++ {
		got.at += rampStep
		got.count += 2
		got.bytes += 2 * maxMessage
		r.step(r.stepEnd, got, true)
	}
	if r.done {
		t.Error("thin steps ended the ramp as flat")
	}
}

// The pacer keeps its rate, and a late wake-up catches up at most maxLag.
func TestPacer(t *testing.T) {
	var p pacer
	p.set(time.Second, 10e6)
	interval := time.Duration(wireBits(maxMessage) / 10e6 * float64(time.Second))
	n := 0
	for now := time.Second; now < 2*time.Second; now += 100 * time.Microsecond {
		for p.due(now) {
			p.sent(now, maxMessage)
			n++
		}
	}
	if want := int(time.Second / interval); n < want || n > want+1 {
		t.Errorf("sent %d in a second at 10 Mbit/s, want %d", n, want)
	}
	burst := 0
	late := p.next + time.Second
	for p.due(late) {
		p.sent(late, maxMessage)
		burst++
	}
	if limit := int(maxLag/interval) + 1; burst > limit {
		t.Errorf("a wake-up 1 s late sent %d at once, want at most %d", burst, limit)
	}
	p.set(late, 0)
	if p.due(late + time.Hour) {
		t.Error("a stopped pacer is due")
	}
}

func TestWindow(t *testing.T) {
	w := window{settle: time.Second}
	for i := uint32(0); i <= 300; i++ {
		at := time.Duration(i) * 10 * time.Millisecond
		// Every tenth datagram is lost: numbers run 1.1 per arrival.
		w.add(sample{at: at, bytes: uint64(i) * 1000, count: i, highest: i + i/10})
	}
	if loss, ok := w.loss(); !ok || math.Abs(loss-1.0/11) > 0.01 {
		t.Errorf("loss %v, want about 1/11", loss)
	}
	rate, ok := w.rate()
	want := (1000*8 + 8*carrierOverhead) * 100.0
	if !ok || math.Abs(rate-want) > 1 {
		t.Errorf("rate %v, want %v", rate, want)
	}
	if w.base.at != time.Second {
		t.Errorf("the window starts at %v, want after the settling second", w.base.at)
	}
	var empty window
	if _, ok := empty.rate(); ok {
		t.Error("an empty window has a rate")
	}
}

// On a busy machine the pacer is woken late, every 10 ms instead of at
// each datagram's time: it still sends its rate, catching up each time.
func TestPacerKeepsItsRateOnCoarseWakeUps(t *testing.T) {
	const rate = 5e6
	var p pacer
	p.set(0, rate)
	bits := 0.0
	for now := time.Duration(0); now < 2*time.Second; now += 10 * time.Millisecond {
		for i := 0; i < maxBurst && p.due(now); i++ {
			p.sent(now, maxMessage)
			bits += wireBits(maxMessage)
		}
	}
	if got := bits / 2; got < 0.97*rate || got > 1.01*rate {
		t.Errorf("woken every 10 ms the pacer sent %.2f Mbit/s, want its %.0f", got/1e6, rate/1e6)
	}
}

// Phase is what a session asks on every Tick of a test: it allocates
// nothing (L6), unlike Progress.
func TestPhaseAllocatesNothing(t *testing.T) {
	x := New(Config{ID: 1})
	x.Tick(0)
	if n := testing.AllocsPerRun(100, func() { _ = x.Phase() }); n != 0 {
		t.Errorf("Phase allocates %v times a call", n)
	}
	if got, want := x.Phase(), x.Progress().Phase; got != want {
		t.Errorf("Phase %q, Progress's %q", got, want)
	}
}
