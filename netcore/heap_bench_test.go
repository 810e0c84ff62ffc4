package netcore

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/tokenbucket"
)

// BenchmarkDueHeapFix is what a changed deadline costs the endpoint's heap
// of 64 links: one link's deadline moves and the heap is put right.
func BenchmarkDueHeapFix(b *testing.B) {
	var h dueHeap
	rng := rand.New(rand.NewPCG(1, 1))
	links := make([]*link, 64)
	for i := range links {
		links[i] = &link{}
		h.push(links[i])
		h.fix(links[i], time.Duration(rng.IntN(1000))*time.Microsecond, true)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l := links[i%len(links)]
		at, _ := l.deadline()
		h.fix(l, at+time.Duration(rng.IntN(1000))*time.Microsecond, true)
		i++
	}
}

// BenchmarkProbeReplyBudget is the per-probe cost of a link's budget of
// probe answers.
func BenchmarkProbeReplyBudget(b *testing.B) {
	l := link{probeReplies: tokenbucket.Bucket{Rate: probeReplyRate, Burst: probeReplyBurst}}
	now := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		now += 10 * time.Millisecond
		l.probeReplies.Take(now, 1)
	}
}
