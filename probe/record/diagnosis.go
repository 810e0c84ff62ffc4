package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/textsafe"
	"github.com/lagscope/lagscope/units"
)

// The diagnosis in a recording: its `diagnosis` events replay,
// fill the replayed View's Diagnosis (the Views themselves leave it out,
// like the matrix), are checked like every other event, and the last one
// heads the report.

// diagnosesOf keeps the diagnosis events of the machine shown, or of every
// machine when it printed none (a simulation prints each evaluation once,
// by whichever machine narrates it), in time order.
func diagnosesOf(events []Record, as string) []Record {
	var own, all []Record
	for _, r := range events {
		if _, ok := r.Event.(*feed.DiagnosisEvent); ok {
			all = append(all, r)
			if r.From == as {
				own = append(own, r)
			}
		}
	}
	if len(own) > 0 {
		return own
	}
	return all
}

// diagnosisAt is the latest diagnosis at or before t, nil before the first.
func (c *cursor) diagnosisAt(t time.Duration) *diagnosis.Diagnosis {
	i := sort.Search(len(c.diags), func(i int) bool { return c.diags[i].At > t })
	if i == 0 {
		return nil
	}
	d := c.diags[i-1].Event.(*feed.DiagnosisEvent).Diagnosis
	return &d
}

// checkDiagnosis: names are names, the verdict is plain text, numbers are
// unknown (NaN, null in the JSON) or what a diagnosis can say — shares and
// times 0..maxMs, an excess either side of 0 by at most that, chances
// 0..1, a rung of the ladder, a frame rate a session runs at, and only the
// causes a diagnosis names. A zero Diagnosis (a summary written before the
// diagnosis existed) passes.
func checkDiagnosis(d *diagnosis.Diagnosis) error {
	err := errors.Join(checkText("verdict", d.Verdict), checkOptName("culprit", d.Culprit))
	if l := d.CulpritLink; l != nil {
		err = errors.Join(err, checkName("culprit_link", l[0]), checkName("culprit_link", l[1]))
	}
	for i := range d.Players {
		p := &d.Players[i]
		err = errors.Join(err, checkName("diagnosis player", p.Player),
			checkNaNMs("access_rtt_ms", p.AccessRTTMs), checkChance("access_loss", p.AccessLoss), checkNaNMs("jitter_ms", p.JitterMs),
			checkNaNMs("process_ms", p.ProcessMs), checkNaNMs("caused_wait_ms", p.CausedWaitMs), checkCauses(p.Causes))
		if p.RungWithout < 0 || p.RungWithout > rungs.Rungs {
			err = errors.Join(err, fmt.Errorf("rung_without %d is outside 1..%d", p.RungWithout, rungs.Rungs))
		}
		if p.FPSWithout != 0 {
			err = errors.Join(err, checkFPS(p.FPSWithout))
		}
		if b := p.Bufferbloat; b != nil {
			err = errors.Join(err, checkNaNMs("bufferbloat_ms upload", b.UploadMs), checkNaNMs("bufferbloat_ms download", b.DownloadMs))
		}
	}
	for i := range d.Links {
		l := &d.Links[i]
		err = errors.Join(err, checkName("diagnosis link", l.Between[0]), checkName("diagnosis link", l.Between[1]),
			checkNaNMs("rtt_ms", l.RTTMs), checkNaNMs("expected_rtt_ms", l.ExpectedRTTMs), checkChance("loss", l.Loss), checkCauses(l.Causes))
		if x := l.ExcessRTTMs; !math.IsNaN(x) && !(math.Abs(x) <= maxMs) {
			err = errors.Join(err, fmt.Errorf("excess_rtt_ms %v is outside ±%v", x, maxMs))
		}
	}
	return err
}

// checkNaNMs is checkMs for a value that may be unknown (NaN).
func checkNaNMs(key string, ms float64) error {
	if math.IsNaN(ms) {
		return nil
	}
	return checkMs(key, ms)
}

func checkChance(key string, p float64) error {
	if math.IsNaN(p) || (p >= 0 && p <= 1) {
		return nil
	}
	return fmt.Errorf("%s %v is outside 0..1", key, p)
}

func checkCauses(cs []vocab.Cause) error {
	for _, c := range cs {
		if !c.Valid() || c == vocab.CauseUnknown {
			return fmt.Errorf("cause %q is not one a diagnosis names", c)
		}
	}
	return nil
}

// diagnosisReport is the recording's last diagnosis: the summary's at the
// end of a session (End), else the last evaluation's. Its JSON is the
// diagnosis's body after at_ms, frame and end.
type diagnosisReport struct {
	AtMs      float64
	Frame     int
	End       bool
	Diagnosis diagnosis.Diagnosis
}

// MarshalJSON writes {"at_ms":…,"frame":…,"end":…,"verdict":…, …}.
func (d *diagnosisReport) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(struct {
		AtMs  float64 `json:"at_ms"`
		Frame int     `json:"frame"`
		End   bool    `json:"end"`
	}{d.AtMs, d.Frame, d.End})
	if err != nil {
		return nil, err
	}
	body, err := d.Diagnosis.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(append(head[:len(head)-1], ','), body[1:]...), nil
}

