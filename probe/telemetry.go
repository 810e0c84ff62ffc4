package probe

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/snapshot"
)

// Telemetry: every seated player streams what it knows
// first-hand — its link table, its waits and processing time, its frame —
// to every other machine, players and observers, so that anyone can draw
// the whole session's matrix. The stream is latest-state snapshots
// (package snapshot):
//
//   - Q1: newest state only, on netcore's unreliable numbered channel —
//     inside the unreliable frame packet's message when there is one (see
//     due) — so a lost update is never resent and L2 counts the channel's
//     loss like any other numbered datagram's;
//   - Q2, Q4: each update is a delta against the last snapshot that
//     receiver acked; the ack rides on traffic that flows anyway — in the
//     telemetry going the other way between players, and in a five-byte
//     ack that a machine with no telemetry going back (an observer, which
//     sends nothing else) returns for each update that moved its picture
//     on;
//   - Q5: netcore cuts an update above its datagram payload into
//     fragments of at most 1400-byte datagrams;
//   - Q6: what must arrive (a player leaves, the session ends) stays on
//     the reliable path: a removal event ends the streams to and from the
//     removed player on every machine.
//
// The rate follows the send period — an update goes with a frame packet,
// never more than ten a second — so a session that had to slow its timing
// down does not pay more for its matrix than for its frames. docs/protocol.md
// has the bytes, docs/snapshots.md the wiring and the measured cost.

// telemetryMinGap caps the rate at ten updates a second:
// a person cannot read a matrix faster, and at 8 players the steady-state
// delta then costs about 2.5 KB/s per player on the wire
// (BenchmarkTelemetryWire).
const telemetryMinGap = 100 * time.Millisecond

// telemetrySlack lets a frame packet a hair early still carry the update:
// three frames at 30 fps are 99.999999 ms in whole nanoseconds, and 1/4
// should send ten updates a second, not seven and a half.
const telemetrySlack = time.Millisecond

// telemetryHead is a telemetry message's own header: the kind, the ack of
// the other direction's stream and the length of the snapshot update.
const telemetryHead = 1 + 4 + 2

// telemetryAckLen is an observer's ack message.
const telemetryAckLen = 1 + 4

var (
	errTelemetryShort = errors.New("probe: telemetry message too short")
	errTelemetryKind  = errors.New("probe: not a telemetry message")
	errTelemetryLen   = errors.New("probe: telemetry update length out of range")
	errTelemetryAck   = errors.New("probe: telemetry ack of update 0")
)

// beginTelemetry starts a telemetry message at the end of b: kindTelemetry,
// then ack — the newest update of the recipient's own stream this machine
// holds (0: none; an observer's stream never exists) — and room for the
// update's length. The caller appends the snapshot update and calls
// endTelemetry with the offset the message started at.
func beginTelemetry(b []byte, ack uint32) []byte {
	b = binary.LittleEndian.AppendUint32(append(b, kindTelemetry), ack)
	return append(b, 0, 0)
}

// endTelemetry fills in the update's length and appends inner: a frame or
// status packet travelling in the same message, or nothing.
func endTelemetry(b []byte, start int, inner []byte) []byte {
	binary.LittleEndian.PutUint16(b[start+5:], uint16(len(b)-start-telemetryHead))
	return append(b, inner...)
}

// decodeTelemetry splits a telemetry message into its ack, its snapshot
// update and what follows it (a frame or status packet, or nothing); both
// alias b. The update's own checks are the snapshot receiver's.
func decodeTelemetry(b []byte) (ack uint32, update, inner []byte, err error) {
	if len(b) < telemetryHead+snapshot.HeaderLen {
		return 0, nil, nil, errTelemetryShort
	}
	if b[0] != kindTelemetry {
		return 0, nil, nil, errTelemetryKind
	}
	n := int(binary.LittleEndian.Uint16(b[5:]))
	if n < snapshot.HeaderLen || n > len(b)-telemetryHead {
		return 0, nil, nil, errTelemetryLen
	}
	return binary.LittleEndian.Uint32(b[1:]), b[telemetryHead : telemetryHead+n], b[telemetryHead+n:], nil
}

// appendTelemetryAck is an observer's ack of a player's stream.
func appendTelemetryAck(b []byte, ack uint32) []byte {
	return binary.LittleEndian.AppendUint32(append(b, kindTelemetryAck), ack)
}

