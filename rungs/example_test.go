package rungs_test

import (
	"fmt"
	"time"

	"github.com/lagscope/lagscope/rungs"
)

// The worked example of R: at 30 fps a 200 ms round trip is a one-way trip
// of 3 frames, which rung 1 covers; with headroom it counts as 250 ms, 4
// frames, which needs rung 2.
func ExampleNeed() {
	rtt := 200 * time.Millisecond
	t := rungs.Need(rtt, 30)
	h := rungs.WithHeadroom(rtt)
	th := rungs.Need(h, 30)
	fmt.Println(rungs.OneWayFrames(rtt, 30), t, t.Label())
	fmt.Println(h, rungs.OneWayFrames(h, 30), th, th.Label())
	fmt.Println(rungs.Need(2*time.Second, 60), rungs.Need(2*time.Second, 60).Tier())
	// Output:
	// 3 1/4 Fast (rung 1)
	// 250ms 4 2/6 Fast (rung 2)
	// 10/70 Bad
}

// Two players, both reporting on every report frame: the initial target from
// the headroom estimate, three passing evaluations, then a descent of one rung
// per evaluation.
func ExampleMaster() {
	rec := rungs.NewRecord(0, []int{1, 2})
	m := rungs.NewMaster(0, rungs.StartTiming(), 30)
	for frame := 1; frame <= 1280; frame++ {
		if rungs.IsReportFrame(frame) {
			rtt := 100 * time.Millisecond
			if frame <= 64 {
				rtt = 800 * time.Millisecond
			}
			rec.Add(rungs.Report{Player: 1, Frame: frame, RTT: rtt, HasRTT: true})
			rec.Add(rungs.Report{Player: 2, Frame: frame, RTT: rtt / 2, HasRTT: true})
		}
		if !rungs.IsEvaluationFrame(frame) { // the game, and the master, start on frame 0
			continue
		}
		if d, ok := m.Evaluate(frame, rec, 30); ok {
			fmt.Printf("frame %d: %s %v at %d fps\n", frame, d.Reason, d.Target, d.FPS)
		}
	}
	// Output:
	// frame 64: initial 8/24 at 30 fps
	// frame 1024: better 7/21 at 30 fps
	// frame 1280: better 6/18 at 30 fps
}

// A decrease from an extended 10/70 to 9/27, decided on frame 1000: it waits
// until the commands scheduled under 70 frames have come due (1070), activates
// on the next multiple of 10 and 9 (1080), drops one old send period and
// rounds up to whole new periods (63), then loses 9 frames per send frame.
func ExampleSchedule() {
	s := rungs.NewSchedule(rungs.Timing{SendPeriod: 10, LookAhead: 70}, 30)
	prev := rungs.Timing{SendPeriod: 10, LookAhead: 70}
	next := rungs.RungTiming(9)
	if msg, ok := rungs.TierMessage(prev, next); ok {
		fmt.Println(msg)
	} else {
		fmt.Println("tier unchanged:", next.Tier())
	}
	for frame := 1000; frame <= 1200; frame++ {
		if frame == 1000 {
			s.Change(frame, next, 30)
		}
		if s.Advance(frame) {
			fmt.Printf("frame %d: %v %s\n", frame, s.InForce(), s.InForce().Tier())
		}
	}
	// Output:
	// tier unchanged: Bad
	// frame 1080: 9/63 Bad
	// frame 1089: 9/54 Bad
	// frame 1098: 9/45 Bad
	// frame 1107: 9/36 Bad
	// frame 1116: 9/27 Bad
}

func ExampleTierMessage() {
	fmt.Println(rungs.TierMessage(rungs.RungTiming(2), rungs.RungTiming(6)))
	fmt.Println(rungs.TierMessage(rungs.RungTiming(3), rungs.RungTiming(5)))
	// Output:
	// Connection quality target: Poor true
	//  false
}
