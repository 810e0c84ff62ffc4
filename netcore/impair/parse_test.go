package impair

import "testing"

func TestParseChance(t *testing.T) {
	for in, want := range map[string]float64{"0": 0, "0.02": 0.02, "2%": 0.02, " 100% ": 1, "1": 1, "0.5%": 0.005} {
		if got, err := ParseChance(in); err != nil || got != want {
			t.Errorf("ParseChance(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "%", "-1%", "101%", "1.5", "NaN", "x"} {
		if v, err := ParseChance(in); err == nil {
			t.Errorf("ParseChance(%q) = %v without an error", in, v)
		}
	}
}

func TestParseBurst(t *testing.T) {
	g, err := ParseBurst("1%,25%")
	if err != nil || *g != (GilbertElliott{PGoodToBad: 0.01, PBadToGood: 0.25, LossBad: 1}) {
		t.Fatalf("ParseBurst(1%%,25%%) = %+v, %v", g, err)
	}
	g, err = ParseBurst("0.01,0.25,0.5,0.001")
	if err != nil || *g != (GilbertElliott{PGoodToBad: 0.01, PBadToGood: 0.25, LossBad: 0.5, LossGood: 0.001}) {
		t.Fatalf("ParseBurst(4 values) = %+v, %v", g, err)
	}
	for _, in := range []string{"1%", "1,2,3,4,5", "a,b"} {
		if _, err := ParseBurst(in); err == nil {
			t.Errorf("ParseBurst(%q) without an error", in)
		}
	}
}

// Flag values are outside input: the parsers return an error or a value in
// range, never panic.
func FuzzParseChance(f *testing.F) {
	for _, s := range []string{"0", "0.02", "2%", "100%", "1e-3", "-0", "NaN", "Inf", "%", "", "1.0000001", "0x1p-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseChance(s)
		if err == nil && !(v >= 0 && v <= 1) {
			t.Fatalf("ParseChance(%q) = %v without an error", s, v)
		}
	})
}

func FuzzParseBurst(f *testing.F) {
	for _, s := range []string{"1%,25%", "0.01,0.25,0.5", "0.01,0.25,0.5,0.001", ",", "a,b", "1,2,3,4,5", "NaN,0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseBurst(s)
		if err != nil {
			return
		}
		if p := (Profile{Burst: g}); p.Validate() != nil {
			t.Fatalf("ParseBurst(%q) = %+v, which does not validate", s, *g)
		}
	})
}
