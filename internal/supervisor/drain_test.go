//go:build unix

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// registered says whether supervisor id has a record in etcd.
func registered(t *testing.T, tc *testCluster, id string) bool {
	t.Helper()
	sups, err := tc.store.Supervisors(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sups {
		if s.ID == id {
			return true
		}
	}
	return false
}

// TestSupervisorStopKeepsItsLease: a supervisor stopped gracefully (its
// context cancelled: SIGTERM, systemctl restart) does not revoke its
// lease. Its record stays in etcd for nimbus.supervisor.timeout.secs, so
// nimbus does not move its workers, and a restart adopts the same worker.
func TestSupervisorStopKeepsItsLease(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 1)
	cfg := tc.supervisorConfig(t, shortDir(t), ports)
	cfg.LeaseTTL = time.Minute // longer than the restart takes
	stop := runSupervisor(t, cfg)
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	var pid int32
	tc.nimbus.waitReport(t, "a valid worker", validOn(ports[0], &pid, true))
	stop()
	if !registered(t, tc, "s1") {
		t.Fatal("the supervisor's record left etcd with a graceful stop: nimbus would move its workers at once")
	}
	if !alive(int(pid)) {
		t.Fatalf("worker %d stopped with its supervisor", pid)
	}
	runSupervisor(t, cfg)
	adopted := pid
	tc.nimbus.waitReport(t, "the same worker, adopted and valid", validOn(ports[0], &adopted, true))
	if !registered(t, tc, "s1") {
		t.Fatal("the restarted supervisor is not registered")
	}
}

// TestSupervisorDrain: a drain takes the supervisor out of etcd at once
// (nimbus moves its workers), starts no worker from then on (a worker
// that crashes is not started again, though still assigned here), stops
// each worker as the assignments withdraw it, and reports drained once
// none runs and none is assigned here; the supervisor then stays up, out
// of the cluster.
func TestSupervisorDrain(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 2)
	dir := shortDir(t)
	stop := runSupervisor(t, tc.supervisorConfig(t, dir, ports))
	ctx := t.Context()
	asg := func(id string, v int64, sup string, port int) coord.Assignment {
		return coord.Assignment{Topology: id, Name: id, Version: v, Active: true, Artifact: tc.art, Factory: "ticks",
			Workers: []coord.Slot{{Supervisor: sup, Host: "127.0.0.1", Port: port}}}
	}
	for i, id := range []string{"t1", "t2"} {
		if err := tc.store.PutAssignment(ctx, asg(id, 1, "s1", ports[i])); err != nil {
			t.Fatal(err)
		}
	}
	var pid1, pid2 int32
	tc.nimbus.waitReport(t, "both workers valid", func(r *nimbuspb.ReportRequest) bool {
		return validOn(ports[0], &pid1, true)(r) && validOn(ports[1], &pid2, true)(r)
	})

	progress := make(chan DrainStatus, 64)
	var wg sync.WaitGroup
	var drainErr error
	dctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() {
		defer close(progress)
		drainErr = Drain(dctx, dir, func(st DrainStatus) {
			select {
			case progress <- st:
			case <-dctx.Done():
			}
		})
	})
	next := func(what string, ok func(DrainStatus) bool) DrainStatus {
		t.Helper()
		var last DrainStatus
		for st := range progress {
			if ok(st) {
				return st
			}
			last = st
		}
		t.Fatalf("the drain ended (%v) before %s; its last progress: %+v", drainErr, what, last)
		return last
	}
	first := next("it left", func(st DrainStatus) bool { return st.Left })
	if first.Supervisor != "s1" || first.Drained || len(first.Workers) != 2 {
		t.Errorf("the drain's first progress: %+v; want s1, left, not drained, its 2 workers", first)
	}
	if registered(t, tc, "s1") {
		t.Fatal("the draining supervisor's record is still in etcd: nimbus would not move its workers")
	}

	// A worker that exits while draining is not started again here.
	if err := syscall.Kill(int(pid2), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	next("t2's crashed worker waiting for nimbus to move it", func(st DrainStatus) bool {
		for _, w := range st.Workers {
			if w.Port == ports[1] && w.State == Waiting && strings.Contains(w.Why, "draining") {
				return true
			}
		}
		return false
	})

	// Nimbus moves both: t1's worker stops here, and the drain is done.
	if err := tc.store.PutAssignment(ctx, asg("t1", 2, "s2", ports[0])); err != nil {
		t.Fatal(err)
	}
	if err := tc.store.PutAssignment(ctx, asg("t2", 2, "s2", ports[1])); err != nil {
		t.Fatal(err)
	}
	last := next("drained", func(st DrainStatus) bool { return st.Drained })
	if len(last.Workers) != 0 {
		t.Errorf("drained with workers %+v, want none", last.Workers)
	}
	wg.Wait()
	if drainErr != nil {
		t.Errorf("Drain: %v, want nil once drained", drainErr)
	}
	for _, pid := range []int32{pid1, pid2} {
		if alive(int(pid)) {
			t.Errorf("worker %d still runs after the drain", pid)
		}
	}
	// It stays up, idle and out of the cluster; a second drain says drained at once.
	if _, err := ReadStatus(ctx, dir); err != nil {
		t.Errorf("the drained supervisor's status: %v; want it still up", err)
	}
	var again []DrainStatus
	if err := Drain(ctx, dir, func(st DrainStatus) { again = append(again, st) }); err != nil || len(again) != 1 || !again[0].Drained {
		t.Errorf("a second drain: %v, %+v; want drained at once", err, again)
	}
	if registered(t, tc, "s1") {
		t.Error("the drained supervisor joined etcd again")
	}
	stop()
}

