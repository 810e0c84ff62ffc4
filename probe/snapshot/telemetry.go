package snapshot

import (
	"fmt"
	"math"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// MaxLinks is how many links one player's telemetry can carry. The table is
// static (Q3), so the slots are fixed; an unused slot costs one bit per
// update. 64 is far above a LAN party's player count.
const MaxLinks = 64

// Field widths of the telemetry, each chosen to cover its range; a value
// beyond a width is sent as the width's largest value (saturated), never
// wrapped, so a counter never appears to go backwards (L5).
const (
	// Round trips in µs: 27 bits reach 134 s, past the default 60 s after
	// which a silent player is dropped, so no live link's estimate
	// saturates in practice.
	rttBits = 27
	// RTO and connection timeout in µs: 25 bits reach 33.5 s, covering
	// the 4 s RTO ceiling (T7, T12) and the 30 s connection timeout
	// ceiling (T9, T10).
	timeoutBits = 25
	// Datagram totals (L1): 32 bits last 49 days at 1000 datagrams a
	// second on one link.
	counterBits = 32
	// Processing time per frame in µs: 24 bits reach 16.7 s a frame.
	processBits = 24
	// A wait in µs: 27 bits reach 134 s.
	waitBits = 27
	// Cumulative waits in ms: 32 bits reach 49 days.
	waitedBits = 32
)

// Near widths: how large a change still travels as a difference. Round
// trips move by an eighth of a sample's error (T3), so ±2 ms covers
// ordinary jitter; RTO and connection timeout move by 4× and 8× that.
// Counters grow by a few datagrams between updates at 10 a second.
const (
	rttNear     = 12 // ±2.048 ms
	timeoutNear = 14 // ±8.192 ms
	counterNear = 8  // ±128
	frameNear   = 8  // ±128 frames
	waitNear    = 12 // ±2.048 ms (µs fields), ±2.048 s (ms fields)
)

// Telemetry is one player's view of its own links, the content of
// issue 7 item 3: what that player knows first-hand and streams to every
// other machine as snapshots. Every value is in wire units, so a state
// that arrives equals the state sent. A value that may be unknown has an
// explicit known flag (L3); zero never means "unknown".
type Telemetry struct {
	Frame uint32 // the player's next frame to execute
	// WaitedMs is the total time the player has waited for others'
	// commands, in ms.
	WaitedMs uint32
	// WaitUs is the longest wait in the last two report intervals (S5),
	// in µs; known once the player has reported.
	WaitUs    uint32
	WaitKnown bool
	// ProcessUs is the average processing time per frame (S5), in µs.
	ProcessUs    uint32
	ProcessKnown bool
	// Count is the number of links in use: Links[:Count].
	Count uint8
	Links [MaxLinks]Link
}

// Link is one private link of the player (T1) as netcore measures it.
type Link struct {
	Peer netcore.PeerID
	// State is Bad while a packet has outlived the connection timeout
	// (T11), otherwise Estimate: Unmeasured, Provisional or Measured (T4).
	State, Estimate netcore.LinkState
	// SRTT and RTTVAR in µs; known exactly when Estimate is not
	// Unmeasured (T3, T4).
	SRTTUs, RTTVARUs uint32
	// RTO and connection timeout in force, in µs (T7, T9, T10): always
	// known, fixed session values while unmeasured.
	RTOUs, ConnTimeoutUs uint32
	// LossKnown says the transport counts the four totals below (L1, L3).
	LossKnown                              bool
	Sent, Retransmitted, Expected, Missing uint32
	// The peer's LinkReport totals, known after its first report (L4).
	PeerKnown                 bool
	PeerExpected, PeerMissing uint32
	// CausedMs is the total time the player waited for this peer's
	// commands, in ms: who makes whom wait.
	CausedMs uint32
}

// Largest value of each kind of field.
const (
	maxRTT     = 1<<rttBits - 1
	maxTimeout = 1<<timeoutBits - 1
	maxProcess = 1<<processBits - 1
	maxWait    = 1<<waitBits - 1
)

var telemetryTable = mustTelemetryTable(true)

// TelemetryTable is the field table of Telemetry (docs/snapshots.md lists
// it bit by bit).
func TelemetryTable() *Table[Telemetry] { return telemetryTable }

// NewTelemetrySender and NewTelemetryReceiver are NewSender and
// NewReceiver for the telemetry table.
func NewTelemetrySender() *Sender[Telemetry] { return NewSender(telemetryTable) }

func NewTelemetryReceiver() *Receiver[Telemetry] { return NewReceiver(telemetryTable) }

func boolBit(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// telemetryFields builds the table; near false gives every field the plain
// Q3 form, so tests and benchmarks can measure what the near form saves.
func telemetryFields(near bool) []Entry[Telemetry] {
	nw := func(n uint8) uint8 {
		if near {
			return n
		}
		return 0
	}
	type T = Telemetry
	es := []Entry[T]{
		Field[T]{Name: "frame", Bits: 32, Near: nw(frameNear),
			Get: func(t *T) uint32 { return t.Frame }, Set: func(t *T, v uint32) { t.Frame = v }},
		Field[T]{Name: "waited_ms", Bits: waitedBits, Near: nw(waitNear),
			Get: func(t *T) uint32 { return t.WaitedMs }, Set: func(t *T, v uint32) { t.WaitedMs = v }},
		Field[T]{Name: "wait_known", Bits: 1,
			Get: func(t *T) uint32 { return boolBit(t.WaitKnown) }, Set: func(t *T, v uint32) { t.WaitKnown = v == 1 }},
		Field[T]{Name: "wait_us", Bits: waitBits, Near: nw(waitNear),
			Get: func(t *T) uint32 { return t.WaitUs }, Set: func(t *T, v uint32) { t.WaitUs = v }},
		Field[T]{Name: "process_known", Bits: 1,
			Get: func(t *T) uint32 { return boolBit(t.ProcessKnown) }, Set: func(t *T, v uint32) { t.ProcessKnown = v == 1 }},
		Field[T]{Name: "process_us", Bits: processBits, Near: nw(waitNear),
			Get: func(t *T) uint32 { return t.ProcessUs }, Set: func(t *T, v uint32) { t.ProcessUs = v }},
		Field[T]{Name: "count", Bits: 7, Max: MaxLinks,
			Get: func(t *T) uint32 { return uint32(t.Count) }, Set: func(t *T, v uint32) { t.Count = uint8(v) }},
	}
	for i := range MaxLinks {
		// Each slot: one group, so an unchanged or unused link costs one
		// bit; inside it the timing and the loss fields each form a group,
		// because counters grow on every update while round trips change
		// only on a clean sample.
		l := func(t *T) *Link { return &t.Links[i] }
		timing := Group[T]{Entries: []Entry[T]{
			Field[T]{Name: "state", Bits: 2,
				Get: func(t *T) uint32 { return uint32(l(t).State) }, Set: func(t *T, v uint32) { l(t).State = netcore.LinkState(v) }},
			Field[T]{Name: "estimate", Bits: 2,
				Get: func(t *T) uint32 { return uint32(l(t).Estimate) }, Set: func(t *T, v uint32) { l(t).Estimate = netcore.LinkState(v) }},
			Field[T]{Name: "srtt_us", Bits: rttBits, Near: nw(rttNear),
				Get: func(t *T) uint32 { return l(t).SRTTUs }, Set: func(t *T, v uint32) { l(t).SRTTUs = v }},
			Field[T]{Name: "rttvar_us", Bits: rttBits, Near: nw(rttNear),
				Get: func(t *T) uint32 { return l(t).RTTVARUs }, Set: func(t *T, v uint32) { l(t).RTTVARUs = v }},
			Field[T]{Name: "rto_us", Bits: timeoutBits, Near: nw(timeoutNear),
				Get: func(t *T) uint32 { return l(t).RTOUs }, Set: func(t *T, v uint32) { l(t).RTOUs = v }},
			Field[T]{Name: "conn_timeout_us", Bits: timeoutBits, Near: nw(timeoutNear),
				Get: func(t *T) uint32 { return l(t).ConnTimeoutUs }, Set: func(t *T, v uint32) { l(t).ConnTimeoutUs = v }},
		}}
		counter := func(name string, p func(*Link) *uint32) Field[T] {
			return Field[T]{Name: name, Bits: counterBits, Near: nw(counterNear),
				Get: func(t *T) uint32 { return *p(l(t)) }, Set: func(t *T, v uint32) { *p(l(t)) = v }}
		}
		loss := Group[T]{Entries: []Entry[T]{
			Field[T]{Name: "loss_known", Bits: 1,
				Get: func(t *T) uint32 { return boolBit(l(t).LossKnown) }, Set: func(t *T, v uint32) { l(t).LossKnown = v == 1 }},
			counter("sent", func(k *Link) *uint32 { return &k.Sent }),
			counter("retransmitted", func(k *Link) *uint32 { return &k.Retransmitted }),
			counter("expected", func(k *Link) *uint32 { return &k.Expected }),
			counter("missing", func(k *Link) *uint32 { return &k.Missing }),
			Field[T]{Name: "peer_known", Bits: 1,
				Get: func(t *T) uint32 { return boolBit(l(t).PeerKnown) }, Set: func(t *T, v uint32) { l(t).PeerKnown = v == 1 }},
			counter("peer_expected", func(k *Link) *uint32 { return &k.PeerExpected }),
			counter("peer_missing", func(k *Link) *uint32 { return &k.PeerMissing }),
		}}
		es = append(es, Group[T]{Name: fmt.Sprintf("links[%d].", i), Entries: []Entry[T]{
			Field[T]{Name: "peer", Bits: 16,
				Get: func(t *T) uint32 { return uint32(l(t).Peer) }, Set: func(t *T, v uint32) { l(t).Peer = netcore.PeerID(v) }},
			timing,
			loss,
			Field[T]{Name: "caused_ms", Bits: waitedBits, Near: nw(waitNear),
				Get: func(t *T) uint32 { return l(t).CausedMs }, Set: func(t *T, v uint32) { l(t).CausedMs = v }},
		}})
	}
	return es
}

func mustTelemetryTable(near bool) *Table[Telemetry] {
	t, err := NewTable(telemetryFields(near)...)
	if err != nil {
		panic(err) // the table is static; its test builds it
	}
	return t
}

// sat converts a duration to whole units, held to [0, limit].
func sat(d, unit time.Duration, limit uint32) uint32 {
	if d <= 0 {
		return 0
	}
	return uint32(min(uint64(d/unit), uint64(limit)))
}

func sat32(v uint64) uint32 { return uint32(min(v, math.MaxUint32)) }

// LinkFrom turns netcore's statistics of one link, and the time the player
// waited for that peer, into a Link, saturating each value at its width.
func LinkFrom(st netcore.LinkStats, caused time.Duration) Link {
	l := Link{
		Peer: st.Peer, State: st.State, Estimate: st.Estimate,
		RTOUs: sat(st.RTO, time.Microsecond, maxTimeout), ConnTimeoutUs: sat(st.ConnTimeout, time.Microsecond, maxTimeout),
		// netcore's transports count every link (L1).
		LossKnown: true,
		Sent:      sat32(st.Loss.Sent), Retransmitted: sat32(st.Loss.Retransmitted),
		Expected: sat32(st.Loss.Expected), Missing: sat32(st.Loss.Missing),
		PeerKnown: st.PeerLoss.Known,
		CausedMs:  sat(caused, time.Millisecond, math.MaxUint32),
	}
	if st.Estimate != netcore.Unmeasured {
		l.SRTTUs = sat(st.SRTT, time.Microsecond, maxRTT)
		l.RTTVARUs = sat(st.RTTVAR, time.Microsecond, maxRTT)
	}
	if st.PeerLoss.Known {
		l.PeerExpected, l.PeerMissing = sat32(st.PeerLoss.Expected), sat32(st.PeerLoss.Missing)
	}
	return l
}

// SetLinks puts links into the table (the first MaxLinks of them) and
// clears the unused slots, so a link that went away costs nothing.
func (t *Telemetry) SetLinks(links []Link) {
	n := copy(t.Links[:], links)
	t.Count = uint8(n)
	clear(t.Links[n:])
}

// SetWaits sets the player's waits and processing time; a nil pointer is
// not known (L3).
func (t *Telemetry) SetWaits(waited time.Duration, wait, process *time.Duration) {
	t.WaitedMs = sat(waited, time.Millisecond, math.MaxUint32)
	t.WaitKnown, t.WaitUs = wait != nil, 0
	if wait != nil {
		t.WaitUs = sat(*wait, time.Microsecond, maxWait)
	}
	t.ProcessKnown, t.ProcessUs = process != nil, 0
	if process != nil {
		t.ProcessUs = sat(*process, time.Microsecond, maxProcess)
	}
}

// Waited is the total time the player has waited for others.
func (t *Telemetry) Waited() time.Duration { return time.Duration(t.WaitedMs) * time.Millisecond }

// Wait is the player's longest recent wait, if known.
func (t *Telemetry) Wait() (time.Duration, bool) {
	return time.Duration(t.WaitUs) * time.Microsecond, t.WaitKnown
}

// Process is the player's average processing time per frame, if known.
func (t *Telemetry) Process() (time.Duration, bool) {
	return time.Duration(t.ProcessUs) * time.Microsecond, t.ProcessKnown
}

// Row is one link of a player's table in the engine's units, for the
// matrix view and `link` lines. It depends on nothing in probe.
type Row struct {
	Peer            netcore.PeerID
	State, Estimate netcore.LinkState
	// SRTT and RTTVAR mean something only when RTTKnown.
	SRTT, RTTVAR     time.Duration
	RTO, ConnTimeout time.Duration
	Loss             netcore.Loss
	LossKnown        bool
	PeerLoss         netcore.PeerLoss // Known false until the peer reports (L4)
	Caused           time.Duration
}

// RTTKnown: the link has an estimate (T4); until then SRTT and RTTVAR are
// "not measured", never 0 (L3).
func (r Row) RTTKnown() bool { return r.Estimate != netcore.Unmeasured }

// LinkStats is the row as netcore.LinkStats (addresses and in-flight
// counts left empty), so code that formats a local link formats a remote
// one the same way.
func (r Row) LinkStats() netcore.LinkStats {
	return netcore.LinkStats{Peer: r.Peer, State: r.State, Estimate: r.Estimate,
		SRTT: r.SRTT, RTTVAR: r.RTTVAR, RTO: r.RTO, ConnTimeout: r.ConnTimeout,
		Loss: r.Loss, PeerLoss: r.PeerLoss, Bad: r.State == netcore.Bad}
}

// Rows appends the links in use to dst and returns it.
func (t *Telemetry) Rows(dst []Row) []Row {
	for i := range min(int(t.Count), MaxLinks) {
		l := &t.Links[i]
		r := Row{Peer: l.Peer, State: l.State, Estimate: l.Estimate,
			RTO: us(l.RTOUs), ConnTimeout: us(l.ConnTimeoutUs),
			LossKnown: l.LossKnown, Caused: time.Duration(l.CausedMs) * time.Millisecond}
		if r.RTTKnown() {
			r.SRTT, r.RTTVAR = us(l.SRTTUs), us(l.RTTVARUs)
		}
		if l.LossKnown {
			r.Loss = netcore.Loss{Sent: uint64(l.Sent), Retransmitted: uint64(l.Retransmitted),
				Expected: uint64(l.Expected), Missing: uint64(l.Missing)}
		}
		if l.PeerKnown {
			r.PeerLoss = netcore.PeerLoss{Expected: uint64(l.PeerExpected), Missing: uint64(l.PeerMissing), Known: true}
		}
		dst = append(dst, r)
	}
	return dst
}

func us(v uint32) time.Duration { return time.Duration(v) * time.Microsecond }
