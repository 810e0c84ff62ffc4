package session

import (
	"fmt"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

func (s *Session) onLeave(now time.Duration, m *member) {
	switch {
	case m.ID == hostID && !s.started && s.role != roleHost:
		s.fail(errHostLeft)
	case s.role == roleHost && !s.started:
		s.dropMember(now, m, "left")
	case s.started && m.Observer:
		s.forgetObserver(m, "stopped watching")
	}
	// A player leaving a running game sends its removal (S7); its leave
	// adds nothing.
}

// dropMember: the host takes a member out of the lobby.
func (s *Session) dropMember(now time.Duration, m *member, why string) {
	if m.removed {
		return
	}
	m.removed = true
	if m.linked {
		s.ep.RemoveLink(m.ID)
		m.linked = false
	}
	s.members = slices.DeleteFunc(s.members, func(x *member) bool { return x == m })
	delete(s.byID, m.ID)
	s.membersChanged()
	s.message(fmt.Sprintf("%s %s (%d of %d players seated)", m.Name, why, s.seated(), s.need))
	s.log.Info("left the lobby", "player", m.Name, "why", why)
	s.rosterChanged(now)
}

func (s *Session) forgetObserver(m *member, why string) {
	if m.removed {
		return
	}
	m.removed = true
	if s.peer != nil {
		s.peer.ForgetObserver(m.ID)
	} else if m.linked {
		s.ep.RemoveLink(m.ID)
	}
	m.linked = false
	s.membersChanged()
	delete(s.wb.shares, m.ID) // its share of the watchers' budget (watchbudget.go)
	s.message(m.Name + " " + why)
}

// Quit leaves the session cleanly: a player in a running game issues its
// removal (S7) and waits for it to execute; anyone else says it is leaving.
// The session is Done once that is through, or after quitLimit at most.
func (s *Session) Quit(now time.Duration) {
	if s.done || s.quitting {
		return
	}
	// A load test stops with the machine: the other end is told, and this
	// machine's own test is published as cancelled.
	s.CancelLoadTest(now)
	s.quitting = true
	s.quitAt = now
	switch {
	case s.join == joinHello || s.join == joinResponse:
		// Never joined: the run did not do what it was asked, whether
		// the host is silent or the user gave up first (exit 1).
		s.fail(errNotJoined)
	case s.started && s.role != RoleObserver:
		s.peer.Quit(now)
		s.markQuit()
	default:
		for _, m := range s.members {
			if m.ID != s.self && m.linked && !m.removed {
				_ = s.ep.Send(now, m.ID, netcore.ChannelGlobal, []byte{kindLeave})
			}
		}
		if s.peer != nil {
			s.peer.Quit(now)
		}
		s.linger(now)
	}
	s.after(now)
}

// runsPeer: the lockstep peer takes the datagrams and the ticks. Once it is
// done (its removal executed here), the endpoint takes them itself, so the
// linger's acks arrive and its retransmissions go out.
func (s *Session) runsPeer() bool { return s.peer != nil && !s.peer.Done() }

// quitMark is where a peer's reliable stream stood right after this
// machine's removal was sent to it.
type quitMark struct {
	peer netcore.PeerID
	mark netcore.Mark
}

// markQuit marks, on every link, the reliable stream up to the removal
// just sent, so the quit can wait for each peer to have it.
func (s *Session) markQuit() {
	s.quitMarks = s.quitMarks[:0]
	for _, id := range s.ep.Peers(nil) {
		if m, ok := s.ep.ReliableMark(id); ok {
			s.quitMarks = append(s.quitMarks, quitMark{id, m})
		}
	}
}

// removalDelivered: every peer has acked the reliable stream up to this
// machine's removal. A peer that never got it would wait for this
// machine's commands of the removal's frame for ever: the others, having
// executed the removal, no longer count this machine, and none of them
// removes it again.
func (s *Session) removalDelivered() bool {
	for _, q := range s.quitMarks {
		if !s.ep.Delivered(q.peer, q.mark) {
			return false
		}
	}
	return true
}

// linger waits for the last reliable datagrams (the removal, the leave) to
// be acked: at least one retransmission and its ack on the slowest link,
// RTO + SRTT (about three round trips), and then for as long as a peer
// has not acked the removal, up to quitLinger. A machine that executed
// our removal drops our link, and with it the acks of our frame packets
// sent after it, so waiting for every ack would hold every quit for the
// whole quitLinger; what matters is the removal, and on a lossy link its
// first retransmission may be lost too.
func (s *Session) linger(now time.Duration) {
	if !s.lingering {
		s.lingering = true
		s.lingerEnd = now + s.lingerFor()
		s.lingerCap = now + quitLinger
	}
}

// minLinger lets a LAN's acks, which come back in microseconds, arrive.
const minLinger = 20 * time.Millisecond

func (s *Session) lingerFor() time.Duration {
	var d time.Duration
	for _, id := range s.ep.Peers(nil) {
		if st, ok := s.ep.Stats(id); ok {
			d = max(d, st.RTO+st.SRTT)
		}
	}
	return min(max(d, minLinger), quitLinger)
}

func (s *Session) checkQuit(now time.Duration) {
	if s.done {
		return
	}
	if now >= s.quitAt+quitLimit {
		s.finish(nil)
		return
	}
	if s.peer != nil && !s.peer.Done() {
		return
	}
	s.linger(now)
	if s.settled() || now >= s.lingerCap {
		s.finish(nil)
		return
	}
	if now >= s.lingerEnd || s.awaitRemoval {
		if s.removalDelivered() {
			s.finish(nil)
			return
		}
		// Each ack wakes the session; the deadline is the cap.
		s.awaitRemoval, s.lingerEnd = true, s.lingerCap
	}
}

// settled: nothing this machine sent reliably is still waiting for an ack.
func (s *Session) settled() bool {
	for _, id := range s.ep.Peers(nil) {
		if st, ok := s.ep.Stats(id); ok && (st.InFlight > 0 || st.Backlog > 0 || st.GlobalInFlight > 0) {
			return false
		}
	}
	return true
}

func (s *Session) fail(err error) {
	s.log.Warn("session ends", "err", err)
	s.finish(err)
}

func (s *Session) finish(err error) {
	if s.done {
		return
	}
	s.done, s.err = true, err
	s.flush()
}
