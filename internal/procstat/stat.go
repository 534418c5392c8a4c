package procstat

import (
	"fmt"
	"time"
)

// RSS returns the resident set size of this process in bytes, read from
// /proc/self/stat (Linux only; elsewhere it returns an error wrapping
// ErrUnsupported).
func RSS() (int64, error) {
	n, err := rss()
	if err != nil {
		return 0, fmt.Errorf("read rss: %w", err)
	}
	return n, nil
}

// clockTicks is the unit of /proc/PID/stat's CPU times, USER_HZ: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// CPU returns the CPU time (user + system) process pid has used so far,
// read from /proc/PID/stat, in steps of 10 ms (Linux only; elsewhere it
// returns an error wrapping ErrUnsupported). It measures another
// process's CPU while it runs, which getrusage cannot.
func CPU(pid int) (time.Duration, error) {
	ticks, err := cpuTicks(pid)
	if err != nil {
		return 0, fmt.Errorf("read cpu of pid %d: %w", pid, err)
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
