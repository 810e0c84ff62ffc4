package diagnosis

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

// Timings is what the verdict's words about the timing read: the target
// the master chose at the evaluation (or holds now), the timing in force,
// the frame and the frame rate in force. The TUI passes the current ones
// to Sentences whenever they change, so that the verdict never names a rung
// the header does not.
type Timings struct {
	Target, InForce rungs.Timing
	Frame, FPS      int
}

// verdictFacts is what a verdict is worded from besides the Diagnosis's
// own fields: the session's costs and what Input said about the time and
// the timing's way ahead.
type verdictFacts struct {
	rungAll, fpsAll int
	worstAll        float64 // ms, the worst counted round trip; 0 = none
	players         int
	outlook         rungs.Outlook
	before          string // the culprit of an earlier evaluation whose descent is still pending
	elapsed         time.Duration
	recent          map[string]float64 // ms each player caused others to wait recently
	worded          Timings            // the timings Verdict is worded with
	// later: the descent comes later than the previous evaluation said
	// (pushedBack); the verdict says why after its time.
	later, further bool
}

// Worded is the timings the verdict was worded with at the evaluation; the
// zero Timings for a Diagnosis decoded from JSON.
func (d *Diagnosis) Worded() Timings {
	if d.facts == nil {
		return Timings{}
	}
	return d.facts.worded
}

// reword writes the verdict again for other timings: the same facts, the
// target, the timing in force and the frame now. A Diagnosis decoded from
// JSON carries no facts and keeps its verdict as it was written.
func (d *Diagnosis) reword(t Timings) string {
	if d.facts == nil {
		return d.Verdict
	}
	return strings.Join(sentences(d, d.facts, t), " ")
}

// Sentences is the verdict in its order of priority: what holds the match
// back; where it starts and what to try (from the hop traces and the load
// tests); what happens next; the notable players. The TUI shows as many as
// fit its verdict area; the Diagnosis view and the NDJSON carry all.
func (d *Diagnosis) Sentences(t Timings) []string {
	if d.facts == nil {
		if d.Verdict == "" {
			return nil
		}
		return []string{d.Verdict}
	}
	return sentences(d, d.facts, t)
}

func sentences(d *Diagnosis, f *verdictFacts, t Timings) []string {
	if !t.Target.Valid() && f.rungAll > 0 {
		t.Target = rungs.RungTiming(f.rungAll)
	}
	if t.FPS <= 0 {
		t.FPS = max(f.fpsAll, 1)
	}
	if f.worstAll <= 0 {
		return append(slices.Clone(d.Lead), "Nothing is measured yet: no round trip between two players is known.")
	}
	out := slices.Clone(d.Lead)
	next := nextStep(f.outlook, t)
	calm := func(s string) string { return s }
	if len(d.Lead) > 0 {
		// An incident is open: the verdict says what happens now first,
		// and never that no one holds the match back; of the calm
		// sentences only their clause about the timing stays.
		calm = func(s string) string { return timingClause(s) }
	}
	switch {
	case f.players == 2:
		out = append(out, twoPlayers(d, t))
	case d.Measured < MinMeasured:
		out = append(out, "Fewer than three players are measured, so a slow round trip cannot be split between the two players on it.")
	case d.Culprit != "" || d.CulpritLink != nil:
		out = append(out, holdsBack(d, f, t))
	case d.SharedHop != nil && t.Target.Valid():
		out = append(out, "No player's own connection holds the match back: a hop several players' paths share does, and the match runs at "+t.Target.Label()+".")
	case next != "" && f.before != "" && len(d.Lead) == 0:
		out = append(out, f.before+"'s connection is back to normal; the match "+next+".")
		next = ""
	case next != "":
		out = append(out, calm("No one's connection or machine holds the match back; the match "+next+"."))
		next = ""
	case d.Measured == MinMeasured && cannotTell3(d) != "":
		out = append(out, cannotTell3(d))
	case len(slowTie(d)) >= 2 && t.Target.Valid():
		tied := slowTie(d)
		out = append(out, "No single player holds the match back: "+listNames(tied)+" connections add about as much to every round trip; together they hold it at "+t.Target.Label()+".")
	case t.Target.Valid():
		out = append(out, calm("No one's connection or machine holds the match back; it runs at "+t.Target.Label()+"."))
	case len(d.Lead) == 0:
		out = append(out, "No one's connection or machine holds the match back.")
	}
	if next == "" && f.later && nextStep(f.outlook, t) != "" {
		out = append(out, laterWhy(f))
	}
	out = append(out, advice(d)...)
	if next != "" {
		out = append(out, "The match "+next+".")
		if f.later {
			out = append(out, laterWhy(f))
		}
	}
	return append(out, notables(d, f, t)...)
}

