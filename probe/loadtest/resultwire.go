package loadtest

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// A finished test's result on the wire: the tester hands it to every
// machine of the session, which publishes the same `load` line
// (docs/load-test.md, "The result for all"). ResultLen bytes, fixed:
//
//	0  flags: which parts are present (resultUpload … resultCost)
//	1  idle round trip (4)
//	5  upload: added (4), p90 (4), mbps (4), loss (4), grade (1), capped (1)
//	23 download: the same
//	41 both: added (4), p90 (4), loss (4)
//	53 where: link (1), ttl (1), added (4)
//	59 cost: frames late (4), longest wait (4), rung from (1), rung to (1), for (4)
//	73 stopped (1)
//	74 cap (8)
//
// Round trips and rates are tenths (of a ms, of a Mbit/s), a loss ten
// thousandths, `for` whole ms: the result's own rounding, so a result
// decodes to what was encoded. A figure not known is 0xffffffff; a part
// not present is all zeros. Integers are little-endian.

// ResultLen is the length of an encoded result.
const ResultLen = 82

// Which parts of a result are present (the flags byte).
const (
	resultUpload byte = 1 << iota
	resultDownload
	resultBoth
	resultWhere
	resultCost
	resultParts = resultUpload | resultDownload | resultBoth | resultWhere | resultCost
)

const (
	noValue  = math.MaxUint32 // a figure not known
	dirLen   = 18
	bothLen  = 12
	whereLen = 6
	costLen  = 14
)

var (
	errResultLen   = errors.New("loadtest: result of the wrong length")
	errResultField = errors.New("loadtest: result field out of range")
)

// gradeCodes are the grades on the wire, from 1; 0 is no grade.
var gradeCodes = [...]string{"A+", "A", "B", "C", "D", gradeF}

// AppendResult appends r, encoded, to b. A figure too large for its field
// is written as the field's largest value.
func AppendResult(b []byte, r Result) []byte {
	var flags byte
	for i, on := range []bool{r.Upload != nil, r.Download != nil, r.Both != nil, r.Where != nil, r.Cost != nil} {
		if on {
			flags |= 1 << i
		}
	}
	b = append(b, flags)
	b = appendFig(b, r.IdleRTTMS, 10)
	for _, d := range []*DirResult{r.Upload, r.Download} {
		if d == nil {
			b = append(b, make([]byte, dirLen)...)
			continue
		}
		b = appendFig(b, d.AddedMS, 10)
		b = appendFig(b, d.P90AddedMS, 10)
		b = appendFig(b, d.Mbps, 10)
		b = appendFig(b, d.Loss, 1e4)
		g := byte(0)
		for i, x := range gradeCodes {
			if d.Grade != nil && *d.Grade == x {
				g = byte(i + 1)
			}
		}
		c := byte(0)
		if d.Capped {
			c = 1
		}
		b = append(b, g, c)
	}
	if x := r.Both; x != nil {
		b = appendFig(b, x.AddedMS, 10)
		b = appendFig(b, x.P90AddedMS, 10)
		b = appendFig(b, x.Loss, 1e4)
	} else {
		b = append(b, make([]byte, bothLen)...)
	}
	if w := r.Where; w != nil {
		b = append(b, w.Link.Code(), byte(min(max(w.TTL, 0), 255)))
		b = appendFig(b, &w.AddedMS, 10)
	} else {
		b = append(b, make([]byte, whereLen)...)
	}
	if c := r.Cost; c != nil {
		b = binary.LittleEndian.AppendUint32(b, uint32(min(max(c.FramesLate, 0), noValue-1)))
		b = appendFig(b, &c.MaxWaitMS, 10)
		b = append(b, byte(min(max(c.RungFrom, 0), 255)), byte(min(max(c.RungTo, 0), 255)))
		b = appendFig(b, &c.ForMS, 1)
	} else {
		b = append(b, make([]byte, costLen)...)
	}
	stop := byte(0)
	for i, x := range reasonText {
		if i > 0 && r.Stopped != nil && *r.Stopped == x {
			stop = byte(i)
		}
	}
	b = append(b, stop)
	return binary.LittleEndian.AppendUint64(b, uint64(max(r.Cap, 0)))
}

