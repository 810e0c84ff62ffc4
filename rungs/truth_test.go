package rungs

import "testing"

// TestRateEventLeavesStagedDecrease_S12_S14_S15: a `rate` event (the
// target kept, only the frame rate moved) executing while a decrease is
// staged changes the rate at once and must neither restart the decrease's
// wait nor pause its steps.
func TestRateEventLeavesStagedDecrease_S12_S14_S15(t *testing.T) {
	start, target := Timing{10, 70}, Timing{9, 27}
	// Without the rate event: activation at roundUp(1000+70, lcm(10, 9)) =
	// 1080 as 9/63, then one 9-frame period per send frame down to 9/27.
	const plain = "1080:9/63@30 1089:9/54@30 1098:9/45@30 1107:9/36@30 1116:9/27@30"
	if _, got := runSchedule(t, start, []change{{1000, target, 30}}, 990, 1300); got != plain {
		t.Fatalf("without a rate event: %q, want %q", got, plain)
	}

	t.Run("while waiting", func(t *testing.T) {
		s := NewSchedule(start, 30)
		for f := 990; f <= 1300; f++ {
			switch f {
			case 1000:
				s.Change(f, target, 30)
			case 1050:
				s.Change(f, target, 20)
				if a, ok := s.pendingActivation(); !ok || a != 1080 {
					t.Fatalf("frame 1050: activation %d (waiting %v), want 1080 still", a, ok)
				}
			}
			s.Advance(f)
			switch f {
			case 1060:
				if s.FPS() != 20 || s.InForce() != start {
					t.Fatalf("frame 1060: %v@%d, want 10/70@20 (the rate applies when its event executes)", s.InForce(), s.FPS())
				}
			case 1080:
				if s.InForce() != (Timing{9, 63}) || s.FPS() != 20 {
					t.Fatalf("frame 1080: %v@%d, want the decrease to activate as 9/63 at the latest rate 20", s.InForce(), s.FPS())
				}
			}
		}
		if s.InForce() != target || s.Staged() || s.FPS() != 20 {
			t.Fatalf("end: %v@%d staged %v, want 9/27@20", s.InForce(), s.FPS(), s.Staged())
		}
	})

	t.Run("while stepping", func(t *testing.T) {
		_, got := runSchedule(t, start, []change{{1000, target, 30}, {1091, target, 20}}, 990, 1300)
		// 1091 is between the 9/54 step (1089) and the next (1098): the
		// steps go on on their own frames, the rate moves at 1091.
		const want = "1080:9/63@30 1089:9/54@30 1098:9/45@20 1107:9/36@20 1116:9/27@20"
		if got != want {
			t.Fatalf("changes %q, want %q", got, want)
		}
	})
}
