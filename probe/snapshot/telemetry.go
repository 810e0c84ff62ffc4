package snapshot

import (
	"fmt"
	"math"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/units"
)

// MaxLinks is how many links one player's telemetry can carry. The table is
// static (Q3), so the slots are fixed; an unused slot costs one bit per
// update. 64 is far above a LAN party's player count.
const MaxLinks = 64

// linkBlock is how many slots share a block changed-bit: 8 players fill
// one block and leave seven that cost a bit each.
const linkBlock = 8

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
	rttNear     = 13 // ±4.096 ms
	timeoutNear = 15 // ±16.384 ms
	counterNear = 8  // ±128
	frameNear   = 8  // ±128 frames
	waitNear    = 12 // ±2.048 ms (µs fields), ±2.048 s (ms fields)
)

// Telemetry is one player's view of its own links: what that player knows first-hand and streams to every
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
	// commands, in ms, a wait still going on included: who makes whom
	// wait. WaitedFrames is how many frames it waited on for them.
	CausedMs     uint32
	WaitedFrames uint32
	// UnackedMs is the age of the oldest reliable packet to the peer not
	// acknowledged yet, in ms (0: none in flight), held to unackedMax:
	// while every packet is resent before its ack comes no clean sample
	// arrives, and this is what shows the delay (T2, T13).
	UnackedMs uint32
}

// Largest value of each kind of field.
const (
	maxRTT     = 1<<rttBits - 1
	maxTimeout = 1<<timeoutBits - 1
	maxProcess = 1<<processBits - 1
	maxWait    = 1<<waitBits - 1
	// unackedBits: an oldest unacknowledged packet's age in ms, held to
	// about a minute (the connection timeout is at most 30 s, T10).
	unackedBits = 16
	unackedMax  = 1<<unackedBits - 1
)

// telemetryTable is the field table of Telemetry (docs/snapshots.md lists
// it bit by bit).
var telemetryTable = mustTelemetryTable(true)

// NewTelemetrySender and NewTelemetryReceiver are newSender and
// newReceiver for the telemetry table.
func NewTelemetrySender() *Sender[Telemetry] { return newSender(telemetryTable) }

func NewTelemetryReceiver() *Receiver[Telemetry] { return newReceiver(telemetryTable) }

