package netcore

// The Endpoint itself: its settings, its state and its links, in the order
// a driver meets them —
//
//  1. Config and its defaults, the errors the methods return;
//  2. NewEndpoint (and rekey/Rebind when a handshake gives it a session);
//  3. AddLink, RemoveLink, Peers: the set of private links (T1).
//
// The paths a datagram takes through it live beside this file, as
// wireguard-go's device/ splits them: send.go (a message out), receive.go
// (a datagram in), timers.go (what Tick and NextDeadline do) and stats.go
// (what the UI, the metrics and the reports read).

import (
	"crypto/ecdh"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/lagscope/lagscope/internal/tokenbucket"
)

// Defaults for Config fields left zero.
const (
	// defaultRetryInterval and defaultConnTimeout are the session-fixed
	// values an unmeasured link uses (T9). The seed leaves them to the
	// game; 1 s and 10 s are the values of a typical lockstep session.
	defaultRetryInterval = time.Second
	defaultConnTimeout   = 10 * time.Second
	// defaultPingInterval is how often each end reports its inbound totals
	// for a link (L4: "once per ping interval"; default 1 s).
	defaultPingInterval = time.Second
	// defaultGlobalRetry and defaultGlobalTimeout pace the global channel
	// (T14): a lobby or chat line retried every half second and given up
	// after 10 s keeps the channel moving when a peer has gone.
	defaultGlobalRetry   = 500 * time.Millisecond
	defaultGlobalTimeout = 10 * time.Second
	// minReassemblyTimeout is how long a partial unordered message may wait
	// for its other fragments at least; global messages wait as long as
	// their sender may still retry them.
	minReassemblyTimeout = 2 * time.Second
)

// Errors returned by Endpoint methods.
var (
	errUnknownPeer     = errors.New("netcore: no link to that peer")
	errPeerID          = errors.New("netcore: peer ID is this endpoint or unassigned")
	errSendChannel     = errors.New("netcore: messages go on the reliable, unreliable or global channel")
	errMessageTooLarge = errors.New("netcore: message larger than MaxMessage")
	errBacklog         = errors.New("netcore: send backlog full")
	errConfig          = errors.New("netcore: bad config")
	errNoSession       = errors.New("netcore: no session yet (token 0 or PeerUnassigned)")
	errLinksOpen       = errors.New("netcore: cannot change identity while links are open")
)

// Config sets up an Endpoint.
type Config struct {
	// Self is this machine's ID in the session and Session the session
	// token; datagrams carrying another token are dropped. A joiner that
	// has not been welcomed yet uses PeerUnassigned and 0: it can only
	// exchange handshakes until Rebind.
	Self    PeerID
	Session uint64
	// Seal seals every session datagram with AES-256-GCM under keys of
	// its link's pair (seal.go) and rejects replays: the endpoint draws an
	// X25519 identity, and AddLink takes each peer's public key.
	Seal bool
	// Key is the optional pre-shared key (Q7): it implies Seal, is mixed
	// into every link's keys, and seals the handshake too.
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
	// Rand is the source of the sealing instance and identity; nil uses
	// crypto/rand.
	Rand io.Reader
	// Handshake receives handshake records (control datagrams with token
	// 0) from any address; nil drops them as a wrong token.
	Handshake HandshakeFunc
	// KeepAliveSamples makes a reply to a keep-alive a round-trip sample
	// (keepalive.go). An observer sends no game traffic, so without it its
	// own links would never be measured; a player's links are measured by
	// its frame packets alone (T2, S8).
	KeepAliveSamples bool
	// NewSource hears of a datagram that carries the session's token and
	// a linked peer's ID, authenticates (with a key) and decodes, but
	// came from another address than the link's. The datagram itself is
	// dropped and counted as Sender; n is its size. nil: dropped alone.
	// It may send on the transport, but not call Receive or Tick.
	NewSource func(now time.Duration, peer PeerID, from netip.AddrPort, n int)
}

