package ui

import (
	"fmt"
	"github.com/lagscope/lagscope/vocab"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lagscope/lagscope/probe/feed"
)

// screenCase is one view to check at every size: the updates it is drawn
// from and the keys that open it.
type screenCase struct {
	name    string
	updates func() []feed.Update
	keys    []tea.Msg
}

var keyDownMsg = tea.KeyMsg{Type: tea.KeyDown}

// everyView lists every view the UI draws, for the checks that hold on
// all of them.
func everyView() []screenCase {
	return append([]screenCase{
		{"Session", fixtureUpdates, nil},
		{"Link", fixtureUpdates, []tea.Msg{tab}},
		{"Players", fixtureUpdates, []tea.Msg{tab, tab}},
		{"Messages", fixtureUpdates, []tea.Msg{tab, tab, tab}},
		{"Matrix", matrixUpdates, toMatrix},
		{"Options", fixtureUpdates, []tea.Msg{typed("o")}},
		{"Help", fixtureUpdates, []tea.Msg{typed("?")}},
		{"HelpScrolled", fixtureUpdates, []tea.Msg{typed("?"), tea.KeyMsg{Type: tea.KeyPgDown}, tea.KeyMsg{Type: tea.KeyPgDown}}},
		{"HintL8", fixtureUpdates, []tea.Msg{keyDownMsg, keyDownMsg, tea.KeyMsg{Type: tea.KeyEnter}}},
		{"LongMessages", longMessageUpdates, []tea.Msg{tab, tab, tab}},
		{"LongMessagesSession", longMessageUpdates, nil},
		{"Lobby", lobbyUpdates, nil},
		{"Alerts", alertUpdates, []tea.Msg{tab, tab, tab}},
		{"Diagnosis", diagnosisUpdates, toDiagnosis},
		{"DiagnosisNone", fixtureUpdates, toDiagnosis},
		{"DiagnosisVerdictHeader", diagnosisUpdates, nil},
		{"LobbyMatrix", lobbyUpdates, toMatrix},
	}, append(append(append(relayViews(), pathViews()...), lobbyViews()...), loadViews()...)...)
}

// longMessageUpdates is the fixture with messages longer than any pane is
// wide, the kind the demo sends ("Demo: the link between you and ada …").
func longMessageUpdates() []feed.Update {
	us := fixtureUpdates()
	long := "Demo: the link between you and ada slows down to 450 ms for twenty seconds, then recovers; watch the target tier follow it"
	us[50].Events = append(us[50].Events, &feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: 1500}, Text: long})
	us[60].Events = append(us[60].Events, &feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: 1800}, Text: "Connection quality target: Normal", Kind: feed.MessageTier, Subject: "Normal"})
	return us
}

// lobbyUpdates is a session in its lobby: three players seated, no game
// started, no link reports.
func lobbyUpdates() []feed.Update {
	var out []feed.Update
	for t := 0; t <= 5; t++ {
		v := feed.View{At: secs(t), Session: "7c3a91", Self: "alice", Master: "alice", FPS: 30, Speed: 30}
		v.Players = []feed.PlayerView{{Name: "alice", Master: true, Self: true}, {Name: "bob"}, {Name: "carol"}}
		out = append(out, feed.Update{View: v})
	}
	return out
}

// Every view at 80, 120 and 200 columns: nothing is cut in the middle of a
// word (long messages wrap; headings, titles and details give way
// whole), and the picture fills the terminal exactly.
func TestEveryViewFitsWithoutCuttingWords(t *testing.T) {
	for _, sz := range goldenSizes {
		for _, c := range everyView() {
			t.Run(fmt.Sprintf("%s_%dx%d", c.name, sz[0], sz[1]), func(t *testing.T) {
				m := model(t, newStaticFeed(), sz[0], sz[1], c.updates())
				press(m, c.keys...)
				var cuts []string
				cutHook = func(s string, w int) { cuts = append(cuts, fmt.Sprintf("%q cut to %d", s, w)) }
				defer func() { cutHook = nil }()
				m.dirty = true
				out := m.View()
				checkSize(t, out, sz[0], sz[1])
				if len(cuts) > 0 {
					t.Errorf("text cut mid-word:\n%s\n%s", strings.Join(cuts, "\n"), out)
				}
			})
		}
	}
}

// requirementNumber is a requirement's number as it would appear on
// screen: "(S5)", "(L8)", or alone as a word.
var requirementNumber = regexp.MustCompile(`\(([TSLQR][0-9]{1,2})\)|\b[TSLQR][0-9]{1,2}\b`)

