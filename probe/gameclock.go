package probe

import (
	"slices"
	"time"
)

// The session's clock: the game's time since it started, from frames and
// the frame rates in force (S15). Frame f+1 starts one frame time after
// frame f, at the rate in force once frame f has executed; frame 0 is
// time 0. Frames and rate changes are the same on every machine (a rate
// changes with a timing event, a network event), so every machine — a
// late watcher too, from the host's snapshot — gives a frame the same
// time. A stall does not move it: the game stands still while it waits.

// gameAnchor is a frame whose game time is known and the frame rate from
// it on.
type gameAnchor struct {
	frame int
	at    time.Duration
	fps   int
}

// maxGameAnchors bounds the anchors a clock keeps: rate changes are rare
// (the game speed, S15), and a frame older than the oldest kept is timed
// from it at its rate.
const maxGameAnchors = 64

// gameClock maps frames to the game's time.
type gameClock struct {
	anchors []gameAnchor // by frame
}

// at is the game time of frame f; false before anything is known.
func (c *gameClock) at(f int) (time.Duration, bool) {
	if len(c.anchors) == 0 {
		return 0, false
	}
	i, exact := slices.BinarySearchFunc(c.anchors, f, func(a gameAnchor, f int) int { return a.frame - f })
	if !exact {
		i = max(i-1, 0) // the last anchor at or before f; the first for an earlier frame
	}
	a := c.anchors[i]
	return max(a.at+time.Duration(f-a.frame)*time.Second/time.Duration(max(a.fps, 1)), 0), true
}

// mark says frame f is at game time at, and the rate from it on is fps.
// An anchor for the same frame is replaced.
func (c *gameClock) mark(f int, at time.Duration, fps int) {
	a := gameAnchor{frame: f, at: max(at, 0), fps: max(fps, 1)}
	i, exact := slices.BinarySearchFunc(c.anchors, f, func(a gameAnchor, f int) int { return a.frame - f })
	if exact {
		c.anchors[i] = a
		return
	}
	c.anchors = slices.Insert(c.anchors, i, a)
	if len(c.anchors) > maxGameAnchors {
		c.anchors = slices.Delete(c.anchors, 0, len(c.anchors)-maxGameAnchors)
	}
}

// rate notes that from frame f on the game runs at fps, when that differs
// from the rate in force at f.
func (c *gameClock) rate(f, fps int) {
	at, ok := c.at(f)
	if !ok {
		c.mark(f, 0, fps)
		return
	}
	if i := c.last(f); i >= 0 && c.anchors[i].fps == fps {
		return
	}
	c.mark(f, at, fps)
}

// last is the index of the last anchor at or before f, -1 for none.
func (c *gameClock) last(f int) int {
	i, exact := slices.BinarySearchFunc(c.anchors, f, func(a gameAnchor, f int) int { return a.frame - f })
	if exact {
		return i
	}
	return i - 1
}

// GameAt is the session time of frame f: the game's time since it
// started, the same on every machine; false before the game started.
func (p *Peer) GameAt(f int) (time.Duration, bool) {
	if !p.started {
		return 0, false
	}
	return p.game.at(f)
}
