package netcore

import (
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"time"
)

// Defaults for Config fields left zero.
const (
	// DefaultRetryInterval and DefaultConnTimeout are the session-fixed
	// values an unmeasured link uses (T9). The seed leaves them to the
	// game; 1 s and 10 s are the values of a typical lockstep session.
	DefaultRetryInterval = time.Second
	DefaultConnTimeout   = 10 * time.Second
	// DefaultPingInterval is how often each end reports its inbound totals
	// for a link (L4: "once per ping interval"; default 1 s).
	DefaultPingInterval = time.Second
	// DefaultGlobalRetry and DefaultGlobalTimeout pace the global channel
	// (T14): a lobby or chat line retried every half second and given up
	// after 10 s keeps the channel moving when a peer has gone.
	DefaultGlobalRetry   = 500 * time.Millisecond
	DefaultGlobalTimeout = 10 * time.Second
	// minReassemblyTimeout is how long a partial unordered message may wait
	// for its other fragments at least; global messages wait as long as
	// their sender may still retry them.
	minReassemblyTimeout = 2 * time.Second
)

// Errors returned by Endpoint methods.
var (
	ErrUnknownPeer     = errors.New("netcore: no link to that peer")
	ErrPeerID          = errors.New("netcore: peer ID is this endpoint or unassigned")
	ErrSendChannel     = errors.New("netcore: messages go on the reliable, unreliable or global channel")
	ErrMessageTooLarge = errors.New("netcore: message larger than MaxMessage")
	ErrBacklog         = errors.New("netcore: send backlog full")
	ErrConfig          = errors.New("netcore: bad config")
	ErrNoSession       = errors.New("netcore: no session yet (token 0 or PeerUnassigned)")
	ErrLinksOpen       = errors.New("netcore: cannot change identity while links are open")
)

// Config sets up an Endpoint.
type Config struct {
	// Self is this machine's ID in the session and Session the session
	// token; datagrams carrying another token are dropped. A joiner that
	// has not been welcomed yet uses PeerUnassigned and 0: it can only
	// exchange handshakes until Rebind.
	Self    PeerID
	Session uint64
	// Key is the optional pre-shared key (Q7). When set, every datagram is
	// sealed with AES-256-GCM and replays are rejected.
	Key []byte
	// RetryInterval and ConnTimeout are the session's fixed values for a
	// link without an estimate (T9); ConnTimeout is held to [2 s, 30 s].
	RetryInterval, ConnTimeout time.Duration
	// PingInterval paces LinkReports (L4): every link's goes out together,
	// once per interval.
	PingInterval time.Duration
	// GlobalRetry is the global channel's fixed retry interval and
	// GlobalTimeout when it drops a datagram (T14).
	GlobalRetry, GlobalTimeout time.Duration
	// Logger is the debug log (T11); nil discards.
	Logger *slog.Logger
	// Rand is the source of the sealing instance; nil uses crypto/rand.
	Rand io.Reader
	// Handshake receives handshake records (control datagrams with token
	// 0) from any address; nil drops them as a wrong token.
	Handshake HandshakeFunc
}

// DeliverFunc receives one whole message. msg is valid only during the
// call. It may call Send, AddLink, RemoveLink and ResetMeasurement on the
// endpoint, but not Receive or Tick.
type DeliverFunc func(now time.Duration, from PeerID, ch Channel, msg []byte)

// RejectCounts counts datagrams dropped before they reached a link.
type RejectCounts struct {
	Token     uint64 // wrong session token
	Sender    uint64 // unknown sender, or a sender at the wrong address
	Malformed uint64 // header or records that do not decode
	Auth      uint64 // sealing missing, unexpected or failing to authenticate
	Replay    uint64 // a counter already seen, too old, or another instance
	Oversize  uint64 // datagram above MaxDatagram, message above MaxMessage
	// Window counts datagrams whose numbers the link's windows do not
	// take: a reliable packet number outside the receive window, or a
	// datagram number more than MaxJump from the newest on its channel,
	// held back until believed (ResyncAfter).
	Window uint64
}

