package live

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/session"
)

// The wall-clock driver. One goroutine owns a Session (and so its Peer and
// Endpoint); everything else talks to it through channels:
//
//  1. a socket the owner can read itself (a directSocket: the UDP
//     transport) it waits in, until a datagram arrives or the next
//     deadline passes, and the other goroutines Wake it when they put
//     something in a channel — one goroutine from the kernel to the ack,
//     no hand-over; any other socket's reader goroutine hands
//     datagrams over its inbox, and the owner waits in a select;
//  2. it wakes at the earliest of the session's NextDeadline, the next
//     publish, the next link lines and, for a socket that holds datagrams
//     back (the demo's impaired links), its next due datagram — a
//     time.Timer in the select, the read deadline on a directSocket;
//  3. now is always time.Since(start), taken when the owner wakes;
//  4. front ends get probe.Updates (at most PublishEvery apart, plus a last
//     one) and send probe.Controls back.
//
// Nothing else touches the session, so the engine needs no lock.

// Socket is what the driver needs of a transport: the Transport the
// session sends through, and the inbox its reader fills.
// *netcore.UDPTransport is one.
type Socket interface {
	netcore.Transport
	Inbox() <-chan *netcore.Datagram
}

// directSocket is a socket its owner reads itself (*netcore.UDPTransport):
// ReadUntil waits for datagrams until a time or a Wake from another
// goroutine. The driver then never asks for its Inbox.
type directSocket interface {
	ReadUntil(until time.Time, dst []*netcore.Datagram) ([]*netcore.Datagram, error)
	Wake()
}

// pacer is a socket that holds datagrams back until they are due (the
// demo's impaired links): the driver flushes it on every wake-up and wakes
// for its next due datagram.
type pacer interface {
	Flush(now time.Duration)
	NextDue() (time.Duration, bool)
}

// socketStats is a socket that counts its datagrams (*netcore.UDPTransport).
type socketStats interface {
	Stats() netcore.UDPStats
}

// Options tune a driver.
type Options struct {
	// Start is the world's zero: now = time.Since(Start). The demo's
	// machines share one. Zero: when Run is called.
	Start time.Time
	// Publish makes the driver produce Updates; without it (the demo's
	// other machines) it only runs the session.
	Publish bool
	// PublishEvery paces Updates (default 100 ms: a Feed delivers at most
	// ten a second).
	PublishEvery time.Duration
	// LinkEvery paces the link lines (docs/live.md: live, every second).
	LinkEvery time.Duration
	// timeline is a script of lines for the message list at given times
	// (the demo's narration), in time order. They go to the feed only.
	timeline []note
	// process, when set, is called on the driver's goroutine as the session
	// ends, with the driver's own timing, for the summary's process line.
	process func(own driverStats) *feed.ProcessStats
}

// note is a line the driver adds to the message list at a time.
type note struct {
	At   time.Duration
	Text string
}

// driverStats is what a driver saw of its own timing.
type driverStats struct {
	Wakeups  uint64        // timer wake-ups
	Received uint64        // datagrams handed to the session
	MaxLate  time.Duration // the latest the frame loop ran a frame after it was due (frameLate)
}

// Runner is one running session: it implements feed.Feed.
type Runner struct {
	s     *session.Session
	sock  Socket
	pacer pacer
	// waker is the directSocket the owner waits in, if the socket is
	// one: Control, Stop and Abort wake it.
	waker directSocket
	batch []*netcore.Datagram // ReadUntil's, reused
	opt   Options
	start time.Time

	updates  chan feed.Update
	controls chan feed.Control
	stop     chan struct{}
	stopOnce sync.Once
	abort    chan struct{}
	abortOne sync.Once
	done     chan struct{}

	now     time.Duration
	pub     publisher // the events, notes and lines of the next update
	stats   driverStats
	maxLate atomic.Int64 // stats.MaxLate, readable from any goroutine
	err     error
}

var _ feed.Feed = (*Runner)(nil)

// Run starts the driver goroutine for s on sock. The session must not be
// touched by anyone else from here on.
func Run(s *session.Session, sock Socket, opt Options) *Runner {
	if opt.Start.IsZero() {
		opt.Start = time.Now()
	}
	if opt.PublishEvery <= 0 {
		opt.PublishEvery = 100 * time.Millisecond
	}
	if opt.LinkEvery <= 0 {
		opt.LinkEvery = time.Second
	}
	r := &Runner{
		s: s, sock: sock, opt: opt, start: opt.Start,
		updates:  make(chan feed.Update, 4),
		controls: make(chan feed.Control, 16),
		stop:     make(chan struct{}),
		abort:    make(chan struct{}),
		done:     make(chan struct{}),
	}
	r.pub = newPublisher(opt.timeline, opt.LinkEvery)
	r.pacer, _ = sock.(pacer)
	if w, ok := sock.(directSocket); ok {
		r.waker, r.batch = w, make([]*netcore.Datagram, 0, netcore.MaxReadBatch)
	}
	// Send times read at the write, on this driver's clock (netcore.Clock).
	if c, ok := sock.(interface{ SetEpoch(time.Time) }); ok {
		c.SetEpoch(r.start)
	}
	s.SetSink(feed.SinkFunc(r.collect))
	go r.loop()
	return r
}

