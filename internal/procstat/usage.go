package procstat

import "time"

// Usage is a process's resource use as getrusage(2) reports it.
type Usage struct {
	// CPU is the CPU time used, user + system.
	CPU time.Duration
	// MaxRSS is the peak resident set size, in bytes (the kernel's KiB
	// converted on Linux and the BSDs; Darwin's are bytes already).
	MaxRSS int64
}

// SelfUsage returns this process's resource use so far: its CPU time and
// its peak resident set size (unix only; elsewhere an error wrapping
// ErrUnsupported).
func SelfUsage() (Usage, error) { return getrusage(false) }

// ChildrenUsage returns the resource use so far of this process's child
// processes that have ended and been waited for, and of their waited-for
// descendants: their CPU time added up, and the peak resident set size of
// the largest (unix only; elsewhere an error wrapping ErrUnsupported).
func ChildrenUsage() (Usage, error) { return getrusage(true) }
