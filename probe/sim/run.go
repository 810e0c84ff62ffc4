package sim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lagscope/lagscope/vocab"
	"io"
	"net/netip"
	"sort"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/session"
	"github.com/lagscope/lagscope/units"
)

// Result is what a run leaves besides its NDJSON: the machines, for tests.
type Result struct {
	Peers   []*probe.Peer
	Network simnet.Stats
	End     time.Duration // the run's clock at the end: since the game started
	Summary feed.SummaryEvent
	// Lobby is how long the handshakes and the lobby took, in virtual
	// time, before the host started the game (session.go).
	Lobby time.Duration
}

type machine struct {
	name  string
	addr  netip.AddrPort
	sess  *session.Session // session.go
	peer  *probe.Peer      // the session's, once the game started there
	host  *simnet.Host     // the driver's: node, wake-up, vanished or not
	procT time.Duration
}

type runner struct {
	sc       *Scenario
	opt      Options
	sched    *simnet.Scheduler
	net      *simnet.Network
	drv      *simnet.Driver
	machines []*machine
	byName   map[string]*machine
	out      *bufio.Writer
	werr     error

	// narration: each network event is printed once, by the first machine
	// that executes its frame.
	narratedFrame int
	narrator      string

	pendingFrame []Change // at_frame changes, sorted
	master       string
	stop         bool

	// the lobby (session.go)
	joined    int           // machines started so far, in scenario order
	gameOn    bool          // the host has started the game
	startAt   time.Duration // when it did: the run's time 0
	scheduled bool          // the timeline and the views are scheduled
	lobbyErr  error

	tracing bool // the machines' transports trace (hops.go)
}

// errStuck is returned when a session stops making progress (every machine
// waits on a machine that will never answer) for longer than a run allows.
var errStuck = errors.New("sim: the session stopped making progress")

// Run plays the scenario and writes NDJSON events to w. The last line is
// the summary.
func Run(sc *Scenario, w io.Writer) (*Result, error) { return RunWith(sc, w, Options{}) }

// Options are hooks for tests and recorders.
type Options struct {
	// OnFrame is called after a machine executes a frame, with the running
	// checksum of the commands it has executed.
	OnFrame func(player string, frame int, checksum uint32)
	// OnLine is called with every line the run prints (without its newline),
	// the virtual time and the machine that published it ("" for the
	// summary): a recorder stores exactly what was printed.
	OnLine func(at time.Duration, from string, line []byte)
	// OnView, when set, is called once per second of virtual time with the
	// View of every machine still running (a recorder's link lines).
	OnView func(v feed.View)
	// OnCommand is called for every command a machine executes: which
	// machine, when, who issued it, the send frame it ran on and the
	// command with the frame it was scheduled for (S13). Every machine
	// executes the same commands on the same frames (S7), so a recorder
	// that wants each once keeps the first. c.Payload must be copied to be
	// kept.
	OnCommand func(machine string, at time.Duration, player string, sendFrame int, c feed.Command)
	// Trace names, per machine, the machine whose link it traces for the
	// whole run (ParseTrace; `sim --trace`). A run traces when this is set
	// or the scenario lists hops (docs/simulation.md).
	Trace map[string]string
	// onProbe is called for every hop-limited probe a machine sends, on
	// the run's clock (tests count them).
	onProbe func(machine string, at time.Duration, to netip.AddrPort, hops int)
	// OnIncident is called with every incident line of every machine
	// (the run prints the teller's alone: incidents.go).
	OnIncident func(machine string, inc feed.Incident)
	// onLoadView is called once per second of virtual time with every
	// running machine's load testing as its session's View holds it
	// (tests read a test while it runs).
	onLoadView func(machine string, at time.Duration, l *feed.LoadView)
}

