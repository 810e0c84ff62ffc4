package live

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/session"
)

// PlayDemo runs the demo in virtual time: the same plan (names, access
// links, spike, calm, leaves), the same sessions and your machine's
// narration, on netcore's simulated network instead of loopback sockets and
// the wall clock. It returns the updates your machine's driver would
// publish, one every `every` up to length (link lines each second, as live),
// without a last Done update: the session is still running. The same cfg
// gives the same updates byte for byte, which is what lets a test pin what
// `lagscope demo` shows (the README's screen).
//
// cfg's Key, Speed, Seed, Alerts and the plan's fields are used; Start,
// Logger, PublishAll and OnCommand are not (there is no wall clock and only
// your machine publishes).
func PlayDemo(cfg DemoConfig, length, every time.Duration) ([]probe.Update, error) {
	if err := cfg.settle(); err != nil {
		return nil, err
	}
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	plan, err := newDemoPlan(cfg)
	if err != nil {
		return nil, err
	}
	sched := simnet.NewScheduler()
	nw := simnet.NewNetwork(sched, cfg.Seed)
	drv := simnet.NewDriver(nw)

	var pending []probe.Event
	collect := probe.SinkFunc(func(_ string, e probe.Event) {
		t := float64(sched.Now()) / float64(time.Millisecond)
		probe.Head(e).TMs = &t
		pending = append(pending, e)
	})
	addrs := make([]netip.AddrPort, len(plan.names))
	hosts := make([]*simnet.Host, len(plan.names))
	sessions := make([]*session.Session, len(plan.names))
	for i := range plan.names {
		addrs[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i + 1)}), 7373)
		hosts[i] = drv.Attach(addrs[i])
	}
	for i, name := range plan.names {
		// As StartDemo's sessions, with a seeded source for the session
		// token and nonces so that a run repeats.
		var seed [32]byte
		for b := range 8 {
			seed[b] = byte((cfg.Seed*1_000_003 + uint64(i)) >> (8 * b))
		}
		c := session.Config{Name: name, Key: cfg.Key, Speed: cfg.Speed, Players: cfg.Players,
			CommandsPerMinute: demoCommandsPerMinute, Seed: cfg.Seed*1_000_003 + uint64(i),
			Logger: slog.New(slog.DiscardHandler), Rand: rand.NewChaCha8(seed),
			TelemetryTo: []string{plan.names[0]}, Alerts: cfg.Alerts,
			Sink: probe.SinkFunc(func(string, probe.Event) {})}
		var s *session.Session
		var err error
		if i == 0 {
			c.TelemetryTo = []string{}
			c.Sink = collect
			s, err = session.NewHost(c, hosts[i].Node())
		} else {
			c.Speed = 0
			s, err = session.NewJoiner(c, session.RolePlayer, hosts[i].Node(), addrs[0])
		}
		if err != nil {
			return nil, err
		}
		sessions[i] = s
		hosts[i].Drive(s)
		s.Flush()
		hosts[i].Wake()
	}

	setPaths := func(now time.Duration) {
		for a := range addrs {
			for b := range addrs {
				if a != b {
					nw.SetPath(addrs[a], addrs[b], plan.profileAt(a, b, now))
				}
			}
		}
	}
	setPaths(0)
	for _, at := range plan.changes() {
		sched.At(at, func() { setPaths(at) })
	}
	for _, l := range plan.leaves {
		sched.At(l.at, func() {
			sessions[l.index].Quit(sched.Now())
			hosts[l.index].Wake()
		})
	}

	// Your driver's publishing, on the virtual clock: the narration and the
	// link lines go in with the events, then the View.
	you := sessions[0]
	notes := plan.narration()
	var updates []probe.Update
	nextLinks := time.Second
	for at := time.Duration(0); at <= length; at += every {
		sched.At(at, func() {
			now := sched.Now()
			for len(notes) > 0 && now >= notes[0].At {
				collect(you.Name(), &probe.MessageEvent{Header: probe.Header{Type: "message", Frame: you.Frame()}, Text: notes[0].Text, Player: you.Name()})
				notes = notes[1:]
			}
			if now >= nextLinks {
				for _, ls := range you.KnownLinks(now) {
					collect(you.Name(), &probe.LinkEvent{Header: probe.Header{Type: "link", Frame: you.Frame()}, LinkStat: ls})
				}
				for nextLinks <= now {
					nextLinks += time.Second
				}
			}
			updates = append(updates, probe.Update{View: you.View(now), Events: pending})
			pending = nil
		})
	}
	sched.RunUntil(length)
	if you.Done() {
		return updates, fmt.Errorf("live: the demo's session ended at %v: %v", sched.Now(), you.Err())
	}
	return updates, nil
}
