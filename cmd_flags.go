package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/metrics"
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/live"
	"github.com/lagscope/lagscope/probe/record"
	"github.com/lagscope/lagscope/themes"
	"github.com/lagscope/lagscope/ui"
)

// What the live commands (host, join, watch, demo) share: their flags
// (CONTRACTS.md), the files and endpoints those flags open, and the run
// loop that hands a session's updates to every sink — NDJSON, recording,
// metrics — and to the TUI when stdout is a terminal.

// defaultPort is where a host listens unless told otherwise (CONTRACTS.md),
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
	theme    string
	logFile  string
}

// addLiveFlags declares the shared flags. An observer has no use for
// --fps (it cannot change the game speed): watch accepts it, so scripts
// written against the shared flag list keep working, but does not list it.
func addLiveFlags(fs *pflag.FlagSet, cmd string) *liveFlags {
	lf := &liveFlags{fs: fs}
	fs.StringVar(&lf.name, "name", defaultName(), "your name in the session (1–32 printable characters, unique there)")
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
	return lf
}

// defaultName is the login name when it makes a valid player name.
func defaultName() string {
	if u, err := user.Current(); err == nil && live.CheckName(u.Username) == nil {
		return u.Username
	}
	if n := os.Getenv("USER"); live.CheckName(n) == nil {
		return n
	}
	return "player"
}

// check validates the shared flags; every error is a usage error.
func (lf *liveFlags) check() error {
	if err := live.CheckName(lf.name); err != nil {
		return usagef("--name %q: %v", lf.name, err)
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

// liveEnv is what the shared flags opened: the debug log, the recording,
// the report file, the metrics listener.
type liveEnv struct {
	lf      *liveFlags
	cmd     string
	logger  *slog.Logger
	logFile *os.File
	rec     *record.Writer
	recPath string
	recTemp bool
	report  *os.File
	mlisten net.Listener
	exp     atomic.Pointer[metrics.Exporter]
	expMu   sync.Mutex // one goroutine makes the exporter
	started time.Time
}

// open opens everything the shared flags ask for. A flag whose file or
// address cannot be opened is a usage error, and whatever was already
// opened is closed again (and files it created removed).
func (lf *liveFlags) open(cmd string) (env *liveEnv, err error) {
	env = &liveEnv{lf: lf, cmd: cmd, logger: slog.New(slog.DiscardHandler), started: time.Now()}
	defer func() {
		if err != nil {
			env.abandon()
			env = nil
		}
	}()
	if lf.logFile != "" {
		f, err := os.Create(lf.logFile)
		if err != nil {
			return env, usagef("--log: %v", err)
		}
		env.logFile = f
		env.logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug})).With("cmd", cmd)
	}
	if lf.report != "" {
		f, err := os.Create(lf.report)
		if err != nil {
			return env, usagef("--report: %v", err)
		}
		env.report = f
	}
	path := lf.record
	if path == "" && lf.report != "" {
		// A report is made from a recording: keep one for the length of
		// the run.
		f, err := os.CreateTemp("", "lagscope-*.lsrec")
		if err != nil {
			return env, err
		}
		path = f.Name()
		f.Close()
		env.recTemp = true
	}
	if path != "" {
		w, err := record.Create(path, record.Header{Program: "lagscope " + cmd, Self: lf.name,
			Started: env.started.UTC().Format(time.RFC3339Nano)})
		if err != nil {
			if env.recTemp {
				os.Remove(path)
			}
			return env, usagef("--record: %v", err)
		}
		env.rec, env.recPath = w, path
	}
	if lf.metrics != "" {
		l, err := net.Listen("tcp", lf.metrics)
		if err != nil {
			return env, usagef("--metrics: %v", err)
		}
		env.mlisten = l
	}
	return env, nil
}