// LinkStats is one link as the UI and the metrics see it.
type LinkStats struct {
	Peer PeerID
	Addr netip.AddrPort
	// State is Bad while a packet is older than the connection timeout
	// (T11), otherwise the estimate's state; Estimate is always the
	// latter.
	State, Estimate   LinkState
	SRTT, RTTVAR      time.Duration // 0 while unmeasured: show "not measured"
	RTO, ConnTimeout  time.Duration // in force (fixed values while unmeasured, T9)
	Loss              Loss
	PeerLoss          PeerLoss // Known false until the peer reports (L3, L4)
	Global            GlobalStats
	InFlight, Backlog int // reliable datagrams in flight, messages waiting
	GlobalInFlight    int
	Bad               bool
}

// Totals is the whole endpoint: every live link plus every link that has
// been removed, so each counter only ever grows (L5).
type Totals struct {
	Loss       Loss
	PeerLoss   PeerLoss // Known once any link has ever reported
	Global     GlobalStats
	SendErrors uint64 // Transport.Send failures (covered by retries)
}

// Endpoint is one machine's end of every private link plus the global
// channel: a sans-I/O state machine. Time comes in as now (time since the
// world started); datagrams come in through Receive and go out through the
// Transport. It is not safe for concurrent use: one goroutine owns it.
type Endpoint struct {
	cfg     Config
	tr      Transport
	deliver DeliverFunc
	log     *slog.Logger

	links map[PeerID]*link
	order []*link // by PeerID, so every walk is deterministic

	epoch   uint32 // measurement epoch (T5)
	sealer  *sealer
	bodyOff int // where a body starts in tx: after the header and seal prefix
	tx      [MaxDatagram]byte
	rx      [MaxDatagram]byte // opened bodies

	budget   budget
	rejected RejectCounts
	retired  Totals // links removed (L5)
	sendErrs uint64

	// nextReport is when every link next sends its LinkReport (L4): one
	// schedule for the endpoint, so the reports of all links share one
	// wake-up per ping interval instead of each adding its own.
	nextReport time.Duration
	// Each link keeps when Tick next has work on it (link.due); byDue
	// orders the links by it, earliest first (a heap), so NextDeadline
	// reads the answer off the top. stale lists the links whose timers
	// changed since NextDeadline last looked.
	byDue dueHeap
	stale []*link
}

