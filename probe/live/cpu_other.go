//go:build !unix

package live

import "time"

// ProcessCPU is not known on this system.
func ProcessCPU() (time.Duration, bool) { return 0, false }
