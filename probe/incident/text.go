package incident

import (
	"fmt"
	"math"
	"time"

	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// clock is a game time as the screens show it: mm:ss, or h:mm:ss.
func clock(d time.Duration) string {
	s := int(max(d, 0) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// seconds says a duration as people read it: "0.8 s", "12 s".
func seconds(d time.Duration) string {
	s := d.Seconds()
	if s < 10 {
		return fmt.Sprintf("%.1f s", s)
	}
	return fmt.Sprintf("%.0f s", s)
}

func percent(x float64) string {
	v := math.Round(x*1000) / 10
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f %%", v)
	}
	return fmt.Sprintf("%.1f %%", v)
}

// since is when the incident opened, on the session's clock as every
// screen shows it: the session time of its opening frame (Input.Game),
// the same on every machine; this machine's own clock where the engine
// gives none.
func since(in Input, t *tracked) string {
	return clock(sessionTime(in, t.OpenedFrame, t.OpenedMs))
}

// sessionTime is the session time of frame f, or ms of this machine's
// clock without Input.Game.
func sessionTime(in Input, f int, ms float64) time.Duration {
	if in.Game != nil {
		return in.Game(f)
	}
	return units.FromMillis(ms)
}

// text is the incident's sentence now, in a player's words: who, since
// when, and why, with the player's name, never a pronoun for it.
func text(in Input, t *tracked, e *evidence) string {
	k := t.key
	var s string
	if k.path() {
		s = "The path between " + k.a + " and " + k.b + " holds the match back since " + since(in, t)
		switch t.Cause {
		case vocab.CauseLatency:
			switch {
			case e.rise > 0:
				s += ": their round trip is " + msOf(e.rise) + " above normal, while each of them is fine with the others."
			case t.AddedMs != nil:
				s += ": their round trip was up to " + ms(t.AddedMs) + " above normal and is coming back."
			default:
				s += ": their round trip is longer than their connections explain."
			}
		case vocab.CauseLoss:
			s += ": it loses " + percent(t.lossMax) + " of its packets."
		default:
			s += ": " + k.a + " and " + k.b + " wait mostly for each other."
		}
	} else {
		a := k.a
		s = "Waiting for " + a + " since " + since(in, t)
		switch t.Cause {
		case vocab.CauseBufferbloat:
			switch {
			case e.rise > 0:
				s += ": " + a + "'s round trips are " + msOf(e.rise) + " above normal, what a full queue on " + a + "'s line adds."
			case t.AddedMs != nil:
				s += ": a full queue on " + a + "'s line added up to " + ms(t.AddedMs) + " to its round trips; they are coming back."
			default:
				s += ": a full queue on " + a + "'s line slows its round trips."
			}
		case vocab.CauseLatency:
			switch {
			case e.unacked > 0 && e.added == 0:
				s += ": " + a + "'s packets wait " + seconds(e.unacked) + " for their acknowledgement."
			case e.rise > 0:
				s += ": " + a + "'s round trips are " + msOf(e.rise) + " above normal."
			case t.AddedMs != nil:
				s += ": " + a + "'s round trips were up to " + ms(t.AddedMs) + " above normal and are coming back."
			default:
				s += ": " + a + "'s connection is slow."
			}
		case vocab.CauseLoss:
			s += ": " + a + " loses " + percent(t.lossMax) + " of its packets."
		case vocab.CauseProcessing:
			s += ": " + a + "'s machine needs " + fmt.Sprintf("%.0f ms", units.Millis(e.process)) + " per frame, more than the frame rate allows."
		default:
			s += "; why is not clear yet."
		}
	}
	if t.LoadTest != nil {
		s += " " + t.LoadTest.From + "'s load test to " + t.LoadTest.To + " is running: these waits are its price, not a fault."
	}
	return s
}

// closedText is the incident's last sentence: what it was and what it cost.
func closedText(in Input, t *tracked) string {
	who := ""
	if t.key.path() {
		who = "The path between " + t.key.a + " and " + t.key.b
	} else {
		who = t.key.a + "'s " + map[bool]string{true: "line", false: "side"}[t.Cause == vocab.CauseBufferbloat]
	}
	end := clock(sessionTime(in, *t.ClosedFrame, *t.ClosedMs))
	s := who + " held the match back from " + since(in, t) + " to " + end
	switch t.Cause {
	case vocab.CauseLatency, vocab.CauseBufferbloat:
		if t.AddedMs != nil {
			s += ", its round trips up to " + ms(t.AddedMs) + " above normal"
		}
	case vocab.CauseLoss:
		s += ", losing up to " + percent(t.lossMax) + " of its packets"
	case vocab.CauseProcessing:
		s += ", its machine slower than the frame rate"
	}
	return s + "; it cost the match " + seconds(units.FromMillis(t.WaitMs)) + " of waiting."
}

func ms(v *float64) string { return fmt.Sprintf("%.0f ms", *v) }

// msOf says a rise now to the nearest 10 ms: an incident's line changes
// when its sentence does, and a rise moves by a millisecond or two every
// evaluation.
func msOf(d time.Duration) string { return fmt.Sprintf("%.0f ms", math.Round(d.Seconds()*100)*10) }
