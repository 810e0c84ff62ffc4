// Package impair is lagscope's network impairment model: what a bad link
// does to a datagram (delay, uniform jitter, loss, duplication, reordering,
// Gilbert–Elliott burst loss), decided one datagram at a time from a seeded
// random stream.
//
// The model (Path) is pure: it reads no clock and no global random source,
// so the simulated network (netcore/simnet) and the live proxy make the same
// decisions from the same seed. Proxy is the package's one live part: a UDP
// proxy on the wall clock that applies a Path to each direction (`lagscope
// impair`). It applies its loss to
// datagrams that the sender has already numbered, so a receiver observes a
// real gap (L2). What it drops is loss that was asked for, never loss
// that was measured (L7): Stats reports it under its own name and nothing
// here feeds Expected/Missing.
package impair

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Profile says what one direction of a link does to datagrams.
type Profile struct {
	// Delay is the one-way delay added to every datagram.
	Delay time.Duration
	// Jitter spreads each datagram's delay uniformly over Delay ± Jitter,
	// drawn afresh per datagram. A delay that would fall below zero is
	// delivered at once. Jitter larger than the gap between two datagrams
	// reorders them, as it does on a real link.
	Jitter time.Duration
	// Loss is the chance that a datagram is dropped, independent of every
	// other datagram (and in addition to Burst, when both are set).
	Loss float64
	// Dup is the chance that a delivered datagram arrives twice; the second
	// copy draws its own jitter.
	Dup float64
	// Reorder is the chance that a delivered datagram is held back by
	// ReorderDelay, so that datagrams sent after it overtake it.
	Reorder float64
	// ReorderDelay is how long a reordered datagram is held back. It must be
	// positive when Reorder is.
	ReorderDelay time.Duration
	// Burst adds Gilbert–Elliott burst loss; nil turns it off.
	Burst *GilbertElliott
}

// GilbertElliott is a two-state Markov loss model: a link in its good state
// loses datagrams with chance LossGood, in its bad state with chance LossBad,
// and moves between the states once per datagram. A bad spell lasts
// 1/PBadToGood datagrams on average; the link spends
// PGoodToBad/(PGoodToBad+PBadToGood) of its datagrams in the bad state.
type GilbertElliott struct {
	PGoodToBad, PBadToGood float64
	LossGood, LossBad      float64
}

// meanLoss is the long-run share of datagrams this model loses.
func (g GilbertElliott) meanLoss() float64 {
	if g.PGoodToBad+g.PBadToGood == 0 {
		return g.LossGood // never leaves the good state it starts in
	}
	bad := g.PGoodToBad / (g.PGoodToBad + g.PBadToGood)
	return bad*g.LossBad + (1-bad)*g.LossGood
}

// Validate reports the first value of p that makes no sense. Profiles from
// outside (flags, scenario files) should be validated before use: NewPath
// and SetProfile panic on an invalid profile, as they are programming errors
// there.
func (p Profile) Validate() error {
	switch {
	case p.Delay < 0:
		return fmt.Errorf("delay %v is negative", p.Delay)
	case p.Jitter < 0:
		return fmt.Errorf("jitter %v is negative", p.Jitter)
	case p.ReorderDelay < 0:
		return fmt.Errorf("reorder delay %v is negative", p.ReorderDelay)
	case p.Reorder > 0 && p.ReorderDelay == 0:
		return errors.New("reordering needs a positive reorder delay")
	}
	if err := checkChance("loss", p.Loss); err != nil {
		return err
	}
	if err := checkChance("duplication", p.Dup); err != nil {
		return err
	}
	if err := checkChance("reordering", p.Reorder); err != nil {
		return err
	}
	if b := p.Burst; b != nil {
		for _, c := range []struct {
			name string
			v    float64
		}{
			{"burst good-to-bad chance", b.PGoodToBad},
			{"burst bad-to-good chance", b.PBadToGood},
			{"burst good-state loss", b.LossGood},
			{"burst bad-state loss", b.LossBad},
		} {
			if err := checkChance(c.name, c.v); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkChance(name string, v float64) error {
	if !(v >= 0 && v <= 1) { // also rejects NaN
		return fmt.Errorf("%s %v is not a chance between 0 and 1", name, v)
	}
	return nil
}

// String describes p in one line, e.g. "delay 40ms ± 5ms, loss 2%".
func (p Profile) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "delay %v", p.Delay)
	if p.Jitter > 0 {
		fmt.Fprintf(&b, " ± %v", p.Jitter)
	}
	if p.Loss > 0 {
		fmt.Fprintf(&b, ", loss %s", percent(p.Loss))
	}
	if p.Dup > 0 {
		fmt.Fprintf(&b, ", dup %s", percent(p.Dup))
	}
	if p.Reorder > 0 {
		fmt.Fprintf(&b, ", reorder %s (held %v)", percent(p.Reorder), p.ReorderDelay)
	}
	if g := p.Burst; g != nil {
		fmt.Fprintf(&b, ", burst loss %s (bad spells of %.1f datagrams losing %s)",
			percent(g.meanLoss()), meanSpell(g.PBadToGood), percent(g.LossBad))
	}
	return b.String()
}

func meanSpell(pBadToGood float64) float64 {
	if pBadToGood == 0 {
		return 0
	}
	return 1 / pBadToGood
}

func percent(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v*100), "0"), ".") + "%"
}

