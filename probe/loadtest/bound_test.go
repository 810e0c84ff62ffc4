package loadtest

import (
	"testing"
	"time"
)

// script is a tester that keeps its own rules: it asks, then sends a probe
// every 10 ms and a pace command every 100 ms asking for the cap in the
// download hold, carrying the nonce its pace function gives, whatever the
// time, and never stops. The peer's end answers it over a path without
// delay, one step of the virtual clock a millisecond.
type script struct {
	t       *testing.T
	peer    *Test
	nonce   uint32        // the peer's latest nonce, from its echoes and load
	loadAt  time.Duration // the peer's last load datagram
	loadBit float64       // the peer's load on the path, bits
	loads   int
	over    *Result
	// hear, when set, says whether the tester hears the peer at now (the
	// echoes and load that carry the nonce).
	hear func(now time.Duration) bool
	// paceNonce is the nonce the pace commands carry; nil: the latest
	// heard.
	paceNonce func() uint32
	rate      float64       // the rate the paces ask for; 0 is the cap
	lastAt    time.Duration // the peer's last message of any kind
	overAt    time.Duration
	now       time.Duration
}

const scriptCap = 10e6

func newScript(t *testing.T) *script {
	sc := &script{t: t}
	req := appendMessage(nil, message{kind: kindRequest, id: testID, version: protoVersion, rate: scriptCap})
	sc.peer = New(Config{Request: req, Cap: scriptCap, Send: sc.fromPeer, Done: func(r Result) { sc.over, sc.overAt = &r, sc.now }})
	if sc.peer == nil {
		t.Fatal("the request does not make a peer")
	}
	return sc
}

func (sc *script) fromPeer(b []byte) {
	m, err := decode(b)
	if err != nil {
		sc.t.Fatalf("the peer sent % x: %v", b[:min(len(b), 20)], err)
	}
	sc.lastAt = sc.now
	if m.kind == kindLoad {
		sc.loadAt, sc.loadBit = sc.now, sc.loadBit+wireBits(len(b))
		sc.loads++
	}
	if (m.kind == kindEcho || m.kind == kindLoad) && (sc.hear == nil || sc.hear(sc.now)) {
		sc.nonce = m.nonce
	}
}

// run drives the script until limit.
func (sc *script) run(limit time.Duration) {
	var probe uint32
	for sc.now = 0; sc.now <= limit; sc.now += time.Millisecond {
		ms := sc.now / time.Millisecond
		if ms%10 == 0 {
			sc.peer.Receive(sc.now, appendMessage(nil, message{kind: kindProbe, id: testID, seq: probe, stamp: uint32(sc.now / time.Microsecond)}))
			probe++
		}
		if ms%100 == 50 {
			n := sc.nonce
			if sc.paceNonce != nil {
				n = sc.paceNonce()
			}
			rate := sc.rate
			if rate == 0 {
				rate = scriptCap
			}
			sc.peer.Receive(sc.now, appendMessage(nil, message{kind: kindPace, id: testID, phase: phaseDownHold, rate: uint64(rate), size: maxMessage, nonce: n}))
		}
		if d, ok := sc.peer.NextDeadline(); ok && d <= sc.now {
			sc.peer.Tick(sc.now)
		}
	}
}

// A tester that keeps pacing does not keep the peer: it stops serving
// 25 s after its answer, on its own clock, and sends nothing after that.
func TestPeerStopsAtItsBoundWhateverTheTesterSends(t *testing.T) {
	sc := newScript(t)
	sc.rate = scriptCap / 4 // under the budget for the whole 25 s: the clock ends it
	sc.run(40 * time.Second)
	if peerBound != 25*time.Second {
		t.Errorf("a peer serves a test %v, want the 25 s docs/load-test.md gives", peerBound)
	}
	if sc.over == nil || str(sc.over.Stopped) != "cancelled" || sc.overAt != 25*time.Second {
		t.Fatalf("the peer's end %+v at %v, want it over at 25 s, stopped cancelled", sc.over, sc.overAt)
	}
	if sc.loadAt < 24*time.Second || sc.loadAt > 25*time.Second {
		t.Errorf("the peer's last load left at %v, want it to run until its bound of 25 s", sc.loadAt)
	}
	if sc.lastAt > 25*time.Second {
		t.Errorf("the peer sent a message at %v, after its bound of 25 s", sc.lastAt)
	}
}