func decodeTelemetryAck(b []byte) (uint32, error) {
	if len(b) != telemetryAckLen {
		return 0, errTelemetryShort
	}
	if b[0] != kindTelemetryAck {
		return 0, errTelemetryKind
	}
	ack := binary.LittleEndian.Uint32(b[1:])
	if ack == 0 {
		// Nobody acks having nothing: an observer acks only an update
		// that arrived.
		return 0, errTelemetryAck
	}
	return ack, nil
}

// telemetry is a peer's half of the streams: its own sender (one ring per
// recipient) and one receiver per player that streams to it. One goroutine
// owns it with the peer.
type telemetry struct {
	on    bool // this machine streams its own (Config.Telemetry)
	snd   *snapshot.Sender[snapshot.Telemetry]
	own   snapshot.Telemetry
	links []snapshot.Link
	in    map[netcore.PeerID]*telemetryIn
	next  time.Duration // no update before this
	armed bool          // an update has gone: next is set
	buf   []byte
	ack   []byte
	rows  []snapshot.Row

	// Counts, for tests: updates sent (one per
	// recipient), updates that moved a picture on, updates dropped
	// because their base was not held (a lost update with its ack
	// already on the way: normal under loss, Q4).
	sent, fresh, noBase uint64

	// onSend, when set (tests), sees every message sent with the state it
	// carries.
	onSend func(to netcore.PeerID, msg []byte, st *snapshot.Telemetry)

	// The observers' share (SetObserverGate): gate, when set, says what
	// may go to an observer; obsSize is the last update each observer got,
	// what the next is reckoned at; obsTel is skip's decision for the
	// observer of the packet being sent, which wants then reads.
	gate    observerGate
	obsSize map[netcore.PeerID]int
	obsTel  netcore.PeerID
}

// observerGate decides whether n bytes go to the observer to at now: a
// telemetry update (with the frame packet it carries) when update is set,
// else a frame or status packet alone, on the reliable channel when
// reliable is set. The session that runs the peer keeps the observers'
// budget and answers from it.
type observerGate = func(now time.Duration, to netcore.PeerID, n int, update, reliable bool) bool

// SetObserverGate has the peer ask g before it sends an observer anything
// of the game: its telemetry then goes to each observer only as often as
// g lets it, never riding on a reliable frame packet, and frame and
// status packets only when g lets them. nil: everything goes.
func (p *Peer) SetObserverGate(g observerGate) { p.tm.gate = g }

// skip decides what goes to pl with the frame or status packet (n bytes,
// reliable or not) being sent at now, tel saying whether an update is due:
// nothing is skipped for a seated player, or without a gate. For an
// observer, an update goes inside an unreliable packet when the gate
// admits it (wants then says so); otherwise the packet goes alone if the
// gate admits that. It reports whether pl gets nothing.
func (t *telemetry) skip(now time.Duration, p *Peer, pl *player, tel bool, n int, reliable bool) bool {
	if !pl.Observer || t.gate == nil {
		return false
	}
	t.obsTel = 0
	if tel && !reliable && t.wantsAny(p, pl) && t.gate(now, pl.ID, t.obsSize[pl.ID]+n, true, false) {
		t.obsTel = pl.ID
		return false
	}
	return !t.gate(now, pl.ID, n, false, reliable)
}

// telemetryIn is one player's stream into this machine.
type telemetryIn struct {
	rcv *snapshot.Receiver[snapshot.Telemetry]
	at  time.Duration // when its newest update arrived
}

func newTelemetry(on bool) *telemetry {
	return &telemetry{on: on, snd: snapshot.NewTelemetrySender(), in: map[netcore.PeerID]*telemetryIn{}}
}

// streams reports whether this machine sends telemetry now: a seated player
// of a running game that has not been removed. Observers only receive.
func (t *telemetry) streams(p *Peer) bool {
	return t.on && p.started && !p.done && p.self.seated && !p.self.Observer && !p.self.removed
}

// wants reports whether this machine streams its telemetry to pl, and for
// an observer under a gate, whether an update goes with the packet being
// sent (skip decided it).
func (t *telemetry) wants(p *Peer, pl *player) bool {
	if pl.Observer && t.gate != nil && t.obsTel != pl.ID {
		return false
	}
	return t.wantsAny(p, pl)
}

