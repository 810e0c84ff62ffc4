package impair

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseChance reads "0.02" or "2%" as 0.02 and insists on [0, 1]: the
// text form of a Profile's chances (`lagscope impair --loss`).
func ParseChance(s string) (float64, error) {
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

// ParseBurst reads P_GOOD_TO_BAD,P_BAD_TO_GOOD[,LOSS_BAD[,LOSS_GOOD]]; the
// bad state loses everything and the good state nothing unless told.
func ParseBurst(s string) (*GilbertElliott, error) {
	parts := strings.Split(s, ",")
	if len(parts) < 2 || len(parts) > 4 {
		return nil, fmt.Errorf("--burst %q: want P_GOOD_TO_BAD,P_BAD_TO_GOOD[,LOSS_BAD[,LOSS_GOOD]]", s)
	}
	vals := []float64{0, 0, 1, 0}
	for i, p := range parts {
		v, err := ParseChance(p)
		if err != nil {
			return nil, fmt.Errorf("--burst: %v", err)
		}
		vals[i] = v
	}
	return &GilbertElliott{PGoodToBad: vals[0], PBadToGood: vals[1], LossBad: vals[2], LossGood: vals[3]}, nil
}
