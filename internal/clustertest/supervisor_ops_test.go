//go:build unix

package clustertest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// topologyWorkers are the leader's latest reports of topology name's
// workers that run, by pid.
func topologyWorkers(t *testing.T, f *Fleet, name string) (map[int32]*nimbuspb.WorkerReport, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	info, err := f.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	ws := map[int32]*nimbuspb.WorkerReport{}
	for _, w := range info.GetWorkers() {
		if w.GetPid() != 0 {
			ws[w.GetPid()] = w
		}
	}
	return ws, nil
}

// TestSupervisorRestartedGracefully: `systemctl restart` of a supervisor
// is a SIGTERM and a start. Under acked load, the restart moves nothing:
// nimbus keeps the assignment as it was (the supervisor's lease is left
// to its TTL, not revoked), the restarted supervisor adopts its worker,
// every worker keeps its pid, and no tree fails or is replayed.
func TestSupervisorRestartedGracefully(t *testing.T) {
	needCluster(t)
	f := Launch(t, Options{Supervisors: 2, SlotsPer: 2, Config: failureConfig(30)})
	submitPaced(t, f, 2)
	var before map[int32]*nimbuspb.WorkerReport
	pollCmd(t, "both workers reporting 100 trees acked", func() bool {
		ws, err := topologyWorkers(t, f, paced)
		n := 0
		for _, w := range ws {
			if w.GetAcked() >= 100 {
				n++
			}
		}
		before = ws
		return err == nil && n == 2
	})
	ctx := t.Context()
	asg, err := f.Assignment(ctx, t, paced)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := f.Workers()
	if err != nil || len(pids) != 2 {
		t.Fatalf("the fleet's workers: %v (%v); want the topology's 2", pids, err)
	}
	victim := f.SupervisorByID(asg.Workers[0].Supervisor)
	own, err := victim.Workers()
	if err != nil || len(own) != 1 {
		t.Fatalf("%s's workers: %v (%v); want 1", victim.Role, own, err)
	}
	adopted := int32(own[0])

	if err := victim.Stop(); err != nil { // SIGTERM, exit 0
		t.Fatal(err)
	}
	victim.Restart(t)
	t.Logf("%s stopped with SIGTERM and started again (pid %d)", victim.Role, victim.PID())

	// The restarted supervisor reports its adopted worker acking more; the
	// assignment must not have moved meanwhile.
	pollCmd(t, fmt.Sprintf("the restarted %s reporting its adopted worker %d with more trees acked", victim.Role, adopted), func() bool {
		a, err := f.Assignment(ctx, t, paced)
		if err == nil && a.Version != asg.Version {
			t.Fatalf("the assignment changed with the supervisor's graceful restart: v%d %v → v%d %v; want it kept",
				asg.Version, supervisorsOf(asg), a.Version, supervisorsOf(a))
		}
		ws, err := topologyWorkers(t, f, paced)
		w := ws[adopted]
		return err == nil && w != nil && w.GetSupervisor() == victim.ID && w.GetAcked() > before[adopted].GetAcked()
	})
	// Then another stretch of trees through both workers.
	var after map[int32]*nimbuspb.WorkerReport
	pollCmd(t, "both workers acking 200 trees more than before the restart", func() bool {
		ws, err := topologyWorkers(t, f, paced)
		after = ws
		if err != nil || len(ws) != 2 {
			return false
		}
		for pid, w := range ws {
			if b := before[pid]; b == nil || w.GetAcked() < b.GetAcked()+200 {
				return false
			}
		}
		return true
	})
	if now, err := f.Workers(); err != nil || !slices.Equal(now, pids) {
		t.Errorf("the fleet's workers after the restart: %v (%v); want the same processes %v", now, err, pids)
	}
	for pid, w := range after {
		b := before[pid]
		t.Logf("worker %d (%s): acked %d → %d, failed %d → %d across the restart", pid, w.GetSupervisor(),
			b.GetAcked(), w.GetAcked(), b.GetFailed(), w.GetFailed())
		if w.GetFailed() != b.GetFailed() {
			t.Errorf("worker %d: %d trees failed (replayed) across the restart (%d → %d), want 0", pid, w.GetFailed()-b.GetFailed(), b.GetFailed(), w.GetFailed())
		}
	}
	if a, err := f.Assignment(ctx, t, paced); err != nil || a.Version != asg.Version {
		t.Errorf("the assignment after the restart: v%d (%v); want v%d, unchanged", a.Version, err, asg.Version)
	}
	if !strings.Contains(victim.Output(), "adopting worker") {
		t.Errorf("the restarted %s did not log that it adopted its worker", victim.Role)
	}
}

