//go:build unix

package stock

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	benchtopo "github.com/gale-stream/gale/internal/bench/wordcount"
	"github.com/gale-stream/gale/internal/cli/clitest"
)

// TestBenchWorkerKilled kills a worker with SIGKILL in the middle of a
// `gale bench --workers 2` run. The bench still prints its report, which
// names the failure and the restart; the dead worker's trees timed out and
// their sentences were replayed, so every sentence was acked in the end;
// and gale exits with status 1.
func TestBenchWorkerKilled(t *testing.T) {
	t.Setenv(clitest.MainEnv, "1") // inherited by the worker processes
	killed := make(chan int, 1)
	// waitFor polls cond with a deadline; it reports false if the deadline
	// passed or the run ended first.
	waitFor := func(ctx context.Context, what string, cond func() bool) bool {
		deadline := time.NewTimer(time.Minute)
		defer deadline.Stop()
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		for !cond() {
			select {
			case <-tk.C:
			case <-deadline.C:
				t.Errorf("no %s within a minute", what)
				return false
			case <-ctx.Done():
				t.Errorf("the run ended before %s", what)
				return false
			}
		}
		return true
	}
	benchLaunched = func(ctx context.Context, l benchtopo.Launch) bool {
		// Kill the worker without the spout (its trees pass through both)
		// once sentences are being acked; end the run once its trees have
		// timed out and been replayed. The run is as long as that takes.
		if !waitFor(ctx, "200 sentences acked", func() bool { return l.Stats.Acked.Load() >= 200 }) {
			return true
		}
		victim := 0
		if l.WorkerSpouts(0) > 0 {
			victim = 1
		}
		if err := syscall.Kill(l.Cluster.PID(victim), syscall.SIGKILL); err != nil {
			t.Errorf("kill worker %d: %v", victim, err)
			return true
		}
		killed <- victim
		waitFor(ctx, "restart and replay", func() bool {
			return l.Cluster.Restarts() > 0 && l.Stats.Replayed.Load() > 0
		})
		return true
	}
	defer func() { benchLaunched = nil }()
	code, stdout, _ := runGale(t, "bench", "wordcount", "--workers", "2", "--spouts", "1", "--splitters", "2",
		"--counters", "2", "--ackers", "2", "--duration", "10m", "--message-timeout", "2s", "--json")
	var victim int
	select {
	case victim = <-killed:
	default:
		t.Fatal("no worker was killed")
	}
	if code != exitRuntime {
		t.Errorf("exit code %d, want %d: the run lost a worker", code, exitRuntime)
	}
	var r struct {
		benchReport
		Error          string `json:"error"`
		Replayed       int64  `json:"replayed"`
		Lost           int64  `json:"lost"`
		WorkerRestarts int64  `json:"worker_restarts"`
	}
	clitest.DecodeOne(t, stdout, &r)
	t.Logf("killed worker %d; report: %+v", victim, r)
	if want := fmt.Sprintf("worker %d exited", victim); !strings.Contains(r.Error, want) {
		t.Errorf("report error %q, want it to say %q", r.Error, want)
	}
	if r.WorkerRestarts != 1 {
		t.Errorf("worker_restarts %d, want 1", r.WorkerRestarts)
	}
	if r.Sentences == 0 || r.Acked != r.Sentences || r.Lost != 0 || r.Unfinished != 0 {
		t.Errorf("sentences %d, acked %d, lost %d, unfinished %d: want every sentence acked, none lost",
			r.Sentences, r.Acked, r.Lost, r.Unfinished)
	}
	if r.Replayed == 0 || r.Replayed != r.Failed+r.Timeouts {
		t.Errorf("replayed %d, want failed %d + timeouts %d: every failed tree is replayed", r.Replayed, r.Failed, r.Timeouts)
	}
}

// TestBenchKilledLeavesNoSpecs kills `gale bench --workers 2` with SIGKILL
// mid-run (as a second Ctrl-C does, without a chance to clean up): nothing
// of it is left in the temporary directory.
func TestBenchKilledLeavesNoSpecs(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "bench", "wordcount", "--workers", "2", "--duration", "1m")
	cmd.Env = append(os.Environ(), clitest.MainEnv+"=1", "TMPDIR="+tmp)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	hung := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() }) // ends the scan below if the bench hangs
	defer hung.Stop()
	// Wait for the live view: the workers run.
	sc := bufio.NewScanner(stderr)
	running := false
	for !running && sc.Scan() {
		running = strings.Contains(sc.Text(), "sentences/s")
	}
	if !running {
		cmd.Wait()
		t.Fatalf("the bench ended before its live view: %v", sc.Err())
	}
	left := func(when string) {
		t.Helper()
		if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("%s: the temporary directory holds %v (%v), want nothing", when, names, err)
		}
	}
	left("while the bench runs")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	left("after SIGKILL")
}
