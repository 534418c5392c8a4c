//go:build unix

package devcluster

import (
	"os"
	"syscall"
)

func supported() error { return nil }

// sysProcAttr puts a child of the cluster in a process group of its own.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// terminateProcess asks p to stop, as Ctrl-C would.
func terminateProcess(p *os.Process) { p.Signal(syscall.SIGTERM) }
