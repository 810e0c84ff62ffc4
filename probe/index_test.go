package probe

import (
	"testing"

	"github.com/lagscope/lagscope/netcore"
)

// The slice index finds every roster member the map holds, small IDs and
// large, and nothing else; it never grows past maxIndexedID.
func TestPlayerIndex(t *testing.T) {
	ids := []netcore.PeerID{1, 2, 7, 40, maxIndexedID - 1, maxIndexedID, 60000}
	var roster []Member
	for _, id := range ids {
		roster = append(roster, Member{ID: id, Name: "p" + string(rune('a'+len(roster)))})
	}
	p, err := newPeer(Config{Self: 1, Roster: roster})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second round reads what the first cached
		for _, id := range ids {
			if got := p.ids.get(p, id); got == nil || got != p.byID[id] {
				t.Fatalf("id %d: got %v, want the roster's", id, got)
			}
		}
		for _, id := range []netcore.PeerID{0, 3, 41, maxIndexedID + 1, 65535} {
			if got := p.ids.get(p, id); got != nil {
				t.Fatalf("id %d is in no roster, got %s", id, got.Name)
			}
		}
	}
	if len(p.ids) > maxIndexedID {
		t.Fatalf("index grew to %d", len(p.ids))
	}
}
