package workerproc

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"
)

// cpuMask is a CPU set as the kernel's sched_{get,set}affinity take it.
type cpuMask [1024 / 64]uint64

// allowedCPUs is the CPUs this process may run on, in ascending order.
func allowedCPUs() ([]int, error) {
	var m cpuMask
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(m), uintptr(unsafe.Pointer(&m))); e != 0 {
		return nil, fmt.Errorf("sched_getaffinity: %w", e)
	}
	var cpus []int
	for i, w := range m {
		for b := range 64 {
			if w&(1<<b) != 0 {
				cpus = append(cpus, i*64+b)
			}
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
	var m cpuMask
	for _, c := range cpus {
		if c < 0 || c >= len(m)*64 {
			return fmt.Errorf("CPU %d out of range", c)
		}
		m[c/64] |= 1 << (c % 64)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(m), uintptr(unsafe.Pointer(&m))); e != 0 {
			errc <- fmt.Errorf("sched_setaffinity: %w", e)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