func boolBit(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// telemetryFields builds the table; near false gives every field the plain
// Q3 form, so tests and benchmarks can measure what the near form saves.
func telemetryFields(near bool) []entry[Telemetry] {
	nw := func(n uint8) uint8 {
		if near {
			return n
		}
		return 0
	}
	type T = Telemetry
	type F = field[T]
	u32 := func(name string, bits, near uint8, p func(*T) *uint32) F {
		return F{Name: name, Bits: bits, Near: nw(near), Get: func(t *T) uint32 { return *p(t) }, Set: func(t *T, v uint32) { *p(t) = v }}
	}
	flag := func(name string, p func(*T) *bool) F {
		return F{Name: name, Bits: 1, Get: func(t *T) uint32 { return boolBit(*p(t)) }, Set: func(t *T, v uint32) { *p(t) = v == 1 }}
	}
	// Fields are grouped by how often they change, so the common update
	// (frame advanced, a few datagrams arrived) pays one bit per group
	// that stayed put rather than one per field.
	es := []entry[T]{
		u32("frame", 32, frameNear, func(t *T) *uint32 { return &t.Frame }),
		group[T]{Entries: []entry[T]{ // changes with a stall or a report (S5)
			u32("waited_ms", waitedBits, waitNear, func(t *T) *uint32 { return &t.WaitedMs }),
			flag("wait_known", func(t *T) *bool { return &t.WaitKnown }),
			u32("wait_us", waitBits, waitNear, func(t *T) *uint32 { return &t.WaitUs }),
			flag("process_known", func(t *T) *bool { return &t.ProcessKnown }),
			u32("process_us", processBits, waitNear, func(t *T) *uint32 { return &t.ProcessUs }),
		}},
		F{Name: "count", Bits: 7, Max: MaxLinks,
			Get: func(t *T) uint32 { return uint32(t.Count) }, Set: func(t *T, v uint32) { t.Count = uint8(v) }},
	}
	// Slots come in blocks of linkBlock behind a changed-bit each, so the
	// unused slots of a small session cost a bit per block, not per slot.
	for b := 0; b < MaxLinks; b += linkBlock {
		var block []entry[T]
		for i := b; i < b+linkBlock; i++ {
			lu32 := func(name string, bits, near uint8, p func(*Link) *uint32) F {
				return u32(name, bits, near, func(t *T) *uint32 { return p(&t.Links[i]) })
			}
			lflag := func(name string, p func(*Link) *bool) F {
				return flag(name, func(t *T) *bool { return p(&t.Links[i]) })
			}
			state := func(name string, p func(*Link) *netcore.LinkState) F {
				return F{Name: name, Bits: 2, Get: func(t *T) uint32 { return uint32(*p(&t.Links[i])) }, Set: func(t *T, v uint32) { *p(&t.Links[i]) = netcore.LinkState(v) }}
			}
			block = append(block, group[T]{Name: fmt.Sprintf("links[%d].", i), Entries: []entry[T]{
				// Every numbered datagram that arrives moves it (L2):
				// on a live link it changes on every update.
				lu32("expected", counterBits, counterNear, func(k *Link) *uint32 { return &k.Expected }),
				group[T]{Entries: []entry[T]{ // a clean sample moves these (T3, T7, T10)
					state("state", func(k *Link) *netcore.LinkState { return &k.State }),
					state("estimate", func(k *Link) *netcore.LinkState { return &k.Estimate }),
					lu32("srtt_us", rttBits, rttNear, func(k *Link) *uint32 { return &k.SRTTUs }),
					lu32("rttvar_us", rttBits, rttNear, func(k *Link) *uint32 { return &k.RTTVARUs }),
					lu32("rto_us", timeoutBits, timeoutNear, func(k *Link) *uint32 { return &k.RTOUs }),
					lu32("conn_timeout_us", timeoutBits, timeoutNear, func(k *Link) *uint32 { return &k.ConnTimeoutUs }),
				}},
				group[T]{Entries: []entry[T]{ // reliable datagrams sent (L1)
					lu32("sent", counterBits, counterNear, func(k *Link) *uint32 { return &k.Sent }),
					lu32("retransmitted", counterBits, counterNear, func(k *Link) *uint32 { return &k.Retransmitted }),
				}},
				group[T]{Entries: []entry[T]{ // once per ping interval (L4)
					lflag("peer_known", func(k *Link) *bool { return &k.PeerKnown }),
					lu32("peer_expected", counterBits, counterNear, func(k *Link) *uint32 { return &k.PeerExpected }),
					lu32("peer_missing", counterBits, counterNear, func(k *Link) *uint32 { return &k.PeerMissing }),
				}},
				group[T]{Entries: []entry[T]{ // seldom: set once, or on a loss or a stall
					F{Name: "peer", Bits: 16,
						Get: func(t *T) uint32 { return uint32(t.Links[i].Peer) }, Set: func(t *T, v uint32) { t.Links[i].Peer = netcore.PeerID(v) }},
					lflag("loss_known", func(k *Link) *bool { return &k.LossKnown }),
					lu32("missing", counterBits, counterNear, func(k *Link) *uint32 { return &k.Missing }),
					lu32("caused_ms", waitedBits, waitNear, func(k *Link) *uint32 { return &k.CausedMs }),
					lu32("waited_frames", counterBits, counterNear, func(k *Link) *uint32 { return &k.WaitedFrames }),
				}},
				group[T]{Entries: []entry[T]{ // while packets wait for their acks
					F{Name: "unacked_ms", Bits: unackedBits, Max: unackedMax,
						Get: func(t *T) uint32 { return t.Links[i].UnackedMs }, Set: func(t *T, v uint32) { t.Links[i].UnackedMs = v }},
				}},
			}})
		}
		es = append(es, group[T]{Entries: block})
	}
	return es
}

func mustTelemetryTable(near bool) *fieldTable[Telemetry] {
	t, err := newTable(telemetryFields(near)...)
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

// Waits are what a player waited for one peer: the time (a wait going on
// included), the frames, and the age of its oldest unacknowledged packet
// to that peer (0: none).
type Waits struct {
	Caused  time.Duration
	Frames  int
	Unacked time.Duration
}

// LinkFrom turns netcore's statistics of one link, and what the player
// waited for that peer, into a Link, saturating each value at its width.
func LinkFrom(st netcore.LinkStats, w Waits) Link {
	l := Link{
		Peer: st.Peer, State: st.State, Estimate: st.Estimate,
		RTOUs: sat(st.RTO, time.Microsecond, maxTimeout), ConnTimeoutUs: sat(st.ConnTimeout, time.Microsecond, maxTimeout),
		// netcore's transports count every link (L1).
		LossKnown: true,
		Sent:      sat32(st.Loss.Sent), Retransmitted: sat32(st.Loss.Retransmitted),
		Expected: sat32(st.Loss.Expected), Missing: sat32(st.Loss.Missing),
		PeerKnown:    st.PeerLoss.Known,
		CausedMs:     sat(w.Caused, time.Millisecond, math.MaxUint32),
		WaitedFrames: uint32(min(max(w.Frames, 0), math.MaxUint32)),
		UnackedMs:    sat(w.Unacked, time.Millisecond, unackedMax),
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
func (t *Telemetry) Waited() time.Duration { return units.FromWholeMillis(int64(t.WaitedMs)) }

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
	Waits
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
			LossKnown: l.LossKnown, Waits: Waits{Caused: units.FromWholeMillis(int64(l.CausedMs)),
				Frames: int(l.WaitedFrames), Unacked: units.FromWholeMillis(int64(l.UnackedMs))}}
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
