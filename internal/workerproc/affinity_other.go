//go:build !linux

package workerproc

import (
	"errors"
	"os/exec"
)

var errNoAffinity = errors.New("CPU pinning is supported on Linux only")

func allowedCPUs() ([]int, error) { return nil, errNoAffinity }

func startPinned(cmd *exec.Cmd, _ []int) error { return errNoAffinity }
