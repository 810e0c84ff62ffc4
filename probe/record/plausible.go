package record

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/names"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/textsafe"
)

// A record whose checksum is right may still hold what no writer of this
// program writes: a file can be crafted, and its checksum recomputed. The
// reader checks every value a replay or report would act on or print, and
// reports a record that fails as damage (errCorrupt, with the record's
// place), so that it is never replayed.

// maxAt bounds a record's time since t=0. A session recorded for more than
// a year is not a session; the bound keeps times far from the int64 edge,
// where printing them as minutes and seconds overflowed.
const maxAt = 366 * 24 * time.Hour

// maxFrame bounds a frame number: maxAt at the highest frame rate.
const maxFrame = int(maxAt/time.Second) * maxFPS

// maxFPS is the highest frame rate anything in lagscope runs at (the game
// speed cap of `--fps` and of a scenario, and the wire's timing payload).
const maxFPS = 1000

// maxMs bounds a duration in milliseconds (a wait, a round trip): maxAt.
var maxMs = units.Millis(maxAt)

// oldestProtocol is the oldest protocol whose recordings this build reads:
// event IDs never change meaning (S19), and protocol 2 changed only the
// telemetry between machines, which no recording holds.
const oldestProtocol = 1

// checkHeader refuses a header of another protocol (S19: a recording names
// the protocol version that wrote it, and event IDs mean what that version
// says) and header text that could steer a terminal.
func checkHeader(h *Header) error {
	if h.Protocol < oldestProtocol || h.Protocol > feed.ProtocolVersion {
		return fmt.Errorf("%w: written by protocol %d, this build reads protocols %d to %d", ErrVersion, h.Protocol, oldestProtocol, feed.ProtocolVersion)
	}
	for _, f := range []struct{ key, v string }{{"program", h.Program}, {"session", h.Session}, {"started", h.Started}} {
		if !textsafe.Safe(f.v) {
			return fmt.Errorf("%w: header %s holds control characters", ErrNotRecording, f.key)
		}
	}
	if h.Self != "" {
		if _, err := names.Validate(h.Self); err != nil {
			return fmt.Errorf("%w: header self: %v", ErrNotRecording, err)
		}
	}
	return nil
}

// checkRecord checks a decoded record's content; the error says which
// field is impossible, for StopError's Detail.
func checkRecord(rec *Record) error {
	if rec.At < 0 || rec.At > maxAt {
		return fmt.Errorf("time %d ns is outside 0..%v", int64(rec.At), maxAt)
	}
	if rec.From != "" {
		if err := checkName("from", rec.From); err != nil {
			return err
		}
	}
	switch {
	case rec.Event != nil:
		return checkEvent(rec.Event)
	case rec.View != nil:
		return checkView(rec.View)
	case rec.Command != nil:
		return checkCommand(rec.Command)
	}
	return nil
}

func checkName(key, name string) error {
	if _, err := names.Validate(name); err != nil {
		return fmt.Errorf("%s: %v", key, err)
	}
	return nil
}

// checkOptName is checkName for a field that may be empty.
func checkOptName(key, name string) error {
	if name == "" {
		return nil
	}
	return checkName(key, name)
}

func checkText(key, s string) error {
	if !textsafe.Safe(s) {
		return fmt.Errorf("%s %q holds control characters", key, s)
	}
	return nil
}

func checkFrame(key string, f int) error {
	if f < 0 || f > maxFrame {
		return fmt.Errorf("%s %d is outside 0..%d", key, f, maxFrame)
	}
	return nil
}

func checkMs(key string, ms float64) error {
	if !(ms >= 0 && ms <= maxMs) { // NaN fails too
		return fmt.Errorf("%s %v ms is outside 0..%v", key, ms, maxMs)
	}
	return nil
}

func checkOptMs(key string, ms *float64) error {
	if ms == nil {
		return nil
	}
	return checkMs(key, *ms)
}

func checkFPS(fps int) error {
	if fps < 1 || fps > maxFPS {
		return fmt.Errorf("fps %d is outside 1..%d", fps, maxFPS)
	}
	return nil
}