// No screen shows a requirement number: those are for the
// project's readers, not for players.
func TestNoRequirementNumbersOnScreen(t *testing.T) {
	for _, sz := range goldenSizes {
		for _, c := range everyView() {
			m := model(t, newStaticFeed(), sz[0], sz[1], c.updates())
			press(m, c.keys...)
			if hit := requirementNumber.FindString(m.View()); hit != "" {
				t.Errorf("%s at %dx%d shows %q:\n%s", c.name, sz[0], sz[1], hit, m.View())
			}
		}
	}
	// The check itself catches requirement numbers as screens would show them.
	for _, s := range []string{"⚠ resends 18% ≫ loss 3.8%: RTT behind? (L8)", "latest reports (S5)", "differenced (L5)."} {
		if !requirementNumber.MatchString(s) {
			t.Errorf("the pattern misses %q", s)
		}
	}
}

func secs(n int) time.Duration { return time.Duration(n) * time.Second }

// The chart stays on the first link until the user moves it, however the
// worst-link mark moves; it does not follow the mark. Here dave
// becomes the worst link half way; the chart stays on bob, the first.
func TestChartStaysOnChosenLink(t *testing.T) {
	us := fixtureUpdates()
	for i := 50; i < len(us); i++ {
		for j := range us[i].View.Links {
			if us[i].View.Links[j].Peer == "dave" {
				us[i].View.Links[j].SRTT = msd(900)
			}
		}
	}
	m := model(t, newStaticFeed(), 120, 40, us[:40])
	if v := m.View(); !strings.Contains(v, "Round trip · bob") {
		t.Fatalf("the chart should start on the first link:\n%s", v)
	}
	for _, u := range us[40:] {
		m.Update(updateMsg{u})
	}
	v := m.View()
	if !strings.Contains(v, "!dave") || !strings.Contains(v, "Round trip · bob") {
		t.Fatalf("dave is marked worst, the chart should stay on bob:\n%s", v)
	}
	// The user moves it: it goes, and stays there.
	press(m, keyDownMsg, tea.KeyMsg{Type: tea.KeyEnter})
	if !strings.Contains(m.View(), "Round trip · carol") {
		t.Fatalf("enter should move the chart to carol:\n%s", m.View())
	}
}

// After the lobby the chart's scale follows the measured link, not the
// one-second retry guess from before the first measurement (which would
// hold the scale at 1200 ms for a 1.5 ms link).
func TestChartScaleIgnoresUnmeasuredRetryGuess(t *testing.T) {
	var us []feed.Update
	for s := 0; s <= 40; s++ {
		v := feed.View{At: secs(s), Self: "alice", Master: "alice", FPS: 30, Started: s >= 20, Frame: max(0, s-20) * 30}
		lv := feed.LinkView{Peer: "bob"}
		lv.State, lv.RTO, lv.ConnTimeout = feed.LinkUnmeasured, msd(1000), msd(2000)
		if s >= 20 {
			lv.State, lv.RTTKnown, lv.SRTT, lv.RTTVAR, lv.RTO = feed.LinkMeasured, true, msd(1.5), msd(0.5), msd(100)
		}
		v.Links = []feed.LinkView{lv}
		us = append(us, feed.Update{View: v})
	}
	m := model(t, newStaticFeed(), 120, 40, us)
	v := m.View()
	for _, big := range []string{"1200│", "1000│", " 800│"} {
		if strings.Contains(v, big) {
			t.Fatalf("the scale still shows %q for a 1.5 ms link:\n%s", big, v)
		}
	}
	if !strings.Contains(v, "120│") && !strings.Contains(v, "100│") {
		t.Fatalf("the scale should follow the 100 ms retry time:\n%s", v)
	}
}

// In the lobby the Matrix says why it is empty, not "no players yet" with
// three seated.
func TestMatrixInLobbySaysWhy(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, lobbyUpdates())
	press(m, toMatrix...)
	v := m.View()
	if strings.Contains(v, "no players yet") || !strings.Contains(v, "3 players in the session") || !strings.Contains(strings.Join(strings.Fields(v), " "), "once the game starts") {
		t.Fatalf("lobby matrix text:\n%s", v)
	}
}

// "Who causes lag" ranks only players someone waited for, never players
// at 0 ms.
func TestCulpritsLeaveOutZero(t *testing.T) {
	m := matrixModel(t, 120, 40)
	v := m.View()
	i := strings.Index(v, "Who causes lag")
	if i < 0 {
		t.Fatalf("no ranking:\n%s", v)
	}
	for _, l := range strings.Split(v[i:], "\n")[1:] {
		if f := strings.Fields(l); len(f) > 2 && (f[2] == "0ms") {
			t.Errorf("a player at 0 ms is ranked: %q", l)
		}
	}
}

