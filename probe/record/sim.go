package record

import (
	"time"

	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/sim"
)

// SimOptions makes a simulation record itself in w (`lagscope sim
// --record`, issue 8): every printed line, every machine's View once a
// virtual second and every executed command with its send frame and
// original frame (S13). Every machine executes the same commands on the
// same send frames (S7), so each command is stored once, from the first
// machine that executed it. Write errors are kept by the Writer and
// reported when it closes.
func SimOptions(w *Writer) sim.Options {
	type key struct {
		player      string
		seq         uint32
		frame, send int
	}
	seen := map[key]bool{}
	return sim.Options{
		OnLine: func(at time.Duration, from string, line []byte) { w.EventLine(at, from, line) },
		OnView: func(v probe.View) { w.View(v) },
		OnCommand: func(machine string, at time.Duration, player string, sendFrame int, c probe.Command) {
			k := key{player, c.Seq, int(c.Tag), sendFrame}
			if seen[k] {
				return
			}
			seen[k] = true
			w.Command(at, machine, CommandOf(player, sendFrame, c))
		},
	}
}