// appendFig appends a figure in units of 1/scale, noValue for nil.
func appendFig(b []byte, v *float64, scale float64) []byte {
	u := uint32(noValue)
	if v != nil {
		u = uint32(min(max(math.Round(*v*scale), 0), noValue-1))
	}
	return binary.LittleEndian.AppendUint32(b, u)
}

// DecodeResult reads an encoded result: it refuses a length other than
// ResultLen, an unknown flag, grade, link or stop reason, a part not
// present that is not all zeros, a loss above 1 and a rung or hop of 0.
func DecodeResult(b []byte) (Result, error) {
	var r Result
	if len(b) != ResultLen {
		return r, errResultLen
	}
	flags := b[0]
	if flags&^resultParts != 0 {
		return r, errResultField
	}
	le := binary.LittleEndian
	fig := func(off int, scale float64) *float64 {
		u := le.Uint32(b[off:])
		if u == noValue {
			return nil
		}
		v := float64(u) / scale
		return &v
	}
	zero := func(part []byte) bool {
		for _, x := range part {
			if x != 0 {
				return false
			}
		}
		return true
	}
	r.IdleRTTMS = fig(1, 10)
	for i, dst := range []**DirResult{&r.Upload, &r.Download} {
		off := 5 + i*dirLen
		if flags&(resultUpload<<i) == 0 {
			if !zero(b[off : off+dirLen]) {
				return Result{}, errResultField
			}
			continue
		}
		d := &DirResult{AddedMS: fig(off, 10), P90AddedMS: fig(off+4, 10), Mbps: fig(off+8, 10), Loss: fig(off+12, 1e4)}
		if u := le.Uint32(b[off:]); u != noValue {
			d.Added, d.HasAdded = units.FromTenthMillis(int64(u)), true
		}
		switch g := b[off+16]; {
		case int(g) > len(gradeCodes):
			return Result{}, errResultField
		case g > 0:
			grade := gradeCodes[g-1]
			d.Grade = &grade
		}
		if b[off+17] > 1 {
			return Result{}, errResultField
		}
		d.Capped = b[off+17] == 1
		*dst = d
	}
	const bothOff, whereOff, costOff, stopOff = 41, 53, 59, 73
	if flags&resultBoth != 0 {
		r.Both = &BothResult{AddedMS: fig(bothOff, 10), P90AddedMS: fig(bothOff+4, 10), Loss: fig(bothOff+8, 1e4)}
	} else if !zero(b[bothOff : bothOff+bothLen]) {
		return Result{}, errResultField
	}
	if flags&resultWhere != 0 {
		link, ok := vocab.HopLinkOf(b[whereOff])
		added := fig(whereOff+2, 10)
		if !ok || b[whereOff+1] == 0 || added == nil {
			return Result{}, errResultField
		}
		r.Where = &WhereAt{Link: link, TTL: int(b[whereOff+1]), AddedMS: *added}
	} else if !zero(b[whereOff : whereOff+whereLen]) {
		return Result{}, errResultField
	}
	if flags&resultCost != 0 {
		frames := le.Uint32(b[costOff:])
		wait, held := fig(costOff+4, 10), fig(costOff+10, 1)
		if frames == noValue || wait == nil || held == nil || b[costOff+8] == 0 || b[costOff+9] == 0 {
			return Result{}, errResultField
		}
		r.Cost = &GameCost{FramesLate: int(frames), MaxWaitMS: *wait, RungFrom: int(b[costOff+8]), RungTo: int(b[costOff+9]), ForMS: *held}
	} else if !zero(b[costOff : costOff+costLen]) {
		return Result{}, errResultField
	}
	if s := b[stopOff]; s > 0 {
		if s >= byte(numReasons) {
			return Result{}, errResultField
		}
		why := reasonText[s]
		r.Stopped = &why
	}
	c := le.Uint64(b[stopOff+1:])
	if c > math.MaxInt64 {
		return Result{}, errResultField
	}
	r.Cap = int64(c)
	if err := r.check(); err != nil {
		return Result{}, err
	}
	return r, nil
}
