package snapshot

import (
	"errors"
	"fmt"
	"slices"
)

// field is one entry of a field table (Q3): a name, how to read and write
// the value in a state, and how many bits it takes on the wire. Accessors
// are plain functions, so encoding never reflects over the state.
type field[S any] struct {
	Name string
	// Bits is the field's width on the wire, 1 to 32.
	Bits uint8
	// Max is the largest value the field may hold; 0 means the width's
	// largest (2^Bits−1). The encoder saturates a larger value to Max and
	// the decoder rejects one, so a 7-bit count can stop at 64.
	Max uint32
	// Near, when not 0, lets a changed value travel as its difference from
	// the base value in Near bits (plus a one-bit "near" flag) when that
	// difference is small; otherwise, or when 0, the value is written in
	// full at Bits. It suits counters that grow and round trips that
	// jitter; the Quake 3 example uses plain fields (Near 0).
	Near uint8
	Get  func(*S) uint32
	Set  func(*S, uint32)
}

// group gathers entries behind one changed-bit of its own: when nothing in
// the group differs from the base, the whole group costs one bit instead of
// one bit per field. It is how an unused link slot of a fixed-size table
// stays cheap. Groups may nest.
type group[S any] struct {
	Name    string
	Entries []entry[S]
}

// entry is a field or a group.
type entry[S any] interface {
	flatten(t *fieldTable[S], prefix string) error
}

// op is one step of the encoder's walk over the flattened table.
type op struct {
	group bool
	// Fields: value index, width, saturation limit, near width.
	field      int32
	bits, near uint8
	max        uint32
	// Groups: the value range the group covers and the op after it.
	lo, hi, next int32
}

// fieldTable is a compiled field table: every field in order, each group
// with the range of fields it covers. Build one with newTable; it is read-only
// afterwards and may be shared by any number of Senders and Receivers.
type fieldTable[S any] struct {
	fields  []field[S]
	ops     []op
	maxBits int
	depth   int // groups open while building
	// zero is the all-zero baseline, read only: one for every receiver of
	// the table (a 64-player machine has 63).
	zero []uint32
}

// maxDepth bounds group nesting so the decoder needs no allocation.
const maxDepth = 8

// newTable compiles entries into a table. It fails on a field without
// accessors, a width outside 1..32, a Max beyond the width, a Near not
// smaller than Bits, an empty group or a repeated name.
func newTable[S any](entries ...entry[S]) (*fieldTable[S], error) {
	t := &fieldTable[S]{}
	for _, e := range entries {
		if err := e.flatten(t, ""); err != nil {
			return nil, err
		}
	}
	if len(t.fields) == 0 {
		return nil, errors.New("snapshot: table has no fields")
	}
	seen := make(map[string]bool, len(t.fields))
	for _, f := range t.fields {
		if seen[f.Name] {
			return nil, fmt.Errorf("snapshot: field %q appears twice", f.Name)
		}
		seen[f.Name] = true
	}
	t.zero = make([]uint32, len(t.fields))
	return t, nil
}

func (f field[S]) flatten(t *fieldTable[S], prefix string) error {
	f.Name = prefix + f.Name
	switch {
	case f.Name == "":
		return errors.New("snapshot: field without a name")
	case f.Get == nil || f.Set == nil:
		return fmt.Errorf("snapshot: field %q lacks an accessor", f.Name)
	case f.Bits < 1 || f.Bits > 32:
		return fmt.Errorf("snapshot: field %q is %d bits wide, want 1..32", f.Name, f.Bits)
	case f.Near >= f.Bits:
		return fmt.Errorf("snapshot: field %q: near width %d is not below its width %d", f.Name, f.Near, f.Bits)
	}
	full := uint32(1<<f.Bits - 1)
	if f.Max == 0 {
		f.Max = full
	}
	if f.Max > full {
		return fmt.Errorf("snapshot: field %q: max %d does not fit %d bits", f.Name, f.Max, f.Bits)
	}
	t.ops = append(t.ops, op{field: int32(len(t.fields)), bits: f.Bits, near: f.Near, max: f.Max})
	t.fields = append(t.fields, f)
	// Worst case: changed-bit, near flag, full value.
	t.maxBits += 1 + int(f.Bits)
	if f.Near > 0 {
		t.maxBits++
	}
	return nil
}

func (g group[S]) flatten(t *fieldTable[S], prefix string) error {
	if len(g.Entries) == 0 {
		return fmt.Errorf("snapshot: group %q is empty", prefix+g.Name)
	}
	if t.depth == maxDepth {
		return fmt.Errorf("snapshot: group %q nests deeper than %d", prefix+g.Name, maxDepth)
	}
	t.depth++
	defer func() { t.depth-- }()
	at := len(t.ops)
	t.ops = append(t.ops, op{group: true, lo: int32(len(t.fields))})
	t.maxBits++
	for _, e := range g.Entries {
		if err := e.flatten(t, prefix+g.Name); err != nil {
			return err
		}
	}
	t.ops[at].hi = int32(len(t.fields))
	t.ops[at].next = int32(len(t.ops))
	return nil
}

// numFields is the number of fields: the length of a snapshot's value vector.
func (t *fieldTable[S]) numFields() int { return len(t.fields) }

