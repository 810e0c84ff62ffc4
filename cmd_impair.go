package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/netcore/impair"
)

func init() {
	register(&command{
		name:    "impair",
		summary: "UDP relay that makes a link bad on purpose: delay, jitter, loss, duplication, reordering, burst loss",
		usage:   "impair --listen ADDR --to ADDR [--profile NAME] [--delay D] [--jitter D] [--loss P] [--dup P] [--reorder P] [--burst SPEC] [--seed N] [--duration D]",
		examples: []string{
			"lagscope impair --listen :9000 --to 127.0.0.1:7373 --delay 40ms --jitter 5ms --loss 2%",
			"lagscope impair --listen :9000 --to 192.168.1.20:7373 --profile wifi --seed 7",
			"lagscope impair --listen :9000 --to 127.0.0.1:7373 --burst 1%,25%,50% --duration 3m",
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
	v, err := parseChance(s)
	if err != nil {
		return err
	}
	*c.v = v
	return nil
}

// parseChance reads "0.02" or "2%" as 0.02 and insists on [0, 1].
func parseChance(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSuffix(t, "%"), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a chance (use 0.02 or 2%%)", s)
	}
	v /= scale
	if !(v >= 0 && v <= 1) {
		return 0, fmt.Errorf("%q is not between 0 and 1 (0%% and 100%%)", s)
	}
	return v, nil
}

// parseBurst reads P_GOOD_TO_BAD,P_BAD_TO_GOOD[,LOSS_BAD[,LOSS_GOOD]]; the
// bad state loses everything and the good state nothing unless told.
func parseBurst(s string) (*impair.GilbertElliott, error) {
	parts := strings.Split(s, ",")
	if len(parts) < 2 || len(parts) > 4 {
		return nil, fmt.Errorf("--burst %q: want P_GOOD_TO_BAD,P_BAD_TO_GOOD[,LOSS_BAD[,LOSS_GOOD]]", s)
	}
	vals := []float64{0, 0, 1, 0}
	for i, p := range parts {
		v, err := parseChance(p)
		if err != nil {
			return nil, fmt.Errorf("--burst: %v", err)
		}
		vals[i] = v
	}
	return &impair.GilbertElliott{PGoodToBad: vals[0], PBadToGood: vals[1], LossBad: vals[2], LossGood: vals[3]}, nil
}

func profileNames() string {
	var names []string
	for _, np := range impair.Profiles() {
		names = append(names, np.Name)
	}
	return strings.Join(names, ", ")
}

func setupImpair(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
	listen := fs.String("listen", "", "address the client sends to (required)")
	to := fs.String("to", "", "address datagrams are forwarded to (required)")
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
		if *duration < 0 {
			return fail(stderr, "impair", usagef("--duration %v is negative", *duration))
		}

		relay, err := impair.ListenRelay(impair.RelayConfig{
			Listen: *listen, Target: *to, Upstream: prof, Downstream: prof, Seed: *seed,
		})
		if err != nil {
			return fail(stderr, "impair", err)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if *duration > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *duration)
			defer cancel()
		}
		fmt.Fprintf(stdout, "lagscope impair: relaying %v -> %v, each way: %v (seed %d)\n",
			relay.Addr(), relay.Target(), prof, *seed)
		<-ctx.Done()
		relay.Close()
		st := relay.Stats()
		printDirection(stdout, "client -> target", st.Upstream)
		printDirection(stdout, "target -> client", st.Downstream)
		fmt.Fprintln(stdout, "(dropped counts the impairment asked for, not loss anyone measured)")
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
		g, err := parseBurst(burst)
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

func printDirection(w io.Writer, name string, d impair.DirectionStats) {
	fmt.Fprintf(w, "%s: offered %d, forwarded %d, dropped %d, duplicated %d, reordered %d",
		name, d.Offered, d.Forwarded, d.Dropped, d.Duplicated, d.Reordered)
	if d.Forwarded > 0 {
		fmt.Fprintf(w, ", at most %v late", d.MaxLate.Round(10*time.Microsecond))
	}
	if d.Pending > 0 {
		fmt.Fprintf(w, ", still delayed at exit %d", d.Pending)
	}
	if d.Ignored > 0 {
		fmt.Fprintf(w, ", ignored %d", d.Ignored)
	}
	if d.WriteErrors > 0 {
		fmt.Fprintf(w, ", write errors %d", d.WriteErrors)
	}
	fmt.Fprintln(w)
}