// `t` says which theme is now on, in the footer, until the next key.
func TestThemeKeySaysWhichTheme(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	press(m, typed("t"))
	foot := lastLine(m.View())
	if !strings.Contains(foot, "theme: "+m.Theme()) {
		t.Fatalf("footer after t: %q (theme %s)", foot, m.Theme())
	}
	press(m, tab)
	if strings.Contains(lastLine(m.View()), "theme:") {
		t.Fatalf("the note should go with the next key: %q", lastLine(m.View()))
	}
}

func lastLine(s string) string { return s[strings.LastIndex(s, "\n")+1:] }

var toDiagnosis = []tea.Msg{tab, tab, tab, tab, tab}

// The Diagnosis view from a hand-made diagnosis: the verdict
// in the header on every view, the culprit marked, every player's numbers
// with NaN as "—" (L3), the evidence behind each cause in words, and the
// link with excess.
func TestDiagnosisView(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, diagnosisUpdates())
	if v := m.View(); !strings.Contains(v, "bob's connection adds 250 ms") {
		t.Fatalf("the header should carry the verdict:\n%s", v)
	}
	press(m, toDiagnosis...)
	v := m.View()
	row := func(prefix string) []string {
		for _, l := range strings.Split(v, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return strings.Fields(l)
			}
		}
		t.Fatalf("no row %q:\n%s", prefix, v)
		return nil
	}
	if f := row("! bob"); f[2] != "250" || f[3] != "4.0%" || f[7] != "rung" || f[8] != "2" || !strings.Contains(strings.Join(f, " "), "latency, loss") {
		t.Errorf("bob's row: %v", f)
	}
	if f := row("alice"); f[5] != "1.3s" {
		t.Errorf("alice's caused wait: %v", f)
	}
	if f := row("erin"); f[1] != unknown || f[2] != unknown || f[5] != unknown || f[6] != unknown {
		t.Errorf("erin's unknowns should read %q, never 0 or NaN: %v", unknown, f)
	}
	for _, want := range []string{
		"bob: adds 250 ms to every round trip it is on; the others' median share is 25 ms",
		"bob: loses 4.0% of the packets",
		"dave: its machine needs 45 ms per frame; without it the game could run at 20 fps",
		"erin: not measured",
		"bob – carol: measured 600 ms where its two players' shares add up to 275 ms",
	} {
		if !strings.Contains(strings.Join(strings.Fields(v), " "), want) {
			t.Errorf("evidence %q missing:\n%s", want, v)
		}
	}
	if strings.Contains(v, "NaN") {
		t.Errorf("NaN on screen:\n%s", v)
	}
	if f := row("! bob – carol"); f[4] != "600" || f[6] != "325" {
		t.Errorf("the slow path's row: %v", f)
	}
	if strings.Contains(v, "alice – carol") {
		t.Errorf("a link without excess or cause is listed:\n%s", v)
	}
}

// alertUpdates is the fixture with alerts: bob's link going bad
// at 31 s with the engine's text, carol's loss at 40 s without text, and a
// tier alert about the whole session at 95 s.
func alertUpdates() []feed.Update {
	us := fixtureUpdates()
	from, bob, carol := "alice", "bob", "carol"
	h := func(t int) feed.Header { return feed.Header{Type: vocab.EventAlert, Frame: t * 30} }
	us[31].Events = append(us[31].Events, &feed.AlertEvent{Header: h(31), Player: "alice", Kind: feed.AlertBad, From: &from, To: &bob, Text: "the link alice → bob has gone bad"})
	us[40].Events = append(us[40].Events, &feed.AlertEvent{Header: h(40), Player: "alice", Kind: feed.AlertLoss, From: &from, To: &carol})
	us[95].Events = append(us[95].Events, &feed.AlertEvent{Header: h(95), Player: "alice", Kind: feed.AlertTier})
	return us
}

