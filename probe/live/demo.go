package live

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/session"
)

// The demo: one process, N players, each a real Session on its own UDP
// socket on loopback with its own driver goroutine, exactly as if each ran
// `lagscope host` or `lagscope join` — the only thing added is an impaired
// socket that holds each datagram back (or drops it) the way a real access
// link would.

// DemoConfig sets up a demo.
type DemoConfig struct {
	// Players is how many machines play, you included (default 4).
	Players int
	// Profile is "mix" (the default: LAN, cable, DSL and Wi-Fi players in
	// turn) or the name of one impair profile every player's access link
	// gets.
	Profile string
	Seed    uint64
	Speed   int
	Key     []byte
	Name    string // your name (default "you")
	// Spike adds the scripted latency spike (spikeStart…spikeEnd on the
	// second player's access link: every path to that player slows).
	Spike  bool
	Logger *slog.Logger
	// Start is the world's zero (default: now).
	Start time.Time
	// PublishAll makes every machine's driver publish updates (a metrics
	// exporter that shows every link); otherwise only yours does.
	PublishAll bool
	// Leaves script other players leaving (--leave NAME@DURATION): at each
	// time since the start, the named player's machine leaves cleanly, as
	// if its user had quit, and the game goes on without it (S7). Yours
	// cannot be named: --duration ends your session.
	Leaves []DemoLeave
	// Slow makes machines slow on purpose (--slow NAME=DURATION): each
	// frame of the named machine takes that much longer (it sleeps in its
	// frame work), which it measures and reports as its processing time
	// (S5), so the master lowers everyone's frame rate (S15).
	Slow map[string]time.Duration
	// OnCommand is your machine's Config.OnCommand (--record).
	OnCommand func(at time.Duration, player string, sendFrame int, c feed.Command)
	// Alerts are every machine's alert thresholds; zero values take the
	// defaults.
	Alerts probe.AlertConfig
}

// DemoLeave is one scripted leave: player Name quits At after the start.
type DemoLeave struct {
	Name string
	At   time.Duration
}

// maxDemoSlow bounds --slow: a frame that takes longer than a second is
// no game.
const maxDemoSlow = time.Second

// ParseDemoSlow reads --slow's NAME=DURATION, e.g. "bob=50ms".
func ParseDemoSlow(s string) (string, time.Duration, error) {
	name, d, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return "", 0, fmt.Errorf("%q: want NAME=DURATION, e.g. bob=50ms", s)
	}
	cost, err := time.ParseDuration(d)
	if err != nil || cost <= 0 || cost > maxDemoSlow {
		return "", 0, fmt.Errorf("%q: the extra time per frame must be a duration above 0 and at most %v, e.g. 50ms", s, maxDemoSlow)
	}
	return name, cost, nil
}

// ParseDemoLeave reads --leave's NAME@DURATION, e.g. "bob@40s".
func ParseDemoLeave(s string) (DemoLeave, error) {
	i := strings.LastIndexByte(s, '@')
	if i <= 0 || i == len(s)-1 {
		return DemoLeave{}, &DemoLeaveError{Leave: s, Why: "want NAME@DURATION, e.g. bob@40s"}
	}
	at, err := time.ParseDuration(s[i+1:])
	if err != nil || at <= 0 {
		return DemoLeave{}, &DemoLeaveError{Leave: s, Why: "the time must be a positive duration, e.g. 40s"}
	}
	return DemoLeave{Name: s[:i], At: at}, nil
}

// The script. The spike comes early enough that a newcomer sees the ladder
// worsen within the first minute (S11a) and lasts long enough for the
// link's SRTT to follow. When it is over the Wi-Fi player's burst loss
// still makes machines wait 0.1 s and more now and then, which holds the
// timing where it is (S11b: no improvement while anyone waits that long);
// once the interference calms, three good evaluations and a descent rung by
// rung (S11c, S11d) bring the target back to Fast before two minutes are up.
const (
	spikeStart = 10 * time.Second
	spikeEnd   = 30 * time.Second
	// spikeExtra is added each way: about 430 ms round trip on a cable
	// link, which needs rung 4 (Normal) at 30 fps.
	spikeExtra = 200 * time.Millisecond
	// calmAt is when Wi-Fi access links lose their burst loss (their
	// jitter stays).
	calmAt = 45 * time.Second
	// demoCommandsPerMinute is twice a live player's rate: twice the
	// clean samples, so SRTT follows the spike within seconds.
	demoCommandsPerMinute = 120
	// MaxDemoPlayers bounds the demo's machines (each is a socket and a
	// goroutine; 64 is the measured aim).
	MaxDemoPlayers = 128
)