// RunWith is Run with hooks.
func RunWith(sc *Scenario, w io.Writer, opt Options) (*Result, error) {
	r := &runner{sc: sc, opt: opt, sched: simnet.NewScheduler(), byName: map[string]*machine{}, out: bufio.NewWriterSize(w, 64<<10), narratedFrame: -1}
	r.tracing = sc.hasHops() || len(opt.Trace) > 0
	r.net = simnet.NewNetwork(r.sched, sc.Seed)
	r.drv = simnet.NewDriver(r.net)
	if err := r.build(); err != nil {
		return nil, err
	}
	r.applyNetwork()
	r.openLobby()
	fps := time.Second / time.Duration(sc.FPS)
	dropTimeout := 60 * time.Second
	if sc.DropTimeoutMs != nil {
		dropTimeout = units.FromMillis(*sc.DropTimeoutMs)
	}
	// A generous bound: every frame at a tenth of the game speed, plus time
	// for drop timeouts.
	limit := time.Duration(sc.Frames)*fps*10 + 4*dropTimeout + time.Minute + time.Duration(len(r.machines))*lobbyAllowance
	var err error
	switch r.drv.Run(func() bool { return r.stop || r.werr != nil }, limit) {
	case simnet.ErrIdle:
		err = errStuck
	case simnet.ErrPastLimit:
		err = fmt.Errorf("%w by virtual time %v", errStuck, limit)
	}
	if r.lobbyErr != nil {
		err = r.lobbyErr
	}
	r.endIncidents()
	res := &Result{Network: r.net.Stats(), End: r.now(), Lobby: r.startAt}
	for _, m := range r.machines {
		if m.peer != nil {
			res.Peers = append(res.Peers, m.peer)
		}
	}
	res.Summary = r.summary()
	r.write("", &res.Summary)
	if ferr := r.out.Flush(); r.werr == nil {
		r.werr = ferr
	}
	if r.werr != nil {
		return res, r.werr
	}
	return res, err
}

func profileOf(l LinkSpec, base impair.Profile) impair.Profile {
	p := base
	if l.RTTMs != nil {
		p.Delay = units.FromMillis(*l.RTTMs / 2)
	}
	if l.JitterMs != nil {
		p.Jitter = units.FromMillis(*l.JitterMs)
	}
	if l.Loss != nil {
		p.Loss = *l.Loss
	}
	if l.Dup != nil {
		p.Dup = *l.Dup
	}
	if l.Reorder != nil {
		p.Reorder = *l.Reorder
		if p.Reorder > 0 && p.ReorderDelay == 0 {
			p.ReorderDelay = max(p.Delay/2, 5*time.Millisecond)
		}
	}
	return p
}

func (r *runner) defaultProfile() impair.Profile { return profileOf(r.sc.Network, impair.Profile{}) }

func (r *runner) applyNetwork() {
	r.net.SetDefault(r.defaultProfile())
	r.applyPairs(r.sc.Links)
	r.applyAccess(r.sc.Access) // access.go
}

func (r *runner) applyPairs(pairs []PairSpec) {
	for _, p := range pairs {
		a, b := r.byName[p.Between[0]], r.byName[p.Between[1]]
		r.net.SetLink(a.addr, b.addr, profileOf(p.LinkSpec, r.defaultProfile()))
	}
}

func (r *runner) scheduleTimeline() {
	for _, c := range r.sc.Timeline {
		if c.AtMs != nil {
			c := c
			r.sched.At(r.startAt+units.FromMillis(*c.AtMs), func() { r.apply(c) })
		} else {
			r.pendingFrame = append(r.pendingFrame, c)
		}
	}
	sort.SliceStable(r.pendingFrame, func(i, j int) bool { return *r.pendingFrame[i].AtFrame < *r.pendingFrame[j].AtFrame })
	r.checkFrameChanges()
}

func (r *runner) apply(c Change) {
	r.applyPairs(c.Links)
	r.applyAccess(c.Access)
	if c.FPS != nil {
		if m := r.byName[r.master]; m != nil && m.peer != nil && !m.host.Stopped() {
			m.peer.SetSpeed(*c.FPS)
		}
	}
	if c.Remove != "" {
		if m := r.byName[c.Remove]; m != nil && !m.host.Stopped() {
			m.sess.Quit(r.sched.Now())
			m.host.Wake()
			r.check(m)
		}
	}
	if c.Vanish != "" {
		if m := r.byName[c.Vanish]; m != nil {
			m.host.Stop()
		}
	}
}

