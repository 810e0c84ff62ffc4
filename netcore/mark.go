package netcore

// Mark is a point in a link's reliable stream: every message sent to the
// peer before it was taken. Delivered says when the peer has acked all of
// them, so a machine that leaves can wait for its last word (its removal)
// to be had by every peer rather than for acks of what it sent after,
// which a peer that already executed the removal never gives.
type Mark struct{ msg uint32 }

// ReliableMark marks what has been sent to peer on the reliable channel
// so far; ok false without a link.
func (e *Endpoint) ReliableMark(peer PeerID) (Mark, bool) {
	l := e.links[peer]
	if l == nil {
		return Mark{}, false
	}
	return Mark{l.rel.nextMsg}, true
}

// Delivered: peer has acked every reliable message sent before m was
// taken. A link that is gone delivers nothing more: true, since nothing
// can be waited for on it.
func (e *Endpoint) Delivered(peer PeerID, m Mark) bool {
	l := e.links[peer]
	if l == nil {
		return true
	}
	q := &l.rel
	// The backlog is in message order: its first message is the oldest
	// not yet cut into packets.
	if len(q.backlog) > 0 && int32(q.backlog[0].msgID-m.msg) < 0 {
		return false
	}
	// Packets carry messages in order, so one before the mark that is
	// still in flight is among the oldest.
	for s := q.oldest; s != q.next; s++ {
		p := q.at(s)
		if !p.inUse || p.packet != s {
			continue
		}
		if int32(p.msg-m.msg) >= 0 {
			break
		}
		return false
	}
	return true
}
