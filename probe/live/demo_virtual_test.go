package live

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// PlayDemo is the demo in virtual time: the same names and narration as
// startDemo, every link measured, the spike worsening the target (S11a),
// and the same run twice gives the same updates (what lets the README's
// screen be pinned).
func TestPlayDemoRepeatsAndShowsThePlan_S11(t *testing.T) {
	cfg := DemoConfig{Players: 4, Profile: "mix", Seed: 1, Spike: true}
	a, err := PlayDemo(cfg, 35*time.Second, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 351 {
		t.Fatalf("%d updates, want 351 (0 to 35 s every 100 ms)", len(a))
	}
	last := a[len(a)-1].View
	if last.Self != "you" || len(last.Players) != 4 || !last.Started || last.At != 35*time.Second {
		t.Fatalf("last view: self %q, %d players, started %v, at %v", last.Self, len(last.Players), last.Started, last.At)
	}
	for _, l := range last.Links {
		if !l.RTTKnown {
			t.Errorf("link to %s not measured after 35 s", l.Peer)
		}
	}
	var msgs []string
	worse := false
	for _, u := range a {
		for _, e := range u.Events {
			if m, ok := e.(*feed.MessageEvent); ok {
				msgs = append(msgs, m.Text)
			}
		}
		if u.View.Target.Rung() > 2 {
			worse = true
		}
	}
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{"Demo: each player's access link — you: lan, ada: cable", "Demo: ada's connection slows down"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no %q in the messages:\n%s", want, joined)
		}
	}
	if !worse {
		t.Error("the spike never worsened the target")
	}

	b, err := PlayDemo(cfg, 35*time.Second, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) || !reflect.DeepEqual(a[len(a)-1].View.Matrix, b[len(b)-1].View.Matrix) {
		t.Fatal("two runs of the same demo differ")
	}
}
