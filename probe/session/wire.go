package session

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/names"
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/units"
)

// Lobby messages travel inside netcore messages on a link, beside probe's
// frame packets. Their first byte is a kind that never clashes with a frame
// packet's or the telemetry's (probe uses 1 to 4). IDs are stable (S19
// applies here too); docs/live.md documents every byte.
const (
	kindRoster byte = 0x20 // host → member, global channel: who is in the session
	kindPing   byte = 0x21 // member ↔ member, unreliable: lobby state and keep-alive
	kindStart  byte = 0x22 // host → member, global channel: the game starts with a roster version
	kindLeave  byte = 0x23 // anyone → its links, global channel: this machine is leaving
	kindAlive  byte = 0x24 // observer → players, reliable: still watching (after the start)
	// 0x25 to 0x28: hole punching (punchwire.go); 0x29: kindWatch (watchwire.go)
)

func isLobbyKind(b byte) bool { return b >= kindRoster && b <= kindLoadResult }

// roleLate marks a roster entry's role byte: an observer that attached
// after the start (a late watcher). A roster without one is the
// bytes it always was.
const roleLate = 0x80

// Refusals the session layer gives; netcore names every reason so the
// numbers stay stable on the wire (S19).
const (
	refuseNameTaken = netcore.RefuseNameTaken // another machine in the session has that name
	refuseBadName   = netcore.RefuseBadName   // empty, too long, or not printable
)

// Limits of what a roster may hold. maxMembers bounds the roster's size on
// the wire (and the work one roster costs a receiver); it is far above what
// a lockstep session seats.
const (
	maxMembers   = 512
	maxSpeed     = 1000
	minSpeed     = 1
	maxDropLimit = 24 * time.Hour
)

var (
	errLobbyShort = errors.New("live: lobby message too short")
	errLobbyLong  = errors.New("live: lobby message has bytes left over")
	errLobbyKind  = errors.New("live: not a lobby message")
	errLobbyField = errors.New("live: lobby field out of range")
	errLobbyDup   = errors.New("live: roster names a machine twice")
)

var le = binary.LittleEndian

// rosterEntry is one machine of the session in house order. A zero Addr
// means "the sender of this roster" (the host, which cannot know the
// address each member reaches it at).
type rosterEntry struct {
	ID       netcore.PeerID
	Observer bool
	Late     bool // an observer that attached after the start (roleLate)
	Name     string
	Addr     netip.AddrPort
	Key      netcore.PublicKey // its identity: what this machine's link to it is sealed with
}

// roster is the host's list of the session's machines.
type roster struct {
	Version     uint32 // grows with every change; 0 is never sent
	Need        uint16 // seated players the host starts at
	Speed       uint16 // game speed in frames per second (S15, S17)
	DropTimeout time.Duration
	Members     []rosterEntry
}

func appendRoster(b []byte, r roster) []byte {
	b = append(b, kindRoster)
	b = le.AppendUint32(b, r.Version)
	b = le.AppendUint16(b, r.Need)
	b = le.AppendUint16(b, r.Speed)
	b = le.AppendUint32(b, uint32(units.WholeMillis(r.DropTimeout)))
	b = le.AppendUint16(b, uint16(len(r.Members)))
	for _, m := range r.Members {
		b = le.AppendUint16(b, uint16(m.ID))
		role := netcore.RolePlayer
		if m.Observer {
			role = netcore.RoleObserver
		}
		rb := byte(role)
		if m.Late && m.Observer {
			rb |= roleLate
		}
		b = append(b, rb, byte(len(m.Name)))
		b = append(b, m.Name...)
		switch a := m.Addr.Addr(); {
		case !m.Addr.IsValid():
			b = append(b, 0)
		case a.Is4():
			v := a.As4()
			b = append(b, 4)
			b = append(b, v[:]...)
		default:
			v := a.As16()
			b = append(b, 16)
			b = append(b, v[:]...)
		}
		if m.Addr.IsValid() {
			b = le.AppendUint16(b, m.Addr.Port())
		}
		b = append(b, m.Key[:]...)
	}
	return b
}

const rosterFixed = 1 + 4 + 2 + 2 + 4 + 2