// DeliverFunc receives one whole message: ch is the channel it came on,
// ChannelControl for a keep-alive's payload (SendUnnumbered). msg is valid
// only during the call. It may call Send, AddLink, RemoveLink and ResetMeasurement on the
// endpoint, but not Receive or Tick.
type DeliverFunc func(now time.Duration, from PeerID, ch Channel, msg []byte)

// Endpoint is one machine's end of every private link plus the global
// channel: a sans-I/O state machine. Time comes in as now (time since the
// world started); datagrams come in through Receive and go out through the
// Transport. It is not safe for concurrent use: one goroutine owns it.
type Endpoint struct {
	cfg     Config
	tr      Transport
	clock   Clock // tr's clock, if it has one: send times at the write
	deliver DeliverFunc
	log     *slog.Logger

	links map[PeerID]*link
	order []*link // by PeerID, so every walk is deterministic

	epoch   uint32 // measurement epoch (T5)
	sealer  *sealer
	ident   *ecdh.PrivateKey // this machine's X25519 identity when sealing
	bodyOff int              // where a body starts in tx: after the header and seal prefix
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

	// While Receive handles a numbered datagram, the ack it owes (T1)
	// waits in owed instead of leaving alone: the first datagram the
	// owner sends that peer before Receive returns — an echo, a reply
	// sent from DeliverFunc — carries it, and Receive sends whatever is
	// still owed as it returns. The ack is never held past the wake-up
	// that produced it (docs/protocol.md, "Coalescing").
	holding bool
	owed    owedAck

	// hops is tr as a HopTransport, nil when it cannot trace; tracing is
	// the hop tracer (trace_link.go), made by the first SetTraced;
	// unheard takes the ICMP answers no trace waits for.
	hops    HopTransport
	tracing *tracing
	unheard []HopAnswer
}

// owedAck is one ack Receive has not sent yet.
type owedAck struct {
	l                  *link
	ch                 Channel
	cumulative, packet uint32
}

// NewEndpoint builds an endpoint. deliver gets every message that arrives.
func NewEndpoint(cfg Config, tr Transport, deliver DeliverFunc) (*Endpoint, error) {
	if tr == nil || deliver == nil {
		return nil, errConfig
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = defaultRetryInterval
	}
	if cfg.ConnTimeout <= 0 {
		cfg.ConnTimeout = defaultConnTimeout
	}
	cfg.ConnTimeout = clamp(cfg.ConnTimeout, minConnTimeout, maxConnTimeout)
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = defaultPingInterval
	}
	if cfg.GlobalRetry <= 0 {
		cfg.GlobalRetry = defaultGlobalRetry
	}
	if cfg.GlobalTimeout <= 0 {
		cfg.GlobalTimeout = defaultGlobalTimeout
	}
	e := &Endpoint{
		cfg:     cfg,
		tr:      tr,
		deliver: deliver,
		log:     cfg.Logger,
		links:   make(map[PeerID]*link),
		bodyOff: HeaderLen,
		budget:  budget{limit: reassemblyBudget},
	}
	e.clock, _ = tr.(Clock)
	e.hops, _ = tr.(HopTransport)
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Key) > 0 || cfg.Seal {
		e.cfg.Key = slices.Clone(cfg.Key)
		e.cfg.Seal = true
		r := cfg.Rand
		if r == nil {
			r = rand.Reader
		}
		var inst [8]byte
		var id [32]byte
		if _, err := io.ReadFull(r, inst[:]); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(r, id[:]); err != nil {
			return nil, err
		}
		ident, err := ecdh.X25519().NewPrivateKey(id[:])
		if err != nil {
			return nil, err
		}
		e.ident = ident
		e.sealer = &sealer{instance: le.Uint64(inst[:])}
		if err := e.rekey(); err != nil {
			return nil, err
		}
		e.bodyOff = HeaderLen + sealPrefixLen
	}
	return e, nil
}

