package coordination

import "syscall"

// childAttr makes a child die with this process, so that a killed bench
// leaves no etcd or nimbus behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
