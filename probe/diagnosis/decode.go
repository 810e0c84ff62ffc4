package diagnosis

import (
	"encoding/json"
	"errors"
	"math"
)

// UnmarshalJSON reads a body written by MarshalJSON back (a recording's
// `diagnosis` events and `summary.diagnosis`): null numbers become NaN and
// a null rung or frame rate 0, as Diagnose leaves them. Measured and Reason
// are not in the JSON and stay zero. It checks shapes only; what a value
// may be is the reader's to judge (record's plausibility checks).
func (d *Diagnosis) UnmarshalJSON(b []byte) error {
	var body bodyJSON
	if err := json.Unmarshal(b, &body); err != nil {
		return err
	}
	out := Diagnosis{Verdict: body.Verdict, CulpritLink: body.CulpritLink,
		Players: make([]PlayerDiagnosis, 0, len(body.Players)), Links: make([]LinkDiagnosis, 0, len(body.Links))}
	if body.Culprit != nil {
		out.Culprit = *body.Culprit
	}
	if h := body.SharedHop; h != nil {
		if !h.Addr.IsValid() {
			return errShape
		}
		if !finite(h.AddedMs * 10000) { // MarshalJSON could not write it back
			return errRange
		}
		out.SharedHop = &SharedHop{Addr: h.Addr, Players: nonNil(h.Players), AddedMs: h.AddedMs}
	}
	for _, p := range body.Players {
		var w *Where
		if p.Where != nil {
			w = &Where{Link: p.Where.Link, TTL: p.Where.TTL, AddedMs: p.Where.AddedMs}
			if w.TTL < 1 {
				return errShape
			}
			if !finite(w.AddedMs * 10000) {
				return errRange
			}
		}
		bb, err := unbloat(p.Bufferbloat)
		if err != nil {
			return err
		}
		out.Players = append(out.Players, PlayerDiagnosis{
			Player: p.Player, AccessRTTMs: unround(p.AccessRTTMs), AccessLoss: unround(p.AccessLoss), JitterMs: unround(p.JitterMs),
			ProcessMs: unround(p.ProcessMs), CausedWaitMs: unround(p.CausedWaitMs),
			RungWithout: unpositive(p.RungWithout), FPSWithout: unpositive(p.FPSWithout), Causes: nonNil(p.Causes), Where: w,
			Bufferbloat: bb,
		})
	}
	for _, l := range body.Links {
		out.Links = append(out.Links, LinkDiagnosis{
			Between: l.Between, RTTMs: unround(l.RTTMs), ExpectedRTTMs: unround(l.ExpectedRTTMs), ExcessRTTMs: unround(l.ExcessRTTMs),
			Loss: unround(l.Loss), Causes: nonNil(l.Causes),
		})
	}
	for _, p := range out.Players {
		if anyInf(p.AccessRTTMs, p.AccessLoss, p.JitterMs, p.ProcessMs, p.CausedWaitMs) {
			return errRange
		}
	}
	for _, l := range out.Links {
		if anyInf(l.RTTMs, l.ExpectedRTTMs, l.ExcessRTTMs, l.Loss) {
			return errRange
		}
	}
	*d = out
	return nil
}

// unbloat reads a bufferbloat_ms back: null stays nil, a null direction
// NaN; a figure below 0 or one MarshalJSON could not write back is out of
// range.
func unbloat(j *bloatJSON) (*Bufferbloat, error) {
	if j == nil {
		return nil, nil
	}
	b := &Bufferbloat{UploadMs: unround(j.Upload), DownloadMs: unround(j.Download)}
	for _, v := range []float64{b.UploadMs, b.DownloadMs} {
		if math.IsInf(v, 0) || v < 0 {
			return nil, errRange
		}
	}
	return b, nil
}

// anyInf: unround marks a number MarshalJSON could not write as +Inf (a
// sum would hide it behind a null's NaN).
func anyInf(vs ...float64) bool {
	for _, v := range vs {
		if math.IsInf(v, 0) {
			return true
		}
	}
	return false
}

var (
	errRange = errors.New("diagnosis: a number beyond any diagnosis")
	errShape = errors.New("diagnosis: a where or shared hop without its address, ttl or figure")
)

// UnmarshalJSON reads a `diagnosis` event back; its type is the caller's
// to have checked.
func (e *Event) UnmarshalJSON(b []byte) error {
	var head struct {
		Frame int `json:"frame"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	var d Diagnosis
	if err := d.UnmarshalJSON(b); err != nil {
		return err
	}
	e.Frame, e.Diagnosis = head.Frame, d
	return nil
}

func unround(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	if !finite(*p * 10000) { // MarshalJSON could not write it back
		return math.Inf(1)
	}
	return *p
}

func unpositive(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
