//go:build unix

package stock

import (
	"os"
	"syscall"
)

func devSupported() error { return nil }

// devSysProcAttr puts a child of dev in a process group of its own.
func devSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// terminateProcess asks p to stop, as Ctrl-C would.
func terminateProcess(p *os.Process) { p.Signal(syscall.SIGTERM) }
