package minheap

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// check fails unless every node sorts no earlier than its parent and
// knows its place.
func check(t *testing.T, h *Heap[int]) {
	t.Helper()
	for i, n := range h.items {
		if i > 0 && n.Key.Less(h.items[(i-1)/2].Key) {
			t.Fatalf("node %d sorts before its parent", i)
		}
		if n.pos != i+1 || !n.InHeap() {
			t.Fatalf("node at %d believes it is at %d", i, n.pos-1)
		}
	}
}

// Nodes leave in key order, equal times in Seq order, whatever order they
// came in; Remove and Fix keep the order and the places.
func TestOrderPlacesRemoveFix(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h Heap[int]
	nodes := make([]Node[int], 500)
	for i := range nodes {
		nodes[i] = Node[int]{Key: Key{At: time.Duration(rng.IntN(50)), Seq: uint64(i)}, Val: i}
		h.Push(&nodes[i])
		check(t, &h)
	}
	for i := 0; i < len(nodes); i += 3 { // move every third
		nodes[i].Key.At = time.Duration(rng.IntN(50))
		h.Fix(&nodes[i])
		check(t, &h)
	}
	removed := map[int]bool{}
	for i := 0; i < len(nodes); i += 5 { // remove every fifth
		h.Remove(&nodes[i])
		if nodes[i].InHeap() {
			t.Fatal("a removed node is still in the heap")
		}
		removed[i] = true
		check(t, &h)
	}
	var want []int
	for i := range nodes {
		if !removed[i] {
			want = append(want, i)
		}
	}
	slices.SortFunc(want, func(a, b int) int {
		if nodes[a].Key.Less(nodes[b].Key) {
			return -1
		}
		return 1
	})
	var got []int
	for h.Len() > 0 {
		top := h.Top()
		if n := h.Pop(); n != top || n.InHeap() {
			t.Fatal("Pop differs from Top, or left the node in the heap")
		}
		got = append(got, top.Val)
		check(t, &h)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("left in order %v, want %v", got, want)
	}
	if h.Top() != nil {
		t.Fatal("Top of an empty heap")
	}
}

// BenchmarkPushPop is a standing heap of 1024: each operation takes the
// earliest node out and puts it back later, as a timer re-arms.
func BenchmarkPushPop(b *testing.B) {
	var h Heap[int]
	rng := rand.New(rand.NewPCG(1, 1))
	nodes := make([]Node[int], 1024)
	for i := range nodes {
		nodes[i].Key = Key{At: time.Duration(rng.IntN(1000)), Seq: uint64(i)}
		h.Push(&nodes[i])
	}
	seq := uint64(len(nodes))
	b.ReportAllocs()
	for b.Loop() {
		n := h.Pop()
		n.Key = Key{At: n.Key.At + time.Duration(rng.IntN(1000)), Seq: seq}
		seq++
		h.Push(n)
	}
}
