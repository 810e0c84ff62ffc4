// Package tokenbucket is the one token bucket of the tree: the session's
// handshake, relay and watcher budgets (probe/session) and the endpoint's
// budget of answers to a peer's hop probes (netcore).
//
// It runs on the caller's clock (now comes in as an argument; nothing here
// reads the wall clock), takes no lock (each bucket belongs to one
// machine's goroutine, and the relay spends from one per datagram), and
// allocates nothing. Unlike golang.org/x/time/rate it lets a full bucket
// admit one spend larger than its burst and carries the debt, bounded, so a
// message bigger than the burst still goes, as often as the rate pays for
// it. It imports nothing of ours, so every layer may use it.
package tokenbucket

import "time"

// Bucket holds up to Burst tokens, refills at Rate tokens a second, and
// starts full at its first use. The zero Bucket has no rate and no burst:
// set both before the first use.
type Bucket struct {
	Rate, Burst float64
	tokens      float64
	at          time.Duration // when tokens was last refilled
	set         bool          // the first use has filled the bucket
}

// Take spends n tokens if the bucket holds them, after refilling it for
// the time since the last refill. A now before that refill adds nothing.
func (b *Bucket) Take(now time.Duration, n float64) bool {
	b.Refill(now)
	if b.tokens < n {
		return false
	}
	b.tokens -= n
	return true
}

// Refill adds the tokens of the time since the last refill (the first
// call fills the bucket), as Take, Fits and Spend do first.
func (b *Bucket) Refill(now time.Duration) {
	if !b.set {
		b.tokens, b.at, b.set = b.Burst, now, true
	}
	if now > b.at {
		b.tokens = min(b.Burst, b.tokens+b.Rate*(now-b.at).Seconds())
		b.at = now
	}
}

// Fits reports whether n tokens are there to spend now, or the bucket is
// full: a full bucket admits one spend larger than its burst, which leaves
// it in debt (Spend).
func (b *Bucket) Fits(now time.Duration, n float64) bool {
	b.Refill(now)
	return b.tokens >= n || b.Full()
}

// Spend takes n tokens whether or not they are there: what has gone out
// has cost them. Tokens below zero are a debt the refill pays first, down
// to floor at most (a spend past it is forgotten).
func (b *Bucket) Spend(now time.Duration, n, floor float64) {
	b.Refill(now)
	b.tokens = max(b.tokens-n, floor)
}

// Tokens is what the bucket held at its last refill (negative: a debt).
func (b *Bucket) Tokens() float64 { return b.tokens }

// Full reports whether the bucket held its burst at its last refill.
func (b *Bucket) Full() bool { return b.tokens >= b.Burst }

// Resize gives the bucket a new rate and burst, keeping its tokens but no
// more than the new burst.
func (b *Bucket) Resize(rate, burst float64) {
	b.Rate, b.Burst = rate, burst
	b.tokens = min(b.tokens, burst)
}

// Until is how long the refill takes, from the last one, to bring the
// bucket to n tokens (to its burst if n is more); negative when they are
// there already.
func (b *Bucket) Until(n float64) time.Duration {
	need := min(n, b.Burst) - b.tokens
	return time.Duration(need / b.Rate * float64(time.Second))
}
