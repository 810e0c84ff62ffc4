//go:build unix

package diagnosis

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used: the benchmark reports
// it per evaluation beside the wall time, which on a shared machine measures
// the neighbours as much as the fit.
func processCPU() (time.Duration, bool) {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		return 0, false
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano()), true
}
