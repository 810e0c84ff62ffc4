package ui

// Redrawing only what changed: each pane keeps the parts of the picture it
// draws with the inputs they were drawn from, and draws a part again only
// when one of them differs. A session's gen counts the updates it has
// taken, msgN the messages; together with the size, the theme and a pane's
// own state they are everything a part depends on.

// memo is one cached part of the picture and the key it was drawn for.
type memo[K comparable, V any] struct {
	key K
	ok  bool
	out V
}

// get is the part for key k, drawn by draw when k is new.
func (c *memo[K, V]) get(k K, draw func() V) V {
	if !c.ok || c.key != k {
		c.out, c.key, c.ok = draw(), k, true
	}
	return c.out
}