// NewEndpoint builds an endpoint. deliver gets every message that arrives.
func NewEndpoint(cfg Config, tr Transport, deliver DeliverFunc) (*Endpoint, error) {
	if tr == nil || deliver == nil {
		return nil, ErrConfig
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	if cfg.ConnTimeout <= 0 {
		cfg.ConnTimeout = DefaultConnTimeout
	}
	cfg.ConnTimeout = clamp(cfg.ConnTimeout, MinConnTimeout, MaxConnTimeout)
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.GlobalRetry <= 0 {
		cfg.GlobalRetry = DefaultGlobalRetry
	}
	if cfg.GlobalTimeout <= 0 {
		cfg.GlobalTimeout = DefaultGlobalTimeout
	}
	e := &Endpoint{
		cfg:     cfg,
		tr:      tr,
		deliver: deliver,
		log:     cfg.Logger,
		links:   make(map[PeerID]*link),
		bodyOff: HeaderLen,
		budget:  budget{limit: ReassemblyBudget},
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Key) > 0 {
		e.cfg.Key = slices.Clone(cfg.Key)
		r := cfg.Rand
		if r == nil {
			r = rand.Reader
		}
		var inst [8]byte
		if _, err := io.ReadFull(r, inst[:]); err != nil {
			return nil, err
		}
		e.sealer = &sealer{instance: le.Uint64(inst[:])}
		if err := e.rekey(); err != nil {
			return nil, err
		}
		e.bodyOff = HeaderLen + sealPrefixLen
	}
	return e, nil
}

// rekey derives this endpoint's sealing keys for its current identity.
// The counters carry on: a key never sees a nonce twice either way.
func (e *Endpoint) rekey() error {
	if e.sealer == nil {
		return nil
	}
	var err error
	if e.sealer.aead, err = deriveAEAD(e.cfg.Key, sealInfo, e.cfg.Session, e.cfg.Self, e.sealer.instance); err != nil {
		return err
	}
	e.sealer.hsAEAD, err = deriveAEAD(e.cfg.Key, sealHandshakeInfo, 0, e.cfg.Self, e.sealer.instance)
	return err
}

// Rebind gives the endpoint its place in a session once a Welcome arrived:
// its PeerID and the session token. It fails while links are open, since
// they were made under the old identity.
func (e *Endpoint) Rebind(self PeerID, session uint64) error {
	if len(e.order) > 0 {
		return ErrLinksOpen
	}
	old := e.cfg
	e.cfg.Self, e.cfg.Session = self, session
	if err := e.rekey(); err != nil {
		e.cfg = old
		_ = e.rekey()
		return err
	}
	return nil
}

// Self is this endpoint's PeerID.
func (e *Endpoint) Self() PeerID { return e.cfg.Self }

// AddLink opens a private link to peer at addr (T1). Adding a peer that
// already has a link only moves it to the new address.
func (e *Endpoint) AddLink(now time.Duration, peer PeerID, addr netip.AddrPort) error {
	if e.cfg.Session == 0 || e.cfg.Self == PeerUnassigned {
		return ErrNoSession
	}
	if peer == e.cfg.Self || peer == PeerUnassigned {
		return ErrPeerID
	}
	if l := e.links[peer]; l != nil {
		l.addr = addr
		return nil
	}
	if len(e.order) == 0 {
		e.nextReport = now + e.cfg.PingInterval
	}
	l := &link{
		peer: peer,
		addr: addr,
		est:  NewEstimator(e.cfg.RetryInterval, e.cfg.ConnTimeout),
	}
	e.byDue.push(l)
	e.touch(l)
	e.links[peer] = l
	i, _ := slices.BinarySearchFunc(e.order, peer, func(l *link, p PeerID) int { return int(l.peer) - int(p) })
	e.order = slices.Insert(e.order, i, l)
	return nil
}

// RemoveLink ends the link to peer. Its totals fold into the retired
// accumulator so Totals never decreases (L5); its peer report is cleared
// with it (L4): a peer that comes back is a new link that has counted
// nothing.
func (e *Endpoint) RemoveLink(peer PeerID) {
	l := e.links[peer]
	if l == nil {
		return
	}
	e.retired.Loss.add(l.loss)
	e.retired.PeerLoss.add(l.peerLoss)
	e.retired.Global.add(l.global)
	l.unrelAsm.clear(&e.budget)
	l.globAsm.clear(&e.budget)
	l.closed = true
	delete(e.links, peer)
	e.order = slices.DeleteFunc(e.order, func(x *link) bool { return x == l })
	e.byDue.remove(l)
}

// Peers appends the IDs of every live link to dst, in ascending order.
func (e *Endpoint) Peers(dst []PeerID) []PeerID {
	for _, l := range e.order {
		dst = append(dst, l.peer)
	}
	return dst
}

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
		return ErrUnknownPeer
	}
	if len(msg) > MaxMessage {
		return ErrMessageTooLarge
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
	return ErrSendChannel
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
	end := min(off+FragmentPayload, len(msg))
	count := (len(msg) + FragmentPayload - 1) / FragmentPayload
	b = AppendFragment(b, Fragment{MsgID: id, Index: uint16(off / FragmentPayload), Count: uint16(count), Payload: msg[off:end]})
	return b, end, end == len(msg)
}

