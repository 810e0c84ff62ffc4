package netcore

import "time"

// Retry-timeout and connection-timeout limits (T7, T9, T10, T12 in
// docs/requirements.md).
const (
	minRTO         = 100 * time.Millisecond  // T7: floor of a measured link's RTO
	maxRTO         = 4000 * time.Millisecond // T7, T12: ceiling, also of a doubled RTO
	minConnTimeout = 2 * time.Second         // T9, T10
	maxConnTimeout = 30 * time.Second        // T9, T10
	// connTimeoutSlack is the 250 ms added to 8·SRTT (T10).
	connTimeoutSlack = 250 * time.Millisecond
)

// LinkState is what a link's round-trip estimate is worth (T4), plus Bad
// when a packet has outlived the connection timeout (T11).
type LinkState uint8

const (
	// Unmeasured: no ack yet; retries use the session's fixed retry
	// interval and connection timeout (T9).
	Unmeasured LinkState = iota
	// Provisional: estimate from the first ack, possibly of a resent
	// packet (T4). Paces retries; still unmeasured for synchronization.
	Provisional
	// Measured: at least one clean sample (T2, T3).
	Measured
	// Bad: a packet is older than the connection timeout (T11). Only
	// LinkStats.State reports it; the estimator itself is never Bad.
	Bad
)

func (s LinkState) String() string {
	switch s {
	case Unmeasured:
		return "unmeasured"
	case Provisional:
		return "provisional"
	case Measured:
		return "measured"
	case Bad:
		return "bad"
	}
	return "invalid"
}

// Estimator is one link's round-trip filter and retry timeout (T2–T4, T7,
// T9, T10, T12, T13, and T5's reset). It is pure: samples come in as
// durations and it never reads a clock, so tests assert exact values.
//
// The zero value is not usable; build one with NewEstimator.
type Estimator struct {
	state  LinkState
	srtt   time.Duration
	rttvar time.Duration
	rto    time.Duration // current RTO, possibly doubled (T12)

	// Session-fixed values for a link without an estimate (T9).
	fixedRetry time.Duration
	fixedConn  time.Duration
}

// NewEstimator returns an unmeasured estimator that uses the session's
// fixed retry interval and connection timeout until it has an estimate
// (T9). The connection timeout is held to [2 s, 30 s]; a retry interval
// ≤ 0 is taken as 1 s.
func NewEstimator(retryInterval, connTimeout time.Duration) Estimator {
	if retryInterval <= 0 {
		retryInterval = time.Second
	}
	return Estimator{fixedRetry: retryInterval, fixedConn: clamp(connTimeout, minConnTimeout, maxConnTimeout)}
}

// State is Unmeasured, Provisional or Measured.
func (e *Estimator) State() LinkState { return e.state }

// SRTT is the smoothed round trip; 0 while unmeasured.
func (e *Estimator) SRTT() time.Duration { return e.srtt }

// RTTVAR is the round-trip variation; 0 while unmeasured.
func (e *Estimator) RTTVAR() time.Duration { return e.rttvar }

// RTO is the retry timeout in force: the fixed retry interval while
// unmeasured (T9), otherwise SRTT + 4·RTTVAR held to [100 ms, 4000 ms]
// (T7), or its doubled value after a round of resends (T12, T13).
func (e *Estimator) RTO() time.Duration {
	if e.state == Unmeasured {
		return e.fixedRetry
	}
	return e.rto
}

// ConnTimeout is the connection timeout in force: the session's fixed value
// while unmeasured (T9), otherwise max(8·SRTT + 250 ms, 4·RTO) held to
// [2 s, 30 s] (T10), using the current — possibly doubled — RTO.
func (e *Estimator) ConnTimeout() time.Duration {
	if e.state == Unmeasured {
		return e.fixedConn
	}
	return clamp(max(8*e.srtt+connTimeoutSlack, 4*e.rto), minConnTimeout, maxConnTimeout)
}

// Sample feeds the round trip of an acked packet, measured from its first
// transmission. clean is true only for a packet sent exactly once (T2,
// Karn's rule). It reports whether the estimate changed.
//
//   - A clean sample on an unmeasured or provisional link sets SRTT = R and
//     RTTVAR = R/2: the first clean sample replaces a provisional estimate
//     rather than averaging with it (T3, T4).
//   - Later clean samples follow RFC 6298, RTTVAR before SRTT (T3), and
//     recompute RTO, undoing any doubling (T13).
//   - A sample that is not clean sets a provisional estimate on an
//     unmeasured link (T4) and is ignored otherwise.
func (e *Estimator) Sample(rtt time.Duration, clean bool) bool {
	if rtt < 0 {
		rtt = 0
	}
	switch {
	case !clean && e.state != Unmeasured:
		return false
	case !clean:
		e.first(rtt)
		e.state = Provisional
	case e.state != Measured:
		e.first(rtt)
		e.state = Measured
	default:
		diff := e.srtt - rtt
		if diff < 0 {
			diff = -diff
		}
		e.rttvar = (3*e.rttvar + diff) / 4
		e.srtt = (7*e.srtt + rtt) / 8
		e.rto = clamp(e.srtt+4*e.rttvar, minRTO, maxRTO)
	}
	return true
}

func (e *Estimator) first(rtt time.Duration) {
	e.srtt = rtt
	e.rttvar = rtt / 2
	e.rto = clamp(e.srtt+4*e.rttvar, minRTO, maxRTO)
}

// resent records that a packet first sent under retry timeout firstRTO has
// just been resent. On a link with an estimate, it doubles the RTO (up to
// 4000 ms) if firstRTO is at least the current RTO, so the RTO doubles once
// per round of resends and not once per resent packet (T12). It reports
// whether the RTO doubled.
func (e *Estimator) resent(firstRTO time.Duration) bool {
	if e.state == Unmeasured || firstRTO < e.rto || e.rto >= maxRTO {
		return false
	}
	e.rto = min(2*e.rto, maxRTO)
	return true
}

// Reset forgets the estimate: the link is unmeasured again and goes back to
// the session's fixed values (T5).
func (e *Estimator) Reset() {
	e.state = Unmeasured
	e.srtt, e.rttvar, e.rto = 0, 0, 0
}

func clamp(d, lo, hi time.Duration) time.Duration {
	return max(lo, min(d, hi))
}
