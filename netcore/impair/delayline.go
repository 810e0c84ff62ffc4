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
// due times, so a path with no jitter and no reordering keeps order.
type delayLine struct {
	heap minheap.Heap[lineItem]
	seq  uint64
}

// lineItem is a held datagram; the heap keeps its due time in its key,
// and popDue copies it into due.
type lineItem struct {
	due time.Duration
	to  netip.AddrPort
	buf *[]byte // pooled
}

func (l *delayLine) len() int { return l.heap.Len() }

func (l *delayLine) push(due time.Duration, to netip.AddrPort, buf *[]byte) {
	l.heap.Push(minheap.Key{At: due, Seq: l.seq}, lineItem{to: to, buf: buf}, nil)
	l.seq++
}

// next is the due time of the earliest datagram.
func (l *delayLine) next() (time.Duration, bool) {
	k, _, ok := l.heap.Top()
	return k.At, ok
}

// popDue removes and returns the earliest datagram if it is due at now.
func (l *delayLine) popDue(now time.Duration) (lineItem, bool) {
	if k, _, ok := l.heap.Top(); !ok || k.At > now {
		return lineItem{}, false
	}
	k, it := l.heap.Pop()
	it.due = k.At
	return it, true
}

// drop hands every held datagram's buffer to release and empties the line.
func (l *delayLine) drop(release func(*[]byte)) {
	for i := range l.heap.Len() {
		release(l.heap.At(i).buf)
	}
	l.heap = minheap.Heap[lineItem]{}
}
