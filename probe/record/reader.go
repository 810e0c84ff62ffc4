package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"time"
)

// reader reads a recording record by record.
type reader struct {
	r      *bufio.Reader
	header Header
	off    int64 // offset of the next record
	index  int   // index of the next record
	stop   error // sticky once the reader has stopped
	line   []byte
}

// newReader reads and checks the header. A file that is not a recording, or
// is one in a newer format or of another protocol version (S19; the error
// wraps ErrVersion), is refused; a file cut off inside its header is a
// StopError wrapping ErrTruncated. A file with no line end at all is cut
// short only when what it holds is the start of a header: a few bytes of
// anything else (a binary file without a newline byte) are not a recording.
func newReader(r io.Reader) (*reader, error) {
	rd := &reader{r: bufio.NewReaderSize(r, 64<<10)}
	kind, body, err := rd.readLine()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty file", ErrNotRecording)
		}
		var se *StopError
		if errors.As(err, &se) && errors.Is(se.Err, errCorrupt) {
			return nil, fmt.Errorf("%w: %v", ErrNotRecording, err)
		}
		if errors.As(err, &se) && errors.Is(se.Err, ErrTruncated) && !headerStart(rd.line) {
			return nil, fmt.Errorf("%w: no line is a record", ErrNotRecording)
		}
		return nil, err
	}
	if kind != kindHeader {
		return nil, fmt.Errorf("%w: first record is a %v", ErrNotRecording, kind)
	}
	if err := json.Unmarshal(body, &rd.header); err != nil || rd.header.Magic != magic {
		return nil, fmt.Errorf("%w: bad header", ErrNotRecording)
	}
	if rd.header.Format < 1 || rd.header.Format > format {
		return nil, fmt.Errorf("%w: format %d (this build reads 1 to %d)", ErrVersion, rd.header.Format, format)
	}
	if err := checkHeader(&rd.header); err != nil {
		return nil, err
	}
	rd.advance()
	return rd, nil
}

// headerStart says whether l could be the first bytes of a header line as
// the writer writes it: eight lowercase hex digits, " H ", and a JSON
// object whose first member is the magic, as far as l goes.
func headerStart(l []byte) bool {
	const after = ` H {"magic":"` + magic + `"`
	for i, c := range l {
		switch {
		case i < 8:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		case i-8 < len(after):
			if c != after[i-8] {
				return false
			}
		default:
			return true
		}
	}
	return true
}

// Header is the recording's header.
func (r *reader) Header() Header { return r.header }

// Offset is the byte offset of the next record to read.
func (r *reader) Offset() int64 { return r.off }

func (r *reader) advance() {
	r.off += int64(len(r.line))
	r.index++
}

// Next returns the next record. At a clean end it returns io.EOF; when the
// file ends inside a record or a record is damaged it returns a *StopError
// naming the place, and every record before it has been returned. A record
// with a good checksum but an impossible value (a time past maxAt, a
// timing no session runs at, a name that is not a name: plausible.go) is
// damaged too: it is reported, never returned.
func (r *reader) Next() (Record, error) {
	if r.stop != nil {
		return Record{}, r.stop
	}
	kind, body, err := r.readLine()
	if err != nil {
		r.stop = err
		return Record{}, err
	}
	rec := Record{Kind: kind, Offset: r.off}
	if err := decodeBody(&rec, body); err != nil {
		r.stop = r.stopped(errCorrupt, fmt.Sprintf("%v record: %v", kind, err))
		return Record{}, r.stop
	}
	r.advance()
	return rec, nil
}

func decodeBody(rec *Record, body []byte) error {
	if rec.Kind == kindHeader {
		return errors.New("a second header")
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return err
	}
	rec.At, rec.From = time.Duration(env.AtNs), env.From
	switch rec.Kind {
	case KindEvent:
		if len(env.Event) == 0 {
			return errors.New("no event")
		}
		e, err := decodeEvent(env.Event)
		if err != nil {
			return err
		}
		rec.Raw, rec.Event = env.Event, e
	case KindView:
		if env.View == nil {
			return errors.New("no view")
		}
		view, err := env.View.view()
		if err != nil {
			return err
		}
		rec.View = view
	case KindCommand:
		if env.Command == nil {
			return errors.New("no command")
		}
		rec.Command = env.Command
	}
	// Another kind with a good checksum comes from a newer writer: its
	// time and machine are kept (and checked), its content skipped.
	return checkRecord(rec)
}

func (r *reader) stopped(err error, detail string) *StopError {
	return &StopError{Offset: r.off, Index: r.index, Err: err, Detail: detail}
}

// readLine reads one whole line and checks its frame and checksum.
func (r *reader) readLine() (Kind, []byte, error) {
	r.line = r.line[:0]
	for {
		chunk, err := r.r.ReadSlice('\n')
		r.line = append(r.line, chunk...)
		if len(r.line) > maxRecord {
			return 0, nil, r.stopped(errCorrupt, fmt.Sprintf("record longer than %d bytes", maxRecord))
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			if len(r.line) == 0 {
				return 0, nil, io.EOF
			}
			return 0, nil, r.stopped(ErrTruncated, fmt.Sprintf("%d bytes of an unfinished record", len(r.line)))
		}
		return 0, nil, err
	}
	l := r.line
	// "xxxxxxxx K {...}\n": 8 hex digits, space, kind, space, body, newline.
	if len(l) < 13 || l[8] != ' ' || l[10] != ' ' {
		return 0, nil, r.stopped(errCorrupt, "not a record line")
	}
	var want uint32
	for _, c := range l[:8] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		default:
			return 0, nil, r.stopped(errCorrupt, "bad checksum digits")
		}
		want = want<<4 | uint32(d)
	}
	if got := crc32.Checksum(l[9:len(l)-1], castagnoli); got != want {
		return 0, nil, r.stopped(errCorrupt, fmt.Sprintf("checksum %08x, want %08x", got, want))
	}
	body := l[11 : len(l)-1]
	if bytes.IndexByte(body, '\n') >= 0 {
		return 0, nil, r.stopped(errCorrupt, "newline inside a record")
	}
	return Kind(l[9]), body, nil
}

// Recording is a whole recording in memory.
type Recording struct {
	Header  Header
	Records []Record
	// Stop is nil when the file ended cleanly, else where and why reading
	// stopped; Records holds everything complete before it.
	Stop *StopError
	Size int64 // bytes of complete records, header included
}

// readAll reads every complete record. It returns an error only when the
// file is not a readable recording at all; a cut-off or damaged tail is
// reported in Recording.Stop.
func readAll(r io.Reader) (*Recording, error) {
	rd, err := newReader(r)
	if err != nil {
		return nil, err
	}
	rec := &Recording{Header: rd.Header()}
	for {
		x, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var se *StopError
			if errors.As(err, &se) {
				rec.Stop = se
				break
			}
			return nil, err
		}
		rec.Records = append(rec.Records, x)
	}
	rec.Size = rd.Offset()
	return rec, nil
}

// Open reads the recording at path.
func Open(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f)
}
