package record

import "github.com/lagscope/lagscope/probe/feed"

// decodeEvent turns one NDJSON event object into its Go type through the
// contract's registry (feed.DecodeEvent): an object of a type this build
// does not know gives (nil, nil) and is kept as bytes; anything that is
// not an event object gives an error.
func decodeEvent(raw []byte) (feed.Event, error) { return feed.DecodeEvent(raw) }
