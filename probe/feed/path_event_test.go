package feed

import (
	"encoding/json"
	"github.com/lagscope/lagscope/vocab"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

// tracedView is a traced path: a LAN hop that adds delay, a silent
// uplink, and the peer.
func tracedView() PathView {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	return PathView{Peer: "bob", Available: true, Complete: true,
		Hops: []PathHop{
			{TTL: 1, Addr: netip.MustParseAddr("192.168.1.1"), Link: "lan", Sent: 30, Answered: true,
				Best: ms(0.6), Median: ms(210.4), Last: ms(230), Worst: ms(260.1), Judged: true,
				LossHi: 0.1135, Base: ms(0.62), HasBase: true},
			{TTL: 2, Link: "uplink", Sent: 30, Loss: 1, Judged: true, LossLo: 0.8865, LossHi: 1},
			{TTL: 3, Addr: netip.MustParseAddr("203.0.113.9"), Link: "peer", Sent: 12, Loss: 0.08333333, Answered: true,
				Best: ms(211), Median: ms(215.25), Last: ms(215), Worst: ms(290), Judged: true, RateLimited: true,
				LossLo: 0.01487, LossHi: 0.35387},
		},
		DelayStarts: &PathStart{TTL: 1, Link: "lan", Added: ms(210.4)},
		Bursting:    true,
	}
}

// The `path` event's JSON is the contract's, byte for byte: no frame,
// round trips in ms to 0.1, null for a hop that never answered, loss to 4
// places, loss_starts null, why null while the machine traces.
func TestPathEventJSON(t *testing.T) {
	tms := 61000.0
	pv := tracedView()
	e := &PathEvent{Header: Header{Type: vocab.EventPath, Frame: 1830, TMs: &tms}, PathStat: pv.Stat("ada")}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"path","t_ms":61000,"from":"ada","to":"bob","available":true,"why":null,` +
		`"hops":[{"ttl":1,"addr":"192.168.1.1","link":"lan","sent":30,"loss":0,"best_ms":0.6,"rtt_ms":210.4,"worst_ms":260.1,"rate_limited":false,"loss_ci":[0,0.1135],"base_ms":0.6},` +
		`{"ttl":2,"addr":null,"link":"uplink","sent":30,"loss":1,"best_ms":null,"rtt_ms":null,"worst_ms":null,"rate_limited":false,"loss_ci":[0.8865,1],"base_ms":null},` +
		`{"ttl":3,"addr":"203.0.113.9","link":"peer","sent":12,"loss":0.0833,"best_ms":211,"rtt_ms":215.3,"worst_ms":290,"rate_limited":true,"loss_ci":[0.0149,0.3539],"base_ms":null}],` +
		`"delay_starts":{"ttl":1,"link":"lan","added_ms":210.4},"loss_starts":null,"complete":true,"one_hop":false,"bursting":true,"loss_pending":null}`
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
	var back PathEvent
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	e.Frame = 0 // not written
	if !reflect.DeepEqual(&back, e) {
		t.Fatalf("read back %+v, want %+v", back, *e)
	}
}

// Where the machine cannot trace, the event says so and why, with no
// hops; a loss start carries its loss.
func TestPathEventUnavailableAndLoss(t *testing.T) {
	un := PathView{Peer: "bob", Why: "no error queue"}
	b, _ := json.Marshal(&PathEvent{Header: Header{Type: vocab.EventPath}, PathStat: un.Stat("ada")})
	want := `{"type":"path","from":"ada","to":"bob","available":false,"why":"no error queue","hops":[],"delay_starts":null,"loss_starts":null,"complete":false,"one_hop":false,"bursting":false,"loss_pending":null}`
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
	lossy := PathView{Peer: "bob", Available: true, LossStarts: &PathStart{TTL: 3, Link: "isp", Loss: 0.09751}}
	b, _ = json.Marshal(&PathEvent{Header: Header{Type: vocab.EventPath}, PathStat: lossy.Stat("ada")})
	want = `{"type":"path","from":"ada","to":"bob","available":true,"why":null,"hops":[],"delay_starts":null,"loss_starts":{"ttl":3,"link":"isp","loss":0.0975},"complete":false,"one_hop":false,"bursting":false,"loss_pending":null}`
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
	// Loss not placed yet: how much the peer loses, and what placing it
	// takes; a one-hop path says it is one.
	pending := PathView{Peer: "bob", Available: true, Complete: true, OneHop: false, LossPending: &PathLossPending{Loss: 0.05, More: 120}}
	b, _ = json.Marshal(&PathEvent{Header: Header{Type: vocab.EventPath}, PathStat: pending.Stat("ada")})
	want = `{"type":"path","from":"ada","to":"bob","available":true,"why":null,"hops":[],"delay_starts":null,"loss_starts":null,"complete":true,"one_hop":false,"bursting":false,"loss_pending":{"loss":0.05,"more":120}}`
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
}
