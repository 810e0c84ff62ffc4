package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/record"
	"github.com/lagscope/lagscope/probe/session"
	"github.com/lagscope/lagscope/units"
)

// outputs is what the shared flags opened: the debug log, the recording,
// the report file, the metrics listener.
type outputs struct {
	cfg     RunConfig
	logger  *slog.Logger
	logFile *os.File
	rec     *record.Writer
	recPath string
	recTemp bool
	report  *os.File
	mlisten net.Listener
	exp     atomic.Pointer[MetricsExporter]
	expMu   sync.Mutex // one goroutine makes the exporter
	started time.Time
}

// open opens everything the shared flags ask for. A flag whose file or
// address cannot be opened is a FlagError, and whatever was already
// opened is closed again (and files it created removed).
func open(cfg RunConfig) (out *outputs, err error) {
	out = &outputs{cfg: cfg, logger: slog.New(slog.DiscardHandler), started: time.Now()}
	defer func() {
		if err != nil {
			out.abandon()
			out = nil
		}
	}()
	if cfg.LogFile != "" {
		f, err := os.Create(cfg.LogFile)
		if err != nil {
			return out, flagErrorf("--log: %v", err)
		}
		out.logFile = f
		out.logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug})).With("cmd", cfg.Cmd)
	}
	if cfg.Report != "" {
		f, err := os.Create(cfg.Report)
		if err != nil {
			return out, flagErrorf("--report: %v", err)
		}
		out.report = f
	}
	path := cfg.Record
	if path == "" && cfg.Report != "" {
		// A report is made from a recording: keep one for the length of
		// the run.
		f, err := os.CreateTemp("", "lagscope-*.lsrec")
		if err != nil {
			return out, err
		}
		path = f.Name()
		f.Close()
		out.recTemp = true
	}
	if path != "" {
		w, err := record.Create(path, record.Header{Program: "lagscope " + cfg.Cmd, Self: cfg.Name,
			Started: out.started.UTC().Format(time.RFC3339Nano)})
		if err != nil {
			if out.recTemp {
				os.Remove(path)
			}
			return out, flagErrorf("--record: %v", err)
		}
		out.rec, out.recPath = w, path
	}
	if cfg.Metrics != "" {
		l, err := net.Listen("tcp", cfg.Metrics)
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return out, fmt.Errorf("--metrics: %w", err) // runtime failure, exit 1
			}
			return out, flagErrorf("--metrics: %v", err)
		}
		out.mlisten = l
	}
	return out, nil
}

// abandon closes what open opened after a failure.
func (out *outputs) abandon() {
	if out.logFile != nil {
		out.logFile.Close()
		os.Remove(out.logFile.Name())
	}
	if out.report != nil {
		out.report.Close()
		os.Remove(out.report.Name())
	}
	if out.rec != nil {
		out.rec.Close()
		os.Remove(out.recPath)
	}
	if out.mlisten != nil {
		out.mlisten.Close()
	}
}

// config is the session config the shared flags make.
func (out *outputs) config() session.Config {
	return session.Config{Name: out.cfg.Name, Key: out.cfg.Key, Speed: out.cfg.Speed, Logger: out.logger,
		CommandsPerMinute: liveCommandsPerMinute, OnCommand: out.onCommand(), FrameClock: frameClock(),
		Alerts: out.cfg.Alerts, Trace: out.cfg.Trace, NoTrace: out.cfg.NoTrace, Load: out.cfg.Load}
}

// frameClock is a live machine's FrameClock: the monotonic wall clock,
// read by the peer around each frame's work to measure its processing time
// (S5). The peer takes it as a function so that it never reads the wall
// clock itself (it runs in virtual time too).
func frameClock() func() time.Duration {
	start := time.Now()
	return func() time.Duration { return time.Since(start) }
}

// onCommand stores every command this machine executes in the recording,
// with the send frame it ran on and the frame it was scheduled for (S13);
// nil without a recording. A write error is the Writer's, reported as the
// run ends.
func (out *outputs) onCommand() func(time.Duration, string, int, feed.Command) {
	if out.rec == nil {
		return nil
	}
	return func(at time.Duration, player string, sendFrame int, c feed.Command) {
		out.rec.Command(at, out.cfg.Name, record.CommandOf(player, sendFrame, c))
	}
}

