package netcore

// The receive path of a datagram, in order:
//
//  1. Receive checks size, header, session token and sender address (a
//     handshake datagram goes to handshake.go instead);
//  2. open authenticates a sealed datagram; validateBody checks its records;
//  3. per channel: control (acks — onAck takes the round-trip sample, T2–T4,
//     and frees window slots, so pump sends the backlog — and the peer's
//     LinkReports, L4), receiveReliable, receiveUnreliable, receiveGlobal —
//     each judging the loss window (L2), acking at once (T1) and
//     reassembling fragments;
//  4. deliver hands whole messages up (deliverReliable keeps their order,
//     T8).

import (
	"net/netip"
	"time"
)

// Receive takes one datagram that arrived from addr. In order: check the
// header, token and sender; authenticate; judge the loss window (L2); ack
// at once (T1); take a round-trip sample from any ack (T2–T4); deliver.
func (e *Endpoint) Receive(now time.Duration, from netip.AddrPort, datagram []byte) {
	if e.tracing != nil {
		e.takeAnswers(now)
	}
	if len(datagram) > MaxDatagram {
		e.rejected.Oversize++
		return
	}
	h, err := DecodeHeader(datagram)
	if err != nil {
		e.rejected.Malformed++
		return
	}
	if h.Token == 0 && h.Channel == ChannelControl && e.cfg.Handshake != nil {
		e.receiveHandshake(now, from, h, datagram)
		return
	}
	if h.Token != e.cfg.Session || h.Token == 0 {
		e.rejected.Token++
		return
	}
	l := e.links[h.Sender]
	if l == nil {
		e.rejected.Sender++
		return
	}
	if l.addr != from {
		// Never delivered: a link moves only after its new address
		// answers a check (the session's path verification). An authentic
		// datagram from elsewhere is only news that the peer's address may
		// have changed (a NAT rebinding).
		e.rejected.Sender++
		if e.cfg.NewSource != nil && e.authentic(l, h, datagram) {
			e.cfg.NewSource(now, h.Sender, from, len(datagram))
		}
		return
	}
	if p, ok := isProbe(h, datagram); ok {
		e.receiveProbe(now, l, p) // unsealed in any session (trace_link.go)
		return
	}
	body, ok := e.open(l, h, datagram)
	if !ok {
		return
	}
	if err := validateBody(h.Channel, body); err != nil {
		if err == ErrOversize {
			e.rejected.Oversize++
		} else {
			e.rejected.Malformed++
		}
		return
	}
	if h.Channel == ChannelControl {
		e.control(now, l, body)
		e.receiveKeepAlives(now, l, body)
		return
	}
	e.holding = true
	switch h.Channel {
	case ChannelReliable:
		e.receiveReliable(now, l, h, body)
	case ChannelUnreliable:
		e.receiveUnreliable(now, l, h, body)
	case ChannelGlobal:
		e.receiveGlobal(now, l, h, body)
	}
	e.holding = false
	e.sendOwedAck()
}

// open returns the datagram's plaintext body, authenticating it when the
// endpoint seals. It counts what it rejects; a sealed datagram that passes
// marks its counter as seen and locks the link onto its sender's instance.
func (e *Endpoint) open(l *link, h Header, d []byte) ([]byte, bool) {
	body, inst, ctr, bad := e.unseal(l, h, d)
	if bad != nil {
		*bad++
		return nil, false
	}
	if o := l.open; o != nil {
		o.window.mark(ctr)
		o.instance, o.locked = inst, true // the first instance that authenticated
	}
	return body, true
}

// authentic reports whether d would pass open and validateBody on link l,
// leaving no trace: the datagram is not taken, so its counter stays fresh
// for the same datagram from the link's own address.
func (e *Endpoint) authentic(l *link, h Header, d []byte) bool {
	body, _, _, bad := e.unseal(l, h, d)
	return bad == nil && validateBody(h.Channel, body) == nil
}

