package workerproc

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// cpuSetSize is how many CPUs a unix.CPUSet holds: the kernel's
// CPU_SETSIZE, as glibc's cpu_set_t.
const cpuSetSize = 1024

// allowedCPUs is the CPUs this process may run on, in ascending order.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := range cpuSetSize {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// startPinned starts cmd bound to cpus. A process inherits the CPU mask
// of the thread that forks it, so the worker is pinned from its first
// instruction, with every thread its runtime starts later: the fork runs
// on a thread of its own whose mask is set first. That thread is never
// unlocked, so the runtime discards it with its changed mask.
func startPinned(cmd *exec.Cmd, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		if c < 0 || c >= cpuSetSize {
			return fmt.Errorf("CPU %d out of range", c)
		}
		set.Set(c)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			errc <- fmt.Errorf("sched_setaffinity: %w", err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
