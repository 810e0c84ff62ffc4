package netcore

// The timers of the Endpoint: what Tick does when a deadline comes, and how
// NextDeadline knows the next one. In order:
//
//  1. Tick sends the LinkReports due (L4), then for each link whose timers
//     are due: retryReliable (RTO doubling once per round, T8, T9, T12),
//     retryGlobal (fixed interval, dropped at its timeout, T14), checkBad
//     (the bad-connection log, T11: time only makes a link bad, an answer
//     from the peer makes it good again) and reassembly timeouts;
//  2. NextDeadline reads the earliest deadline off the links' heap; touch
//     marks a link whose timers changed and linkDeadline works its
//     deadline out again.

import (
	"time"
)

// Tick does whatever is due at now: retries (T8, T12, T14), the
// bad-connection log (T11), LinkReports (L4) and reassembly timeouts. A
// link with nothing due is passed over.
func (e *Endpoint) Tick(now time.Duration) {
	e.traceTick(now)
	if len(e.order) > 0 && now >= e.nextReport {
		for _, l := range e.order {
			e.sendReport(l)
		}
		e.nextReport += e.cfg.PingInterval
		if e.nextReport <= now {
			e.nextReport = now + e.cfg.PingInterval
		}
	}
	for _, l := range e.order {
		if !l.stale && !l.dueBy(now) {
			continue
		}
		e.touch(l)
		e.retryReliable(now, l)
		e.retryGlobal(now, l)
		if !l.bad {
			// Time alone only makes a link bad. Recovery needs evidence
			// from the peer (receive.go, keepalive.go): the connection
			// timeout grows as retries double the RTO (T10, T12), and
			// judging a silent peer's oldest packet against it again
			// would report a dead link recovered, then bad again.
			e.checkBad(now, l)
		}
		l.unrelAsm.expire(now, minReassemblyTimeout, &e.budget, l.unrelIn.newer)
		l.globAsm.expire(now, e.reassemblyTimeout(), &e.budget, nil)
	}
}

func (e *Endpoint) reassemblyTimeout() time.Duration {
	return max(minReassemblyTimeout, e.cfg.GlobalTimeout)
}

// retryReliable resends every reliable datagram whose retry is due. The
// first retry comes one RTO (in force at first send) after the first send;
// each later one doubles the wait, up to the connection timeout (T8, T9).
// Each resend may double the link's RTO, once per round (T12).
func (e *Endpoint) retryReliable(now time.Duration, l *link) {
	q := &l.rel
	for s := q.oldest; s != q.next; s++ {
		p := q.at(s)
		if !p.inUse || p.nextRetry > now {
			continue
		}
		p.retries++
		l.loss.Sent++
		l.loss.Retransmitted++
		if p.epoch == e.epoch {
			l.est.resent(p.firstRTO)
		}
		p.wait = max(p.wait, min(2*p.wait, l.est.ConnTimeout()))
		p.nextRetry = now + p.wait
		e.transmitBody(l, ChannelReliable, p.packet, p.body)
	}
}

// retryGlobal resends due global datagrams at the fixed interval and drops
// those that reached the global timeout, counting the drop (T14).
func (e *Endpoint) retryGlobal(now time.Duration, l *link) {
	q := &l.glob
	if q.oldest == q.next {
		return
	}
	for s := q.oldest; s != q.next; s++ {
		p := q.at(s)
		switch {
		case !p.inUse:
		case now-p.firstSent >= e.cfg.GlobalTimeout:
			p.inUse = false
			l.global.Dropped++
		case p.nextRetry <= now:
			p.retries++
			l.global.Sent++
			l.global.Retransmitted++
			p.nextRetry = now + e.cfg.GlobalRetry
			e.transmitBody(l, ChannelGlobal, p.packet, p.body)
		}
	}
	q.advance()
	e.pump(now, l, q, ChannelGlobal)
}

