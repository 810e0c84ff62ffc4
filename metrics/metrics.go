// Package metrics publishes a session's link and timing numbers for
// Prometheus (`--metrics ADDR`), through the OpenTelemetry metrics
// SDK and its Prometheus exporter, so an admin's existing Prometheus (or any
// OpenTelemetry collector) watches a whole LAN party.
//
// It implements L5 for the scrape: per link (labels session, player, peer)
// six cumulative counters — datagrams sent, retransmitted, expected, lost,
// peer_expected, peer_lost (L1, L4) — published as totals, never as rates
// or shares (whoever has two readings does the division), never decreasing:
// each link keeps a high-water mark, and when a link ends (a player leaves,
// a link restarts and its totals start again from zero) the totals it
// reached fold into a retired accumulator under the same labels. A peer
// that never reported its half leaves peer_* at zero: a cumulative counter
// cannot say "not measured", so read them beside sent.
//
// Gauges are the picture now: SRTT, RTTVAR, RTO and the connection timeout
// per link (T3, T7, T10), absent while unknown (L3: unknown is not zero);
// the rung, send period, look-ahead and frame rate in force per machine
// (S1, S2, S15); and each player's latest reported wait (S5).
//
// The lagscope_matrix_* families (matrix.go) publish every pair
// the machine's Matrix knows — its own row and the other players' rows from
// their telemetry — so one watcher's scrape carries the whole session.
// The lagscope_path_hop_* families (path.go) publish, per hop, the hop
// traces of the links the machine traces, lagscope_load_added_seconds
// (load.go) what a full line added in the load tests the machine ran, and
// the lagscope_incident* families (incidents.go) the session's incidents
// by cause.
//
// Names on /metrics are the ones docs/metrics.md lists; the tests read
// them back.
package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

type linkKey struct{ player, peer string }

type link struct {
	fold   feed.LinkFold
	live   bool
	srtt   *float64 // seconds; nil while unknown (L3)
	rttvar *float64
	rto    *float64
	connTO *float64
}

type machine struct {
	rung, sendPeriod, lookAhead, fps int64
}

// Exporter holds the latest numbers of every machine it observes and hands
// them to the OpenTelemetry SDK when Prometheus scrapes. One Exporter may
// observe several machines of a session (a demo runs them all in one
// process); each Update is attributed to its View's Self.
type Exporter struct {
	session  string
	provider *sdkmetric.MeterProvider
	registry *prometheus.Registry

	mu       sync.Mutex
	links    map[linkKey]*link
	order    []linkKey // first-seen order, for a stable scrape
	machines map[string]*machine
	waits    map[string]float64 // player → latest reported wait, seconds (S5)
	// relayed: datagrams a host forwarded per relayed pair,
	// the pair in house order; relayOrder keeps the scrape's order stable.
	relayed    map[[2]string]uint64
	relayOrder [][2]string
	// The session's matrix (matrix.go): every pair this machine knows,
	// in first-seen order for a stable scrape.
	pairs     map[linkKey]*pairLink
	pairOrder []linkKey
	rows      map[string]*matrixRow
	rowOrder  []string
	// The hop traces (path.go): each machine's traced hops, by machine
	// in first-seen order.
	paths     map[string][]pathHop
	pathOrder []string
	// The load tests (load.go): each tested pair's latest figure per
	// direction, seconds, in first-seen order.
	loads     map[loadKey]float64
	loadOrder []loadKey
	// The incidents (incidents.go): each machine's, and whose the
	// families publish.
	books       map[string]*incidentBook
	teller      string
	firstTeller string
}

// New builds an Exporter for one session; the session names the `session`
// label of every series.
func New(session string) (*Exporter, error) {
	reg := prometheus.NewRegistry()
	// The exporter's defaults would add otel_scope_* labels to every series
	// and a target_info series: the contract's label set is session, player
	// and peer only.
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, err
	}
	e := &Exporter{session: session, registry: reg, links: map[linkKey]*link{}, machines: map[string]*machine{}, waits: map[string]float64{},
		relayed: map[[2]string]uint64{}, pairs: map[linkKey]*pairLink{}, rows: map[string]*matrixRow{}, loads: map[loadKey]float64{},
		books: map[string]*incidentBook{}}
	e.provider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(resource.Empty()))
	meter := e.provider.Meter("github.com/lagscope/lagscope/metrics")
	if err := errors.Join(e.register(meter), e.registerPaths(meter), e.registerLoads(meter), e.registerIncidents(meter)); err != nil {
		e.provider.Shutdown(context.Background())
		return nil, err
	}
	return e, nil
}

