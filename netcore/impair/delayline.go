package impair

import (
	"net/netip"
	"time"
)

// delayLine holds datagrams until they are due, for the live proxy. It is
// pure — times come in as arguments — so its ordering is tested on virtual
// time; the proxy supplies the wall clock.
//
// Datagrams leave in order of due time, and in arrival order among equal
// due times, so a path with no jitter and no reordering keeps order.
type delayLine struct {
	heap []lineItem
	seq  uint64
}

type lineItem struct {
	due time.Duration
	seq uint64
	to  netip.AddrPort
	buf *[]byte // pooled
}

func (l *delayLine) len() int { return len(l.heap) }

func (l *delayLine) push(due time.Duration, to netip.AddrPort, buf *[]byte) {
	l.heap = append(l.heap, lineItem{due: due, seq: l.seq, to: to, buf: buf})
	l.seq++
	for i := len(l.heap) - 1; i > 0; {
		parent := (i - 1) / 2
		if !l.less(i, parent) {
			break
		}
		l.heap[i], l.heap[parent] = l.heap[parent], l.heap[i]
		i = parent
	}
}

// next is the due time of the earliest datagram.
func (l *delayLine) next() (time.Duration, bool) {
	if len(l.heap) == 0 {
		return 0, false
	}
	return l.heap[0].due, true
}

// popDue removes and returns the earliest datagram if it is due at now.
func (l *delayLine) popDue(now time.Duration) (lineItem, bool) {
	if len(l.heap) == 0 || l.heap[0].due > now {
		return lineItem{}, false
	}
	top := l.heap[0]
	last := len(l.heap) - 1
	l.heap[0] = l.heap[last]
	l.heap[last] = lineItem{}
	l.heap = l.heap[:last]
	for i := 0; ; {
		child := 2*i + 1
		if child >= len(l.heap) {
			break
		}
		if r := child + 1; r < len(l.heap) && l.less(r, child) {
			child = r
		}
		if !l.less(child, i) {
			break
		}
		l.heap[i], l.heap[child] = l.heap[child], l.heap[i]
		i = child
	}
	return top, true
}

func (l *delayLine) less(i, j int) bool {
	a, b := &l.heap[i], &l.heap[j]
	return a.due < b.due || (a.due == b.due && a.seq < b.seq)
}
