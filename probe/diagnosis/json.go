package diagnosis

import (
	"encoding/json"
	"github.com/lagscope/lagscope/vocab"
	"math"
	"net/netip"
)

// The JSON shapes of CONTRACTS (section Diagnosis). Unknown numbers are
// null, never 0 (L3: unknown is not zero); milliseconds are numbers rounded
// to 0.1 ms, chances to 0.0001, so that the output is stable across
// platforms' last-bit differences.

type playerJSON struct {
	Player       string        `json:"player"`
	AccessRTTMs  *float64      `json:"access_rtt_ms"`
	AccessLoss   *float64      `json:"access_loss"`
	JitterMs     *float64      `json:"jitter_ms"`
	ProcessMs    *float64      `json:"process_ms"`
	CausedWaitMs *float64      `json:"caused_wait_ms"`
	RungWithout  *int          `json:"rung_without"`
	FPSWithout   *int          `json:"fps_without"`
	Causes       []vocab.Cause `json:"causes"`
	Where        *whereJSON    `json:"where"`
	Bufferbloat  *bloatJSON    `json:"bufferbloat_ms"`
}

// bloatJSON is a player's bufferbloat_ms: each direction's added round
// trip, null where its test did not measure it.
type bloatJSON struct {
	Upload   *float64 `json:"upload"`
	Download *float64 `json:"download"`
}

type whereJSON struct {
	Link    vocab.HopLink `json:"link"`
	TTL     int           `json:"ttl"`
	AddedMs float64       `json:"added_ms"`
}

type sharedJSON struct {
	Addr    netip.Addr `json:"addr"`
	Players []string   `json:"players"`
	AddedMs float64    `json:"added_ms"`
}

type linkJSON struct {
	Between       [2]string     `json:"between"`
	RTTMs         *float64      `json:"rtt_ms"`
	ExpectedRTTMs *float64      `json:"expected_rtt_ms"`
	ExcessRTTMs   *float64      `json:"excess_rtt_ms"`
	Loss          *float64      `json:"loss"`
	Causes        []vocab.Cause `json:"causes"`
}

type bodyJSON struct {
	Verdict     string       `json:"verdict"`
	Culprit     *string      `json:"culprit"`
	CulpritLink *[2]string   `json:"culprit_link"`
	SharedHop   *sharedJSON  `json:"shared_hop"`
	Players     []playerJSON `json:"players"`
	Links       []linkJSON   `json:"links"`
}

type eventJSON struct {
	Type  vocab.EventType `json:"type"`
	Frame int             `json:"frame"`
	bodyJSON
}

// Event is the `diagnosis` NDJSON event: the diagnosis at a master
// evaluation frame.
type Event struct {
	Frame int
	Diagnosis
}

// MarshalJSON writes {"type":"diagnosis","frame":…, then the body}.
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(eventJSON{Type: vocab.EventDiagnosis, Frame: e.Frame, bodyJSON: e.body()})
}

// MarshalJSON writes the body alone, as `summary.diagnosis` carries it.
func (d Diagnosis) MarshalJSON() ([]byte, error) { return json.Marshal(d.body()) }

func (d Diagnosis) body() bodyJSON {
	b := bodyJSON{Verdict: d.Verdict, CulpritLink: d.CulpritLink, Players: []playerJSON{}, Links: []linkJSON{}}
	if d.Culprit != "" {
		c := d.Culprit
		b.Culprit = &c
	}
	if h := d.SharedHop; h != nil {
		b.SharedHop = &sharedJSON{Addr: h.Addr, Players: nonNil(h.Players), AddedMs: roundOr0(h.AddedMs)}
	}
	for _, p := range d.Players {
		var w *whereJSON
		if p.Where != nil {
			w = &whereJSON{Link: p.Where.Link, TTL: p.Where.TTL, AddedMs: roundOr0(p.Where.AddedMs)}
		}
		var bb *bloatJSON
		if p.Bufferbloat != nil {
			bb = &bloatJSON{Upload: round(p.Bufferbloat.UploadMs, 10), Download: round(p.Bufferbloat.DownloadMs, 10)}
		}
		b.Players = append(b.Players, playerJSON{
			Where:        w,
			Bufferbloat:  bb,
			Player:       p.Player,
			AccessRTTMs:  round(p.AccessRTTMs, 10),
			AccessLoss:   round(p.AccessLoss, 10000),
			JitterMs:     round(p.JitterMs, 10),
			ProcessMs:    round(p.ProcessMs, 10),
			CausedWaitMs: round(p.CausedWaitMs, 10),
			RungWithout:  positive(p.RungWithout),
			FPSWithout:   positive(p.FPSWithout),
			Causes:       nonNil(p.Causes),
		})
	}
	for _, l := range d.Links {
		b.Links = append(b.Links, linkJSON{
			Between:       l.Between,
			RTTMs:         round(l.RTTMs, 10),
			ExpectedRTTMs: round(l.ExpectedRTTMs, 10),
			ExcessRTTMs:   round(l.ExcessRTTMs, 10),
			Loss:          round(l.Loss, 10000),
			Causes:        nonNil(l.Causes),
		})
	}
	return b
}

// round is nil for an unknown (NaN or infinite) value, else v rounded to
// 1/scale; -0 becomes 0.
func round(v, scale float64) *float64 {
	if !finite(v) {
		return nil
	}
	r := math.Round(v*scale)/scale + 0
	if r == 0 {
		r = 0
	}
	return &r
}

// roundOr0 is round for a value that is always known.
func roundOr0(v float64) float64 {
	if r := round(v, 10); r != nil {
		return *r
	}
	return 0
}

func positive(v int) *int {
	if v <= 0 {
		return nil
	}
	return &v
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