// Alerts: each marks the line of the message list its event has — bob's
// link gone bad, the tier line — or, with none (carol's loss in this
// fixture), is a line of its own; never a second line for one event. The
// bell is off by default, b turns it on, and then it rings once for each
// update that brings an alert.
func TestAlertsAreMessagesAndRingTheBell(t *testing.T) {
	us := alertUpdates()
	rings := 0
	m := model(t, newStaticFeed(), 120, 40, nil)
	m.ring = func() tea.Cmd { rings++; return nil }
	for _, u := range us[:35] {
		m.Update(updateMsg{u})
	}
	if rings != 0 {
		t.Fatalf("the bell rang %d times while off", rings)
	}
	press(m, typed("b"))
	if !strings.Contains(lastLine(m.View()), "bell on") || !strings.Contains(strings.Split(m.View(), "\n")[0], "bell on") {
		t.Fatalf("b should say the bell is on:\n%s", m.View())
	}
	for _, u := range us[35:] {
		m.Update(updateMsg{u})
	}
	if rings != 2 {
		t.Fatalf("the bell rang %d times for 2 alerts while on", rings)
	}
	press(m, tab, tab, tab)
	v := m.View()
	flat := strings.Join(strings.Fields(v), " ")
	for _, want := range []string{
		"00:31 ALERT Connection to bob has gone bad",
		"00:40 ALERT the link alice → carol is losing packets",
		"01:35 ALERT Connection quality target: Fast",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("alert line %q missing:\n%s", want, v)
		}
	}
	for _, once := range []string{"Connection to bob has gone bad", "Connection quality target: Fast", "has gone bad"} {
		if n := strings.Count(flat, once); n != 1 {
			t.Errorf("%q is on %d lines, want 1:\n%s", once, n, v)
		}
	}
	press(m, typed("b"))
	if strings.Contains(strings.Split(m.View(), "\n")[0], "bell on") {
		t.Fatal("b again should turn the bell off")
	}
}

// The cached parts of the picture follow every input they are drawn from:
// a new picture, a new message, a closed feed, a sort, the paused display.
func TestCachedPartsFollowChanges(t *testing.T) {
	us := fixtureUpdates()
	m := model(t, newStaticFeed(), 120, 40, us[:50])
	before := m.View()
	next := us[50]
	next.View.Links = append([]feed.LinkView(nil), next.View.Links...)
	next.View.Links[1].SRTT = msd(333)
	next.Events = append(next.Events, &feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: 1500}, Text: "a brand new message"})
	m.Update(updateMsg{next})
	v := m.View()
	if v == before || !strings.Contains(v, " 333 ") || !strings.Contains(v, "a brand new message") || !strings.Contains(v, "t 00:50") {
		t.Fatalf("the picture did not follow the update:\n%s", v)
	}
	press(m, typed(" "))
	m.Update(updateMsg{us[51]})
	if p := m.View(); !strings.Contains(p, "PAUSED") || !strings.Contains(p, "t 00:50") {
		t.Fatalf("paused display:\n%s", p)
	}
	press(m, typed(" "), typed("s"))
	if v := m.View(); !strings.Contains(v, "PLAYER▲") || !strings.Contains(v, "t 00:51") {
		t.Fatalf("sort and resume:\n%s", v)
	}
	m.Update(feedClosedMsg{})
	if !strings.Contains(m.View(), "ENDED") {
		t.Fatalf("a closed feed should show in the header:\n%s", m.View())
	}
}

// A replay at 80 columns with the wall clock on: the header keeps every
// tab whole and gives up the wall clock, then the program's name, so no
// tab is cut off; an observer's mark fits its column.
func TestReplayHeaderAt80KeepsTabs(t *testing.T) {
	f := &fakeReplay{staticFeed: newStaticFeed(), at: 75 * time.Second, end: 91 * time.Second, speed: 1}
	us := fixtureUpdates()
	for i := range us {
		us[i].View.Links[3].Observer = true
	}
	for _, w := range []int{80, 120, 200} {
		// 26 rows: the header's verdict area and the table's four links.
		m := model(t, f, w, 26, us)
		m.opts.Clock = func() time.Time { return time.Date(2026, 1, 2, 14, 32, 50, 0, time.UTC) }
		var cuts []string
		cutHook = func(s string, w int) { cuts = append(cuts, fmt.Sprintf("%q cut to %d", s, w)) }
		m.dirty = true
		v := m.View()
		cutHook = nil
		head := strings.Split(v, "\n")[0]
		for _, sc := range screens {
			if !strings.Contains(head, " "+sc.name+" ") {
				t.Errorf("at %d the tab %q is not whole: %q", w, sc.name, head)
			}
		}
		if !strings.Contains(head, "⏸ 01:15 / 01:31 ×1") {
			t.Errorf("at %d the replay position is missing: %q", w, head)
		}
		if w >= 120 && !strings.Contains(head, "14:32:50") {
			t.Errorf("at %d there is room for the wall clock: %q", w, head)
		}
		if len(cuts) > 0 {
			t.Errorf("at %d text cut mid-word: %v\n%s", w, cuts, v)
		}
		if !strings.Contains(v, "erin°") && !strings.Contains(v, "erin (obs)") {
			t.Errorf("at %d the observer is not marked:\n%s", w, v)
		}
	}
}
