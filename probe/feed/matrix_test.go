package feed

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func mlink(from, to string, caused time.Duration) MatrixLink {
	return MatrixLink{Link: Link{From: from, To: to, State: LinkMeasured}, Caused: caused}
}

// matrixFixture: alice waited 3 s for bob and 1 s for carol; bob 2 s for
// carol; carol's row has not arrived; erin is an observer.
func matrixFixture() MatrixView {
	s := time.Second
	return MatrixView{Players: []MatrixPlayer{
		{Name: "alice", Self: true, Known: true, Waited: 4 * s, Links: []MatrixLink{
			mlink("alice", "bob", 3*s), mlink("alice", "carol", s), {Link: Link{From: "alice", To: "erin"}, Observer: true}}},
		{Name: "bob", Known: true, Waited: 2 * s, Links: []MatrixLink{
			mlink("bob", "alice", 0), mlink("bob", "carol", 2*s)}},
		// Unknown rows add nothing, even if a stale value were there.
		{Name: "carol", Links: nil},
	}}
}

// The ranking of who causes lag sums what the known rows waited for each
// player, longest first, with the breakdown by who waited.
func TestMatrixCulpritsRankWhoCausesLag_S5(t *testing.T) {
	m := matrixFixture()
	got := m.Culprits()
	// bob and carol tie at 3 s: house order breaks the tie.
	want := []Culprit{
		{Name: "bob", Caused: 3 * time.Second, Of: []Wait{{"alice", 3 * time.Second}}},
		{Name: "carol", Caused: 3 * time.Second, Of: []Wait{{"bob", 2 * time.Second}, {"alice", time.Second}}},
		{Name: "alice"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("culprits:\n got %+v\nwant %+v", got, want)
	}
}

func TestMatrixLookupsAndLinkLines_L3(t *testing.T) {
	m := matrixFixture()
	if l, ok := m.Link("bob", "carol"); !ok || l.Caused != 2*time.Second {
		t.Fatalf("bob→carol: %v %+v", ok, l)
	}
	if _, ok := m.Link("carol", "bob"); ok {
		t.Fatal("carol's row is unknown but a link was found")
	}
	if m.Player("erin") != nil {
		t.Fatal("an observer has a row")
	}
	var pairs []string
	for _, ls := range m.linkStats(nil) {
		pairs = append(pairs, ls.From+">"+ls.To)
	}
	if want := []string{"alice>bob", "alice>carol", "alice>erin", "bob>alice", "bob>carol"}; !reflect.DeepEqual(pairs, want) {
		t.Fatalf("link lines %v, want %v", pairs, want)
	}
	w := m.Player("alice").WaitedFor(&m)
	if want := []Wait{{"bob", 3 * time.Second}, {"carol", time.Second}}; !reflect.DeepEqual(w, want) {
		t.Fatalf("alice waited for %v, want %v", w, want)
	}
}

// A recorded View leaves the matrix out: its links are in the link lines,
// and at 64 players it alone would pass a record's size limit.
func TestMatrixLeftOutOfRecordedViews(t *testing.T) {
	v := View{Self: "alice", Matrix: matrixFixture()}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("Matrix")) || bytes.Contains(b, []byte(`"alice","to":"bob"`)) {
		t.Fatalf("the matrix is in the recorded View: %s", b)
	}
}