func (e *Endpoint) sendAcked(now time.Duration, l *link, q *outQueue, ch Channel, msg []byte) error {
	if len(q.backlog) > 0 || !q.room() {
		if q.backlogBytes+len(msg) > MaxBacklog {
			return ErrBacklog
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
	e.transmitBody(l, ch, p.packet, p.body)
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

// transmitBody copies body into the datagram buffer and sends it.
func (e *Endpoint) transmitBody(l *link, ch Channel, packet uint32, body []byte) {
	n := copy(e.tx[e.bodyOff:], body)
	e.transmit(l, ch, packet, n)
}

// transmit sends the datagram whose body (n bytes) is already in
// e.tx[e.bodyOff:]. Every datagram on a numbered channel, resends included,
// takes the channel's next datagram number (L2).
func (e *Endpoint) transmit(l *link, ch Channel, packet uint32, n int) {
	h := Header{Token: e.cfg.Session, Sender: e.cfg.Self, Channel: ch, Packet: packet}
	if ch != ChannelControl {
		h.Seq = l.txSeq[ch]
		l.txSeq[ch]++
	}
	if e.sealer != nil {
		h.Flags = FlagSealed
	}
	PutHeader(e.tx[:], h)
	d := e.tx[:e.bodyOff+n]
	if e.sealer != nil {
		d = e.sealer.seal(e.sealer.aead, d)
	}
	if err := e.tr.Send(l.addr, d); err != nil {
		e.sendErrs++
	}
}

// Receive takes one datagram that arrived from addr. In order: check the
// header, token and sender; authenticate; judge the loss window (L2); ack
// at once (T1); take a round-trip sample from any ack (T2–T4); deliver.
func (e *Endpoint) Receive(now time.Duration, from netip.AddrPort, datagram []byte) {
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
	if l == nil || l.addr != from {
		e.rejected.Sender++
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
	switch h.Channel {
	case ChannelControl:
		e.control(now, l, body)
	case ChannelReliable:
		e.receiveReliable(now, l, h, body)
	case ChannelUnreliable:
		e.receiveUnreliable(now, l, h, body)
	case ChannelGlobal:
		e.receiveGlobal(now, l, h, body)
	}
}

// open returns the datagram's plaintext body, authenticating it when the
// session has a key. It counts what it rejects.
func (e *Endpoint) open(l *link, h Header, d []byte) ([]byte, bool) {
	sealed := h.Flags&FlagSealed != 0
	if e.sealer == nil {
		if sealed {
			e.rejected.Auth++
			return nil, false
		}
		return d[HeaderLen:], true
	}
	if !sealed {
		e.rejected.Auth++
		return nil, false
	}
	inst, ctr, _, err := sealedParts(d)
	if err != nil {
		e.rejected.Malformed++
		return nil, false
	}
	o := l.open
	if o != nil && o.instance != inst {
		// Another instance of the peer (a restart) or a forgery: only a
		// new link (after a new handshake) may speak with a new key.
		e.rejected.Replay++
		return nil, false
	}
	if o == nil {
		aead, err := deriveAEAD(e.cfg.Key, sealInfo, e.cfg.Session, l.peer, inst)
		if err != nil {
			e.rejected.Auth++
			return nil, false
		}
		o = &opener{aead: aead, instance: inst}
	}
	if !o.window.fresh(ctr) {
		e.rejected.Replay++
		return nil, false
	}
	body, err := o.open(e.rx[:], d, ctr)
	if err != nil {
		e.rejected.Auth++
		return nil, false
	}
	o.window.mark(ctr)
	l.open = o // lock onto the first instance that authenticated
	return body, true
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
		return ErrShort
	}
	numbered := ch != ChannelControl
	for len(b) > 0 {
		typ, p, rest, err := NextRecord(b)
		if err != nil {
			return err
		}
		switch typ {
		case RecData:
			if !numbered {
				return ErrChannel
			}
			_, err = DecodeData(p)
		case RecFragment:
			if !numbered {
				return ErrChannel
			}
			_, err = DecodeFragment(p)
		case RecAck:
			if numbered {
				return ErrChannel
			}
			_, err = DecodeAck(p)
		case RecLinkReport:
			if numbered {
				return ErrChannel
			}
			_, err = DecodeLinkReport(p)
		case RecHello, RecChallenge, RecResponse, RecWelcome, RecRefuse:
			return ErrChannel
		}
		if err != nil {
			return err
		}
		b = rest
	}
	return nil
}

// control handles an unnumbered datagram: acks and link reports.
func (e *Endpoint) control(now time.Duration, l *link, b []byte) {
	acked := false
	for len(b) > 0 {
		typ, p, rest, _ := NextRecord(b)
		b = rest
		switch typ {
		case RecAck:
			a, _ := DecodeAck(p)
			e.onAck(now, l, a)
			acked = true
		case RecLinkReport:
			r, _ := DecodeLinkReport(p)
			l.peerLoss.observe(r.Expected, r.Missing)
		}
	}
	if acked {
		e.pump(now, l, &l.rel, ChannelReliable)
		e.pump(now, l, &l.glob, ChannelGlobal)
		e.checkBad(now, l)
	}
}

// onAck frees acked datagrams. An explicit ack of a reliable datagram is a
// round-trip sample measured from its first send: clean only if it was
// sent once (T2); on an unmeasured link any first ack sets the provisional
// estimate (T4). Samples from before a ResetMeasurement are ignored (T5).
// The global channel is never measured (T14).
func (e *Endpoint) onAck(now time.Duration, l *link, a Ack) {
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
		}
		p.inUse = false
	}
	if a.Channel == ChannelReliable {
		for s := q.oldest; s != q.next && int32(a.Cumulative-s) > 0; s++ {
			if p := &q.slots[s%SendWindow]; p.inUse && p.packet == s {
				p.inUse = false
			}
		}
	}
	q.advance()
}

// ack sends an ack for one arrived packet at once (T1).
func (e *Endpoint) ack(l *link, ch Channel, cumulative, packet uint32) {
	b := appendAck1(e.tx[e.bodyOff:e.bodyOff], ch, cumulative, packet)
	e.transmit(l, ChannelControl, 0, len(b))
}

func (e *Endpoint) receiveReliable(now time.Duration, l *link, h Header, body []byte) {
	in := &l.relIn
	pk := h.Packet
	off := pk - in.next
	if int32(off) >= SendWindow || int32(off) < -SendWindow {
		// Beyond what a conforming sender may have in flight: it holds at
		// most SendWindow packets from its oldest unacked one, which is
		// never older than SendWindow below our next, since everything
		// below our next arrived. Drop it unjudged and unacked; a sender
		// that really has it will resend it.
		e.rejected.Window++
		return
	}
	w := &l.windows[ChannelReliable]
	if w.observe(h.Seq, &l.loss) == seqHeld {
		if int32(off) < 0 || in.have[pk%SendWindow] {
			// A far datagram number on a packet we already have is no
			// evidence the peer's numbering moved: hold it. (The peer
			// learns of the packet from the next cumulative ack.)
			e.rejected.Window++
			return
		}
		// A packet we are waiting for, inside the receive window: the
		// peer really sent it, so its datagram number is believed at
		// once — a long outage ends without losing a reliable datagram.
		w.believe(&l.loss)
	}
	if int32(off) < 0 {
		// Already delivered; the ack must have been lost. Ack again.
		e.ack(l, ChannelReliable, in.next, pk)
		return
	}
	if off > 0 {
		i := pk % SendWindow
		if !in.have[i] {
			in.have[i] = true
			in.slots[i] = append(in.slots[i][:0], body...)
		}
		e.ack(l, ChannelReliable, in.next, pk)
		return
	}
	// In order: everything up to the next gap can be delivered.
	cum := in.next + 1
	for in.have[cum%SendWindow] && cum-in.next < SendWindow {
		cum++
	}
	e.ack(l, ChannelReliable, cum, pk)
	in.next++
	e.deliverReliable(now, l, body)
	for !l.closed && in.have[in.next%SendWindow] {
		i := in.next % SendWindow
		in.have[i] = false
		in.next++
		e.deliverReliable(now, l, in.slots[i])
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
		case RecFragment:
			f, _ := DecodeFragment(p)
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
		return
	}
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
		case RecFragment:
			f, _ := DecodeFragment(p)
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
		case RecFragment:
			f, _ := DecodeFragment(p)
			e.touch(l) // a reassembly timeout starts or ends
			if m, ok := l.globAsm.add(now, f, &e.budget); ok {
				e.deliver(now, l.peer, ChannelGlobal, m)
			}
		}
	}
}

