package loadtest

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// bottleneck is one direction of a simulated path: a FIFO queue of
// buffer bytes draining at rate bit/s (0: no bottleneck), dropping what
// does not fit, then a fixed one-way delay. A datagram's size is its
// message plus the carrier's bytes.
type bottleneck struct {
	rate   float64
	buffer int
	delay  time.Duration
	busy   time.Duration // when the queue is empty again
	cut    bool          // drops everything
}

// admit is when a datagram of size bytes that arrives at now is
// delivered, or false when it is dropped.
func (b *bottleneck) admit(now time.Duration, size int) (time.Duration, bool) {
	if b.cut {
		return 0, false
	}
	if b.rate == 0 {
		return now + b.delay, true
	}
	backlog := max(b.busy-now, 0).Seconds() * b.rate / 8
	if backlog+float64(size) > float64(b.buffer) {
		return 0, false
	}
	b.busy = max(b.busy, now) + time.Duration(float64(8*size)/b.rate*float64(time.Second))
	return b.busy + b.delay, true
}

type arrival struct {
	at  time.Duration
	msg []byte
}

type sent struct {
	at   time.Duration
	kind byte
	bits float64
}

// world runs a tester and its peer on the virtual clock over two
// bottlenecks: up (tester to peer) and down.
type world struct {
	t        *testing.T
	now      time.Duration
	up, down bottleneck
	tester   *Test
	peer     *Test
	peerCfg  Config
	toPeer   []arrival
	toTester []arrival
	sent     [2][]sent // by the tester, by the peer
	result   *Result
	peerRes  *Result
	peerGone bool
	// drop, when set, loses the peer's messages it returns true for.
	drop func(msg []byte) bool
	// at is an action the test runs once the clock reaches atTime.
	at     func(w *world)
	atTime time.Duration
}

const testID = 0x0A0B0C0D

func newWorld(t *testing.T, up, down bottleneck, capRate int64, peer Config) *world {
	w := &world{t: t, up: up, down: down, peerCfg: peer}
	w.tester = New(Config{ID: testID, Cap: capRate, Send: w.fromTester, Done: func(r Result) { w.result = &r }})
	w.peerCfg.Send = w.fromPeer
	w.peerCfg.Done = func(r Result) { w.peerRes = &r }
	return w
}

func (w *world) fromTester(msg []byte) {
	w.sent[0] = append(w.sent[0], sent{w.now, msg[0], wireBits(len(msg))})
	if at, ok := w.up.admit(w.now, len(msg)+carrierOverhead); ok {
		w.toPeer = append(w.toPeer, arrival{at, append([]byte(nil), msg...)})
	}
}

func (w *world) fromPeer(msg []byte) {
	w.sent[1] = append(w.sent[1], sent{w.now, msg[0], wireBits(len(msg))})
	if w.drop != nil && w.drop(msg) {
		return
	}
	if at, ok := w.down.admit(w.now, len(msg)+carrierOverhead); ok {
		w.toTester = append(w.toTester, arrival{at, append([]byte(nil), msg...)})
	}
}

// deliverToPeer hands a message to the peer's end, making it from a
// request when there is none running (as a session would).
func (w *world) deliverToPeer(msg []byte) {
	if w.peerGone {
		return
	}
	if w.peer != nil {
		if _, live := w.peer.NextDeadline(); live {
			w.peer.Receive(w.now, msg)
			return
		}
	}
	cfg := w.peerCfg
	cfg.Request = msg
	if p := New(cfg); p != nil {
		w.peer = p
		p.Tick(w.now)
	}
}

// run drives the world until the tester's end is over, and returns when
// that was; the test fails if that is not by limit.
func (w *world) run(limit time.Duration) time.Duration { return w.drive(limit, true) }

