package live

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/session"
)

// A live command's run, from its flags on: the files and endpoints the
// shared flags open (debug log, recording, report, metrics listener), the
// machine's socket and session, and the loop that hands every update to
// the sinks — NDJSON or the front end, recording, metrics — until Ctrl-C,
// --duration or the session's own end. The command only turns flags into
// a RunConfig and calls Host, Join or RunDemo.

// RunConfig is what every live command shares (the shared flags of
// docs/cli.md), already checked by the command.
type RunConfig struct {
	Cmd  string // "host", "join", "watch", "demo": the log's and recording's label
	Name string // your player name
	Key  []byte // pre-shared key (Q7); nil for none
	// Speed is the game speed asked for (0: the host's).
	Speed    int
	Duration time.Duration // leave cleanly after this long; 0: until Ctrl-C
	Record   string        // recording path, "" for none
	Report   string        // report path, "" for none
	Metrics  string        // metrics listen address, "" for none
	// NewMetrics makes the exporter the metrics listener serves, once the
	// session's name is known. The command wires it, so the live driver
	// does not depend on the exporter; with Metrics set it is required.
	NewMetrics func(session string) (MetricsExporter, error)
	LogFile    string // debug log path, "" for none
	// Stdout gets NDJSON when Front is nil.
	Stdout io.Writer
	// Front, when set, shows the updates instead of NDJSON (the TUI); an
	// error from it ends the session.
	Front func(feed.Feed) error
	// Alerts are the alert thresholds (the config file's [alerts]); zero
	// values take the defaults.
	Alerts probe.AlertConfig
	// Trace names the machine whose link is looked at closely from the
	// start (--trace; session.Config.Trace); "" for none.
	Trace string
	// NoTrace: no link is traced and no probe sent (--no-trace, or trace =
	// false in the config file; session.Config.NoTrace).
	NoTrace bool
	// Load is what the flags say of load tests (--load-test, --load-cap,
	// --no-load-tests).
	Load session.LoadConfig
	// Joined, when set, is called once, on the sinks' goroutine, when this
	// machine is in a session (hosting, or welcomed by the host): the
	// command remembers the host then (the config file's last_host).
	Joined func()
}

// MetricsExporter is what the metrics listener needs of an exporter: it
// takes every update and serves the scrape endpoint.
type MetricsExporter interface {
	Observe(u feed.Update)
	Handler() http.Handler
}

// FlagError is a flag whose file, address or value cannot be used: the
// command reports it as a usage error (exit 2).
type FlagError struct{ Msg string }

func (e *FlagError) Error() string { return e.Msg }

func flagErrorf(format string, a ...any) error { return &FlagError{Msg: fmt.Sprintf(format, a...)} }

// HostConfig is `lagscope host`'s own part.
type HostConfig struct {
	Listen      string
	Players     int
	DropTimeout time.Duration
	// Listening, when set, is called once the socket is bound, with its
	// address. The guide it returns is what the lobby shows others to join
	// (session.Config.Guide); it stays on this machine.
	Listening func(bound netip.AddrPort) *feed.JoinGuide
}

// Host runs `lagscope host`: it listens, seats players and plays until
// the run ends. The error is nil for a clean end.
func Host(cfg RunConfig, hc HostConfig) error {
	return runOn(cfg, "--listen", hc.Listen, func(sc session.Config, udp *netcore.UDPTransport) (*session.Session, error) {
		sc.Players, sc.DropTimeout = hc.Players, hc.DropTimeout
		if hc.Listening != nil {
			sc.Guide = hc.Listening(udp.LocalAddr())
		}
		return session.NewHost(sc, udp)
	})
}

// runOn is what host, join and watch share: it opens cfg's outputs and a
// socket bound at addr (flag names it in an error), has start make the
// session from the outputs' config, and runs it. A failure before the run
// abandons the outputs, so nothing is written.
func runOn(cfg RunConfig, flag, addr string, start func(session.Config, *netcore.UDPTransport) (*session.Session, error)) error {
	out, err := open(cfg)
	if err != nil {
		return err
	}
	udp, err := netcore.ListenUDP(addr)
	if err != nil {
		out.abandon()
		return bindError(flag, addr, err)
	}
	defer udp.Close()
	s, err := start(out.config(), udp)
	if err != nil {
		out.abandon()
		return err
	}
	return out.runSession(s, udp)
}

// bindError is why a socket could not be opened at addr. The system's
// refusal (the port in use, an address this machine does not have, no
// permission) is a runtime failure in the system's words (exit 1, as for
// impair and --metrics, docs/cli.md); an address that does not even
// parse is bad input (exit 2).
func bindError(flag, addr string, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fmt.Errorf("%s %q: %w", flag, addr, err)
	}
	return flagErrorf("%s %q: %v", flag, addr, err)
}

// JoinConfig is `lagscope join` and `watch`'s own part.
type JoinConfig struct {
	Host netip.AddrPort
	Bind string
	Role session.Role
	// KeyArg is the key as the command line gave it (--key), "" when it
	// came from a file or there is none (session.Config.KeyArg).
	KeyArg string
}

// Join runs `lagscope join` (RolePlayer) or `watch` (RoleObserver).
func Join(cfg RunConfig, jc JoinConfig) error {
	return runOn(cfg, "--bind", jc.Bind, func(sc session.Config, udp *netcore.UDPTransport) (*session.Session, error) {
		sc.KeyArg = jc.KeyArg
		return session.NewJoiner(sc, jc.Role, udp, jc.Host)
	})
}

func (out *outputs) runSession(s *session.Session, udp *netcore.UDPTransport) error {
	r := Run(s, udp, Options{Publish: true, Start: out.started,
		process: out.processStats(func() []*netcore.UDPTransport { return []*netcore.UDPTransport{udp} },
			func(own driverStats) time.Duration { return own.MaxLate })})
	return out.run(r, nil, r.Stop, r.Wait)
}

// RunDemo runs `lagscope demo`: dc's Key, Speed, Name, Logger, Start,
// PublishAll and OnCommand come from cfg. A bad --leave is a
// *DemoLeaveError.
func RunDemo(cfg RunConfig, dc DemoConfig) error {
	out, err := open(cfg)
	if err != nil {
		return err
	}
	var d *demo
	opt := Options{Publish: true,
		process: out.processStats(func() []*netcore.UDPTransport { return d.sockets() },
			func(driverStats) time.Duration { return d.maxLate() })}
	dc.Key, dc.Speed, dc.Name, dc.Alerts = cfg.Key, cfg.Speed, cfg.Name, cfg.Alerts
	dc.Logger, dc.Start = out.logger, out.started
	dc.PublishAll, dc.OnCommand = out.mlisten != nil, out.onCommand()
	d, err = startDemo(dc, opt)
	if err != nil {
		out.abandon()
		return err
	}
	var extra []feed.Feed
	if out.mlisten != nil {
		for _, r := range d.allRunners()[1:] {
			extra = append(extra, r)
		}
	}
	return out.run(d.feed(), extra, d.Stop, d.Wait)
}
