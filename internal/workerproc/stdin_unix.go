//go:build unix

package workerproc

import (
	"io"
	"os"
	"syscall"
)

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
