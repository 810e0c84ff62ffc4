// Package minheap is the one priority queue of the tree: a binary min-heap
// of values by a Key of a time and a tie-breaker, for the simulator's
// event queue (netcore/simnet), the impairment proxy's delay line
// (netcore/impair) and the endpoint's links by deadline (netcore).
//
// The keys sit in the heap beside their values, so ordering compares two
// words in place and calls nothing. A value that is to be moved or removed
// later knows its place: Push takes a pointer to the value's own index,
// which the heap keeps current on every move and sets to -1 when the value
// leaves, so Fix and Remove of a changed deadline cost O(log n) and no
// search. Nothing allocates once the heap's slice has grown. It imports
// nothing of ours, so every layer may use it.
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

type entry[T any] struct {
	key   Key
	val   T
	place *int // the value's own index, or nil
}

// Heap is a binary min-heap of T by Key. The zero Heap is empty and ready.
// It is not safe for concurrent use.
type Heap[T any] struct {
	items []entry[T]
}

// Len is the number of values in the heap.
func (h *Heap[T]) Len() int { return len(h.items) }

// Push adds v at key k. When place is not nil the heap writes v's index
// there on every move (and -1 when v leaves), for Fix and Remove.
func (h *Heap[T]) Push(k Key, v T, place *int) {
	h.items = append(h.items, entry[T]{})
	settle(h.items, len(h.items)-1, entry[T]{key: k, val: v, place: place})
}

// Top is the earliest value and its key, without removing it; ok is false
// when the heap is empty.
func (h *Heap[T]) Top() (k Key, v T, ok bool) {
	if len(h.items) == 0 {
		return Key{}, v, false
	}
	return h.items[0].key, h.items[0].val, true
}

// At is the value at index i (0 ≤ i < Len), in the heap's order, which is
// no sorted order past the top: for visiting every value.
func (h *Heap[T]) At(i int) T { return h.items[i].val }

// Pop removes the earliest value and returns it with its key. The heap
// must not be empty.
func (h *Heap[T]) Pop() (Key, T) {
	k := h.items[0].key
	return k, h.Remove(0)
}

// Remove takes the value at index i out of the heap and returns it; the
// last entry fills its place.
func (h *Heap[T]) Remove(i int) T {
	items := h.items
	last := len(items) - 1
	gone, moved := items[i], items[last]
	items[last] = entry[T]{}
	h.items = items[:last]
	if i != last {
		settle(h.items, i, moved)
	}
	if gone.place != nil {
		*gone.place = -1
	}
	return gone.val
}

// Fix gives the value at index i the key k and moves it to its place.
func (h *Heap[T]) Fix(i int, k Key) {
	e := h.items[i]
	e.key = k
	settle(h.items, i, e)
}

// settle puts e into the hole at i, moved down or up to where the heap's
// order wants it: down while a child sorts before e (the earlier child
// moves up into the hole), and, if that did not move it, up while e sorts
// before the hole's parent (the parent moves down). Everything below the
// hole sorts no earlier than everything above it, so only one way can
// apply.
func settle[T any](items []entry[T], i int, e entry[T]) {
	start := i
	for {
		child := 2*i + 1
		if child >= len(items) {
			break
		}
		if r := child + 1; r < len(items) && items[r].key.Less(items[child].key) {
			child = r
		}
		if !items[child].key.Less(e.key) {
			break
		}
		items[i] = items[child]
		placed(items, i)
		i = child
	}
	for i == start && i > 0 {
		parent := (i - 1) / 2
		if !e.key.Less(items[parent].key) {
			break
		}
		items[i] = items[parent]
		placed(items, i)
		i = parent
		start = i
	}
	items[i] = e
	placed(items, i)
}

// placed tells the value at i, if it keeps its place, that it is there.
func placed[T any](items []entry[T], i int) {
	if p := items[i].place; p != nil {
		*p = i
	}
}
