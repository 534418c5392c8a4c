// Package procstat reads this process's resource use from /proc.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
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