// liveCommandsPerMinute is each live player's synthetic command rate: as in
// a simulation (the default `commands_per_minute` of docs/simulation.md),
// about one reliable frame packet a second, which keeps every link
// measured (T6).
const liveCommandsPerMinute = 60

// processStats makes the summary's process line from the sockets a command
// runs: CPU time against wall time (getrusage), datagrams through the
// sockets and how long they waited there before a read, and the latest
// the driver woke for a deadline.
func (out *outputs) processStats(socks func() []*netcore.UDPTransport, late func(driverStats) time.Duration) func(driverStats) *feed.ProcessStats {
	return func(own driverStats) *feed.ProcessStats {
		wall := time.Since(out.started)
		ps := &feed.ProcessStats{WallMs: units.Millis(wall), MaxLateMs: units.Millis(late(own))}
		if cpu, ok := processCPU(); ok {
			ps.CPUMs = units.Millis(cpu)
			if wall > 0 {
				ps.CPUShare = float64(cpu) / float64(wall)
			}
		}
		var delays netcore.DelayCounts
		for _, s := range socks() {
			st := s.Stats()
			ps.DatagramsSent += st.Sent
			ps.DatagramsReceived += st.Received
			delays.Merge(st.ReadDelay)
		}
		if p50, ok := delays.Quantile(0.5); ok {
			p99, _ := delays.Quantile(0.99)
			ms50, ms99 := units.Millis(p50), units.Millis(p99)
			ps.ReadDelayP50Ms, ps.ReadDelayP99Ms = &ms50, &ms99
		}
		return ps
	}
}

// run drives the session behind feed until it ends: Ctrl-C or --duration
// asks it to leave cleanly (stop). Every update goes to the sinks the flags
// asked for; the front end shows it when there is one, NDJSON goes to
// stdout otherwise.
//
// extra are more machines' feeds (the demo's other players with --metrics):
// they go to the metrics exporter only.
func (out *outputs) run(fd feed.Feed, extra []feed.Feed, stop func(), wait func() error) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	finished := make(chan struct{})
	go out.stopWhenAsked(ctx, cancel, finished, stop)

	sinks := out.sinks()
	if out.mlisten != nil {
		shutdown := out.serveMetrics()
		defer shutdown()
	}
	extraDone := out.observeExtra(extra)
	teed := feed.Tee(fd, sinks...)
	var uiErr error
	if out.cfg.Front != nil {
		uiErr = out.cfg.Front(teed)
		// The front end has gone (q, or an error): the run ends now. A
		// live session is already leaving (the front's Quit); the demo's
		// machines end at once (demo.Stop), with nobody outside to tell.
		stop()
	}
	for range teed.Updates() {
		// The front end has gone (or never came): the sinks still see the
		// rest.
	}
	// This machine's session is over (its own quit, a Control from the
	// TUI, or an error): the demo's other machines leave with it.
	stop()
	err := wait()
	extraDone.Wait()
	close(finished)
	sinkErr := out.closeFiles(teed)
	switch {
	case err != nil:
		return err
	case uiErr != nil:
		return uiErr
	case sinkErr != nil && !errors.Is(sinkErr, syscall.EPIPE):
		return sinkErr
	}
	return nil
}

