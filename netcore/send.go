package netcore

// The send path of a message, in order:
//
//  1. Send checks the peer and the size and picks the channel;
//  2. unreliable: sendUnreliable cuts it into pieces (appendPiece) and
//     transmits each at once (Q1);
//  3. reliable and global: sendAcked puts each piece in a send-window slot
//     with its first retry time (sendNewPiece), or in the backlog when the
//     window is full (enqueue); pump moves the backlog in as acks free room;
//  4. transmitBody/transmit number the datagram on its channel (L2), seal it
//     when the session has a key, and hand it to the Transport.

import (
	"slices"
	"time"
)

// Send sends one message to peer. Messages longer than MaxDataPayload are
// cut into fragments, each its own numbered datagram (Q5, L1).
//
//   - ChannelReliable: in order, exactly once, acked and resent until acked,
//     never dropped (T8, T11); beyond the send window messages wait.
//   - ChannelUnreliable: sent once; the receiver delivers only messages
//     newer than the last one it delivered (Q1).
//   - ChannelGlobal: acked, resent at a fixed interval, dropped at its
//     timeout; delivered exactly once, in arrival order (T14).
func (e *Endpoint) Send(now time.Duration, peer PeerID, ch Channel, msg []byte) error {
	l := e.links[peer]
	if l == nil {
		return errUnknownPeer
	}
	if len(msg) > maxMessage {
		return errMessageTooLarge
	}
	switch ch {
	case ChannelUnreliable:
		e.sendUnreliable(l, msg)
		return nil
	case ChannelReliable:
		return e.sendAcked(now, l, &l.rel, ch, msg)
	case ChannelGlobal:
		return e.sendAcked(now, l, &l.glob, ch, msg)
	}
	return errSendChannel
}

func (e *Endpoint) sendUnreliable(l *link, msg []byte) {
	id := l.unrelMsg
	l.unrelMsg++
	off := 0
	for done := false; !done; {
		b := e.tx[e.bodyOff:e.bodyOff]
		b, off, done = appendPiece(b, id, msg, off)
		e.transmit(l, ChannelUnreliable, 0, len(b))
	}
}

// appendPiece appends the record carrying msg from off: the whole message
// as Data, or its next Fragment.
func appendPiece(b []byte, id uint32, msg []byte, off int) ([]byte, int, bool) {
	if len(msg) <= MaxDataPayload {
		return AppendData(b, Data{MsgID: id, Payload: msg}), len(msg), true
	}
	end := min(off+fragmentPayload, len(msg))
	count := (len(msg) + fragmentPayload - 1) / fragmentPayload
	b = appendFragment(b, fragment{MsgID: id, Index: uint16(off / fragmentPayload), Count: uint16(count), Payload: msg[off:end]})
	return b, end, end == len(msg)
}

func (e *Endpoint) sendAcked(now time.Duration, l *link, q *outQueue, ch Channel, msg []byte) error {
	if len(q.backlog) > 0 || !q.room() {
		if q.backlogBytes+len(msg) > maxBacklog {
			return errBacklog
		}
		e.enqueue(q, q.nextMsg, msg, 0)
		q.nextMsg++
		return nil
	}
	id := q.nextMsg
	q.nextMsg++
	off := 0
	for done := false; !done; {
		if !q.room() {
			e.enqueue(q, id, msg, off)
			return nil
		}
		off, done = e.sendNewPiece(now, l, q, ch, id, msg, off)
	}
	return nil
}

func (e *Endpoint) enqueue(q *outQueue, id uint32, msg []byte, off int) {
	// The whole message is kept so fragment indexes stay those of the
	// message; off marks what has already gone out.
	q.backlog = append(q.backlog, pendingMsg{msgID: id, data: slices.Clone(msg), off: off})
	q.backlogBytes += len(msg) - off
}

// sendNewPiece puts the next piece of msg in a fresh slot and sends it.
func (e *Endpoint) sendNewPiece(now time.Duration, l *link, q *outQueue, ch Channel, id uint32, msg []byte, off int) (int, bool) {
	e.touch(l) // a new retry timer
	p := q.claim()
	p.msg = id
	var done bool
	p.body, off, done = appendPiece(p.body, id, msg, off)
	p.firstSent, p.epoch = now, e.epoch
	if ch == ChannelReliable {
		p.firstRTO = l.est.RTO()
		l.loss.Sent++
	} else {
		p.firstRTO = e.cfg.GlobalRetry
		l.global.Sent++
	}
	p.wait = p.firstRTO
	p.nextRetry = now + p.wait
	// The round trip runs from the write, not from the call (Clock).
	p.firstSent = max(now, e.transmitBody(l, ch, p.packet, p.body))
	return off, done
}

// pump moves backlogged messages into the send window as room frees up.
func (e *Endpoint) pump(now time.Duration, l *link, q *outQueue, ch Channel) {
	for len(q.backlog) > 0 && q.room() {
		m := &q.backlog[0]
		before := m.off
		off, done := e.sendNewPiece(now, l, q, ch, m.msgID, m.data, m.off)
		m.off = off
		q.backlogBytes -= off - before
		if done {
			q.backlog[0] = pendingMsg{}
			q.backlog = q.backlog[1:]
		}
	}
	if len(q.backlog) == 0 {
		q.backlog = nil
		q.backlogBytes = 0
	}
}

// transmitBody copies body into the datagram buffer and sends it. It
// returns transmit's send time.
func (e *Endpoint) transmitBody(l *link, ch Channel, packet uint32, body []byte) time.Duration {
	n := copy(e.tx[e.bodyOff:], body)
	return e.transmit(l, ch, packet, n)
}

// transmit sends the datagram whose body (n bytes) is already in
// e.tx[e.bodyOff:], with the ack Receive owes the peer if one is owed and
// fits (coalescing, receive.go). Every datagram on a numbered channel,
// resends included, takes the channel's next datagram number (L2). It
// returns the send time read just before the write when the transport has
// a Clock, else 0 (the caller's now stands).
func (e *Endpoint) transmit(l *link, ch Channel, packet uint32, n int) (sent time.Duration) {
	h := Header{Token: e.cfg.Session, Sender: e.cfg.Self, Channel: ch, Packet: packet}
	if ch != ChannelControl {
		h.Seq = l.txSeq[ch]
		l.txSeq[ch]++
	}
	if e.sealer != nil {
		h.Flags = flagSealed
	}
	n = e.coalesceAck(l, ch, n)
	PutHeader(e.tx[:], h)
	d := e.tx[:e.bodyOff+n]
	if e.sealer != nil {
		d = e.sealer.seal(l.seal, d)
	}
	if e.clock != nil {
		sent = e.clock.Now()
	}
	if err := e.tr.Send(l.addr, d); err != nil {
		e.sendErrs++
	}
	return sent
}
