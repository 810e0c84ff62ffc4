// Package minheap is the one priority queue of the tree: a binary min-heap
// by a Key of a time and a tie-breaker, for the simulator's event queue
// (netcore/simnet), the impairment proxy's delay line (netcore/impair) and
// the endpoint's links by deadline (netcore).
//
// The heap holds pointers to Nodes, which its users keep: inside the value
// itself (an event, a link) or in a free list (the delay line's held
// datagrams). A Node carries its key, its value and its place in the heap,
// which the heap keeps current on every move, so that a value whose
// deadline changed moves in O(log n) with no search (Fix), and leaves the
// same way (Remove). Ordering compares the keys behind two pointers and
// calls nothing; nothing allocates once the heap's slice has grown. It
// imports nothing of ours, so every layer may use it.
package minheap

import "time"

// Key orders the heap: the earlier At first, and among equal At the lower
// Seq (an insertion counter keeps equal times in arrival order).
type Key struct {
	At  time.Duration
	Seq uint64
}

// Less reports whether k sorts before o.
func (k Key) Less(o Key) bool { return k.At < o.At || (k.At == o.At && k.Seq < o.Seq) }

// Node is one value's entry in a Heap. Set Key (and Val) before Push;
// change Key only out of the heap or followed by Fix. The zero Node is in
// no heap.
type Node[T any] struct {
	Key Key
	Val T
	pos int // 1 + the node's index in its heap; 0 when in none
}

// InHeap reports whether the node is in a heap.
func (n *Node[T]) InHeap() bool { return n.pos > 0 }

// Heap is a binary min-heap of Nodes by Key. The zero Heap is empty and
// ready. It is not safe for concurrent use.
type Heap[T any] struct {
	items []*Node[T]
}

// Len is the number of nodes in the heap.
func (h *Heap[T]) Len() int { return len(h.items) }

// Push adds n, which must be in no heap.
func (h *Heap[T]) Push(n *Node[T]) {
	h.items = append(h.items, n)
	n.pos = len(h.items)
	h.up(len(h.items) - 1)
}

// Top is the node with the earliest key, nil when the heap is empty.
func (h *Heap[T]) Top() *Node[T] {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// At is the node at index i (0 ≤ i < Len), in the heap's order, which is
// no sorted order past the top: for visiting every node.
func (h *Heap[T]) At(i int) *Node[T] { return h.items[i] }

// Pop removes the node with the earliest key and returns it. The heap must
// not be empty.
func (h *Heap[T]) Pop() *Node[T] {
	n := h.items[0]
	h.Remove(n)
	return n
}

// Remove takes n, which must be in h, out of the heap; the last node
// fills its place.
func (h *Heap[T]) Remove(n *Node[T]) {
	items := h.items
	i, last := n.pos-1, len(items)-1
	moved := items[last]
	items[i], items[last] = moved, nil
	h.items = items[:last]
	n.pos = 0
	if i != last {
		moved.pos = i + 1
		if !h.down(i) {
			h.up(i)
		}
	}
}

// Fix moves n, which must be in h, to its place after its Key changed:
// up when it now sorts before its parent, else down (one sift, not two
// tries).
func (h *Heap[T]) Fix(n *Node[T]) {
	i := n.pos - 1
	if i > 0 && n.Key.Less(h.items[(i-1)/2].Key) {
		h.up(i)
		return
	}
	h.down(i)
}

// up sifts the node at i toward the root: each parent that sorts after it
// moves down into its place, and it goes where the last one was.
func (h *Heap[T]) up(i int) {
	items := h.items
	n := items[i]
	for i > 0 {
		parent := (i - 1) / 2
		p := items[parent]
		if !n.Key.Less(p.Key) {
			break
		}
		items[i], p.pos = p, i+1
		i = parent
	}
	if n != items[i] {
		items[i], n.pos = n, i+1
	}
}

// down sifts the node at i toward the leaves, as up does toward the root,
// and reports whether it moved.
func (h *Heap[T]) down(i int) bool {
	items := h.items
	n := items[i]
	start := i
	for {
		child := 2*i + 1
		if child >= len(items) {
			break
		}
		c := items[child]
		if r := child + 1; r < len(items) && items[r].Key.Less(c.Key) {
			child, c = r, items[r]
		}
		if !c.Key.Less(n.Key) {
			break
		}
		items[i], c.pos = c, i+1
		i = child
	}
	if i == start {
		return false
	}
	items[i], n.pos = n, i+1
	return true
}
