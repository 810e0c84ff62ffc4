package netcore

import "time"

// ackAges holds the latest acks of reliable datagrams: when each came and
// how long after the datagram's first send. A resent datagram gives no
// round-trip sample (T2), so while a link's delay rises faster than its
// retry timeout every datagram is resent and SRTT keeps its old value;
// the time from first send to ack still bounds the round trip from above,
// and the fastest of the latest acks is the round trip's floor.
type ackAges struct {
	at, age [ackKeep]time.Duration
	n, next int
}

// ackKeep is how many acks the ring holds.
const ackKeep = 4

func (a *ackAges) add(at, age time.Duration) {
	a.at[a.next], a.age[a.next] = at, age
	a.next = (a.next + 1) % ackKeep
	a.n = min(a.n+1, ackKeep)
}

// floorOf is how many of the latest acks the floor takes the fastest of:
// two, so one datagram lost and resent does not raise it, and a delay
// that rose shows from its second ack on.
const floorOf = 2

// floor is the faster of the latest floorOf acks after since, ok when one
// came.
func (a *ackAges) floor(since time.Duration) (d time.Duration, ok bool) {
	for k := range min(a.n, floorOf) {
		i := (a.next - 1 - k + ackKeep) % ackKeep
		if a.at[i] > since && (!ok || a.age[i] < d) {
			d, ok = a.age[i], true
		}
	}
	return d, ok
}

// AckFloor is the faster of the latest two acknowledgements of reliable
// datagrams to peer (from their first send, resends included) that came
// after since; ok false when none came. Where it exceeds SRTT the link's delay
// has risen past what the clean samples show yet; one lost datagram does
// not raise it while others are acked on time.
func (e *Endpoint) AckFloor(peer PeerID, since time.Duration) (time.Duration, bool) {
	l := e.links[peer]
	if l == nil {
		return 0, false
	}
	return l.acked.floor(since)
}
