package probe

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/snapshot"
)

// Telemetry (issue 7): every seated player streams what it knows
// first-hand — its link table, its waits and processing time, its frame —
// to every other machine, players and observers, so that anyone can draw
// the whole session's matrix. The stream is seed 003's snapshots
// (package snapshot):
//
//   - Q1: newest state only, on netcore's unreliable numbered channel, so
//     a lost update is never resent and L2 counts the channel's loss like
//     any other numbered datagram's;
//   - Q2, Q4: each update is a delta against the last snapshot that
//     receiver acked; the ack rides on traffic that flows anyway — in the
//     telemetry going the other way between players, and in a five-byte
//     ack an observer (which sends nothing else) returns for each update
//     that moved its picture on;
//   - Q5: netcore cuts an update above its datagram payload into
//     fragments of at most 1400-byte datagrams;
//   - Q6: what must arrive (a player leaves, the session ends) stays on
//     the reliable path: a removal event ends the streams to and from the
//     removed player on every machine.
//
// The rate follows the send period — one update per send period, never
// more than ten a second — so a session that had to slow its timing down
// does not pay more for its matrix than for its frames.

// Message kinds of the telemetry, beside the frame packet's (wire.go).
const (
	kindTelemetry    uint8 = 3
	kindTelemetryAck uint8 = 4
)

// telemetryMinGap caps the rate at ten updates a second (issue 7 item 3):
// a person cannot read a matrix faster, and at 8 players the steady-state
// delta then costs about 2 KB/s per player (docs/snapshots.md).
const telemetryMinGap = 100 * time.Millisecond

// telemetryHead is a telemetry message's own header: the kind and the ack
// of the other direction's stream.
const telemetryHead = 1 + 4

// telemetryAckLen is an observer's ack message.
const telemetryAckLen = 1 + 4

var (
	errTelemetryShort = errors.New("probe: telemetry message too short")
	errTelemetryKind  = errors.New("probe: not a telemetry message")
	errTelemetryAck   = errors.New("probe: telemetry ack of update 0")
)

// appendTelemetryHead starts a telemetry message: kindTelemetry, then ack
// — the newest update of the recipient's own stream this machine holds (0:
// none; an observer's stream never exists). The snapshot update follows.
func appendTelemetryHead(b []byte, ack uint32) []byte {
	return binary.LittleEndian.AppendUint32(append(b, kindTelemetry), ack)
}

