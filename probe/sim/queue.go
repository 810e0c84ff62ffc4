package sim

import (
	"fmt"
	"math"

	"github.com/lagscope/lagscope/netcore/simnet"
)

// queueSpec is the bottleneck of a player's line (the `queue` object of an
// `access` entry, docs/simulation.md): per direction, the line's rate and
// the bytes its queue holds. A direction without a rate has no
// bottleneck.
type queueSpec struct {
	UpMbit       *float64 `json:"up_mbit"`
	UpBufferKB   *float64 `json:"up_buffer_kb"`
	DownMbit     *float64 `json:"down_mbit"`
	DownBufferKB *float64 `json:"down_buffer_kb"`
}

// Bounds of a queue: rates in Mbit/s, buffers in kB (1000 bytes). The
// smallest buffer holds one full datagram on the line (1428 bytes); the
// default is a common modem's.
const (
	minQueueMbit, maxQueueMbit = 0.01, 10000
	minBufferKB, maxBufferKB   = 1.5, 100_000
	defaultBufferKB            = 256
)

// checkQueue validates an access entry's queue; key names the entry.
func checkQueue(key string, q *queueSpec) error {
	if q == nil {
		return nil
	}
	for _, d := range []struct {
		dir       string
		mbit, buf *float64
	}{{"up", q.UpMbit, q.UpBufferKB}, {"down", q.DownMbit, q.DownBufferKB}} {
		k := key + ".queue." + d.dir
		switch {
		case d.mbit != nil && (*d.mbit < minQueueMbit || *d.mbit > maxQueueMbit):
			return fmt.Errorf("scenario: key %q: %v is outside %v..%v", k+"_mbit", *d.mbit, minQueueMbit, maxQueueMbit)
		case d.buf != nil && d.mbit == nil:
			return fmt.Errorf("scenario: key %q: a buffer needs the line's rate, %s", k+"_buffer_kb", d.dir+"_mbit")
		case d.buf != nil && (*d.buf < minBufferKB || *d.buf > maxBufferKB):
			return fmt.Errorf("scenario: key %q: %v is outside %v..%v", k+"_buffer_kb", *d.buf, minBufferKB, maxBufferKB)
		}
	}
	return nil
}

// queues is the checked spec as the network takes it: up and down.
func (q *queueSpec) queues() (up, down simnet.Queue) {
	if q == nil {
		return simnet.Queue{}, simnet.Queue{}
	}
	return oneQueue(q.UpMbit, q.UpBufferKB), oneQueue(q.DownMbit, q.DownBufferKB)
}

func oneQueue(mbit, kb *float64) simnet.Queue {
	if mbit == nil {
		return simnet.Queue{}
	}
	buf := float64(defaultBufferKB)
	if kb != nil {
		buf = *kb
	}
	return simnet.Queue{Rate: *mbit * 1e6, Limit: int(math.Round(buf * 1000))}
}
