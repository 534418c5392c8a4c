//go:build unix

package clustertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/coord"
)

// failureConfig makes the cluster's clocks short, so that the failure
// tests see a report and a reconcile within seconds, with leases of
// ttl seconds (nimbus.supervisor.timeout.secs).
func failureConfig(ttl int) string {
	return fmt.Sprintf(`supervisor.heartbeat.frequency.secs: 1
worker.heartbeat.frequency.secs: 1
nimbus.monitor.freq.secs: 1
nimbus.supervisor.timeout.secs: %d
`, ttl)
}

// shortLease is the lease of the tests that wait for one to expire.
const shortLease = 4

// generous bounds every wait for something that must happen: only a
// broken cluster, or a machine far busier than CI's, takes it.
const generous = 3 * time.Minute

// paced is the topology the failure tests run: the bench's word count
// at a fixed rate, light on a machine of two cores.
const paced = "bench-wordcount"

// submitPaced submits the paced word count with workers workers and
// waits until its trees are acked. It has a spout in each worker (the
// even scheduler deals them out), so that each worker reports acked
// trees of its own.
func submitPaced(t *testing.T, f *Fleet, workers int) {
	t.Helper()
	if code, out, _ := f.Gale(t, "submit", paced, "-p", "rate=200", "-p", fmt.Sprintf("spouts=%d", workers),
		"--workers", fmt.Sprint(workers), "--json"); code != 0 {
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
	f := Launch(t, Options{Supervisors: 2, SlotsPer: 2, Config: failureConfig(shortLease)})
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

// loseMachine kills a supervisor and then its workers with SIGKILL, as
// when its machine dies: the supervisor first, so that it does not
// restart them. It returns the workers' pids and the time of the kill.
// placed (the assignment's supervisors) is for the failure message.
func loseMachine(t *testing.T, victim *Proc, placed []string) ([]int, time.Time) {
	t.Helper()
	pids, err := victim.Workers()
	if err != nil || len(pids) == 0 {
		t.Fatalf("%s runs no worker (%v), though the assignment names it: %v", victim.Role, err, placed)
	}
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := killPID(pid); err != nil {
			t.Fatal(err)
		}
	}
	return pids, time.Now()
}

// killPID kills the process pid with SIGKILL.
func killPID(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 %d: %w", pid, err)
	}
	return nil
}

// pollCmd polls ok, which runs a command, every half second for up to
// generous, and fails the test with what did not happen.
func pollCmd(t *testing.T, what string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(generous)
	tk := time.NewTicker(500 * time.Millisecond)
	defer tk.Stop()
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("within %s: %s did not happen", generous, what)
		}
		<-tk.C
	}
	return time.Since(start)
}

