//go:build linux

package netnstest

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSweepRemovesOnlyWhatDeadOwnersLeft: namespaces named for a dead
// process, or for a live pid with another start time (the pid reused),
// are removed with what runs in them; those of a live owner, and names
// this package does not make, are kept.
func TestSweepRemovesOnlyWhatDeadOwnersLeft(t *testing.T) {
	Require(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	start, _, err := procStart(pid)
	if err != nil {
		t.Fatal(err)
	}
	// Each name holds this process's pid, unique among test binaries
	// running at once.
	dead := fmt.Sprintf("gale-%d-1-sweeptest-%d", gone.ProcessState.Pid(), pid)
	reused := fmt.Sprintf("gale-%d-%d-sweeptest", pid, start+1)
	live := fmt.Sprintf("gale-%d-%d-sweeptest", pid, start)
	foreign := fmt.Sprintf("gale-sweeptest-%d", pid)
	for _, ns := range []string{dead, reused, live, foreign} {
		if err := runIP(avail.ip, "netns", "add", ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := destroyNamespace(ns); err != nil {
				t.Error(err)
			}
		})
	}
	left := exec.Command(avail.ip, "netns", "exec", dead, "sleep", "1000")
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- left.Wait() }()
	t.Cleanup(func() {
		left.Process.Kill()
		<-exited
	})

	if err := sweepStale(); err != nil {
		t.Fatalf("sweepStale: %v", err)
	}
	out, err := exec.Command(avail.ip, "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	for ns, keep := range map[string]bool{dead: false, reused: false, live: true, foreign: true} {
		if got := slices.Contains(names, ns); got != keep {
			t.Errorf("namespace %s: present after the sweep %v, want %v", ns, got, keep)
		}
	}
	select {
	case err := <-exited:
		exited <- err
	case <-time.After(time.Minute):
		t.Errorf("the process left in namespace %s still runs after the sweep", dead)
	}
}