// Tick does whatever is due at now: retries (T8, T12, T14), the
// bad-connection log (T11), LinkReports (L4) and reassembly timeouts. A
// link with nothing due is passed over.
func (e *Endpoint) Tick(now time.Duration) {
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
		if !l.stale && (!l.dueOK || l.due > now) {
			continue
		}
		e.touch(l)
		e.retryReliable(now, l)
		e.retryGlobal(now, l)
		e.checkBad(now, l)
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
		p := &q.slots[s%SendWindow]
		if !p.inUse || p.nextRetry > now {
			continue
		}
		p.retries++
		l.loss.Sent++
		l.loss.Retransmitted++
		if p.epoch == e.epoch {
			l.est.Resent(p.firstRTO)
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
		p := &q.slots[s%SendWindow]
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

// checkBad logs once when the oldest unacked reliable datagram outlives the
// connection timeout, and once when the link recovers (T11). Nothing is
// dropped: the retries go on.
func (e *Endpoint) checkBad(now time.Duration, l *link) {
	age, ok := l.oldestAge(now)
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

// oldestAge is how long the oldest reliable datagram in flight has waited
// for its ack.
func (l *link) oldestAge(now time.Duration) (time.Duration, bool) {
	q := &l.rel
	if q.oldest == q.next {
		return 0, false
	}
	return now - q.slots[q.oldest%SendWindow].firstSent, true
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
		l.due, l.dueOK = e.linkDeadline(l)
		e.byDue.fix(l.heapAt)
	}
	clear(e.stale)
	e.stale = e.stale[:0]
	if len(e.order) == 0 {
		return 0, false
	}
	d := e.nextReport
	if top := e.byDue[0]; top.dueOK && top.due < d {
		d = top.due
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
		if p := &q.slots[s%SendWindow]; p.inUse {
			take(p.nextRetry)
		}
	}
	if q.oldest != q.next && !l.bad {
		take(q.slots[q.oldest%SendWindow].firstSent + l.est.ConnTimeout())
	}
	g := &l.glob
	for s := g.oldest; s != g.next; s++ {
		if p := &g.slots[s%SendWindow]; p.inUse {
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

// ResetMeasurement starts every link's round-trip measurement over (T5):
// estimates are forgotten and acks of datagrams sent before now give no
// sample, so loading time never counts. Loss totals are not touched (L5).
func (e *Endpoint) ResetMeasurement() {
	e.epoch++
	for _, l := range e.order {
		l.est.Reset()
		e.touch(l) // the connection timeout changes with the estimate
	}
}

// Stats describes the link to peer.
func (e *Endpoint) Stats(peer PeerID) (LinkStats, bool) {
	l := e.links[peer]
	if l == nil {
		return LinkStats{}, false
	}
	s := LinkStats{
		Peer:           l.peer,
		Addr:           l.addr,
		State:          l.est.State(),
		Estimate:       l.est.State(),
		SRTT:           l.est.SRTT(),
		RTTVAR:         l.est.RTTVAR(),
		RTO:            l.est.RTO(),
		ConnTimeout:    l.est.ConnTimeout(),
		Loss:           l.loss,
		PeerLoss:       l.peerLoss,
		Global:         l.global,
		InFlight:       l.rel.inFlight(),
		Backlog:        len(l.rel.backlog),
		GlobalInFlight: l.glob.inFlight(),
		Bad:            l.bad,
	}
	if l.bad {
		s.State = Bad
	}
	return s, true
}

// Totals sums every link, live and removed (L5).
func (e *Endpoint) Totals() Totals {
	t := e.retired
	for _, l := range e.order {
		t.Loss.add(l.loss)
		t.PeerLoss.add(l.peerLoss)
		t.Global.add(l.global)
	}
	t.SendErrors = e.sendErrs
	return t
}

// Rejected counts datagrams dropped before they reached a link.
func (e *Endpoint) Rejected() RejectCounts { return e.rejected }