// drive runs the world until limit, or, with untilDone, until the
// tester's end is over.
func (w *world) drive(limit time.Duration, untilDone bool) time.Duration {
	const never = time.Duration(math.MaxInt64)
	for range 20_000_000 {
		if untilDone && w.result != nil {
			return w.now
		}
		next := never
		if d, ok := w.tester.NextDeadline(); ok {
			next = d
		}
		if w.peer != nil && !w.peerGone {
			if d, ok := w.peer.NextDeadline(); ok {
				next = min(next, d)
			}
		}
		if len(w.toPeer) > 0 {
			next = min(next, w.toPeer[0].at)
		}
		if len(w.toTester) > 0 {
			next = min(next, w.toTester[0].at)
		}
		if w.at != nil {
			next = min(next, w.atTime)
		}
		if next > limit {
			if untilDone {
				w.t.Fatalf("the world stopped at %v (next %v) before the test ended", w.now, next)
			}
			return w.now
		}
		w.now = max(w.now, next)
		w.step()
	}
	w.t.Fatal("the world ran out of steps")
	return 0
}

// step does everything due at w.now: the scripted action, arrivals, then
// the two ends' ticks.
func (w *world) step() {
	if w.at != nil && w.now >= w.atTime {
		f := w.at
		w.at = nil
		f(w)
	}
	for len(w.toPeer) > 0 && w.toPeer[0].at <= w.now {
		a := w.toPeer[0]
		w.toPeer = w.toPeer[1:]
		w.deliverToPeer(a.msg)
	}
	for len(w.toTester) > 0 && w.toTester[0].at <= w.now {
		a := w.toTester[0]
		w.toTester = w.toTester[1:]
		w.tester.Receive(w.now, a.msg)
	}
	if d, ok := w.tester.NextDeadline(); ok && d <= w.now {
		w.tester.Tick(w.now)
	}
	if w.peer != nil && !w.peerGone {
		if d, ok := w.peer.NextDeadline(); ok && d <= w.now {
			w.peer.Tick(w.now)
		}
	}
}

// maxWindow is the most bits one side sent in any 1 s window.
func maxWindow(ss []sent) float64 {
	best, sum, lo := 0.0, 0.0, 0
	for _, s := range ss {
		sum += s.bits
		for s.at-ss[lo].at >= time.Second {
			sum -= ss[lo].bits
			lo++
		}
		best = max(best, sum)
	}
	return best
}

func (w *world) kinds(side int) map[byte]int {
	out := map[byte]int{}
	for _, s := range w.sent[side] {
		out[s.kind]++
	}
	return out
}

