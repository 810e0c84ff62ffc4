package minheap

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

type item struct {
	name  int
	place int
}

// check fails unless every entry sorts no earlier than its parent and
// every placed value knows its index.
func check(t *testing.T, h *Heap[*item]) {
	t.Helper()
	for i, e := range h.items {
		if i > 0 && e.key.Less(h.items[(i-1)/2].key) {
			t.Fatalf("entry %d sorts before its parent", i)
		}
		if e.place != nil && *e.place != i {
			t.Fatalf("value at %d believes it is at %d", i, *e.place)
		}
	}
}

// Values leave in key order, equal times in Seq order, whatever order
// they came in; Remove and Fix keep the order and the places.
func TestOrderPlacesRemoveFix(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h Heap[*item]
	items := make([]*item, 500)
	keys := make([]Key, len(items))
	for i := range items {
		items[i] = &item{name: i}
		keys[i] = Key{At: time.Duration(rng.IntN(50)), Seq: uint64(i)}
		h.Push(keys[i], items[i], &items[i].place)
		check(t, &h)
	}
	// Move every third value, remove every fifth.
	for i := 0; i < len(items); i += 3 {
		keys[i].At = time.Duration(rng.IntN(50))
		h.Fix(items[i].place, keys[i])
		check(t, &h)
	}
	removed := map[int]bool{}
	for i := 0; i < len(items); i += 5 {
		if v := h.Remove(items[i].place); v != items[i] {
			t.Fatalf("Remove(%d) returned value %d", items[i].place, v.name)
		}
		if items[i].place != -1 {
			t.Fatalf("a removed value's place is %d, want -1", items[i].place)
		}
		removed[i] = true
		check(t, &h)
	}
	var want []int
	for i := range items {
		if !removed[i] {
			want = append(want, i)
		}
	}
	slices.SortFunc(want, func(a, b int) int {
		if keys[a].Less(keys[b]) {
			return -1
		}
		return 1
	})
	var got []int
	for h.Len() > 0 {
		k, v, ok := h.Top()
		if !ok || k != keys[v.name] {
			t.Fatalf("Top %v %v, the value's key %v", k, ok, keys[v.name])
		}
		if pk, pv := h.Pop(); pk != k || pv != v {
			t.Fatal("Pop differs from Top")
		}
		got = append(got, v.name)
		check(t, &h)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("left in order %v, want %v", got, want)
	}
	if _, _, ok := h.Top(); ok {
		t.Fatal("Top of an empty heap")
	}
}

// A value pushed without a place is ordered all the same.
func TestUnplacedAndClear(t *testing.T) {
	var h Heap[string]
	h.Push(Key{At: 3}, "c", nil)
	h.Push(Key{At: 1, Seq: 1}, "b", nil)
	h.Push(Key{At: 1}, "a", nil)
	var got []string
	for range 2 {
		_, v := h.Pop()
		got = append(got, v)
	}
	if !slices.Equal(got, []string{"a", "b"}) || h.Len() != 1 || h.At(0) != "c" {
		t.Fatalf("popped %v, left %d", got, h.Len())
	}
}

// BenchmarkPushPop is a standing heap of 1024: each operation takes the
// earliest value out and puts one back, as a timer re-arms.
func BenchmarkPushPop(b *testing.B) {
	var h Heap[*item]
	rng := rand.New(rand.NewPCG(1, 1))
	items := make([]item, 1024)
	for i := range items {
		h.Push(Key{At: time.Duration(rng.IntN(1000)), Seq: uint64(i)}, &items[i], &items[i].place)
	}
	seq := uint64(len(items))
	b.ReportAllocs()
	for b.Loop() {
		k, v := h.Pop()
		h.Push(Key{At: k.At + time.Duration(rng.IntN(1000)), Seq: seq}, v, &v.place)
		seq++
	}
}
