package impair

import "time"

// NamedProfile is a ready-made kind of link, for the demo and for
// `lagscope impair --profile`.
type NamedProfile struct {
	Name        string
	Description string  // one line, for help texts and the demo's legend
	Profile     Profile // one direction; a link applies it each way
}

// Profiles returns the named profiles, best link first. Every call returns
// fresh values, so a caller may change what it gets.
//
// The numbers are typical of each kind of access link for a player on the
// same continent as the others; they are illustrations, not measurements.
func Profiles() []NamedProfile {
	return []NamedProfile{
		{
			Name:        "lan",
			Description: "wired LAN: about 1 ms round trip, no loss",
			Profile:     Profile{Delay: 500 * time.Microsecond, Jitter: 200 * time.Microsecond},
		},
		{
			Name:        "cable",
			Description: "cable broadband: about 30 ms round trip, light jitter, no loss",
			Profile:     Profile{Delay: 15 * time.Millisecond, Jitter: 3 * time.Millisecond},
		},
		{
			Name:        "dsl",
			Description: "DSL: about 50 ms round trip, moderate jitter, 1 % loss each way",
			Profile:     Profile{Delay: 25 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.01},
		},
		{
			Name:        "wifi",
			Description: "busy Wi-Fi: about 40 ms round trip, ±15 ms jitter each way, about 2 % loss in bursts of 4 datagrams",
			Profile: Profile{
				Delay:  20 * time.Millisecond,
				Jitter: 15 * time.Millisecond,
				// Interference comes in spells: ~1 % of datagrams start one,
				// a spell lasts 4 datagrams on average and loses half of them.
				Burst: &GilbertElliott{PGoodToBad: 0.01, PBadToGood: 0.25, LossBad: 0.5},
			},
		},
	}
}

// ProfileByName returns the named profile called name.
func ProfileByName(name string) (Profile, bool) {
	for _, np := range Profiles() {
		if np.Name == name {
			return np.Profile, true
		}
	}
	return Profile{}, false
}
