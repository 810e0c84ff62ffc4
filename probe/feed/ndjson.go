package feed

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/lagscope/lagscope/units"
)

// NDJSONWriter is the `--json` sink: every event of every update as one JSON
// object per line (docs/cli.md), flushed after each update so a reader
// sees lines as they happen. It writes events only; Views are for screens.
type NDJSONWriter struct {
	w   *bufio.Writer
	err error
}

// NewNDJSONWriter writes to w.
func NewNDJSONWriter(w io.Writer) *NDJSONWriter {
	return &NDJSONWriter{w: bufio.NewWriterSize(w, 32<<10)}
}

// Write writes u's events. After the first error it writes nothing more
// and keeps returning that error.
func (n *NDJSONWriter) Write(u Update) error {
	if n.err != nil {
		return n.err
	}
	for _, e := range u.Events {
		if err := n.writeEvent(e); err != nil {
			return err
		}
	}
	if err := n.w.Flush(); err != nil && n.err == nil {
		n.err = err
	}
	return n.err
}

// writeEvent writes one event without flushing.
func (n *NDJSONWriter) writeEvent(e Event) error {
	if n.err != nil {
		return n.err
	}
	if t := Head(e).Type; !Registered(t) {
		n.err = fmt.Errorf("feed: event type %q is not in the registry", t)
		return n.err
	}
	b, err := json.Marshal(e)
	if err != nil {
		n.err = err
		return err
	}
	b = append(b, '\n')
	if _, err := n.w.Write(b); err != nil {
		n.err = err
	}
	return n.err
}

// Flush writes out what is buffered.
func (n *NDJSONWriter) Flush() error {
	if n.err != nil {
		return n.err
	}
	n.err = n.w.Flush()
	return n.err
}

func msp(d time.Duration) *float64 { v := units.Millis(d); return &v }

func u64p(v uint64) *uint64 { return &v }

// Stat is the link as the NDJSON link object: milliseconds, and null for
// what is unknown (L3, L4).
func (l Link) Stat() LinkStat {
	ls := LinkStat{From: l.From, To: l.To, State: l.State.String(), RTOMs: msp(l.RTO), ConnTimeoutMs: msp(l.ConnTimeout),
		Path: PathDirect}
	if l.Relayed {
		ls.Path = PathRelayed
	}
	if l.RTTKnown {
		ls.SRTTMs, ls.RTTVARMs = msp(l.SRTT), msp(l.RTTVAR)
	}
	if l.LossKnown {
		ls.Sent, ls.Retransmitted, ls.Expected, ls.Missing = u64p(l.Sent), u64p(l.Retransmitted), u64p(l.Expected), u64p(l.Missing)
	}
	if l.PeerKnown {
		ls.PeerExpected, ls.PeerMissing = u64p(l.PeerExpected), u64p(l.PeerMissing)
	}
	return ls
}

// ErrLinkStat: an NDJSON link object that is not one a peer writes.
var ErrLinkStat = errors.New("probe: malformed link object")

// Link reads an NDJSON link object back (a recording, a replay). Unknown
// states, half-known pairs and times that are not finite are errors:
// outside bytes never become a View they could not have come from.
func (ls LinkStat) Link() (Link, error) {
	l := Link{From: ls.From, To: ls.To}
	st, ok := parseState(ls.State)
	if !ok {
		return Link{}, fmt.Errorf("%w: state %q", ErrLinkStat, ls.State)
	}
	l.State = st
	switch ls.Path {
	case PathRelayed:
		l.Relayed = true
	case "", PathDirect: // recordings older than relaying have no path
	default:
		return Link{}, fmt.Errorf("%w: path %q", ErrLinkStat, ls.Path)
	}
	dur := func(p *float64) (time.Duration, bool) {
		if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) || math.Abs(*p) > maxMs {
			return 0, false
		}
		return units.FromMillis(*p), true
	}
	var ok1, ok2 bool
	if l.RTO, ok1 = dur(ls.RTOMs); !ok1 {
		return Link{}, fmt.Errorf("%w: rto_ms", ErrLinkStat)
	}
	if l.ConnTimeout, ok1 = dur(ls.ConnTimeoutMs); !ok1 {
		return Link{}, fmt.Errorf("%w: conn_timeout_ms", ErrLinkStat)
	}
	if ls.SRTTMs != nil || ls.RTTVARMs != nil {
		if l.SRTT, ok1 = dur(ls.SRTTMs); !ok1 {
			return Link{}, fmt.Errorf("%w: srtt_ms", ErrLinkStat)
		}
		if l.RTTVAR, ok2 = dur(ls.RTTVARMs); !ok2 {
			return Link{}, fmt.Errorf("%w: rttvar_ms", ErrLinkStat)
		}
		l.RTTKnown = true
	}
	switch n := count(ls.Sent, ls.Retransmitted, ls.Expected, ls.Missing); n {
	case 4:
		l.LossKnown = true
		l.Sent, l.Retransmitted, l.Expected, l.Missing = *ls.Sent, *ls.Retransmitted, *ls.Expected, *ls.Missing
	case 0:
	default:
		return Link{}, fmt.Errorf("%w: loss counts half known", ErrLinkStat)
	}
	switch n := count(ls.PeerExpected, ls.PeerMissing); n {
	case 2:
		l.PeerKnown = true
		l.PeerExpected, l.PeerMissing = *ls.PeerExpected, *ls.PeerMissing
	case 0:
	default:
		return Link{}, fmt.Errorf("%w: peer counts half known", ErrLinkStat)
	}
	return l, nil
}

// maxMs bounds a time read back: a day, far beyond any timeout (T10).
const maxMs = 24 * 60 * 60 * 1000

func count(ps ...*uint64) int {
	n := 0
	for _, p := range ps {
		if p != nil {
			n++
		}
	}
	return n
}

func parseState(s string) (LinkState, bool) {
	for _, st := range []LinkState{LinkUnmeasured, LinkProvisional, LinkMeasured, LinkBad} {
		if st.String() == s {
			return st, true
		}
	}
	return 0, false
}
