package ui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// The matrix fixture: the scripted session of fixture_test.go with every
// player's telemetry, as alice sees it at second t.
//
//   - alice's own row is her link table (fixtureLink);
//   - bob's row: a 598 ms round trip back to alice, 140 ms to carol, a bad
//     link to dave; he waited mostly for dave;
//   - carol's row stopped arriving 4 s ago (stale): bob unmeasured from
//     her side, dave provisional;
//   - dave's telemetry never arrived (every cell "?").
func fixtureMatrix(t int) feed.MatrixView {
	ts := time.Duration(t)
	var alice feed.MatrixPlayer
	alice = feed.MatrixPlayer{Name: "alice", Self: true, Known: true, Frame: t * 30, Waited: ts * 44 * time.Millisecond,
		Wait: ptr(80 * time.Millisecond), Process: ptr(3 * time.Millisecond)}
	for _, p := range []string{"bob", "carol", "dave", "erin"} {
		lv := fixtureLink(p, t)
		alice.Links = append(alice.Links, feed.MatrixLink{Link: lv.Link, Observer: p == "erin", Caused: lv.Caused})
	}
	measured := func(from, to string, srtt float64, caused time.Duration, missing uint64) feed.MatrixLink {
		return feed.MatrixLink{Link: feed.Link{From: from, To: to, State: feed.LinkMeasured,
			RTTKnown: true, SRTT: msd(srtt), RTTVAR: msd(srtt / 10), RTO: msd(max(100, srtt*1.4)), ConnTimeout: msd(max(2000, 8*srtt+250)),
			LossKnown: true, Sent: uint64(t * 15), Retransmitted: uint64(t / 4), Expected: uint64(t * 20), Missing: missing,
			PeerKnown: true, PeerExpected: uint64(t * 19), PeerMissing: uint64(t / 10)}, Caused: caused}
	}
	bobDave := measured("bob", "dave", 700, ts*90*time.Millisecond, uint64(t/2))
	bobDave.State = feed.LinkBad
	bob := feed.MatrixPlayer{Name: "bob", Known: true, Age: 100 * time.Millisecond, Frame: t*30 - 2,
		Waited: ts * 120 * time.Millisecond, Wait: ptr(12 * time.Millisecond), Process: ptr(4 * time.Millisecond),
		Links: []feed.MatrixLink{
			measured("bob", "alice", 598, ts*12*time.Millisecond, uint64(t/5)),
			measured("bob", "carol", 140, ts*3*time.Millisecond, 0),
			bobDave,
			{Link: feed.Link{From: "bob", To: "erin", State: feed.LinkMeasured, RTTKnown: true, SRTT: msd(20), RTTVAR: msd(2), RTO: msd(100), ConnTimeout: msd(2000)}, Observer: true},
		}}
	carolBob := feed.MatrixLink{Link: feed.Link{From: "carol", To: "bob", State: feed.LinkUnmeasured, RTO: msd(1000), ConnTimeout: msd(8000),
		LossKnown: true, Sent: 3, Retransmitted: 2}}
	carolDave := measured("carol", "dave", 95, ts*140*time.Millisecond, 0)
	carolDave.State = feed.LinkProvisional
	carol := feed.MatrixPlayer{Name: "carol", Known: true, Age: 4 * time.Second, Frame: t*30 - 120,
		Waited: ts * 141 * time.Millisecond, Wait: ptr(410 * time.Millisecond), Process: nil,
		Links: []feed.MatrixLink{measured("carol", "alice", 62, ts*time.Millisecond, 0), carolBob, carolDave}}
	dave := feed.MatrixPlayer{Name: "dave"}
	return feed.MatrixView{Players: []feed.MatrixPlayer{alice, bob, carol, dave}}
}

// matrixUpdates is the fixture session with every player's telemetry.
func matrixUpdates() []feed.Update {
	us := fixtureUpdates()
	for i := range us {
		us[i].View.Matrix = fixtureMatrix(i)
	}
	return us
}

var toMatrix = []tea.Msg{tab, tab, tab, tab}

// The Matrix view at the smallest supported size and a large one: every
// player to every player with tier words and the marks for unmeasured, provisional, bad and not known; the cursor on the worst link
// (bob → dave, bad) with its detail; the waits with a stale row and a
// player never heard from; the ranking of who causes lag.
func TestGoldenMatrix(t *testing.T) {
	for _, sz := range goldenSizes {
		t.Run(fmt.Sprintf("Matrix_%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m := drive(t, sz[0], sz[1], matrixUpdates(), toMatrix, "Who causes lag")
			out := m.View()
			checkSize(t, out, sz[0], sz[1])
			teatest.RequireEqualOutput(t, []byte(out))
		})
	}
}

// matrixModel is a model on the fixture with the Matrix view open.
func matrixModel(t *testing.T, w, h int) *tuiModel {
	t.Helper()
	m := model(t, newStaticFeed(), w, h, matrixUpdates())
	press(m, toMatrix...)
	return m
}