// diagnosis keeps the latest diagnosis seen; records come in time order
// within a machine, and the summary comes last.
func (s *summary) diagnosis(at time.Duration, frame int, end bool, d diagnosis.Diagnosis) {
	if r := s.r.Diagnosis; r != nil && r.End && !end {
		return
	}
	s.r.Diagnosis = &diagnosisReport{AtMs: units.Millis(at), Frame: frame, End: end, Diagnosis: d}
}

// The state at the end, after the session's incidents in the text and
// markdown reports: the last verdict, the per-player table and the
// culprit, under a heading that says it is the end's (or the last one
// before a recording's cut), not the session's story. Names go through
// textsafe (a recording's names are outside bytes).

// endHeading is the section's heading without a diagnosis.
const endHeading = "End of session"

// heading is the section's heading and what it is of: the end of the
// session (the summary's diagnosis), or the last one the recording holds.
func (d *diagnosisReport) heading() (string, string) {
	if d.End {
		return endHeading, fmt.Sprintf("frame %d", d.Frame)
	}
	return "Last diagnosis before the recording ends", fmt.Sprintf("frame %d at %s", d.Frame, clock(d.AtMs))
}

// diagRow is one player's cells, in the table's order.
func diagRow(p diagnosis.PlayerDiagnosis, cell func(string) string) []string {
	causes := "—"
	if len(p.Causes) > 0 {
		causes = vocab.Join(p.Causes, ", ")
	}
	rung := "—"
	if p.RungWithout > 0 {
		rung = fmt.Sprintf("%d (%s)", p.RungWithout, rungs.RungTiming(p.RungWithout).Tier())
	}
	return []string{cell(p.Player), nanNum(p.AccessRTTMs, 1), nanPct(p.AccessLoss), nanNum(p.JitterMs, 1), nanNum(p.ProcessMs, 0),
		nanNum(p.CausedWaitMs, 0), rung, cell(causes)}
}

var diagHeads = []string{"player", "access ms", "loss", "jitter ms", "processing ms", "caused wait ms", "rung without", "causes"}

// culpritLine names the culprit and the slow path, or says there is none.
func (d *diagnosisReport) culpritLine(name func(string) string) string {
	c := "nobody"
	if d.Diagnosis.Culprit != "" {
		c = name(d.Diagnosis.Culprit)
	}
	l := "none"
	if cl := d.Diagnosis.CulpritLink; cl != nil {
		l = name(cl[0]) + " – " + name(cl[1])
	}
	out := fmt.Sprintf("Culprit: %s. Slow path: %s.", c, l)
	if h := d.Diagnosis.SharedHop; h != nil {
		names := make([]string, len(h.Players))
		for i, n := range h.Players {
			names[i] = name(n)
		}
		out += fmt.Sprintf(" Shared hop: %s, on the paths of %s (adds %.1f ms).", h.Addr, strings.Join(names, ", "), h.AddedMs)
	}
	return out
}

// whereLine says where the hop traces put each player's delay, "" when
// they put none.
func (d *diagnosisReport) whereLine(name func(string) string) string {
	var parts []string
	for _, p := range d.Diagnosis.Players {
		if w := p.Where; w != nil {
			parts = append(parts, fmt.Sprintf("%s %s, hop %d (adds %.1f ms)", name(p.Player), name(string(w.Link)), w.TTL, w.AddedMs))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Where the delay starts: " + strings.Join(parts, "; ") + "."
}

func (r *report) textDiagnosis(b *bytes.Buffer) {
	d := r.Diagnosis
	if d == nil {
		fmt.Fprintf(b, "\n%s\n  no diagnosis in this recording\n", endHeading)
		return
	}
	head, of := d.heading()
	fmt.Fprintf(b, "\n%s (%s)\n  %s\n  %s\n", head, of, textsafe.Terminal(d.Diagnosis.Verdict), d.culpritLine(textsafe.Terminal))
	if w := d.whereLine(textsafe.Terminal); w != "" {
		fmt.Fprintf(b, "  %s\n", w)
	}
	if len(d.Diagnosis.Players) == 0 {
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\n", strings.Join(diagHeads, "\t"))
	for _, p := range d.Diagnosis.Players {
		fmt.Fprintf(tw, "  %s\n", strings.Join(diagRow(p, textsafe.Terminal), "\t"))
	}
	tw.Flush()
}

func (r *report) markdownDiagnosis(b *bytes.Buffer) {
	d := r.Diagnosis
	if d == nil {
		fmt.Fprintf(b, "**%s:** no diagnosis in this recording.\n\n", endHeading)
		return
	}
	head, of := d.heading()
	fmt.Fprintf(b, "**%s** (%s): %s %s\n\n", head, of, textsafe.MarkdownText(d.Diagnosis.Verdict), d.culpritLine(textsafe.MarkdownText))
	if w := d.whereLine(textsafe.MarkdownText); w != "" {
		fmt.Fprintf(b, "%s\n\n", w)
	}
	if len(d.Diagnosis.Players) == 0 {
		return
	}
	fmt.Fprintf(b, "| %s |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n", strings.Join(diagHeads, " | "))
	for _, p := range d.Diagnosis.Players {
		fmt.Fprintf(b, "| %s |\n", strings.Join(diagRow(p, textsafe.MarkdownCell), " | "))
	}
	b.WriteString("\n")
}

func nanNum(v float64, digits int) string {
	if math.IsNaN(v) {
		return "—" // not known (L3)
	}
	return fmt.Sprintf("%.*f", digits, v)
}

func nanPct(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", v*100)
}
