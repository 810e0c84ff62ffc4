// Package ladder is the rung ladder as people read it (lagscope rung):
// the rung a round trip needs at a frame rate, with and without headroom
// (S2–S4, S9, S17), as one line or as the JSON of the command's contract,
// and the whole ladder as a table or JSON. The policy itself is rungs';
// this package only words it.
package ladder

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

// ParseRTT reads a round trip. A number without a unit is milliseconds,
// since that is how players quote a ping.
func ParseRTT(s string) (time.Duration, error) {
	d, err := parseRTTUnbounded(s)
	if err == nil && d > maxRTT {
		return 0, fmt.Errorf("round trip %q is too long (at most %v)", s, maxRTT)
	}
	return d, err
}

// maxRTT is the longest round trip the rung command takes. Past 8 minutes
// every round trip needs the widest timing at any frame rate (10/250 covers
// 480 s at 1 fps), so an hour refuses nothing useful, and its headroom
// (S9, a quarter more) stays exact instead of saturating at the largest
// Duration, which printed a "headroom" smaller than 1.25×.
const maxRTT = time.Hour

func parseRTTUnbounded(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if v, err := strconv.ParseFloat(t, 64); err == nil {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return 0, fmt.Errorf("%q is not a round trip", s)
		case v < 0:
			return 0, fmt.Errorf("round trip %q is negative", s)
		}
		d, ok := units.FromMillisChecked(v)
		if !ok {
			return 0, fmt.Errorf("round trip %q is too long", s)
		}
		return d, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not a round trip (use 180ms, 1.5s or a number of milliseconds)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("round trip %q is negative", s)
	}
	return d, nil
}

// msText writes a duration as milliseconds, with as many decimals as it has.
func msText(d time.Duration) string { return strconv.FormatFloat(units.Millis(d), 'f', -1, 64) }

// describe is "rung 2 (2/6), Fast", with the extended look-ahead named.
func describe(t rungs.Timing) string {
	ext := ""
	if t.Extended() {
		ext = ", extended"
	}
	return fmt.Sprintf("rung %d (%v%s), %v", t.Rung(), t, ext, t.Tier())
}

// Explain is the one-line answer: the round trip, its one-way trip in
// frames and its rung, then the same with headroom.
func Explain(rtt time.Duration, fps int) string {
	h := rungs.WithHeadroom(rtt)
	return fmt.Sprintf("%s ms at %d fps: one-way %s → %s; with headroom %s ms → %s",
		msText(rtt), fps, frames(rtt, fps), describe(rungs.Need(rtt, fps)),
		msText(h), describe(rungs.Need(h, fps)))
}

// frames names a one-way trip in frames, and says so when even 10/250
// does not cover it.
func frames(rtt time.Duration, fps int) string {
	ow := rungs.OneWayFrames(rtt, fps)
	unit := "frames"
	if ow == 1 {
		unit = "frame"
	}
	s := fmt.Sprintf("%d %s", ow, unit)
	if widest := rungs.WidestTiming(); ow > widest.Covers() {
		s += fmt.Sprintf(" (more than %v covers)", widest)
	}
	return s
}

// answer is the JSON `lagscope rung --json` prints (docs/cli.md); its
// field names and their order are part of that output and do not change.
type answer struct {
	RTTMS float64 `json:"rtt_ms"`
	FPS   int     `json:"fps"`
	rungJSON
	Headroom *headroomJSON `json:"headroom"`
}

type headroomJSON struct {
	RTTMS float64 `json:"rtt_ms"`
	rungJSON
}

// rungJSON is what a round trip needs at a frame rate, in the answer and
// again with headroom (its fields sit in line in both).
type rungJSON struct {
	OneWayFrames int    `json:"one_way_frames"`
	Rung         int    `json:"rung"`
	SendPeriod   int    `json:"send_period"`
	LookAhead    int    `json:"look_ahead"`
	Tier         string `json:"tier"`
	Extended     bool   `json:"extended"`
}

