package record

import (
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// SimRecorder records a simulation in a Writer (`lagscope sim --record`):
// every printed line, every machine's View once a virtual second and
// every executed command with its send frame and original frame (S13).
// Its methods have the shapes of the simulator's hooks, so the command
// hands them over as they are. Every machine executes the same commands
// on the same send frames (S7), so each command is stored once, from the
// first machine that executed it. Write errors are kept by the Writer and
// reported when it closes.
type SimRecorder struct {
	w    *Writer
	seen map[simCommand]bool
}

type simCommand struct {
	player      string
	seq         uint32
	frame, send int
}

// NewSimRecorder records into w.
func NewSimRecorder(w *Writer) *SimRecorder {
	return &SimRecorder{w: w, seen: map[simCommand]bool{}}
}

// Line records one printed line.
func (r *SimRecorder) Line(at time.Duration, from string, line []byte) { r.w.eventLine(at, from, line) }

// View records a machine's View.
func (r *SimRecorder) View(v feed.View) { r.w.View(v) }

// Command records an executed command the first time any machine
// executes it.
func (r *SimRecorder) Command(machine string, at time.Duration, player string, sendFrame int, c feed.Command) {
	k := simCommand{player, c.Seq, int(c.Tag), sendFrame}
	if r.seen[k] {
		return
	}
	r.seen[k] = true
	r.w.Command(at, machine, CommandOf(player, sendFrame, c))
}