// Updates implements feed.Feed. Without Options.Publish the channel only
// closes when the session ends.
func (r *Runner) Updates() <-chan feed.Update { return r.updates }

// Control implements feed.Feed: the request is handled on the driver's
// goroutine. A request that finds the queue full is dropped.
func (r *Runner) Control(c feed.Control) {
	select {
	case r.controls <- c:
	case <-r.done:
	default:
	}
	r.wake()
}

// Stop asks the session to leave cleanly (Ctrl-C, --duration).
func (r *Runner) Stop() {
	r.stopOnce.Do(func() { close(r.stop) })
	r.wake()
}

// Abort ends the session at once, without a leave: for the demo's other
// machines once yours has left, when nobody else is there to tell.
func (r *Runner) Abort() {
	r.abortOne.Do(func() { close(r.abort) })
	r.wake()
}

// wake gets the attention of an owner waiting in its socket.
func (r *Runner) wake() {
	if r.waker != nil {
		r.waker.Wake()
	}
}

// Wait waits for the driver to finish and returns why the session ended
// (nil for a clean end). The update channel is closed by then only if
// its reader has taken every update.
func (r *Runner) Wait() error {
	<-r.done
	return r.err
}

// Done is closed when the driver has finished.
func (r *Runner) Done() <-chan struct{} { return r.done }

// maxLateness is the latest the driver has woken for a deadline so far; safe
// from any goroutine.
func (r *Runner) maxLateness() time.Duration { return time.Duration(r.maxLate.Load()) }

func (r *Runner) clock() time.Duration { return time.Since(r.start) }

// collect is the session's sink: it stamps each event with the time since
// the world's start (t_ms) and the session time of its frame (game_ms),
// and keeps it for the next update.
func (r *Runner) collect(from string, e feed.Event) {
	if !r.opt.Publish {
		return
	}
	r.pub.collect(r.s, r.now, e)
}

// loop is the driver goroutine: it waits for the next thing to do (a
// datagram, a deadline, a control, a stop), does it, and ends the session
// once it is over. The per-datagram work stays in line here: it is the
// hot path, and it allocates nothing.
func (r *Runner) loop() {
	defer close(r.done)
	defer close(r.updates)
	s := r.s
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var deadline time.Duration
	var armed bool
	direct := r.waker
	var inbox <-chan *netcore.Datagram
	if direct == nil {
		inbox = r.sock.Inbox()
	}
	stop, abort := r.stop, r.abort
	nextPublish := time.Duration(0)
	r.now = r.clock()
	s.Flush() // events from the constructor (the session line)
	for !s.Done() {
		next := r.nextWake(nextPublish)
		if direct != nil {
			if !r.waitDirect(direct, next, &stop, &abort) {
				direct = nil // closed: from here the select, on timers alone
			}
			r.after(&nextPublish)
			continue
		}
		if !armed || next != deadline {
			deadline, armed = next, true
			timer.Reset(max(next-r.clock(), 0))
		}
		select {
		case d, ok := <-inbox:
			if !ok {
				inbox = nil
				r.socketClosed()
				continue
			}
			// The datagram's own arrival time (the kernel's stamp where
			// there is one), not this wake-up's: a datagram that waited
			// behind others would otherwise read late.
			r.now = max(r.now, d.Arrival(r.start))
			s.Receive(r.now, d.From, d.Bytes())
			d.Release()
			r.stats.Received++
			r.drain(&inbox)
		case <-timer.C:
			r.now = r.clock()
			armed = false
			r.tick()
		case c := <-r.controls:
			r.now = r.clock()
			r.control(c)
		case <-stop:
			stop = nil
			r.now = r.clock()
			s.Quit(r.now)
		case <-abort:
			abort = nil
			r.now = r.clock()
			s.End(nil)
		}
		r.after(&nextPublish)
	}
	r.finish()
}

// nextWake is when the owner must wake next: the earliest of the session's
// next deadline, the paced socket's next due datagram and, when publishing,
// the next update, link lines and timeline note; an hour from now when none
// is due.
func (r *Runner) nextWake(nextPublish time.Duration) time.Duration {
	next, ok := r.s.NextDeadline()
	take := func(t time.Duration) {
		if !ok || t < next {
			next, ok = t, true
		}
	}
	if r.pacer != nil {
		if t, has := r.pacer.NextDue(); has {
			take(t)
		}
	}
	if r.opt.Publish {
		take(nextPublish)
		take(r.pub.nextLine())
	}
	if !ok {
		next = r.now + time.Hour
	}
	return next
}

// tick is a wake-up for a deadline, at r.now: it counts it, keeps how late
// the frame loop is, and runs the session's due work.
func (r *Runner) tick() {
	r.stats.Wakeups++
	r.frameLate()
	r.s.Tick(r.now)
}

