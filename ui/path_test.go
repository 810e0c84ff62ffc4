package ui

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
)

// Fixtures for the Path view: the fixture session with hop traces from
// 80 s on.
//
//   - bob: a home queue on the LAN (delay starts at hop 1, +195 ms), a
//     silent hop 2, a rate-limited router at hop 3, loss that starts at
//     hop 5 and lasts to bob, who answers at hop 6;
//   - carol: traced, no hop has answered yet;
//   - dave: this machine cannot trace;
//   - erin: not traced yet.
func pathUpdates() []feed.Update {
	us := fixtureUpdates()
	for i := 80; i < len(us); i++ {
		us[i].View.Paths = []feed.PathView{bobPath(), {Peer: "carol", Available: true},
			{Peer: "dave", Why: "this system has no ICMP error queue"}}
	}
	return us
}

// hop is one judged hop of a fixture path; a zero addr never answered.
func hop(ttl int, addr string, link vocab.HopLink, loss, best, median, worst float64) feed.PathHop {
	h := feed.PathHop{TTL: ttl, Link: link, Sent: 60, Loss: loss, Judged: true}
	if addr != "" {
		h.Addr, h.Answered = netip.MustParseAddr(addr), true
		h.Best, h.Median, h.Last, h.Worst = msd(best), msd(median), msd(median), msd(worst)
	}
	return h
}

func bobPath() feed.PathView {
	rl := hop(3, "100.64.0.1", "isp", 0.35, 196, 201, 290)
	rl.RateLimited = true
	return feed.PathView{Peer: "bob", Available: true, Complete: true,
		Hops: []feed.PathHop{
			hop(1, "192.168.1.1", "lan", 0, 1.2, 195.4, 262),
			hop(2, "", "uplink", 1, 0, 0, 0),
			rl,
			hop(4, "203.0.113.9", "isp", 0, 197, 204, 275),
			hop(5, "198.51.100.20", "beyond", 0.098, 199, 210, 281),
			hop(6, "198.51.100.77", "peer", 0.1, 203, 214, 300),
		},
		DelayStarts: &feed.PathStart{TTL: 1, Link: "lan", Added: msd(195.4)},
		LossStarts:  &feed.PathStart{TTL: 5, Link: "beyond", Loss: 0.098},
	}
}

var (
	toPathDave  = []tea.Msg{keyDownMsg, keyDownMsg, typed("p")}
	toPathCarol = []tea.Msg{keyDownMsg, typed("p")}
	toPathErin  = []tea.Msg{keyDownMsg, keyDownMsg, keyDownMsg, typed("p")}
)

// pathViews are the Path view's states, for the goldens and for the
// checks every view passes.
func pathViews() []screenCase {
	return []screenCase{
		{"Path", pathUpdates, []tea.Msg{typed("p")}},
		{"PathUnavailable", pathUpdates, toPathDave},
		{"PathTracing", pathUpdates, toPathCarol},
		{"PathWaiting", pathUpdates, toPathErin},
	}
}

// TestGoldenPath pins the Path view with hops, and where this machine
// cannot trace, at every size.
func TestGoldenPath(t *testing.T) {
	want := map[string]string{"Path": "Path · bob", "PathUnavailable": "cannot trace"}
	for _, sz := range goldenSizes {
		for _, c := range pathViews()[:2] {
			t.Run(fmt.Sprintf("%s_%dx%d", c.name, sz[0], sz[1]), func(t *testing.T) {
				m := drive(t, sz[0], sz[1], c.updates(), c.keys, want[c.name])
				out := m.View()
				checkSize(t, out, sz[0], sz[1])
				teatest.RequireEqualOutput(t, []byte(out))
			})
		}
	}
}

// pressRun hands msgs to m one by one and runs every command they give,
// as the program would.
func pressRun(m *tuiModel, msgs ...tea.Msg) {
	for _, msg := range msgs {
		runCmd(press(m, msg))
	}
}

// controlsSince are the controls f received after the first n.
func controlsSince(f *staticFeed, n int) []feed.Control { return f.Controls()[n:] }

