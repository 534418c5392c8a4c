//go:build !linux

package benchcoord

import "syscall"

func childAttr() *syscall.SysProcAttr { return nil }
