package main

import (
	"bufio"
	"io"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/probe/record"
)

// lagscope report FILE: a recording summed up — per link round
// trips, jitter and the three loss shares (L8: resend, inbound, outbound), bad-connection
// episodes (T11), the timing history with tiers (S17), and the longest waits
// with who caused them — short enough to paste into a chat.
func init() {
	register(&command{
		name:    "report",
		summary: "Summarise a recording: links, loss shares, timing history, longest waits",
		usage:   "report FILE [--format text|markdown|json]",
		examples: []string{
			"lagscope report run.lsrec",
			"lagscope report run.lsrec --format markdown > report.md",
		},
		order: 45,
		setup: func(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
			format := fs.String("format", record.FormatText, "text, markdown or json")
			return func(args []string, stdout, stderr io.Writer) int {
				if len(args) != 1 {
					return fail(stderr, "report", usagef("needs exactly one recording file (see lagscope report --help)"))
				}
				switch *format {
				case record.FormatText, record.FormatMarkdown, record.FormatJSON:
				default:
					return fail(stderr, "report", usagef("--format %q: want text, markdown or json", *format))
				}
				rec, err := openRecording(args[0])
				if err != nil {
					return fail(stderr, "report", err)
				}
				out := bufio.NewWriter(stdout)
				if err := record.WriteReport(out, rec, *format); err != nil {
					return fail(stderr, "report", err)
				}
				if err := out.Flush(); err != nil {
					return fail(stderr, "report", err)
				}
				stopNote(stderr, "report", args[0], rec, "the report covers everything before it")
				return 0
			}
		},
	})
}
