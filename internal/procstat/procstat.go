// Package procstat reads a process's resource use from /proc.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// RSS returns the resident set size of this process in bytes, read from
// /proc/self/statm (Linux only; elsewhere it returns an error).
func RSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, fmt.Errorf("read rss: %w", err)
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, fmt.Errorf("read rss: /proc/self/statm has %d fields, want ≥ 2", len(f))
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read rss: /proc/self/statm resident field: %w", err)
	}
	return pages * int64(os.Getpagesize()), nil
}

// clockTicks is the unit of /proc/PID/stat's CPU times, USER_HZ: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// CPU returns the CPU time (user + system) process pid has used so far,
// read from /proc/PID/stat, in steps of 10 ms (Linux only; elsewhere it
// returns an error). It measures another process's CPU while it runs,
// which getrusage cannot.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("read cpu of pid %d: %w", pid, err)
	}
	// The command name, in parentheses, may hold spaces and parentheses:
	// the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("read cpu of pid %d: /proc/%d/stat has no command name", pid, pid)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("read cpu of pid %d: /proc/%d/stat has %d fields after the name, want ≥ 13", pid, pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read cpu of pid %d: /proc/%d/stat utime or stime %q: %w", pid, pid, s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
