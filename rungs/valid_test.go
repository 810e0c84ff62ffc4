package rungs

import "testing"

// eventTargets are the targets a master sends: every rung and every
// extended look-ahead of rung 10 (S2, S4).
func eventTargets() []Timing {
	var out []Timing
	for n := 1; n <= Rungs; n++ {
		out = append(out, RungTiming(n))
	}
	for la := RungTiming(Rungs).LookAhead + extendedStep; la <= MaxLookAhead; la += extendedStep {
		out = append(out, Timing{SendPeriod: Rungs, LookAhead: la})
	}
	return out
}

// The timings the package builds are all valid event targets.
func TestConstructedTimingsValid_S1(t *testing.T) {
	for _, tm := range append(eventTargets(), StartTiming(), fallbackTiming(), WidestTiming()) {
		if !tm.Valid() {
			t.Errorf("%v is not Valid", tm)
		}
	}
	for ow := 0; ow <= 300; ow++ {
		if tm := needFrames(ow); !tm.Valid() {
			t.Errorf("NeedFrames(%d) = %v, not Valid", ow, tm)
		}
	}
}

// stage runs s from frame on until it is steady (or 2000 frames have
// passed), calling check with every timing in force and visit on every
// frame whose Advance changed it.
func stage(s *Schedule, from int, check func(f int, in Timing), visit func(f int)) {
	for f := from; f < from+2000; f++ {
		changed := s.Advance(f)
		check(f, s.InForce())
		if changed && visit != nil {
			visit(f)
		}
		if !s.Staged() && s.InForce() == s.Target() && f > from {
			return
		}
	}
}

// One timing event from any target to any other: every timing in force on
// the way — the switch, the activation of a staged decrease and each of its
// steps — is a valid event target (S12, S14). Staging steps the look-ahead
// down in whole new send periods and never below the target's.
func TestStagedTimingsValid_S12(t *testing.T) {
	targets := eventTargets()
	for _, a := range targets {
		for _, b := range targets {
			for _, at := range []int{1000, 1001, 1003, 1007} { // send-frame phases
				s := NewSchedule(a, 30)
				s.Change(at, b, 30)
				stage(s, at, func(f int, in Timing) {
					if !in.Valid() {
						t.Fatalf("%v → %v at frame %d: frame %d holds %v, not Valid", a, b, at, f, in)
					}
				}, nil)
				if s.InForce() != b {
					t.Fatalf("%v → %v: ends at %v", a, b, s.InForce())
				}
			}
		}
	}
}

// A second event executing while the first is staged, on its first frame
// or a few frames after one of the first eight changes of the timing in
// force (the switch, the activation, the first steps: where the look-ahead
// is longest): every timing in force is ValidInForce. A few are not Valid
// — the look-ahead passes 250 when a longer send period rounds it up before
// it has stepped down — and 9/252 is one, from 10/250 through 7/245.
func TestStagedTimingsValidInForce_S12(t *testing.T) {
	targets := eventTargets()
	past250 := map[Timing]bool{}
	for _, a := range targets {
		for _, b := range targets {
			base := NewSchedule(a, 30)
			base.Change(1000, b, 30)
			branch := map[int]bool{1000: true}
			changes := 0 // the first changes hold the longest look-aheads
			for f := 1000; f < 3000; f++ {
				if branch[f] {
					for _, c := range targets {
						s := *base // the schedule as it stands before frame f
						s.Change(f, c, 30)
						stage(&s, f, func(g int, in Timing) {
							if !in.ValidInForce() {
								t.Fatalf("%v → %v → %v (at %d): frame %d holds %v, not ValidInForce", a, b, c, f, g, in)
							}
							if !in.Valid() {
								past250[in] = true
							}
						}, nil)
						if s.InForce() != c {
							t.Fatalf("%v → %v → %v: ends at %v", a, b, c, s.InForce())
						}
					}
				}
				if base.Advance(f) && changes < 8 {
					changes++
					for _, d := range []int{1, 4} {
						branch[f+d] = true
					}
				}
				if !base.Staged() && f > 1000 {
					break
				}
			}
		}
	}
	if !past250[Timing{9, 252}] {
		t.Errorf("9/252 never in force; past 250: %v", past250)
	}
	for tm := range past250 {
		if tm.LookAhead <= MaxLookAhead {
			t.Errorf("%v in force: not Valid, yet inside 250", tm)
		}
	}
}

// The chain that holds 9/252: 10/250 decreases to 7/21, which activates at
// 7/245 (one old send period less, rounded up to sevens); a change to 9/27
// before its first step keeps the look-ahead and rounds it up to nines.
func TestInForcePast250_S12(t *testing.T) {
	s := NewSchedule(WidestTiming(), 30)
	s.Change(1000, RungTiming(7), 30)
	act, ok := s.pendingActivation()
	if !ok || act != 1260 {
		t.Fatalf("activation %d, %v; want 1260 (1000 + 250 rounded up to 70)", act, ok)
	}
	for f := 1000; f <= act; f++ {
		s.Advance(f)
	}
	if s.InForce() != (Timing{7, 245}) {
		t.Fatalf("at activation %v, want 7/245", s.InForce())
	}
	s.Change(act+1, RungTiming(9), 30)
	s.Advance(act + 1)
	in := s.InForce()
	if in != (Timing{9, 252}) || in.Valid() || !in.ValidInForce() || in.Tier() != Bad {
		t.Fatalf("in force %v: Valid %v ValidInForce %v Tier %v; want 9/252, in force only, Bad", in, in.Valid(), in.ValidInForce(), in.Tier())
	}
}