// checkFrameChanges applies at_frame entries once the current master's
// machine has reached their frame.
func (r *runner) checkFrameChanges() {
	m := r.byName[r.master]
	if m == nil || m.peer == nil {
		return
	}
	for len(r.pendingFrame) > 0 && m.peer.Frame() >= *r.pendingFrame[0].AtFrame {
		c := r.pendingFrame[0]
		r.pendingFrame = r.pendingFrame[1:]
		r.apply(c)
	}
}

// check runs once a machine has handled an input and its wake-up is
// re-armed: the master's frame decides the run's end and the at_frame
// timeline.
func (r *runner) check(m *machine) {
	if !r.scheduled || m.peer == nil {
		r.lobbyStep(m)
	}
	if m.name == r.master && m.peer != nil {
		r.checkFrameChanges()
		if m.peer.Frame() >= r.sc.Frames {
			r.stop = true
		}
	}
}

// emit is every peer's sink.
func (r *runner) emit(from string, e feed.Event) {
	r.gameStarts()
	h := feed.Head(e)
	if m, ok := e.(*feed.MasterEvent); ok {
		r.master = m.Player
	}
	if !r.stampLoad(from, e) { // load.go
		return
	}
	if inc, ok := e.(*feed.IncidentEvent); ok {
		if r.opt.OnIncident != nil {
			r.opt.OnIncident(from, inc.Incident)
		}
		if t := r.teller(); t == nil || t.name != from {
			return
		}
	}
	if e.Network() {
		switch {
		case h.Frame > r.narratedFrame:
			r.narratedFrame, r.narrator = h.Frame, from
		case h.Frame == r.narratedFrame && from == r.narrator:
		default:
			return
		}
	}
	r.write(from, e)
}

func (r *runner) write(from string, e any) {
	if r.werr != nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		r.werr = err
		return
	}
	if r.opt.OnLine != nil {
		r.opt.OnLine(r.now(), from, b)
	}
	b = append(b, '\n')
	_, r.werr = r.out.Write(b)
}

// scheduleViews hands OnView every machine's View once per virtual second.
// The tick re-arms only while other events are pending, so it never keeps a
// stuck run alive, and it only reads, so the printed events are the same
// with or without it.
func (r *runner) scheduleViews() {
	if r.opt.OnView == nil && r.opt.onLoadView == nil {
		return
	}
	var tick func()
	tick = func() {
		now := r.sched.Now()
		for _, m := range r.machines {
			if m.peer == nil || m.host.Stopped() || m.peer.Done() {
				continue
			}
			if r.opt.OnView != nil {
				v := m.peer.View(now)
				v.At -= r.startAt // the run's clock
				r.opt.OnView(v)
			}
			if r.opt.onLoadView != nil {
				r.opt.onLoadView(m.name, now-r.startAt, m.sess.View(now).Load)
			}
		}
		if r.sched.Pending() > 0 {
			r.sched.At(now+time.Second, tick)
		}
	}
	r.sched.At(r.startAt, tick)
}

func (r *runner) summary() feed.SummaryEvent {
	s := feed.SummaryEvent{Header: feed.Header{Type: vocab.EventSummary}, Links: []feed.LinkStat{}, Players: []feed.PlayerSummary{}}
	if m := r.byName[r.master]; m != nil && m.peer != nil {
		s.Frame = m.peer.Frame()
	}
	for _, m := range r.machines {
		if m.peer == nil {
			continue
		}
		s.Links = append(s.Links, m.peer.Links()...)
		if !m.peer.Observer() {
			s.Players = append(s.Players, m.peer.Summary())
		}
	}
	s.Diagnosis = r.finalDiagnosis()
	s.Incidents = []feed.Incident{}
	if m := r.teller(); m != nil {
		s.Incidents = m.peer.Incidents()
	}
	return s
}

func (r *runner) onFrame(name string) func(int, uint32) {
	if r.opt.OnFrame == nil {
		return nil
	}
	return func(f int, ck uint32) { r.opt.OnFrame(name, f, ck) }
}

func (r *runner) onCommand(name string) func(time.Duration, string, int, feed.Command) {
	if r.opt.OnCommand == nil {
		return nil
	}
	return func(now time.Duration, player string, sendFrame int, c feed.Command) {
		r.opt.OnCommand(name, now-r.startAt, player, sendFrame, c)
	}
}
