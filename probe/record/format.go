package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// format is the version of the recording layout this package writes. A
// reader refuses a newer one rather than guess at it.
const format = 1

// magic is the header's "magic" value: a file whose first record does not
// carry it is not a recording.
const magic = "lagscope-recording"

// maxRecord bounds one record (one line), so a damaged or hostile file
// cannot make a reader allocate without limit. A View of 64 machines is a
// few tens of KiB; a megabyte leaves room without being a risk.
const maxRecord = 1 << 20

// Kind says what a record holds. Kinds are letters so a person can read a
// recording with grep; a kind keeps its letter for ever (S19's rule for
// event IDs, applied to records).
type Kind byte

const (
	kindHeader  Kind = 'H' // the first record: format, protocol version (S19)
	KindEvent   Kind = 'E' // one published event, as its NDJSON object
	KindView    Kind = 'V' // a machine's picture, once a second (link lines)
	KindCommand Kind = 'C' // an executed command with its send frame (S13)
)

func (k Kind) String() string {
	switch k {
	case kindHeader:
		return "header"
	case KindEvent:
		return "event"
	case KindView:
		return "view"
	case KindCommand:
		return "command"
	}
	return fmt.Sprintf("kind %q", byte(k))
}

// Header is the first record of every recording.
type Header struct {
	Magic    string `json:"magic"`
	Format   int    `json:"format"`
	Protocol int    `json:"protocol"` // feed.ProtocolVersion of the writer (S19)
	// Program is the command that wrote it, e.g. "lagscope sim".
	Program string `json:"program,omitempty"`
	Session string `json:"session,omitempty"`
	// Self is the recording machine of a live session; empty for a
	// simulation, which records every machine.
	Self string `json:"self,omitempty"`
	// Started is the wall-clock time of t=0 for a live session (RFC 3339);
	// empty for a simulation, whose times are virtual.
	Started string `json:"started,omitempty"`
	Virtual bool   `json:"virtual,omitempty"`
}

// Command is an executed command (S13): Player issued it, it ran on
// SendFrame, with that send frame's commands, and is still tagged with the
// frame it was scheduled for (Frame; equal to SendFrame unless a timing
// change moved it). The record's From is the machine that executed it.
type Command struct {
	Player    string `json:"player"`
	SendFrame int    `json:"send_frame"`
	Frame     int    `json:"frame"`
	Seq       uint32 `json:"seq"`
	Type      uint8  `json:"type"` // the event ID (probe.Cmd*, S19)
	Payload   []byte `json:"payload,omitempty"`
}

// CommandOf is the record of command c, issued by player and executed on
// sendFrame (probe.Config.OnCommand's arguments); the payload is copied.
func CommandOf(player string, sendFrame int, c feed.Command) Command {
	return Command{Player: player, SendFrame: sendFrame, Frame: int(c.Tag), Seq: c.Seq, Type: c.Type, Payload: append([]byte(nil), c.Payload...)}
}

// Moved says whether the command ran on a later send frame than the frame
// it was scheduled for, because a timing change made that frame no longer
// a send frame (S13).
func (c Command) Moved() bool { return c.SendFrame != c.Frame }

// Record is one decoded record.
type Record struct {
	Kind   Kind
	Offset int64         // byte offset of the record's line in the file
	At     time.Duration // since the session's t=0 (virtual for a simulation)
	From   string        // the machine that published (events, views) or executed (commands) it

	Header *Header // kindHeader
	// Raw is the event's NDJSON object byte for byte as recorded (KindEvent);
	// Event is it decoded, or nil for a type this build does not know.
	Raw     json.RawMessage
	Event   feed.Event
	View    *feed.View // KindView
	Command *Command   // KindCommand
}

// envelope is the JSON of every record but the header.
type envelope struct {
	AtNs    int64           `json:"at_ns"`
	From    string          `json:"from,omitempty"`
	Event   json.RawMessage `json:"event,omitempty"`
	View    *viewRecord     `json:"view,omitempty"`
	Command *Command        `json:"command,omitempty"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendLine appends one complete record line for kind and body.
func appendLine(dst []byte, kind Kind, body []byte) []byte {
	h := crc32.New(castagnoli)
	h.Write([]byte{byte(kind), ' '})
	h.Write(body)
	dst = fmt.Appendf(dst, "%08x %c ", h.Sum32(), byte(kind))
	dst = append(dst, body...)
	return append(dst, '\n')
}

// Errors a reader stops with. StopError wraps them with the place.
var (
	// ErrTruncated: the file ends inside a record (a cut-off write).
	ErrTruncated = errors.New("record: recording ends inside a record")
	// errCorrupt: a complete line that fails its checksum, does not decode,
	// or holds a value no writer writes (plausible.go).
	errCorrupt = errors.New("record: damaged record")
	// ErrNotRecording: the first record is not a lagscope recording header.
	ErrNotRecording = errors.New("record: not a lagscope recording")
	// ErrVersion: the recording was written in a format this build cannot read.
	ErrVersion = errors.New("record: recording format not supported")
)

// StopError says where and why a reader stopped before the end of the file.
// Every record before Offset was complete and has been returned.
type StopError struct {
	Offset int64 // byte offset of the first record not returned
	Index  int   // its position (0 = header)
	Err    error // ErrTruncated or errCorrupt
	Detail string
}

func (e *StopError) Error() string {
	s := fmt.Sprintf("stopped at byte %d (record %d): %v", e.Offset, e.Index, e.Err)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *StopError) Unwrap() error { return e.Err }
