package main

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/live"
	"github.com/lagscope/lagscope/probe/session"
)

func init() {
	register(&command{
		name:    "host",
		summary: "Start a session and play in it; others join with the line it prints, `lagscope join ADDR --key CODE`",
		usage:   "host [--listen ADDR] [--players N] [--drop-timeout D] [--name NAME] [--key KEY | --open] [--json] [--duration D] [flags]",
		examples: []string{
			"lagscope host --players 3   # prints the join line with the session's code",
			"lagscope host --listen 192.168.1.20:7373 --players 4 --key s3cret --json > host.ndjson",
		},
		order: 2,
		setup: setupHost,
	})
}

// maxPlayers is the most seats a host offers: far beyond a lockstep game's,
// and what the roster carries comfortably.
const maxPlayers = 256

func setupHost(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
	lf := addLiveFlags(fs, "host")
	listen := fs.String("listen", ":"+defaultPort, "address to listen on")
	players := fs.Int("players", session.DefaultPlayers, "start the game once this many players, you included, are seated")
	drop := fs.Duration("drop-timeout", 60*time.Second, "remove a player silent this long")
	open := fs.Bool("open", false, "run without a code: anyone who reaches the address can join or watch (default: a random code seals the session)")
	return func(args []string, stdout, stderr io.Writer) int {
		if len(args) > 0 {
			return fail(stderr, "host", usagef("unexpected argument %q", args[0]))
		}
		if err := lf.check(); err != nil {
			return fail(stderr, "host", err)
		}
		if *players < 1 || *players > maxPlayers {
			return fail(stderr, "host", usagef("--players %d: must be between 1 and %d", *players, maxPlayers))
		}
		if *drop <= 0 || *drop > 24*time.Hour {
			return fail(stderr, "host", usagef("--drop-timeout %v: must be positive and at most 24h", *drop))
		}
		if _, err := net.ResolveUDPAddr("udp", *listen); err != nil {
			return fail(stderr, "host", usagef("--listen %q: %v", *listen, err))
		}
		if *open && lf.key != "" {
			return fail(stderr, "host", usagef("--open runs without a key: leave out --key (or the config file's key_file)"))
		}
		code := ""
		if !*open && lf.key == "" {
			c, err := newCode(codeRand)
			if err != nil {
				return fail(stderr, "host", err)
			}
			code, lf.key = c, c
		}
		lf.noteMetrics(stderr)
		rc := lf.runConfig("host", stdout)
		hc := live.HostConfig{Listen: *listen, Players: *players, DropTimeout: *drop}
		hc.Listening = func(bound netip.AddrPort) *feed.JoinGuide {
			lines := joinLines(bound, code, lf.key != "")
			switch lf.front {
			case frontJSON:
				// Under --json the join line goes to stderr, never into
				// the NDJSON a file may keep.
				for _, l := range lines {
					fmt.Fprintln(stderr, l)
				}
				return nil
			case frontText:
				fmt.Fprintln(stdout, "Others join with: "+lines[0])
				for _, l := range lines[1:] {
					fmt.Fprintln(stdout, l)
				}
				return nil
			}
			// The TUI's lobby shows the guide in place of these lines.
			return joinGuide(bound, code, lf.key != "")
		}
		return liveExit(stderr, "host", live.Host(rc, hc))
	}
}
