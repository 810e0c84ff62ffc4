package incident

// An incident's life: it opens on evidence, counts its cost and updates
// its figures each evaluation, and closes once the evidence is calm.

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// opened starts an incident on k. Its start goes back to the beginning of
// the evidence: the window of waits that opened it.
func (d *Detector) opened(in Input, k subject, e *evidence) feed.Incident {
	d.nextID++
	from := in.At
	if e.wait > 0 && e.from > 0 {
		from = max(e.from, d.frames[0].at)
	}
	t := &tracked{key: k, calmFrom: -1, said: in.At}
	t.ID, t.Phase = d.nextID, vocab.IncidentOpen
	t.OpenedMs, t.OpenedFrame = units.Millis(from), d.frameAt(from)
	if k.path() {
		t.Between = &[2]string{k.a, k.b}
	} else {
		a := k.a
		t.Player = &a
	}
	t.RungFrom, t.RungPeak = in.Rung, in.Rung
	w, f := d.direct(k, in.At-waitWindow)
	t.WaitMs, t.FramesWaited = units.Millis(w), f
	t.recent = append(t.recent, cost{in.At, e.wait})
	d.fill(in, t, e)
	d.open = append(d.open, t)
	return t.Incident
}

// carry takes an open incident through one evaluation: its cost grows by
// this evaluation's waits, its figures by what they show now; it closes
// after calmFor of calm evidence.
func (d *Detector) carry(dst []feed.Incident, in Input, t *tracked, e *evidence) []feed.Incident {
	w, f := d.direct(t.key, in.At-time.Nanosecond)
	t.WaitMs += units.Millis(w)
	t.FramesWaited += f
	t.recent = append(t.recent, cost{in.At, e.now})
	t.recent = slices.DeleteFunc(t.recent, func(c cost) bool { return c.at <= in.At-leadWindow })
	t.RungPeak = max(t.RungPeak, in.Rung)
	before := t.Incident
	if e.calm() {
		if t.calmFrom < 0 {
			t.calmFrom = in.At
		}
	} else {
		t.calmFrom = -1
	}
	d.fill(in, t, e)
	switch {
	case t.calmFrom >= 0 && in.At-t.calmFrom >= calmFor:
		t.Phase = vocab.IncidentClose
		ms, f := units.Millis(t.calmFrom), d.frameAt(t.calmFrom)
		t.ClosedMs, t.ClosedFrame = &ms, &f
		t.Text = closedText(in, t)
		d.all = append(d.all, t.Incident)
		t.said = in.At
		return append(dst, t.Incident)
	case changed(before, t.Incident) || in.At-t.said >= refresh:
		t.Phase, t.said = vocab.IncidentUpdate, in.At
		return append(dst, t.Incident)
	}
	return dst
}

// direct is the waits and stalled frames of the steps after since that
// machines recorded as for k: a player's, or for a path each end's for
// the other. An incident's cost is these — what every machine's own
// stall records put on its subject; the knock-on waits and the subject's
// own waits for the others tell who, not what it cost.
func (d *Detector) direct(k subject, since time.Duration) (time.Duration, int) {
	var w time.Duration
	var f int
	for key, l := range d.links {
		if (!k.path() && key[1] == k.a) || (k.path() && (key == [2]string{k.a, k.b} || key == [2]string{k.b, k.a})) {
			lw, lf, _, _ := l.window(since)
			w += lw
			f += lf
		}
	}
	return w, f
}

// changed: a line is due when anything but the cost moved.
func changed(a, b feed.Incident) bool {
	a.WaitMs, a.FramesWaited, a.Phase = b.WaitMs, b.FramesWaited, b.Phase
	return !sameIncident(a, b)
}

func sameIncident(a, b feed.Incident) bool {
	eqf := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqw := func(x, y *feed.IncidentWhere) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eql := func(x, y *feed.LoadPair) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Cause == b.Cause && eqf(a.AddedMs, b.AddedMs) && eqf(a.Loss, b.Loss) && a.RungPeak == b.RungPeak &&
		eqw(a.Where, b.Where) && eql(a.LoadTest, b.LoadTest) && a.Text == b.Text
}

