package record

import (
	"math"
	"sort"
	"time"

	"github.com/lagscope/lagscope/probe"
)

// How much a report shows: enough to explain a session, little enough to
// paste into a chat.
const (
	reportTimingRows = 12
	reportWaitRows   = 5
)

type linkAcc struct {
	from, to   string
	srtt, rvar []float64
	fold       probe.LinkFold
	bad        []Episode
	badSince   time.Duration
	inBad      bool
	last       time.Duration
	samples    int
}

// Summarize builds the report of a recording.
func Summarize(rec *Recording) *Report {
	r := &Report{Program: rec.Header.Program, Session: rec.Header.Session, Protocol: rec.Header.Protocol, Virtual: rec.Header.Virtual,
		Links: []LinkReport{}, Timing: []TimingRow{}, Waits: []WaitRow{}, Causes: []CauseRow{}}
	if rec.Stop != nil {
		r.Stopped = rec.Stop.Error()
	}
	hasViews := false
	for _, x := range rec.Records {
		if x.Kind == KindView {
			hasViews = true
			break
		}
	}
	links := map[[2]string]*linkAcc{}
	var order [][2]string
	acc := func(from, to string) *linkAcc {
		k := [2]string{from, to}
		a := links[k]
		if a == nil {
			a = &linkAcc{from: from, to: to}
			links[k] = a
			order = append(order, k)
		}
		return a
	}
	sample := func(at time.Duration, a *linkAcc, ls probe.LinkStat, waited time.Duration, bad bool) {
		a.samples++
		a.last = at
		if ls.SRTTMs != nil {
			a.srtt = append(a.srtt, *ls.SRTTMs)
		}
		if ls.RTTVARMs != nil {
			a.rvar = append(a.rvar, *ls.RTTVARMs)
		}
		a.fold.Observe(probe.LinkView{LinkStat: ls, Caused: waited}.Counts())
		switch {
		case bad && !a.inBad:
			a.inBad, a.badSince = true, at
		case !bad && a.inBad:
			a.inBad = false
			a.bad = append(a.bad, Episode{FromMs: ms(a.badSince), ToMs: ms(at)})
		}
	}
	players := map[string]bool{}
	var playerOrder []string
	seenPlayer := func(n string) {
		if n != "" && !players[n] {
			players[n] = true
			playerOrder = append(playerOrder, n)
		}
	}
	// Network events are the same on every machine (S7): a recording of
	// several machines keeps each once.
	seenNet := map[string]bool{}
	causes := map[string]*CauseRow{}
	var stalls []WaitRow
	lastView := map[string][]probe.LinkView{}
	type cmdKey struct {
		player      string
		seq         uint32
		frame, send int
	}
	seenCmd := map[cmdKey]bool{}
	cmds := map[string]*CommandRow{}
	for _, x := range rec.Records {
		r.Length = max(r.Length, x.At)
		switch x.Kind {
		case KindCommand:
			c := x.Command
			k := cmdKey{c.Player, c.Seq, c.Frame, c.SendFrame}
			if seenCmd[k] {
				continue
			}
			seenCmd[k] = true
			row := cmds[c.Player]
			if row == nil {
				row = &CommandRow{Player: c.Player}
				cmds[c.Player] = row
			}
			row.Count++
			if c.Moved() {
				row.Moved++
			}
		case KindView:
			v := x.View
			seenPlayer(v.Self)
			if r.Session == "" {
				// A live recording's header is written before the session
				// has a name (a joiner learns it from the Welcome).
				r.Session = v.Session
			}
			present := map[string]bool{}
			for _, l := range v.Links {
				present[l.Peer] = true
				sample(x.At, acc(v.Self, l.Peer), l.LinkStat, l.Caused, l.Bad || l.State == "bad")
			}
			// A link gone from the picture has ended: its totals stay.
			for _, l := range lastView[v.Self] {
				if !present[l.Peer] {
					a := acc(v.Self, l.Peer)
					a.fold.Retire()
					if a.inBad {
						a.inBad = false
						a.bad = append(a.bad, Episode{FromMs: ms(a.badSince), ToMs: ms(x.At)})
					}
				}
			}
			lastView[v.Self] = v.Links
		case KindEvent:
			if x.Event == nil {
				continue
			}
			if x.Event.Network() {
				key := string(x.Raw)
				if seenNet[key] {
					continue
				}
				seenNet[key] = true
			}
			switch e := x.Event.(type) {
			case *probe.LinkEvent:
				if !hasViews {
					sample(x.At, acc(e.From, e.To), e.LinkStat, 0, e.State == "bad")
				}
			case *probe.TimingEvent:
				r.Timing = append(r.Timing, TimingRow{AtMs: ms(x.At), Frame: e.Frame, Decided: e.Decided, SendPeriod: e.SendPeriod, LookAhead: e.LookAhead,
					Rung: e.Rung, Tier: e.Tier, FPS: e.FPS, Reason: e.Reason})
			case *probe.StallEvent:
				seenPlayer(e.Player)
				stalls = append(stalls, WaitRow{AtMs: ms(x.At), Frame: e.Frame, Player: e.Player, Cause: e.Cause, WaitMs: e.WaitMs})
				c := causes[e.Cause]
				if c == nil {
					c = &CauseRow{Cause: e.Cause, Of: map[string]float64{}}
					causes[e.Cause] = c
				}
				c.TotalMs += e.WaitMs
				c.Waits++
				c.Of[e.Player] += e.WaitMs
			case *probe.ReportEvent:
				seenPlayer(e.Player)
			case *probe.RemovedEvent:
				r.Removed = append(r.Removed, RemovedRow{AtMs: ms(x.At), Frame: e.Frame, Player: e.Player})
			}
		}
	}
	r.LengthMs = ms(r.Length)
	r.Players = playerOrder
	if r.Players == nil {
		r.Players = []string{}
	}
	// Links in name order: the order machines first showed them depends on
	// who joined first, which a reader cannot see.
	sort.SliceStable(order, func(i, j int) bool {
		if order[i][0] != order[j][0] {
			return order[i][0] < order[j][0]
		}
		return order[i][1] < order[j][1]
	})
	for _, k := range order {
		a := links[k]
		if a.inBad {
			a.bad = append(a.bad, Episode{FromMs: ms(a.badSince), ToMs: ms(a.last), Open: true})
		}
		t := a.fold.Total()
		lr := LinkReport{From: a.from, To: a.to, Samples: a.samples, SRTT: spread(a.srtt), Jitter: mean(a.rvar),
			Sent: t.Sent, Retransmitted: t.Retransmitted, Expected: t.Expected, Lost: t.Lost, PeerExpected: t.PeerExpected, PeerLost: t.PeerLost,
			ResendShare: share(t.Retransmitted, t.Sent), InboundLoss: share(t.Lost, t.Expected), OutboundLoss: share(t.PeerLost, t.PeerExpected),
			Bad: a.bad}
		if lr.Bad == nil {
			lr.Bad = []Episode{}
		}
		r.Links = append(r.Links, lr)
	}
	if n := len(r.Timing); n > reportTimingRows {
		r.TimingOmitted = n - reportTimingRows
		r.Timing = r.Timing[n-reportTimingRows:]
	}
	for _, row := range cmds {
		r.Commands = append(r.Commands, *row)
	}
	sort.Slice(r.Commands, func(i, j int) bool { return r.Commands[i].Player < r.Commands[j].Player })
	sort.SliceStable(stalls, func(i, j int) bool { return stalls[i].WaitMs > stalls[j].WaitMs })
	r.Waits = append(r.Waits, stalls[:min(len(stalls), reportWaitRows)]...)
	for _, c := range causes {
		r.Causes = append(r.Causes, *c)
	}
	sort.Slice(r.Causes, func(i, j int) bool {
		if r.Causes[i].TotalMs != r.Causes[j].TotalMs {
			return r.Causes[i].TotalMs > r.Causes[j].TotalMs
		}
		return r.Causes[i].Cause < r.Causes[j].Cause
	})
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func share(part, whole uint64) *float64 {
	if whole == 0 {
		return nil // nothing counted is not a clean link (L3)
	}
	s := float64(part) / float64(whole)
	return &s
}

func mean(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	m := s / float64(len(xs))
	return &m
}

func spread(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	lo, hi := s[0], s[len(s)-1]
	// Nearest-rank 95th percentile.
	p := s[int(math.Ceil(0.95*float64(len(s))))-1]
	return Spread{Min: &lo, Mean: mean(s), P95: &p, Max: &hi}
}