// register creates every instrument up front — always registered (L5) — and
// one callback that reads the Exporter's state at scrape time.
//
// Names: the exporter turns an instrument "a.b" with unit "s" into a_b_seconds
// and appends _total to counters; units in braces ({datagram}) add nothing.
// The test TestNamesMatchContract reads the scrape back.
func (e *Exporter) register(m metric.Meter) error {
	in := &instruments{m: m}
	sent := in.datagrams("lagscope.datagrams.sent", "Reliable datagrams this machine sent to the peer, first sends and resends.")
	retx := in.datagrams("lagscope.datagrams.retransmitted", "Reliable datagrams this machine resent to the peer: inferred loss, reads high.")
	expected := in.datagrams("lagscope.datagrams.expected", "Numbered datagrams from the peer judged by this machine's loss window.")
	lost := in.datagrams("lagscope.datagrams.lost", "Numbered datagrams from the peer that never arrived: observed inbound loss.")
	peerExp := in.datagrams("lagscope.datagrams.peer_expected", "The peer's expected total for this link, from its LinkReports; zero until it reports.")
	peerLost := in.datagrams("lagscope.datagrams.peer_lost", "The peer's lost total for this link, from its LinkReports: observed outbound loss.")
	relayed := in.datagrams("lagscope.relayed_datagrams", "Datagrams the host forwarded between the pair (player, peer), which found no direct path.")
	waited := in.seconds("lagscope.caused_wait", "Time this machine waited before executing frames, last for the peer's commands (who causes lag).")

	srtt := in.fgauge("lagscope.srtt", "s", "Smoothed round trip of the link; absent until measured.")
	rttvar := in.fgauge("lagscope.rttvar", "s", "Round-trip variation of the link; absent until measured.")
	rto := in.fgauge("lagscope.rto", "s", "Retry timeout of the link: how long a reliable datagram waits for its ack before it is resent.")
	connTO := in.fgauge("lagscope.connection_timeout", "s", "Connection timeout of the link: how long a datagram may go unacked before the link counts as bad.")
	wait := in.fgauge("lagscope.wait", "s", "Longest wait the player reported over its last two report intervals.")
	rung := in.igauge("lagscope.rung", "{rung}", "Rung of the timing in force on this machine, 1 to 10.")
	sendPeriod := in.igauge("lagscope.send_period_frames", "{frame}", "Send period in force, frames.")
	lookAhead := in.igauge("lagscope.look_ahead_frames", "{frame}", "Look-ahead in force, frames.")
	fps := in.igauge("lagscope.frame_rate", "{fps}", "Frame rate in force, frames a second.")
	mx := registerMatrix(in)
	// Units in braces are annotations the exporter leaves out of the name,
	// so the frame gauges carry "frames" in theirs, and the frame rate's unit
	// is {fps} (frame/s would become _per_second, which the contract lacks).
	return e.observe(in, func(o metric.Observer) {
		for _, k := range e.order {
			l := e.links[k]
			at := metric.WithAttributeSet(attribute.NewSet(
				attribute.String("session", e.session), attribute.String("player", k.player), attribute.String("peer", k.peer)))
			t := l.fold.Total()
			o.ObserveInt64(sent, int64(t.Sent), at)
			o.ObserveInt64(retx, int64(t.Retransmitted), at)
			o.ObserveInt64(expected, int64(t.Expected), at)
			o.ObserveInt64(lost, int64(t.Lost), at)
			o.ObserveInt64(peerExp, int64(t.PeerExpected), at)
			o.ObserveInt64(peerLost, int64(t.PeerLost), at)
			o.ObserveFloat64(waited, t.Waited.Seconds(), at)
			if !l.live {
				continue
			}
			for _, g := range []struct {
				i metric.Float64ObservableGauge
				v *float64
			}{{srtt, l.srtt}, {rttvar, l.rttvar}, {rto, l.rto}, {connTO, l.connTO}} {
				if g.v != nil {
					o.ObserveFloat64(g.i, *g.v, at)
				}
			}
		}
		for name, mc := range e.machines {
			at := metric.WithAttributeSet(attribute.NewSet(attribute.String("session", e.session), attribute.String("player", name)))
			o.ObserveInt64(rung, mc.rung, at)
			o.ObserveInt64(sendPeriod, mc.sendPeriod, at)
			o.ObserveInt64(lookAhead, mc.lookAhead, at)
			o.ObserveInt64(fps, mc.fps, at)
		}
		for _, k := range e.relayOrder {
			o.ObserveInt64(relayed, int64(e.relayed[k]), metric.WithAttributeSet(attribute.NewSet(
				attribute.String("session", e.session), attribute.String("player", k[0]), attribute.String("peer", k[1]))))
		}
		for name, w := range e.waits {
			o.ObserveFloat64(wait, w, metric.WithAttributeSet(attribute.NewSet(attribute.String("session", e.session), attribute.String("player", name))))
		}
		e.observeMatrixInstruments(o, mx)
	}, append([]metric.Observable{sent, retx, expected, lost, peerExp, peerLost, relayed, waited, srtt, rttvar, rto, connTO, wait, rung, sendPeriod, lookAhead, fps},
		mx.all()...)...)
}