// abandon closes what open opened after a failure.
func (env *liveEnv) abandon() {
	if env.logFile != nil {
		env.logFile.Close()
		os.Remove(env.logFile.Name())
	}
	if env.report != nil {
		env.report.Close()
		os.Remove(env.report.Name())
	}
	if env.rec != nil {
		env.rec.Close()
		os.Remove(env.recPath)
	}
	if env.mlisten != nil {
		env.mlisten.Close()
	}
}

// config is the session config the shared flags make.
func (env *liveEnv) config() live.Config {
	return live.Config{Name: env.lf.name, Key: env.lf.keyBytes(), Speed: env.lf.fps, Logger: env.logger,
		CommandsPerMinute: liveCommandsPerMinute, OnCommand: env.onCommand()}
}

// onCommand stores every command this machine executes in the recording,
// with the send frame it ran on and the frame it was scheduled for (S13);
// nil without a recording. A write error is the Writer's, reported as the
// run ends.
func (env *liveEnv) onCommand() func(time.Duration, string, int, probe.Command) {
	if env.rec == nil {
		return nil
	}
	return func(at time.Duration, player string, sendFrame int, c probe.Command) {
		env.rec.Command(at, env.lf.name, record.CommandOf(player, sendFrame, c))
	}
}

// liveCommandsPerMinute is each live player's synthetic command rate: as in
// a simulation (CONTRACTS.md's default), about one reliable frame packet a
// second, which keeps every link measured (T6).
const liveCommandsPerMinute = 60