// cursorAt is the detail line's "from → to": where the cursor is.
func cursorAt(t *testing.T, m *tuiModel) string {
	t.Helper()
	for _, l := range strings.Split(m.View(), "\n") {
		l = strings.TrimSpace(l)
		if i := strings.Index(l, " → "); i > 0 && !strings.HasPrefix(l, "──") && strings.Count(l[:i], " ") == 0 {
			return l[:i+len(" → ")+strings.IndexByte(l[i+len(" → "):]+" ", ' ')]
		}
	}
	t.Fatalf("no detail line:\n%s", m.View())
	return ""
}

// The cursor starts on the worst link — a bad one before any measured one
// — and moves by row (↑/↓: who measures) and column (←/→: to whom),
// stepping over the diagonal and stopping at the edges. It leaves the link
// table's cursor alone.
func TestMatrixCursorKeys(t *testing.T) {
	m := matrixModel(t, 120, 40)
	sel := m.table.selected
	steps := []struct {
		key  tea.Msg
		want string
	}{
		{nil, "bob → dave"},
		{keyDown, "carol → dave"},
		{keyRight, "carol → dave"}, // the last column
		{keyLeft, "carol → bob"},   // over the diagonal
		{keyUp, "bob → carol"},     // onto the diagonal: beside it
		{keyUp, "alice → carol"},
		{keyUp, "alice → carol"}, // the first row
		{keyLeft, "alice → bob"},
		{keyLeft, "alice → bob"}, // the diagonal at the edge: stay
		{keyDown, "bob → carol"},
		{typed("h"), "bob → alice"},
		{typed("l"), "bob → carol"},
	}
	for i, s := range steps {
		if s.key != nil {
			press(m, s.key)
		}
		if got := cursorAt(t, m); got != s.want {
			t.Fatalf("step %d: cursor on %q, want %q", i, got, s.want)
		}
	}
	if m.table.selected != sel {
		t.Fatalf("the matrix moved the link table's cursor: %q → %q", sel, m.table.selected)
	}
	// Other views keep their keys: ↓ on the Session view moves the link
	// cursor again.
	press(m, tab, tab, keyDown)
	if m.table.selected == sel {
		t.Fatal("↓ on the Session view no longer moves the link cursor")
	}
}

// A cell is coloured by the tier its round trip alone would need at the
// frame rate in force by the master's rule, headroom included (S3, S9,
// S17), the bad mark in the error ink, and the tier is written as a word
// as well.
func TestMatrixCellsColouredByTier_S17(t *testing.T) {
	m := matrixModel(t, 120, 40)
	press(m, keyUp)        // off the bad link: the cursor draws its cell plain
	m.r.SetColorProfile(0) // TrueColor
	m.dirty = true
	out := m.View()
	for _, c := range []struct {
		srtt float64
		text string
	}{{598, "598 Poor"}, {62, "62 Fast"}} {
		tier := rungs.Need(rungs.WithHeadroom(msd(c.srtt)), 30).Tier()
		if !strings.Contains(c.text, tier.String()) {
			t.Fatalf("%v needs %v at 30 fps", c.srtt, tier)
		}
		if want := m.st.tierStyle(tier).Render(c.text); !strings.Contains(out, want) {
			t.Errorf("cell %q not drawn in the %v ink", c.text, tier)
		}
	}
	if !strings.Contains(out, m.st.err.Render(markBad)) {
		t.Error("the bad mark is not in the error ink")
	}
}

// What is not known reads as not known (L3): a row whose telemetry never
// came is "?" everywhere and "no reports yet"; an unmeasured link is
// "—"; a row whose updates stopped is marked stale; before the game
// starts there is no matrix at all.
func TestMatrixUnknownIsNotZero_L3(t *testing.T) {
	m := matrixModel(t, 120, 40)
	out := stripANSI(m.View())
	for _, want := range []string{"no reports yet", "stale 4.0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
	rowOf := func(name string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimLeft(l, " >"), name+" ") && strings.Contains(l, "·") {
				return l
			}
		}
		return ""
	}
	if r := rowOf("dave"); strings.Count(r, markNotKnown) != 3 {
		t.Errorf("dave's row should be three ?: %q", r)
	}
	if r := rowOf("carol"); !strings.Contains(r, "~95") || !strings.Contains(r, unknown) {
		t.Errorf("carol's row should show ~95 (provisional) and — (unmeasured): %q", r)
	}
	lobby := model(t, newStaticFeed(), 120, 40, []feed.Update{{View: feed.View{Self: "eve", FPS: 30}}})
	press(lobby, toMatrix...)
	if !strings.Contains(lobby.View(), "no players yet") {
		t.Fatalf("empty matrix:\n%s", lobby.View())
	}
}

