//go:build !linux

package coordination

import "syscall"

func childAttr() *syscall.SysProcAttr { return nil }
