package live

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe/feed"
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
func PlayDemo(cfg DemoConfig, length, every time.Duration) ([]feed.Update, error) {
	ups, _, err := playDemo(cfg, length, every, nil)
	return ups, err
}

// playDemo is PlayDemo with the others' events: others, when not nil,
// is the sink of the machine of player index i > 0 (events stamped with
// the virtual time). It returns the machines too, for a test to read
// their sessions at the end.
func playDemo(cfg DemoConfig, length, every time.Duration, others func(i int) feed.Sink) ([]feed.Update, *virtualMachines, error) {
	if err := cfg.settle(); err != nil {
		return nil, nil, err
	}
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	plan, err := newDemoPlan(cfg)
	if err != nil {
		return nil, nil, err
	}
	sched := simnet.NewScheduler()
	nw := simnet.NewNetwork(sched, cfg.Seed)
	fd := &virtualFeed{sched: sched, pub: newPublisher(plan.narration(), time.Second)}
	var m *virtualMachines
	sessionOf := func(i int) *session.Session {
		if m == nil {
			return nil // still starting: no game yet
		}
		return m.sessions[i]
	}
	sinks := func(i int) feed.Sink {
		if i == 0 {
			fd.you = func() *session.Session { return sessionOf(0) }
			return feed.SinkFunc(fd.collect)
		}
		if others != nil {
			to := others(i)
			return feed.SinkFunc(func(from string, e feed.Event) {
				stamp(feed.Head(e), sched.Now(), sessionOf(i))
				to.Emit(from, e)
			})
		}
		return feed.SinkFunc(func(string, feed.Event) {})
	}
	m, err = startVirtualMachines(cfg, plan, simnet.NewDriver(nw), sinks)
	if err != nil {
		return nil, nil, err
	}
	m.schedulePlan(sched, nw, plan)
	you := m.sessions[0]
	fd.schedule(you, length, every)
	sched.RunUntil(length)
	if you.Done() {
		return fd.updates, m, fmt.Errorf("live: the demo's session ended at %v: %v", sched.Now(), you.Err())
	}
	return fd.updates, m, nil
}

// virtualMachines are the virtual demo's machines by player index: each
// one's address on the simulated network, its host there and its session.
type virtualMachines struct {
	addrs    []netip.AddrPort
	hosts    []*simnet.Host
	sessions []*session.Session
}

// startVirtualMachines attaches every player of plan to the simulated
// network and starts their sessions there: you host, the others join;
// machine i's events go to sinks(i).
func startVirtualMachines(cfg DemoConfig, plan demoPlan, drv *simnet.Driver, sinks func(i int) feed.Sink) (*virtualMachines, error) {
	m := &virtualMachines{
		addrs:    make([]netip.AddrPort, len(plan.names)),
		hosts:    make([]*simnet.Host, len(plan.names)),
		sessions: make([]*session.Session, len(plan.names)),
	}
	for i := range plan.names {
		m.addrs[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i + 1)}), 7373)
		m.hosts[i] = drv.Attach(m.addrs[i])
	}
	for i, name := range plan.names {
		// As startDemo's sessions, with a seeded source for the session
		// token and nonces so that a run repeats.
		var seed [32]byte
		for b := range 8 {
			seed[b] = byte((cfg.Seed*1_000_003 + uint64(i)) >> (8 * b))
		}
		c := session.Config{Name: name, Key: cfg.Key, Plain: true, Speed: cfg.Speed, Players: cfg.Players,
			CommandsPerMinute: demoCommandsPerMinute, Seed: cfg.Seed*1_000_003 + uint64(i),
			Logger: slog.New(slog.DiscardHandler), Rand: rand.NewChaCha8(seed),
			TelemetryTo: []string{plan.names[0]}, Alerts: cfg.Alerts,
			Sink: sinks(i)}
		var s *session.Session
		var err error
		if i == 0 {
			c.TelemetryTo = []string{}
			s, err = session.NewHost(c, m.hosts[i].Node())
		} else {
			c.Speed = 0
			s, err = session.NewJoiner(c, session.RolePlayer, m.hosts[i].Node(), m.addrs[0])
		}
		if err != nil {
			return nil, err
		}
		m.sessions[i] = s
		m.hosts[i].Drive(s)
		s.Flush()
		m.hosts[i].Wake()
	}
	return m, nil
}

// schedulePlan applies plan's script on the virtual clock: every path's
// access links as at the start, again at each change (spike, calm), and
// the scripted leaves at their times.
func (m *virtualMachines) schedulePlan(sched *simnet.Scheduler, nw *simnet.Network, plan demoPlan) {
	setPaths := func(now time.Duration) {
		for a := range m.addrs {
			for b := range m.addrs {
				if a != b {
					nw.SetPath(m.addrs[a], m.addrs[b], plan.profileAt(a, b, now))
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
			m.sessions[l.index].Quit(sched.Now())
			m.hosts[l.index].Wake()
		})
	}
}

// virtualFeed is your driver's publishing on the virtual clock: the
// Runner's publisher, driven by the scheduler instead of the wall clock.
type virtualFeed struct {
	sched   *simnet.Scheduler
	you     func() *session.Session // nil while it starts
	pub     publisher
	updates []feed.Update
}

// collect is your session's sink.
func (f *virtualFeed) collect(_ string, e feed.Event) {
	var you *session.Session
	if f.you != nil {
		you = f.you()
	}
	f.pub.collect(you, f.sched.Now(), e)
}

// schedule makes an update every `every` up to length: the narration's
// notes that are due and, once a second, the link and path lines go in
// with the events, then your View.
func (f *virtualFeed) schedule(you *session.Session, length, every time.Duration) {
	for at := time.Duration(0); at <= length; at += every {
		f.sched.At(at, func() {
			now := f.sched.Now()
			f.pub.lines(you, now)
			f.updates = append(f.updates, feed.Update{View: you.View(now), Events: f.pub.take()})
		})
	}
}
