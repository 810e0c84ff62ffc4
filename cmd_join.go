package main

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/probe/live"
	"github.com/lagscope/lagscope/probe/session"
)

func init() {
	register(&command{
		name:    "join",
		summary: "Join a session as a player",
		usage:   "join ADDR [--key CODE] [--name NAME] [--json] [--duration D] [flags]",
		examples: []string{
			"lagscope join 192.168.1.20:7373 --key 7K3M-QX9P-4RTA-WZ2H --name bob   # the line the host prints, and your name",
			"lagscope join 127.0.0.1:7373 --key 7K3M-QX9P-4RTA-WZ2H --name carol --json --duration 2m",
		},
		order: 3,
		setup: func(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
			return setupJoin(fs, "join", session.RolePlayer)
		},
	})
	register(&command{
		name:    "watch",
		summary: "Join a session as an observer, before or after the start: see every event, take no seat, never be waited for",
		usage:   "watch ADDR [--key CODE] [--name NAME] [--json] [--duration D] [flags]",
		examples: []string{
			"lagscope watch 192.168.1.20:7373 --key 7K3M-QX9P-4RTA-WZ2H --name admin",
			"lagscope watch 127.0.0.1:7373 --key 7K3M-QX9P-4RTA-WZ2H --json | jq -c 'select(.type==\"timing\")'",
		},
		order: 4,
		setup: func(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
			return setupJoin(fs, "watch", session.RoleObserver)
		},
	})
}

// setupJoin is join's and watch's: they differ only in the role asked for.
func setupJoin(fs *pflag.FlagSet, cmd string, role session.Role) func([]string, io.Writer, io.Writer) int {
	lf := addLiveFlags(fs, cmd)
	bind := fs.String("bind", ":0", "local address for this machine's socket (default: any interface, a free port)")
	return func(args []string, stdout, stderr io.Writer) int {
		addr, err := lf.joinAddr(args, stderr)
		if err != nil {
			return fail(stderr, cmd, err)
		}
		host, err := hostPort(addr)
		if err != nil {
			return fail(stderr, cmd, usagef("address %q: %v", addr, err))
		}
		if err := lf.check(); err != nil {
			return fail(stderr, cmd, err)
		}
		lf.noteMetrics(stderr)
		rc := lf.runConfig(cmd, stdout)
		if role == session.RoleObserver || !lf.fs.Changed("fps") {
			rc.Speed = 0 // the host's game speed
		}
		joined, saveErr := lf.rememberHost(addr)
		rc.Joined = joined
		ap := host.AddrPort()
		jc := live.JoinConfig{Host: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), Bind: *bind, Role: role}
		if lf.fs.Changed("key") {
			jc.KeyArg = lf.key
		}
		code := liveExit(stderr, cmd, live.Join(rc, jc))
		if err := saveErr(); err != nil {
			fmt.Fprintf(stderr, "lagscope %s: note: the host is not remembered: %v\n", cmd, err)
		}
		return code
	}
}

// hostPort resolves a command-line address; a missing port means the
// default one.
func hostPort(s string) (*net.UDPAddr, error) {
	if _, _, err := net.SplitHostPort(s); err != nil {
		h := s
		// Only a whole bracketed address ("[::1]") may lose its
		// brackets; a stray or unbalanced one ("[::1", "::1]") is a typo,
		// not the default port.
		if len(h) >= 2 && h[0] == '[' && h[len(h)-1] == ']' {
			h = h[1 : len(h)-1]
		}
		if strings.ContainsAny(h, "[]") {
			return nil, fmt.Errorf("%q: unbalanced brackets; an IPv6 address with a port is [ADDR]:PORT", s)
		}
		s = net.JoinHostPort(h, defaultPort)
	}
	a, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		return nil, err
	}
	if a.Port == 0 || a.IP == nil || a.IP.IsUnspecified() {
		return nil, fmt.Errorf("%q: want HOST:PORT", s)
	}
	return a, nil
}
