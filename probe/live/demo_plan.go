package live

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
)

// The demo's plan: who plays, each player's access link and the script
// (spike, calm, leaves), as plain data that the live demo applies to its
// impaired sockets and a test applies to the simulated network.

// demoPlan is what the demo does to the network, as plain data: who plays,
// each player's access link, and the scripted spike. The live demo applies
// it to loopback UDP on the wall clock; a test applies it to the simulated
// network on virtual time.
type demoPlan struct {
	names  []string
	access []impair.Profile
	spike  bool
	leaves []planLeave     // in time order
	slow   []time.Duration // per player: extra work per frame (--slow), 0 for none
}

// planLeave is a scripted leave by the player's index.
type planLeave struct {
	index int
	at    time.Duration
}

func newDemoPlan(cfg DemoConfig) (demoPlan, error) {
	p := demoPlan{spike: cfg.Spike}
	mix := impair.Profiles()
	for i := range cfg.Players {
		name := cfg.Name
		if i > 0 {
			name = fmt.Sprintf("p%d", i+1)
			if i-1 < len(demoNames) {
				name = demoNames[i-1]
			}
			if strings.EqualFold(name, cfg.Name) {
				name = fmt.Sprintf("p%d", i+1)
			}
		}
		p.names = append(p.names, name)
		if cfg.Profile == "mix" {
			p.access = append(p.access, mix[i%len(mix)].Profile)
		} else {
			prof, ok := impair.ProfileByName(cfg.Profile)
			if !ok {
				return p, fmt.Errorf("%w %q (one of %s)", errDemoProfile, cfg.Profile, strings.Join(DemoProfiles(), ", "))
			}
			p.access = append(p.access, prof)
		}
	}
	for _, l := range cfg.Leaves {
		i := slices.Index(p.names, l.Name)
		bad := func(why string) error { return &DemoLeaveError{Leave: fmt.Sprintf("%s@%v", l.Name, l.At), Why: why} }
		switch {
		case i < 0:
			return p, bad("no such player (the others are " + strings.Join(p.names[1:], ", ") + ")")
		case i == 0:
			return p, bad("that is you; --duration ends your session")
		case l.At <= 0:
			return p, bad("the time must be positive")
		case slices.ContainsFunc(p.leaves, func(x planLeave) bool { return x.index == i }):
			return p, bad(l.Name + " already leaves once")
		}
		p.leaves = append(p.leaves, planLeave{index: i, at: l.At})
	}
	slices.SortStableFunc(p.leaves, func(a, b planLeave) int { return cmp.Compare(a.at, b.at) })
	p.slow = make([]time.Duration, len(p.names))
	for name, cost := range cfg.Slow {
		i := slices.Index(p.names, name)
		if i < 0 {
			return p, fmt.Errorf("%w: --slow %s: no such player (the players are %s)", ErrDemoSlow, name, strings.Join(p.names, ", "))
		}
		p.slow[i] = cost
	}
	return p, nil
}

// narration is the demo's own lines in your message list: what it does to
// the network and when, so a newcomer can tell cause from effect.
func (d *demoPlan) narration() []note {
	var notes []note
	var legend []string
	for i, n := range d.names {
		legend = append(legend, n+": "+profileName(d.access[i]))
	}
	notes = append(notes, note{At: 0, Text: "Demo: each player's access link — " + strings.Join(legend, ", ")})
	if d.spike && len(d.names) > 1 {
		who := d.names[spikeAt]
		notes = append(notes,
			note{At: spikeStart, Text: fmt.Sprintf("Demo: %s's connection slows down by %v each way (every path to %s)", who, spikeExtra, who)},
			note{At: spikeEnd, Text: fmt.Sprintf("Demo: %s's connection is back to normal", who)})
		var wifi []string
		for i, p := range d.access {
			if p.Burst != nil {
				wifi = append(wifi, d.names[i])
			}
		}
		if len(wifi) > 0 {
			notes = append(notes, note{At: calmAt, Text: "Demo: the Wi-Fi interference stops for " + strings.Join(wifi, ", ") + " (the jitter stays)"})
		}
	}
	for i, cost := range d.slow {
		if cost > 0 {
			notes = append(notes, note{At: 0, Text: fmt.Sprintf("Demo: %s's machine is slow: each frame takes %v longer", d.names[i], cost)})
		}
	}
	for _, l := range d.leaves {
		notes = append(notes, note{At: l.at, Text: "Demo: " + d.names[l.index] + " quits the game"})
	}
	// The driver shows the notes in order of time.
	slices.SortStableFunc(notes, func(a, b note) int { return cmp.Compare(a.At, b.At) })
	return notes
}

func profileName(p impair.Profile) string {
	for _, np := range impair.Profiles() {
		if np.Profile.String() == p.String() {
			return np.Name
		}
	}
	return p.String()
}

// linkProfile is what the path from player a to player b does: both access
// links in turn — delays and jitters add, losses compound, and a Wi-Fi
// end's burst loss comes along.
func (d *demoPlan) linkProfile(a, b int) impair.Profile {
	pa, pb := d.access[a], d.access[b]
	p := impair.Profile{Delay: pa.Delay + pb.Delay, Jitter: pa.Jitter + pb.Jitter, Loss: 1 - (1-pa.Loss)*(1-pb.Loss)}
	if pa.Burst != nil {
		p.Burst = pa.Burst
	} else if pb.Burst != nil {
		p.Burst = pb.Burst
	}
	return p
}

// profileAt is the path from a to b at now: the link profile, with the
// spike added and, after calmAt, the bursts gone.
func (d *demoPlan) profileAt(a, b int, now time.Duration) impair.Profile {
	p := d.linkProfile(a, b)
	p.Delay += d.extraDelay(a, b, now)
	if d.spike && now >= calmAt {
		p.Burst = nil
	}
	return p
}

// changes are the times at which some path's profile changes.
func (d *demoPlan) changes() []time.Duration {
	if !d.spike {
		return nil
	}
	return []time.Duration{spikeStart, spikeEnd, calmAt}
}

// spikeAt is the player whose access link the scripted spike slows: the
// second player (ada by default). The spike is on that player's own
// connection, not on one path, so every path to it slows by the same
// amount and the diagnosis can name the player.
const spikeAt = 1

// extraDelay is the scripted spike on the path from a to b at now: the
// spiking player's access link lies on every path that has it at one end.
func (d *demoPlan) extraDelay(a, b int, now time.Duration) time.Duration {
	if !d.spike || now < spikeStart || now >= spikeEnd {
		return 0
	}
	if a == spikeAt || b == spikeAt {
		return spikeExtra
	}
	return 0
}

// script is player self's access link as an impair.Script: the path to
// each other player follows profileAt, a stranger's path is clean, and
// each path has its own seeded stream. index maps the players' socket
// addresses to their indices.
func (d *demoPlan) script(self int, index map[netip.AddrPort]int, seed uint64, start time.Time) impair.Script {
	return impair.Script{
		Start:   start,
		Changes: d.changes(),
		Path: func(to netip.AddrPort, now time.Duration) impair.Profile {
			peer, ok := index[to]
			if !ok {
				return impair.Profile{}
			}
			return d.profileAt(self, peer, now)
		},
		Seed: func(to netip.AddrPort) uint64 {
			peer := -1
			if i, ok := index[to]; ok {
				peer = i
			}
			return seed ^ uint64(self+1)<<32 ^ uint64(peer+1)
		},
		BufferSize: netcore.MaxDatagram,
	}
}
