//go:build unix

package cli

import (
	"syscall"
	"testing"

	"github.com/gale-stream/gale/internal/cli/clitest"
)

// TestRunSignalDrains: the first SIGINT stops a run in order, every tree
// in flight drained, and it still reports.
func TestRunSignalDrains(t *testing.T) {
	t.Parallel()
	p := clitest.Start(t, "run", "wordcount", "--json")
	p.WaitLineContaining(t, "running wordcount")
	if err := p.Cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	st := p.Wait(t)
	if st.ExitCode() != exitOK {
		t.Fatalf("exit: %v, want code 0", st)
	}
	var r runReportJSON
	clitest.DecodeOne(t, p.Stdout.String(), &r)
	if r.StoppedBy != "signal" || r.Failed != 0 || r.Pending != 0 || r.Emitted != r.Acked {
		t.Errorf("stopped_by %q, failed %d, pending %d, emitted %d, acked %d: want signal, 0, 0, emitted = acked",
			r.StoppedBy, r.Failed, r.Pending, r.Emitted, r.Acked)
	}
}

// TestRunSecondSignalKills: a second SIGINT during the drain (the stuck
// topology's would last a minute) kills the program at once.
func TestRunSecondSignalKills(t *testing.T) {
	t.Parallel()
	p := clitest.Start(t, "run", "stuck")
	p.WaitLineContaining(t, "running stuck")
	if err := p.Cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// The drain waits up to a minute for the tree the bolt holds.
	p.WaitLineContaining(t, "stopping: draining")
	if err := p.Cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	st := p.Wait(t)
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("exit: %v, want killed by SIGINT", st)
	}
	if p.Stdout.Len() != 0 {
		t.Errorf("stdout: got %q, want nothing (killed before the report)", p.Stdout.String())
	}
}
