//go:build unix

package workerproc

import (
	"syscall"
	"time"
)

// selfCPU is the CPU time, user and system, this process has used, from
// getrusage(2), or false if it cannot be read.
func selfCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
