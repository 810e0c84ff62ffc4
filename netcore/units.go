package netcore

import (
	"time"

	"github.com/lagscope/lagscope/units"
)

// Millis forwards to units.Millis while callers move there.
func Millis(d time.Duration) float64 { return units.Millis(d) }

// FromMillis forwards to units.FromMillis while callers move there.
func FromMillis(ms float64) time.Duration { return units.FromMillis(ms) }
