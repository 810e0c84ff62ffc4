package netcore

import (
	"net/netip"
	"time"
)

// Handshake transport. The session logic (who may join, cookies, seats)
// belongs to probe; netcore only carries the records. Handshake datagrams
// are control datagrams with session token 0: a joiner does not know the
// token until Welcome hands it over. They are accepted from any address
// and reach Config.Handshake instead of a link. With a pre-shared key they
// are sealed too, under a key of their own (sealHandshakeInfo), so a
// machine without the key cannot even start a handshake; replays of
// handshake records are the session logic's to refuse (the Nonce and the
// challenge cookie exist for that).
//
// One plain datagram gets through to a keyed endpoint: a Hello alone,
// handed on as a KeylessHello, so that the host can answer a joiner that
// has no key with one plain Refuse (RefuseNeedKey, SendKeylessRefuse)
// instead of silence. Nothing else plain reaches the session.

// HandshakeMsg is one of Hello, Challenge, Response, Welcome or Refuse (or,
// received only, KeylessHello).
type HandshakeMsg interface {
	appendRecord(b []byte) ([]byte, error)
}

func (m Hello) appendRecord(b []byte) ([]byte, error)     { return AppendHello(b, m) }
func (m Challenge) appendRecord(b []byte) ([]byte, error) { return appendChallenge(b, m), nil }
func (m Response) appendRecord(b []byte) ([]byte, error)  { return AppendResponse(b, m) }
func (m Welcome) appendRecord(b []byte) ([]byte, error)   { return appendWelcome(b, m), nil }
func (m Refuse) appendRecord(b []byte) ([]byte, error)    { return AppendRefuse(b, m), nil }

// KeylessHello is a plain Hello that reached an endpoint with a key: a
// joiner without the session's key. The session may answer it with
// SendKeylessRefuse; it is never a step of a handshake.
type KeylessHello Hello

func (m KeylessHello) appendRecord(b []byte) ([]byte, error) { return AppendHello(b, Hello(m)) }

// HandshakeFunc receives one handshake record; sender is the header's
// sender (PeerUnassigned for a joiner).
type HandshakeFunc func(now time.Duration, from netip.AddrPort, sender PeerID, m HandshakeMsg)

// SendHandshake sends one handshake record to addr: sealed under the
// handshake key in a keyed session, plain otherwise.
func (e *Endpoint) SendHandshake(to netip.AddrPort, m HandshakeMsg) error {
	if m == nil {
		return errField
	}
	sealed := e.sealer != nil && e.sealer.hsAEAD != nil
	off := HeaderLen
	if sealed {
		off += sealPrefixLen
	}
	b, err := m.appendRecord(e.tx[off:off])
	if err != nil {
		return err
	}
	h := Header{Sender: e.cfg.Self, Channel: ChannelControl}
	if sealed {
		h.Flags = flagSealed
	}
	PutHeader(e.tx[:], h)
	d := e.tx[:off+len(b)]
	if sealed {
		d = e.sealer.seal(e.sealer.hsAEAD, d)
	}
	if err := e.tr.Send(to, d); err != nil {
		e.sendErrs++
		return err
	}
	return nil
}

// SendKeylessRefuse sends m as a plain handshake datagram even when the
// endpoint has a key: the one answer a joiner without the key can read
// (KeylessHello). A Refuse is smaller than the Hello it answers.
func (e *Endpoint) SendKeylessRefuse(to netip.AddrPort, m Refuse) error {
	b := AppendRefuse(e.tx[HeaderLen:HeaderLen], m)
	PutHeader(e.tx[:], Header{Sender: e.cfg.Self, Channel: ChannelControl})
	if err := e.tr.Send(to, e.tx[:HeaderLen+len(b)]); err != nil {
		e.sendErrs++
		return err
	}
	return nil
}

// keylessHello hands a plain datagram that holds exactly one Hello record
// to Config.Handshake as a KeylessHello, and reports whether it did.
func (e *Endpoint) keylessHello(now time.Duration, from netip.AddrPort, h Header, body []byte) bool {
	typ, p, rest, err := NextRecord(body)
	if err != nil || typ != recHello || len(rest) != 0 {
		return false
	}
	m, err := decodeHello(p)
	if err != nil {
		return false
	}
	e.cfg.Handshake(now, from, h.Sender, KeylessHello(m))
	return true
}

// receiveHandshake opens a handshake datagram and hands its records to
// Config.Handshake.
func (e *Endpoint) receiveHandshake(now time.Duration, from netip.AddrPort, h Header, d []byte) {
	body := d[HeaderLen:]
	sealed := h.Flags&flagSealed != 0
	keyed := e.sealer != nil && e.sealer.hsAEAD != nil
	switch {
	case sealed != keyed:
		e.rejected.Auth++ // never admitted, whatever the session answers
		if !sealed {
			e.keylessHello(now, from, h, body)
		}
		return
	case sealed:
		inst, ctr, _, err := sealedParts(d)
		if err != nil {
			e.rejected.Malformed++
			return
		}
		aead, err := deriveHandshakeAEAD(e.cfg.Key, h.Sender, inst)
		if err != nil {
			e.rejected.Auth++
			return
		}
		var nonce [12]byte
		if body, err = openWith(aead, &nonce, e.rx[:], d, ctr); err != nil {
			e.rejected.Auth++
			return
		}
	}
	// Decode everything first so a malformed datagram is rejected whole;
	// one without records is malformed too.
	if len(body) == 0 {
		e.rejected.Malformed++
		return
	}
	var msgs [4]HandshakeMsg
	n := 0
	for b := body; len(b) > 0; {
		typ, p, rest, err := NextRecord(b)
		if err != nil {
			e.rejected.Malformed++
			return
		}
		b = rest
		var m HandshakeMsg
		switch typ {
		case recHello:
			m, err = decodeHello(p)
		case recChallenge:
			m, err = decodeChallenge(p)
		case recResponse:
			m, err = decodeResponse(p)
		case recWelcome:
			m, err = decodeWelcome(p)
		case recRefuse:
			m, err = decodeRefuse(p)
		default:
			continue // unknown or not a handshake record: skipped
		}
		if err != nil {
			e.rejected.Malformed++
			return
		}
		if n == len(msgs) {
			e.rejected.Oversize++
			return
		}
		msgs[n] = m
		n++
	}
	for _, m := range msgs[:n] {
		e.cfg.Handshake(now, from, h.Sender, m)
	}
}
