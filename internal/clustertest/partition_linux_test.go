//go:build linux

package clustertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/netnstest"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/procstat"
)

// partitionTimeout bounds each wait of the partition tests: generous, for
// a busy 2-core machine (the waits are polls; none is asserted on).
const partitionTimeout = 4 * time.Minute

// partitionTopology is the topology the partition tests run.
const partitionTopology = "bench-wordcount"

// partitionLease is nimbus.supervisor.timeout.secs in the partition
// tests: the lease a cut-off supervisor loses.
const partitionLease = 4

// TestPartitionedSupervisor: a machine cut off from the network, its
// supervisor and workers running on. The supervisor's lease expires and
// nimbus moves its worker to the other supervisors; acking resumes
// there; the cut-off worker keeps running all the while (its supervisor
// needs neither etcd nor nimbus to keep it) until every connection it
// had has timed out. When the partition heals, the stale worker stops,
// the healed supervisor rejoins and runs nothing of the topology (no
// second copy of the moved worker), no worker of the new assignment ever
// completed a hello with the stale one, and acking goes on.
func TestPartitionedSupervisor(t *testing.T) { partitionScenario(t, false) }

// TestSupervisorCutOffFromEtcdAndNimbus: a supervisor cut off from etcd
// and nimbus while its worker still reaches the other workers. Nimbus
// moves the worker; from then on the old copy and the new one both run
// and both reach the new assignment's workers, which refuse the old
// copy's hellos (the assignment's fingerprint) and take the new one's,
// so that only one copy exchanges tuples with them. When the partition
// heals, the supervisor converges on the new assignment as above.
func TestSupervisorCutOffFromEtcdAndNimbus(t *testing.T) { partitionScenario(t, true) }

