package diagnosis_test

import (
	"fmt"
	"math"
	"time"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/rungs"
)

// The worked example of docs/diagnosis.md: five players, ada on a slow
// connection that also loses 3 % of what she sends, and one slow path
// between bob and dave.
func Example() {
	names := []string{"alice", "bob", "carol", "dave", "ada"}
	in := diagnosis.Input{Speed: 30, Target: rungs.RungTiming(3)}
	for _, n := range names {
		in.Players = append(in.Players, diagnosis.Player{Name: n, Measured: true})
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	rtt := map[[2]int]float64{
		{0, 1}: 46, {0, 2}: 50, {0, 3}: 55, {0, 4}: 170,
		{1, 2}: 55, {1, 3}: 160, {1, 4}: 175,
		{2, 3}: 64, {2, 4}: 180,
		{3, 4}: 185,
	}
	for a := 0; a < 5; a++ {
		for b := a + 1; b < 5; b++ {
			p := diagnosis.Pair{A: a, B: b, RTT: ms(rtt[[2]int{a, b}]), RTTVar: ms(3),
				ExpectedAB: 10000, ExpectedBA: 10000, MissingAB: 5, MissingBA: 5}
			if b == 4 { // ada's uplink loses 3 % of what she sends
				p.MissingBA = 305
			}
			in.Pairs = append(in.Pairs, p)
		}
	}
	d := diagnosis.Diagnose(in)
	fmt.Println("player  share ms  loss %  rung without  causes")
	for _, p := range d.Players {
		fmt.Printf("%-6s  %8.1f  %6.1f  %12d  %v\n", p.Player, p.AccessRTTMs, 100*p.AccessLoss, p.RungWithout, p.Causes)
	}
	fmt.Println("path          rtt  expected  excess")
	for _, l := range d.Links {
		if l.Between[0] == "bob" || l.Between == [2]string{"alice", "bob"} {
			fmt.Printf("%-12s %4.0f  %8.1f  %6.1f\n", l.Between[0]+"–"+l.Between[1], l.RTTMs, l.ExpectedRTTMs, math.Round(l.ExcessRTTMs*10)/10+0)
		}
	}
	fmt.Println(d.Verdict)
	// Output:
	// player  share ms  loss %  rung without  causes
	// alice       20.2     0.1             2  []
	// bob         25.8     0.1             2  []
	// carol       29.5     0.1             2  []
	// dave        35.2     0.1             2  []
	// ada        149.8     3.0             1  [latency loss]
	// path          rtt  expected  excess
	// alice–bob      46      46.0     0.0
	// bob–carol      55      55.3    -0.3
	// bob–dave      160      61.0    99.0
	// bob–ada       175     175.7    -0.7
	// ada's connection adds 150 ms to every round trip with ada and loses 3 % of its packets; it holds the match at Normal (rung 3) — without it: Fast (rung 1). The path between bob and dave is slow (99 ms more than their connections explain).
}
