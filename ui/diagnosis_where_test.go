package ui

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/lagscope/lagscope/probe/diagnosis"
)

// The Diagnosis view names where each player's delay starts, as the hop
// traces say, and the hop several players' paths share; without either
// the section is not there.
func TestDiagnosisViewSaysWhere(t *testing.T) {
	us := diagnosisUpdates()
	for i := 20; i < len(us); i++ {
		d := fixtureDiagnosis()
		for j := range d.Players {
			if d.Players[j].Player == "bob" {
				d.Players[j].Where = &diagnosis.Where{Link: "uplink", TTL: 2, AddedMs: 240, Confirmed: 2}
			}
		}
		d.SharedHop = &diagnosis.SharedHop{Addr: netip.MustParseAddr("10.0.5.1"), Players: []string{"carol", "dave"}, AddedMs: 40}
		us[i].View.Diagnosis = d
	}
	m := model(t, newStaticFeed(), 120, 40, us)
	press(m, toDiagnosis...)
	v := strings.Join(strings.Fields(m.View()), " ")
	for _, want := range []string{
		"Where the delay starts (hop traces):",
		"bob: on the home line out, between the router and the internet provider (hop 2, adds 240 ms); 2 other players' traces toward it agree",
		"shared hop 10.0.5.1, past the homes: on the paths of carol, dave (adds 40 ms) — nothing any player can change at home",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("%q missing:\n%s", want, m.View())
		}
	}
	plain := model(t, newStaticFeed(), 120, 40, diagnosisUpdates())
	press(plain, toDiagnosis...)
	if strings.Contains(plain.View(), "Where the delay starts") {
		t.Error("a where section without traces")
	}
}
