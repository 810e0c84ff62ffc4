package record

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lagscope/lagscope/textsafe"
)

func (r *report) text(w io.Writer) error {
	esc := textsafe.Terminal
	var b bytes.Buffer
	fmt.Fprintf(&b, "lagscope report: %s\n", r.title(esc))
	if r.Stopped != "" {
		fmt.Fprintf(&b, "recording cut off: %s\n", esc(r.Stopped))
	}
	r.textIncidents(&b, esc)
	r.textDiagnosis(&b)
	fmt.Fprintf(&b, "\nLinks (SRTT ms min/mean/p95/max; jitter = mean RTTVAR ms; shares of datagrams)\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  link\tSRTT\tjitter\tresend\tin loss\tout loss\tbad\n")
	for _, l := range r.Links {
		fmt.Fprintf(tw, "  %s → %s\t%s/%s/%s/%s\t%s\t%s\t%s\t%s\t%s\n", esc(l.From), esc(l.To), num(l.SRTT.Min, 0), num(l.SRTT.Mean, 0), num(l.SRTT.P95, 0), num(l.SRTT.Max, 0),
			num(l.Jitter, 1), pct(l.ResendShare), pct(l.InboundLoss), pct(l.OutboundLoss), episodes(l.Bad))
	}
	tw.Flush()
	r.textPaths(&b)
	r.textLoads(&b)
	fmt.Fprintf(&b, "\nTiming (send period/look-ahead, rung, tier)\n")
	if r.TimingOmitted > 0 {
		fmt.Fprintf(&b, "  … %d earlier changes left out\n", r.TimingOmitted)
	}
	for _, t := range r.Timing {
		fmt.Fprintf(&b, "  %s frame %-6d %d/%d rung %d %-6s %d fps  %s\n", clock(t.AtMs), t.Frame, t.SendPeriod, t.LookAhead, t.Rung, esc(t.Tier), t.FPS, esc(t.Reason))
	}
	if len(r.Timing) == 0 {
		fmt.Fprintf(&b, "  no timing events\n")
	}
	if len(r.Removed) > 0 {
		var left []string
		for _, x := range r.Removed {
			left = append(left, fmt.Sprintf("%s at %s (frame %d)", esc(x.Player), clock(x.AtMs), x.Frame))
		}
		fmt.Fprintf(&b, "Left: %s\n", strings.Join(left, ", "))
	}
	if len(r.Commands) > 0 {
		fmt.Fprintf(&b, "Commands executed: %s\n", r.commandLine(esc))
	}
	fmt.Fprintf(&b, "\nLongest waits\n")
	for _, x := range r.Waits {
		fmt.Fprintf(&b, "  %s frame %-6d %s waited %.0f ms for %s\n", clock(x.AtMs), x.Frame, esc(x.Player), x.WaitMs, causeName(x.Cause, esc))
	}
	if len(r.Waits) == 0 {
		fmt.Fprintf(&b, "  nobody waited\n")
	}
	if len(r.Causes) > 0 {
		fmt.Fprintf(&b, "\nWho caused the waits\n  %s\n", causesCount)
		for _, c := range r.Causes {
			fmt.Fprintf(&b, "  %s: %.0f ms over %s (%s)\n", causeName(c.Cause, esc), c.TotalMs, waitsN(c.Waits), c.of(esc))
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