// partitionScenario runs the two partition tests. The cluster: etcd and
// nimbus on host "ctl", supervisors on hosts "a", "b" and "c" (network
// namespaces of netnstest, each its own address), the bench's paced word
// count in ack mode (failed trees replay) on three workers spread over
// the supervisors, with one spout. The host cut off is the one whose worker
// runs the spout, so that the stale copy is the one that makes trees.
// partial cuts it from ctl only, else from everything.
func partitionScenario(t *testing.T, partial bool) {
	needCluster(t)
	n := netnstest.New(t)
	ctl := n.Host("ctl")
	hosts := []*netnstest.Host{n.Host("a"), n.Host("b"), n.Host("c")}

	token := make([]byte, 16)
	rand.Read(token)
	// The token: nimbus binds beyond loopback, where mutating calls need
	// it (the fleet's client file for gale submit carries it too).
	f := NewFleet(t, Options{SlotsPer: 2, Config: fmt.Sprintf(`nimbus.auth.token: %s
nimbus.supervisor.timeout.secs: %d
nimbus.monitor.freq.secs: 1
supervisor.heartbeat.frequency.secs: 1
worker.heartbeat.frequency.secs: 1
`, hex.EncodeToString(token), partitionLease)})
	on := func(h *netnstest.Host) Host { return Host{Addr: h.Addr(), Command: h.Command} }
	f.StartEtcd(t, on(ctl))
	f.StartNimbus(t, on(ctl))
	sups := map[string]*Proc{} // by host address
	for _, h := range hosts {
		sups[h.Addr()] = f.StartSupervisor(t, on(h))
	}
	t.Cleanup(func() { // before the fleet's, which removes the logs
		if !t.Failed() {
			return
		}
		for _, h := range hosts {
			logs, _ := filepath.Glob(filepath.Join(sups[h.Addr()].Dir, "workers", "*", "worker.log"))
			for _, p := range logs {
				b, _ := os.ReadFile(p)
				t.Logf("host %s: %s:\n%s", h.Name(), p, b)
			}
		}
	})
	f.WaitSupervisors(t, 3)

	// The paced word count (light on a small machine) with one spout,
	// whose failed trees replay; submitted from the test's own namespace.
	if code, out, _ := f.Gale(t, "submit", partitionTopology, "-p", "rate=200", "-p", "spouts=1", "--workers", "3"); code != 0 {
		t.Fatalf("gale submit: exit %d\n%s", code, out)
	}
	submitted := time.Now()
	ctx := t.Context()
	get := func() (*nimbuspb.TopologyInfo, string) {
		info, err := f.Get(ctx, partitionTopology)
		if err != nil {
			return nil, err.Error()
		}
		return info, describe(info)
	}

	// Every worker of the first assignment reports, and trees are acked.
	var v1 *nimbuspb.TopologyInfo
	waitFor(t, "the word count's 3 workers report and ack", func() (bool, string) {
		info, why := get()
		v1 = info
		cur := current(info)
		return len(cur) == 3 && ackedBy(cur) > 0, why
	})
	t.Logf("first assignment (version %d, fingerprint %s) reported and acking %s after submit", v1.Assignment.Version, v1.Assignment.Fingerprint, since(submitted))
	var victim *netnstest.Host
	for _, w := range current(v1) {
		if w.Emitted > 0 {
			for _, h := range hosts {
				if h.Addr() == w.Host {
					victim = h
				}
			}
		}
	}
	if victim == nil {
		t.Fatalf("no worker of host a, b or c emits: %s", describe(v1))
	}
	var others []*netnstest.Host
	for _, h := range hosts {
		if h != victim {
			others = append(others, h)
		}
	}
	stale := workerPIDs(t, sups[victim.Addr()].Dir)
	if len(stale) == 0 {
		t.Fatalf("host %s runs the spout's worker, but no worker process is under %s", victim.Name(), sups[victim.Addr()].Dir)
	}
	// The workers that stay, which must be reassigned rather than
	// restarted.
	stayed := map[string]int{} // host:port → pid
	for _, w := range current(v1) {
		if w.Host != victim.Addr() {
			stayed[net.JoinHostPort(w.Host, strconv.Itoa(int(w.Port)))] = int(w.Pid)
		}
	}

	if partial {
		t.Logf("cutting host %s (%s), which runs worker processes %v, from host ctl (etcd, nimbus)", victim.Name(), victim.Addr(), stale)
		victim.CutFrom(ctl)
	} else {
		t.Logf("cutting host %s (%s), which runs worker processes %v, from the network", victim.Name(), victim.Addr(), stale)
		victim.Cut()
	}
	cut := time.Now()
	var v2 *nimbuspb.TopologyInfo
	waitFor(t, "nimbus moves the cut-off host's workers", func() (bool, string) {
		info, why := get()
		v2 = info
		return info != nil && info.Assignment != nil && info.Assignment.Version > v1.Assignment.Version &&
			!slices.ContainsFunc(info.Assignment.Workers, func(s *nimbuspb.WorkerSlot) bool { return s.Host == victim.Addr() }), why
	})
	t.Logf("new assignment (version %d, fingerprint %s) %s after the cut (lease %d s)", v2.Assignment.Version, v2.Assignment.Fingerprint, since(cut), partitionLease)
	// Acking resumes on the new assignment: every one of its workers
	// reports it, and the acked count of its workers grows.
	var base int64 = -1
	waitFor(t, "acking resumes on the new assignment", func() (bool, string) {
		info, why := get()
		if info == nil {
			return false, why
		}
		if info.Assignment.Version != v2.Assignment.Version {
			t.Fatalf("the assignment changed again during the cut: %s", why)
		}
		cur := current(info)
		if len(cur) != 3 || slices.ContainsFunc(cur, func(w *nimbuspb.WorkerReport) bool {
			return w.AssignmentFingerprint != v2.Assignment.Fingerprint
		}) {
			return false, why
		}
		if base < 0 {
			base = ackedBy(cur)
		}
		return ackedBy(cur) > base, why
	})
	t.Logf("acking resumed %s after the cut", since(cut))
	for hp, pid := range stayed {
		if !alive(pid) {
			t.Errorf("the worker at %s (pid %d), which did not move, was restarted: want it reassigned in place", hp, pid)
		}
	}
	v2Logs := workerLogs(sups, v2)
	staleLogs := workerLogs(sups, v1)[victim.Addr()]
	if partial {
		// The stale copy still reaches the new assignment's workers, and
		// they refuse it.
		waitFor(t, "the new assignment's workers refuse the stale worker", func() (bool, string) {
			n := 0
			for _, h := range others {
				for _, p := range v2Logs[h.Addr()] {
					n += countLines(t, p, `msg="refused a worker connection"`, "remote="+victim.Addr()+":")
				}
			}
			return n > 0, fmt.Sprintf("%d refusals", n)
		})
		t.Logf("the new assignment's workers refused the stale worker %s after the cut", since(cut))
		// Refused for good, the stale copy fails and exits; its
		// supervisor, cut off from etcd, does not start it again from
		// the assignment it holds.
		waitFor(t, "the refused stale worker exits, and its supervisor holds its restart", func() (bool, string) {
			var left []int
			for _, pid := range stale {
				if alive(pid) {
					left = append(left, pid)
				}
			}
			out := sups[victim.Addr()].Output()
			if n := strings.Count(out, `msg="launched worker"`); n > len(stale) {
				t.Fatalf("the cut-off supervisor launched %d workers, %d of them while cut off: want it to start no stale copy again from the assignment it holds\n%s", n, n-len(stale), out)
			}
			held := strings.Contains(out, `msg="holding a worker's start until the assignments are read again"`)
			return len(left) == 0 && held, fmt.Sprintf("still running: %v; restart held: %v", left, held)
		})
		t.Logf("the stale worker exited and its restart was held %s after the cut", since(cut))
	} else {
		// The supervisor needs neither etcd nor nimbus to keep its
		// workers: they run on until every connection they had has
		// timed out (no frame from the peers for peerIdleTimeout).
		// Every connection a peer had opened to it: a peer still dialling
		// it when the cut came (a slow start) never had one to lose.
		waitFor(t, "the stale worker's connections time out", func() (bool, string) {
			n, had := 0, 0
			for _, p := range staleLogs {
				n += countLines(t, p, `msg="closed an idle worker connection"`)
				had += countLines(t, p, `msg="accepted a connection from a peer worker"`)
			}
			return had > 0 && n >= had, fmt.Sprintf("%d of the %d connections peers had opened to it timed out", n, had)
		})
		t.Logf("the stale worker's connections timed out %s after the cut", since(cut))
		for _, pid := range stale {
			if !alive(pid) {
				t.Errorf("worker process %d of the cut-off host ended during the cut: want it running, its supervisor cut off", pid)
			}
		}
	}
	if partial {
		victim.HealFrom(ctl)
	} else {
		victim.Heal()
	}
	healed := time.Now()
	waitFor(t, "the stale workers stop after the heal", func() (bool, string) {
		var left []int
		for _, pid := range stale {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		return len(left) == 0, fmt.Sprintf("still running: %v", left)
	})
	t.Logf("the stale workers stopped %s after the heal", since(healed))
	// The healed supervisor rejoins and converges on the new assignment:
	// it runs no worker of it (nothing of the topology was moved back),
	// so no copy of a moved worker runs twice.
	waitFor(t, "the healed supervisor rejoins, running no worker", func() (bool, string) {
		info, err := f.ClusterInfo(ctx)
		if err != nil {
			return false, err.Error()
		}
		ps := workerPIDs(t, sups[victim.Addr()].Dir)
		return len(info.Supervisors) == 3 && len(ps) == 0, fmt.Sprintf("%d supervisors; worker processes on %s: %v", len(info.Supervisors), victim.Name(), ps)
	})
	t.Logf("the healed supervisor rejoined, running nothing, %s after the heal", since(healed))
	var after int64 = -1
	waitFor(t, "acking goes on after the heal", func() (bool, string) {
		info, why := get()
		if info == nil {
			return false, why
		}
		if info.Assignment.Version != v2.Assignment.Version {
			t.Fatalf("the assignment changed after the heal: %s; want the moved workers to stay where they are", why)
		}
		cur := current(info)
		if after < 0 {
			after = ackedBy(cur)
		}
		return ackedBy(cur) > after, why
	})
	// Exactly one worker process per slot of the new assignment, on the
	// hosts that stayed, and none on the healed one.
	for _, h := range hosts {
		ps := workerPIDs(t, sups[h.Addr()].Dir)
		want := 0
		for _, s := range v2.Assignment.Workers {
			if s.Host == h.Addr() {
				want++
			}
		}
		if len(ps) != want {
			t.Errorf("host %s runs worker processes %v, want %d (the new assignment's slots there)", h.Name(), ps, want)
		}
	}
	// The cut-off supervisor launched its first workers and nothing
	// since: no stale copy started again from the assignment it held
	// while cut off, nor after the heal.
	if n := strings.Count(sups[victim.Addr()].Output(), `msg="launched worker"`); n != len(stale) {
		t.Errorf("the cut-off supervisor launched %d workers, want %d (the first assignment's): a stale copy was started again", n, len(stale))
	}

	// The hellos: after the move, no worker of the new assignment accepted
	// a connection from the cut-off host, and the stale workers accepted
	// none that carried the new assignment.
	checkHellos(t, victim, others, sups, v1, v2)
}

// workerLogs returns the log files of info's workers, by host address.
func workerLogs(sups map[string]*Proc, info *nimbuspb.TopologyInfo) map[string][]string {
	out := map[string][]string{}
	for _, s := range info.Assignment.Workers {
		out[s.Host] = append(out[s.Host], filepath.Join(sups[s.Host].Dir, "workers", strconv.Itoa(int(s.Port)), "worker.log"))
	}
	return out
}

// countLines counts the lines of the file at path that hold every one of
// subs; a file not there yet has none.
func countLines(t *testing.T, path string, subs ...string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if !slices.ContainsFunc(subs, func(s string) bool { return !strings.Contains(l, s) }) {
			n++
		}
	}
	return n
}