// `p` opens the Path view on the cursor's link and asks the engine to
// trace it; ↑/↓ trace another link; esc, tab and q close it, and the
// engine hears of it before anything else.
func TestPathKeySendsControls(t *testing.T) {
	f := newStaticFeed()
	m := model(t, f, 120, 40, pathUpdates())
	expect := func(what string, want ...feed.Control) {
		t.Helper()
		if got := controlsSince(f, 0); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: controls %+v, want %+v", what, got, want)
		}
		f.mu.Lock()
		f.controls = nil
		f.mu.Unlock()
	}
	pressRun(m, typed("p"))
	if !m.onPath() || !strings.Contains(m.View(), "Path · bob") {
		t.Fatalf("p should open the Path view on bob:\n%s", m.View())
	}
	expect("p", feed.Control{Path: "bob"})
	pressRun(m, keyDownMsg)
	expect("↓", feed.Control{Path: "carol"})
	if !strings.Contains(m.View(), "Path · carol") {
		t.Fatalf("↓ should show carol's path:\n%s", m.View())
	}
	pressRun(m, keyEsc)
	expect("esc", feed.Control{PathClosed: true})
	if m.screen != 0 {
		t.Fatalf("esc should go back to the Session view, on %q", screens[m.screen].name)
	}
	pressRun(m, typed("p"), tab)
	expect("p, tab", feed.Control{Path: "carol"}, feed.Control{PathClosed: true})
	// From the Link view: its link, which the cursor has not reached.
	m.screen = screenNamed("Link")
	m.charts.focus = "dave"
	pressRun(m, typed("p"))
	expect("p on the Link view", feed.Control{Path: "dave"})
	pressRun(m, typed("p"))
	expect("p again", feed.Control{PathClosed: true})
	if screens[m.screen].name != "Link" {
		t.Fatalf("p again should go back to the Link view, on %q", screens[m.screen].name)
	}
	pressRun(m, typed("p"), typed("q"))
	expect("p, q", feed.Control{Path: "dave"}, feed.Control{PathClosed: true}, feed.Control{Quit: true})
}