// demoNames are the players' names in house order; beyond them, p9, p10…
var demoNames = []string{"ada", "bob", "cyd", "dee", "eli", "fay", "gus"}

// DemoProfiles names what --profile takes.
func DemoProfiles() []string {
	names := []string{"mix"}
	for _, np := range impair.Profiles() {
		names = append(names, np.Name)
	}
	return names
}

// demo is a running demo.
type demo struct {
	demoPlan
	cfg     DemoConfig
	start   time.Time
	socks   []*impairedSocket
	runners []*Runner
	stop    sync.Once
	leaving sync.WaitGroup // the scripted leaves' timers
}

// settle fills in cfg's defaults (four players, "you", the mix profile)
// and checks the player count: the one rule for a live and a virtual demo.
func (cfg *DemoConfig) settle() error {
	if cfg.Players == 0 {
		cfg.Players = 4
	}
	if cfg.Players < 1 || cfg.Players > MaxDemoPlayers {
		return fmt.Errorf("live: a demo has 1 to %d players", MaxDemoPlayers)
	}
	if cfg.Name == "" {
		cfg.Name = "you"
	}
	if cfg.Profile == "" {
		cfg.Profile = "mix"
	}
	return nil
}

// startDemo opens every player's socket, forms the session (you host, the
// others join) and starts every driver. opt applies to your driver; the
// others only publish with PublishAll.
func startDemo(cfg DemoConfig, opt Options) (*demo, error) {
	if err := cfg.settle(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Now()
	}
	plan, err := newDemoPlan(cfg)
	if err != nil {
		return nil, err
	}
	d := &demo{demoPlan: plan, cfg: cfg, start: cfg.Start}
	udps, index, err := listenDemoSockets(cfg.Players)
	if err != nil {
		return nil, err
	}
	for i, udp := range udps {
		d.socks = append(d.socks, &impairedSocket{UDPTransport: udp, link: impair.NewSocket(udp, d.script(i, index, cfg.Seed, d.start))})
	}
	host := d.socks[0].LocalAddr()
	for i, sock := range d.socks {
		if err := d.startMachine(i, sock, host, opt); err != nil {
			d.closeSockets()
			return nil, err
		}
	}
	d.scheduleLeaves()
	return d, nil
}

// listenDemoSockets opens n UDP sockets on loopback, one a player, and
// indexes them by address; if one cannot be opened, those already open are
// closed again.
func listenDemoSockets(n int) ([]*netcore.UDPTransport, map[netip.AddrPort]int, error) {
	udps := make([]*netcore.UDPTransport, 0, n)
	index := make(map[netip.AddrPort]int, n)
	for i := range n {
		udp, err := netcore.ListenUDP("127.0.0.1:0")
		if err != nil {
			for _, u := range udps {
				u.Close()
			}
			return nil, nil, err
		}
		udps = append(udps, udp)
		index[udp.LocalAddr()] = i
	}
	return udps, index, nil
}

// startMachine makes player i's session on sock, hosting it (i 0: yours,
// driven with opt and the narration) or joining host, and starts its
// driver.
func (d *demo) startMachine(i int, sock *impairedSocket, host netip.AddrPort, opt Options) error {
	cfg := d.cfg
	// The demo's machines share one process and loopback: they run
	// plain, as the simulator does.
	c := session.Config{Name: d.names[i], Key: cfg.Key, Plain: true, Speed: cfg.Speed, Players: cfg.Players,
		CommandsPerMinute: demoCommandsPerMinute, Seed: cfg.Seed*1_000_003 + uint64(i),
		Logger: cfg.Logger.With("machine", d.names[i]),
		// Only your machine draws the matrix: the others stream their
		// telemetry to it alone, and it streams its own to nobody
		// (its acks go back on their own, as an observer's do).
		TelemetryTo: []string{d.names[0]}, Alerts: cfg.Alerts}
	if i == 0 {
		c.TelemetryTo = []string{}
		c.OnCommand = cfg.OnCommand
	}
	c.FrameClock = frameClock()
	if cost := d.slow[i]; cost > 0 {
		c.OnFrame = func(int, uint32) { time.Sleep(cost) }
	}
	var s *session.Session
	var err error
	if i == 0 {
		s, err = session.NewHost(c, sock)
	} else {
		c.Speed = 0
		s, err = session.NewJoiner(c, session.RolePlayer, sock, host)
	}
	if err != nil {
		return err
	}
	o := Options{Start: d.start, Publish: cfg.PublishAll}
	if i == 0 {
		o = opt
		o.Start = d.start
		o.timeline = append(d.narration(), opt.timeline...)
	}
	d.runners = append(d.runners, Run(s, sock, o))
	return nil
}

