package metrics

import (
	"net/netip"
	"regexp"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// refs matches what a help text must not carry: requirement numbers
// (T9, S11a, L2) and issue references. A scrape's reader has no list of
// requirements at hand; the words must stand alone.
var refs = regexp.MustCompile(`\b[TSLQR][0-9]+[a-z]?\b|(?i)\bissue\b`)

func TestHelpTextInWords(t *testing.T) {
	e, err := New("lan")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	v := watcherView(row("ada", ml("ada", "bob", 60, 300, 290)), row("bob", ml("bob", "ada", 61, 310, 300)))
	v.Self = "ada"
	v.Links = []feed.LinkView{lv("bob", 100, 400)}
	v.Players = []feed.PlayerView{{Name: "bob", Report: &feed.ReportView{Wait: time.Millisecond}}}
	v.Paths = []feed.PathView{{Peer: "bob", Available: true, Hops: []feed.PathHop{
		{TTL: 1, Addr: netip.MustParseAddr("192.168.1.1"), Link: "lan", Sent: 20, Answered: true, Median: time.Millisecond},
	}}}
	e.Observe(feed.Update{View: v, Events: []feed.Event{loadEvent(t, completeLoad)}})
	fams, _ := scrape(t, e)
	families := 0
	for name, f := range fams {
		if len(name) < 9 || name[:9] != "lagscope_" {
			continue
		}
		families++
		if h := f.GetHelp(); h == "" {
			t.Errorf("%s has no help", name)
		} else if m := refs.FindString(h); m != "" {
			t.Errorf("%s help carries %q: %s", name, m, h)
		}
	}
	// The link, machine, matrix, path and load families all answered.
	if families < 31 {
		t.Errorf("%d lagscope families scraped, want the whole set (≥ 31)", families)
	}
}
