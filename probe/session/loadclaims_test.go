package session

import (
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// Claims packed into one datagram draw one answer at most: the messages
// of a datagram reach the session one after the other at one instant (as
// netcore hands up a datagram's KeepAlive records), and the host takes one
// claim a member an instant, counting the rest. A watcher's ten claims get
// one busy grant, not ten; a player's ten asks for the turn toward cyd send
// cyd one notice, not ten; a claim at the next instant is taken again.
func TestClaimsInOneDatagramDrawOneAnswer(t *testing.T) {
	w, a, b, c, eve := watchedLoadWorld(t)
	a.tr.Keep = true
	const packed = 10
	// sentTo is how many datagrams the host sent to m while fn ran.
	sentTo := func(m *machine, fn func()) int {
		n0 := len(a.tr.Sent)
		fn()
		n := 0
		for _, d := range a.tr.Sent[n0:] {
			if d.To == m.addr {
				n++
			}
		}
		return n
	}
	atOnce := func(from *machine, claim []byte) func() {
		return func() {
			for range packed {
				a.s.deliver(w.now(), from.s.self, netcore.ChannelControl, claim)
			}
		}
	}
	watcherClaim := appendLoadTurn(nil, kindLoadClaim, loadTurnMsg{ID: 9, Tester: eve.s.self, Peer: b.s.self, Flag: turnAsk})
	playerAsk := appendLoadTurn(nil, kindLoadClaim, loadTurnMsg{ID: 11, Tester: b.s.self, Peer: c.s.self, Flag: turnAsk})

	var toEve, toEveLater, toCyd int
	var rejEve, rejBob uint64
	w.at(w.now(), func() {
		r0 := a.s.Rejected().Load
		toEve = sentTo(eve, atOnce(eve, watcherClaim))
		rejEve = a.s.Rejected().Load - r0
		w.after(a)
	})
	w.at(w.now()+500*time.Millisecond, func() {
		toEveLater = sentTo(eve, func() { a.s.deliver(w.now(), eve.s.self, netcore.ChannelControl, watcherClaim) })
		r0 := a.s.Rejected().Load
		toCyd = sentTo(c, atOnce(b, playerAsk))
		rejBob = a.s.Rejected().Load - r0
		w.after(a)
	})
	w.runFor(time.Second)

	if toEve != 1 || rejEve != packed {
		t.Errorf("a watcher's %d claims at one instant: the host sent it %d datagrams and counted %d refusals, want 1 and %d",
			packed, toEve, rejEve, packed)
	}
	if toEveLater != 1 {
		t.Errorf("the watcher's claim at the next instant drew %d datagrams, want its busy grant", toEveLater)
	}
	if toCyd != 1 || rejBob != packed-1 {
		t.Errorf("a player's %d asks at one instant: the host sent its peer %d datagrams and counted %d refusals, want 1 and %d",
			packed, toCyd, rejBob, packed-1)
	}
	if turn := a.s.load.turn; !turn.held || turn.holder != b.s.self || turn.peer != c.s.self {
		t.Errorf("the player's first ask did not take the turn: %+v", turn)
	}
}