// decodeTelemetry splits a telemetry message into its ack and its snapshot
// update (which aliases b). The update's own checks are the snapshot
// receiver's.
func decodeTelemetry(b []byte) (ack uint32, update []byte, err error) {
	if len(b) < telemetryHead+snapshot.HeaderLen {
		return 0, nil, errTelemetryShort
	}
	if b[0] != kindTelemetry {
		return 0, nil, errTelemetryKind
	}
	return binary.LittleEndian.Uint32(b[1:]), b[telemetryHead:], nil
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
	next  time.Duration
	armed bool // next is set: the first update goes at the start
	buf   []byte
	ack   []byte
	rows  []snapshot.Row

	// Counts, for tests and the debug log: updates sent (one per
	// recipient), updates that moved a picture on, updates dropped
	// because their base was not held (a lost update with its ack
	// already on the way: normal under loss, Q4).
	sent, fresh, noBase uint64
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

// gap is the time between two updates: one send period at the frame rate
// in force, but never less than telemetryMinGap.
func (t *telemetry) gap(p *Peer) time.Duration {
	return max(telemetryMinGap, time.Duration(p.sched.InForce().SendPeriod)*p.framePeriod())
}

// deadline is when the next update is due, if this machine streams.
func (t *telemetry) deadline(p *Peer) (time.Duration, bool) {
	if !t.streams(p) {
		return 0, false
	}
	if !t.armed {
		return p.startAt, true
	}
	return t.next, true
}

// tick sends an update to every other machine when one is due.
func (t *telemetry) tick(now time.Duration, p *Peer) {
	if !t.streams(p) {
		return
	}
	if t.armed && now < t.next {
		return
	}
	t.armed, t.next = true, now+t.gap(p)
	t.fill(p)
	for _, pl := range p.players {
		if pl == p.self || pl.removed {
			continue
		}
		t.buf = appendTelemetryHead(t.buf[:0], t.ackFor(pl.ID))
		t.buf = t.snd.Encode(t.buf, int(pl.ID), &t.own)
		if err := p.ep.Send(now, pl.ID, netcore.ChannelUnreliable, t.buf); err != nil {
			// No link (an observer that has gone): nothing kept for it.
			t.snd.Forget(int(pl.ID))
			continue
		}
		t.sent++
	}
}

// fill copies this machine's own state into its telemetry.
func (t *telemetry) fill(p *Peer) {
	t.own.Frame = uint32(max(p.frame, 0))
	wait, process := p.ownWaits()
	t.own.SetWaits(p.waitTotal, wait, process)
	t.links = t.links[:0]
	for _, pl := range p.players {
		if pl == p.self || pl.removed {
			continue
		}
		if st, ok := p.ep.Stats(pl.ID); ok {
			t.links = append(t.links, snapshot.LinkFrom(st, pl.caused))
		}
	}
	t.own.SetLinks(t.links)
}

// ownWaits are this machine's longest wait of the last two report
// intervals and its processing time, known once its first report has
// executed (S5) — the values its next report would carry.
func (p *Peer) ownWaits() (wait, process *time.Duration) {
	if p.record == nil {
		return nil, nil
	}
	if _, ok := p.record.Latest(p.self.idx); !ok {
		return nil, nil
	}
	w, pr := max(p.waitCur, p.waitPrev), p.cfg.ProcessTime
	return &w, &pr
}

// ackFor is this machine's ack of from's stream: the newest update held.
func (t *telemetry) ackFor(from netcore.PeerID) uint32 {
	if in := t.in[from]; in != nil {
		return in.rcv.Ack()
	}
	return 0
}

// deliver takes a telemetry message or an observer's ack from pl. It
// reports whether msg was one of them; a malformed one counts as a bad
// packet and changes nothing.
func (t *telemetry) deliver(now time.Duration, p *Peer, pl *player, msg []byte) bool {
	if len(msg) == 0 {
		return false
	}
	switch msg[0] {
	case kindTelemetryAck:
		ack, err := decodeTelemetryAck(msg)
		if err != nil {
			p.badPackets++
			return true
		}
		t.snd.Acked(int(pl.ID), ack)
		return true
	case kindTelemetry:
	default:
		return false
	}
	if pl.removed || pl.Observer || !pl.seated {
		return true // a removed player's stream has ended (Q6); observers send none
	}
	ack, update, err := decodeTelemetry(msg)
	if err != nil {
		p.badPackets++
		return true
	}
	in := t.in[pl.ID]
	if in == nil {
		in = &telemetryIn{rcv: snapshot.NewTelemetryReceiver()}
		t.in[pl.ID] = in
	}
	_, fresh, err := in.rcv.Decode(update)
	switch {
	case errors.Is(err, snapshot.ErrNoBase):
		// Its base was lost on the way; the ack we carry still names an
		// older one, so the next update is against a base we hold (Q4).
		t.noBase++
	case err != nil:
		p.badPackets++
		p.log.Debug("bad telemetry", "from", pl.Name, "err", err)
		return true
	case fresh:
		in.at = now
		t.fresh++
		if p.self.Observer {
			// An observer sends nothing else a player would read: the
			// ack goes back on its own, unreliable like the update.
			t.ack = appendTelemetryAck(t.ack[:0], in.rcv.Ack())
			_ = p.ep.Send(now, pl.ID, netcore.ChannelUnreliable, t.ack)
		}
	}
	// The ack applies even when the update itself could not: it is
	// what lets the next update find a base.
	t.snd.Acked(int(pl.ID), ack)
	return true
}

// forget ends both streams with id (removed, or an observer forgotten): a
// later machine with that ID would start from a full update.
func (t *telemetry) forget(id netcore.PeerID) {
	delete(t.in, id)
	t.snd.Forget(int(id))
}

// matrix is the admin's picture at now: this machine's own row from its
// endpoint, every other seated player's from its newest telemetry.
func (t *telemetry) matrix(now time.Duration, p *Peer) MatrixView {
	var m MatrixView
	for _, pl := range p.players {
		if pl.Observer || !pl.seated || pl.removed {
			continue
		}
		row := MatrixPlayer{Name: pl.Name}
		switch in := t.in[pl.ID]; {
		case pl == p.self:
			row.Self, row.Known = true, true
			row.Frame, row.Waited = p.frame, p.waitTotal
			row.Wait, row.Process = p.ownWaits()
			for _, o := range p.players {
				if o == p.self || o.removed {
					continue
				}
				if st, ok := p.ep.Stats(o.ID); ok {
					row.Links = append(row.Links, MatrixLink{LinkStat: linkStat(pl.Name, o.Name, st), Observer: o.Observer, Caused: o.caused})
				}
			}
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
			for _, r := range t.rows {
				o := p.byID[r.Peer]
				if o == nil || o.removed {
					continue // not (or no longer) in the session here
				}
				ls := linkStat(pl.Name, o.Name, r.LinkStats())
				if !r.LossKnown {
					ls.Sent, ls.Retransmitted, ls.Expected, ls.Missing = nil, nil, nil, nil
				}
				row.Links = append(row.Links, MatrixLink{LinkStat: ls, Observer: o.Observer, Caused: r.Caused})
			}
		}
		m.Players = append(m.Players, row)
	}
	return m
}
