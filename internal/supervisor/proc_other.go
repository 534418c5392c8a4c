//go:build !unix

package supervisor

import (
	"errors"
	"os/exec"
	"syscall"
)

var errUnix = errors.New("supervisor: gale supervisor runs workers on Unix only")

func startProcess(*exec.Cmd) (int, error) { return 0, errUnix }
func reap(int, string) bool               { return true }
func isWorker(int, string) bool           { return false }
func signal(int, string, syscall.Signal)  {}
func lockDir(string) (func(), error)      { return nil, errUnix }

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)
