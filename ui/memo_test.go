package ui

import "testing"

// A memo draws again only for a key it has not just drawn.
func TestMemoDrawsOnNewKey(t *testing.T) {
	var c memo[int, string]
	draws := 0
	draw := func(s string) func() string { return func() string { draws++; return s } }
	for _, step := range []struct {
		k    int
		out  string
		want string
		n    int
	}{{0, "a", "a", 1}, {0, "b", "a", 1}, {1, "c", "c", 2}, {0, "d", "d", 3}} {
		if got := c.get(step.k, draw(step.out)); got != step.want || draws != step.n {
			t.Fatalf("key %d: got %q after %d draws, want %q after %d", step.k, got, draws, step.want, step.n)
		}
	}
}
