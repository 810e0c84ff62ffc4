package snapshot

import "errors"

// errShort is a payload that ends before its table says it should.
var errShort = errors.New("snapshot: payload ends early")

// bitWriter appends a bit stream to a byte slice, most significant bit
// first, so a dump of the bytes reads left to right in the order the
// Quake 3 example writes updates ("[1 A 1 B 1 C 1 D]", Q3).
type bitWriter struct {
	buf  []byte
	acc  uint64 // pending bits in the low cnt bits; higher bits are stale
	cnt  uint   // pending bits, always < 8 between calls
	bits int    // bits written, for tests and size accounting
}

// write appends the low n bits of v (n ≤ 32).
func (w *bitWriter) write(v uint32, n uint) {
	w.acc = w.acc<<n | uint64(v)&(1<<n-1)
	w.cnt += n
	w.bits += int(n)
	for w.cnt >= 8 {
		w.cnt -= 8
		w.buf = append(w.buf, byte(w.acc>>w.cnt))
	}
}

func (w *bitWriter) bit(b bool) {
	if b {
		w.write(1, 1)
	} else {
		w.write(0, 1)
	}
}

// flush pads the last byte with zero bits and returns the stream.
func (w *bitWriter) flush() []byte {
	if w.cnt > 0 {
		w.buf = append(w.buf, byte(w.acc<<(8-w.cnt)))
		w.cnt = 0
	}
	return w.buf
}

// bitReader reads what bitWriter wrote. Reading past the end is an error,
// never a panic: the bytes come from the network.
type bitReader struct {
	b   []byte
	pos int // next bit
}

func (r *bitReader) read(n uint) (uint32, error) {
	if r.pos+int(n) > len(r.b)*8 {
		return 0, errShort
	}
	var v uint64
	for n > 0 {
		i, off := r.pos>>3, uint(r.pos&7)
		take := min(8-off, n)
		chunk := uint64(r.b[i]>>(8-off-take)) & (1<<take - 1)
		v = v<<take | chunk
		r.pos += int(take)
		n -= take
	}
	return uint32(v), nil
}

// bit reads one bit: the changed-bits are most of what a decoder reads.
func (r *bitReader) bit() (bool, error) {
	if r.pos >= len(r.b)*8 {
		return false, errShort
	}
	v := r.b[r.pos>>3] >> (7 - uint(r.pos&7)) & 1
	r.pos++
	return v == 1, nil
}

// done checks that only the zero padding of the last byte is left, so one
// update has exactly one encoding.
func (r *bitReader) done() error {
	left := len(r.b)*8 - r.pos
	if left >= 8 {
		return errors.New("snapshot: bytes after the last field")
	}
	if left > 0 && r.b[len(r.b)-1]&(1<<left-1) != 0 {
		return errors.New("snapshot: padding bits are not zero")
	}
	return nil
}