// checkTiming: a timing event's target (rungs.Timing.Valid: send period
// 1..10, look-ahead a whole number of send periods from its rung's up to
// 250; every machine refuses an event with any other), or with inForce a
// timing in force (rungs.Timing.ValidInForce: also the look-aheads past 250
// a staged change can round up to), with the rung and tier that timing has.
// A timing that is neither reads as no tier and is damage, never a Fast or
// Bad row.
func checkTiming(sp, la, rung int, tier string, fps int, inForce bool) error {
	t := rungs.Timing{SendPeriod: sp, LookAhead: la}
	switch {
	case inForce && !t.ValidInForce():
		return fmt.Errorf("timing %v is not one a session holds in force (%s)", t, timingRule)
	case !inForce && !t.Valid():
		return fmt.Errorf("timing %v is not one a timing event may carry (%s)", t, timingRule)
	case rung != t.Rung():
		return fmt.Errorf("rung %d for timing %v, which is rung %d", rung, t, t.Rung())
	case tier != t.Tier().String():
		return fmt.Errorf("tier %q for timing %v, which is %v", tier, t, t.Tier())
	}
	return checkFPS(fps)
}

// timingRule is the rule of rungs.Timing.Valid in a few words, for damage
// details.
var timingRule = fmt.Sprintf("send period 1..%d, look-ahead whole send periods from its rung's up to %d", rungs.Rungs, rungs.MaxLookAhead)

// checkValid: a view's target, which a timing event set (Valid), or with
// inForce its timing in force (ValidInForce).
func checkValid(key string, t rungs.Timing, inForce bool) error {
	if (inForce && !t.ValidInForce()) || (!inForce && !t.Valid()) {
		return fmt.Errorf("%s %v is not one a session runs at", key, t)
	}
	return nil
}

func checkEvent(e feed.Event) error {
	h := feed.Head(e)
	if err := checkFrame("frame", h.Frame); err != nil {
		return err
	}
	if err := checkOptMs("t_ms", h.TMs); err != nil {
		return err
	}
	if err := checkOptMs("game_ms", h.GameMs); err != nil {
		return err
	}
	var err error
	switch e := e.(type) {
	case *feed.MasterEvent:
		err = checkName("player", e.Player)
	case *feed.RemovedEvent:
		err = checkName("player", e.Player)
	case *feed.ReportEvent:
		err = errors.Join(checkName("player", e.Player), checkOptMs("rtt_ms", e.RTTMs),
			checkMs("wait_ms", e.WaitMs), checkMs("process_ms", e.ProcessMs))
	case *feed.TimingEvent:
		err = errors.Join(checkFrame("decided", e.Decided),
			checkTiming(e.SendPeriod, e.LookAhead, e.Rung, e.Tier, e.FPS, false), checkText("reason", e.Reason))
	case *feed.TimingActiveEvent:
		err = checkTiming(e.SendPeriod, e.LookAhead, e.Rung, e.Tier, e.FPS, true)
	case *feed.MessageEvent:
		err = errors.Join(checkText("text", e.Text), checkOptName("player", e.Player))
	case *feed.StallEvent:
		err = errors.Join(checkName("player", e.Player), checkMs("wait_ms", e.WaitMs), checkOptName("cause", e.Cause))
	case *feed.AlertEvent:
		err = checkAlert(e)
	case *feed.LinkEvent:
		err = checkLink(&e.LinkStat)
	case *feed.DiagnosisEvent:
		err = checkDiagnosis(&e.Diagnosis)
	case *feed.PathEvent:
		err = checkPathStat(&e.PathStat)
	case *feed.LoadEvent:
		err = checkLoad(e)
	case *feed.LoadStartEvent:
		err = checkLoadStart(e)
	case *feed.SessionEvent:
		err = errors.Join(checkName("name", e.Name), checkText("session", e.Session), checkText("role", e.Role),
			checkText("addr", e.Addr), checkText("host", e.Host), checkCount("need", e.Need))
	case *feed.RosterEvent:
		err = checkCount("need", e.Need)
		for _, n := range append(slices.Clone(e.Players), e.Observers...) {
			err = errors.Join(err, checkName("roster", n))
		}
	case *feed.IncidentEvent:
		err = checkIncident(&e.Incident)
	case *feed.SummaryEvent:
		for i := range e.Incidents {
			err = errors.Join(err, checkIncident(&e.Incidents[i]))
		}
		for i := range e.Links {
			err = errors.Join(err, checkLink(&e.Links[i]))
		}
		err = errors.Join(err, checkDiagnosis(&e.Diagnosis))
		for _, p := range e.Players {
			err = errors.Join(err, checkName("player", p.Player), checkMs("total_wait_ms", p.TotalWaitMs),
				checkMs("max_wait_ms", p.MaxWaitMs), checkFrame("frames", p.Frames))
		}
	default:
		// A type the registry holds that this check does not know: the
		// recording would carry what nothing looked at.
		err = fmt.Errorf("no plausibility check for %s events", h.Type)
	}
	return firstOf(string(h.Type)+" event", err)
}

