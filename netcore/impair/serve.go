package impair

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Serve is `lagscope impair`'s run: it runs a Proxy with cfg until Ctrl-C
// (or SIGTERM) or, when positive, duration, then writes what each
// direction did to out. The first line of out says where the proxy
// forwards, as soon as it listens.
func Serve(cfg ProxyConfig, duration time.Duration, out io.Writer) error {
	proxy, err := ListenProxy(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	fmt.Fprintf(out, "lagscope impair: relaying %v -> %v, each way: %v (seed %d)\n",
		proxy.Addr(), proxy.to, cfg.Upstream, cfg.Seed)
	switch {
	case cfg.After > 0 && cfg.For > 0:
		fmt.Fprintf(out, "lagscope impair: untouched until %v, impaired for %v, then untouched again\n", cfg.After, cfg.For)
	case cfg.After > 0:
		fmt.Fprintf(out, "lagscope impair: untouched until %v, impaired from then on\n", cfg.After)
	case cfg.For > 0:
		fmt.Fprintf(out, "lagscope impair: impaired for %v, then untouched\n", cfg.For)
	}
	if d := cfg.Upstream.Delay; d > 0 {
		// People read --delay as "the ping goes up by this much"; it is
		// added in each direction, so the round trip grows by twice it.
		fmt.Fprintf(out, "lagscope impair: the delay is added each way, so every round trip through this relay grows by %v (2 × %v)\n", 2*d, d)
	}
	<-ctx.Done()
	proxy.Close()
	st := proxy.Stats()
	writeDirection(out, "client -> target", st.Upstream)
	writeDirection(out, "target -> client", st.Downstream)
	fmt.Fprintln(out, "(dropped counts the impairment asked for, not loss anyone measured)")
	return nil
}

func writeDirection(w io.Writer, name string, d DirectionStats) {
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
