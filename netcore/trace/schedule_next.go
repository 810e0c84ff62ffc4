package trace

import (
	"math"
	"time"
)

// When the scheduler has work next (NextAt), and the answers it keeps
// between wake-ups: NextAt's, and the quiet spell in which Next finds
// nothing (quiet). Both stand while gen, the count of the state's
// changes, stays and now stays within the time they hold for.

// quiet: Next at now would find nothing and change nothing, by what the
// last Next found (Next). A Next would plan the baseline round if it is
// not planned (period), so the baseline round must be planned already.
func (s *scheduler) quiet(now time.Duration) bool {
	return s.quietGen == s.gen && now >= s.quietFrom && now < s.quietUntil && (s.planned || !s.quietMulti)
}

// leastPeriod is the shortest l's round can be from now on, the state
// unchanged: a burst ends with time but begins only by a change, and a
// planned baseline round stays as planned until a change (one not
// planned yet is baselineMin at least).
func (s *scheduler) leastPeriod(l *schedLink, now time.Duration) time.Duration {
	switch {
	case l.bursting(now):
		return burstPeriod
	case s.planned:
		return s.basePeriod
	}
	return baselineMin
}

// NextAt is the earliest time from now on at which Next may have a probe,
// false when every link waits for an answer (or none is traced). A driver
// asks on every wake-up, and the answer changes far less often: it is
// kept, and worked out again only once the state changed or now reached
// a moment at which time alone may change it.
func (s *scheduler) NextAt(now time.Duration) (time.Duration, bool) {
	if s.atGen == s.gen && now >= s.atFrom && now < s.atUntil {
		return s.atNext, s.atOK
	}
	next, ok, until := s.nextAt(now)
	s.atGen, s.atFrom, s.atUntil, s.atNext, s.atOK = s.gen, now, until, next, ok
	return next, ok
}

// nextAt works NextAt out at now, and until: the answer holds for every
// moment from now until before then, the state unchanged. Time alone
// changes it where a burst ends (the round's period), a round ends (a new
// one begins), a hop's skip ends (roundNext), and once now passes the
// answer itself (a probe due is due at once).
func (s *scheduler) nextAt(now time.Duration) (next time.Duration, ok bool, until time.Duration) {
	until = math.MaxInt64
	for _, l := range s.links {
		if l.oneHop() {
			continue
		}
		if !l.pinned && now < l.burstUntil {
			until = min(until, l.burstUntil)
		}
		period := s.period(l, now)
		if !l.roundOn || now-l.roundAt >= period {
			// A new round begins now: its hops are due once their
			// budget allows.
			at0, on0, done0 := l.roundAt, l.roundOn, l.done
			l.roundAt, l.roundOn, l.done = now, true, 0
			at, found, u := s.roundNext(l, now)
			l.roundAt, l.roundOn, l.done = at0, on0, done0
			until = min(until, u)
			if found && (!ok || at < next) {
				next, ok = at, true
			}
			continue
		}
		until = min(until, l.roundAt+period)
		at, found, u := s.roundNext(l, now)
		until = min(until, u)
		if !found {
			at, found = l.roundAt+period, true
		}
		if !ok || at < next {
			next, ok = at, true
		}
	}
	if ok && s.sentAny {
		next = max(next, s.lastSend+rateInterval)
	}
	if ok {
		// Every time that made next is either a moment after now or now
		// itself (max(now, …)): past next, now is the answer.
		until = min(until, next+1)
	}
	return next, ok, until
}

// roundNext is the earliest time one of l's current round's hops is due,
// false when none is, and until: the first moment after now at which time
// alone may change which hops the round leaves out — a silent hop's
// silentEvery ends, or a round that begins now outlives another link's
// probe of a shared router (dueAt).
func (s *scheduler) roundNext(l *schedLink, now time.Duration) (next time.Duration, ok bool, until time.Duration) {
	until = math.MaxInt64
	for ttl := 1; ttl <= l.reach; ttl++ {
		at, due := s.dueAt(l, ttl, now, false)
		if due && (!ok || at < next) {
			next, ok = at, true
		}
		h := &l.hops[ttl]
		if h.silent() && h.probed && now-h.last < silentEvery {
			until = min(until, h.last+silentEvery)
		}
		if a := s.addrOf(l, ttl); a.IsValid() && h.tell {
			if u, used := s.addrLast[a]; used && u.at >= now {
				until = min(until, u.at+1)
			}
		}
	}
	return next, ok, until
}
