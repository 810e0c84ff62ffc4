package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/textsafe"
	"github.com/lagscope/lagscope/units"
)

// frontMode is how a live command shows its session: the TUI on a
// terminal that can draw it, NDJSON when asked (--json), and otherwise a
// plain line of text a second — never NDJSON unasked, and never escape
// sequences into a pipe or a dumb terminal.
type frontMode int

const (
	frontTUI frontMode = iota
	frontJSON
	frontText
)

// chooseFront picks the mode, and for the text mode says why.
func chooseFront(asJSON bool, stdout io.Writer, term string) (frontMode, string) {
	switch {
	case asJSON:
		return frontJSON, ""
	case !stdoutIsTerminal(stdout):
		return frontText, "stdout is not a terminal"
	case term == "" || term == "dumb":
		return frontText, "TERM is " + map[bool]string{true: "empty", false: "dumb"}[term == ""]
	}
	return frontTUI, ""
}

// termEnv is $TERM; tests set it.
var termEnv = func() string { return os.Getenv("TERM") }

// textFront prints the session as text: a first line that says why, then
// one line per second of session time — the clock, the timing in force
// (→ the target), the worst link and the verdict's first sentence — and a
// last line when the session ends. Names from other machines are escaped.
func textFront(w io.Writer, why string) func(feed.Feed) error {
	return func(f feed.Feed) error {
		bw := bufio.NewWriter(w)
		fmt.Fprintf(bw, "lagscope: %s, so the session is shown as a line of text a second (--json prints its events as NDJSON)\n", why)
		bw.Flush()
		next := time.Duration(0)
		for u := range f.Updates() {
			if u.Done {
				fmt.Fprintln(bw, textLine(&u.View)+" · ended"+endedWhy(u.Err))
				break
			}
			if u.View.At >= next && (u.View.Started || u.View.Lobby != nil) {
				fmt.Fprintln(bw, textLine(&u.View))
				next = u.View.At.Truncate(time.Second) + time.Second
			}
			bw.Flush()
		}
		return bw.Flush()
	}
}

func endedWhy(err error) string {
	if err == nil {
		return ""
	}
	return ": " + textsafe.Terminal(err.Error())
}

// textLine is one second of the session in words.
func textLine(v *feed.View) string {
	at := v.At.Truncate(time.Second)
	parts := []string{fmt.Sprintf("%02d:%02d", int(at.Minutes()), int(at.Seconds())%60)}
	if l := v.Lobby; !v.Started && l != nil {
		if l.Joining && l.HostAddr.IsValid() {
			return strings.Join(append(parts, contactingText(l)), " · ")
		}
		return strings.Join(append(parts, fmt.Sprintf("lobby: %d of %d players seated", l.Seated, l.Need)), " · ")
	}
	if v.InForce.Valid() {
		t := "timing " + v.InForce.String() + " " + v.InForce.Tier().String()
		if v.Target.Valid() && v.Target != v.InForce {
			t += " → " + v.Target.String() + " " + v.Target.Tier().String()
		}
		parts = append(parts, t)
	}
	if l, ok := worstLink(v); ok {
		parts = append(parts, fmt.Sprintf("worst link %s %.0f ms", textsafe.Terminal(l.Peer), units.Millis(l.SRTT)))
	}
	if d := v.Diagnosis; d != nil {
		s := d.Sentences(diagnosis.Timings{Target: v.Target, InForce: v.InForce, Frame: v.Frame, FPS: v.FPS})
		if len(s) > 0 {
			parts = append(parts, textsafe.Terminal(s[0]))
		}
	}
	return strings.Join(parts, " · ")
}

// contactingText is a joiner's handshake in words, as the TUI's lobby
// says it.
func contactingText(l *feed.LobbyView) string {
	what := "contacting " + l.HostAddr.String() + "…"
	if l.Watcher {
		what = "waiting for the host at " + l.HostAddr.String() + " to let this watcher in…"
	}
	if l.Attempt > 0 {
		what += fmt.Sprintf(" (attempt %d)", l.Attempt)
	}
	return what
}

// worstLink is the measured link with the longest round trip.
func worstLink(v *feed.View) (feed.LinkView, bool) {
	var best feed.LinkView
	ok := false
	for _, l := range v.Links {
		if l.RTTKnown && l.State != feed.LinkUnmeasured && (!ok || l.SRTT > best.SRTT) {
			best, ok = l, true
		}
	}
	return best, ok
}
