package main

import (
	"errors"
	"io"
	"net"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/config"
	"github.com/lagscope/lagscope/metrics"
	"github.com/lagscope/lagscope/names"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/live"
	"github.com/lagscope/lagscope/probe/session"
	"github.com/lagscope/lagscope/themes"
	"github.com/lagscope/lagscope/ui"
)

// What the live commands (host, join, watch, demo) share: their flags
// and the live.RunConfig those flags make. What the flags
// open and the run itself are probe/live's (live.Host, live.Join,
// live.RunDemo).

// defaultPort is where a host listens unless told otherwise,
// and the port a join address without one means.
const defaultPort = "7373"

// liveFlags are the flags every live command shares.
type liveFlags struct {
	fs       *pflag.FlagSet
	name     string
	key      string
	fps      int
	asJSON   bool
	duration time.Duration
	record   string
	report   string
	metrics  string
	front    frontMode // how runConfig shows the session
	theme    string
	logFile  string
	trace    string // host, join, watch: the peer looked at closely from the start
	noTrace  bool   // host, join, watch: trace nothing, send no probe
	// Load tests (host, join, watch): the member to test against, no
	// tests from others, the cap as typed.
	loadTest    string
	noLoadTests bool
	loadCap     string
	load        session.LoadConfig

	// What the config file adds (cmd_settings.go).
	cmd    string
	conf   *config.Config
	alerts probe.AlertConfig
	bell   bool
}