// stopWhenAsked calls stop on the first Ctrl-C (or SIGTERM) or once
// --duration has passed, whichever comes first, unless the run has
// finished by then. After the first Ctrl-C it cancels ctx, so a second one
// ends the process at once.
func (out *outputs) stopWhenAsked(ctx context.Context, cancel context.CancelFunc, finished <-chan struct{}, stop func()) {
	var timeout <-chan time.Time
	if out.cfg.Duration > 0 {
		t := time.NewTimer(out.cfg.Duration)
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
}

// sinks are the update sinks the flags ask for, in the order they see each
// update: NDJSON on stdout without a front end, the recording, the
// callback for the moment the session is joined, the metrics exporter.
func (out *outputs) sinks() []feed.UpdateSink {
	var sinks []feed.UpdateSink
	if out.cfg.Front == nil {
		sinks = append(sinks, feed.NewNDJSONWriter(out.cfg.Stdout))
	}
	if out.rec != nil {
		sinks = append(sinks, feed.UpdateSinkFunc(func(u feed.Update) error { out.rec.Observe(u); return out.rec.Err() }))
	}
	if joined := out.cfg.Joined; joined != nil {
		// A View with the session's name: this machine hosts it or the
		// host has welcomed it.
		var once bool
		sinks = append(sinks, feed.UpdateSinkFunc(func(u feed.Update) error {
			if !once && u.View.Session != "" {
				once = true
				joined()
			}
			return nil
		}))
	}
	if out.mlisten != nil {
		sinks = append(sinks, feed.UpdateSinkFunc(out.observeMetrics))
	}
	return sinks
}

// serveMetrics serves /metrics on the --metrics listener until the
// returned shutdown is called; shutdown gives requests in flight a second
// and returns once the server has stopped.
func (out *outputs) serveMetrics() (shutdown func()) {
	srvDone := make(chan struct{})
	srv := &http.Server{Handler: out.metricsHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(srvDone)
		srv.Serve(out.mlisten)
	}()
	return func() {
		shut, c := context.WithTimeout(context.Background(), time.Second)
		defer c()
		srv.Shutdown(shut)
		<-srvDone
	}
}

// observeExtra reads the extra machines' feeds to their ends, each on its
// own goroutine, handing their updates to the metrics exporter when there
// is one; the WaitGroup is done when every feed has ended.
func (out *outputs) observeExtra(extra []feed.Feed) *sync.WaitGroup {
	var done sync.WaitGroup
	for _, f := range extra {
		done.Add(1)
		go func() {
			defer done.Done()
			for u := range f.Updates() {
				if out.mlisten != nil {
					out.observeMetrics(u)
				}
			}
		}()
	}
	return &done
}

// closeFiles closes the debug log and the recording and writes the report
// once the run is over, then removes a recording kept only for the report.
// It returns the sinks' error (teed's, which has ended), or else the first
// error closing the recording or writing the report.
func (out *outputs) closeFiles(teed *feed.Teed) error {
	if out.logFile != nil {
		out.logFile.Close()
	}
	sinkErr := teed.Err()
	if out.rec != nil {
		if cerr := out.rec.Close(); cerr != nil && sinkErr == nil {
			sinkErr = fmt.Errorf("--record: %w", cerr)
		}
	}
	if out.report != nil {
		if rerr := out.writeReport(); rerr != nil && sinkErr == nil {
			sinkErr = rerr
		}
	}
	if out.recTemp {
		os.Remove(out.recPath)
	}
	return sinkErr
}

// writeReport sums up the recording (lagscope report's output) into the
// --report file, in the format its extension names.
func (out *outputs) writeReport() error {
	defer out.report.Close()
	rec, err := record.Open(out.recPath)
	if err != nil && rec == nil {
		return fmt.Errorf("--report: %w", err)
	}
	format := "text"
	switch strings.ToLower(filepath.Ext(out.report.Name())) {
	case ".md", ".markdown":
		format = "markdown"
	case ".json":
		format = "json"
	}
	if err := record.WriteReport(out.report, rec, format); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}

// observeMetrics hands an update to the exporter, which is made once the
// session's name is known (a joiner learns it from the host's Welcome):
// every machine of a session labels its series with the same session.
func (out *outputs) observeMetrics(u feed.Update) error {
	e := out.exp.Load()
	if e == nil {
		if u.View.Session == "" {
			return nil
		}
		out.expMu.Lock()
		if e = out.exp.Load(); e == nil {
			if out.cfg.NewMetrics == nil {
				out.expMu.Unlock()
				return fmt.Errorf("--metrics: no exporter")
			}
			x, err := out.cfg.NewMetrics(u.View.Session)
			if err != nil {
				out.expMu.Unlock()
				return fmt.Errorf("--metrics: %w", err)
			}
			e = &x
			out.exp.Store(e)
		}
		out.expMu.Unlock()
	}
	(*e).Observe(u)
	return nil
}

// metricsHandler serves the exporter once there is one; before (a joiner
// still in the handshake) it says so with 503, which Prometheus records as
// a failed scrape rather than as zeros.
func (out *outputs) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		e := out.exp.Load()
		if e == nil {
			http.Error(w, "lagscope: not in a session yet", http.StatusServiceUnavailable)
			return
		}
		(*e).Handler().ServeHTTP(w, r)
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
