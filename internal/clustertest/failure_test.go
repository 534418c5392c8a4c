//go:build unix

package clustertest

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"
)

// failureConfig makes the cluster's clocks short, so that the failure
// tests see a lost lease, a report and a reconcile within seconds.
const failureConfig = `supervisor.heartbeat.frequency.secs: 1
worker.heartbeat.frequency.secs: 1
nimbus.monitor.freq.secs: 1
nimbus.supervisor.timeout.secs: 4
`

// generous bounds every wait for something that must happen: only a
// broken cluster, or a machine far busier than CI's, takes it.
const generous = 3 * time.Minute

// paced is the topology the failure tests run: the bench's word count
// at a fixed rate, light on a machine of two cores.
const paced = "bench-wordcount"

// submitPaced submits the paced word count with workers workers and
// waits until its trees are acked.
func submitPaced(t *testing.T, f *Fleet, workers int) {
	t.Helper()
	if code, out, _ := f.Gale(t, "submit", paced, "-p", "rate=200", "--workers", fmt.Sprint(workers), "--json"); code != 0 {
		t.Fatalf("gale submit %s: exit %d\n%s", paced, code, out)
	}
	start := time.Now()
	waitAcked(t, f, paced, 0, "after submit")
	t.Logf("%s: first trees acked %s after submit returned", paced, time.Since(start).Round(time.Millisecond))
}

// waitAcked polls gale list until topology name has more than above
// trees acked, and returns the count; what says when, for the failure.
func waitAcked(t *testing.T, f *Fleet, name string, above int64, what string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	var last []Topology
	var lastErr error
	var acked int64
	if err := Poll(ctx, func() bool {
		last, lastErr = f.TryList(t)
		for _, tp := range last {
			if tp.Name == name && tp.Acked > above {
				acked = tp.Acked
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("%s: %s had no more than %d trees acked within %s; last list: %+v (%v)", what, name, above, generous, last, lastErr)
	}
	return acked
}

// pollFor polls ok for up to generous, and fails the test with what
// did not happen.
func pollFor(t *testing.T, what string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	if err := Poll(ctx, ok); err != nil {
		t.Fatalf("within %s: %s did not happen", generous, what)
	}
	return time.Since(start)
}

// TestWorkerCrash: a worker killed with -9 is started again by its
// supervisor, and the topology's trees are acked again.
func TestWorkerCrash(t *testing.T) {
	needCluster(t)
	f := Launch(t, Options{Supervisors: 2, SlotsPer: 2, Config: failureConfig})
	submitPaced(t, f, 2)
	var sup *Proc
	var before []int
	for _, s := range f.Supervisors {
		if ws, err := s.Workers(); err == nil && len(ws) > 0 {
			sup, before = s, ws
			break
		}
	}
	if sup == nil {
		t.Fatal("no supervisor runs a worker of the submitted topology")
	}
	victim := before[0]
	if err := killPID(victim); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var now []int
	took := pollFor(t, fmt.Sprintf("%s restarting its killed worker (pid %d; it ran %v)", sup.Role, victim, before), func() bool {
		ws, err := sup.Workers()
		now = ws
		return err == nil && len(ws) == len(before) && !slices.Contains(ws, victim)
	})
	t.Logf("%s started a new worker %s after the kill: workers %v → %v", sup.Role, took.Round(time.Millisecond), before, now)
	// The old worker's count is gone from the reports once the new one
	// runs: count from there.
	acked := waitAcked(t, f, paced, 0, "after the worker's restart")
	waitAcked(t, f, paced, acked, "after the worker's restart")
	t.Logf("trees acked again %s after the kill", time.Since(killed).Round(time.Millisecond))
}

// killPID kills the process pid with SIGKILL.
func killPID(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 %d: %w", pid, err)
	}
	return nil
}
