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

// hogEnv makes the test binary a process with a large heap that waits to
// be killed (hog): one whose exit takes a while, tearing its memory down.
const hogEnv = "GALE_SUPERVISOR_TEST_HOG"

func hog() {
	b := make([]byte, 128<<20)
	for i := range b {
		if i%4096 == 0 {
			b[i] = 1
		}
	}
	os.Stdout.WriteString("ready\n")
	os.Stdin.Read(make([]byte, 1)) // until killed
	os.Stdout.Write(b[:1])
	os.Exit(0)
}

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
