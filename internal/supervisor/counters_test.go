//go:build unix

package supervisor

import (
	"syscall"
	"testing"

	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// totalAcked is topology's spouts' acked trees in a report's totals, and
// whether the report has totals of it.
func totalAcked(r *nimbuspb.ReportRequest, topology string) (int64, bool) {
	for _, t := range r.GetTotals() {
		if t.GetTopology() != topology {
			continue
		}
		var n int64
		for _, c := range t.GetComponents() {
			if c.GetKind() == "spout" {
				n += c.GetAcked()
			}
		}
		return n, true
	}
	return 0, false
}

// TestSupervisorTotalsKeepEndedWorkers: a topology's totals in the
// supervisor's reports count the workers that ended: one killed (-9)
// and restarted, and one killed while the supervisor was down, whose
// counters the restarted supervisor reads back from DIR/counters.json.
// From report to report they never go down; once the topology is
// assigned nowhere they are dropped.
func TestSupervisorTotalsKeepEndedWorkers(t *testing.T) {
	tc := newTestCluster(t)
	dir := shortDir(t)
	ports := freePorts(t, 1)
	cfg := tc.supervisorConfig(t, dir, ports)
	stopA := runSupervisor(t, cfg)
	ctx := t.Context()
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}}}
	if err := tc.store.PutAssignment(ctx, asg); err != nil {
		t.Fatal(err)
	}
	// high is the most acked the totals said so far; every report
	// checked must say at least as much.
	var high int64
	atLeast := func(what string, min int64) func(*nimbuspb.ReportRequest) bool {
		return func(r *nimbuspb.ReportRequest) bool {
			n, ok := totalAcked(r, "t1")
			if !ok {
				t.Fatalf("%s: a report without totals of t1: %v", what, r)
			}
			if n < high {
				t.Fatalf("%s: the totals say %d acked, after %d", what, n, high)
			}
			high = n
			return n > min
		}
	}
	var pid int32
	tc.nimbus.waitReport(t, "a valid worker acking", validOn(ports[0], &pid, true))
	tc.nimbus.waitReport(t, "totals above 50 acked", atLeast("the first worker", 50))
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	beforeKill := high
	var pid2 int32
	tc.nimbus.waitReport(t, "a new worker, valid and acking", func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, ports[0])
		return w != nil && w.Pid != pid && validOn(ports[0], &pid2, true)(r)
	})
	// The totals go on from the first worker's count.
	tc.nimbus.waitReport(t, "totals beyond the killed worker's", atLeast("after the kill", beforeKill))

	// The supervisor stops; its worker is killed meanwhile; a new one
	// in the same directory has its count from counters.json.
	stopA()
	tc.nimbus.mu.Lock()
	r := tc.nimbus.reports[len(tc.nimbus.reports)-1]
	tc.nimbus.mu.Unlock()
	sent, _ := totalAcked(r, "t1")
	high = max(high, sent)
	if err := syscall.Kill(int(pid2), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The new supervisor's adoption collects it (it is this test's
	// child) and finds it gone.
	runSupervisor(t, cfg)
	tc.nimbus.waitReport(t, "a third worker after the supervisor's restart", func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, ports[0])
		return w != nil && w.Pid != pid2 && w.Pid != pid && w.State == string(Valid) && w.Acked > 0
	})
	tc.nimbus.waitReport(t, "totals beyond both ended workers'", atLeast("after the supervisor's restart", sent))

	// Killed: assigned nowhere, its workers gone, its totals dropped.
	if err := tc.store.DeleteAssignment(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	tc.nimbus.waitReport(t, "no totals of t1", func(r *nimbuspb.ReportRequest) bool {
		_, ok := totalAcked(r, "t1")
		return !ok && len(r.Workers) == 0
	})
}