// checkHellos reads the worker logs of every host and fails the test if a
// worker of the new assignment v2 completed a hello with a stale worker
// of victim: for a worker of v1 that stayed, an accepted connection from
// victim's address after its "peer worker moved" line; for a worker
// started with v2, any accepted connection from victim's address; for a
// stale worker, an accepted connection carrying another assignment than
// v1's. (A handshake that ended as the worker was reassigned could log
// its acceptance after the move, the move closing it; the stale workers
// do not reconnect then: their connections are up until the move breaks
// them, or cut.) It logs the hellos the new workers refused from victim.
func checkHellos(t *testing.T, victim *netnstest.Host, others []*netnstest.Host, sups map[string]*Proc, v1, v2 *nimbuspb.TopologyInfo) {
	t.Helper()
	inV1 := map[string]bool{}
	for _, s := range v1.Assignment.Workers {
		inV1[net.JoinHostPort(s.Host, strconv.Itoa(int(s.Port)))] = true
	}
	from := regexp.MustCompile(`remote=` + regexp.QuoteMeta(victim.Addr()) + `:`)
	refused := 0
	for _, h := range others {
		for _, s := range v2.Assignment.Workers {
			if s.Host != h.Addr() {
				continue
			}
			slot := net.JoinHostPort(s.Host, strconv.Itoa(int(s.Port)))
			lines := readLog(t, filepath.Join(sups[h.Addr()].Dir, "workers", strconv.Itoa(int(s.Port)), "worker.log"))
			moved := !inV1[slot] // a worker started with v2 has moved peers from its start
			if !moved {
				if !slices.ContainsFunc(lines, func(l string) bool {
					return strings.Contains(l, `msg="peer worker moved"`) && strings.Contains(l, "assignment="+v2.Assignment.Fingerprint)
				}) {
					t.Errorf("the worker at %s did not log its move to assignment %s (\"peer worker moved\"): was it reassigned?", slot, v2.Assignment.Fingerprint)
				}
			}
			took := 0 // connections of the new assignment accepted
			for _, l := range lines {
				if strings.Contains(l, `msg="peer worker moved"`) {
					moved = true
				}
				if strings.Contains(l, `msg="accepted a connection from a peer worker"`) &&
					strings.Contains(l, "assignment="+v2.Assignment.Fingerprint) {
					took++
				}
				if !from.MatchString(l) {
					continue
				}
				switch {
				case moved && strings.Contains(l, `msg="accepted a connection from a peer worker"`):
					t.Errorf("the worker at %s, of the new assignment, accepted a stale worker of host %s: %s", slot, victim.Name(), l)
				case strings.Contains(l, `msg="refused a worker connection"`):
					refused++
				}
			}
			// The new copy and the workers that stayed do connect: the
			// log shows accepted hellos, so their absence above counts.
			if took == 0 {
				t.Errorf("the worker at %s logged no connection accepted with the new assignment %s: want its peers' (\"accepted a connection from a peer worker\")", slot, v2.Assignment.Fingerprint)
			}
		}
	}
	t.Logf("the new assignment's workers refused %d connections from the stale workers of host %s", refused, victim.Name())
	logs, _ := filepath.Glob(filepath.Join(sups[victim.Addr()].Dir, "workers", "*", "worker.log"))
	for _, p := range logs {
		for _, l := range readLog(t, p) {
			if strings.Contains(l, `msg="accepted a connection from a peer worker"`) && !strings.Contains(l, "assignment="+v1.Assignment.Fingerprint) {
				t.Errorf("a worker of host %s accepted a connection of another assignment than the first: %s", victim.Name(), l)
			}
			if strings.Contains(l, "cannot work with peer worker") || strings.Contains(l, "not retrying") {
				t.Logf("stale worker: %s", l)
			}
		}
	}
}

