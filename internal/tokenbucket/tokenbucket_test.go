package tokenbucket

import (
	"testing"
	"time"
)

// The bucket starts full at its first use, refills at its rate up to its
// burst, and refuses what it does not hold.
func TestTakeRefill(t *testing.T) {
	b := Bucket{Rate: 20, Burst: 5}
	now := time.Hour
	for i := range 5 {
		if !b.Take(now, 1) {
			t.Fatalf("take %d of a full burst of 5 refused", i+1)
		}
	}
	if b.Take(now, 1) {
		t.Fatal("an empty bucket admitted a take")
	}
	if b.Take(now+49*time.Millisecond, 1) || !b.Take(now+50*time.Millisecond, 1) {
		t.Fatal("one token at 20 a second did not come after 50 ms")
	}
	if b.Take(now-time.Second, 1) {
		t.Fatal("a now before the last refill added tokens")
	}
	b.Refill(now + time.Minute)
	if b.Tokens() != 5 || !b.Full() {
		t.Fatalf("a minute's refill left %v tokens, want the burst of 5", b.Tokens())
	}
}

// A spend goes into debt, down to its floor, and the refill pays the debt
// before Fits admits anything again; a full bucket admits one spend larger
// than its burst.
func TestDebt(t *testing.T) {
	b := Bucket{Rate: 1000, Burst: 100}
	if !b.Fits(0, 5000) {
		t.Fatal("a full bucket refused a spend above its burst")
	}
	b.Spend(0, 5000, -2000)
	if b.Tokens() != -2000 {
		t.Fatalf("tokens %v after a spend past the floor, want -2000", b.Tokens())
	}
	if got := b.Until(10); got < 2010*time.Millisecond-time.Nanosecond || got > 2010*time.Millisecond {
		t.Fatalf("Until(10) = %v, want 2.01s (to the nanosecond the float allows)", got)
	}
	if b.Fits(time.Second, 10) {
		t.Error("admitted while 1 s of refill has not paid the debt")
	}
	if !b.Fits(2010*time.Millisecond, 10) || b.Fits(2010*time.Millisecond, 11) {
		t.Errorf("after 2.01 s: %v tokens, want 10", b.Tokens())
	}
	b.Resize(1000, 5)
	if b.Tokens() != 5 || b.Rate != 1000 || b.Burst != 5 {
		t.Errorf("Resize to a burst of 5 left %v tokens", b.Tokens())
	}
}

// BenchmarkFitsSpend is a bucket's per-datagram cost on the relay's path.
func BenchmarkFitsSpend(b *testing.B) {
	k := Bucket{Rate: 1e6, Burst: 1e5}
	now := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		now += time.Microsecond
		if k.Fits(now, 1200) {
			k.Spend(now, 1200, -1e5)
		}
	}
}