func logResult(t *testing.T, end time.Duration, r *Result) {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ended at %v: %s", end, b)
	if end > 30*time.Second {
		t.Errorf("the test took %v, more than 30 s", end)
	}
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func num(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

const (
	mbit  = 1e6
	oneMS = time.Millisecond
)

// queue is a bottleneck of rate bit/s holding buffer's worth of it.
func queue(rate float64, buffer time.Duration) bottleneck {
	return bottleneck{rate: rate, buffer: int(rate / 8 * buffer.Seconds()), delay: 10 * oneMS}
}

func TestDeepUploadQueueGradesBadly(t *testing.T) {
	w := newWorld(t, queue(10*mbit, 500*oneMS), queue(100*mbit, 20*oneMS), 0, Config{Cap: 1e9})
	end := w.run(40 * time.Second)
	r := w.result
	logResult(t, end, r)
	if r == nil || r.Stopped != nil {
		t.Fatalf("result %+v, want a complete test", r)
	}
	if end > 30*time.Second {
		t.Errorf("the test took %v, more than 30 s", end)
	}
	up := r.Upload
	if up == nil || (str(up.Grade) != "D" && str(up.Grade) != "F") {
		t.Fatalf("upload %+v: want grade D or F behind a 500 ms queue", up)
	}
	if a := num(up.AddedMS); a < 300 || a > 560 {
		t.Errorf("upload added %v ms, want about the queue's 500 ms", a)
	}
	if hold := w.tester.t.up.hold; hold < 10.4*mbit || hold > 11.3*mbit {
		t.Errorf("upload hold rate %.2f Mbit/s, want about 110 %% of 10", hold/mbit)
	}
	if up.Capped {
		t.Error("upload capped: the bottleneck, not the cap, ended its ramp")
	}
	if m := num(up.Mbps); m < 9.3 || m > 10.1 {
		t.Errorf("upload throughput %v Mbit/s, want about 10", m)
	}
	if l := num(up.Loss); l < 0.03 || l > 0.15 {
		t.Errorf("upload loss %v, want about the 9 %% a 110 %% hold drops", l)
	}
	down := r.Download
	if down == nil || !down.Capped || str(down.Grade) != "A+" {
		t.Errorf("download %+v: want capped at 50 Mbit/s on a 100 Mbit/s line, A+", down)
	}
	if m := num(down.Mbps); m < 45 || m > 51 {
		t.Errorf("download throughput %v Mbit/s, want about the 50 Mbit/s cap", m)
	}
	if r.Both == nil || num(r.Both.AddedMS) < 300 {
		t.Errorf("both %+v: the upload queue fills in both too", r.Both)
	}
	if idle := num(r.IdleRTTMS); math.Abs(idle-20) > 1 {
		t.Errorf("idle round trip %v ms, want the path's 20", idle)
	}
	w.drive(end+time.Second, false) // the stop reaches the peer
	if w.peerRes == nil || w.peerRes.Stopped != nil {
		t.Errorf("peer's end %+v: want it over, complete", w.peerRes)
	}
}

func TestDeepDownloadQueueGradesBadly(t *testing.T) {
	w := newWorld(t, queue(100*mbit, 20*oneMS), queue(20*mbit, 300*oneMS), 0, Config{})
	end := w.run(40 * time.Second)
	r := w.result
	logResult(t, end, r)
	if r == nil || r.Download == nil || r.Upload == nil {
		t.Fatalf("result %+v", r)
	}
	if g := str(r.Download.Grade); g != "C" && g != "D" {
		t.Errorf("download grade %s (added %v ms), want C or D behind a 300 ms queue", g, num(r.Download.AddedMS))
	}
	if hold := w.tester.t.down.hold; hold < 20.8*mbit || hold > 22.6*mbit {
		t.Errorf("download hold %.2f Mbit/s, want about 110 %% of 20", hold/mbit)
	}
	if str(r.Upload.Grade) != "A+" || !r.Upload.Capped {
		t.Errorf("upload %+v: want A+, capped at 50 on a 100 Mbit/s line", r.Upload)
	}
}

func TestShallowQueueGradesWell(t *testing.T) {
	w := newWorld(t, queue(10*mbit, 10*oneMS), queue(10*mbit, 10*oneMS), 0, Config{})
	end := w.run(40 * time.Second)
	r := w.result
	logResult(t, end, r)
	if r == nil || r.Stopped != nil || r.Upload == nil || r.Download == nil {
		t.Fatalf("result %+v", r)
	}
	for name, d := range map[string]*DirResult{"upload": r.Upload, "download": r.Download} {
		if g := str(d.Grade); g != "A+" && g != "A" {
			t.Errorf("%s grade %s (added %v ms), want A+ or A behind a 10 ms buffer", name, g, num(d.AddedMS))
		}
		if m := num(d.Mbps); m < 9 || m > 10.1 {
			t.Errorf("%s throughput %v Mbit/s, want about 10", name, m)
		}
	}
}

func TestCapBelowBottleneck(t *testing.T) {
	const capRate = 5e6
	w := newWorld(t, queue(10*mbit, 500*oneMS), queue(10*mbit, 500*oneMS), capRate, Config{})
	end := w.run(40 * time.Second)
	r := w.result
	logResult(t, end, r)
	if r == nil || r.Upload == nil || r.Download == nil {
		t.Fatalf("result %+v", r)
	}
	if !r.Upload.Capped || !r.Download.Capped {
		t.Errorf("upload capped %v, download capped %v: want both, the cap is below the line", r.Upload.Capped, r.Download.Capped)
	}
	for side, name := range []string{"tester", "peer"} {
		if most := maxWindow(w.sent[side]); most > 1.1*capRate {
			t.Errorf("the %s sent %.2f Mbit in a second, more than the cap's 110 %%", name, most/mbit)
		}
	}
	if g := str(r.Upload.Grade); g != "A+" {
		t.Errorf("upload grade %s: under the bottleneck no queue forms", g)
	}
}

func TestPeerCapLowersTheTest(t *testing.T) {
	w := newWorld(t, queue(100*mbit, 20*oneMS), queue(100*mbit, 20*oneMS), 0, Config{Cap: 8e6})
	w.run(40 * time.Second)
	if r := w.result; r == nil || r.Upload == nil || !r.Upload.Capped || num(r.Upload.Mbps) > 8.1 {
		t.Fatalf("result %+v: want the peer's 8 Mbit/s cap to hold", r)
	}
	if most := maxWindow(w.sent[0]); most > 1.1*8e6 {
		t.Errorf("the tester sent %.2f Mbit in a second above the peer's cap", most/mbit)
	}
}

// A refused request: the tester sends nothing but its request, the peer
// nothing but its answer.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		peer Config
		want string
	}{
		{Config{Refuse: true}, "peer refused"},
		{Config{Busy: true}, "busy"},
		{Config{Relayed: true}, "relayed"},
	} {
		w := newWorld(t, queue(10*mbit, 50*oneMS), queue(10*mbit, 50*oneMS), 0, tc.peer)
		end := w.run(5 * time.Second)
		if w.result == nil || str(w.result.Stopped) != tc.want {
			t.Errorf("%+v: result %+v, want stopped %q", tc.peer, w.result, tc.want)
			continue
		}
		if r := w.result; r.IdleRTTMS != nil || r.Upload != nil || r.Download != nil || r.Both != nil {
			t.Errorf("%+v: a refused test has figures: %+v", tc.peer, r)
		}
		if k := w.kinds(0); len(k) != 1 || k[kindRequest] == 0 {
			t.Errorf("%+v: the tester sent %v, want only requests", tc.peer, k)
		}
		if k := w.kinds(1); len(k) != 1 || k[kindAnswer] == 0 {
			t.Errorf("%+v: the peer sent %v, want only answers", tc.peer, k)
		}
		if end > 100*oneMS {
			t.Errorf("%+v: the refusal took %v", tc.peer, end)
		}
	}
}

