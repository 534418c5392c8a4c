//go:build unix

package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gale-stream/gale/internal/procstat"
)

// startProcess starts cmd in a session of its own (setsid), so that it
// outlives this supervisor and a terminal's signals do not reach it, and
// lets go of it: its pid is all the supervisor keeps (reap collects it).
func startProcess(cmd *exec.Cmd) (int, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	return pid, nil
}

// reap reports whether worker pid has exited, collecting it if it is
// this process's child. It counts as exited, too, when its command line
// no longer names spec: another process reuses the pid.
//
// A child of this process that is exiting has no command line (or none
// to read) for a while, as it tears its memory down, before it can be
// collected: it is not taken for gone then, which would leave it a
// zombie for the supervisor's life, but collected by a later call.
func reap(pid int, spec string) (exited bool) {
	var ws syscall.WaitStatus
	got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	switch {
	case err == nil && got == pid:
		return true
	case err != nil: // not a child: a worker adopted from a supervisor before
		return !isWorker(pid, spec)
	}
	// A child that runs, or is exiting: its command line read once.
	args, err := procstat.Cmdline(pid)
	if err != nil || len(args) == 0 {
		return false
	}
	return !namesSpec(args, spec)
}

// isWorker reports whether process pid runs with spec on its command
// line. Where /proc is not available it reports whether pid exists.
func isWorker(pid int, spec string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	args, err := procstat.Cmdline(pid)
	if err != nil {
		// No /proc: pid exists is all there is to know. Else pid is gone.
		return errors.Is(err, procstat.ErrUnsupported)
	}
	return namesSpec(args, spec)
}

// namesSpec reports whether an argument ends in spec ("--spec=/d/spec.json"
// names /d/spec.json as "/d/spec.json" does).
func namesSpec(args []string, spec string) bool {
	for _, a := range args {
		if strings.HasSuffix(a, spec) {
			return true
		}
	}
	return false
}

// signal sends sig to worker pid's process group (it leads one, from
// setsid), if pid still is that worker.
func signal(pid int, spec string, sig syscall.Signal) {
	if isWorker(pid, spec) {
		syscall.Kill(-pid, sig)
	}
}

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// lockDir takes dir's lock file, which another supervisor in dir holds
// until it exits (kill -9 included: the kernel releases it). Workers do
// not inherit it.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("supervisor: another supervisor runs in %s (%v): stop it, or give this one another --dir", dir, err)
	}
	return func() { f.Close() }, nil
}
