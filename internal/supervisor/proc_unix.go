//go:build unix

package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
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
// no longer names spec: another process reuses the pid. An exiting
// child's command line is empty a moment before it can be collected: it
// counts as exited only once collected, not left a zombie.
func reap(pid int, spec string) (exited bool) {
	var ws syscall.WaitStatus
	got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	switch {
	case err == nil && got == pid:
		return true
	case err == nil: // a child, running or exiting
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		return err == nil && len(b) > 0 && !bytes.Contains(b, append([]byte(spec), 0))
	}
	return !isWorker(pid, spec)
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
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		if _, serr := os.Stat("/proc/self/cmdline"); serr == nil {
			return false // /proc works, and pid is gone
		}
		return true
	}
	return bytes.Contains(b, append([]byte(spec), 0))
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