// cannotTell3 is, with three players and no slow path told, the sentence
// of what the three round trips cannot tell when two shares are slow (each
// latencyMs above the third's): the two being slow fits them exactly as
// well as the third being slow with the path between the two slow too (the
// shares trade against that path's excess: docs/diagnosis.md, "What it
// cannot tell"). Empty when no two shares are slow.
func cannotTell3(d *Diagnosis) string {
	if d.CulpritLink != nil || len(d.Players) != 3 {
		return ""
	}
	lo := -1
	for i := range d.Players {
		if math.IsNaN(d.Players[i].AccessRTTMs) {
			return ""
		}
		if lo < 0 || d.Players[i].AccessRTTMs < d.Players[lo].AccessRTTMs {
			lo = i
		}
	}
	var slow []string
	for i := range d.Players {
		if i != lo && d.Players[i].AccessRTTMs-d.Players[lo].AccessRTTMs >= latencyMs {
			slow = append(slow, d.Players[i].Player)
		}
	}
	if len(slow) != 2 {
		return ""
	}
	a, b, third := slow[0], slow[1], d.Players[lo].Player
	return "With three players lagscope cannot tell whether " + a + " and " + b + " are both slow or " + third +
		" is slow together with the path between " + a + " and " + b + "; a fourth player would tell them apart."
}

// laterWhy says why the step down comes later than the master's previous
// evaluation (the match's last timing check, in a player's words) said: it
// now goes further down; or the player that made the others wait most in
// the last two evaluations; or else the round trips.
func laterWhy(f *verdictFacts) string {
	if f.further {
		return "That is later than the match's last timing check said because the match now steps further down, to " + f.outlook.To.Label() + "."
	}
	who, most := "", 0.0
	for name, ms := range f.recent {
		if ms > most || (ms == most && name < who) {
			who, most = name, ms
		}
	}
	if who != "" && most >= 100 {
		return "That is later than the match's last timing check said: the waits for " + who + " rose again."
	}
	return "That is later than the match's last timing check said: the round trips rose again."
}

// timingClause is what follows "; " in a calm sentence, as a sentence of
// its own: "it runs at Fast (rung 1)." becomes "The match runs at Fast
// (rung 1).".
func timingClause(s string) string {
	_, rest, ok := strings.Cut(s, "; ")
	if !ok {
		return ""
	}
	rest = strings.TrimPrefix(strings.TrimPrefix(rest, "it "), "the match ")
	return "The match " + rest
}