// The ranking puts who made the others wait most first, with whom; the
// waits table says whom each player waited for most.
func TestMatrixWhoCausesLag_S5(t *testing.T) {
	m := matrixModel(t, 160, 48)
	out := stripANSI(m.View())
	first := regexp.MustCompile(` 1 (\S+) +(\S+)  [█·]`).FindStringSubmatch(out)
	if first == nil || first[1] != "dave" || first[2] != "24s" {
		t.Fatalf("first in the ranking: %v\n%s", first, out)
	}
	for _, want := range []string{"carol 14s · bob 9.0s · alice 500ms", "dave 9.0s (75%)", "bob 3.7s (84%)"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
}

// Pausing freezes the matrix with the rest: a later picture changes the
// live session only.
func TestMatrixPauses(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, matrixUpdates()[:50])
	press(m, toMatrix...)
	press(m, typed(" "))
	before := stripANSI(m.View())
	for _, u := range matrixUpdates()[50:] {
		m.Update(updateMsg{u})
	}
	after := stripANSI(m.View())
	if before != after {
		t.Fatalf("the paused matrix changed")
	}
	press(m, typed(" "))
	if stripANSI(m.View()) == before {
		t.Fatal("unpausing did not show the newer matrix")
	}
}

// Loss shares in the detail line are differenced per interval from the
// totals the row's player sent (L5), over the last ten seconds.
func TestMatrixDetailSharesDifferenced_L5(t *testing.T) {
	m := matrixModel(t, 160, 48)
	out := stripANSI(m.View())
	// Over seconds 90..100: expected +200, missing +5 → 2.5 %; resent
	// +3 of +150 sent → 2.0 %; the peer's missing +1 of +190 → 0.5 %.
	// Since the start they would read 1.7 %, 2.5 % and 0.5 %.
	for _, want := range []string{"resent 2.0%", "lost in 2.5%", "lost out 0.5%"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
}

// bigMatrix is a session of n players, every link measured, as one of
// them sees it at second t.
func bigMatrix(n, t int) feed.MatrixView {
	var mv feed.MatrixView
	for i := range n {
		p := feed.MatrixPlayer{Name: fmt.Sprintf("p%d", i), Known: true, Self: i == 0, Frame: t * 30, Waited: time.Duration(i) * time.Second}
		for j := range n {
			if i == j {
				continue
			}
			srtt := float64(10 + (i*7+j*13)%300)
			p.Links = append(p.Links, feed.MatrixLink{Link: feed.Link{From: p.Name, To: fmt.Sprintf("p%d", j), State: feed.LinkMeasured,
				RTTKnown: true, SRTT: msd(srtt), RTTVAR: msd(srtt / 8), RTO: msd(max(100, srtt*1.5)), ConnTimeout: msd(2000),
				LossKnown: true, Sent: uint64(t * 10), Retransmitted: uint64(t / 9), Expected: uint64(t * 20), Missing: uint64(t / 20),
				PeerKnown: true, PeerExpected: uint64(t * 20), PeerMissing: uint64(t / 30)}, Caused: time.Duration(j*t) * time.Millisecond})
		}
		mv.Players = append(mv.Players, p)
	}
	return mv
}

// BenchmarkMatrix draws the Matrix view at 160×48 from scratch, and takes
// in one picture, with 8 and 64 players (a picture of 64 carries 4032
// links).
func BenchmarkMatrix(b *testing.B) {
	for _, n := range []int{8, 64} {
		ups := fixtureUpdates()[:20]
		for i := range ups {
			ups[i].View.Matrix = bigMatrix(n, i)
		}
		b.Run(fmt.Sprintf("view/players=%d", n), func(b *testing.B) {
			m := model(b, newStaticFeed(), 160, 48, ups)
			press(m, toMatrix...)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				m.dirty = true
				_ = m.View()
			}
		})
		b.Run(fmt.Sprintf("update/players=%d", n), func(b *testing.B) {
			m := model(b, newStaticFeed(), 160, 48, ups)
			last := ups[len(ups)-1]
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				last.View.At += 100 * time.Millisecond
				m.Update(updateMsg{feed.Update{View: last.View}})
			}
		})
	}
}

// A matrix larger than the screen scrolls with the cursor: after moving to
// the last row and column of 64 players, that row and column are on
// screen and the heading says which part is shown.
func TestMatrixScrollsWithTheCursor(t *testing.T) {
	ups := fixtureUpdates()[:3]
	for i := range ups {
		ups[i].View.Matrix = bigMatrix(64, i)
	}
	m := model(t, newStaticFeed(), 160, 48, ups)
	press(m, toMatrix...)
	for range 70 {
		press(m, keyRight, keyDown)
	}
	if got := cursorAt(t, m); got != "p63 → p62" {
		t.Fatalf("cursor on %q", got)
	}
	out := stripANSI(m.View())
	if !strings.Contains(out, "> p63") || !regexp.MustCompile(`FROM╲TO .* p62 `).MatchString(out) {
		t.Fatalf("the cursor's row or column is not on screen:\n%s", out)
	}
	if !regexp.MustCompile(`columns \d+–63 · rows \d+–64 of 64`).MatchString(out) {
		t.Fatalf("no range in the heading:\n%s", out)
	}
	checkSize(t, m.View(), 160, 48)
}