// wantsAny reports whether pl is one of the machines this one streams to.
func (t *telemetry) wantsAny(p *Peer, pl *player) bool {
	return p.cfg.TelemetryTo == nil || p.cfg.TelemetryTo(pl.Member)
}

// due reports whether an update goes out with the frame packet (or a
// stalled machine's status packet) being sent at now; if so it fills this
// machine's state once for every recipient.
//
// Updates travel with those packets, never on a schedule of their own, so
// the rate follows the send period by itself: one frame packet a send
// period, and no more than one update every telemetryMinGap. And they
// travel *inside* an unreliable frame or status packet's message (wrap):
// netcore delivers an unreliable message only if it is newer than the last
// one delivered on the link, so two unreliable messages sent at the same
// instant race on a jittery path, and whichever arrives second is dropped.
// As separate messages, an update arriving after its frame packet was lost
// about half the time at ±4 ms of jitter; sent after the frame packet, the
// update made receivers drop frame packets and wait (measured on the
// demo's Wi-Fi paths: twice the waits of 100 ms and more). A frame packet
// that asks for an ack goes reliable, on its own sequence, and the update
// goes beside it unreliable, with nothing to race.
func (t *telemetry) due(now time.Duration, p *Peer) bool {
	if !t.streams(p) || (t.armed && now < t.next) {
		return false
	}
	t.armed, t.next = true, now+telemetryMinGap-telemetrySlack
	t.fill(now, p)
	t.snd.Set(&t.own) // once, shared by every recipient
	return true
}

// encode builds pl's update due now — a delta against what pl last acked,
// with this machine's ack of pl's own stream — with inner after it.
func (t *telemetry) encode(pl *player, inner []byte) []byte {
	t.buf = beginTelemetry(t.buf[:0], t.ackFor(pl.ID))
	t.buf = t.snd.Next(t.buf, int(pl.ID))
	t.buf = endTelemetry(t.buf, 0, inner)
	t.sent++
	if pl.Observer {
		if t.obsSize == nil {
			t.obsSize = map[netcore.PeerID]int{}
		}
		t.obsSize[pl.ID] = len(t.buf) - len(inner)
	}
	if t.onSend != nil {
		t.onSend(pl.ID, t.buf, &t.own)
	}
	return t.buf
}

// sendTo sends pl the update due now in a message of its own.
func (t *telemetry) sendTo(now time.Duration, p *Peer, pl *player) {
	if err := p.ep.Send(now, pl.ID, netcore.ChannelUnreliable, t.encode(pl, nil)); err != nil {
		// No link (an observer that has gone): nothing kept for it.
		t.snd.Forget(int(pl.ID))
	}
}

// wrap returns pl's update due now with an unreliable frame or status
// packet inside, to be sent as one unreliable message.
func (t *telemetry) wrap(pl *player, packet []byte) []byte { return t.encode(pl, packet) }

// fill copies this machine's own state at now into its telemetry.
func (t *telemetry) fill(now time.Duration, p *Peer) {
	t.own.Frame = uint32(max(p.frame, 0))
	if wait, process, ok := p.ownWaits(); ok {
		t.own.SetWaits(p.waitTotal, &wait, &process)
	} else {
		t.own.SetWaits(p.waitTotal, nil, nil)
	}
	t.links = t.links[:0]
	for _, pl := range p.players {
		if pl == p.self || pl.removed {
			continue
		}
		if st, ok := p.ep.Stats(pl.ID); ok {
			t.links = append(t.links, snapshot.LinkFrom(st, p.waitsFor(now, pl, st)))
		}
	}
	t.own.SetLinks(t.links)
}

// ownWaits are this machine's longest wait of the last two report
// intervals and its processing time, known once its first report has
// executed (S5) — the values its next report would carry.
func (p *Peer) ownWaits() (wait, process time.Duration, ok bool) {
	if p.record == nil {
		return 0, 0, false
	}
	if _, ok := p.record.Latest(p.self.idx); !ok {
		return 0, 0, false
	}
	return max(p.waitCur, p.waitPrev), max(p.processed, p.cfg.ProcessTime), true
}

// ackFor is this machine's ack of from's stream: the newest update held.
func (t *telemetry) ackFor(from netcore.PeerID) uint32 {
	if in := t.in[from]; in != nil {
		return in.rcv.Ack()
	}
	return 0
}