// scheduleLeaves starts a timer for each scripted leave: at its time the
// player's machine leaves cleanly, unless its driver has ended by then.
func (d *demo) scheduleLeaves() {
	for _, l := range d.leaves {
		r := d.runners[l.index]
		d.leaving.Add(1)
		go func() {
			defer d.leaving.Done()
			t := time.NewTimer(time.Until(d.start.Add(l.at)))
			defer t.Stop()
			select {
			case <-t.C:
				r.Stop()
			case <-r.Done():
			}
		}()
	}
}

// feed is your machine's feed.
func (d *demo) feed() *Runner { return d.runners[0] }

// allRunners are every machine's drivers, you first.
func (d *demo) allRunners() []*Runner { return d.runners }

// sockets are the players' UDP sockets, for their counts.
func (d *demo) sockets() []*netcore.UDPTransport {
	out := make([]*netcore.UDPTransport, len(d.socks))
	for i, s := range d.socks {
		out[i] = s.UDPTransport
	}
	return out
}

// Stop ends every machine at once, yours too: they are all this
// process's own, so there is nobody outside it to tell, and a leave
// handshake (a removal that must execute on the others' frames) would only
// hold the exit.
func (d *demo) Stop() {
	d.stop.Do(func() {
		for _, r := range d.runners {
			r.Abort()
		}
	})
}

// Wait waits for every machine, closes the sockets and returns your
// session's error. Every runner's feed must be read to its end (or not
// publish) for Wait to return.
func (d *demo) Wait() error {
	var err error
	for i, r := range d.runners {
		e := r.Wait()
		if i == 0 {
			err = e
		}
	}
	d.leaving.Wait()
	d.closeSockets()
	return err
}

// maxLate is the latest any machine's frame loop has run a frame after it
// was due so far: the longest wait the process caused itself.
func (d *demo) maxLate() time.Duration {
	var m time.Duration
	for _, r := range d.runners {
		m = max(m, r.maxLateness())
	}
	return m
}

func (d *demo) closeSockets() {
	for _, s := range d.socks {
		s.UDPTransport.Close()
		s.link.Drop()
	}
}

// impairedSocket is a player's UDP socket with its access link in front
// (an impair.Socket following the demo's plan); the driver flushes what is
// due (pacer). Everything happens on the owning driver's goroutine.
type impairedSocket struct {
	*netcore.UDPTransport
	link *impair.Socket
}

var (
	_ Socket = (*impairedSocket)(nil)
	_ pacer  = (*impairedSocket)(nil)
)

// Send implements netcore.Transport. p is copied: the caller reuses it.
func (s *impairedSocket) Send(to netip.AddrPort, p []byte) error {
	if len(p) > netcore.MaxDatagram {
		return netcore.ErrTooLarge
	}
	return s.link.Send(to, p)
}

// Flush implements pacer: it sends every datagram that is due.
func (s *impairedSocket) Flush(now time.Duration) { s.link.Flush(now) }

// NextDue implements pacer.
func (s *impairedSocket) NextDue() (time.Duration, bool) { return s.link.NextDue() }

// errDemoProfile is returned for an unknown --profile.
var errDemoProfile = errors.New("live: unknown demo profile")

// ErrDemoSlow is returned for a --slow that names no player.
var ErrDemoSlow = errors.New("live: bad --slow")

// DemoLeaveError is a scripted leave that cannot be: unreadable, or naming
// nobody who can leave.
type DemoLeaveError struct {
	Leave string // as given
	Why   string
}

func (e *DemoLeaveError) Error() string { return "live: demo leave " + e.Leave + ": " + e.Why }
