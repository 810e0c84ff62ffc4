package rungs

import (
	"testing"
	"time"
)

func TestReportFrames_S5(t *testing.T) {
	var got []int
	for f := -10; f <= 700; f++ {
		if IsReportFrame(f) {
			got = append(got, f)
		}
	}
	want := []int{32, 64, 128, 256, 384, 512, 640}
	if !equalInts(got, want) {
		t.Fatalf("report frames %v, want %v", got, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A report carries the processing time, the longest wait and the worst round
// trip, and the record hands them back as they came.
func TestReportCarriesMeasurements_S5(t *testing.T) {
	rec := NewRecord(0, []int{1, 2})
	rep := Report{Player: 2, Frame: 64, RTT: ms(180), HasRTT: true, Wait: ms(40), Process: ms(7)}
	if !rec.Add(rep) {
		t.Fatal("Add rejected a seated player's report")
	}
	got, ok := rec.Latest(2)
	if !ok || got != rep {
		t.Fatalf("Latest(2) = %+v, %v; want %+v", got, ok, rep)
	}
	if _, ok := rec.Latest(1); ok {
		t.Fatal("Latest(1) found a report player 1 never sent")
	}
	sum := rec.Summary(64)
	if sum.Worst != ms(180) || sum.MaxWait != ms(40) || sum.MaxProcess != ms(7) || sum.Fresh != 1 || sum.WithRTT != 1 {
		t.Fatalf("Summary = %+v", sum)
	}
}

// A report that leaves the round trip out counts as fresh (for the frame
// rate) but not as a round trip: the timing cannot improve while it stands.
func TestReportWithoutRoundTrip_S6(t *testing.T) {
	rec := NewRecord(0, []int{1, 2})
	rec.Add(Report{Player: 1, Frame: 128, RTT: ms(90), HasRTT: true})
	rec.Add(Report{Player: 2, Frame: 128, RTT: ms(999), HasRTT: false, Process: ms(20)})
	sum := rec.Summary(130)
	if sum.Complete() {
		t.Error("a report without a round trip made the record complete")
	}
	if !sum.allFresh() {
		t.Error("a report without a round trip is still a fresh report")
	}
	if sum.Worst != ms(90) || sum.WithRTT != 1 {
		t.Errorf("Worst %v WithRTT %d: the left-out round trip must not count", sum.Worst, sum.WithRTT)
	}
	if sum.MaxProcess != ms(20) {
		t.Errorf("MaxProcess %v, want 20ms", sum.MaxProcess)
	}
	// Once the player reports a round trip again, the record is complete.
	rec.Add(Report{Player: 2, Frame: 256, RTT: ms(120), HasRTT: true})
	if sum := rec.Summary(256); !sum.Complete() || sum.Worst != ms(120) {
		t.Errorf("after a round trip: %+v", sum)
	}
}

func TestReportExpiry_S7(t *testing.T) {
	rec := NewRecord(0, []int{1})
	rec.Add(Report{Player: 1, Frame: 100, RTT: ms(50), HasRTT: true})
	for _, tc := range []struct {
		frame int
		fresh bool
	}{{100, true}, {300, true}, {611, true}, {612, false}, {2000, false}} {
		if got := rec.Fresh(1, tc.frame); got != tc.fresh {
			t.Errorf("Fresh(1, %d) = %v, want %v", tc.frame, got, tc.fresh)
		}
		sum := rec.Summary(tc.frame)
		if sum.Complete() != tc.fresh || (sum.Fresh == 1) != tc.fresh {
			t.Errorf("frame %d: Summary %+v, fresh %v", tc.frame, sum, tc.fresh)
		}
	}
	if rec.Fresh(9, 100) {
		t.Error("Fresh for a player who is not seated")
	}
	// The latest report counts: a newer one renews freshness.
	rec.Add(Report{Player: 1, Frame: 600, RTT: ms(70), HasRTT: true})
	if !rec.Fresh(1, 1000) {
		t.Error("a report from frame 600 is fresh on frame 1000")
	}
}

func TestRecordSeatedAndRemoval_S7(t *testing.T) {
	rec := NewRecord(10, []int{3, 1, 2, 1})
	if rec.Seated() != 3 || rec.Start() != 10 {
		t.Fatalf("Seated %d Start %d, want 3 and 10", rec.Seated(), rec.Start())
	}
	if rec.Add(Report{Player: 7, Frame: 50, HasRTT: true, RTT: ms(5)}) {
		t.Error("a player not seated at game start was recorded")
	}
	for _, p := range []int{1, 2, 3} {
		rec.Add(Report{Player: p, Frame: 50, HasRTT: true, RTT: time.Duration(p) * 100 * time.Millisecond})
	}
	if sum := rec.Summary(60); sum.Worst != ms(300) {
		t.Fatalf("Worst %v, want 300ms", sum.Worst)
	}
	// The removal executes: the player and its report leave the record, and
	// the worst round trip comes from those who remain.
	rec.Remove(3)
	if rec.IsSeated(3) || rec.Seated() != 2 {
		t.Fatal("Remove(3) left player 3 seated")
	}
	if _, ok := rec.Latest(3); ok {
		t.Fatal("Remove(3) kept its report")
	}
	sum := rec.Summary(60)
	if sum.Worst != ms(200) || !sum.Complete() {
		t.Fatalf("after removal: %+v", sum)
	}
	if rec.Add(Report{Player: 3, Frame: 70, HasRTT: true, RTT: ms(900)}) {
		t.Error("a removed player was recorded again")
	}
	rec.Remove(3) // removing twice changes nothing
	if rec.Seated() != 2 {
		t.Fatal("a second Remove changed the record")
	}
	// A report that executed before the one held is not the latest.
	if rec.Add(Report{Player: 1, Frame: 40, HasRTT: true, RTT: ms(999)}) {
		t.Error("an older report replaced a newer one")
	}
	if r, _ := rec.Latest(1); r.Frame != 50 {
		t.Errorf("latest report of player 1 is from frame %d, want 50", r.Frame)
	}
}

func TestForcedRule_S8(t *testing.T) {
	type rep struct {
		player, frame int
		rtt           bool
	}
	for _, tc := range []struct {
		name    string
		reports []rep
		remove  []int
		frame   int
		forced  bool
	}{
		{"before 512 frames nobody is forced", []rep{{1, 32, true}}, nil, 511, false},
		{"at 512 a silent player forces", []rep{{1, 32, true}}, nil, 512, true},
		{"a player who reports without round trip forces", []rep{{1, 32, true}, {2, 500, false}}, nil, 600, true},
		{"one round trip ever is enough", []rep{{1, 32, true}, {2, 64, true}, {2, 500, false}}, nil, 2000, false},
		{"expired but once reported holds, not forces", []rep{{1, 32, true}, {2, 32, true}}, nil, 5000, false},
		{"a removed player no longer forces", []rep{{1, 32, true}}, []int{2}, 512, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := NewRecord(0, []int{1, 2})
			for _, r := range tc.reports {
				rec.Add(Report{Player: r.player, Frame: r.frame, HasRTT: r.rtt, RTT: ms(50)})
			}
			for _, p := range tc.remove {
				rec.Remove(p)
			}
			if got := rec.Summary(tc.frame).Forced; got != tc.forced {
				t.Errorf("Forced = %v, want %v", got, tc.forced)
			}
		})
	}
	// The rule counts from the record's own start.
	rec := NewRecord(1000, []int{1})
	if rec.Summary(1511).Forced || !rec.Summary(1512).Forced {
		t.Error("forced rule does not count from the record's start")
	}
}
