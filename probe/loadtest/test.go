package loadtest

import (
	"crypto/rand"
	"io"
	"time"
)

// Config sets up one end of a load test.
type Config struct {
	// ID names the test in every message. The tester picks it (at
	// random, so that a stale message of another test never matches); the
	// peer's end takes it from the request.
	ID uint32
	// Cap is the most either direction's load may carry, in bit/s of
	// datagrams on the path; 0 is 50 Mbit/s. The test runs at the lower of
	// the tester's and the peer's caps.
	Cap int64
	// Request, when set, makes this end the peer's: the request message as
	// it arrived. New returns nil when it is not a load-test request.
	Request []byte
	// Refuse (the peer's end): this machine takes no load tests.
	Refuse bool
	// Busy (the peer's end): another test runs here, or the tester's last
	// test here ended less than a minute ago.
	Busy bool
	// Relayed: the pair's path goes through the relay. A tester sends
	// nothing and stops "relayed"; a peer refuses so.
	Relayed bool
	// Rand (the peer's end) is where its nonces come from; nil is
	// crypto/rand. A pace command must carry one of the latest two, so
	// they must be unpredictable to anyone who does not hear the peer.
	Rand io.Reader
	// Send hands one message to the pair's link, to travel unnumbered
	// (outside every loss total, L2). msg is valid only during the call.
	Send func(msg []byte)
	// Done is called once, when this end is over. The tester's Result is
	// the test's; the peer's holds only Stopped.
	Done func(Result)
}

// Test is one end of a load test: the tester, which asks for the test,
// runs its phases and grades them, or the peer, which answers, echoes the
// probes, counts the tester's load and sends load at the rate the tester
// asks for. It is a sans-I/O state machine: it reads no clock and never
// blocks; now is the time since the world started.
type Test struct {
	t *tester
	r *responder
}

// New makes the tester's end, or, with cfg.Request set, the peer's (nil
// when the request does not decode). Nothing is sent before the first
// Tick.
func New(cfg Config) *Test {
	if cfg.Cap <= 0 {
		cfg.Cap = DefaultCap
	}
	if cfg.Send == nil {
		cfg.Send = func([]byte) {}
	}
	if cfg.Done == nil {
		cfg.Done = func(Result) {}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Request == nil {
		return &Test{t: newTester(cfg)}
	}
	m, err := decode(cfg.Request)
	if err != nil || m.kind != kindRequest {
		return nil
	}
	return &Test{r: newResponder(cfg, m)}
}

// Tick sends what is due at now and moves the test on.
func (x *Test) Tick(now time.Duration) {
	if x.t != nil {
		x.t.tick(now)
	} else {
		x.r.tick(now)
	}
}

// Receive takes a message from the other end. It reports whether the
// message is this test's; a message that does not decode, or names
// another test, changes nothing.
func (x *Test) Receive(now time.Duration, msg []byte) bool {
	if x.t != nil {
		return x.t.receive(now, msg)
	}
	return x.r.receive(now, msg)
}

// NextDeadline is when Tick must next run; false once the test is over.
func (x *Test) NextDeadline() (time.Duration, bool) {
	if x.t != nil {
		return x.t.deadline()
	}
	return x.r.deadline()
}

// Ignored is how many of the other end's messages this end has refused
// although they named the test: paces without one of the peer's latest
// two nonces. A conforming tester sends none; a session counts them.
func (x *Test) Ignored() int {
	if x.r == nil {
		return 0
	}
	return x.r.ignored
}

// Nonce is the nonce this end holds: the peer's end its current one (0
// before it has answered), the tester's the latest it heard from the peer
// (0 before it has heard one).
func (x *Test) Nonce() uint32 {
	if x.t != nil {
		return x.t.nonce
	}
	return x.r.nonce
}

// Close stops the test from this end at now: the other end is told, and
// the result says "cancelled". A test that is over stays as it ended.
func (x *Test) Close(now time.Duration) {
	if x.t != nil {
		x.t.stop(now, stopCancelled)
	} else {
		x.r.stop(now, stopCancelled)
	}
}