// Field returns the i-th field in wire order.
func (t *fieldTable[S]) Field(i int) field[S] { return t.fields[i] }

// maxLen is the longest payload the table can produce in bytes, without
// the update header: every group and field changed, every value in full.
func (t *fieldTable[S]) maxLen() int { return (t.maxBits + 7) / 8 }

// load copies a state into a value vector ("the master state is copied
// into the receiver's next slot", Q2), saturating each value at its Max.
func (t *fieldTable[S]) load(s *S, v []uint32) {
	for i := range t.fields {
		f := &t.fields[i]
		v[i] = min(f.Get(s), f.Max)
	}
}

// store writes a value vector back into a state.
func (t *fieldTable[S]) store(v []uint32, s *S) {
	for i := range t.fields {
		t.fields[i].Set(s, v[i])
	}
}

// encode writes cur as a delta against base (Q3): per group a changed-bit,
// and inside a changed group per field a changed-bit followed, when set,
// by the value. The all-zero base makes the same walk a full update (Q2).
func (t *fieldTable[S]) encode(w *bitWriter, base, cur []uint32) {
	for i := 0; i < len(t.ops); {
		o := &t.ops[i]
		if o.group {
			if slices.Equal(base[o.lo:o.hi], cur[o.lo:o.hi]) {
				w.write(0, 1)
				i = int(o.next)
				continue
			}
			w.write(1, 1)
			i++
			continue
		}
		b, c := base[o.field], cur[o.field]
		i++
		if b == c {
			w.write(0, 1)
			continue
		}
		w.write(1, 1)
		if o.near > 0 {
			if zz := zigzag(int64(c) - int64(b)); zz-1 < 1<<o.near {
				w.write(1, 1)
				w.write(uint32(zz-1), uint(o.near))
				continue
			}
			w.write(0, 1)
		}
		w.write(c, uint(o.bits))
	}
}

// decode reads a delta written by encode and applies it to base, leaving
// the result in out (full length). base may be shorter: a held slot's used
// prefix, read as zero past its end (slots), so it needs no copy of its
// own. decode accepts only what encode writes — a set changed-bit with an
// unchanged value, a full value that would have fit the near form, a
// value above Max, or a changed group with no change in it is an error —
// so every update has exactly one encoding.
func (t *fieldTable[S]) decode(r *bitReader, base, out []uint32) error {
	copy(out, base)
	clear(out[min(len(base), len(out)):])
	// out now holds the whole base, and each field is read before it is
	// written. A set changed-bit always changes its field (the checks
	// below), so a group changed nothing exactly when no field inside it
	// was marked: counting marks is the group check.
	type openGroup struct {
		op      int32
		changes int // marked fields when the group opened
	}
	var groups [maxDepth]openGroup // open groups whose change is still to be seen
	open, changes := 0, 0
	for i := 0; i < len(t.ops); {
		o := &t.ops[i]
		// Close any group whose range ends here.
		for open > 0 && int32(i) == t.ops[groups[open-1].op].next {
			if g := groups[open-1]; g.changes == changes {
				return fmt.Errorf("snapshot: group at field %d marked changed but nothing changed", t.ops[g.op].lo)
			}
			open--
		}
		changed, err := r.bit()
		if err != nil {
			return err
		}
		if o.group {
			if !changed {
				i = int(o.next)
				continue
			}
			groups[open] = openGroup{int32(i), changes}
			open++
			i++
			continue
		}
		i++
		if !changed {
			continue
		}
		changes++
		b := out[o.field]
		var v uint32
		near := false
		if o.near > 0 {
			if near, err = r.bit(); err != nil {
				return err
			}
		}
		if near {
			zz, err := r.read(uint(o.near))
			if err != nil {
				return err
			}
			n := int64(b) + unzigzag(uint64(zz)+1)
			if n < 0 || n > int64(o.max) {
				return fmt.Errorf("snapshot: field %q: difference leaves the range", t.fields[o.field].Name)
			}
			v = uint32(n)
		} else {
			if v, err = r.read(uint(o.bits)); err != nil {
				return err
			}
			if v == b {
				return fmt.Errorf("snapshot: field %q marked changed but unchanged", t.fields[o.field].Name)
			}
			if v > o.max {
				return fmt.Errorf("snapshot: field %q: %d is above its max %d", t.fields[o.field].Name, v, o.max)
			}
			if o.near > 0 && zigzag(int64(v)-int64(b))-1 < 1<<o.near {
				return fmt.Errorf("snapshot: field %q written in full but fits the near form", t.fields[o.field].Name)
			}
		}
		out[o.field] = v
	}
	for ; open > 0; open-- {
		if g := groups[open-1]; g.changes == changes {
			return fmt.Errorf("snapshot: group at field %d marked changed but nothing changed", t.ops[g.op].lo)
		}
	}
	return nil
}

// zigzag maps 0, −1, 1, −2, … to 0, 1, 2, 3, … so small differences of
// either sign become small unsigned numbers.
func zigzag(d int64) uint64 { return uint64(d<<1) ^ uint64(d>>63) }

func unzigzag(z uint64) int64 { return int64(z>>1) ^ -int64(z&1) }
