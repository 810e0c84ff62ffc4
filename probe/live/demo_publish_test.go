package live

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"
)

// The live demo (sockets, the wall clock, the Runner) and the virtual one
// (simnet, PlayDemo) publish through the same publisher: for the same plan
// and length they emit the same kinds of events, the path lines among them,
// but for those that depend on how a run ends or on its flags (the summary
// at the end, a removal that only a --leave scripts, a load test's result).
// The plan's spike opens an incident about 11 s in; 16 s leaves room for it.
// An alert (a link gone bad, loss past its threshold, a worse tier) comes
// in one run and not in another of the same plan — on the wall clock the
// loss and the lateness are the run's own — so either run may have it
// alone.
func TestLiveAndVirtualDemoPublishTheSameEventTypes(t *testing.T) {
	const length = 16 * time.Second
	cfg := DemoConfig{Players: 4, Profile: "mix", Seed: 1, Spike: true}
	runOnly := map[vocab.EventType]bool{vocab.EventSummary: true, vocab.EventRemoved: true, vocab.EventLoad: true}

	ups, err := PlayDemo(cfg, length, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	virtual := map[vocab.EventType]bool{}
	for _, u := range ups {
		for _, e := range u.Events {
			if typ := feed.Head(e).Type; !runOnly[typ] {
				virtual[typ] = true
			}
		}
	}

	var out bytes.Buffer
	if err := RunDemo(RunConfig{Cmd: "demo", Name: "you", Duration: length, Stdout: &out}, cfg); err != nil {
		t.Fatal(err)
	}
	live := map[vocab.EventType]bool{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var e struct {
			Type vocab.EventType `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Bytes(), err)
		}
		if !runOnly[e.Type] {
			live[e.Type] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	for _, maybe := range []vocab.EventType{vocab.EventAlert} {
		if virtual[maybe] != live[maybe] {
			t.Logf("%s: in the virtual run %v, in the live run %v", maybe, virtual[maybe], live[maybe])
			delete(virtual, maybe)
			delete(live, maybe)
		}
	}
	v, l := slices.Sorted(maps.Keys(virtual)), slices.Sorted(maps.Keys(live))
	if !slices.Equal(v, l) {
		t.Errorf("event types differ:\nvirtual %v\nlive    %v", v, l)
	}
	for _, want := range []vocab.EventType{vocab.EventLink, vocab.EventPath, vocab.EventMessage} {
		if !virtual[want] {
			t.Errorf("the virtual demo published no %s event", want)
		}
	}
}