func needJSON(rtt time.Duration, fps int) rungJSON {
	t := rungs.Need(rtt, fps)
	return rungJSON{OneWayFrames: rungs.OneWayFrames(rtt, fps), Rung: t.Rung(), SendPeriod: t.SendPeriod,
		LookAhead: t.LookAhead, Tier: t.Tier().String(), Extended: t.Extended()}
}

// WriteJSON writes the answer for rtt at fps as one line of JSON.
func WriteJSON(w io.Writer, rtt time.Duration, fps int) error {
	h := rungs.WithHeadroom(rtt)
	return writeJSON(w, answer{RTTMS: units.Millis(rtt), FPS: fps, rungJSON: needJSON(rtt, fps),
		Headroom: &headroomJSON{RTTMS: units.Millis(h), rungJSON: needJSON(h, fps)}})
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// timings are the table's rows: rungs 1 to 10, then the widest extended
// timing, where the ladder ends.
func timings() []rungs.Timing {
	l := make([]rungs.Timing, 0, rungs.Rungs+1)
	for n := 1; n <= rungs.Rungs; n++ {
		l = append(l, rungs.RungTiming(n))
	}
	return append(l, rungs.WidestTiming())
}

// row is one rung of `rung --table --json`.
type row struct {
	Rung            int     `json:"rung"`
	SendPeriod      int     `json:"send_period"`
	LookAhead       int     `json:"look_ahead"`
	Tier            string  `json:"tier"`
	Extended        bool    `json:"extended"`
	FPS             int     `json:"fps"`
	MaxOneWayFrames int     `json:"max_one_way_frames"`
	MaxRTTMS        float64 `json:"max_rtt_ms"`
}

func WriteTableJSON(w io.Writer, fps int) error {
	rows := []row{}
	for _, t := range timings() {
		rows = append(rows, row{
			Rung: t.Rung(), SendPeriod: t.SendPeriod, LookAhead: t.LookAhead, Tier: t.Tier().String(),
			Extended: t.Extended(), FPS: fps, MaxOneWayFrames: t.Covers(), MaxRTTMS: units.Millis(t.MaxRTT(fps)),
		})
	}
	return writeJSON(w, rows)
}

// WriteTable prints the ladder for fps. The round trip a rung covers is
// shown rounded down to 0.1 ms, so the figure is always covered. With a round
// trip, the rows it needs (with and without headroom) are marked.
func WriteTable(w io.Writer, fps int, rtt time.Duration, hasRTT bool) error {
	marks := map[rungs.Timing][]string{}
	if hasRTT {
		mark := func(t rungs.Timing, what string) {
			row := t
			if t.Extended() {
				row = rungs.WidestTiming()
				what += " needs " + t.String()
			}
			marks[row] = append(marks[row], what)
		}
		h := rungs.WithHeadroom(rtt)
		mark(rungs.Need(rtt, fps), msText(rtt)+" ms")
		mark(rungs.Need(h, fps), msText(h)+" ms with headroom")
		if _, err := fmt.Fprintf(w, "%s\n\n", Explain(rtt, fps)); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(w, "Rung ladder at %d fps: a rung covers a one-way trip of its look-ahead less one send period.\n\n", fps); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUNG\tTIMING\tTIER\tONE-WAY UP TO\tROUND TRIP UP TO")
	for _, t := range timings() {
		rung := strconv.Itoa(t.Rung())
		if t.Extended() {
			rung += " ext"
		}
		covered := math.Round(units.Millis(t.MaxRTT(fps))*10) / 10
		line := fmt.Sprintf("%s\t%v\t%v\t%d frames\t%s ms", rung, t, t.Tier(), t.Covers(), strconv.FormatFloat(covered, 'f', -1, 64))
		if m := marks[t]; len(m) > 0 {
			line += "\t← " + strings.Join(m, "; ")
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nPast rung 10 the send period stays 10 and the look-ahead grows in steps of 10, up to %v.\n", rungs.WidestTiming())
	return err
}
