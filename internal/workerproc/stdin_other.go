//go:build !unix

package workerproc

import (
	"io"
	"os"
)

// Stdin returns this process's standard input. Off Unix its Close may not
// interrupt a pending Read; Main then returns once stdin ends.
func Stdin() io.ReadCloser { return os.Stdin }
