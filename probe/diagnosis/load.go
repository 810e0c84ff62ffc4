package diagnosis

import (
	"github.com/lagscope/lagscope/vocab"
	"math"
)

// Load is the latest load test of a player's line (docs/load-test.md): the
// median round trip its load added in each direction, NaN where that
// direction was not measured. Upload is the player's own sending.
type Load struct {
	Player     string
	UploadMs   float64
	DownloadMs float64
}

// Bufferbloat is a player's `bufferbloat_ms`: what a full line adds per
// direction, NaN (null) for a direction not measured.
type Bufferbloat struct {
	UploadMs   float64
	DownloadMs float64
}

// CauseBufferbloat: a load test found the player's line adds at least
// bufferbloatMs when busy in either direction (grade C or worse).
const CauseBufferbloat = vocab.CauseBufferbloat

// bufferbloatMs is the least added round trip, in either direction, that
// makes a line bloated: grade C or worse (docs/load-test.md). With the S9
// headroom 60 ms is more than a frame each way at 30 fps, enough to move
// the match a rung whenever something else fills the line while it plays.
const bufferbloatMs = 60.0

// maxLoadMs bounds a load figure (100 days, as dur does): past it, or
// below 0, or not finite, a figure is no measurement and reads as unknown.
const maxLoadMs = 8.64e9

// bufferbloatOf is a player's line from the load tests, nil when none ran
// for it or its test measured neither direction. The loads come from other
// machines too, so a figure no test gives is unknown. With several loads
// for one player the first counts.
func bufferbloatOf(name string, loads []Load) *Bufferbloat {
	for _, l := range loads {
		if l.Player != name {
			continue
		}
		b := &Bufferbloat{UploadMs: loadFigure(l.UploadMs), DownloadMs: loadFigure(l.DownloadMs)}
		if math.IsNaN(b.UploadMs) && math.IsNaN(b.DownloadMs) {
			return nil
		}
		return b
	}
	return nil
}

func loadFigure(v float64) float64 {
	if !finite(v) || v < 0 || v > maxLoadMs {
		return math.NaN()
	}
	return v + 0 // -0 reads as 0
}

// bloated reports whether a load test found b's line adding bufferbloatMs
// or more in either direction; unknown is not bloated.
func bloated(b *Bufferbloat) bool {
	return b != nil && (b.UploadMs >= bufferbloatMs || b.DownloadMs >= bufferbloatMs)
}

// bloatFix is what the bufferbloat advice says to try, before what to
// keep off the line.
const bloatFix = "Turning on smart queue management (SQM, often called QoS or cake) in the router, or keeping "

// bloatAdvice is the advice for a bloated line: the direction that adds
// most, both when both reach bufferbloatMs, where that queue sits and what
// empties it. It names the player, never a pronoun.
func bloatAdvice(name string, b *Bufferbloat) string {
	up, down := b.UploadMs >= bufferbloatMs, b.DownloadMs >= bufferbloatMs
	switch {
	case up && down:
		first, second := "upload", "download"
		a, c := b.UploadMs, b.DownloadMs
		if c > a {
			first, second, a, c = second, first, c, a
		}
		return name + "'s " + first + " adds " + msText(a) + " and " + name + "'s " + second + " " + msText(c) +
			" when " + name + "'s line is busy: the queues both ways of " + name + "'s line. " +
			bloatFix + "uploads, downloads and streams off during matches, should fix it."
	case up:
		return name + "'s upload adds " + msText(b.UploadMs) + " when " + name + "'s line is busy: the upload queue in " +
			name + "'s router or modem. " + bloatFix + "uploads off during matches, should fix it."
	case down:
		return name + "'s download adds " + msText(b.DownloadMs) + " when " + name + "'s line is busy: the queue in front of " +
			name + "'s line, at the ISP's end. " + bloatFix + "downloads and streams off during matches, should fix it."
	}
	return ""
}

// playerAdvice is one player's own advice, most useful first: what a load
// test found when it found a bloated line and the traces put the delay on
// the player's line out or nowhere (the test tells what a delay there is
// and what to do); else where the traces put it, followed by the load
// test's advice when the line is bloated as well (a delay in the home
// network or at the ISP is not the line's queue, which still needs its
// own fix). None when neither says anything.
func playerAdvice(p *PlayerDiagnosis) []string {
	w, b := p.Where, p.Bufferbloat
	switch {
	case bloated(b) && (w == nil || w.Link == linkUplink):
		return []string{bloatAdvice(p.Player, b)}
	case w != nil && bloated(b):
		return []string{whereAdvice(p.Player, w, b), bloatAdvice(p.Player, b)}
	case w != nil:
		return []string{whereAdvice(p.Player, w, b)}
	}
	return nil
}

// lineNotQueue is the advice for a delay that starts on a player's line
// out when its load test found no deep queue either way: the line itself
// is slow, not its queue. "" when the test did not measure both
// directions.
func lineNotQueue(name string, w *Where, b *Bufferbloat) string {
	if b == nil || !finite(b.UploadMs) || !finite(b.DownloadMs) {
		return ""
	}
	return name + "'s delay (" + msText(w.AddedMs) + ") starts on " + name + "'s line out of the house, yet a latency-under-load test of " +
		name + "'s line found no deep queue (at most " + msText(math.Max(b.UploadMs, b.DownloadMs)) +
		" when busy): the line itself is slow, which the ISP or another kind of line may fix."
}

// mostBloated is the player other than the culprit whose line a load test
// found bloated by most (house order breaks a tie), nil when none is.
func mostBloated(d *Diagnosis) *PlayerDiagnosis {
	var best *PlayerDiagnosis
	worst := func(b *Bufferbloat) float64 { return math.Max(nanTo0(b.UploadMs), nanTo0(b.DownloadMs)) }
	for i := range d.Players {
		p := &d.Players[i]
		if p.Player == d.Culprit || !bloated(p.Bufferbloat) {
			continue
		}
		if best == nil || worst(p.Bufferbloat) > worst(best.Bufferbloat) {
			best = p
		}
	}
	return best
}

func nanTo0(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