func decodeRoster(p []byte) (roster, error) {
	var r roster
	if len(p) < rosterFixed {
		return r, errLobbyShort
	}
	if p[0] != kindRoster {
		return r, errLobbyKind
	}
	r.Version = le.Uint32(p[1:])
	r.Need = le.Uint16(p[5:])
	r.Speed = le.Uint16(p[7:])
	r.DropTimeout = units.FromWholeMillis(int64(le.Uint32(p[9:])))
	n := int(le.Uint16(p[13:]))
	if r.Version == 0 || r.Need == 0 || r.Speed < minSpeed || r.Speed > maxSpeed ||
		r.DropTimeout <= 0 || r.DropTimeout > maxDropLimit || n == 0 || n > maxMembers {
		return r, errLobbyField
	}
	rest := p[rosterFixed:]
	// Each member takes at least 5 bytes (id, role, name length, address
	// length), a name of at least one byte and its key: refuse a count the
	// bytes cannot hold before allocating for it.
	if n > len(rest)/(6+len(netcore.PublicKey{})) {
		return r, errLobbyShort
	}
	r.Members = make([]rosterEntry, 0, n)
	seen := make(map[netcore.PeerID]bool, n)
	for range n {
		if len(rest) < 4 {
			return r, errLobbyShort
		}
		m := rosterEntry{ID: netcore.PeerID(le.Uint16(rest))}
		role := netcore.Role(rest[2])
		nl := int(rest[3])
		rest = rest[4:]
		if m.ID == netcore.PeerUnassigned || seen[m.ID] {
			return r, errLobbyDup
		}
		seen[m.ID] = true
		switch role {
		case netcore.RolePlayer:
		case netcore.RoleObserver:
			m.Observer = true
		case netcore.RoleObserver | roleLate:
			m.Observer, m.Late = true, true
		default:
			return r, errLobbyField
		}
		if len(rest) < nl+1 {
			return r, errLobbyShort
		}
		name := string(rest[:nl])
		if err := checkName(name); err != nil {
			return r, err
		}
		m.Name = name
		al := int(rest[nl])
		rest = rest[nl+1:]
		switch al {
		case 0:
		case 4, 16:
			if len(rest) < al+2 {
				return r, errLobbyShort
			}
			var a netip.Addr
			if al == 4 {
				a = netip.AddrFrom4([4]byte(rest[:4]))
			} else {
				a = netip.AddrFrom16([16]byte(rest[:16])).Unmap()
			}
			port := le.Uint16(rest[al:])
			if port == 0 || !a.IsValid() || a.IsUnspecified() {
				return r, errLobbyField
			}
			m.Addr = netip.AddrPortFrom(a, port)
			rest = rest[al+2:]
		default:
			return r, errLobbyField
		}
		if len(rest) < len(m.Key) {
			return r, errLobbyShort
		}
		rest = rest[copy(m.Key[:], rest):]
		r.Members = append(r.Members, m)
	}
	if len(rest) != 0 {
		return r, errLobbyLong
	}
	return r, nil
}

// ping is a member's lobby state, sent to each of its links every
// pingEvery until the game starts: the host learns from it who holds the
// newest roster and is ready, every member that its links carry traffic.
type ping struct {
	Version uint32 // the roster version the sender holds (0: none yet)
	Ready   bool   // it has heard from every machine of that roster it links to
	Started bool
}

const pingLen = 1 + 4 + 1

const (
	pingReady   = 0x01
	pingStarted = 0x02
)

func appendPing(b []byte, pg ping) []byte {
	b = append(b, kindPing)
	b = le.AppendUint32(b, pg.Version)
	var f byte
	if pg.Ready {
		f |= pingReady
	}
	if pg.Started {
		f |= pingStarted
	}
	return append(b, f)
}

func decodePing(p []byte) (ping, error) {
	if len(p) != pingLen {
		return ping{}, errLobbyShort
	}
	if p[0] != kindPing {
		return ping{}, errLobbyKind
	}
	f := p[5]
	if f&^(pingReady|pingStarted) != 0 {
		return ping{}, errLobbyField
	}
	return ping{Version: le.Uint32(p[1:]), Ready: f&pingReady != 0, Started: f&pingStarted != 0}, nil
}

const startLen = 1 + 4

func appendStart(b []byte, version uint32) []byte {
	return le.AppendUint32(append(b, kindStart), version)
}

func decodeStart(p []byte) (uint32, error) {
	if len(p) != startLen {
		return 0, errLobbyShort
	}
	if p[0] != kindStart {
		return 0, errLobbyKind
	}
	v := le.Uint32(p[1:])
	if v == 0 {
		return 0, errLobbyField
	}
	return v, nil
}

// decodeBare checks a one-byte message (leave, alive).
func decodeBare(p []byte, kind byte) error {
	if len(p) != 1 {
		return errLobbyLong
	}
	if p[0] != kind {
		return errLobbyKind
	}
	return nil
}

var errName = errors.New("not in canonical form (names are sent as names.Validate returns them)")

// checkName: names are shown in tables and NDJSON and compared for
// uniqueness, so every name that enters a session — a flag, a joiner's
// Response, a roster — follows the one rule of package names.
// A name must already be canonical: a peer that sent another form would
// be shown one name and compared as another.
func checkName(name string) error {
	c, err := names.Validate(name)
	if err != nil {
		return err
	}
	if c != name {
		return errName
	}
	return nil
}

// CheckName reports whether name can be a player's name in a session.
func CheckName(name string) error { return checkName(name) }