// deliver takes a telemetry message or an observer's ack from pl. It
// reports whether msg was one of them, and returns the frame or status
// packet a telemetry message carries (nil for none). A malformed one counts
// as a bad packet and changes nothing, its packet included.
func (t *telemetry) deliver(now time.Duration, p *Peer, pl *player, msg []byte) (inner []byte, ok bool) {
	if len(msg) == 0 {
		return nil, false
	}
	switch msg[0] {
	case kindTelemetryAck:
		ack, err := decodeTelemetryAck(msg)
		if err != nil {
			p.badPackets++
			return nil, true
		}
		t.snd.Acked(int(pl.ID), ack)
		return nil, true
	case kindTelemetry:
	default:
		return nil, false
	}
	ack, update, inner, err := decodeTelemetry(msg)
	if err != nil {
		p.badPackets++
		return nil, true
	}
	if pl.removed || pl.Observer || !pl.seated {
		return inner, true // a removed player's stream has ended (Q6); observers send none
	}
	in := t.in[pl.ID]
	if in == nil {
		in = &telemetryIn{rcv: snapshot.NewTelemetryReceiver()}
		t.in[pl.ID] = in
	}
	// Apply: the state is built only when the matrix is drawn (State).
	fresh, err := in.rcv.Apply(update)
	switch {
	case errors.Is(err, snapshot.ErrNoBase):
		// Its base was lost on the way; the ack we carry still names an
		// older one, so the next update is against a base we hold (Q4).
		t.noBase++
	case err != nil:
		p.badPackets++
		p.log.Debug("bad telemetry", "from", pl.Name, "err", err)
		return nil, true
	case fresh:
		in.at = now
		t.fresh++
		if !t.streams(p) || !t.wants(p, pl) {
			// No telemetry of ours goes back to carry the ack (an
			// observer streams none): it goes on its own, unreliable
			// like the update.
			t.ack = appendTelemetryAck(t.ack[:0], in.rcv.Ack())
			_ = p.ep.Send(now, pl.ID, netcore.ChannelUnreliable, t.ack)
		}
	}
	// The ack applies even when the update itself could not: it is
	// what lets the next update find a base.
	t.snd.Acked(int(pl.ID), ack)
	return inner, true
}

// forget ends both streams with id (removed, or an observer forgotten): a
// later machine with that ID would start from a full update.
func (t *telemetry) forget(id netcore.PeerID) {
	delete(t.in, id)
	delete(t.obsSize, id)
	t.snd.Forget(int(id))
}

// matrix is the admin's picture at now: this machine's own row from its
// endpoint, every other seated player's from its newest telemetry.
func (t *telemetry) matrix(now time.Duration, p *Peer) feed.MatrixView {
	m := feed.MatrixView{Players: make([]feed.MatrixPlayer, 0, len(p.players))}
	for _, pl := range p.players {
		if pl.Observer || !pl.seated || pl.removed {
			continue
		}
		row := feed.MatrixPlayer{Name: pl.Name}
		switch in := t.in[pl.ID]; {
		case pl == p.self:
			row = p.OwnRow(now)
		case in != nil:
			st, ok := in.rcv.State()
			if !ok {
				break
			}
			row.Known, row.Age = true, max(now-in.at, 0)
			row.Frame, row.Waited = int(st.Frame), st.Waited()
			if d, ok := st.Wait(); ok {
				row.Wait = &d
			}
			if d, ok := st.Process(); ok {
				row.Process = &d
			}
			t.rows = st.Rows(t.rows[:0])
			// Sized once: grown by append, a 64-player matrix would be
			// 1.3 MB and 450 allocations a View.
			row.Links = make([]feed.MatrixLink, 0, len(t.rows))
			for _, r := range t.rows {
				o := p.ids.get(p, r.Peer)
				if o == nil || o.removed {
					continue // not (or no longer) in the session here
				}
				l := LinkOf(pl.Name, o.Name, r.LinkStats())
				if !r.LossKnown {
					l.LossKnown, l.Sent, l.Retransmitted, l.Expected, l.Missing = false, 0, 0, 0, 0
				}
				row.Links = append(row.Links, feed.MatrixLink{Link: l, Observer: o.Observer, Caused: r.Caused,
					Frames: r.Frames, Unacked: r.Unacked})
			}
		}
		m.Players = append(m.Players, row)
	}
	if len(m.Players) == 0 {
		m.Players = nil // as before it was sized: no rows, no slice
	}
	return m
}
