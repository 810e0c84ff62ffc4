package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lagscope/lagscope/names"
)

// The load-test flags (docs/load-test.md): --load-test NAME,
// --no-load-tests and --load-cap RATE.

// Bounds of --load-cap: below 1 Mbit/s a test cannot fill a line
// worth testing; above 10 Gbit/s no game's path is the bottleneck.
const (
	minLoadCap = 1e6
	maxLoadCap = 10e9
)

// checkLoad validates the load-test flags into lf.load.
func (lf *liveFlags) checkLoad() error {
	if lf.loadTest != "" {
		if c, err := names.Validate(lf.loadTest); err != nil || c != lf.loadTest {
			return usagef("--load-test %q: not a player name as the session writes it", lf.loadTest)
		}
		if lf.loadTest == lf.name {
			return usagef("--load-test %q: that is this machine's own name", lf.loadTest)
		}
	}
	var rate int64
	if lf.fs.Lookup("load-cap") != nil { // the demo runs no load tests and has no such flag
		r, err := parseRate(lf.loadCap)
		if err != nil {
			return usagef("--load-cap %q: %v", lf.loadCap, err)
		}
		rate = r
	}
	lf.load.Test, lf.load.Refuse, lf.load.Cap = lf.loadTest, lf.noLoadTests, rate
	return nil
}

// rateUnits are the suffixes --load-cap takes, in bit/s, longest first so
// that "mbit" is not read as "bit".
var rateUnits = []struct {
	suffix string
	scale  float64
}{
	{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"gbps", 1e9}, {"mbps", 1e6}, {"kbps", 1e3}, {"bit", 1}, {"bps", 1},
}

// parseRate reads a rate such as 50mbit, 2.5Mbit, 500kbit or 1gbit (case
// does not matter; a bare number is bit/s) within the cap's bounds.
func parseRate(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, "/s")
	scale := 1.0
	for _, u := range rateUnits {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, scale = v, u.scale
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v != v {
		return 0, fmt.Errorf("want a rate such as 50mbit, 500kbit or 1gbit")
	}
	r := v * scale
	if r < minLoadCap || r > maxLoadCap {
		return 0, fmt.Errorf("must be between 1mbit and 10gbit")
	}
	return int64(r), nil
}
