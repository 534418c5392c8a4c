//go:build unix

package bench

import (
	"fmt"
	"runtime"
	"syscall"
	"time"
)

// rusage returns the CPU time (user + system) this process has used so far and its
// peak resident set size in bytes.
func rusage() (cpu time.Duration, maxRSS int64, err error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, fmt.Errorf("getrusage: %w", err)
	}
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	maxRSS = int64(ru.Maxrss)
	if runtime.GOOS != "darwin" && runtime.GOOS != "ios" {
		maxRSS *= 1024 // ru_maxrss is in KiB on Linux and the BSDs, bytes on Darwin
	}
	return cpu, maxRSS, nil
}

// childrenCPU returns the CPU time (user + system) used so far by this process's child
// processes that have ended and been waited for, and by their waited-for descendants.
func childrenCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0, fmt.Errorf("getrusage children: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
