package record

import (
	"bufio"
	"io"
)

// WriteNDJSON writes the recording's NDJSON stream exactly as it was
// printed when it was recorded (`lagscope replay --json`): every event
// line, in order, nothing else.
func (r *Recording) WriteNDJSON(w io.Writer) error {
	out := bufio.NewWriterSize(w, 64<<10)
	for _, rec := range r.Records {
		if rec.Kind != KindEvent {
			continue
		}
		out.Write(rec.Raw)
		out.WriteByte('\n')
	}
	return out.Flush()
}