func TestRelayedTesterSendsNothing(t *testing.T) {
	var got *Result
	n := 0
	x := New(Config{ID: 1, Relayed: true, Send: func([]byte) { n++ }, Done: func(r Result) { got = &r }})
	x.Tick(0)
	if got == nil || str(got.Stopped) != "relayed" || n != 0 {
		t.Fatalf("result %+v after %d messages, want stopped relayed and nothing sent", got, n)
	}
	if _, ok := x.NextDeadline(); ok {
		t.Error("a relayed test still asks for ticks")
	}
}

func TestPeerSilentStopsPeerLeft(t *testing.T) {
	w := newWorld(t, bottleneck{delay: 10 * oneMS}, bottleneck{delay: 10 * oneMS}, 0, Config{})
	const gone = 11500 * oneMS // in the download phases
	w.at, w.atTime = func(w *world) { w.peerGone, w.up.cut, w.down.cut = true, true, true }, gone
	end := w.run(20 * time.Second)
	if w.result == nil || str(w.result.Stopped) != "peer left" {
		t.Fatalf("result %+v, want stopped peer left", w.result)
	}
	// The last message heard left the peer before it went, 10 ms away.
	if end < gone+silentFor-50*oneMS || end > gone+silentFor+20*oneMS {
		t.Errorf("the test ended at %v, want 1 s after the peer went at %v", end, gone)
	}
	if w.result.IdleRTTMS == nil || w.result.Upload == nil || w.result.Download != nil {
		t.Errorf("result %+v: want the idle and upload figures measured before it went, and no download", w.result)
	}
}

// A peer that echoes but never reports the upload load: the tester stops
// a second into the upload ramp.
func TestMissingReportsStopPeerLeft(t *testing.T) {
	w := newWorld(t, queue(10*mbit, 50*oneMS), queue(10*mbit, 50*oneMS), 0, Config{})
	w.drop = func(msg []byte) bool { return msg[0] == kindReport }
	end := w.run(10 * time.Second)
	if w.result == nil || str(w.result.Stopped) != "peer left" {
		t.Fatalf("result %+v, want stopped peer left", w.result)
	}
	ramp := w.tester.t.at[phaseUpRamp]
	if ramp == 0 || end != ramp+silentFor {
		t.Errorf("the test ended at %v, want 1 s after the upload ramp began at %v", end, ramp)
	}
	if w.result.IdleRTTMS == nil || w.result.Upload != nil {
		t.Errorf("result %+v: want the idle round trip and no upload", w.result)
	}
}

