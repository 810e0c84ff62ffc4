package record

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
)

// Playback speeds a replay allows: ×0.5 to ×16.
const (
	MinSpeed = 0.5
	MaxSpeed = 16.0
)

// cursor walks a recording in time: the pure part of a replay, driven by
// whatever moves the time (a wall-clock ticker, a test). It serves one
// machine's Views and every recorded event.
type cursor struct {
	events []Record // kind E, in file order (times never go back within a machine)
	views  []Record // kind V of the machine shown, by time
	pos    time.Duration
	next   int // first event with At > pos
	end    time.Duration
	diags  []Record      // the diagnosis events the View shows (diagnosis.go)
	mx     matrixSources // what the View's Matrix is rebuilt from (matrix.go)
	mxOf   int           // 1 + the index in views of the picture mxLast is of; 0: none
	mxLast feed.MatrixView
}

// newCursor prepares a replay of rec showing the Views of machine as. When
// as is empty it is the machine whose Views last longest (in a simulation
// where players leave, one that stays to the end). The cursor starts before
// the first record.
//
// Events without a time of their own (a simulation's have no t_ms) are
// stamped with their record's time, in rec's decoded events (Raw is left
// as recorded): a front end dates an event by the update it comes in
// otherwise, and after a seek back one update brings every event from the
// start.
func newCursor(rec *Recording, as string) *cursor {
	c := &cursor{pos: -1}
	if as == "" {
		for _, r := range rec.Records {
			if r.Kind == KindView {
				as = r.From
			}
		}
	}
	for _, r := range rec.Records {
		switch r.Kind {
		case KindEvent:
			if r.Event != nil {
				if h := feed.Head(r.Event); h.TMs == nil {
					t := units.Millis(r.At)
					h.TMs = &t
				}
			}
			c.events = append(c.events, r)
		case KindView:
			if r.From == as {
				c.views = append(c.views, r)
			}
		default:
			continue
		}
		c.end = max(c.end, r.At)
	}
	// A simulation prints events machine by machine in virtual-time order;
	// a stable sort keeps file order among equal times.
	sort.SliceStable(c.events, func(i, j int) bool { return c.events[i].At < c.events[j].At })
	c.diags = diagnosesOf(c.events, as)
	c.mx = newMatrixSources(rec, c.events)
	return c
}

// End is the time of the last record.
func (c *cursor) End() time.Duration { return c.end }

// position is the time the cursor has reached.
func (c *cursor) position() time.Duration { return max(c.pos, 0) }

// advance moves the cursor to t (clamped to the end) and returns the latest
// View at or before t and the events after the previous position up to t.
// Moving back (a seek) returns every event from the start up to t, so a
// front end that starts over on a View whose time went back redraws the
// same picture a straight play would have reached.
func (c *cursor) advance(t time.Duration) feed.Update {
	t = min(max(t, 0), c.end)
	if t < c.pos {
		c.pos, c.next = -1, 0
	}
	var u feed.Update
	for c.next < len(c.events) && c.events[c.next].At <= t {
		u.Events = append(u.Events, c.events[c.next].Event)
		c.next++
	}
	// Events of a type this build does not know have no probe value.
	u.Events = dropNil(u.Events)
	c.pos = t
	i := sort.Search(len(c.views), func(i int) bool { return c.views[i].At > t })
	if i > 0 {
		u.View = *c.views[i-1].View
		// The matrix as the shown machine would have had it when it
		// took this picture (matrix.go). Updates come ten a second and
		// pictures about once: the same picture keeps its matrix, shared
		// read-only like the picture's own slices.
		if c.mxOf != i {
			c.mxOf, c.mxLast = i, c.mx.matrix(&u.View, c.views[i-1].At)
		}
		u.View.Matrix = c.mxLast
	}
	u.View.Diagnosis = c.diagnosisAt(t) // diagnosis.go
	return u
}

func dropNil(es []feed.Event) []feed.Event {
	n := 0
	for _, e := range es {
		if e != nil {
			es[n] = e
			n++
		}
	}
	return es[:n]
}

// Player is a feed.Feed over a recording: the live front ends (TUI,
// NDJSON, metrics) read a replay exactly as they read a session, so there
// is no second renderer. Besides feed.Control (Quit ends the replay) it
// takes the playback controls of playback.
type Player struct {
	cur     *cursor
	updates chan feed.Update
	quit    chan struct{}
	once    sync.Once

	mu      sync.Mutex
	playing bool
	speed   float64
	seekTo  *time.Duration
}

