package workerproc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
)

// currentRSS is this process's resident set size in bytes (Linux).
func currentRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/self/statm has %d fields", len(f))
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, err
	}
	return pages * int64(os.Getpagesize()), nil
}

// Stdin returns this process's standard input as a file whose Close
// interrupts a pending Read (Main closes it when it returns): a blocking
// pipe descriptor, as a launcher hands over, is switched to non-blocking
// so that the runtime's poller serves it.
func Stdin() io.ReadCloser {
	if err := syscall.SetNonblock(int(os.Stdin.Fd()), true); err != nil {
		return os.Stdin
	}
	return os.NewFile(uintptr(syscall.Stdin), "/dev/stdin")
}