func TestNoAnswerStopsPeerLeft(t *testing.T) {
	w := newWorld(t, bottleneck{cut: true}, bottleneck{}, 0, Config{})
	end := w.run(10 * time.Second)
	if w.result == nil || str(w.result.Stopped) != "peer left" || end != askFor {
		t.Fatalf("result %+v at %v, want stopped peer left after %v", w.result, end, askFor)
	}
	if k := w.kinds(0); k[kindRequest] != int(askFor/askEvery) || len(k) != 1 {
		t.Errorf("the tester sent %v, want a request every %v", k, askEvery)
	}
}

func TestCancel(t *testing.T) {
	w := newWorld(t, queue(10*mbit, 100*oneMS), queue(10*mbit, 100*oneMS), 0, Config{})
	w.at, w.atTime = func(w *world) { w.tester.Close(w.now) }, 12*time.Second
	end := w.run(20 * time.Second)
	if w.result == nil || str(w.result.Stopped) != "cancelled" || end != 12*time.Second {
		t.Fatalf("result %+v at %v, want stopped cancelled at 12 s", w.result, end)
	}
	last := w.sent[0][len(w.sent[0])-1]
	if last.kind != kindStop || last.at != end {
		t.Errorf("the tester's last message is kind %#x at %v, want the stop at %v", last.kind, last.at, end)
	}
	// The peer hears the stop and stops sending.
	w.drive(end+2*time.Second, false)
	if w.peerRes == nil || str(w.peerRes.Stopped) != "cancelled" {
		t.Errorf("peer's end %+v, want stopped cancelled", w.peerRes)
	}
	for _, s := range w.sent[1] {
		if s.at > end+100*oneMS {
			t.Fatalf("the peer sent kind %#x at %v, after the stop reached it", s.kind, s.at)
		}
	}
}

func TestPeerCancelStopsTester(t *testing.T) {
	w := newWorld(t, queue(10*mbit, 100*oneMS), queue(10*mbit, 100*oneMS), 0, Config{})
	w.at, w.atTime = func(w *world) { w.peer.Close(w.now) }, 6*time.Second
	end := w.run(20 * time.Second)
	if w.result == nil || str(w.result.Stopped) != "cancelled" || end > 6*time.Second+200*oneMS {
		t.Fatalf("result %+v at %v, want stopped cancelled soon after 6 s", w.result, end)
	}
}

// A peer whose tester falls silent stops its load within a second and
// ends, whatever the tester last asked for.
func TestPeerStopsWithoutTester(t *testing.T) {
	w := newWorld(t, queue(100*mbit, 20*oneMS), queue(100*mbit, 20*oneMS), 0, Config{})
	var cutAt time.Duration
	w.at, w.atTime = func(w *world) {
		cutAt = w.now
		w.up.cut = true // the tester's machine is gone: its stop is lost
		w.tester.Close(w.now)
	}, 15*time.Second
	w.drive(25*time.Second, false)
	if w.peerRes == nil || str(w.peerRes.Stopped) != "peer left" {
		t.Fatalf("peer's end %+v, want stopped peer left", w.peerRes)
	}
	for _, s := range w.sent[1] {
		if s.at > cutAt+silentFor {
			t.Fatalf("the peer sent kind %#x at %v, more than a second after the tester went at %v", s.kind, s.at, cutAt)
		}
	}
}

// The phases take at most 25 s, and the peer serves a test 25 s from its
// answer: the 23 s of phases after it, with time to spare. One direction
// carries load for at most 13 s, the budget's length.
func TestPhasesFitTheBounds(t *testing.T) {
	if testBound != 25*time.Second {
		t.Fatalf("the phases take up to %v, want the 25 s docs/load-test.md gives", testBound)
	}
	if after := testBound - askFor; peerBound < after+time.Second {
		t.Fatalf("a peer serves %v, too little for the %v of phases after its answer", peerBound, after)
	}
	if loadedFor != 13*time.Second {
		t.Fatalf("a direction is loaded %v, want the 13 s the budget is", loadedFor)
	}
}