// addLiveFlags declares the shared flags. An observer has no use for
// --fps (it cannot change the game speed): watch accepts it, so scripts
// written against the shared flag list keep working, but does not list it.
func addLiveFlags(fs *pflag.FlagSet, cmd string) *liveFlags {
	lf := &liveFlags{fs: fs, cmd: cmd}
	fs.StringVar(&lf.name, "name", defaultName(), "your name in the session, unique there: up to 32 bytes (32 plain letters, fewer with accents, CJK or emoji)")
	fs.StringVar(&lf.key, "key", "", "pre-shared key: every datagram is sealed with it (all machines need the same)")
	switch cmd {
	case "host", "demo":
		fs.IntVar(&lf.fps, "fps", 30, "game speed: the frame-rate cap, frames per second")
	case "join":
		fs.IntVar(&lf.fps, "fps", 30, "ask for this game speed once the game runs (the host's --fps sets the session's)")
	default:
		fs.IntVar(&lf.fps, "fps", 30, "not used by an observer")
		fs.MarkHidden("fps")
	}
	fs.BoolVar(&lf.asJSON, "json", false, "print NDJSON events on stdout instead of the TUI")
	fs.DurationVar(&lf.duration, "duration", 0, "leave cleanly after this long and exit 0 (default: until Ctrl-C)")
	fs.StringVar(&lf.record, "record", "", "write a recording to `FILE` (lagscope replay, lagscope report)")
	fs.StringVar(&lf.report, "report", "", "write a report to `FILE` on exit (.md markdown, .json JSON, else text)")
	fs.StringVar(&lf.metrics, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics")
	fs.StringVar(&lf.theme, "theme", "", "TUI colour theme: "+strings.Join(themes.Names(), ", "))
	fs.StringVar(&lf.logFile, "log", "", "write a debug log to `FILE`")
	if cmd != "demo" {
		fs.StringVar(&lf.trace, "trace", "", "look closely at the hops of the link to `NAME` from the start, a round of probes a second (the path events)")
		fs.BoolVar(&lf.noTrace, "no-trace", false, "trace no link's hops: send no probes at all (the config file's trace = false)")
		fs.StringVar(&lf.loadTest, "load-test", "", "run a latency-under-load test toward `NAME` once the game has run 15 s (the load event)")
		fs.BoolVar(&lf.noLoadTests, "no-load-tests", false, "refuse load tests others ask this machine for")
		fs.StringVar(&lf.loadCap, "load-cap", "50mbit", "the most a load test sends each way, e.g. 20mbit, 500kbit, 1gbit")
	}
	return lf
}

// defaultName is the login name when it makes a valid player name.
func defaultName() string {
	u, err := user.Current()
	login := ""
	if err == nil {
		login = u.Username
	}
	return nameFromLogin(login, os.Getenv("USER"))
}

// nameFromLogin picks the default player name from the account's login
// name, then $USER, then "player". On Windows the login name carries the
// machine or domain (`DESKTOP-XXXX\Name`); only the part after the last
// backslash names the player, or every Windows player would show as the
// first letters of a machine name.
func nameFromLogin(login, env string) string {
	for _, n := range []string{login, env} {
		if i := strings.LastIndexByte(n, '\\'); i >= 0 {
			n = n[i+1:]
		}
		if session.CheckName(n) == nil {
			return n
		}
	}
	return "player"
}

// check validates the shared flags; every error is a usage error.
func (lf *liveFlags) check() error {
	if err := lf.settle(); err != nil {
		return err
	}
	// A name goes on the wire in its canonical form; one that
	// is not canonical (fullwidth letters, spaces at the ends) is refused
	// with the form to type, so what the user typed is what others see.
	c, err := names.Validate(lf.name)
	if err != nil {
		return usagef("--name: %v", err)
	}
	if c != lf.name {
		return usagef("--name %q: write it as %q", lf.name, c)
	}
	if lf.fs.Changed("key") && lf.key == "" {
		return usagef("--key: the key is empty")
	}
	if lf.fps < 1 || lf.fps > 1000 {
		return usagef("--fps %d: must be between 1 and 1000", lf.fps)
	}
	if lf.duration < 0 {
		return usagef("--duration %v: must not be negative", lf.duration)
	}
	if lf.theme != "" {
		if _, ok := themes.ByName(lf.theme); !ok {
			return usagef("--theme %q: one of %s", lf.theme, strings.Join(themes.Names(), ", "))
		}
	}
	if lf.trace != "" {
		if c, err := names.Validate(lf.trace); err != nil || c != lf.trace {
			return usagef("--trace %q: not a player name as the session writes it", lf.trace)
		}
		if lf.noTrace {
			return usagef("--trace %q with --no-trace (or trace = false in the config file): tracing is off", lf.trace)
		}
	}
	if err := lf.checkLoad(); err != nil {
		return err
	}
	if lf.metrics != "" {
		if _, _, err := net.SplitHostPort(lf.metrics); err != nil {
			return usagef("--metrics %q: want HOST:PORT or :PORT", lf.metrics)
		}
	}
	return nil
}

// keyBytes is the pre-shared key, or nil.
func (lf *liveFlags) keyBytes() []byte {
	if lf.key == "" {
		return nil
	}
	return []byte(lf.key)
}

// newMetrics is the exporter behind --metrics. Its incident families
// count the incidents this machine tells (in the demo every machine
// publishes to it, and each tells the same incidents).
func (lf *liveFlags) newMetrics(session string) (live.MetricsExporter, error) {
	e, err := metrics.New(session)
	if err != nil {
		return nil, err
	}
	e.SetIncidentTeller(lf.name)
	return e, nil
}

// runConfig is the live run the shared flags ask for: NDJSON on stdout
// with --json; else the TUI on a terminal that can draw it, and a line of
// text a second anywhere else (chooseFront). lf.front records the choice.
func (lf *liveFlags) runConfig(cmd string, stdout io.Writer) live.RunConfig {
	rc := live.RunConfig{Cmd: cmd, Name: lf.name, Key: lf.keyBytes(), Speed: lf.fps, Duration: lf.duration,
		Record: lf.record, Report: lf.report, Metrics: lf.metrics, LogFile: lf.logFile, Stdout: stdout,
		Alerts: lf.alerts, NewMetrics: lf.newMetrics, Trace: lf.trace, NoTrace: lf.noTrace, Load: lf.load}
	mode, why := chooseFront(lf.asJSON, stdout, termEnv())
	lf.front = mode
	switch mode {
	case frontText:
		rc.Front = textFront(stdout, why)
	case frontTUI:
		theme, bell := lf.theme, lf.bell
		// q restores the terminal at once: the UI waits for the
		// session only this long; the leave goes on without a screen and
		// the process exits as soon as it is acknowledged.
		rc.Front = func(f feed.Feed) error {
			return ui.Run(f, ui.Options{Theme: theme, Bell: bell, QuitWait: uiQuitWait})
		}
	}
	return rc
}

// stdoutIsTerminal: the TUI only opens on a terminal.
func stdoutIsTerminal(stdout io.Writer) bool {
	f, ok := stdout.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// liveExit is a live run's exit code: 0 for a clean end, 2
// for a flag whose file, address or value cannot be used, 1 otherwise.
func liveExit(stderr io.Writer, cmd string, err error) int {
	if err == nil {
		return 0
	}
	var fe *live.FlagError
	if errors.As(err, &fe) {
		err = usagef("%s", fe.Msg)
	}
	return fail(stderr, cmd, err)
}

// uiQuitWait is how long the TUI waits after `q` for the session's end
// before it gives the terminal back: inside the 100 ms a user takes as
// instant.
const uiQuitWait = 50 * time.Millisecond
