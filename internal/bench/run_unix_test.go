//go:build unix

package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestRunCountsChildCPU: a runner that runs its work in a child process (as the
// multi-process runner does with its workers) has that child's CPU in the report.
func TestRunCountsChildCPU(t *testing.T) {
	const spin = 300 * time.Millisecond
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	var childCPU time.Duration
	var childErr error
	var childOut bytes.Buffer
	runner := func(ctx context.Context, opts Options, stats *Stats) error {
		stats.SpoutActivated(1)
		stats.Sentences.Add(1)
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), spinEnv+"="+spin.String())
		cmd.Stdout, cmd.Stderr = &childOut, &childOut
		childErr = cmd.Run() // waits for the child, so its CPU counts as a child's
		if cmd.ProcessState != nil {
			childCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		<-ctx.Done()
		return nil
	}
	opts := DefaultOptions()
	opts.Mode, opts.Duration, opts.JSON = ModeNoAck, 50*time.Millisecond, true
	// No pretouch: Run spends its CPU before it starts counting, which
	// this process's total below would count against the child's.
	opts.HeapPretouch = false

	self0, _, err := rusage()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(t.Context(), opts, runner, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	self1, _, err := rusage()
	if err != nil {
		t.Fatal(err)
	}
	if childErr != nil {
		t.Fatalf("child: %v\n%s", childErr, childOut.Bytes())
	}
	if childCPU < spin/2 {
		t.Fatalf("the child used %v of CPU, want about %v (did it spin?)\n%s", childCPU, spin, childOut.Bytes())
	}

	// The report covers part of this process's CPU over the Run call and, if children
	// count, all of the child's: what it has beyond this process's whole Run is the
	// child's share (less Run's own set-up and report writing, which is small).
	reported := time.Duration(r.CPUSeconds * float64(time.Second))
	self := self1 - self0
	t.Logf("cpu_seconds %v; this process over Run %v; the child %v", reported, self, childCPU)
	if reported-self < childCPU/2 {
		t.Errorf("cpu_seconds = %v, this process used %v over Run and the child %v; want cpu_seconds ≥ %v + half the child's",
			reported, self, childCPU, self)
	}
}
