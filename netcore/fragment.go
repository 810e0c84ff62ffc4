package netcore

import "time"

// Reassembly of fragmented messages on the unordered channels (unreliable
// and global). The reliable channel delivers in order, so its fragments
// arrive in order and need only one growing buffer (see inOrder).
//
// Memory is bounded three ways so that a flood of half-messages cannot grow
// it: at most maxPartials messages per channel per link (a new one evicts
// the oldest), each at most maxMessage bytes, and the endpoint as a whole
// holds at most reassemblyBudget bytes of partial messages. A partial
// message older than its timeout is dropped.

const (
	maxPartials = 4
	// reassemblyBudget bounds the bytes of partial messages an endpoint
	// holds across all links.
	reassemblyBudget = 16 << 20
	fragWords        = (maxFragments + 63) / 64
	// keepBuffer is the largest reassembly buffer a free slot keeps for
	// reuse, so steady traffic of small fragmented messages does not
	// allocate while one huge message does not pin its memory.
	keepBuffer = 64 << 10
)

type partial struct {
	inUse   bool
	msgID   uint32
	count   uint16
	got     uint16
	lastLen int
	started time.Duration
	have    [fragWords]uint64
	buf     []byte // len count·fragmentPayload while in use
}

type reassembler struct {
	parts [maxPartials]partial
}

// budget is the endpoint-wide allowance shared by all reassemblers.
type budget struct{ used, limit int }

// add stores fragment f. When it completes its message, add returns the
// whole message (valid until the next call) and true.
func (r *reassembler) add(now time.Duration, f fragment, b *budget) ([]byte, bool) {
	p := r.find(f.MsgID)
	if p == nil {
		p = r.claim(now, f, b)
		if p == nil {
			return nil, false
		}
	}
	if p.count != f.Count {
		// Same id, different shape: a confused or hostile sender. Start over
		// with no memory of either.
		r.release(p, b)
		return nil, false
	}
	w, bit := f.Index/64, uint64(1)<<(f.Index%64)
	if p.have[w]&bit != 0 {
		return nil, false
	}
	p.have[w] |= bit
	p.got++
	copy(p.buf[int(f.Index)*fragmentPayload:], f.Payload)
	if f.Index == f.Count-1 {
		p.lastLen = len(f.Payload)
	}
	if p.got < p.count {
		return nil, false
	}
	msg := p.buf[:int(p.count-1)*fragmentPayload+p.lastLen]
	r.release(p, b)
	return msg, true
}

func (r *reassembler) find(id uint32) *partial {
	for i := range r.parts {
		if p := &r.parts[i]; p.inUse && p.msgID == id {
			return p
		}
	}
	return nil
}

// claim takes a free slot (or evicts the oldest) for a new message.
func (r *reassembler) claim(now time.Duration, f fragment, b *budget) *partial {
	var p *partial
	for i := range r.parts {
		q := &r.parts[i]
		if !q.inUse {
			p = q
			break
		}
		if p == nil || q.started < p.started {
			p = q
		}
	}
	if p.inUse {
		r.release(p, b)
	}
	size := int(f.Count) * fragmentPayload
	if b.used+size > b.limit {
		return nil
	}
	b.used += size
	if cap(p.buf) < size {
		p.buf = make([]byte, size)
	}
	*p = partial{inUse: true, msgID: f.MsgID, count: f.Count, started: now, buf: p.buf[:size]}
	return p
}

func (r *reassembler) release(p *partial, b *budget) {
	if !p.inUse {
		return
	}
	b.used -= len(p.buf)
	if cap(p.buf) > keepBuffer {
		p.buf = nil // a large message's memory goes back to the runtime
	}
	p.inUse = false
	p.have = [fragWords]uint64{}
	p.got = 0
}

// expire drops partial messages started at or before now-timeout, and
// those for which keep returns false.
func (r *reassembler) expire(now, timeout time.Duration, b *budget, keep func(id uint32) bool) {
	for i := range r.parts {
		p := &r.parts[i]
		if p.inUse && (now-p.started >= timeout || (keep != nil && !keep(p.msgID))) {
			r.release(p, b)
		}
	}
}

// deadline is when the oldest partial message expires.
func (r *reassembler) deadline(timeout time.Duration) (time.Duration, bool) {
	var d time.Duration
	ok := false
	for i := range r.parts {
		if p := &r.parts[i]; p.inUse && (!ok || p.started+timeout < d) {
			d, ok = p.started+timeout, true
		}
	}
	return d, ok
}

// clear releases everything (link removed).
func (r *reassembler) clear(b *budget) {
	for i := range r.parts {
		r.release(&r.parts[i], b)
	}
}
