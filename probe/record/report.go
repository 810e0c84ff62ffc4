package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lagscope/lagscope/metrics"
	"github.com/lagscope/lagscope/probe"
)

// Report is what `lagscope report` says about a recording (issue 8): per
// link round trips and loss shares, the timing history with tiers, and the
// longest waits with who caused them — short enough to paste into a chat.
// Times are milliseconds; a share or statistic that was never measured is
// null (L3), never 0.
type Report struct {
	Program  string        `json:"program,omitempty"`
	Session  string        `json:"session,omitempty"`
	Protocol int           `json:"protocol"`
	Virtual  bool          `json:"virtual"`
	Length   time.Duration `json:"-"`
	LengthMs float64       `json:"length_ms"`
	Players  []string      `json:"players"`
	Links    []LinkReport  `json:"links"`
	Timing   []TimingRow   `json:"timing"`
	// TimingOmitted counts the older timing rows left out to stay short.
	TimingOmitted int          `json:"timing_omitted,omitempty"`
	Waits         []WaitRow    `json:"longest_waits"`
	Causes        []CauseRow   `json:"causes"`
	Stopped       string       `json:"stopped,omitempty"` // where a cut-off recording ended
	Removed       []RemovedRow `json:"removed,omitempty"`
	// Commands counts the executed commands by the player who issued
	// them, each once however many machines recorded it (S7); empty for a
	// recording without commands.
	Commands []CommandRow `json:"commands,omitempty"`
}

// CommandRow is one player's executed commands.
type CommandRow struct {
	Player string `json:"player"`
	Count  int    `json:"count"`
	// Moved ran on a later send frame than the frame they were scheduled
	// for: a timing change had made that frame no longer a send frame (S13).
	Moved int `json:"moved"`
}

// LinkReport is one private link as its From machine saw it.
type LinkReport struct {
	From    string   `json:"from"`
	To      string   `json:"to"`
	Samples int      `json:"samples"`
	SRTT    Spread   `json:"srtt_ms"`
	Jitter  *float64 `json:"jitter_ms"` // mean RTTVAR: RFC 6298's mean deviation of the round trip (T3)
	// Cumulative totals over the recording, every life of the link added
	// up (L5), and the three shares of seed 004 (L8 says how to read them).
	Sent          uint64    `json:"sent"`
	Retransmitted uint64    `json:"retransmitted"`
	Expected      uint64    `json:"expected"`
	Lost          uint64    `json:"lost"`
	PeerExpected  uint64    `json:"peer_expected"`
	PeerLost      uint64    `json:"peer_lost"`
	ResendShare   *float64  `json:"resend_share"`  // retransmitted / sent
	InboundLoss   *float64  `json:"inbound_loss"`  // lost / expected
	OutboundLoss  *float64  `json:"outbound_loss"` // peer_lost / peer_expected (the peer's LinkReports, L4)
	Bad           []Episode `json:"bad"`           // T11: a packet outlived the connection timeout
}

// Spread summarises samples; all null when there were none.
type Spread struct {
	Min  *float64 `json:"min"`
	Mean *float64 `json:"mean"`
	P95  *float64 `json:"p95"`
	Max  *float64 `json:"max"`
}

// Episode is a stretch of time a link was bad, by the per-second samples.
type Episode struct {
	FromMs float64 `json:"from_ms"`
	ToMs   float64 `json:"to_ms"`
	Open   bool    `json:"open,omitempty"` // still bad when the recording ended
}

// TimingRow is one executed timing event (S12, S15, S17).
type TimingRow struct {
	AtMs       float64 `json:"at_ms"`
	Frame      int     `json:"frame"`
	Decided    int     `json:"decided"`
	SendPeriod int     `json:"send_period"`
	LookAhead  int     `json:"look_ahead"`
	Rung       int     `json:"rung"`
	Tier       string  `json:"tier"`
	FPS        int     `json:"fps"`
	Reason     string  `json:"reason"`
}

// WaitRow is one stall: Player's machine waited before executing Frame,
// last for Cause's commands.
type WaitRow struct {
	AtMs   float64 `json:"at_ms"`
	Frame  int     `json:"frame"`
	Player string  `json:"player"`
	Cause  string  `json:"cause"`
	WaitMs float64 `json:"wait_ms"`
}

// CauseRow adds up the waits a player caused the others.
type CauseRow struct {
	Cause   string             `json:"cause"`
	TotalMs float64            `json:"total_ms"`
	Waits   int                `json:"waits"`
	Of      map[string]float64 `json:"of"` // waiting player → ms
}