// Stats counts what a Path did. Every number is impairment that was asked
// for, not loss anyone observed (L7).
type Stats struct {
	Offered    uint64 // datagrams handed to Decide
	Dropped    uint64 // datagrams Decide dropped (independent and burst loss)
	Duplicated uint64 // extra copies Decide added
	Reordered  uint64 // datagrams held back by ReorderDelay
}

// Add returns the element-wise sum, for totals over several paths.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		Offered:    s.Offered + o.Offered,
		Dropped:    s.Dropped + o.Dropped,
		Duplicated: s.Duplicated + o.Duplicated,
		Reordered:  s.Reordered + o.Reordered,
	}
}

// Path is one direction of one link: a Profile and the random stream and
// burst state it draws from. A Path is not safe for concurrent use.
type Path struct {
	prof    Profile
	burst   GilbertElliott // copy of *prof.Burst, so callers may reuse theirs
	burstOn bool
	bad     bool // Gilbert–Elliott state; a path starts good
	rng     *rand.Rand
	stats   Stats
}

// pcgStream is the PCG stream selector. Any constant works; fixing it means
// the seed alone decides the stream.
const pcgStream = 0x6c61677363706521 // "lagscpe!"

// NewPath returns a path applying p, drawing from a PCG stream seeded with
// seed. It panics if p is invalid (see Profile.Validate).
func NewPath(p Profile, seed uint64) *Path {
	path := &Path{rng: rand.New(rand.NewPCG(seed, pcgStream))}
	path.SetProfile(p)
	return path
}

// SetProfile changes what the path does from the next datagram on. The random
// stream carries on where it was, so a timeline of profile changes is as
// reproducible as a single profile. Turning burst loss off returns the
// Gilbert–Elliott state to good. It panics if p is invalid.
func (p *Path) SetProfile(prof Profile) {
	if err := prof.Validate(); err != nil {
		panic("impair: " + err.Error())
	}
	p.prof = prof
	p.burstOn = prof.Burst != nil
	if p.burstOn {
		p.burst = *prof.Burst
		p.prof.Burst = &p.burst
	} else {
		p.burst = GilbertElliott{}
		p.bad = false
	}
}

// Profile returns the profile in force.
func (p *Path) Profile() Profile {
	prof := p.prof
	if p.burstOn {
		g := p.burst
		prof.Burst = &g
	}
	return prof
}

// Stats returns what the path has done so far.
func (p *Path) Stats() Stats { return p.stats }

// drawsPerDatagram is how many numbers Decide draws for every datagram,
// whatever the profile. A fixed count means two runs whose profiles differ in
// one setting (say, delay) see the same losses and duplicates at the same
// datagrams, which keeps comparisons between profiles fair.
const drawsPerDatagram = 7

// Decide settles the fate of the next datagram and appends to dst[:0] the
// delay of each copy to deliver: none when the datagram is dropped, two when
// it is duplicated. With a reused dst of capacity 2 it does not allocate.
func (p *Path) Decide(dst []time.Duration) []time.Duration {
	var u [drawsPerDatagram]float64
	for i := range u {
		u[i] = p.rng.Float64()
	}
	uState, uBurstLoss, uLoss, uJitter, uReorder, uDup, uDupJitter := u[0], u[1], u[2], u[3], u[4], u[5], u[6]

	dst = dst[:0]
	p.stats.Offered++

	lost := uLoss < p.prof.Loss
	if p.burstOn {
		if p.bad {
			p.bad = uState >= p.burst.PBadToGood
		} else {
			p.bad = uState < p.burst.PGoodToBad
		}
		chance := p.burst.LossGood
		if p.bad {
			chance = p.burst.LossBad
		}
		lost = lost || uBurstLoss < chance
	}
	if lost {
		p.stats.Dropped++
		return dst
	}

	d := p.jittered(uJitter)
	if uReorder < p.prof.Reorder {
		d += p.prof.ReorderDelay
		p.stats.Reordered++
	}
	dst = append(dst, d)
	if uDup < p.prof.Dup {
		dst = append(dst, p.jittered(uDupJitter))
		p.stats.Duplicated++
	}
	return dst
}

// jittered maps a uniform draw u in [0,1) to a delay in
// [Delay-Jitter, Delay+Jitter), never below zero.
func (p *Path) jittered(u float64) time.Duration {
	d := p.prof.Delay + time.Duration((2*u-1)*float64(p.prof.Jitter))
	return max(d, 0)
}