// However long and fast a tester asks for load, the peer sends at most its
// budget — the cap for 13 s, on the path — in one test.
func TestPeerSendsAtMostItsBudget(t *testing.T) {
	sc := newScript(t)
	sc.run(40 * time.Second)
	budget := scriptCap * 13 // bits: the cap for 13 s (docs/load-test.md)
	if sc.loadBit > budget {
		t.Errorf("the peer sent %.0f bits of load, more than its budget of %.0f", sc.loadBit, budget)
	}
	if sc.loadBit < 0.99*budget {
		t.Errorf("the peer sent %.0f bits of load asked for at the cap throughout: the budget (%.0f) should have ended it", sc.loadBit, budget)
	}
	if end := time.Duration(sc.loadBit / scriptCap * float64(time.Second)); sc.loadAt > end+200*time.Millisecond {
		t.Errorf("the last load left at %v, want when the budget ran out, about %v", sc.loadAt, end)
	}
	if sc.peer.Ignored() != 0 {
		t.Errorf("%d paces ignored: every one carried the peer's latest nonce", sc.peer.Ignored())
	}
}

// A pace without one of the peer's two latest nonces is ignored: it starts
// no load, keeps none going and keeps the test alive no longer.
func TestPaceWithoutTheNonceIsIgnored(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nonce func(sc *script) uint32
	}{
		{"none", func(*script) uint32 { return 0 }},
		{"a guess", func(sc *script) uint32 { return sc.nonce ^ 0x5a5a5a5a }},
		{"one off", func(sc *script) uint32 { return sc.nonce + 1 }},
	} {
		sc := newScript(t)
		sc.paceNonce = func() uint32 { return tc.nonce(sc) }
		sc.run(5 * time.Second)
		if sc.loads != 0 {
			t.Errorf("%s: the peer sent %d load datagrams to paces without its nonce", tc.name, sc.loads)
		}
		if got := sc.peer.Ignored(); got != 50 {
			t.Errorf("%s: %d paces ignored, want all 50", tc.name, got)
		}
	}
}

// A tester that stops hearing the peer loses its nonce: once the peer has
// drawn two new ones, the paces carry a stale one, and the load stops a
// second later (no pace heard).
func TestPeerStopsWhenTheTesterStopsHearingIt(t *testing.T) {
	const deaf = 4 * time.Second
	sc := newScript(t)
	sc.hear = func(now time.Duration) bool { return now < deaf }
	sc.run(20 * time.Second)
	if sc.loads == 0 {
		t.Fatal("no load before the tester went deaf")
	}
	// The nonce heard last was drawn at the latest at deaf; it is refused
	// from two draws on, at most 2 × nonceEvery later, and the load stops
	// silentFor after the last pace taken.
	if limit := deaf + 2*nonceEvery + silentFor + 10*time.Millisecond; sc.loadAt > limit {
		t.Errorf("the peer sent load until %v to a tester deaf since %v, want it stopped by %v", sc.loadAt, deaf, limit)
	}
	if sc.peer.Ignored() == 0 {
		t.Error("no pace ignored: the stale nonce was taken")
	}
}

// Neither end of a complete test sends more load than its budget, the cap
// for 13 s on the path, even when the cap ends every ramp and the
// tester's stop reaches the peer late.
func TestCompleteTestStaysWithinTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		capRate int64
		path    bottleneck
	}{
		{"1 Mbit/s cap, ramps at the cap throughout", 1e6, bottleneck{delay: 40 * oneMS}},
		{"5 Mbit/s cap on a 10 Mbit/s line", 5e6, queue(10*mbit, 100*oneMS)},
		{"50 Mbit/s cap, no bottleneck", 0, bottleneck{delay: 5 * oneMS}},
	} {
		w := newWorld(t, tc.path, tc.path, tc.capRate, Config{})
		end := w.run(40 * time.Second)
		w.drive(end+2*time.Second, false)
		if w.result == nil || w.result.Stopped != nil {
			t.Errorf("%s: result %+v, want a complete test", tc.name, w.result)
			continue
		}
		capRate := float64(tc.capRate)
		if capRate == 0 {
			capRate = DefaultCap
		}
		for side, name := range []string{"tester", "peer"} {
			bits := 0.0
			for _, s := range w.sent[side] {
				if s.kind == kindLoad {
					bits += s.bits
				}
			}
			if budget := capRate * 13; bits > budget || bits < 0.5*budget {
				t.Errorf("%s: the %s sent %.2f MB of load, want at most its budget of %.2f MB (and a test's worth)",
					tc.name, name, bits/8e6, budget/8e6)
			}
		}
	}
}
