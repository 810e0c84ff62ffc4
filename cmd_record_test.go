package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/record"
	"github.com/lagscope/lagscope/probe/sim"
)

// A recorded sim stores every executed command once, with the send frame it
// ran on and the frame it was scheduled for (S13). In recovery.json the
// timing steps down from 6/18 one rung at a time: a command scheduled for a
// frame that stopped being a send frame is stored with the later send
// frame's commands, still tagged with its original frame. Commands are not
// NDJSON events: replay --json still prints exactly what the sim printed,
// and the report counts them per player.
func TestRecordedSimStoresMovedCommands_S13(t *testing.T) {
	path := filepath.Join("testdata", "scenarios", "recovery.json")
	var replayed, errb bytes.Buffer
	plain := simOutput(t, path)
	file := recordScenario(t, "recovery.json")
	if code := run([]string{"replay", "--json", file}, &replayed, &errb); code != 0 || !bytes.Equal(plain, replayed.Bytes()) {
		t.Fatalf("replay --json differs from the sim's output: exit %d, %d vs %d bytes", code, replayed.Len(), len(plain))
	}

	// What every machine executed, straight from the engine.
	type executed struct {
		player      string
		seq         uint32
		frame, send int
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.ParseScenario(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	by := map[string][]executed{}
	if _, err := sim.RunWith(sc, io.Discard, sim.Options{OnCommand: func(m string, _ time.Duration, player string, send int, c feed.Command) {
		by[m] = append(by[m], executed{player, c.Seq, int(c.Tag), send})
	}}); err != nil {
		t.Fatal(err)
	}
	var longest []executed
	for _, cs := range by {
		if len(cs) > len(longest) {
			longest = cs
		}
	}

	rec, err := record.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	var stored []executed
	var cmds []record.Record
	for _, r := range rec.Records {
		if r.Kind == record.KindCommand {
			c := r.Command
			stored = append(stored, executed{c.Player, c.Seq, c.Frame, c.SendFrame})
			cmds = append(cmds, r)
		}
	}
	if !slices.Equal(stored, longest) {
		t.Fatalf("the recording stores %d commands, the machines executed %d", len(stored), len(longest))
	}
	// Every send frame's commands together, and a moved command among
	// them with its original frame.
	moved := 0
	done := map[int]bool{}
	for i, r := range cmds {
		c := r.Command
		if i > 0 && c.SendFrame != cmds[i-1].Command.SendFrame && done[c.SendFrame] {
			t.Fatalf("send frame %d's commands are not stored together", c.SendFrame)
		}
		done[c.SendFrame] = true
		if c.Moved() {
			moved++
			if c.Frame >= c.SendFrame || r.From == "" || c.Player == "" || len(c.Payload) == 0 {
				t.Fatalf("moved command %+v from %q", c, r.From)
			}
		}
	}
	if moved == 0 {
		t.Fatal("no stored command ran on a later send frame than its own")
	}

	rep := reportJSON(t, file)
	count, repMoved := 0, 0
	for _, c := range rep.Commands {
		count += c.Count
		repMoved += c.Moved
	}
	if len(rep.Commands) != 3 || count != len(stored) || repMoved != moved {
		t.Fatalf("report commands %+v, want %d commands, %d moved", rep.Commands, len(stored), moved)
	}
}

// A live machine's recording (here the demo's, your machine) stores the
// commands it executed with their send frames and original frames (S13)
// beside its events and views, and replay --json prints what it printed.
func TestDemoRecordsCommands_S13(t *testing.T) {
	file := filepath.Join(t.TempDir(), "demo.lsrec")
	var out, errb, replayed bytes.Buffer
	if code := run([]string{"demo", "--json", "--duration", "4s", "--players", "3", "--profile", "lan", "--record", file}, &out, &errb); code != 0 {
		t.Fatalf("demo: exit %d %s", code, errb.String())
	}
	if code := run([]string{"replay", "--json", file}, &replayed, &errb); code != 0 || !bytes.Equal(out.Bytes(), replayed.Bytes()) {
		t.Fatalf("replay --json differs from what the demo printed: exit %d, %d vs %d bytes", code, replayed.Len(), out.Len())
	}
	rec, err := record.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[record.Kind]int{}
	types := map[uint8]int{}
	players := map[string]bool{}
	last := 0
	for _, r := range rec.Records {
		kinds[r.Kind]++
		if r.Kind != record.KindCommand {
			continue
		}
		c := r.Command
		if r.From != "you" || c.SendFrame < c.Frame || c.SendFrame < last {
			t.Fatalf("command %+v from %q after send frame %d", c, r.From, last)
		}
		last = c.SendFrame
		types[c.Type]++
		players[c.Player] = true
	}
	if kinds[record.KindEvent] == 0 || kinds[record.KindView] == 0 || types[feed.CmdGame] == 0 || types[feed.CmdNetworkReport] == 0 || len(players) != 3 {
		t.Fatalf("records %v, command types %v, from players %v", kinds, types, players)
	}
}
