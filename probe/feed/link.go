package feed

import "time"

// LinkState is what a link's round-trip estimate is worth (T4), or Bad
// while a packet has outlived the connection timeout (T11). Its values are
// netcore's own link states (the engine converts one to the other); its
// String is the NDJSON name ("measured", "bad", …).
type LinkState uint8

// The link states a View shows.
const (
	LinkUnmeasured LinkState = iota
	LinkProvisional
	LinkMeasured
	LinkBad
)

func (s LinkState) String() string {
	switch s {
	case LinkUnmeasured:
		return "unmeasured"
	case LinkProvisional:
		return "provisional"
	case LinkMeasured:
		return "measured"
	case LinkBad:
		return "bad"
	}
	return "invalid"
}

// Link is one directed private link From → To in the View's units: times
// are durations, counts are counts. A value that is not known yet carries
// a false flag beside it and reads zero; readers check the flag, never the
// zero (L3). The NDJSON sink turns it into a LinkStat (Stat).
type Link struct {
	From, To string
	State    LinkState

	// RTTKnown: the link has a round-trip estimate (its first ack came
	// back, T4); until then SRTT and RTTVAR are unknown.
	RTTKnown     bool
	SRTT, RTTVAR time.Duration
	// RTO and ConnTimeout are always known: fixed values until the link
	// is measured (T9).
	RTO, ConnTimeout time.Duration

	// LossKnown: this end's counts are known (always for this machine's
	// own links; a telemetry row may leave them out).
	LossKnown                              bool
	Sent, Retransmitted, Expected, Missing uint64
	// PeerKnown: the peer has sent its half (L4).
	PeerKnown                 bool
	PeerExpected, PeerMissing uint64

	// Relayed: the pair's datagrams go through the host (no direct
	// path); the round trip is then the relayed path's.
	Relayed bool
}