// unseal is open's checks without their effects: the plaintext body and,
// for a sealed datagram, the instance and counter it passed with, or the
// count a refusal goes under.
func (e *Endpoint) unseal(l *link, h Header, d []byte) (body []byte, inst, ctr uint64, bad *uint64) {
	sealed := h.Flags&flagSealed != 0
	if e.sealer == nil {
		if sealed {
			return nil, 0, 0, &e.rejected.Auth
		}
		return d[HeaderLen:], 0, 0, nil
	}
	if !sealed {
		return nil, 0, 0, &e.rejected.Auth
	}
	inst, ctr, _, err := sealedParts(d)
	if err != nil {
		return nil, 0, 0, &e.rejected.Malformed
	}
	o := l.open
	if o.locked && o.instance != inst {
		// Another instance of the peer (a restart) or a forgery: only a
		// new link (after a new handshake) may speak with a new key.
		return nil, 0, 0, &e.rejected.Replay
	}
	if !o.window.fresh(ctr) {
		return nil, 0, 0, &e.rejected.Replay
	}
	if body, err = openWith(o.aead, &o.nonce, e.rx[:], d, ctr); err != nil {
		return nil, 0, 0, &e.rejected.Auth
	}
	return body, inst, ctr, nil
}

// validateBody decodes every known record so that a malformed datagram is
// rejected whole, before it touches any state. Unknown record types are
// skipped without comment: a newer peer may send more.
//
// A session datagram with no records at all is malformed, and so is a
// known record on a channel it does not belong to (Data and Fragment only
// on numbered channels, Ack and LinkReport only on control, handshake
// records never in a session datagram). Either would be accepted as a real
// datagram that carries nothing: on the reliable channel it would take the
// place of the packet whose number it bears — acked, marked received, and
// the real one, when it comes, dropped as a duplicate.
func validateBody(ch Channel, b []byte) error {
	if len(b) == 0 {
		return errShort
	}
	numbered := ch != ChannelControl
	message, carried := false, false
	for len(b) > 0 {
		typ, p, rest, err := NextRecord(b)
		if err != nil {
			return err
		}
		switch typ {
		case RecData, recFragment, recCarriedAck:
			if !numbered {
				return errChannel
			}
		case RecAck, recLinkReport, recKeepAlive, recKeepAliveReply:
			if numbered {
				return errChannel
			}
		case recHello, recChallenge, recResponse, recWelcome, recRefuse:
			return errChannel
		}
		switch typ {
		case RecData:
			message = true
			_, err = DecodeData(p)
		case recFragment:
			message = true
			_, err = decodeFragment(p)
		case recCarriedAck:
			// Only beside a message (checked below): alone it would be
			// a datagram that carries nothing.
			carried = true
			_, err = decodeAck(p)
		case RecAck:
			_, err = decodeAck(p)
		case recLinkReport:
			_, err = decodeLinkReport(p)
		case recKeepAlive, recKeepAliveReply:
			err = validKeepAlive(typ, p)
		}
		if err != nil {
			return err
		}
		b = rest
	}
	if carried && !message {
		return errChannel
	}
	return nil
}

// control handles an unnumbered datagram: acks and link reports. It also
// takes the CarriedAcks of a numbered datagram (validateBody lets nothing
// else of control's through there).
func (e *Endpoint) control(now time.Duration, l *link, b []byte) {
	acked := false
	for len(b) > 0 {
		typ, p, rest, _ := NextRecord(b)
		b = rest
		switch typ {
		case RecAck, recCarriedAck:
			a, _ := decodeAck(p)
			e.onAck(now, l, a)
			acked = true
		case recLinkReport:
			r, _ := decodeLinkReport(p)
			if r.Expected > l.numberedSent()+reportMargin {
				e.rejected.Implausible++ // more than we ever sent: no conforming peer reports that
				continue
			}
			l.peerLoss.observe(r.Expected, r.Missing)
		}
	}
	if acked {
		e.pump(now, l, &l.rel, ChannelReliable)
		e.pump(now, l, &l.glob, ChannelGlobal)
		e.checkBad(now, l)
	}
}

// reportMargin is how far a peer's reported expected may exceed the
// numbered datagrams we sent it. A peer's windows judge only numbers it
// received, so a real report never exceeds what we sent — unless forged
// datagrams moved one of its windows ahead, at most MaxJump at once per
// numbered channel. A report past the margin is a forgery: a high-water
// mark (L4) taken from it would stand for the rest of the link.
const reportMargin = (numChannels - 1) * MaxJump

// numberedSent is how many datagrams we have sent on the link's numbered
// channels, resends included (L2: each takes a number).
func (l *link) numberedSent() uint64 {
	return uint64(l.txSeq[ChannelReliable]) + uint64(l.txSeq[ChannelUnreliable]) + uint64(l.txSeq[ChannelGlobal])
}

