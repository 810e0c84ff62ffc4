package main

import (
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/netcore/impair"
)

func init() {
	register(&command{
		name:    "impair",
		summary: "UDP relay that makes one player's link to the host bad on purpose: delay, jitter, loss, duplication, reordering, burst loss",
		usage:   "impair --listen ADDR --to ADDR [--profile NAME] [--delay D] [--jitter D] [--loss P] [--dup P] [--reorder P] [--burst SPEC] [--seed N] [--after D] [--for D] [--duration D]",
		about: `It impairs only the datagrams that pass through it: those between the host
(--to) and the one player who joins at its --listen address. That player's
links to the other players, and theirs to the host, go direct: none of them
is impaired. Start it before the game: only a player who joins at its address
passes through it, and a game that runs cannot be moved onto it; --after
and --for make the impairment start and stop while the game runs. One relay
serves one player; impair two players' links with two relays. Each flag
applies each way: --delay 40ms adds 80 ms to the round trip.

Three machines: ada hosts on 192.168.1.20 and runs the relay there (the first
two lines), bob joins through the relay, cyd joins the host directly, both
with the code ada's host prints:
  lagscope host --players 3 --name ada
  lagscope impair --listen :9000 --to 127.0.0.1:7373 --delay 40ms --loss 2%
  lagscope join 192.168.1.20:9000 --key 7K3M-QX9P-4RTA-WZ2H --name bob
  lagscope join 192.168.1.20:7373 --key 7K3M-QX9P-4RTA-WZ2H --name cyd
ada-bob is impaired: 80 ms more round trip, 2 % lost each way. ada-cyd and
bob-cyd go direct, as they would without the relay.`,
		examples: []string{
			"lagscope impair --listen :9000 --to 127.0.0.1:7373 --delay 40ms --jitter 5ms --loss 2%   # beside the host",
			"lagscope impair --listen :9000 --to 192.168.1.20:7373 --profile wifi --seed 7",
			"lagscope impair --listen :9000 --to 127.0.0.1:7373 --burst 1%,25%,50% --duration 3m",
			"lagscope impair --listen :9000 --to 127.0.0.1:7373 --after 40s --for 20s --delay 120ms   # a 20 s spike 40 s in",
		},
		order: 60,
		setup: setupImpair,
	})
}

// chanceFlag is a probability flag that takes 0.02 or 2%.
type chanceFlag struct{ v *float64 }

func (c chanceFlag) String() string { return strconv.FormatFloat(*c.v, 'g', -1, 64) }
func (c chanceFlag) Type() string   { return "chance" }
func (c chanceFlag) Set(s string) error {
	v, err := impair.ParseChance(s)
	if err != nil {
		return err
	}
	*c.v = v
	return nil
}

func profileNames() string {
	var names []string
	for _, np := range impair.Profiles() {
		names = append(names, np.Name)
	}
	return strings.Join(names, ", ")
}

func setupImpair(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
	listen := fs.String("listen", "", "address the impaired player joins at instead of the host's (required)")
	to := fs.String("to", "", "the host's address: where datagrams are forwarded (required)")
	profile := fs.String("profile", "", "start from a named link profile: "+profileNames()+"; other flags override it")
	delay := fs.Duration("delay", 0, "delay added to each datagram, each way")
	jitter := fs.Duration("jitter", 0, "uniform ± spread of each datagram's delay")
	var loss, dup, reorder float64
	fs.Var(chanceFlag{&loss}, "loss", "chance a datagram is lost, each way (0.02 or 2%)")
	fs.Var(chanceFlag{&dup}, "dup", "chance a datagram arrives twice")
	fs.Var(chanceFlag{&reorder}, "reorder", "chance a datagram is held back so later ones overtake it")
	reorderDelay := fs.Duration("reorder-delay", 20*time.Millisecond, "how long a reordered datagram is held back")
	burst := fs.String("burst", "", "Gilbert–Elliott burst loss: P_GOOD_TO_BAD,P_BAD_TO_GOOD[,LOSS_BAD[,LOSS_GOOD]]")
	seed := fs.Uint64("seed", 1, "random seed; the same seed and traffic give the same decisions")
	duration := fs.Duration("duration", 0, "stop after this long (default: until Ctrl-C)")
	after := fs.Duration("after", 0, "relay untouched for this long first, then impair: a change in a running game")
	forD := fs.Duration("for", 0, "impair for this long, then relay untouched again: a spike (default: for good)")

	return func(args []string, stdout, stderr io.Writer) int {
		if len(args) > 0 {
			return fail(stderr, "impair", usagef("unexpected argument %q", args[0]))
		}
		prof, err := impairProfile(fs, *profile, *delay, *jitter, loss, dup, reorder, *reorderDelay, *burst)
		if err != nil {
			return fail(stderr, "impair", err)
		}
		if *listen == "" || *to == "" {
			return fail(stderr, "impair", usagef("needs --listen ADDR and --to ADDR"))
		}
		for _, a := range []struct{ flag, addr string }{{"--listen", *listen}, {"--to", *to}} {
			ua, err := net.ResolveUDPAddr("udp", a.addr)
			if err != nil {
				return fail(stderr, "impair", usagef("%s %q: %v", a.flag, a.addr, err))
			}
			if a.flag == "--to" && (ua.IP == nil || ua.Port == 0) {
				return fail(stderr, "impair", usagef("--to %q needs a host and a port", a.addr))
			}
		}
		for _, d := range []struct {
			flag string
			v    time.Duration
		}{{"--duration", *duration}, {"--after", *after}, {"--for", *forD}} {
			if d.v < 0 {
				return fail(stderr, "impair", usagef("%s %v is negative", d.flag, d.v))
			}
		}

		err = impair.Serve(impair.ProxyConfig{
			Listen: *listen, Target: *to, Upstream: prof, Downstream: prof, Seed: *seed, After: *after, For: *forD,
		}, *duration, stdout)
		if err != nil {
			return fail(stderr, "impair", err)
		}
		return 0
	}
}

// impairProfile builds the profile from --profile and the flags the user
// set, flags winning.
func impairProfile(fs *pflag.FlagSet, name string, delay, jitter time.Duration, loss, dup, reorder float64,
	reorderDelay time.Duration, burst string) (impair.Profile, error) {
	var p impair.Profile
	if name != "" {
		var ok bool
		if p, ok = impair.ProfileByName(name); !ok {
			return p, usagef("--profile %q: no such profile (have %s)", name, profileNames())
		}
	}
	set := func(flag string, apply func()) {
		if name == "" || fs.Changed(flag) {
			apply()
		}
	}
	set("delay", func() { p.Delay = delay })
	set("jitter", func() { p.Jitter = jitter })
	set("loss", func() { p.Loss = loss })
	set("dup", func() { p.Dup = dup })
	set("reorder", func() { p.Reorder = reorder })
	if p.Reorder > 0 && (p.ReorderDelay == 0 || fs.Changed("reorder-delay")) {
		p.ReorderDelay = reorderDelay
	}
	if burst != "" {
		g, err := impair.ParseBurst(burst)
		if err != nil {
			return p, usagef("%v", err)
		}
		p.Burst = g
	}
	if err := p.Validate(); err != nil {
		return p, usagef("%v", err)
	}
	return p, nil
}
