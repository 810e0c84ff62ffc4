package record

import (
	"bytes"
	"fmt"
	"io"

	"github.com/lagscope/lagscope/textsafe"
)

func (r *report) markdown(w io.Writer) error {
	// Table cells and prose escape differently (textsafe).
	cell, prose := textsafe.MarkdownCell, textsafe.MarkdownText
	var b bytes.Buffer
	// The session's line ends the title's paragraph after a hard line
	// break, its incidents a list right under it: the report stays short
	// enough to paste into a chat.
	fmt.Fprintf(&b, "**lagscope report:** %s\\\n", r.title(prose))
	r.markdownIncidents(&b, prose)
	r.markdownDiagnosis(&b)
	if r.Stopped != "" {
		fmt.Fprintf(&b, "_Recording cut off: %s._\n\n", prose(r.Stopped))
	}
	fmt.Fprintf(&b, "| link | SRTT ms min / mean / p95 / max | jitter ms | resend | in loss | out loss | bad |\n")
	fmt.Fprintf(&b, "| --- | --- | ---: | ---: | ---: | ---: | --- |\n")
	for _, l := range r.Links {
		fmt.Fprintf(&b, "| %s → %s | %s / %s / %s / %s | %s | %s | %s | %s | %s |\n", cell(l.From), cell(l.To), num(l.SRTT.Min, 0), num(l.SRTT.Mean, 0), num(l.SRTT.P95, 0), num(l.SRTT.Max, 0),
			num(l.Jitter, 1), pct(l.ResendShare), pct(l.InboundLoss), pct(l.OutboundLoss), episodes(l.Bad))
	}
	r.markdownPaths(&b)
	r.markdownLoads(&b)
	fmt.Fprintf(&b, "\n**Timing**")
	if r.TimingOmitted > 0 {
		fmt.Fprintf(&b, " (last %d; %d earlier left out)", len(r.Timing), r.TimingOmitted)
	}
	fmt.Fprintf(&b, "\n\n| time | frame | timing | rung | tier | fps | reason |\n| --- | ---: | --- | ---: | --- | ---: | --- |\n")
	for _, t := range r.Timing {
		fmt.Fprintf(&b, "| %s | %d | %d/%d | %d | %s | %d | %s |\n", clock(t.AtMs), t.Frame, t.SendPeriod, t.LookAhead, t.Rung, cell(t.Tier), t.FPS, cell(t.Reason))
	}
	for _, x := range r.Removed {
		fmt.Fprintf(&b, "\n%s left at %s (frame %d).\n", prose(x.Player), clock(x.AtMs), x.Frame)
	}
	if len(r.Commands) > 0 {
		fmt.Fprintf(&b, "\n**Commands executed:** %s.\n", r.commandLine(prose))
	}
	// A list may follow its caption line directly (CommonMark lets a
	// bullet list interrupt a paragraph): two lines fewer to paste.
	fmt.Fprintf(&b, "\n**Longest waits**\n")
	if len(r.Waits) == 0 {
		fmt.Fprintf(&b, "\nNobody waited.\n")
	}
	for _, x := range r.Waits {
		fmt.Fprintf(&b, "- %s, frame %d: %s waited %.0f ms for %s\n", clock(x.AtMs), x.Frame, prose(x.Player), x.WaitMs, causeName(x.Cause, prose))
	}
	if len(r.Causes) > 0 {
		fmt.Fprintf(&b, "\n**Who caused the waits.** %s\n", causesCount)
		for _, c := range r.Causes {
			fmt.Fprintf(&b, "- %s: %.0f ms over %s (%s)\n", causeName(c.Cause, prose), c.TotalMs, waitsN(c.Waits), c.of(prose))
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
