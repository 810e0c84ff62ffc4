package impair

import (
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/internal/minheap"
)

// delayLine holds datagrams until they are due, for the live proxy. It is
// pure — times come in as arguments — so its ordering is tested on virtual
// time; the proxy supplies the wall clock.
//
// Datagrams leave in order of due time, and in arrival order among equal
// due times, so a path with no jitter and no reordering keeps order. The
// heap's nodes are reused, so holding a datagram allocates nothing once
// the line has held as many at once.
type delayLine struct {
	heap minheap.Heap[lineItem]
	free []*minheap.Node[lineItem]
	seq  uint64
}

// lineItem is a held datagram; due is set as it leaves the line.
type lineItem struct {
	due time.Duration
	to  netip.AddrPort
	buf *[]byte // pooled
}

func (l *delayLine) len() int { return l.heap.Len() }

func (l *delayLine) push(due time.Duration, to netip.AddrPort, buf *[]byte) {
	var n *minheap.Node[lineItem]
	if k := len(l.free); k > 0 {
		n, l.free = l.free[k-1], l.free[:k-1]
	} else {
		n = new(minheap.Node[lineItem])
	}
	n.Key, n.Val = minheap.Key{At: due, Seq: l.seq}, lineItem{to: to, buf: buf}
	l.seq++
	l.heap.Push(n)
}

// next is the due time of the earliest datagram.
func (l *delayLine) next() (time.Duration, bool) {
	if top := l.heap.Top(); top != nil {
		return top.Key.At, true
	}
	return 0, false
}

// popDue removes and returns the earliest datagram if it is due at now.
func (l *delayLine) popDue(now time.Duration) (lineItem, bool) {
	if top := l.heap.Top(); top == nil || top.Key.At > now {
		return lineItem{}, false
	}
	n := l.heap.Pop()
	it := n.Val
	it.due = n.Key.At
	n.Val = lineItem{}
	l.free = append(l.free, n)
	return it, true
}

// drop hands every held datagram's buffer to release and empties the line.
func (l *delayLine) drop(release func(*[]byte)) {
	for i := range l.heap.Len() {
		release(l.heap.At(i).Val.buf)
	}
	l.heap, l.free = minheap.Heap[lineItem]{}, nil
}
