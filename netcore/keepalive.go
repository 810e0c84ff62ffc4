package netcore

// Keep-alives outside the numbered channels. A session keeps a quiet link
// alive (an observer's "still watching", a stalled player's nudge to the
// one it waits for, the lobby's pings), but L2 says keep-alives are not
// numbered and not counted: were they Data on a numbered channel, they
// would move Sent, Expected and Retransmitted, and the loss totals would
// no longer count game traffic alone. So they travel as KeepAlive records
// on the control channel, like acks:
//
//  1. SendUnnumbered sends one, and when it wants a reply remembers when
//     the oldest unanswered one left;
//  2. the peer hands its payload to the DeliverFunc (channel control), so
//     the session there still hears from us, and answers one KeepAlive
//     per datagram with a KeepAliveReply echoing its id;
//  3. until a reply arrives the link counts as silent from that moment:
//     the bad-connection check (T11) treats it like the oldest reliable
//     packet in flight, and NextDeadline includes when it would go bad.
//
// A keep-alive is never resent (the session sends the next one on its own
// schedule). With Config.KeepAliveSamples, a reply to the oldest unanswered
// one is the round trip of a datagram sent exactly once and answered at
// once, a clean sample (T2): an observer sends no game commands, and these
// are how its links are measured. Samples from before a measurement reset
// are ignored (T5).

import "time"

// keepAlives is a link's keep-alive state.
type keepAlives struct {
	next    uint32        // id of the next KeepAlive sent
	waiting bool          // a KeepAlive that wants a reply is unanswered
	first   uint32        // id of the oldest unanswered one
	since   time.Duration // when it was sent
	epoch   uint32        // the measurement epoch it was sent in (T5)
}

// SendUnnumbered sends msg to peer in one unnumbered control datagram: a
// keep-alive, in no loss total (L2), never resent, delivered to the peer's
// DeliverFunc on ChannelControl. With wantReply the peer answers, and until
// it does the link counts as silent from now: once that outlives the
// connection timeout the link goes bad (T11), exactly as if a reliable
// packet sent now were still unacked. msg is at most maxKeepAlivePayload
// bytes: a keep-alive is never cut into fragments.
func (e *Endpoint) SendUnnumbered(now time.Duration, peer PeerID, msg []byte, wantReply bool) error {
	l := e.links[peer]
	if l == nil {
		return errUnknownPeer
	}
	if len(msg) > maxKeepAlivePayload {
		return errMessageTooLarge
	}
	k := &l.alive
	id := k.next
	k.next++
	if wantReply && !k.waiting {
		k.waiting, k.first, k.since, k.epoch = true, id, now, e.epoch
		e.touch(l) // a new moment the link may go bad
	}
	b := appendKeepAlive(e.tx[e.bodyOff:e.bodyOff], keepAlive{ID: id, WantReply: wantReply, Payload: msg})
	sent := e.transmit(l, ChannelControl, 0, len(b))
	if k.waiting && k.first == id {
		k.since = max(k.since, sent) // a sample runs from the write (Clock)
	}
	return nil
}

// receiveKeepAlives handles the KeepAlive and KeepAliveReply records of a
// control datagram (validated already). Several KeepAlives in one datagram
// get one reply, for the last that wanted one, so a reply is never larger
// than the datagram that asked for it.
func (e *Endpoint) receiveKeepAlives(now time.Duration, l *link, b []byte) {
	reply, replyID := false, uint32(0)
	for len(b) > 0 && !l.closed {
		typ, p, rest, _ := NextRecord(b)
		b = rest
		switch typ {
		case recKeepAlive:
			k, _ := decodeKeepAlive(p)
			if k.WantReply {
				reply, replyID = true, k.ID
			}
			e.deliver(now, l.peer, ChannelControl, k.Payload)
		case recKeepAliveReply:
			r, _ := decodeKeepAliveReply(p)
			e.onKeepAliveReply(now, l, r.ID)
		}
	}
	if reply && !l.closed {
		b := appendKeepAliveReply(e.tx[e.bodyOff:e.bodyOff], keepAliveReply{ID: replyID})
		e.transmit(l, ChannelControl, 0, len(b))
	}
}

// onKeepAliveReply: the peer answered a keep-alive still unanswered, so it
// heard everything up to it; the link is no longer silent on that account,
// and the reply is evidence that may end a bad connection (T11). A reply
// to an id not waiting (late, duplicated, or never sent) changes nothing.
func (e *Endpoint) onKeepAliveReply(now time.Duration, l *link, id uint32) {
	k := &l.alive
	if !k.waiting || id-k.first >= k.next-k.first {
		return
	}
	k.waiting = false
	if e.cfg.KeepAliveSamples && id == k.first && k.epoch == e.epoch {
		l.est.Sample(now-k.since, true)
	}
	e.touch(l)
	e.checkBad(now, l)
}

// silentSince is when the peer last left something unanswered: the first
// send of the oldest reliable packet in flight or the oldest unanswered
// keep-alive, whichever is older.
func (l *link) silentSince() (time.Duration, bool) {
	var t time.Duration
	ok := false
	if q := &l.rel; q.oldest != q.next {
		t, ok = q.at(q.oldest).firstSent, true
	}
	if k := &l.alive; k.waiting && (!ok || k.since < t) {
		t, ok = k.since, true
	}
	return t, ok
}

// validKeepAlive decodes a KeepAlive or KeepAliveReply record for
// validateBody.
func validKeepAlive(typ uint8, p []byte) error {
	var err error
	if typ == recKeepAlive {
		_, err = decodeKeepAlive(p)
	} else {
		_, err = decodeKeepAliveReply(p)
	}
	return err
}
