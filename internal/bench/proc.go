package bench

import (
	"errors"
	"time"

	"github.com/gale-stream/gale/internal/procstat"
)

// currentRSS returns the resident set size of this process (Linux only;
// elsewhere it returns an error and RSS is not sampled).
func currentRSS() (int64, error) { return procstat.RSS() }

// rusage returns the CPU time (user + system) this process has used so far and its
// peak resident set size in bytes (unix only; elsewhere an error).
func rusage() (cpu time.Duration, maxRSS int64, err error) {
	u, err := procstat.SelfUsage()
	if err != nil {
		return 0, 0, err
	}
	return u.CPU, u.MaxRSS, nil
}

// childrenCPU returns the CPU time (user + system) used so far by this process's child
// processes that have ended and been waited for, and by their waited-for descendants.
// Where it is not measured (outside unix), worker processes add nothing to the CPU
// reported.
func childrenCPU() (time.Duration, error) {
	u, err := procstat.ChildrenUsage()
	if errors.Is(err, procstat.ErrUnsupported) {
		return 0, nil
	}
	return u.CPU, err
}