// checkIncident: a phase and cause this build tells, its subject (a
// player, a path of two, or neither), its times and frames in range and in
// order, its figures plausible, its text safe.
func checkIncident(inc *feed.Incident) error {
	// An id and a count of frames are bounded as a frame is: a session
	// has no more incidents, nor waits on more frames, than it has frames
	// (times the machines, which maxFrame's margin holds).
	err := errors.Join(checkFrame("id", inc.ID), checkMs("opened_ms", inc.OpenedMs), checkFrame("opened_frame", inc.OpenedFrame),
		checkOptMs("closed_ms", inc.ClosedMs), checkMs("wait_ms", inc.WaitMs), checkFrame("frames_waited", inc.FramesWaited),
		checkOptMs("added_ms", inc.AddedMs), checkText("text", inc.Text))
	switch inc.Phase {
	case vocab.IncidentOpen, vocab.IncidentUpdate:
		if inc.ClosedMs != nil || inc.ClosedFrame != nil {
			err = errors.Join(err, fmt.Errorf("%s line with a close", inc.Phase))
		}
	case vocab.IncidentClose:
		if inc.ClosedMs == nil || inc.ClosedFrame == nil {
			err = errors.Join(err, errors.New("close line without its close"))
		} else if *inc.ClosedMs < inc.OpenedMs || *inc.ClosedFrame < inc.OpenedFrame {
			err = errors.Join(err, errors.New("closed before it opened"))
		}
	default:
		err = errors.Join(err, fmt.Errorf("phase %q", inc.Phase))
	}
	if inc.ClosedFrame != nil {
		err = errors.Join(err, checkFrame("closed_frame", *inc.ClosedFrame))
	}
	if !inc.Cause.Valid() {
		err = errors.Join(err, fmt.Errorf("cause %q", inc.Cause))
	}
	switch {
	case inc.Player != nil && inc.Between != nil:
		err = errors.Join(err, errors.New("both a player and a path"))
	case inc.Player != nil:
		err = errors.Join(err, checkName("player", *inc.Player))
	case inc.Between != nil:
		err = errors.Join(err, checkName("between", inc.Between[0]), checkName("between", inc.Between[1]))
		if inc.Between[0] == inc.Between[1] {
			err = errors.Join(err, errors.New("a path from a player to itself"))
		}
	}
	if inc.Loss != nil && !(*inc.Loss >= 0 && *inc.Loss <= 1) {
		err = errors.Join(err, fmt.Errorf("loss %v outside 0..1", *inc.Loss))
	}
	if inc.RungFrom < 1 || inc.RungFrom > 10 || inc.RungPeak < inc.RungFrom || inc.RungPeak > 10 {
		err = errors.Join(err, fmt.Errorf("rungs %d..%d", inc.RungFrom, inc.RungPeak))
	}
	if w := inc.Where; w != nil {
		if !w.Link.Valid() || w.TTL < 1 || w.TTL > 255 {
			err = errors.Join(err, fmt.Errorf("where %v at ttl %d", w.Link, w.TTL))
		}
		err = errors.Join(err, checkMs("where.added_ms", w.AddedMs))
	}
	if l := inc.LoadTest; l != nil {
		err = errors.Join(err, checkName("load_test.from", l.From), checkName("load_test.to", l.To))
	}
	return err
}

// checkAlert: a kind this build raises, the machine that raised it, and a
// link's two ends (both or neither: a tier alert is about the session).
func checkAlert(e *feed.AlertEvent) error {
	err := errors.Join(checkName("player", e.Player), checkText("text", e.Text))
	switch e.Kind {
	case feed.AlertBad, feed.AlertLoss:
		if e.From == nil || e.To == nil {
			return errors.Join(err, fmt.Errorf("%s alert without its link", e.Kind))
		}
		return errors.Join(err, checkName("from", *e.From), checkName("to", *e.To))
	case feed.AlertTier:
		if e.From != nil || e.To != nil {
			return errors.Join(err, errors.New("tier alert on a link"))
		}
		return err
	}
	return errors.Join(err, fmt.Errorf("alert kind %q", e.Kind))
}

