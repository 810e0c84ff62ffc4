//go:build !unix

package diagnosis

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
