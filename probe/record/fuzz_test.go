package record

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReader: the reader never panics on outside bytes; it returns records,
// a clean end or a StopError, and what it returns re-reads identically.
func FuzzReader(f *testing.F) {
	b, _ := sample(f)
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte{})
	f.Add(appendLine(nil, KindHeader, []byte(`{"magic":"lagscope-recording","format":1,"protocol":1}`)))
	f.Add(append(appendLine(nil, KindHeader, []byte(`{"magic":"lagscope-recording","format":1}`)),
		appendLine(nil, KindView, []byte(`{"at_ns":1,"view":{"Links":[{"srtt_ms":null}]}}`))...))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd, err := NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		n := 0
		for {
			r, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var se *StopError
				if !errors.As(err, &se) {
					t.Fatalf("error %v is not a StopError", err)
				}
				if se.Offset > int64(len(data)) {
					t.Fatalf("stop offset %d past the end %d", se.Offset, len(data))
				}
				break
			}
			if r.Offset >= int64(len(data)) {
				t.Fatalf("record offset %d past the end", r.Offset)
			}
			n++
		}
		// Whatever was read is a prefix that reads the same and cleanly.
		rec, err := ReadAll(bytes.NewReader(data[:rd.Offset()]))
		if err != nil || rec.Stop != nil || len(rec.Records) != n {
			t.Fatalf("prefix of %d bytes: %v %v, %d records, want %d", rd.Offset(), err, rec.Stop, len(rec.Records), n)
		}
	})
}
