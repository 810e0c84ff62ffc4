package main

import (
	"io"
	"net/netip"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/live"
)

func init() {
	register(&command{
		name:    "join",
		summary: "Join a session as a player",
		usage:   "join ADDR [--name NAME] [--key KEY] [--json] [--duration D] [flags]",
		examples: []string{
			"lagscope join 192.168.1.20 --name bob",
			"lagscope join 127.0.0.1:7373 --name carol --json --duration 2m",
		},
		order: 3,
		setup: func(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
			return setupJoin(fs, "join", live.RolePlayer)
		},
	})
}

// setupJoin is join's and watch's: they differ only in the role asked for.
func setupJoin(fs *pflag.FlagSet, cmd string, role live.Role) func([]string, io.Writer, io.Writer) int {
	lf := addLiveFlags(fs, cmd)
	bind := fs.String("bind", ":0", "local address for this machine's socket (default: any interface, a free port)")
	return func(args []string, stdout, stderr io.Writer) int {
		if len(args) != 1 {
			return fail(stderr, cmd, usagef("needs the host's address, e.g. lagscope %s 192.168.1.20:7373", cmd))
		}
		host, err := hostPort(args[0])
		if err != nil {
			return fail(stderr, cmd, usagef("address %q: %v", args[0], err))
		}
		if err := lf.check(); err != nil {
			return fail(stderr, cmd, err)
		}
		env, err := lf.open(cmd)
		if err != nil {
			return fail(stderr, cmd, err)
		}
		udp, err := netcore.ListenUDP(*bind)
		if err != nil {
			env.abandon()
			return fail(stderr, cmd, usagef("--bind %q: %v", *bind, err))
		}
		defer udp.Close()
		cfg := env.config()
		if role == live.RoleObserver || !lf.fs.Changed("fps") {
			cfg.Speed = 0 // the host's game speed
		}
		ap := host.AddrPort()
		s, err := live.NewJoiner(cfg, role, udp, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		if err != nil {
			env.abandon()
			return fail(stderr, cmd, err)
		}
		return runSession(env, s, udp, stdout, stderr)
	}
}