// onAck frees acked datagrams. An explicit ack of a reliable datagram is a
// round-trip sample measured from its first send: clean only if it was
// sent once (T2); on an unmeasured link any first ack sets the provisional
// estimate (T4). Samples from before a ResetMeasurement are ignored (T5).
// The global channel is never measured (T14).
func (e *Endpoint) onAck(now time.Duration, l *link, a ack) {
	e.touch(l) // retry timers go, the estimate moves
	q := &l.rel
	if a.Channel == ChannelGlobal {
		q = &l.glob
	}
	for i := range a.Len() {
		p := q.lookup(a.Packet(i))
		if p == nil {
			continue
		}
		if a.Channel == ChannelReliable && p.epoch == e.epoch {
			l.est.Sample(now-p.firstSent, p.retries == 0)
			l.acked.add(now, now-p.firstSent)
		}
		p.inUse = false
	}
	if a.Channel == ChannelReliable {
		for s := q.oldest; s != q.next && int32(a.Cumulative-s) > 0; s++ {
			if p := q.at(s); p.inUse && p.packet == s {
				p.inUse = false
			}
		}
	}
	q.advance()
}

// ack acks one arrived packet (T1): at once, or, while Receive holds
// acks, as soon as the owner sends the peer something or Receive returns,
// whichever is first.
func (e *Endpoint) ack(l *link, ch Channel, cumulative, packet uint32) {
	if e.holding {
		e.sendOwedAck() // only ever one per datagram; never two owed
		e.owed = owedAck{l: l, ch: ch, cumulative: cumulative, packet: packet}
		return
	}
	b := appendAck1(e.tx[e.bodyOff:e.bodyOff], ch, cumulative, packet)
	e.transmit(l, ChannelControl, 0, len(b))
}

// sendOwedAck sends the owed ack, if any, in a datagram of its own.
func (e *Endpoint) sendOwedAck() {
	o := e.owed
	if o.l == nil {
		return
	}
	e.owed = owedAck{}
	b := appendAck1(e.tx[e.bodyOff:e.bodyOff], o.ch, o.cumulative, o.packet)
	e.transmit(o.l, ChannelControl, 0, len(b))
}

// ackRecordLen is the size of an Ack record for one packet.
const ackRecordLen = recordHeaderLen + ackFixedLen + 4

// coalesceAck appends the ack owed to l, if any and if it fits, to the
// body of n bytes in e.tx, and returns the body's new length.
func (e *Endpoint) coalesceAck(l *link, ch Channel, n int) int {
	if e.owed.l != l || n+ackRecordLen > maxBody {
		return n
	}
	o := e.owed
	e.owed = owedAck{}
	typ := recCarriedAck
	if ch == ChannelControl {
		typ = RecAck // a keep-alive sent from DeliverFunc: a plain Ack fits there
	}
	b := appendAckRecord(e.tx[e.bodyOff+n:e.bodyOff+n], typ, o.ch, o.cumulative, o.packet)
	return n + len(b)
}

func (e *Endpoint) receiveReliable(now time.Duration, l *link, h Header, body []byte) {
	in := &l.relIn
	pk := h.Packet
	off := pk - in.next
	if int32(off) >= sendWindow || int32(off) < -sendWindow {
		// Beyond what a conforming sender may have in flight: it holds at
		// most sendWindow packets from its oldest unacked one, which is
		// never older than sendWindow below our next, since everything
		// below our next arrived. Drop it unjudged and unacked; a sender
		// that really has it will resend it.
		e.rejected.Window++
		return
	}
	w := &l.windows[ChannelReliable]
	if w.observe(h.Seq, &l.loss) == seqHeld {
		if int32(off) < 0 || in.have[pk%sendWindow] || e.sealer == nil {
			// A far datagram number on a packet we already have is no
			// evidence the peer's numbering moved: hold it. (The peer
			// learns of the packet from the next cumulative ack.)
			// Without a key, neither is a new packet number: one forged
			// datagram would move the window as far as it says, up to
			// 2^31 judged missing; the run of resyncAfter
			// resends, as on the other channels, is the evidence then.
			e.rejected.Window++
			return
		}
		// A packet we are waiting for, inside the receive window, that
		// authenticated: the peer really sent it, so its datagram number
		// is believed at once — a long outage ends without losing a
		// reliable datagram.
		w.believe(&l.loss)
	}
	e.control(now, l, body) // acks coalesced onto it, before its message goes up
	if int32(off) < 0 {
		// Already delivered; the ack must have been lost. Ack again.
		e.ack(l, ChannelReliable, in.next, pk)
		return
	}
	if off > 0 {
		i := pk % sendWindow
		if !in.have[i] {
			if in.slots == nil {
				in.slots = make([][]byte, sendWindow)
			}
			var b []byte
			b, in.spare = takeSpare(in.spare)
			in.have[i] = true
			in.slots[i] = append(b, body...)
		}
		e.ack(l, ChannelReliable, in.next, pk)
		return
	}
	// In order: everything up to the next gap can be delivered.
	cum := in.next + 1
	for in.have[cum%sendWindow] && cum-in.next < sendWindow {
		cum++
	}
	e.ack(l, ChannelReliable, cum, pk)
	in.next++
	e.deliverReliable(now, l, body)
	for !l.closed && in.have[in.next%sendWindow] {
		i := in.next % sendWindow
		in.have[i] = false
		in.next++
		e.deliverReliable(now, l, in.slots[i])
		in.spare = keepSpare(in.spare, in.slots[i])
		in.slots[i] = nil
	}
}

