//go:build unix

package live

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used so
// far, for the summary's process line; false where the system cannot say.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