// holdsBack is the sentence that names the culprit, the slow path, or both.
func holdsBack(d *Diagnosis, f *verdictFacts, t Timings) string {
	var b strings.Builder
	if d.Culprit != "" {
		p := d.player(d.Culprit)
		switch d.Reason {
		case "rung":
			b.WriteString(p.Player + "'s connection adds " + msText(p.AccessRTTMs) + " to every round trip with " + p.Player)
			if has(p.Causes, CauseLoss) {
				b.WriteString(" and loses " + pctText(p.AccessLoss) + " of its packets")
			}
			without := rungs.RungTiming(p.RungWithout)
			if p.RungWithout > 0 && p.RungWithout < t.Target.Rung() {
				b.WriteString("; it holds the match at " + t.Target.Label() + " — without it: " + without.Label() + ".")
			} else {
				b.WriteString("; the match runs at " + t.Target.Label() + ", as it would without it.")
			}
			if has(p.Causes, CauseProcessing) && p.FPSWithout > f.fpsAll {
				// A slow machine answers late too, so its round trips grow
				// with its frame time: say both, the rung and the rate.
				b.WriteString(" Its machine also needs " + msText(p.ProcessMs) + " per frame, which holds the game at " +
					strconv.Itoa(f.fpsAll) + " fps — without it: " + strconv.Itoa(p.FPSWithout) + " fps.")
			}
		case "fps":
			b.WriteString(p.Player + "'s machine needs " + msText(p.ProcessMs) + " per frame; it holds the match at " +
				strconv.Itoa(f.fpsAll) + " fps — without it: " + strconv.Itoa(p.FPSWithout) + " fps.")
		default:
			b.WriteString("Others waited for " + p.Player + " " + msText(f.recent[p.Player]) + " over the match's last two timing checks.")
		}
	}
	if d.CulpritLink != nil {
		var l LinkDiagnosis
		for _, x := range d.Links {
			if x.Between == *d.CulpritLink {
				l = x
				break
			}
		}
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString("The path between " + l.Between[0] + " and " + l.Between[1] + " is slow (" + msText(l.ExcessRTTMs) +
			" more than their connections explain)")
		if d.Culprit == "" {
			b.WriteString("; neither player's own link is at fault.")
		} else {
			b.WriteString(".")
		}
	}
	if d.Measured == MinMeasured && d.Reason == "rung" {
		b.WriteString(" With three players a slow path cannot be told from two slow players.")
	}
	return b.String()
}

// twoPlayers: with two players the one round trip cannot be split, so the
// verdict says what the pair's path does and that it cannot say whose side.
func twoPlayers(d *Diagnosis, t Timings) string {
	var l *LinkDiagnosis
	for i := range d.Links {
		if finite(d.Links[i].RTTMs) && d.Links[i].RTTMs > 0 {
			l = &d.Links[i]
			break
		}
	}
	lossy := l != nil && finite(l.Loss) && l.Loss >= notableLoss
	if l == nil || (!lossy && t.Target.Valid() && t.Target.Rung() == 1) {
		return "Both connections look fine; with two players lagscope cannot tell whose side a delay is on."
	}
	s := "The round trip between " + l.Between[0] + " and " + l.Between[1] + " is " + msText(l.RTTMs)
	if lossy {
		s += " and loses " + pctText(l.Loss) + " of the packets"
	}
	if t.Target.Valid() {
		s += "; the match runs at " + t.Target.Label()
	}
	return s + ". With two players lagscope cannot tell whose side it is on."
}

// nextStep is "steps back down to Fast (rung 1) in about 40 s" while a
// descent is pending or running and the timing in force has not got there
// yet, else "".
func nextStep(o rungs.Outlook, t Timings) string {
	if !o.Pending() || !t.Target.Valid() || atOrBelow(t.InForce, o.To) || atOrBelow(t.Target, o.To) && t.Target == t.InForce {
		return ""
	}
	s := "steps back down"
	switch {
	case t.InForce.Valid() && t.InForce.Rung() == o.To.Rung():
		// A look-ahead cut at rung 10 (S11c): the rung's label stays.
		s += " from " + t.InForce.String() + " to " + o.To.String() + " (" + o.To.Label() + ")"
	case t.InForce.Valid():
		s += " from " + t.InForce.Label() + " to " + o.To.Label()
	default:
		s += " to " + o.To.Label()
	}
	return s + " " + inAbout(time.Duration(o.Active-t.Frame)*time.Second/time.Duration(max(t.FPS, 1)))
}

// atOrBelow reports whether timing t needs no more than u: a rung no
// higher, and on the same rung a look-ahead no longer.
func atOrBelow(t, u rungs.Timing) bool {
	if !t.Valid() || !u.Valid() {
		return false
	}
	if t.Rung() != u.Rung() {
		return t.Rung() < u.Rung()
	}
	return t.LookAhead <= u.LookAhead
}

// inAbout writes a time ahead the way a person says it: "in a few seconds"
// under 7.5 s, then to the nearest 5 s, then to the nearest minute.
func inAbout(d time.Duration) string {
	s := d.Seconds()
	switch {
	case s < 7.5:
		return "in a few seconds"
	case s < 120:
		return "in about " + strconv.Itoa(int(math.Round(s/5))*5) + " s"
	}
	return "in about " + strconv.Itoa(int(math.Round(s/60))) + " min"
}