// TestSupervisorDeletesArtifactsOfKilledTopologies: every supervisor
// keeps a topology's artifact while it is assigned and its workers run,
// and deletes it once unused for supervisor.artifact.retention.secs
// after the topology is killed. A supervisor restarted meanwhile lists
// it again and deletes it too.
func TestSupervisorDeletesArtifactsOfKilledTopologies(t *testing.T) {
	tc := newTestCluster(t)
	ctx := t.Context()
	var dirs []string
	var slots []coord.Slot
	for _, id := range []string{"s1", "s2"} {
		ports := freePorts(t, 1)
		dir := shortDir(t)
		cfg := tc.supervisorConfig(t, dir, ports)
		cfg.ID, cfg.ArtifactRetention = id, time.Second
		runSupervisor(t, cfg)
		dirs = append(dirs, dir)
		slots = append(slots, coord.Slot{Supervisor: id, Host: "127.0.0.1", Port: ports[0]})
	}
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: slots}
	if err := tc.store.PutAssignment(ctx, asg); err != nil {
		t.Fatal(err)
	}
	// One topology over both supervisors: the sink on s1's worker, the
	// spout on s2's.
	var pids [2]int32
	tc.nimbus.waitReport(t, "both workers valid, the spout's acking", func(r *nimbuspb.ReportRequest) bool {
		for i, s := range slots {
			if r.Supervisor == s.Supervisor {
				validOn(s.Port, &pids[i], i == 1)(r)
			}
		}
		return pids[0] != 0 && pids[1] != 0
	})
	stored := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, "artifacts", tc.art.SHA256))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		return err == nil
	}
	// Kept while in use, well past the retention: 30 reports of 100 ms.
	n := 0
	tc.nimbus.waitReport(t, "30 reports with the workers running", func(*nimbuspb.ReportRequest) bool { n++; return n >= 30 })
	for _, dir := range dirs {
		if !stored(dir) {
			t.Fatalf("the artifact in use was deleted from %s", dir)
		}
	}
	// The topology is killed: its workers stop, then its artifact goes.
	if err := tc.store.DeleteAssignment(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	for i, dir := range dirs {
		tc.nimbus.waitReport(t, fmt.Sprintf("%s's artifact deleted", slots[i].Supervisor), func(r *nimbuspb.ReportRequest) bool {
			return r.Supervisor == slots[i].Supervisor && len(r.Workers) == 0 && !stored(dir)
		})
		if alive(int(pids[i])) {
			t.Errorf("%s's worker %d still runs", slots[i].Supervisor, pids[i])
		}
		ents, err := os.ReadDir(filepath.Join(dir, "artifacts"))
		if err != nil || len(ents) != 0 {
			t.Errorf("%s's artifacts directory after the kill: %v (%v); want it empty", slots[i].Supervisor, ents, err)
		}
	}
}