// workerAcks are the trees acked by each worker of topology name, by pid,
// from the leader's latest reports; the supervisor of each too.
func workerAcks(t *testing.T, f *Fleet, name string) (map[int32]int64, map[int32]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	info, err := f.Get(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	acks, sups := map[int32]int64{}, map[int32]string{}
	for _, w := range info.GetWorkers() {
		if w.GetPid() != 0 {
			acks[w.GetPid()] = w.GetAcked()
			sups[w.GetPid()] = w.GetSupervisor()
		}
	}
	return acks, sups, nil
}

// supervisorsOf are the ids of the supervisors an assignment places
// workers on, one per worker.
func supervisorsOf(a coord.Assignment) []string {
	out := make([]string, len(a.Workers))
	for i, w := range a.Workers {
		out[i] = w.Supervisor
	}
	return out
}

// TestSupervisorKilledAlone: a supervisor killed with -9 leaves its
// workers running, and trees acked through them, while it is down;
// started again in the same directory, it adopts them: the same
// processes, whose counts carry on.
func TestSupervisorKilledAlone(t *testing.T) {
	needCluster(t)
	// A lease longer than the supervisor is down: nimbus must not take
	// it for a lost machine (TestMachineLost is that case).
	f := Launch(t, Options{Supervisors: 2, SlotsPer: 2,
		Config: failureConfig(60)})
	submitPaced(t, f, 2)
	var acks map[int32]int64
	var sups map[int32]string
	pollCmd(t, "both workers reporting acked trees", func() bool {
		var err error
		acks, sups, err = workerAcks(t, f, paced)
		n := 0
		for _, a := range acks {
			if a > 0 {
				n++
			}
		}
		return err == nil && n == 2
	})
	victim := f.Supervisors[0]
	orphans, err := victim.Workers()
	if err != nil || len(orphans) != 1 {
		t.Fatalf("%s's workers: %v (%v); want the one of the topology's two", victim.Role, orphans, err)
	}
	var otherPID int32
	for pid, sup := range sups {
		if sup != victim.ID {
			otherPID = pid
		}
	}
	if otherPID == 0 {
		t.Fatalf("no worker reported by a supervisor other than %s: %v", victim.ID, sups)
	}
	before := acks[int32(orphans[0])]
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("killed %s (pid %d); its worker %d had %d trees acked", victim.Role, victim.PID(), orphans[0], before)

	// While it is down, trees keep being acked: the other worker's
	// spout's trees go through the orphan's counters (fields grouping),
	// so they would fail if it had stopped.
	otherBefore := acks[otherPID]
	took := pollCmd(t, fmt.Sprintf("the other worker (pid %d) acking more trees than %d while %s is down", otherPID, otherBefore, victim.Role), func() bool {
		a, _, err := workerAcks(t, f, paced)
		return err == nil && a[otherPID] > otherBefore+200
	})
	t.Logf("trees acked through the orphan while its supervisor was down, seen %s after the kill", took.Round(time.Millisecond))
	if ws, err := victim.Workers(); err != nil || !slices.Equal(ws, orphans) {
		t.Fatalf("%s's workers while it is down: %v (%v); want %v still running", victim.Role, ws, err, orphans)
	}

	victim.Restart(t)
	t.Logf("%s restarted (pid %d) %s after the kill", victim.Role, victim.PID(), time.Since(killed).Round(time.Millisecond))
	took = pollCmd(t, fmt.Sprintf("the restarted %s reporting its adopted worker (pid %d) with more than %d trees acked", victim.Role, orphans[0], before), func() bool {
		a, s, err := workerAcks(t, f, paced)
		return err == nil && s[int32(orphans[0])] == victim.ID && a[int32(orphans[0])] > before
	})
	t.Logf("the adopted worker reported %s after the restart", took.Round(time.Millisecond))
	if ws, err := victim.Workers(); err != nil || !slices.Equal(ws, orphans) {
		t.Fatalf("%s's workers after its restart: %v (%v); want %v, adopted, not restarted", victim.Role, ws, err, orphans)
	}
	if !strings.Contains(victim.Output(), "adopting worker") {
		t.Errorf("the restarted %s did not log that it adopted its worker", victim.Role)
	}
}

// TestMachineLost: a supervisor and its workers killed with -9 together,
// as when a machine dies. Once its lease has expired (nimbus.supervisor.timeout.secs),
// nimbus moves its workers to the other supervisors, and only those: the
// worker elsewhere keeps running, the same process. Trees are acked
// again.
func TestMachineLost(t *testing.T) {
	needCluster(t)
	f := Launch(t, Options{Supervisors: 3, SlotsPer: 2, Config: failureConfig(shortLease)})
	submitPaced(t, f, 2)
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	a, err := f.Assignment(ctx, t, paced)
	if err != nil {
		t.Fatal(err)
	}
	placed := supervisorsOf(a)
	victim := f.SupervisorByID(placed[0])
	if victim == nil {
		t.Fatalf("assignment %v names a supervisor the fleet does not have", placed)
	}
	var survivor *Proc
	var survivorWorkers []int
	for _, s := range f.Supervisors {
		if s != victim && slices.Contains(placed, s.ID) {
			survivor = s
			survivorWorkers, _ = s.Workers()
		}
	}
	victimWorkers, killed := loseMachine(t, victim, placed)
	t.Logf("killed %s (%s) and its workers %v; assignment v%d on %v", victim.Role, victim.ID, victimWorkers, a.Version, placed)

	store := f.Store(t)
	var leaseGone time.Duration
	pollFor(t, fmt.Sprintf("%s's lease expiring (its record leaving /gale/supervisors/)", victim.ID), func() bool {
		sups, err := store.Supervisors(ctx)
		if err != nil {
			return false
		}
		for _, s := range sups {
			if s.ID == victim.ID {
				return false
			}
		}
		leaseGone = time.Since(killed)
		return true
	})
	t.Logf("%s's lease expired %s after the kill (nimbus.supervisor.timeout.secs: %d)", victim.ID, leaseGone.Round(time.Millisecond), shortLease)
	var now coord.Assignment
	pollFor(t, fmt.Sprintf("nimbus reassigning %s's worker to the other supervisors", victim.ID), func() bool {
		var err error
		now, err = f.Assignment(ctx, t, paced)
		return err == nil && len(now.Workers) == len(a.Workers) && !slices.Contains(supervisorsOf(now), victim.ID)
	})
	t.Logf("reassigned %s after the kill (%s after the lease expired): v%d on %v",
		time.Since(killed).Round(time.Millisecond), (time.Since(killed) - leaseGone).Round(time.Millisecond), now.Version, supervisorsOf(now))
	// Only the lost worker moved.
	for i, w := range a.Workers {
		if w.Supervisor != victim.ID && now.Workers[i] != w {
			t.Errorf("worker %d moved from %+v to %+v, though its supervisor lives", i, w, now.Workers[i])
		}
	}
	if survivor != nil {
		if ws, err := survivor.Workers(); err != nil || !slices.Equal(ws, survivorWorkers) {
			t.Errorf("%s's workers %v became %v (%v): a worker on a live supervisor was restarted", survivor.Role, survivorWorkers, ws, err)
		}
	}
	acked := waitAcked(t, f, paced, 0, "after the reassignment")
	waitAcked(t, f, paced, acked, "after the reassignment")
	t.Logf("trees acked again %s after the kill", time.Since(killed).Round(time.Millisecond))
}

// TestNimbusLeaderKilled: with two nimbuses, the leader killed with -9
// leaves the topology running; the standby, which holds its artifact,
// takes over, and a second topology can be submitted to it.
func TestNimbusLeaderKilled(t *testing.T) {
	needCluster(t)
	f := Launch(t, Options{Nimbuses: 2, Supervisors: 2, SlotsPer: 2, Config: failureConfig(shortLease)})
	submitPaced(t, f, 2)
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	leader, err := f.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var standby *Proc
	for _, n := range f.Nimbuses {
		if n != leader {
			standby = n
		}
	}
	info, err := f.Get(ctx, paced)
	if err != nil {
		t.Fatal(err)
	}
	sha := info.GetArtifact().GetSha256()
	store := f.Store(t)
	pollFor(t, fmt.Sprintf("the standby %s holding the topology's artifact %s", standby.ID, sha), func() bool {
		hs, err := store.Holders(ctx, sha)
		return err == nil && slices.Contains(hs, standby.ID)
	})
	workers, err := f.Workers()
	if err != nil {
		t.Fatal(err)
	}
	acks, _, err := workerAcks(t, f, paced)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("killed the leader %s (%s); workers %v, acked %v", leader.Role, leader.ID, workers, acks)

	took := pollFor(t, fmt.Sprintf("the standby %s leading", standby.ID), func() bool {
		l, err := f.Leader(ctx)
		return err == nil && l == standby
	})
	t.Logf("%s leads %s after the kill", standby.Role, took.Round(time.Millisecond))
	pollCmd(t, "gale submit wordcount succeeding against the new leader", func() bool {
		if code, _, _ := f.Gale(t, "submit", "wordcount", "--workers", "2"); code == 0 {
			return true
		}
		// A submit that failed on its way back may have landed.
		ts, err := f.TryList(t)
		return err == nil && slices.ContainsFunc(ts, func(tp Topology) bool { return tp.Name == "wordcount" })
	})
	t.Logf("a second topology was submitted %s after the kill", time.Since(killed).Round(time.Millisecond))
	// The first topology ran on through it all: the same workers, whose
	// counts carry on in the new leader's reports.
	pollCmd(t, "the new leader's reports showing every worker of the first topology with more trees acked than before the kill", func() bool {
		now, _, err := workerAcks(t, f, paced)
		if err != nil || len(now) != len(acks) {
			return false
		}
		for pid, a := range acks {
			if now[pid] <= a {
				return false
			}
		}
		return true
	})
	waitAcked(t, f, "wordcount", 0, "the second topology, after its submit")
	now, err := f.Workers()
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range workers {
		if !slices.Contains(now, pid) {
			t.Errorf("worker %d of the first topology is gone after the leader's death (workers now %v)", pid, now)
		}
	}

	// The old leader, started again, stands by: one leader, two members.
	leader.Restart(t)
	var last string
	if err := Poll(ctx, func() bool {
		info, err := f.ClusterInfo(ctx)
		if err != nil {
			last = err.Error()
			return false
		}
		var leaders []string
		for _, n := range info.GetNimbuses() {
			if n.GetLeader() {
				leaders = append(leaders, n.GetId())
			}
		}
		last = fmt.Sprintf("leader %s, %d nimbuses, leading %v", info.GetLeaderId(), len(info.GetNimbuses()), leaders)
		return info.GetLeaderId() == standby.ID && len(info.GetNimbuses()) == 2 && slices.Equal(leaders, []string{standby.ID})
	}); err != nil {
		t.Fatalf("the restarted %s did not stand by with %s leading (last: %s)", leader.Role, standby.Role, last)
	}
}

// etcdOutage is how long TestEtcdDown keeps etcd down, as the issue asks.
const etcdOutage = 30 * time.Second

// supervisorsAcked sums the trees acked by topology name's workers as
// the supervisors themselves report them (gale supervisor status):
// what flows with neither etcd nor nimbus answering.
func supervisorsAcked(t *testing.T, f *Fleet, name string) (int64, []int, error) {
	t.Helper()
	var acked int64
	var pids []int
	for _, s := range f.Supervisors {
		r, err := s.SupervisorStatus(context.Background())
		if err != nil {
			return 0, nil, err
		}
		for _, w := range r.Workers {
			if strings.HasPrefix(w.Topology, name+"-") {
				acked += w.Acked
				pids = append(pids, w.PID)
			}
		}
	}
	slices.Sort(pids)
	return acked, pids, nil
}

// TestEtcdDown: with etcd down for 30 s, killed or paused, the topology
// keeps flowing (its trees acked, as the supervisors report them), no
// process of the cluster exits, a worker that crashes is restarted, and
// gale list says that nimbus cannot reach etcd;
// once etcd is back on its data and port, nimbus leads again with every
// supervisor, and a rebalance and a kill work.
func TestEtcdDown(t *testing.T) {
	needCluster(t)
	// Killed, and restarted on its data and port: its clients' connections
	// are refused. Paused (SIGSTOP) and resumed: they stay open and
	// nothing answers on them, as in a partition.
	t.Run("killed", func(t *testing.T) { testEtcdDown(t, false) })
	t.Run("paused", func(t *testing.T) { testEtcdDown(t, true) })
}

func testEtcdDown(t *testing.T, pause bool) {
	f := Launch(t, Options{Supervisors: 2, SlotsPer: 2, Config: failureConfig(shortLease)})
	submitPaced(t, f, 2)
	var acked int64
	var pids []int
	pollCmd(t, "the supervisors' status showing both workers with trees acked", func() bool {
		var err error
		acked, pids, err = supervisorsAcked(t, f, paced)
		return err == nil && len(pids) == 2 && acked > 0
	})
	down := f.Etcd.Kill
	if pause {
		down = f.Etcd.Pause
	}
	if err := down(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("etcd (pid %d) down (paused: %v); the workers %v had %d trees acked", f.Etcd.PID(), pause, pids, acked)

	// Every few seconds through the outage: the same workers, acking
	// more; nimbus and the supervisors running.
	tk := time.NewTicker(3 * time.Second)
	defer tk.Stop()
	samples := []int64{acked}
	for time.Since(killed) < etcdOutage {
		<-tk.C
		a, now, err := supervisorsAcked(t, f, paced)
		if err != nil {
			t.Fatalf("%s into etcd's outage: %v", time.Since(killed).Round(time.Second), err)
		}
		if !slices.Equal(now, pids) {
			t.Fatalf("%s into etcd's outage the workers are %v, want %v running on", time.Since(killed).Round(time.Second), now, pids)
		}
		for _, p := range append(slices.Clone(f.Nimbuses), f.Supervisors...) {
			if !p.Running() {
				t.Fatalf("%s exited %s into etcd's outage: %v", p.Role, time.Since(killed).Round(time.Second), p.exitErr())
			}
		}
		samples = append(samples, a)
	}
	t.Logf("trees acked every 3 s through the outage: %v", samples)
	// Past the leases' expiry, when no nimbus leads and nothing can
	// reach etcd, trees are still acked: the count grows over the
	// outage's second half.
	if mid, end := samples[len(samples)/2], samples[len(samples)-1]; end <= mid {
		t.Fatalf("trees acked through the outage, every 3 s: %v; no more acked in its second half", samples)
	}

	// A command that asks nimbus hears that etcd is out of reach.
	if code, _, errOut := f.Gale(t, "list"); code == 0 || !strings.Contains(errOut, "cannot reach etcd") {
		t.Errorf("gale list with etcd down: exit %d, stderr %q; want a failure saying nimbus cannot reach etcd", code, errOut)
	}

	// A worker that crashes now is started again by its supervisor,
	// which has what it needs (the assignment, the artifact) at hand.
	sup := f.Supervisors[0]
	old, err := sup.Workers()
	if err != nil || len(old) != 1 {
		t.Fatalf("%s's workers: %v (%v), want one", sup.Role, old, err)
	}
	if err := killPID(old[0]); err != nil {
		t.Fatal(err)
	}
	var now []int
	took := pollFor(t, fmt.Sprintf("%s restarting its worker (pid %d) killed while etcd is down", sup.Role, old[0]), func() bool {
		now, err = sup.Workers()
		return err == nil && len(now) == 1 && now[0] != old[0]
	})
	t.Logf("%s restarted its killed worker %d as %d, %s after the kill, with etcd down", sup.Role, old[0], now[0], took.Round(time.Millisecond))

	if pause {
		if err := f.Etcd.Resume(); err != nil {
			t.Fatal(err)
		}
	} else {
		f.Etcd.Restart(t)
	}
	back := time.Now()
	t.Logf("etcd back on %s after %s down", f.Etcd.Addr, back.Sub(killed).Round(time.Millisecond))
	f.WaitSupervisors(t, len(f.Supervisors))
	t.Logf("a nimbus leads with every supervisor again %s after etcd's return", time.Since(back).Round(time.Millisecond))
	pollCmd(t, "gale rebalance succeeding after etcd's return", func() bool {
		code, _, _ := f.Gale(t, "rebalance", paced, "-w", "0")
		return code == 0
	})
	t.Logf("a rebalance succeeded %s after etcd's return", time.Since(back).Round(time.Millisecond))
	after := waitAcked(t, f, paced, 0, "after etcd's return")
	waitAcked(t, f, paced, after, "after etcd's return")
	if code, _, _ := f.Gale(t, "kill", paced, "-w", "0"); code != 0 {
		t.Fatalf("gale kill after etcd's return: exit %d", code)
	}
	pollCmd(t, "the killed topology's workers stopping and its listing gone", func() bool {
		ts, err := f.TryList(t)
		ws, werr := f.Workers()
		return err == nil && werr == nil && len(ts) == 0 && len(ws) == 0
	})
	t.Logf("killed and gone %s after etcd's return", time.Since(back).Round(time.Millisecond))
}