// The Path tab opens the view too, on a click or with tab, and leaving it
// the same way closes it.
func TestPathTabSendsControls(t *testing.T) {
	f := newStaticFeed()
	m := model(t, f, 120, 40, pathUpdates())
	m.View()
	i := screenNamed(pathName)
	pressRun(m, tea.MouseMsg{X: m.hits.tabs[i].from, Y: 0, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
	if !m.onPath() {
		t.Fatal("a click on the Path tab should open it")
	}
	pressRun(m, tea.MouseMsg{X: m.hits.tabs[0].from, Y: 0, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
	pressRun(m, shiftTab)
	want := []feed.Control{{Path: "bob"}, {PathClosed: true}, {Path: "bob"}}
	if got := f.Controls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("controls %+v, want %+v", got, want)
	}
}

// Without a link there is nothing to trace: `p` says so and asks nothing.
func TestPathKeyWithoutLinks(t *testing.T) {
	f := newStaticFeed()
	m := model(t, f, 120, 40, lobbyUpdates())
	pressRun(m, typed("p"))
	if m.onPath() || len(f.Controls()) != 0 || !strings.Contains(lastLine(m.View()), "no link to trace yet") {
		t.Fatalf("p without links: on path %v, controls %+v, footer %q", m.onPath(), f.Controls(), lastLine(m.View()))
	}
}

// The hop table: a row per hop with unknowns as —, never 0; the marks
// where delay and loss start, the rate-limited and the silent hop; the
// summary in words.
func TestPathViewRows(t *testing.T) {
	m := model(t, newStaticFeed(), 200, 60, pathUpdates())
	press(m, typed("p"))
	v := stripANSI(m.View())
	row := func(ttl string) string {
		for _, l := range strings.Split(v, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == ttl {
				return strings.Join(f, " ")
			}
		}
		t.Fatalf("no row for hop %s:\n%s", ttl, v)
		return ""
	}
	for ttl, want := range map[string]string{
		"1": "1 192.168.1.1 lan 0.0% 1.2 195 262 ",
		"2": "2 — uplink 100% — — — silent: it does not answer, not loss",
		"3": "3 100.64.0.1 isp 35% 196 201 290 ",
		"5": "5 198.51.100.20 beyond 9.8% 199 210 281 ",
		"6": "6 198.51.100.77 peer 10% 203 214 300 ",
	} {
		if got := row(ttl); !strings.HasPrefix(got, want) {
			t.Errorf("hop %s: %q, want it to start %q", ttl, got, want)
		}
	}
	for ttl, mark := range map[string]string{"1": "delay starts here +195 ms", "3": "answers slowly: rate-limited, not loss", "5": "loss starts here 9.8%"} {
		if !strings.HasSuffix(row(ttl), mark) {
			t.Errorf("hop %s should end with %q: %q", ttl, mark, row(ttl))
		}
	}
	flat := strings.Join(strings.Fields(v), " ")
	for _, want := range []string{
		"hops on the way to bob, traced on the game's own socket",
		"delay starts at hop 1 (lan: between the machine and its home router (Wi-Fi or cable)) and lasts to bob: +195 ms",
		"loss starts at hop 5 (beyond: past the internet provider) and lasts to bob: 9.8% lost",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("missing %q:\n%s", want, v)
		}
	}
}

// Before the first hop, without a trace, and where this machine cannot
// trace, the view says so in words.
func TestPathViewStates(t *testing.T) {
	for _, c := range []struct {
		keys []tea.Msg
		want []string
	}{
		{toPathCarol, []string{"tracing… the first hops answer within a few seconds"}},
		{toPathErin, []string{"waiting for the trace to start"}},
		{toPathDave, []string{"this machine cannot trace the hops to dave: this system has no ICMP error queue", "the rest of lagscope works as usual"}},
	} {
		m := model(t, newStaticFeed(), 80, 24, pathUpdates())
		press(m, c.keys...)
		flat := strings.Join(strings.Fields(stripANSI(m.View())), " ")
		for _, w := range c.want {
			if !strings.Contains(flat, w) {
				t.Errorf("missing %q:\n%s", w, m.View())
			}
		}
	}
}

// A hop trace's names, reasons and addresses come from outside: escape
// sequences in them reach the screen written out, never raw.
func TestPathViewEscapesOutsideText(t *testing.T) {
	us := pathUpdates()
	evil := "\x1b]0;pwned\a"
	for i := range us {
		v := &us[i].View
		v.Links[0].Peer, v.Links[0].To = "bob"+evil, "bob"+evil
		if len(v.Paths) > 0 {
			p := bobPath()
			p.Peer, p.Why = "bob"+evil, evil
			p.Hops[0].Link = vocab.HopLink("lan" + evil)
			p.Hops[0].Addr = netip.MustParseAddr("fe80::1%" + "eth\x1b[2J")
			p.DelayStarts.Link = vocab.HopLink("lan" + evil)
			v.Paths = []feed.PathView{p}
		}
	}
	m := model(t, newStaticFeed(), 200, 60, us)
	press(m, typed("p"))
	v := m.View()
	if strings.Contains(v, "\x1b]0;") || strings.Contains(v, "\x1b[2J") || strings.Contains(v, "\a") {
		t.Fatalf("raw escape on screen: %q", v)
	}
	if !strings.Contains(v, "Path · bob") || !strings.Contains(v, "fe80::1%") {
		t.Fatalf("the escaped trace should show:\n%s", v)
	}
}

// What a trace cannot tell yet, or at all, the Path view says in words: a
// loss no hop is placed for yet, with the probes placing it takes, and a
// path of one hop, which places nothing.
func TestPathViewSaysWhatItCannotTell(t *testing.T) {
	for _, c := range []struct {
		edit func(p *feed.PathView)
		want string
	}{
		{func(p *feed.PathView) {
			p.LossStarts, p.LossPending = nil, &feed.PathLossPending{Loss: 0.05, More: 120}
		}, "bob loses 5.0%; not enough probes yet to say where it starts — about 120 more"},
		{func(p *feed.PathView) {
			p.Hops, p.DelayStarts, p.LossStarts, p.OneHop = p.Hops[len(p.Hops)-1:], nil, nil, true
			p.Hops[0].TTL = 1
		}, "one hop: bob is on this machine's network, or is this machine; a trace places nothing beyond this machine's side, its LAN or bob's machine"},
		{func(p *feed.PathView) {
			p.Hops[4].LossLo, p.Hops[4].LossHi = 0.051, 0.176
		}, "9.8% lost (95 %: 5.1% to 18%)"},
	} {
		us := pathUpdates()
		for i := range us {
			for j := range us[i].View.Paths {
				if us[i].View.Paths[j].Peer == "bob" {
					c.edit(&us[i].View.Paths[j])
				}
			}
		}
		m := model(t, newStaticFeed(), 200, 60, us)
		press(m, typed("p"))
		flat := strings.Join(strings.Fields(stripANSI(m.View())), " ")
		if !strings.Contains(flat, c.want) {
			t.Errorf("missing %q:\n%s", c.want, flat)
		}
	}
}