// TestSupervisorDrained: `gale supervisor drain --dir DIR` takes a
// supervisor out of the cluster at once: nimbus moves its worker to the
// other supervisor without waiting for the lease's TTL, the drained
// supervisor's worker stops, the command returns once none is left, and
// the topology's trees are acked again. The drained supervisor stays up,
// out of the cluster.
func TestSupervisorDrained(t *testing.T) {
	needCluster(t)
	// A lease far longer than the test: only the drain can move the worker.
	f := Launch(t, Options{Supervisors: 2, SlotsPer: 2, Config: failureConfig(600)})
	submitPaced(t, f, 2)
	ctx := t.Context()
	asg, err := f.Assignment(ctx, t, paced)
	if err != nil {
		t.Fatal(err)
	}
	victim := f.SupervisorByID(asg.Workers[0].Supervisor)
	var other *Proc
	for _, s := range f.Supervisors {
		if s != victim {
			other = s
		}
	}
	own, err := victim.Workers()
	if err != nil || len(own) != 1 {
		t.Fatalf("%s's workers: %v (%v); want 1", victim.Role, own, err)
	}
	kept, err := other.Workers()
	if err != nil || len(kept) != 1 {
		t.Fatalf("%s's workers: %v (%v); want 1", other.Role, kept, err)
	}
	acked := waitAcked(t, f, paced, 0, "before the drain")

	start := time.Now()
	code, out, _ := runGale(t, "supervisor", "drain", "--dir", victim.Dir)
	drained := time.Since(start)
	t.Logf("gale supervisor drain:\n%s", out)
	if code != 0 || !strings.Contains(out, "left the cluster") || !strings.Contains(out, "drained") {
		t.Fatalf("gale supervisor drain: exit %d, stdout %q; want 0, left and drained", code, out)
	}
	if ws, err := victim.Workers(); err != nil || len(ws) != 0 {
		t.Errorf("the drained %s's workers: %v (%v); want none", victim.Role, ws, err)
	}
	a, err := f.Assignment(ctx, t, paced)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(supervisorsOf(a), victim.ID) || len(a.Workers) != 2 {
		t.Errorf("the assignment after the drain places its workers on %v; want both off the drained %s", supervisorsOf(a), victim.ID)
	}
	info, err := f.ClusterInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range info.GetSupervisors() {
		if s.GetId() == victim.ID {
			t.Errorf("nimbus still lists the drained supervisor %s", victim.ID)
		}
	}
	pollCmd(t, fmt.Sprintf("%s running both workers", other.Role), func() bool {
		ws, err := other.Workers()
		return err == nil && len(ws) == 2 && slices.Contains(ws, kept[0])
	})
	waitAcked(t, f, paced, acked, "after the drain")
	t.Logf("trees acked again on %s; the drain took %s", other.Role, drained.Round(time.Millisecond))
	if !victim.Running() {
		t.Errorf("the drained %s exited; want it up, idle", victim.Role)
	}
}

// TestKilledTopologysArtifactsDeleted: once a topology is killed, every
// supervisor that ran it deletes its artifact after
// supervisor.artifact.retention.secs, and a later submission of the same
// binary is downloaded again and runs.
func TestKilledTopologysArtifactsDeleted(t *testing.T) {
	needCluster(t)
	f := Launch(t, Options{Supervisors: 2, SlotsPer: 2, Config: failureConfig(shortLease) + "supervisor.artifact.retention.secs: 1\n"})
	artifacts := func(p *Proc) []string {
		ents, err := os.ReadDir(filepath.Join(p.Dir, "artifacts"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	for round := range 2 {
		submitPaced(t, f, 2)
		for _, s := range f.Supervisors {
			if len(artifacts(s)) != 1 {
				t.Fatalf("round %d: %s stores %v; want the topology's artifact", round, s.Role, artifacts(s))
			}
		}
		if code, _, _ := f.Gale(t, "kill", paced, "-w", "0"); code != 0 {
			t.Fatalf("gale kill: exit %d", code)
		}
		for _, s := range f.Supervisors {
			took := pollCmd(t, fmt.Sprintf("round %d: %s deleting the killed topology's artifact (it stores %v)", round, s.Role, artifacts(s)), func() bool {
				ws, err := s.Workers()
				return err == nil && len(ws) == 0 && len(artifacts(s)) == 0
			})
			t.Logf("round %d: %s has no artifact left %s after the kill", round, s.Role, took.Round(time.Millisecond))
		}
	}
}
