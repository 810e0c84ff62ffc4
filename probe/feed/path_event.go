package feed

import (
	"encoding/json"
	"math"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/units"
)

// The `path` event: one traced link's hop trace as this machine traced it
// (docs/path.md), once a second per traced link on a live machine. Its
// JSON is fixed:
//
//	{"type":"path","t_ms":…,"from":…,"to":…,"available":…,"why":…,
//	 "hops":[{"ttl","addr","link","sent","loss","best_ms","rtt_ms","worst_ms","rate_limited","loss_ci","base_ms"},…],
//	 "delay_starts":{"ttl","link","added_ms"}|null,"loss_starts":{"ttl","link","loss"}|null,"complete":…,
//	 "one_hop":…,"bursting":…,"loss_pending":{"loss","more"}|null}
//
// It carries no frame: a trace is about the network, not about a frame of
// the game. A link traced at the baseline's pace prints one at most every
// 10 s and when its judgement changes; a bursting one every second.

// PathStat is a traced path as the `path` event names it: round trips in
// ms rounded to 0.1, null for a hop that never answered, loss rounded to
// 4 places. Why is set only where the machine cannot trace (Available
// false), and Hops is then empty.
type PathStat struct {
	From        string         `json:"from"`
	To          string         `json:"to"`
	Available   bool           `json:"available"`
	Why         *string        `json:"why"`
	Hops        []PathHopStat  `json:"hops"`
	DelayStarts *PathDelayStat `json:"delay_starts"`
	LossStarts  *PathLossStat  `json:"loss_starts"`
	Complete    bool           `json:"complete"`
	// OneHop: the peer is the only hop; the trace places nothing.
	OneHop bool `json:"one_hop"`
	// Bursting: the link is looked at closely, a round a second.
	Bursting bool `json:"bursting"`
	// LossPending: the peer loses, and no hop is placed yet.
	LossPending *PathLossPendingStat `json:"loss_pending"`
}

// PathLossPendingStat is the peer's loss while no hop is placed, and about
// how many more probes placing it takes (0: no estimate).
type PathLossPendingStat struct {
	Loss float64 `json:"loss"`
	More int     `json:"more"`
}

// PathHopStat is one hop of a PathStat; RTTMs is the median.
type PathHopStat struct {
	TTL         int           `json:"ttl"`
	Addr        *netip.Addr   `json:"addr"`
	Link        vocab.HopLink `json:"link"`
	Sent        int           `json:"sent"`
	Loss        float64       `json:"loss"`
	BestMs      *float64      `json:"best_ms"`
	RTTMs       *float64      `json:"rtt_ms"`
	WorstMs     *float64      `json:"worst_ms"`
	RateLimited bool          `json:"rate_limited"`
	// LossCI is the 95 % interval of Loss.
	LossCI [2]float64 `json:"loss_ci"`
	// BaseMs is the hop's baseline (its median over the minutes before
	// its recent answers; RTTMs is theirs), null without one.
	BaseMs *float64 `json:"base_ms"`
}

// PathDelayStat is where the added delay starts and how much it adds.
type PathDelayStat struct {
	TTL     int           `json:"ttl"`
	Link    vocab.HopLink `json:"link"`
	AddedMs float64       `json:"added_ms"`
}

// PathLossStat is where the loss starts and the loss there.
type PathLossStat struct {
	TTL  int           `json:"ttl"`
	Link vocab.HopLink `json:"link"`
	Loss float64       `json:"loss"`
}

// PathEvent (live): a traced link's path, once a second while it is
// traced. Its Header's Frame is not written.
type PathEvent struct {
	Header
	PathStat
}

// pathEventJSON is the event's fixed field order: the type and time, then
// the path.
type pathEventJSON struct {
	Type vocab.EventType `json:"type"`
	TMs  *float64        `json:"t_ms,omitempty"`
	PathStat
}

// MarshalJSON writes the fixed shape: no frame.
func (e *PathEvent) MarshalJSON() ([]byte, error) {
	return json.Marshal(pathEventJSON{Type: vocab.EventPath, TMs: e.TMs, PathStat: e.PathStat})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *PathEvent) UnmarshalJSON(b []byte) error {
	var j pathEventJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	e.Header = Header{Type: j.Type, TMs: j.TMs}
	e.PathStat = j.PathStat
	return nil
}

// Network: each machine traces its own links.
func (*PathEvent) Network() bool { return false }

// Stat is the path from machine from as the `path` event names it.
func (pv *PathView) Stat(from string) PathStat {
	ps := PathStat{From: from, To: pv.Peer, Available: pv.Available, Complete: pv.Complete, Hops: []PathHopStat{}}
	if !pv.Available {
		why := pv.Why
		ps.Why = &why
	}
	for _, h := range pv.Hops {
		hs := PathHopStat{TTL: h.TTL, Link: h.Link, Sent: h.Sent, Loss: round4(h.Loss), RateLimited: h.RateLimited,
			LossCI: [2]float64{round4(h.LossLo), round4(h.LossHi)}}
		if h.HasBase {
			hs.BaseMs = ms1(h.Base)
		}
		if h.Addr.IsValid() {
			a := h.Addr
			hs.Addr = &a
		}
		if h.Answered {
			hs.BestMs, hs.RTTMs, hs.WorstMs = ms1(h.Best), ms1(h.Median), ms1(h.Worst)
		}
		ps.Hops = append(ps.Hops, hs)
	}
	if d := pv.DelayStarts; d != nil {
		ps.DelayStarts = &PathDelayStat{TTL: d.TTL, Link: d.Link, AddedMs: *ms1(d.Added)}
	}
	if l := pv.LossStarts; l != nil {
		ps.LossStarts = &PathLossStat{TTL: l.TTL, Link: l.Link, Loss: round4(l.Loss)}
	}
	ps.OneHop, ps.Bursting = pv.OneHop, pv.Bursting
	if l := pv.LossPending; l != nil {
		ps.LossPending = &PathLossPendingStat{Loss: round4(l.Loss), More: l.More}
	}
	return ps
}

// ms1 is d in ms rounded to 0.1, as the event writes round trips.
func ms1(d time.Duration) *float64 {
	v := math.Round(units.Millis(d)*10) / 10
	return &v
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
