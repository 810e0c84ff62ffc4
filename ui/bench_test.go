package ui

import (
	"fmt"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/themes"
	"github.com/muesli/termenv"
)

// BenchmarkView redraws the overview at 120×40 without colour each time
// (the finished picture is dropped; its parts come from their caches, as
// they do after a key that changes nothing on screen). The budget is
// ≤ 5 ms with 8 links and ≤ 20 ms with 64; BenchmarkViewNewPicture is the
// case with new inputs.
func BenchmarkView(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("links=%d", n), func(b *testing.B) {
			m := model(b, newStaticFeed(), 120, 40, manyLinks(n))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.dirty = true
				_ = m.View()
			}
		})
	}
}

// BenchmarkUpdate takes in one picture of 64 links.
func BenchmarkUpdate(b *testing.B) {
	ups := manyLinks(64)
	m := model(b, newStaticFeed(), 120, 40, ups)
	last := ups[len(ups)-1]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		last.View.At += 100_000_000 // 100 ms later
		m.Update(updateMsg{feed.Update{View: last.View}})
	}
}

// livePictures are n pictures of links the engine publishes 100 ms apart,
// every one with new values (round trips, totals), as a live session's
// are; a new second starts every tenth, which adds a chart column.
func livePictures(links, n int) []feed.View {
	base := []string{"bob", "carol", "dave", "erin"}
	out := make([]feed.View, n)
	for i := range out {
		t := fixtureSeconds + i
		v := fixtureView(t)
		v.At = time.Duration(fixtureSeconds)*time.Second + time.Duration(i)*100*time.Millisecond
		v.Links = v.Links[:0]
		for j := 0; j < links; j++ {
			lv := fixtureLink(base[j%len(base)], t)
			lv.Peer = base[j%len(base)] + itoa(j)
			lv.To = lv.Peer
			v.Links = append(v.Links, lv)
		}
		out[i] = v
	}
	return out
}

// BenchmarkViewNewPicture is the live case (budget: ≤ 0.5 ms and ≤ 200
// allocations at 120×40 with 8 links): every redraw follows a new picture
// from the feed, 100 ms of engine time later and with new values, so the
// parts drawn from the session are drawn again, and those whose inputs did
// not change (the ladder, the message list, the footer) come from their
// cache. It is measured without colour (as the goldens are drawn) and with
// 24-bit colour (as a terminal draws it).
func BenchmarkViewNewPicture(b *testing.B) {
	for _, n := range []int{8, 64} {
		for _, pr := range []struct {
			name string
			p    termenv.Profile
		}{{"ascii", termenv.Ascii}, {"truecolor", termenv.TrueColor}} {
			b.Run(fmt.Sprintf("links=%d/%s", n, pr.name), func(b *testing.B) {
				m := model(b, newStaticFeed(), 120, 40, manyLinks(n))
				m.r.SetColorProfile(pr.p)
				m.setTheme(benchTheme(pr.p))
				pics := livePictures(n, 1000)
				step := pics[len(pics)-1].At - pics[0].At + 100*time.Millisecond
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					v := pics[i%len(pics)]
					v.At += time.Duration(i/len(pics)) * step // time only goes forward
					m.Update(updateMsg{feed.Update{View: v}})
					_ = m.View()
				}
			})
		}
	}
}

// BenchmarkViewRedraw is a redraw of an unchanged picture (a key that
// changes nothing on screen, a resize to the same size): every part comes
// from its cache.
func BenchmarkViewRedraw(b *testing.B) {
	m := model(b, newStaticFeed(), 120, 40, manyLinks(8))
	m.r.SetColorProfile(termenv.TrueColor)
	m.setTheme(benchTheme(termenv.TrueColor))
	_ = m.View()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.dirty = true
		_ = m.View()
	}
}

// benchTheme is the theme a terminal with profile p starts in: the default,
// or monochrome without colour.
func benchTheme(p termenv.Profile) themes.Theme {
	name := themes.Default
	if p == termenv.Ascii {
		name = "monochrome"
	}
	th, _ := themes.ByName(name)
	return th
}
