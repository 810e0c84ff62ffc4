package netcore

import (
	"testing"
	"time"
)

func newEst() Estimator { return NewEstimator(time.Second, 10*time.Second) }

// R (docs/requirements.md): samples 100 ms then 140 ms → SRTT 105 ms,
// RTTVAR 47.5 ms, RTO 295 ms.
func TestReferenceFilterValues_R(t *testing.T) {
	e := newEst()
	e.Sample(ms(100), true)
	e.Sample(ms(140), true)
	near(t, "SRTT", e.SRTT(), ms(105), 2*time.Millisecond)
	near(t, "RTTVAR", e.RTTVAR(), ms(47.5), 2*time.Millisecond)
	near(t, "RTO", e.RTO(), ms(295), 2*time.Millisecond)
	// Our filter works in nanoseconds, so it is exact.
	if e.SRTT() != ms(105) || e.RTTVAR() != ms(47.5) || e.RTO() != ms(295) {
		t.Errorf("got %v/%v/%v, want exactly 105ms/47.5ms/295ms", e.SRTT(), e.RTTVAR(), e.RTO())
	}
}

func TestSampleOfResentPacketIsNotClean_T2(t *testing.T) {
	e := newEst()
	e.Sample(ms(100), true)
	if e.Sample(ms(900), false) {
		t.Error("a sample of a resent packet changed a measured estimate")
	}
	if e.SRTT() != ms(100) || e.RTTVAR() != ms(50) || e.State() != Measured {
		t.Errorf("after unclean sample: SRTT %v RTTVAR %v state %v", e.SRTT(), e.RTTVAR(), e.State())
	}
}

func TestSmoothingFollowsRFC6298_T3(t *testing.T) {
	e := newEst()
	e.Sample(ms(100), true)
	if e.SRTT() != ms(100) || e.RTTVAR() != ms(50) {
		t.Fatalf("first sample: SRTT %v RTTVAR %v, want 100ms/50ms", e.SRTT(), e.RTTVAR())
	}
	e.Sample(ms(200), true)
	// RTTVAR uses the old SRTT: 3/4·50 + 1/4·|100−200| = 62.5. Updating
	// SRTT first would give 3/4·50 + 1/4·|112.5−200| = 59.375.
	if e.RTTVAR() != ms(62.5) {
		t.Errorf("RTTVAR = %v, want 62.5ms (updated before SRTT)", e.RTTVAR())
	}
	if e.SRTT() != ms(112.5) {
		t.Errorf("SRTT = %v, want 112.5ms (one eighth of the way)", e.SRTT())
	}
}

func TestProvisionalEstimateIsReplacedNotAveraged_T4(t *testing.T) {
	e := newEst()
	if !e.Sample(ms(900), false) || e.State() != Provisional {
		t.Fatalf("first ack of a resent packet: state %v, want provisional", e.State())
	}
	if e.SRTT() != ms(900) || e.RTTVAR() != ms(450) || e.RTO() != ms(2700) {
		t.Errorf("provisional SRTT %v RTTVAR %v RTO %v, want 900/450/2700ms", e.SRTT(), e.RTTVAR(), e.RTO())
	}
	// Only the first ack makes a provisional estimate.
	if e.Sample(ms(300), false) || e.SRTT() != ms(900) {
		t.Errorf("a second unclean sample moved the provisional estimate to %v", e.SRTT())
	}
	e.Sample(ms(100), true)
	if e.State() != Measured || e.SRTT() != ms(100) || e.RTTVAR() != ms(50) || e.RTO() != ms(300) {
		t.Errorf("after first clean sample: %v SRTT %v RTTVAR %v RTO %v, want measured 100/50/300",
			e.State(), e.SRTT(), e.RTTVAR(), e.RTO())
	}
}

func TestRTOIsHeldBetween100msAnd4000ms_T7(t *testing.T) {
	for _, c := range []struct {
		sample, want time.Duration
	}{
		{ms(1), minRTO},            // 1 + 4·0.5 = 3 ms → 100 ms
		{ms(30), minRTO},           // 30 + 60 = 90 ms → 100 ms
		{ms(40), ms(120)},          // 40 + 80
		{ms(1000), ms(3000)},       // 1000 + 2000
		{ms(1500), maxRTO},         // 1500 + 3000 → 4000 ms
		{10 * time.Second, maxRTO}, // far above
	} {
		e := newEst()
		e.Sample(c.sample, true)
		if e.RTO() != c.want {
			t.Errorf("sample %v: RTO %v, want %v", c.sample, e.RTO(), c.want)
		}
	}
}

func TestUnmeasuredUsesSessionValues_T9(t *testing.T) {
	for _, c := range []struct {
		retry, conn, wantConn time.Duration
	}{
		{time.Second, 10 * time.Second, 10 * time.Second},
		{250 * time.Millisecond, time.Second, minConnTimeout},
		{2 * time.Second, time.Minute, maxConnTimeout},
	} {
		e := NewEstimator(c.retry, c.conn)
		if e.State() != Unmeasured || e.RTO() != c.retry || e.ConnTimeout() != c.wantConn {
			t.Errorf("fixed %v/%v: state %v RTO %v conn %v, want unmeasured %v/%v",
				c.retry, c.conn, e.State(), e.RTO(), e.ConnTimeout(), c.retry, c.wantConn)
		}
		// No estimate, no doubling (T12 applies only with an estimate).
		if e.resent(c.retry) || e.RTO() != c.retry {
			t.Errorf("an unmeasured link's RTO doubled")
		}
	}
}