// seconds is a gauge's value; nil while unknown (L3).
func seconds(d time.Duration, known bool) *float64 {
	if !known {
		return nil
	}
	s := d.Seconds()
	return &s
}

// Observe takes one update of a machine's feed: a sink like the recorder
// and the TUI. The last update (Done) retires the machine's links and drops
// its gauges; its counters stay.
func (e *Exporter) Observe(u feed.Update) {
	v := u.View
	if v.Self == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[string]bool{}
	if !u.Done {
		for _, lv := range v.Links {
			k := linkKey{v.Self, lv.Peer}
			l := e.links[k]
			if l == nil {
				l = &link{}
				e.links[k] = l
				e.order = append(e.order, k)
			}
			l.fold.Observe(lv.Counts(lv.Caused))
			l.live = true
			l.srtt, l.rttvar = seconds(lv.SRTT, lv.RTTKnown), seconds(lv.RTTVAR, lv.RTTKnown)
			l.rto, l.connTO = seconds(lv.RTO, true), seconds(lv.ConnTimeout, true)
			seen[lv.Peer] = true
		}
	}
	// A link that is no longer in the picture has ended (its peer was
	// removed, or this machine left): its totals retire into the fold.
	for _, k := range e.order {
		if l := e.links[k]; k.player == v.Self && l.live && !seen[k.peer] {
			l.fold.Retire()
			l.live = false
		}
	}
	e.observeMatrix(&v, u.Done)
	e.observePaths(&v, u.Done)
	e.observeLoads(v.Self, u.Events, u.Done)
	e.observeIncidents(v.Self, u.Events, u.Done)
	for _, r := range v.Relay {
		if _, ok := e.relayed[r.Between]; !ok {
			e.relayOrder = append(e.relayOrder, r.Between)
		}
		e.relayed[r.Between] = max(e.relayed[r.Between], r.Datagrams) // a counter never decreases (L5)
	}
	if u.Done {
		delete(e.machines, v.Self)
	} else {
		e.machines[v.Self] = &machine{rung: int64(v.InForce.Rung()), sendPeriod: int64(v.InForce.SendPeriod),
			lookAhead: int64(v.InForce.LookAhead), fps: int64(v.FPS)}
	}
	for _, p := range v.Players {
		switch {
		case p.Removed:
			delete(e.waits, p.Name) // its reports are dropped with it (S7)
		case p.Report != nil:
			e.waits[p.Name] = p.Report.Wait.Seconds()
		}
	}
}

// Handler serves the Prometheus text format.
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// serve listens on addr and serves /metrics until ctx ends. A bad address
// is returned at once, before anything is served.
func (e *Exporter) serve(ctx context.Context, addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return e.serveListener(ctx, l)
}

// serveListener serves /metrics on l until ctx ends, then closes l.
func (e *Exporter) serveListener(ctx context.Context, l net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("lagscope: metrics at /metrics\n"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
		case <-stop:
		}
		shut, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	err := srv.Serve(l)
	close(stop)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the SDK.
func (e *Exporter) Close() error { return e.provider.Shutdown(context.Background()) }