// rekey derives this endpoint's handshake key for its current identity
// (keyed sessions only). The counter carries on: a key never sees a nonce
// twice either way.
func (e *Endpoint) rekey() error {
	if e.sealer == nil || len(e.cfg.Key) == 0 {
		return nil
	}
	var err error
	e.sealer.hsAEAD, err = deriveHandshakeAEAD(e.cfg.Key, e.cfg.Self, e.sealer.instance)
	return err
}

// PublicKey is this endpoint's X25519 public key, which the others' links
// to it need; the zero key when it does not seal.
func (e *Endpoint) PublicKey() PublicKey {
	var k PublicKey
	if e.ident != nil {
		copy(k[:], e.ident.PublicKey().Bytes())
	}
	return k
}

// Sealed reports whether this endpoint seals its session datagrams.
func (e *Endpoint) Sealed() bool { return e.sealer != nil }

// Rebind gives the endpoint its place in a session once a Welcome arrived:
// its PeerID and the session token. It fails while links are open, since
// they were made under the old identity.
func (e *Endpoint) Rebind(self PeerID, session uint64) error {
	if len(e.order) > 0 {
		return errLinksOpen
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

// AddLink opens a private link to peer at addr (T1). A sealing endpoint
// derives the link's keys from key, the peer's public key; one that does
// not seal ignores it. Adding a peer that already has a link only moves it
// to the new address, and only with the key it was opened with.
func (e *Endpoint) AddLink(now time.Duration, peer PeerID, addr netip.AddrPort, key PublicKey) error {
	if e.cfg.Session == 0 || e.cfg.Self == PeerUnassigned {
		return errNoSession
	}
	if peer == e.cfg.Self || peer == PeerUnassigned {
		return errPeerID
	}
	if l := e.links[peer]; l != nil {
		if e.sealer != nil && l.pub != key {
			return errPeerKey
		}
		return e.MoveLink(peer, addr)
	}
	l := &link{
		peer:         peer,
		addr:         addr,
		est:          NewEstimator(e.cfg.RetryInterval, e.cfg.ConnTimeout),
		probeReplies: tokenbucket.Bucket{Rate: probeReplyRate, Burst: probeReplyBurst},
	}
	if e.sealer != nil {
		ps, err := newPairSecret(e.ident, e.cfg.Self, peer, key, e.cfg.Key, e.cfg.Session)
		if err != nil {
			return err
		}
		send, recv, err := ps.aeads()
		if err != nil {
			return err
		}
		l.pub, l.secret, l.seal, l.open = key, ps, send, &opener{aead: recv}
	}
	if len(e.order) == 0 {
		e.nextReport = now + e.cfg.PingInterval
	}
	e.byDue.push(l)
	e.touch(l)
	e.links[peer] = l
	i, _ := slices.BinarySearchFunc(e.order, peer, func(l *link, p PeerID) int { return int(l.peer) - int(p) })
	e.order = slices.Insert(e.order, i, l)
	return nil
}

// MoveLink moves the link to peer to addr: the session calls it once addr
// answered a check of this machine's (a link follows only a verified
// path).
func (e *Endpoint) MoveLink(peer PeerID, addr netip.AddrPort) error {
	l := e.links[peer]
	if l == nil {
		return errUnknownPeer
	}
	l.addr = addr
	if e.tracing != nil {
		if _, traced := e.tracing.traced[peer]; traced {
			e.SetTraced(peer, true) // the path to the new address
		}
	}
	return nil
}

// LinkKey derives a 32-byte key of the link to peer for a purpose of the
// layer above (the session's path checks): one per direction, from the
// pair's secret, so only the two ends of the link hold it. fromSelf picks
// the direction this machine sends in. ok is false without a link or
// without sealing.
func (e *Endpoint) LinkKey(peer PeerID, purpose string, fromSelf bool) (key []byte, ok bool) {
	l := e.links[peer]
	if l == nil || l.secret == nil {
		return nil, false
	}
	k, err := l.secret.key(purpose, fromSelf)
	return k, err == nil
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
	e.untrace(peer)
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