func TestConnTimeoutFormulaAndClamps_T10(t *testing.T) {
	for _, c := range []struct {
		name    string
		samples []time.Duration
		want    time.Duration
	}{
		// 8·50+250 = 650, 4·RTO(150) = 600 → 650 → held at 2 s.
		{"floor", []time.Duration{ms(50)}, minConnTimeout},
		// SRTT 400, RTTVAR 200, RTO 1200: 4·1200 = 4800 beats 8·400+250 = 3450.
		{"4·RTO", []time.Duration{ms(400)}, ms(4800)},
		// Steady 400 ms: RTTVAR shrinks, RTO falls toward the floor, 8·SRTT+250 wins.
		{"8·SRTT", steady(ms(400), 40), 0},
		// SRTT 5 s: 8·5000+250 → held at 30 s.
		{"ceiling", []time.Duration{5 * time.Second}, maxConnTimeout},
	} {
		e := newEst()
		for _, s := range c.samples {
			e.Sample(s, true)
		}
		want := c.want
		if want == 0 {
			want = max(8*e.SRTT()+250*time.Millisecond, 4*e.RTO())
			if 8*e.SRTT()+250*time.Millisecond <= 4*e.RTO() {
				t.Fatalf("%s: setup does not make 8·SRTT+250ms the larger term", c.name)
			}
		}
		if e.ConnTimeout() != want {
			t.Errorf("%s: conn timeout %v, want %v (SRTT %v RTO %v)", c.name, e.ConnTimeout(), want, e.SRTT(), e.RTO())
		}
	}
	// The doubled RTO counts: 4·RTO after doubling.
	e := newEst()
	e.Sample(ms(400), true) // RTO 1200
	e.resent(e.RTO())       // RTO 2400
	if e.ConnTimeout() != ms(9600) {
		t.Errorf("after doubling: conn timeout %v, want 4·2400ms = 9.6s", e.ConnTimeout())
	}
}

func steady(d time.Duration, n int) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = d
	}
	return s
}

func TestRTODoublesOncePerRound_T12(t *testing.T) {
	e := newEst()
	e.Sample(ms(100), true) // RTO 300
	first := e.RTO()
	// Three packets first sent under RTO 300 ms are resent in one round:
	// only the first resend doubles.
	if !e.resent(first) || e.RTO() != ms(600) {
		t.Fatalf("first resend: RTO %v, want 600ms", e.RTO())
	}
	if e.resent(first) || e.resent(first) || e.RTO() != ms(600) {
		t.Errorf("later resends of the same round doubled again: RTO %v", e.RTO())
	}
	// A packet first sent under the doubled RTO starts the next round.
	if !e.resent(ms(600)) || e.RTO() != ms(1200) {
		t.Errorf("next round: RTO %v, want 1200ms", e.RTO())
	}
	e.resent(ms(1200))
	e.resent(ms(2400))
	if e.RTO() != maxRTO || e.resent(maxRTO) || e.RTO() != maxRTO {
		t.Errorf("RTO %v, want held at 4000ms", e.RTO())
	}
	// A provisional estimate doubles too.
	p := newEst()
	p.Sample(ms(200), false) // provisional, RTO 600
	if !p.resent(ms(600)) || p.RTO() != ms(1200) {
		t.Errorf("provisional link: RTO %v, want 1200ms", p.RTO())
	}
}

func TestCleanSampleRecomputesDoubledRTO_T13(t *testing.T) {
	e := newEst()
	e.Sample(ms(100), true)
	e.Sample(ms(140), true) // SRTT 105, RTTVAR 47.5, RTO 295
	e.resent(e.RTO())
	e.resent(e.RTO())
	if e.RTO() != ms(1180) || e.SRTT() != ms(105) {
		t.Fatalf("after two rounds: RTO %v SRTT %v, want 1180ms and SRTT kept at 105ms", e.RTO(), e.SRTT())
	}
	e.Sample(ms(105), true) // RTTVAR 3/4·47.5 = 35.625, SRTT 105
	if want := ms(105) + 4*ms(35.625); e.RTO() != want {
		t.Errorf("after a clean sample: RTO %v, want %v (recomputed)", e.RTO(), want)
	}
}

func TestResetForgetsEstimate_T5(t *testing.T) {
	e := newEst()
	e.Sample(ms(100), true)
	e.resent(e.RTO())
	e.Reset()
	if e.State() != Unmeasured || e.SRTT() != 0 || e.RTO() != time.Second || e.ConnTimeout() != 10*time.Second {
		t.Errorf("after reset: %v SRTT %v RTO %v conn %v", e.State(), e.SRTT(), e.RTO(), e.ConnTimeout())
	}
	e.Sample(ms(80), true)
	if e.SRTT() != ms(80) || e.RTTVAR() != ms(40) {
		t.Errorf("first sample after reset: SRTT %v RTTVAR %v, want 80/40 (a fresh start)", e.SRTT(), e.RTTVAR())
	}
}
