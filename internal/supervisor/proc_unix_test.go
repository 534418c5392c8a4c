//go:build unix

package supervisor

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// reap collects a worker started by this process: once it reports the
// worker exited, no zombie is left, even for a worker caught in the
// middle of its exit (its command line gone, not yet waitable).
func TestReapCollectsAnExitingChild(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "spec.json")
	cmd := exec.Command(os.Args[0], "worker", "--spec", spec)
	cmd.Env = append(os.Environ(), hogEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	pid, err := startProcess(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("the hog process: %q, %v", l, err)
	}
	if reap(pid, spec) {
		t.Fatal("reap says a running worker exited")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !reap(pid, spec) {
		if time.Now().After(deadline) {
			t.Fatalf("reap did not see worker %d exit within a minute of SIGKILL", pid)
		}
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("after reap said worker %d exited, kill -0 gives %v, want ESRCH: a zombie was left", pid, err)
	}
}