// The notable-player thresholds: a player is named for these even when it
// costs the match nothing yet. docs/diagnosis.md lists them.
const (
	// notableLoss: 2 % of a player's datagrams (both directions), the same
	// bar as lossShare. From there every fiftieth frame packet needs a
	// resend, which costs a retry timeout each time (T8).
	notableLoss = 0.02
	// notableJitterMs: 20 ms of a player's share of the round-trip
	// variation. The retry timeout grows by four times the variation
	// (T3), so 20 ms puts 80 ms on every wait for a lost datagram.
	notableJitterMs = 20.0
	// notableProcess: half a frame. A machine that needs half of every
	// frame for itself has one frame's worth of spike left before it slows
	// the whole match (S15).
	notableProcess = 0.5
)

// notables names every player, other than the culprit, whose loss, jitter
// or processing time is notable, with what it has cost the match so far.
func notables(d *Diagnosis, f *verdictFacts, t Timings) []string {
	frameMs := 1000 / float64(max(t.FPS, 1))
	var out []string
	for _, p := range d.Players {
		if p.Player == d.Culprit {
			continue
		}
		var what []string
		subject := func(first, later string) string {
			if len(what) == 0 {
				return first
			}
			return later
		}
		if finite(p.AccessLoss) && p.AccessLoss >= notableLoss {
			what = append(what, subject(p.Player+" loses ", "it loses ")+pctText(p.AccessLoss)+" of its packets")
		}
		if finite(p.JitterMs) && p.JitterMs >= notableJitterMs {
			what = append(what, subject(p.Player+"'s round trips vary", "its round trips vary")+" by "+msText(p.JitterMs))
		}
		if finite(p.ProcessMs) && p.ProcessMs >= notableProcess*frameMs {
			what = append(what, subject(p.Player+"'s machine needs ", "its machine needs ")+msText(p.ProcessMs)+" of every "+msText(frameMs)+" frame")
		}
		if len(what) == 0 {
			continue
		}
		out = append(out, andList(what)+"; so far it costs the match "+costText(p.CausedWaitMs, f.elapsed)+".")
	}
	return out
}

// andList joins "a", "b" and "c" as "a, b and c".
func andList(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// costText is "3 s of waiting in 10 min", "no waiting" under 50 ms.
func costText(waitMs float64, elapsed time.Duration) string {
	if !finite(waitMs) || waitMs < 50 {
		return "no waiting"
	}
	s := durText(units.FromMillis(waitMs)) + " of waiting"
	if elapsed > 0 {
		s += " in " + durText(elapsed)
	}
	return s
}

// durText writes a span in its largest sensible unit: "300 ms", "3 s",
// "10 min".
func durText(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(units.WholeMillis(d.Round(time.Millisecond)), 10) + " ms"
	case d < 2*time.Minute:
		return strconv.FormatFloat(math.Round(d.Seconds()*10)/10, 'f', -1, 64) + " s"
	}
	return strconv.Itoa(int(math.Round(d.Minutes()))) + " min"
}

func (d *Diagnosis) player(name string) PlayerDiagnosis {
	for _, q := range d.Players {
		if q.Player == name {
			return q
		}
	}
	return PlayerDiagnosis{Player: name}
}

func has(list []vocab.Cause, s vocab.Cause) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// msText writes whole milliseconds, e.g. "150 ms".
func msText(v float64) string {
	if !finite(v) {
		return "an unknown number of ms"
	}
	return strconv.FormatFloat(math.Round(v), 'f', -1, 64) + " ms"
}

// pctText writes a chance as a percentage with at most one decimal, e.g. "3 %".
func pctText(v float64) string {
	if !finite(v) {
		return "an unknown share"
	}
	return strconv.FormatFloat(math.Round(v*1000)/10, 'f', -1, 64) + " %"
}

// slowTie is the players whose share of the round trip stands out
// (latency) when nobody is named: two or more of them tie.
func slowTie(d *Diagnosis) []string {
	var out []string
	for i := range d.Players {
		if has(d.Players[i].Causes, CauseLatency) {
			out = append(out, d.Players[i].Player)
		}
	}
	return out
}