// frameLate keeps the latest the frame loop has woken for a frame that was
// due and held everything it needed: the wait the process causes itself.
// Only the frame's own time counts: other deadlines say "at once" as the
// start of the world (a trace's probe that is due is due from 0), and a
// stalled frame waits for the network, not for this process.
func (r *Runner) frameLate() {
	due, ok := r.s.FrameDue()
	if !ok || r.now < due {
		return
	}
	if late := r.now - due; late > r.stats.MaxLate {
		r.stats.MaxLate = late
		r.maxLate.Store(int64(late))
	}
}

// finish is what the driver does once the session is over: the error it
// ended with, what the impaired links still hold sent, and, when
// publishing, the summary in the last update.
func (r *Runner) finish() {
	s := r.s
	r.now = r.clock()
	if r.err == nil {
		r.err = s.Err()
	}
	if r.pacer != nil {
		r.pacer.Flush(r.now + time.Hour) // what the impaired links still hold
	}
	if r.opt.Publish {
		s.EndIncidents(r.now)
		sum := s.Summary()
		sum.Diagnosis = s.Diagnose(r.now)
		if ss, ok := r.sock.(socketStats); ok {
			st := ss.Stats()
			sum.Rejected.Oversize += st.Oversize
			sum.Rejected.Sum()
		}
		if r.opt.process != nil {
			sum.Process = r.opt.process(r.stats)
		}
		r.collect(s.Name(), sum)
		r.publish(true)
	}
}

// after is what every wake-up ends with: the paced socket's due datagrams
// out, the timeline's notes, the link lines and the update when due.
func (r *Runner) after(nextPublish *time.Duration) {
	if r.pacer != nil {
		r.pacer.Flush(r.now)
	}
	if !r.opt.Publish {
		return
	}
	r.pub.lines(r.s, r.now)
	if r.now >= *nextPublish {
		r.publish(false)
		*nextPublish = r.now + r.opt.PublishEvery
	}
}

// waitDirect is one wake-up on a directSocket: what another goroutine put
// in a channel first (it Woke the read), else the datagrams that arrive
// before deadline — each at its own arrival time, received in this same
// wake-up, so its ack leaves at once — and then the deadline's work if it
// is due. False: the socket closed (the session ends).
func (r *Runner) waitDirect(sock directSocket, deadline time.Duration, stop, abort *chan struct{}) bool {
	s := r.s
	select {
	case c := <-r.controls:
		r.now = r.clock()
		r.control(c)
		return true
	case <-*stop:
		*stop = nil
		r.now = r.clock()
		s.Quit(r.now)
		return true
	case <-*abort:
		*abort = nil
		r.now = r.clock()
		s.End(nil)
		return true
	default:
	}
	ds, err := sock.ReadUntil(r.start.Add(deadline), r.batch[:0])
	for i, d := range ds {
		if !s.Done() {
			r.now = max(r.now, d.Arrival(r.start))
			s.Receive(r.now, d.From, d.Bytes())
			r.stats.Received++
		}
		d.Release()
		ds[i] = nil
	}
	r.batch = ds[:0]
	if err != nil {
		r.socketClosed()
		return false
	}
	if now := r.clock(); now >= deadline && !s.Done() {
		r.now = max(r.now, now)
		r.tick()
	}
	return true
}

// drain takes whatever else is already waiting in the inbox, up to a
// batch, before the next deadline is worked out: under load that is one
// timer reset per batch rather than per datagram.
func (r *Runner) drain(inbox *<-chan *netcore.Datagram) {
	for range drainBatch {
		if r.s.Done() {
			return
		}
		select {
		case d, ok := <-*inbox:
			if !ok {
				*inbox = nil
				r.socketClosed()
				return
			}
			r.now = max(r.now, d.Arrival(r.start))
			r.s.Receive(r.now, d.From, d.Bytes())
			d.Release()
			r.stats.Received++
		default:
			return
		}
	}
}

// errSocketClosed ends a session whose socket was closed under it.
var errSocketClosed = errors.New("live: the socket closed under the session")

func (r *Runner) socketClosed() {
	r.err = errSocketClosed
	r.s.End(r.err)
}

// drainBatch bounds a batch so that timers still get their turn under a
// flood.
const drainBatch = 64

func (r *Runner) control(c feed.Control) {
	if c.Quit {
		r.Stop()
	}
	if c.Speed != 0 {
		r.s.SetSpeed(c.Speed)
	}
	if c.Start {
		r.s.StartNow(r.now)
	}
	if c.Path != "" {
		r.s.ShowPath(c.Path)
	}
	if c.PathClosed {
		r.s.ShowPath("")
	}
	if c.LoadTest != "" {
		r.s.StartLoadTest(r.now, c.LoadTest, false)
	}
	if c.LoadCancel {
		r.s.CancelLoadTest(r.now)
	}
}

// publish hands the front ends a new update. It never blocks the engine
// until the last one: if the reader is behind, the events wait for the
// next update and this View is dropped (a Feed loses Views, never Events).
func (r *Runner) publish(last bool) {
	u := feed.Update{View: r.s.View(r.now), Events: slices.Clip(r.pub.pending), Done: last}
	if last {
		u.Err = r.err
		r.updates <- u
		r.pub.take()
		return
	}
	select {
	case r.updates <- u:
		r.pub.take()
	default:
	}
}