// checkBad logs once when the peer has left something unanswered for the
// connection timeout — the oldest reliable datagram in flight or the
// oldest keep-alive that wants a reply (keepalive.go) — and once when the
// link recovers (T11). Nothing is dropped: the retries go on.
//
// Tick calls it only on a link that is not bad; an ack or a keep-alive
// reply calls it on any link, so a bad link recovers only when the peer
// answers, and only if nothing older than the connection timeout is then
// still unanswered.
func (e *Endpoint) checkBad(now time.Duration, l *link) {
	since, ok := l.silentSince()
	age := now - since
	bad := ok && age >= l.est.ConnTimeout()
	if bad == l.bad {
		return
	}
	l.bad = bad // its callers have touched l
	if bad {
		e.log.Warn("connection has gone bad", "peer", l.peer, "addr", l.addr, "at", now,
			"unacked_age", age, "conn_timeout", l.est.ConnTimeout())
	} else {
		e.log.Info("connection recovered", "peer", l.peer, "addr", l.addr, "at", now)
	}
}

// sendReport tells the peer this end's inbound totals for the link (L4).
func (e *Endpoint) sendReport(l *link) {
	b := AppendLinkReport(e.tx[e.bodyOff:e.bodyOff], LinkReport{Expected: l.loss.Expected, Missing: l.loss.Missing})
	e.transmit(l, ChannelControl, 0, len(b))
}

// NextDeadline is when Tick next has work: the earliest retry, global
// drop, bad-connection transition, LinkReport or reassembly timeout. It
// reports false when there are no links.
//
// A driver asks after every datagram and every Tick, so it must be cheap
// with many links: each link keeps its own deadline, worked out again
// (in O(its packets in flight)) only when its timers changed, and the
// links are kept in a heap by deadline, so the answer is the top's
// deadline or the next LinkReports, whichever comes first.
func (e *Endpoint) NextDeadline() (time.Duration, bool) {
	for _, l := range e.stale {
		l.stale = false
		if l.closed {
			continue
		}
		at, ok := e.linkDeadline(l)
		e.byDue.fix(l, at, ok)
	}
	clear(e.stale)
	e.stale = e.stale[:0]
	if len(e.order) == 0 {
		return 0, false
	}
	d := e.nextReport
	if top, ok := e.byDue.top(); ok {
		if at, ok := top.deadline(); ok && at < d {
			d = at
		}
	}
	if e.tracing != nil {
		// From 0: a probe due already is due at once.
		if t, ok := e.tracing.t.NextDeadline(0); ok && t < d {
			d = t
		}
	}
	return d, true
}

// touch says that l's timers may have changed: NextDeadline looks at it
// again, and Tick does not pass it over.
func (e *Endpoint) touch(l *link) {
	if !l.stale {
		l.stale = true
		e.stale = append(e.stale, l)
	}
}

// linkDeadline is when Tick next has work on l, LinkReports aside (they
// are the endpoint's).
func (e *Endpoint) linkDeadline(l *link) (time.Duration, bool) {
	var d time.Duration
	ok := false
	take := func(t time.Duration) {
		if !ok || t < d {
			d, ok = t, true
		}
	}
	q := &l.rel
	for s := q.oldest; s != q.next; s++ {
		if p := q.at(s); p.inUse {
			take(p.nextRetry)
		}
	}
	if t, has := l.silentSince(); has && !l.bad {
		take(t + l.est.ConnTimeout())
	}
	g := &l.glob
	for s := g.oldest; s != g.next; s++ {
		if p := g.at(s); p.inUse {
			take(min(p.nextRetry, p.firstSent+e.cfg.GlobalTimeout))
		}
	}
	if t, has := l.unrelAsm.deadline(minReassemblyTimeout); has {
		take(t)
	}
	if t, has := l.globAsm.deadline(e.reassemblyTimeout()); has {
		take(t)
	}
	return d, ok
}