// processStats makes the summary's process line from the sockets a command
// runs: CPU time against wall time (getrusage), datagrams through the
// sockets, and the latest the driver woke for a deadline.
func (env *liveEnv) processStats(socks func() []*netcore.UDPTransport, late func(live.Stats) time.Duration) func(live.Stats) *probe.ProcessStats {
	return func(own live.Stats) *probe.ProcessStats {
		wall := time.Since(env.started)
		ps := &probe.ProcessStats{WallMs: ms(wall), MaxLateMs: ms(late(own))}
		if cpu, ok := live.ProcessCPU(); ok {
			ps.CPUMs = ms(cpu)
			if wall > 0 {
				ps.CPUShare = float64(cpu) / float64(wall)
			}
		}
		for _, s := range socks() {
			st := s.Stats()
			ps.DatagramsSent += st.Sent
			ps.DatagramsReceived += st.Received
		}
		return ps
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// stdoutIsTerminal: the TUI only opens on a terminal.
func stdoutIsTerminal(stdout io.Writer) bool {
	f, ok := stdout.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// run drives the session behind feed until it ends: Ctrl-C or --duration
// asks it to leave cleanly (stop). Every update goes to the sinks the flags
// asked for; the TUI shows it when stdout is a terminal and --json is not
// set, NDJSON goes to stdout otherwise. It returns the exit code.
//
// extra are more machines' feeds (the demo's other players with --metrics):
// they go to the metrics exporter only.
func (env *liveEnv) run(feed probe.Feed, extra []probe.Feed, stop func(), wait func() error, stdout, stderr io.Writer) int {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	finished := make(chan struct{})
	go func() {
		var timeout <-chan time.Time
		if env.lf.duration > 0 {
			t := time.NewTimer(env.lf.duration)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ctx.Done():
			cancel() // a second Ctrl-C ends the process at once
		case <-timeout:
		case <-finished:
			return
		}
		stop()
	}()

	tui := !env.lf.asJSON && stdoutIsTerminal(stdout)
	var sinks []probe.UpdateSink
	if !tui {
		sinks = append(sinks, probe.NewNDJSONWriter(stdout))
	}
	if env.rec != nil {
		sinks = append(sinks, probe.UpdateSinkFunc(func(u probe.Update) error { env.rec.Observe(u); return env.rec.Err() }))
	}
	srvDone := make(chan struct{})
	if env.mlisten != nil {
		sinks = append(sinks, probe.UpdateSinkFunc(env.observeMetrics))
		srv := &http.Server{Handler: env.metricsHandler(), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			defer close(srvDone)
			srv.Serve(env.mlisten)
		}()
		defer func() {
			shut, c := context.WithTimeout(context.Background(), time.Second)
			defer c()
			srv.Shutdown(shut)
			<-srvDone
		}()
	}
	var extraDone sync.WaitGroup
	for _, f := range extra {
		extraDone.Add(1)
		go func() {
			defer extraDone.Done()
			for u := range f.Updates() {
				if env.mlisten != nil {
					env.observeMetrics(u)
				}
			}
		}()
	}
	teed := probe.Tee(feed, sinks...)
	var uiErr error
	if tui {
		uiErr = ui.Run(teed, ui.Options{Theme: env.lf.theme})
		if uiErr != nil {
			stop()
		}
	}
	for range teed.Updates() {
		// The TUI has gone (or never came): the sinks still see the rest.
	}
	// This machine's session is over (its own quit, a Control from the
	// TUI, or an error): the demo's other machines leave with it.
	stop()
	err := wait()
	extraDone.Wait()
	close(finished)
	if env.logFile != nil {
		env.logFile.Close()
	}
	sinkErr := teed.Err()
	if env.rec != nil {
		if cerr := env.rec.Close(); cerr != nil && sinkErr == nil {
			sinkErr = fmt.Errorf("--record: %w", cerr)
		}
	}
	if env.report != nil {
		if rerr := env.writeReport(); rerr != nil && sinkErr == nil {
			sinkErr = rerr
		}
	}
	if env.recTemp {
		os.Remove(env.recPath)
	}
	switch {
	case err != nil:
		return fail(stderr, env.cmd, err)
	case uiErr != nil:
		return fail(stderr, env.cmd, uiErr)
	case sinkErr != nil && !errors.Is(sinkErr, syscall.EPIPE):
		return fail(stderr, env.cmd, sinkErr)
	}
	return 0
}

// writeReport sums up the recording (lagscope report's output) into the
// --report file, in the format its extension names.
func (env *liveEnv) writeReport() error {
	defer env.report.Close()
	rec, err := record.Open(env.recPath)
	if err != nil && rec == nil {
		return fmt.Errorf("--report: %w", err)
	}
	format := "text"
	switch strings.ToLower(filepath.Ext(env.report.Name())) {
	case ".md", ".markdown":
		format = "markdown"
	case ".json":
		format = "json"
	}
	if err := record.Summarize(rec).Write(env.report, format); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}

// observeMetrics hands an update to the exporter, which is made once the
// session's name is known (a joiner learns it from the host's Welcome):
// every machine of a session labels its series with the same session.
func (env *liveEnv) observeMetrics(u probe.Update) error {
	e := env.exp.Load()
	if e == nil {
		if u.View.Session == "" {
			return nil
		}
		env.expMu.Lock()
		if e = env.exp.Load(); e == nil {
			var err error
			if e, err = metrics.New(u.View.Session); err != nil {
				env.expMu.Unlock()
				return fmt.Errorf("--metrics: %w", err)
			}
			env.exp.Store(e)
		}
		env.expMu.Unlock()
	}
	e.Observe(u)
	return nil
}

// metricsHandler serves the exporter once there is one; before (a joiner
// still in the handshake) it says so with 503, which Prometheus records as
// a failed scrape rather than as zeros.
func (env *liveEnv) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		e := env.exp.Load()
		if e == nil {
			http.Error(w, "lagscope: not in a session yet", http.StatusServiceUnavailable)
			return
		}
		e.Handler().ServeHTTP(w, r)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("lagscope: metrics at /metrics\n"))
	})
	return mux
}

// hostPort resolves a command-line address; a missing port means the
// default one.
func hostPort(s string) (*net.UDPAddr, error) {
	if _, _, err := net.SplitHostPort(s); err != nil {
		s = net.JoinHostPort(strings.Trim(s, "[]"), defaultPort)
	}
	a, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		return nil, err
	}
	if a.Port == 0 || a.IP == nil || a.IP.IsUnspecified() {
		return nil, fmt.Errorf("%q: want HOST:PORT", s)
	}
	return a, nil
}