// firstOf keeps the detail one line: the first of the joined errors, after
// what it was found in.
func firstOf(what string, err error) error {
	if err == nil {
		return nil
	}
	for { // joins nest (a link's checks inside a view's)
		j, ok := err.(interface{ Unwrap() []error })
		if !ok {
			break
		}
		err = j.Unwrap()[0]
	}
	return fmt.Errorf("%s: %w", what, err)
}

// checkLink: the link's ends are names, its counters obey L1-L2 (a missing
// datagram was first expected), its times are plausible.
func checkLink(l *feed.LinkStat) error {
	err := errors.Join(checkName("link from", l.From), checkName("link to", l.To), checkText("link state", l.State),
		checkOptMs("srtt_ms", l.SRTTMs), checkOptMs("rttvar_ms", l.RTTVARMs), checkOptMs("rto_ms", l.RTOMs),
		checkOptMs("conn_timeout_ms", l.ConnTimeoutMs))
	if err != nil {
		return err
	}
	if l.Missing != nil && (l.Expected == nil || *l.Missing > *l.Expected) {
		return fmt.Errorf("link %s→%s: missing %d of %s expected", l.From, l.To, *l.Missing, optCount(l.Expected))
	}
	if l.PeerMissing != nil && (l.PeerExpected == nil || *l.PeerMissing > *l.PeerExpected) {
		return fmt.Errorf("link %s→%s: peer missing %d of %s expected", l.From, l.To, *l.PeerMissing, optCount(l.PeerExpected))
	}
	return nil
}

func optCount(n *uint64) string {
	if n == nil {
		return "no"
	}
	return fmt.Sprint(*n)
}

func checkView(v *feed.View) error {
	err := errors.Join(checkText("session", v.Session), checkOptName("self", v.Self), checkOptName("master", v.Master),
		checkOptName("waited on", v.WaitedOn), checkFrame("frame", v.Frame))
	if v.Game < 0 || v.Game > maxAt {
		err = errors.Join(err, fmt.Errorf("session time %d ns is outside 0..%v", int64(v.Game), maxAt))
	}
	if v.Started { // a lobby's view holds the configured timing, not one in force
		err = errors.Join(err, checkFPS(v.FPS), checkValid("timing in force", v.InForce, true), checkValid("target", v.Target, false))
		if v.Needed != (rungs.Timing{}) {
			err = errors.Join(err, checkValid("timing needed", v.Needed, false))
		}
	}
	for i := range v.Links {
		l := &v.Links[i]
		// Through starts one below the look-ahead; -1 is the floor a
		// zero look-ahead would give, never reached by a running session.
		ls := l.Link.Stat()
		err = errors.Join(err, checkLink(&ls), checkName("link peer", l.Peer), checkFrame("through", l.Through+1))
	}
	for i := range v.Paths {
		err = errors.Join(err, checkPathView(&v.Paths[i]))
	}
	if v.Load != nil {
		err = errors.Join(err, checkLoadView(v.Load))
	}
	for _, p := range v.Players {
		err = errors.Join(err, checkName("player", p.Name))
		if r := p.Report; r != nil {
			err = errors.Join(err, checkFrame("report frame", r.Frame))
		}
	}
	return firstOf("view", err)
}

func checkCommand(c *Command) error {
	err := errors.Join(checkName("player", c.Player), checkFrame("frame", c.Frame), checkFrame("send_frame", c.SendFrame))
	if err == nil && c.SendFrame < c.Frame {
		err = fmt.Errorf("send_frame %d before its frame %d (a command never runs early)", c.SendFrame, c.Frame)
	}
	return firstOf("command", err)
}

// maxNeed bounds a session's seats: at most 128 machines, 64 of them
// watchers.
const maxNeed = 128

func checkCount(key string, n int) error {
	if n < 0 || n > maxNeed {
		return fmt.Errorf("%s %d is outside 0..%d", key, n, maxNeed)
	}
	return nil
}
