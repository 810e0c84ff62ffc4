package probe

import (
	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
)

// loadNotes is what a peer knows of load tests (docs/load-test.md): the
// latest result per player's line, for the diagnosis's bufferbloat cause,
// and the pair under test, which the diagnosis and alerts keep quiet about
// while its test runs.
type loadNotes struct {
	latest []diagnosis.Load // at most one per player
	quiet  [2]string        // the pair under test; both "" when none
}

// NoteLoad keeps l as the latest load test of l.Player's line: a direction
// l leaves unmeasured (NaN) keeps the figure an earlier test gave it.
func (p *Peer) NoteLoad(l diagnosis.Load) {
	for i := range p.load.latest {
		if p.load.latest[i].Player == l.Player {
			old := &p.load.latest[i]
			if l.UploadMs == l.UploadMs {
				old.UploadMs = l.UploadMs
			}
			if l.DownloadMs == l.DownloadMs {
				old.DownloadMs = l.DownloadMs
			}
			return
		}
	}
	p.load.latest = append(p.load.latest, l)
}

// QuietPair names the pair a load test runs between (a the tester, b the
// other member), or with both "" says no test runs: while it is set the
// diagnosis and alerts raise no alarm about that pair's link.
func (p *Peer) QuietPair(a, b string) { p.load.quiet = [2]string{a, b} }

// testing reports whether a load test runs (QuietPair named a pair).
func (l *loadNotes) testing() bool { return l.quiet != [2]string{} }

// quietLink reports whether the link between a and b, either way, is the
// pair under test.
func (l *loadNotes) quietLink(a, b string) bool {
	return l.testing() && (l.quiet == [2]string{a, b} || l.quiet == [2]string{b, a})
}

// loadsOf appends to dst the latest load tests of the players in m, the
// diagnosis's input: a test of a line the matrix does not hold names no
// player of it.
func (l *loadNotes) loadsOf(dst []diagnosis.Load, m *feed.MatrixView) []diagnosis.Load {
	for _, t := range l.latest {
		if m.Index(t.Player) >= 0 {
			dst = append(dst, t)
		}
	}
	return dst
}