func readLog(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("worker log: %v", err)
		return nil
	}
	return strings.Split(string(b), "\n")
}

// current returns the worker reports of info's assignment: one per slot
// of it at most, from the supervisor the slot is on.
func current(info *nimbuspb.TopologyInfo) []*nimbuspb.WorkerReport {
	if info == nil || info.Assignment == nil {
		return nil
	}
	var out []*nimbuspb.WorkerReport
	for _, s := range info.Assignment.Workers {
		for _, w := range info.Workers {
			if w.Supervisor == s.Supervisor && w.Port == s.Port && w.Host == s.Host {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

func ackedBy(ws []*nimbuspb.WorkerReport) int64 {
	var n int64
	for _, w := range ws {
		n += w.Acked
	}
	return n
}

func describe(info *nimbuspb.TopologyInfo) string {
	var b strings.Builder
	if info == nil {
		return "no topology"
	}
	if a := info.Assignment; a != nil {
		fmt.Fprintf(&b, "assignment v%d %s:", a.Version, a.Fingerprint)
		for _, s := range a.Workers {
			fmt.Fprintf(&b, " %s:%d", s.Host, s.Port)
		}
	} else {
		b.WriteString("no assignment")
	}
	b.WriteString("; reports:")
	for _, w := range info.Workers {
		fmt.Fprintf(&b, " [%s:%d pid %d %s %s emitted %d acked %d]", w.Host, w.Port, w.Pid, w.State, w.AssignmentFingerprint, w.Emitted, w.Acked)
	}
	return b.String()
}

// workerPIDs returns the worker processes of the supervisor in dir: those
// run with a spec under it.
func workerPIDs(t *testing.T, dir string) []int {
	t.Helper()
	ps, err := procstat.Under(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range ps {
		if slices.Contains(p.Args, "--spec") && alive(p.PID) {
			out = append(out, p.PID)
		}
	}
	slices.Sort(out)
	return out
}

// alive reports whether process pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || !strings.HasPrefix(string(b[i+1:]), " Z")
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// waitFor polls ok until it is true, failing the test after
// partitionTimeout with what ok said last.
func waitFor(t *testing.T, what string, ok func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), partitionTimeout)
	defer cancel()
	var last string
	if err := Poll(ctx, func() bool {
		var done bool
		done, last = ok()
		return done
	}); err != nil {
		t.Fatalf("%s: not within %s; last: %s", what, partitionTimeout, last)
	}
}
