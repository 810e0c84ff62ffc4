package loadtest

import (
	"encoding/json"
	"errors"
	"github.com/lagscope/lagscope/vocab"
	"math"
	"slices"
	"time"

	"github.com/lagscope/lagscope/units"
)

// Result is a load test's outcome, shaped as the load event's body: every
// figure this end could not know is nil (null), never 0. Round trips are
// in ms rounded to 0.1, rates in Mbit/s rounded to 0.1, loss a share
// (0–1). Where and Cost are not measured here: the caller fills them.
type Result struct {
	IdleRTTMS *float64    `json:"idle_rtt_ms"`
	Upload    *DirResult  `json:"upload"`
	Download  *DirResult  `json:"download"`
	Both      *BothResult `json:"both"`
	Where     *WhereAt    `json:"where"`
	Cost      *GameCost   `json:"cost"`
	// Stopped is nil for a complete test, else why it stopped early:
	// "peer refused", "busy", "relayed", "cancelled" or "peer left".
	Stopped *string `json:"stopped"`
	// Cap is the cap the test ran at, bit/s per direction (the lower of
	// both ends'), for saying what a capped direction means; 0 when not
	// known (the peer never answered, or the result was read from JSON,
	// which does not carry it).
	Cap int64 `json:"-"`
}

// DirResult is one direction's hold: the round trip the load added over
// the graded part (median and 90th percentile), the throughput that
// arrived, the load lost, the grade and whether the cap, not the
// bottleneck, ended the ramp.
type DirResult struct {
	AddedMS    *float64 `json:"added_ms"`
	P90AddedMS *float64 `json:"p90_added_ms"`
	Mbps       *float64 `json:"mbps"`
	Loss       *float64 `json:"loss"`
	Grade      *string  `json:"grade"`
	Capped     bool     `json:"capped"`
	// Added is AddedMS as the engine reads it, present with HasAdded: the
	// tester's median rounded to 0.1 ms, or the wire's tenths. JSON does
	// not carry it: a result read from JSON has HasAdded false.
	Added    time.Duration `json:"-"`
	HasAdded bool          `json:"-"`
}

// BothResult is the phase that loads both directions at once; Loss counts both
// directions' load together.
type BothResult struct {
	AddedMS    *float64 `json:"added_ms"`
	P90AddedMS *float64 `json:"p90_added_ms"`
	Loss       *float64 `json:"loss"`
}

// WhereAt is the hop a trace of the pair's path puts the added delay at.
type WhereAt struct {
	Link    vocab.HopLink `json:"link"`
	TTL     int           `json:"ttl"`
	AddedMS float64       `json:"added_ms"`
}

// GameCost is what the test cost the game while it ran.
type GameCost struct {
	FramesLate int     `json:"frames_late"`
	MaxWaitMS  float64 `json:"max_wait_ms"`
	RungFrom   int     `json:"rung_from"`
	RungTo     int     `json:"rung_to"`
	ForMS      float64 `json:"for_ms"`
}

// Grade bounds: the added round trip below each bound earns its grade.
var grades = [...]struct {
	belowMS float64
	grade   string
}{{5, "A+"}, {30, "A"}, {60, "B"}, {200, "C"}, {400, "D"}}

// gradeF is the grade at and above the last bound.
const gradeF = "F"

// grade is the grade of a median added round trip of ms milliseconds.
func grade(ms float64) string {
	for _, g := range grades {
		if ms < g.belowMS {
			return g.grade
		}
	}
	return gradeF
}

func validGrade(g string) bool {
	if g == gradeF {
		return true
	}
	for _, x := range grades {
		if x.grade == g {
			return true
		}
	}
	return false
}

// median is the middle of sorted, the mean of the two middle ones for an
// even count.
func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// p90 is the 90th percentile of sorted by nearest rank.
func p90(sorted []time.Duration) time.Duration {
	return sorted[int(math.Ceil(0.9*float64(len(sorted))))-1]
}

// round is x rounded to 1/scale (scale a power of ten): dividing by an
// exact integer gives the float nearest the decimal, 498.9 and not
// 498.90000000000003.
func round(x, scale float64) *float64 {
	v := math.Round(x*scale) / scale
	return &v
}

func msOf(d time.Duration) *float64 { return round(units.Millis(d), 10) }

// tenth is what the result's round trips are rounded to.
const tenth = 100 * time.Microsecond

// added is the median and 90th percentile of rtts (sorted in place) above
// idle, never below 0, in ms, and the grade of the median; nil without
// samples. d is the median rounded to tenth: the Duration of med, 0
// without samples.
func added(rtts []time.Duration, idle time.Duration) (d time.Duration, med, high *float64, g *string) {
	if len(rtts) == 0 {
		return 0, nil, nil, nil
	}
	slices.Sort(rtts)
	m, h := max(median(rtts)-idle, 0), max(p90(rtts)-idle, 0)
	gr := grade(units.Millis(m))
	return m.Round(tenth), msOf(m), msOf(h), &gr
}

// JSON decode errors.
var (
	errNegative = errors.New("loadtest: negative or non-finite figure")
	errLoss     = errors.New("loadtest: loss outside 0–1")
	errGrade    = errors.New("loadtest: unknown grade")
	errStopped  = errors.New("loadtest: unknown stop reason")
)

// UnmarshalJSON reads a load event's body and checks what this package
// would write: figures finite and not negative, loss 0–1, a known grade
// and stop reason. Fields it does not know are ignored.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if err := Result(p).check(); err != nil {
		return err
	}
	*r = Result(p)
	return nil
}

func (r Result) check() error {
	nums := []*float64{r.IdleRTTMS}
	var losses []*float64
	for _, d := range []*DirResult{r.Upload, r.Download} {
		if d == nil {
			continue
		}
		nums = append(nums, d.AddedMS, d.P90AddedMS, d.Mbps)
		losses = append(losses, d.Loss)
		if d.Grade != nil && !validGrade(*d.Grade) {
			return errGrade
		}
	}
	if r.Both != nil {
		nums = append(nums, r.Both.AddedMS, r.Both.P90AddedMS)
		losses = append(losses, r.Both.Loss)
	}
	if r.Where != nil {
		nums = append(nums, &r.Where.AddedMS)
	}
	if r.Cost != nil {
		nums = append(nums, &r.Cost.MaxWaitMS, &r.Cost.ForMS)
	}
	for _, x := range nums {
		if x != nil && !(*x >= 0 && !math.IsInf(*x, 0)) {
			return errNegative
		}
	}
	for _, x := range losses {
		if x != nil && !(*x >= 0 && *x <= 1) {
			return errLoss
		}
	}
	if r.Stopped != nil && (*r.Stopped == "" || !slices.Contains(reasonText[:], *r.Stopped)) {
		return errStopped
	}
	return nil
}

// stoppedBy is the Stopped field for a test that ended for why.
func stoppedBy(why stopReason) *string {
	if why == stopComplete || why >= numReasons {
		return nil
	}
	s := reasonText[why]
	return &s
}
