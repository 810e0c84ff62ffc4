package sim

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/session"
	"github.com/lagscope/lagscope/units"
)

// Every machine of a scenario is a session.Session, the code `lagscope host`
// and `lagscope join` run: the run starts at the handshake, so the
// lobby is simulated too. The first player hosts and waits for every player
// and every observer of the scenario; the others join one after another, each
// once the one before is welcomed, so the scenario's order of players is the
// session's house order (join order decides it) and every run joins the
// same way. The run's clock, as far as anything printed or handed to a hook
// goes, reads 0 when the host starts the game: at_ms, frames and recordings
// keep the meaning they had before the lobby was simulated.

// lobbyAllowance is how much virtual time each machine may take to join
// before the run counts as stuck: a joiner gives up after 10 s without an
// answer, so this is past any lobby that can still form.
const lobbyAllowance = 15 * time.Second

// seededRand is machine i's source for its session token, nonces and cookie
// secret: seeded from the scenario, so they repeat byte for byte.
func seededRand(seed uint64, i int) *rand.ChaCha8 {
	var s [32]byte
	copy(s[16:], "lagscope sim")
	for b := range 8 {
		s[b] = byte(seed >> (8 * b))
		s[8+b] = byte(uint64(i) >> (8 * b))
	}
	return rand.NewChaCha8(s)
}

// discard takes the session's lobby lines: `lagscope sim` prints the game's
// events only (docs/simulation.md).
var discard = feed.SinkFunc(func(string, feed.Event) {})

func (r *runner) build() error {
	sc := r.sc
	cpm := 60.0
	if sc.CommandsPerMinute != nil {
		cpm = *sc.CommandsPerMinute
	}
	dropTimeout := time.Duration(0)
	if sc.DropTimeoutMs != nil {
		dropTimeout = units.FromMillis(*sc.DropTimeoutMs)
	}
	names := append(append([]string{}, sc.Players...), sc.Observers...)
	var hostAddr netip.AddrPort
	for i, n := range names {
		// Addresses exist only inside the simulated network.
		addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 77, byte(i >> 8), byte(i + 1)}), 7373)
		m := &machine{name: n, addr: addr, procT: units.FromMillis(sc.ProcessMs[n]), host: r.drv.Attach(addr)}
		m.host.OnStep(func() { r.check(m) })
		cfg := session.Config{
			Name:              n,
			Plain:             true, // one process, one simulated network: nothing to seal against
			DropTimeout:       dropTimeout,
			ProcessTime:       m.procT,
			CommandsPerMinute: cpm,
			Seed:              sc.Seed*1_000_003 + uint64(i),
			LinkEvery:         sc.LinkEvery,
			NoTelemetry:       true, // the printed run is the game's traffic, as before
			Virtual:           true,
			Rand:              seededRand(sc.Seed, i),
			Sink:              feed.SinkFunc(r.emit),
			LobbySink:         discard,
			Load:              sc.loadConfig(n),
			OnFrame:           r.onFrame(n),
			OnCommand:         r.onCommand(n),
			FillMatrix:        r.fillMatrix, // diagnose.go
			Trace:             r.opt.Trace[n],
		}
		tr := r.transport(n, m.host.Node()) // hops.go
		var s *session.Session
		var err error
		switch {
		case i == 0:
			cfg.Speed = sc.FPS
			cfg.Players, cfg.Observers = len(sc.Players), len(sc.Observers)
			s, err = session.NewHost(cfg, tr)
			hostAddr = addr
		case i < len(sc.Players):
			s, err = session.NewJoiner(cfg, session.RolePlayer, tr, hostAddr)
		default:
			s, err = session.NewJoiner(cfg, session.RoleObserver, tr, hostAddr)
		}
		if err != nil {
			return fmt.Errorf("sim: %s: %w", n, err)
		}
		s.Flush() // its session line, to the lobby sink
		m.sess = s
		m.host.Drive(s)
		r.machines = append(r.machines, m)
		r.byName[n] = m
	}
	if len(sc.Players) > 0 {
		r.master = sc.Players[0]
	}
	return nil
}

// openLobby starts the host; joiners follow in joinNext.
func (r *runner) openLobby() {
	if len(r.machines) == 0 {
		return
	}
	r.machines[0].host.Wake()
	r.joined = 1
	r.joinNext()
}

// joinNext starts the next joiner once the one before has been welcomed
// (it then knows the session's name): one at a time, in scenario order.
func (r *runner) joinNext() {
	for r.joined < len(r.machines) && r.machines[r.joined-1].sess.SessionName() != "" {
		r.machines[r.joined].host.Wake()
		r.joined++
	}
}

// lobbyStep runs after every step while the game has not started
// everywhere: joins, the game's start, each machine's peer as it starts,
// and a machine that gave up or was refused (a scenario's machine that
// never gets into the game ends the run with its reason).
func (r *runner) lobbyStep(m *machine) {
	r.joinNext()
	if m.peer == nil && m.sess.Started() {
		m.peer = m.sess.Peer()
	}
	if m.sess.Done() && m.peer == nil {
		r.lobbyErr = fmt.Errorf("sim: %s never got into the game: %w", m.name, m.sess.Err())
		r.stop = true
	}
	if r.gameOn && !r.scheduled {
		r.scheduled = true
		r.scheduleTimeline()
		r.scheduleViews()
		r.schedulePaths()     // hops.go
		r.scheduleLoadTests() // load.go
	}
}

// gameStarts marks the moment the first game event is printed: the host's
// start, which is the run's time 0 from then on.
func (r *runner) gameStarts() {
	if !r.gameOn {
		r.gameOn = true
		r.startAt = r.sched.Now()
	}
}

// now is the run's clock: virtual time since the game started.
func (r *runner) now() time.Duration { return r.sched.Now() - r.startAt }
