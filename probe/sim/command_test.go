package sim

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// executed is one command as a machine executed it.
type executed struct {
	player      string
	seq         uint32
	frame, send int
}

// OnCommand sees every command every machine executes. In recovery.json
// the timing steps down from 6/18 to 5/15, 4/12, 3/9: commands scheduled
// for a frame that stops being a send frame run on the next send frame
// under the new period, keep their original frame (S13), and every machine
// executes the same commands on the same send frames in the same order.
func TestOnCommandEveryMachineAlike_S13(t *testing.T) {
	sc := loadScenario(t, "recovery.json")
	by := map[string][]executed{}
	var lastAt = map[string]time.Duration{}
	var out bytes.Buffer
	_, err := RunWith(sc, &out, Options{OnCommand: func(machine string, at time.Duration, player string, sendFrame int, c feed.Command) {
		if at < lastAt[machine] {
			t.Fatalf("%s: command at %v after %v", machine, at, lastAt[machine])
		}
		lastAt[machine] = at
		by[machine] = append(by[machine], executed{player, c.Seq, int(c.Tag), sendFrame})
	}})
	if err != nil {
		t.Fatal(err)
	}
	alice := by["alice"]
	if len(by) != 3 || len(alice) < 1000 {
		t.Fatalf("%d machines, alice executed %d commands", len(by), len(alice))
	}
	// The run stops all machines at one virtual time, when some have
	// executed a frame more than others: one's list is the start of the
	// other's.
	for m, cs := range by {
		n := min(len(cs), len(alice))
		if !slices.Equal(cs[:n], alice[:n]) || max(len(cs), len(alice))-n > 10 {
			t.Fatalf("%s executed other commands than alice (%d vs %d)", m, len(cs), len(alice))
		}
	}
	// The send period in force from each timing_active event's frame on.
	type period struct{ from, p int }
	var periods []period
	for _, line := range bytes.Split(out.Bytes(), []byte("\n")) {
		var e struct {
			Type       string
			Frame      int
			SendPeriod int `json:"send_period"`
		}
		if json.Unmarshal(line, &e) == nil && e.Type == "timing_active" && !slices.Contains(periods, period{e.Frame, e.SendPeriod}) {
			periods = append(periods, period{e.Frame, e.SendPeriod})
		}
	}
	periodAt := func(send int) int {
		p := 0
		for _, x := range periods {
			if x.from < send {
				p = x.p
			}
		}
		return p
	}
	moved := 0
	for i, c := range alice {
		if c.send < c.frame {
			t.Fatalf("command %+v ran before its frame", c)
		}
		if i > 0 && c.send < alice[i-1].send {
			t.Fatalf("send frames out of order: %+v after %+v", c, alice[i-1])
		}
		// Its frame, or the first send frame after it under the send
		// period in force.
		p := periodAt(c.send)
		if p == 0 || c.send%p != 0 || c.send-c.frame >= p {
			t.Fatalf("command %+v ran on a frame that is not the next send frame (period %d)", c, p)
		}
		if c.send > c.frame {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no command was moved off its frame by a timing change")
	}
}
