package record

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/lagscope/lagscope/textsafe"
	"github.com/lagscope/lagscope/units"
)

// Formats of a report.
const (
	FormatText     = "text"
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
)

// WriteReport prints the report of rec (`lagscope report`) in one of the
// formats.
func WriteReport(w io.Writer, rec *Recording, format string) error {
	return summarize(rec).write(w, format)
}

// write prints the report in one of the formats.
func (r *report) write(w io.Writer, format string) error {
	switch format {
	case FormatJSON:
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		// encoding/json leaves C1 controls and format characters raw;
		// the report may be read on a terminal.
		_, err = w.Write(append(textsafe.JSON(b), '\n'))
		return err
	case FormatMarkdown:
		return r.onSessionClock().markdown(w)
	case FormatText:
		return r.onSessionClock().text(w)
	}
	return fmt.Errorf("unknown format %q (text, markdown or json)", format)
}

func num(p *float64, digits int) string {
	if p == nil {
		return "—" // not measured (L3)
	}
	return fmt.Sprintf("%.*f", digits, *p)
}

func pct(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", *p*100)
}

func clock(msv float64) string {
	d := units.FromMillis(msv).Round(time.Second)
	return fmt.Sprintf("%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// Every string of a report that came from outside — names, the session,
// the program, tiers, reasons, the stop error — goes through esc:
// textsafe.Terminal for text, textsafe.MarkdownCell in a markdown table and
// textsafe.MarkdownText in markdown prose. A recording may be
// crafted; the report trusts no rule that admitted its text.

// title is the report's first line with its names escaped by esc.
func (r *report) title(esc func(string) string) string {
	kind := "live"
	if r.Virtual {
		kind = "virtual time"
	}
	name := r.Session
	if name == "" {
		name = "session"
	}
	return fmt.Sprintf("%s — %s, %s (%s), %d players", esc(name), clock(r.LengthMs), esc(r.Program), kind, len(r.Players))
}

func episodes(es []episode) string {
	if len(es) == 0 {
		return "none"
	}
	var parts []string
	for _, e := range es {
		s := clock(e.FromMs) + "–" + clock(e.ToMs)
		if e.Open {
			s = clock(e.FromMs) + "–end"
		}
		parts = append(parts, s)
	}
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("+%d more", len(parts)-3))
	}
	return strings.Join(parts, ", ")
}

func (c causeRow) of(esc func(string) string) string {
	type kv struct {
		k string
		v float64
	}
	var xs []kv
	for k, v := range c.Of {
		xs = append(xs, kv{k, v})
	}
	sort.Slice(xs, func(i, j int) bool {
		if xs[i].v != xs[j].v {
			return xs[i].v > xs[j].v
		}
		return xs[i].k < xs[j].k
	})
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%s %.0f ms", esc(x.k), x.v))
	}
	return strings.Join(parts, ", ")
}

// commandLine is the commands per player in one line, with how many ran
// on a later send frame than scheduled (S13). A report names no
// requirement number: the line says it in words, for a reader who does
// not know the numbers.
func (r *report) commandLine(esc func(string) string) string {
	var parts []string
	moved := 0
	for _, c := range r.Commands {
		parts = append(parts, fmt.Sprintf("%s %d", esc(c.Player), c.Count))
		moved += c.Moved
	}
	s := strings.Join(parts, ", ")
	if moved > 0 {
		s += fmt.Sprintf("; %d ran on a later send frame than scheduled after a timing change", moved)
	}
	return s
}

func waitsN(n int) string {
	if n == 1 {
		return "1 wait"
	}
	return fmt.Sprintf("%d waits", n)
}

func causeName(c string, esc func(string) string) string {
	if c == "" {
		return "(own pace)" // waited for its own frame time or processing
	}
	return esc(c)
}
