//go:build !unix

package devcluster

import (
	"errors"
	"os"
	"syscall"
)

func supported() error {
	return errors.New("dev runs its cluster on Linux or macOS: supervisors start workers as process groups of their own, which this system does not have")
}

func sysProcAttr() *syscall.SysProcAttr { return nil }

func terminateProcess(p *os.Process) { p.Kill() }