// fill sets an incident's figures, cause, place and words from the
// evidence now.
func (d *Detector) fill(in Input, t *tracked, e *evidence) {
	if e.rise > 0 {
		t.sawRise = true
	}
	if e.added > t.addedD {
		t.addedD = e.added
		v := math.Round(units.Millis(e.added)*10) / 10
		t.AddedMs = &v
	}
	if e.lossSeen && e.loss > t.lossMax {
		t.lossMax, t.lossSeen = e.loss, true
		v := math.Round(e.loss*1e4) / 1e4
		t.Loss = &v
	}
	if in.Load != nil && (in.Load.From == t.key.a || in.Load.To == t.key.a || in.Load.From == t.key.b || in.Load.To == t.key.b) {
		lp := *in.Load
		t.LoadTest = &lp
	}
	if !t.key.path() && in.Where != nil && e.rise > 0 {
		if w := in.Where(t.key.a); w != nil {
			t.Where = w
		}
	}
	t.Cause = d.cause(in, t, e)
	if t.Phase != vocab.IncidentClose {
		t.Text = text(in, t, e)
	}
}

// cause: the load test's queue, when the player's own test runs or its
// latest graded its line C or worse and the rise fits what that test
// found; else a rise of its round trips (latency), its lost packets
// (loss), round trips that vary while their level holds (jitter), its
// machine (processing: others wait for it, it waits for no one, its
// links are fine and a frame takes it longer than the frame rate allows);
// else not known yet.
func (d *Detector) cause(in Input, t *tracked, e *evidence) vocab.Cause {
	now := d.causeNow(in, t, e)
	switch {
	case t.Cause == "" || t.Cause == vocab.CauseUnknown:
		return now
	case now == vocab.CauseUnknown || now == vocab.CauseJitter:
		return t.Cause // what it was found to be holds while the evidence fades
	case t.Cause == vocab.CauseBufferbloat && now == vocab.CauseLatency:
		return t.Cause // the queue's rise, as it drains
	}
	return now
}

// causeNow is what the evidence of this evaluation says.
func (d *Detector) causeNow(in Input, t *tracked, e *evidence) vocab.Cause {
	if !t.key.path() {
		a := t.key.a
		if e.rise > 0 && in.Bloat != nil {
			if ms, ok := in.Bloat(a); ok && fits(units.Millis(cmp.Or(e.added, e.rise)), ms) {
				return vocab.CauseBufferbloat
			}
		}
		if e.rise > 0 && t.LoadTest != nil {
			return vocab.CauseBufferbloat
		}
	}
	switch {
	case e.rise > 0 && !(e.lossOK && !e.risen):
		return vocab.CauseLatency
	case e.lossOK || (e.lossSeen && e.loss >= lossOpen):
		return vocab.CauseLoss
	case !t.key.path() && e.slow && e.outWait < waitCalm:
		return vocab.CauseProcessing
	case e.jitter:
		return vocab.CauseJitter
	}
	// What the latest diagnosis found of the player's share, when the
	// evidence of the moment names nothing: its line is slow, or varies,
	// or loses, all along.
	if in.Causes != nil {
		for _, c := range in.Causes(t.key.a, t.key.b) {
			switch c {
			case vocab.CauseLatency, vocab.CauseJitter, vocab.CauseLoss, vocab.CauseProcessing, vocab.CauseBufferbloat:
				return c
			}
		}
	}
	return vocab.CauseUnknown
}

// fits: a rise of x ms is what a load test that found y ms added
// explains, within half of it either way.
func fits(x, y float64) bool { return y > 0 && x >= y/2 && x <= y*1.5 }

// Open is the incidents open now, in the order they opened.
func (d *Detector) Open() []feed.Incident {
	out := make([]feed.Incident, len(d.open))
	for i, t := range d.open {
		out[i] = t.Incident
	}
	return out
}

// Lead is the open incidents' sentences, the one that caused the most
// waiting in the last leadWindow first.
func (d *Detector) Lead() []string {
	ts := slices.Clone(d.open)
	slices.SortStableFunc(ts, func(x, y *tracked) int {
		a, b := x.waited(), y.waited()
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Text
	}
	return out
}

func (t *tracked) waited() time.Duration {
	var w time.Duration
	for _, c := range t.recent {
		w += c.wait
	}
	return w
}

// Close ends every open incident at the end of a run: a close line each.
func (d *Detector) Close(dst []feed.Incident, in Input) []feed.Incident {
	for _, t := range d.open {
		t.Phase = vocab.IncidentClose
		ms, f := units.Millis(in.At), in.Frame
		t.ClosedMs, t.ClosedFrame = &ms, &f
		t.Text = closedText(in, t)
		d.all = append(d.all, t.Incident)
		dst = append(dst, t.Incident)
	}
	d.open = nil
	return dst
}

// All is every incident that has closed, as its last line.
func (d *Detector) All() []feed.Incident { return slices.Clone(d.all) }