// RemovedRow is a player leaving (S7, S16).
type RemovedRow struct {
	AtMs   float64 `json:"at_ms"`
	Frame  int     `json:"frame"`
	Player string  `json:"player"`
}

// How much a report shows: enough to explain a session, little enough to
// paste into a chat.
const (
	reportTimingRows = 12
	reportWaitRows   = 5
)

type linkAcc struct {
	from, to   string
	srtt, rvar []float64
	fold       metrics.Fold
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
		a.fold.Observe(countsOf(ls, waited))
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

func countsOf(ls probe.LinkStat, waited time.Duration) metrics.Counts {
	v := func(p *uint64) uint64 {
		if p == nil {
			return 0
		}
		return *p
	}
	return metrics.Counts{Sent: v(ls.Sent), Retransmitted: v(ls.Retransmitted), Expected: v(ls.Expected), Lost: v(ls.Missing),
		PeerExpected: v(ls.PeerExpected), PeerLost: v(ls.PeerMissing), Waited: waited}
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

// Formats of a report.
const (
	FormatText     = "text"
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
)

// Write prints the report in one of the formats.
func (r *Report) Write(w io.Writer, format string) error {
	switch format {
	case FormatJSON:
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case FormatMarkdown:
		return r.markdown(w)
	case FormatText:
		return r.text(w)
	}
	return fmt.Errorf("unknown format %q (text, markdown or json)", format)
}

func num(p *float64, digits int) string {
	if p == nil {
		return "—" // not measured (L3)
	}
	return fmt.Sprintf("%.*f", digits, *p)
}

func pct(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", *p*100)
}

func clock(msv float64) string {
	d := time.Duration(msv * float64(time.Millisecond)).Round(time.Second)
	return fmt.Sprintf("%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

func (r *Report) title() string {
	kind := "live"
	if r.Virtual {
		kind = "virtual time"
	}
	name := r.Session
	if name == "" {
		name = "session"
	}
	return fmt.Sprintf("%s — %s, %s (%s), %d players", name, clock(r.LengthMs), r.Program, kind, len(r.Players))
}

func episodes(es []Episode) string {
	if len(es) == 0 {
		return "none"
	}
	var parts []string
	for _, e := range es {
		s := clock(e.FromMs) + "–" + clock(e.ToMs)
		if e.Open {
			s = clock(e.FromMs) + "–end"
		}
		parts = append(parts, s)
	}
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("+%d more", len(parts)-3))
	}
	return strings.Join(parts, ", ")
}

func (c CauseRow) of() string {
	type kv struct {
		k string
		v float64
	}
	var xs []kv
	for k, v := range c.Of {
		xs = append(xs, kv{k, v})
	}
	sort.Slice(xs, func(i, j int) bool {
		if xs[i].v != xs[j].v {
			return xs[i].v > xs[j].v
		}
		return xs[i].k < xs[j].k
	})
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%s %.0f ms", x.k, x.v))
	}
	return strings.Join(parts, ", ")
}

// commandLine is the commands per player in one line, with how many ran
// on a later send frame than scheduled (S13).
func (r *Report) commandLine() string {
	var parts []string
	moved := 0
	for _, c := range r.Commands {
		parts = append(parts, fmt.Sprintf("%s %d", c.Player, c.Count))
		moved += c.Moved
	}
	s := strings.Join(parts, ", ")
	if moved > 0 {
		s += fmt.Sprintf("; %d ran on a later send frame than scheduled after a timing change (S13)", moved)
	}
	return s
}

func waitsN(n int) string {
	if n == 1 {
		return "1 wait"
	}
	return fmt.Sprintf("%d waits", n)
}

func causeName(c string) string {
	if c == "" {
		return "(own pace)" // waited for its own frame time or processing
	}
	return c
}

func (r *Report) text(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "lagscope report: %s\n", r.title())
	if r.Stopped != "" {
		fmt.Fprintf(&b, "recording cut off: %s\n", r.Stopped)
	}
	fmt.Fprintf(&b, "\nLinks (SRTT ms min/mean/p95/max; jitter = mean RTTVAR ms; shares of datagrams)\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  link\tSRTT\tjitter\tresend\tin loss\tout loss\tbad\n")
	for _, l := range r.Links {
		fmt.Fprintf(tw, "  %s → %s\t%s/%s/%s/%s\t%s\t%s\t%s\t%s\t%s\n", l.From, l.To, num(l.SRTT.Min, 0), num(l.SRTT.Mean, 0), num(l.SRTT.P95, 0), num(l.SRTT.Max, 0),
			num(l.Jitter, 1), pct(l.ResendShare), pct(l.InboundLoss), pct(l.OutboundLoss), episodes(l.Bad))
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nTiming (send period/look-ahead, rung, tier)\n")
	if r.TimingOmitted > 0 {
		fmt.Fprintf(&b, "  … %d earlier changes left out\n", r.TimingOmitted)
	}
	for _, t := range r.Timing {
		fmt.Fprintf(&b, "  %s frame %-6d %d/%d rung %d %-6s %d fps  %s\n", clock(t.AtMs), t.Frame, t.SendPeriod, t.LookAhead, t.Rung, t.Tier, t.FPS, t.Reason)
	}
	if len(r.Timing) == 0 {
		fmt.Fprintf(&b, "  no timing events\n")
	}
	if len(r.Removed) > 0 {
		var left []string
		for _, x := range r.Removed {
			left = append(left, fmt.Sprintf("%s at %s (frame %d)", x.Player, clock(x.AtMs), x.Frame))
		}
		fmt.Fprintf(&b, "Left: %s\n", strings.Join(left, ", "))
	}
	if len(r.Commands) > 0 {
		fmt.Fprintf(&b, "Commands executed: %s\n", r.commandLine())
	}
	fmt.Fprintf(&b, "\nLongest waits\n")
	for _, x := range r.Waits {
		fmt.Fprintf(&b, "  %s frame %-6d %s waited %.0f ms for %s\n", clock(x.AtMs), x.Frame, x.Player, x.WaitMs, causeName(x.Cause))
	}
	if len(r.Waits) == 0 {
		fmt.Fprintf(&b, "  nobody waited\n")
	}
	if len(r.Causes) > 0 {
		fmt.Fprintf(&b, "\nWho caused the waits\n")
		for _, c := range r.Causes {
			fmt.Fprintf(&b, "  %s: %.0f ms over %s (%s)\n", causeName(c.Cause), c.TotalMs, waitsN(c.Waits), c.of())
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func (r *Report) markdown(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "**lagscope report:** %s\n\n", r.title())
	if r.Stopped != "" {
		fmt.Fprintf(&b, "_Recording cut off: %s._\n\n", r.Stopped)
	}
	fmt.Fprintf(&b, "| link | SRTT ms min / mean / p95 / max | jitter ms | resend | in loss | out loss | bad |\n")
	fmt.Fprintf(&b, "| --- | --- | ---: | ---: | ---: | ---: | --- |\n")
	for _, l := range r.Links {
		fmt.Fprintf(&b, "| %s → %s | %s / %s / %s / %s | %s | %s | %s | %s | %s |\n", l.From, l.To, num(l.SRTT.Min, 0), num(l.SRTT.Mean, 0), num(l.SRTT.P95, 0), num(l.SRTT.Max, 0),
			num(l.Jitter, 1), pct(l.ResendShare), pct(l.InboundLoss), pct(l.OutboundLoss), episodes(l.Bad))
	}
	fmt.Fprintf(&b, "\n**Timing**")
	if r.TimingOmitted > 0 {
		fmt.Fprintf(&b, " (last %d; %d earlier left out)", len(r.Timing), r.TimingOmitted)
	}
	fmt.Fprintf(&b, "\n\n| time | frame | timing | rung | tier | fps | reason |\n| --- | ---: | --- | ---: | --- | ---: | --- |\n")
	for _, t := range r.Timing {
		fmt.Fprintf(&b, "| %s | %d | %d/%d | %d | %s | %d | %s |\n", clock(t.AtMs), t.Frame, t.SendPeriod, t.LookAhead, t.Rung, t.Tier, t.FPS, t.Reason)
	}
	for _, x := range r.Removed {
		fmt.Fprintf(&b, "\n%s left at %s (frame %d).\n", x.Player, clock(x.AtMs), x.Frame)
	}
	if len(r.Commands) > 0 {
		fmt.Fprintf(&b, "\n**Commands executed:** %s.\n", r.commandLine())
	}
	fmt.Fprintf(&b, "\n**Longest waits**\n\n")
	if len(r.Waits) == 0 {
		fmt.Fprintf(&b, "Nobody waited.\n")
	}
	for _, x := range r.Waits {
		fmt.Fprintf(&b, "- %s, frame %d: %s waited %.0f ms for %s\n", clock(x.AtMs), x.Frame, x.Player, x.WaitMs, causeName(x.Cause))
	}
	if len(r.Causes) > 0 {
		fmt.Fprintf(&b, "\n**Who caused the waits**\n\n")
		for _, c := range r.Causes {
			fmt.Fprintf(&b, "- %s: %.0f ms over %s (%s)\n", causeName(c.Cause), c.TotalMs, waitsN(c.Waits), c.of())
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