// playback is what a front end may do to a replay besides feed.Control.
// A front end finds it by asserting its feed.Feed to this interface.
type playback interface {
	TogglePause()
	SetSpeed(x float64) // clamped to [MinSpeed, MaxSpeed]
	Seek(t time.Duration)
	// Position says where the replay is, how long it is, whether it plays
	// and at which speed.
	Position() (at, end time.Duration, playing bool, speed float64)
}

var (
	_ feed.Feed = (*Player)(nil)
	_ playback  = (*Player)(nil)
)

// updateEvery is how often a playing replay hands out an update: the live
// feeds' rate (feed.Feed: at most ten a second).
const updateEvery = 100 * time.Millisecond

// NewPlayer starts playing rec (Views of machine as) at speed; it runs until
// ctx ends, Control{Quit: true}, or for ever paused at the end otherwise.
func NewPlayer(ctx context.Context, rec *Recording, as string, speed float64) *Player {
	p := newPlayer(rec, as, speed)
	t := time.NewTicker(updateEvery)
	go func() {
		defer t.Stop()
		p.run(ctx, t.C)
	}()
	return p
}

func newPlayer(rec *Recording, as string, speed float64) *Player {
	return &Player{cur: newCursor(rec, as), updates: make(chan feed.Update, 4), quit: make(chan struct{}),
		playing: true, speed: clampSpeed(speed)}
}

func clampSpeed(x float64) float64 { return min(max(x, MinSpeed), MaxSpeed) }

// Updates implements feed.Feed.
func (p *Player) Updates() <-chan feed.Update { return p.updates }

// Control implements feed.Feed: Quit ends the replay; the rest means
// nothing to a recording.
func (p *Player) Control(c feed.Control) {
	if c.Quit {
		p.once.Do(func() { close(p.quit) })
	}
}

func (p *Player) TogglePause() { p.mu.Lock(); p.playing = !p.playing; p.mu.Unlock() }

func (p *Player) SetSpeed(x float64) { p.mu.Lock(); p.speed = clampSpeed(x); p.mu.Unlock() }

func (p *Player) Seek(t time.Duration) { p.mu.Lock(); p.seekTo = &t; p.mu.Unlock() }

// Position implements playback. A seek not yet played counts as done, so
// that several presses of a seek key in a row add up.
func (p *Player) Position() (time.Duration, time.Duration, bool, float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := p.cur.position()
	if p.seekTo != nil {
		at = min(max(*p.seekTo, 0), p.cur.End())
	}
	return at, p.cur.End(), p.playing, p.speed
}

// run moves the cursor on each tick by the elapsed wall time times the
// speed, and hands out an update. Ticks carry their own time, so a test
// drives it with made-up ticks.
func (p *Player) run(ctx context.Context, ticks <-chan time.Time) {
	defer close(p.updates)
	send := func(u feed.Update) bool {
		select {
		case p.updates <- u:
			return true
		case <-ctx.Done():
		case <-p.quit:
		}
		return false
	}
	p.mu.Lock()
	first := p.cur.advance(0)
	p.mu.Unlock()
	if !send(first) {
		send(feed.Update{View: first.View, Done: true})
		return
	}
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			p.finish()
			return
		case <-p.quit:
			p.finish()
			return
		case now := <-ticks:
			p.mu.Lock()
			target := p.cur.position()
			if p.seekTo != nil {
				target, p.seekTo = *p.seekTo, nil
			} else if p.playing && !last.IsZero() {
				target += time.Duration(float64(now.Sub(last)) * p.speed)
			}
			last = now
			moved := target != p.cur.position()
			var u feed.Update
			if moved {
				u = p.cur.advance(target)
			}
			if p.cur.position() >= p.cur.End() {
				p.playing = false // hold the last picture; a seek plays on
			}
			p.mu.Unlock()
			if moved && !send(u) {
				p.finish()
				return
			}
		}
	}
}

// finish hands out the last update without blocking on a reader that left.
func (p *Player) finish() {
	p.mu.Lock()
	u := p.cur.advance(p.cur.position())
	p.mu.Unlock()
	u.Events, u.Done = nil, true
	select {
	case p.updates <- u:
	default:
	}
}