// deliverReliable hands over the records of one in-order datagram.
func (e *Endpoint) deliverReliable(now time.Duration, l *link, b []byte) {
	in := &l.relIn
	for len(b) > 0 && !l.closed {
		typ, p, rest, _ := NextRecord(b)
		b = rest
		switch typ {
		case RecData:
			d, _ := DecodeData(p)
			in.asmNext = 0
			e.deliver(now, l.peer, ChannelReliable, d.Payload)
		case recFragment:
			f, _ := decodeFragment(p)
			switch {
			case f.Index == 0:
				in.asmID, in.asmCount, in.asm = f.MsgID, f.Count, in.asm[:0]
			case in.asmNext != f.Index || in.asmID != f.MsgID || in.asmCount != f.Count:
				// Out of step: only a broken sender does this.
				in.asmNext = 0
				e.rejected.Malformed++
				continue
			}
			in.asm = append(in.asm, f.Payload...)
			in.asmNext = f.Index + 1
			if in.asmNext == f.Count {
				in.asmNext = 0
				msg := in.asm
				if cap(in.asm) > keepBuffer {
					in.asm = nil
				}
				e.deliver(now, l.peer, ChannelReliable, msg)
			}
		}
	}
}

func (e *Endpoint) receiveUnreliable(now time.Duration, l *link, h Header, b []byte) {
	switch l.windows[ChannelUnreliable].observe(h.Seq, &l.loss) {
	case seqNew:
	case seqHeld:
		e.rejected.Window++
		return
	default:
		e.control(now, l, b) // a late copy's acks still free packets
		return
	}
	e.control(now, l, b)
	u := &l.unrelIn
	for len(b) > 0 && !l.closed {
		typ, p, rest, _ := NextRecord(b)
		b = rest
		var msg []byte
		var id uint32
		switch typ {
		case RecData:
			d, _ := DecodeData(p)
			msg, id = d.Payload, d.MsgID
		case recFragment:
			f, _ := decodeFragment(p)
			if !u.newer(f.MsgID) {
				continue
			}
			e.touch(l) // a reassembly timeout starts or ends
			m, ok := l.unrelAsm.add(now, f, &e.budget)
			if !ok {
				continue
			}
			msg, id = m, f.MsgID
		default:
			continue
		}
		if !u.newer(id) {
			continue // older than what was delivered: worthless now (Q1)
		}
		u.delivered, u.last = true, id
		e.deliver(now, l.peer, ChannelUnreliable, msg)
	}
}

func (e *Endpoint) receiveGlobal(now time.Duration, l *link, h Header, b []byte) {
	if l.windows[ChannelGlobal].observe(h.Seq, &l.loss) == seqHeld {
		e.rejected.Window++ // unacked: a sender that really sent it will again
		return
	}
	e.control(now, l, b)
	fresh := l.globIn.add(h.Packet)
	e.ack(l, ChannelGlobal, 0, h.Packet)
	if !fresh {
		return
	}
	for len(b) > 0 && !l.closed {
		typ, p, rest, _ := NextRecord(b)
		b = rest
		switch typ {
		case RecData:
			d, _ := DecodeData(p)
			e.deliver(now, l.peer, ChannelGlobal, d.Payload)
		case recFragment:
			f, _ := decodeFragment(p)
			e.touch(l) // a reassembly timeout starts or ends
			if m, ok := l.globAsm.add(now, f, &e.budget); ok {
				e.deliver(now, l.peer, ChannelGlobal, m)
			}
		}
	}
}
