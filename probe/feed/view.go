package feed

import (
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/rungs"
)

// View is the read-only picture of a peer that front ends draw (docs/ui.md
// shows what they draw of it). A View is a copy: holding one never touches
// the engine. Unknown values are nil pointers, never zeros (L3).
type View struct {
	At      time.Duration // time since the world started
	Session string
	Self    string
	Master  string
	Frame   int  // next frame to execute
	Started bool // the game has started (false: lobby)
	// Game is the session time: the game's time since it started, at
	// Frame, from frames and the frame rates in force — the same on every
	// machine and watcher for the same frame (0 in the lobby).
	Game time.Duration `json:",omitempty"`

	FPS     int          // frame rate in force (S15)
	Speed   int          // game speed: the frame-rate cap (S17)
	InForce rungs.Timing // timing in force
	Target  rungs.Timing // the last timing the master chose
	Staged  bool         // a decrease is stepping down (S12)
	// Needed is the timing the worst fresh reported round trip needed with
	// headroom at the latest evaluation, as the master computes a target
	// (S9, S10) and where a descent settles (S11b.4); the zero Timing
	// before an evaluation saw a report with a round trip.
	Needed   rungs.Timing
	Stalled  bool   // waiting for commands right now
	WaitedOn string // whom we wait for, when Stalled

	// Lobby is set while a live session waits for its game to start.
	Lobby *LobbyView

	Links   []LinkView   // one per other machine, house order
	Players []PlayerView // every machine, house order
	Totals  LossTotals   // this machine's transport, summed over links
	// Relay (a host) is what it forwarded for pairs without a direct
	// path.
	Relay []RelayStat `json:",omitempty"`
	// Paths are the hop traces of the links this machine traces, house
	// order; empty when none is traced.
	Paths []PathView `json:",omitempty"`
	// Load is this machine's load testing (docs/load-test.md); nil before
	// the game starts and where the machine runs none (the simulator). A
	// replay shows what the recording kept of it.
	Load *LoadView `json:",omitempty"`

	// Matrix is every seated player's own links and waits: this
	// machine's row first-hand, the others' from their telemetry; rows
	// not heard from yet are marked unknown, never zero (L3).
	//
	// A recording leaves it out: every link in it is also in the link
	// lines, once a second, and at 64 players the matrix alone is over a
	// megabyte, more than a record may hold (record.MaxRecord).
	Matrix MatrixView `json:"-"`

	// Diagnosis is the latest diagnosis this machine made (who and what
	// costs the session, from every pair it knows), nil before the first.
	Diagnosis *diagnosis.Diagnosis `json:"-"`
}

// LobbyView is a live session before its game starts.
type LobbyView struct {
	Need      int  // seated players the host starts at
	Seated    int  // players seated so far
	Observers int  // observers in the session
	Joining   bool // still in the handshake with the host
	// HostAddr (a joiner or watcher) is the host's address it joins by;
	// Attempt is the handshake's round while Joining, 1 the first (a
	// Hello goes out every half second).
	HostAddr netip.AddrPort `json:",omitzero"`
	Attempt  int            `json:",omitempty"`
	// Watcher: this machine joins as an observer; Late, let in after the
	// start, it waits for the game's snapshot from the host.
	Watcher bool `json:",omitempty"`
	Late    bool `json:",omitempty"`
	// CanStart (the host): this machine may start the game now with
	// whoever is seated (probe.Control{Start: true}).
	CanStart bool `json:",omitempty"`
	// Guide (the host) is what others need to join; nil elsewhere. A
	// recording leaves it out: its join line carries the session's code.
	Guide *JoinGuide `json:"-"`
	// Pending: this machine's pairs that carry no traffic yet, with what
	// is tried for each.
	Pending []PendingPair `json:",omitempty"`
}

// JoinGuide is what a host tells the people it plays with: the line to
// share and the addresses this machine can be reached at.
type JoinGuide struct {
	// Line is the command others type to join, with --key CODE when the
	// session is keyed: "lagscope join 192.168.1.20:7373 --key 7K3M-…".
	Line string
	// Addrs are this machine's addresses at the bound port: each
	// non-loopback interface address (loopback only when there is no
	// other), or the one --listen names.
	Addrs []GuideAddr
	Port  uint16 // the bound UDP port, which a router forwards to this machine
	Open  bool   // no key (--open): anyone who reaches the address can join
}

// GuideAddr is one address of a JoinGuide and who can reach it.
type GuideAddr struct {
	Addr netip.AddrPort
	Kind AddrKind
}

// AddrKind says who can reach an address.
type AddrKind uint8

const (
	// AddrLoopback is this machine only.
	AddrLoopback AddrKind = iota + 1
	// AddrLAN is a private, shared or unique-local address: machines on
	// the same network only.
	AddrLAN
	// AddrPublic is a global address: reachable over the internet unless
	// a firewall drops the port.
	AddrPublic
)

// LinkView is one private link from this machine.
type LinkView struct {
	Link
	Peer     string
	Observer bool
	Bad      bool          // a packet has outlived the connection timeout (T11)
	Caused   time.Duration // total time this machine waited for the peer's commands
	Through  int           // the highest frame the peer's commands are complete for
}

// PlayerView is one machine of the session.
type PlayerView struct {
	Name     string
	Observer bool
	Removed  bool
	Master   bool
	Self     bool
	// Latest report (S5), if any.
	Report *ReportView
}

// ReportView is a player's latest executed report.
type ReportView struct {
	Frame   int
	RTT     *time.Duration // nil: left out (S6)
	Wait    time.Duration
	Process time.Duration
	Fresh   bool
}
