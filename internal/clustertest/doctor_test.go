//go:build unix

package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gale-stream/gale/internal/bench/doctorfaults"
	"github.com/gale-stream/gale/internal/doctor"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// doctorJSON is the part of `gale doctor --json` the tests read.
type doctorJSON struct {
	Topology string           `json:"topology"`
	Problems int              `json:"problems"`
	Findings []doctor.Finding `json:"findings"`
	Numbers  doctor.Numbers   `json:"numbers"`
}

// galeResult is a gale command run in the background.
type galeResult struct {
	code           int
	stdout, stderr string
	err            error
}

// galeAsync runs the gale binary with args in the background, up to two
// minutes; the channel gets its result.
func galeAsync(args ...string) <-chan galeResult {
	ch := make(chan galeResult, 1)
	go func() { // ends with the command, within its timeout
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, Binary(), args...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		r := galeResult{stdout: out.String(), stderr: errOut.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		} else {
			r.err = err
		}
		ch <- r
	}()
	return ch
}

// TestDoctorStagedFaults: gale doctor names the cause of each of the
// faults staged on a real dev cluster, and no other: a bolt too slow, max
// spout pending far too low, a message timeout shorter than the
// processing, a hot key, a bolt that never acks, and more workers asked
// than are free with another topology on the cluster; and finds no
// problem in the same topology without a fault. Then the fix it prints
// (its own rebalance or resubmission command; for the faults in the
// code, the topology resubmitted without them, as its fix says) is
// applied, and doctor no longer finds the fault. The slow bolt is also
// watched with gale monitor.
func TestDoctorStagedFaults(t *testing.T) {
	needCluster(t)
	// Reports each second, so that an 8 s sampling sees eight of them.
	c := Start(t, Options{Supervisors: 2, SlotsPer: 2, Config: "supervisor.heartbeat.frequency.secs: 1\n"})
	name := doctorfaults.TopologyName
	for _, tc := range []struct {
		fault     string
		params    []string
		kind      string
		component string
		fix       string // in the finding's fix
		monitor   bool
		// workers is the submission's --workers (0: the topology's).
		workers int
		// other is a topology submitted first, to hold slots.
		other []string
		// pending: the topology does not run until the fix.
		pending bool
		// fixed, for a fault in the code, is the parameters the topology
		// is resubmitted with once its code follows the fix.
		fixed []string
	}{
		// No fault: paced well within its means, with room under its cap.
		{fault: "none", params: []string{"rate=100", "delay=1ms", "max-spout-pending=1000"}},
		// 50 tuples/s into a bolt that takes 20 ms each.
		{fault: "a bolt too slow", params: []string{"rate=50", "delay=20ms", "max-spout-pending=50"},
			kind: doctor.KindBoltSaturated, component: "work", fix: "gale rebalance " + name + " -e work=", monitor: true},
		// work's 8 executors are idle most of the time: one tree in flight.
		{fault: "max spout pending far too low", params: []string{"max-spout-pending=1", "delay=5ms", "work-executors=8", "work-tasks=8"},
			kind: doctor.KindSpoutThrottled, component: "source", fix: "-c topology.max.spout.pending="},
		// 1.5 s a tuple on 4 executors at 1 tuple/s: not saturated, but
		// every tree outlives the 1 s timeout.
		{fault: "message timeout shorter than the processing", params: []string{"delay=1500ms", "timeout=1", "rate=1", "work-executors=4"},
			kind: doctor.KindTimeoutTooShort, component: "work", fix: "-c topology.message.timeout.secs="},
		// 90% of the tuples carry one key into work's 8 executors, fields
		// grouped: one executor saturated, the others idle. More
		// executors would not help; a better key does.
		{fault: "a hot key", params: []string{"hot-key=0.9", "rate=100", "delay=12ms", "work-executors=8", "max-spout-pending=50"},
			kind: doctor.KindBoltSkewed, component: "work", fix: "partialKeyGrouping",
			fixed: []string{"hot-key=0", "rate=100", "delay=12ms", "work-executors=8", "max-spout-pending=50"}},
		// work executes its input and never acks it.
		{fault: "a bolt that never acks", params: []string{"no-ack=true", "rate=50", "max-spout-pending=1000"},
			kind: doctor.KindNotAcking, component: "work", fix: "make work ack each input",
			fixed: []string{"rate=50", "max-spout-pending=1000"}},
		// 5 workers asked of 4 slots, one of which another topology holds.
		{fault: "more workers asked than are free", params: []string{"rate=10"}, workers: 5, pending: true,
			other: []string{"bench-wordcount", "--workers", "1", "-p", "rate=10"},
			kind:  doctor.KindShape, fix: "gale rebalance " + name + " -n 3"},
	} {
		t.Run(strings.ReplaceAll(tc.fault, " ", "_"), func(t *testing.T) {
			if tc.other != nil {
				if code, _, _ := c.Gale(t, append(append([]string{"submit"}, tc.other...), "--nimbus", c.Nimbus)...); code != 0 {
					t.Fatalf("gale submit %v: exit %d", tc.other, code)
				}
				defer killAndWait(t, c, tc.other[0])
				waitFlowing(t, c, tc.other[0])
			}
			args := []string{"submit", name, "--nimbus", c.Nimbus}
			for _, p := range tc.params {
				args = append(args, "-p", p)
			}
			if tc.workers > 0 {
				args = append(args, "--workers", strconv.Itoa(tc.workers))
			}
			if code, _, _ := c.Gale(t, args...); code != 0 {
				t.Fatalf("gale submit: exit %d", code)
			}
			defer killAndWait(t, c, name)
			if !tc.pending {
				waitFlowing(t, c, name)
			}
			var mon <-chan galeResult
			if tc.monitor {
				mon = galeAsync("monitor", name, "--nimbus", c.Nimbus, "--count", "3", "--interval", "2s")
			}
			tr, jr, r := runDoctor(t, c, name, tc.fault)
			if tc.kind == "" {
				if tr.code != 0 || jr.code != 0 || r.Problems != 0 || !strings.Contains(tr.stdout, "no problem found: workers 1/1") {
					t.Errorf("no fault: exit codes %d, %d, %d problems; want 0, 0, 0 and \"no problem found\"\n%s", tr.code, jr.code, r.Problems, jr.stdout)
				}
				return
			}
			if tr.code != 1 || jr.code != 1 {
				t.Errorf("exit codes: got %d (text), %d (--json); want 1, a problem found", tr.code, jr.code)
			}
			var problems []string
			var found *doctor.Finding
			for i, f := range r.Findings {
				if f.Problem() {
					problems = append(problems, f.Kind)
				}
				if f.Kind == tc.kind {
					found = &r.Findings[i]
				}
			}
			if !slices.Equal(problems, []string{tc.kind}) || r.Problems != 1 {
				t.Fatalf("doctor --json found %v (problems %d), want only %s\n%s", problems, r.Problems, tc.kind, jr.stdout)
			}
			if found.Component != tc.component || !strings.Contains(found.Fix, tc.fix) || len(found.Evidence) == 0 {
				t.Errorf("finding: got component %q, fix %q, %d metrics; want %q, a fix with %q, the metrics behind it",
					found.Component, found.Fix, len(found.Evidence), tc.component, tc.fix)
			}
			named := tc.kind
			if tc.component != "" {
				named += " (" + tc.component + ")"
			}
			if !strings.Contains(tr.stdout, named) {
				t.Errorf("the text report does not name %s", named)
			}
			if mon != nil {
				checkMonitor(t, <-mon, name)
			}

			if tc.fixed != nil {
				killAndWait(t, c, name)
				args := []string{"submit", name, "--nimbus", c.Nimbus}
				for _, p := range tc.fixed {
					args = append(args, "-p", p)
				}
				if code, _, _ := c.Gale(t, args...); code != 0 {
					t.Fatalf("gale submit: exit %d", code)
				}
				waitFlowing(t, c, name)
			} else {
				applyFix(t, c, name, found.Fix)
			}
			_, _, after := runDoctor(t, c, name, tc.fault+", fixed")
			for _, f := range after.Findings {
				if f.Kind == tc.kind || f.Severity == doctor.Critical {
					t.Errorf("after the fix (%s): doctor still finds %s (%s): %s", found.Fix, f.Kind, f.Severity, f.Cause)
				}
			}
			if tc.kind == doctor.KindShape && (after.Numbers.WorkersRunning != 3 || after.Numbers.Workers != 3) {
				t.Errorf("after the rebalance: workers %d/%d, want 3/3", after.Numbers.WorkersRunning, after.Numbers.Workers)
			}
			if after.Numbers.AckedPerSec <= 0 {
				t.Errorf("after the fix: %.1f trees acked/s, want some", after.Numbers.AckedPerSec)
			}
			if tc.kind == doctor.KindSpoutThrottled && after.Numbers.AckedPerSec < 2*r.Numbers.AckedPerSec {
				t.Errorf("after raising max spout pending: %.1f trees acked/s, want at least twice the %.1f before", after.Numbers.AckedPerSec, r.Numbers.AckedPerSec)
			}
		})
	}
}

// TestDoctorGCPressure: on a cluster whose workers have a 100 MiB heap
// budget (worker.heap.memory.mb), a bolt keeping 120 MiB live puts its
// worker under GC pressure, which doctor finds and nothing else; its fix
// names the key and a value, and on a cluster with that value the same
// topology has no problem.
func TestDoctorGCPressure(t *testing.T) {
	needCluster(t)
	name := doctorfaults.TopologyName
	params := []string{"-p", "live-mb=120", "-p", "rate=100"}
	const conf = "supervisor.heartbeat.frequency.secs: 1\n"
	c := Start(t, Options{Supervisors: 1, SlotsPer: 1, Config: conf + "worker.heap.memory.mb: 100\n"})
	if code, _, _ := c.Gale(t, append([]string{"submit", name, "--nimbus", c.Nimbus}, params...)...); code != 0 {
		t.Fatalf("gale submit: exit %d", code)
	}
	waitFlowing(t, c, name)
	tr, _, r := runDoctor(t, c, name, "GC pressure")
	var problems []string
	for _, f := range r.Findings {
		if f.Problem() {
			problems = append(problems, f.Kind)
		}
	}
	if tr.code != 1 || !slices.Equal(problems, []string{doctor.KindGCPressure}) {
		t.Fatalf("doctor: exit %d, problems %v; want 1, only %s", tr.code, problems, doctor.KindGCPressure)
	}
	f := r.Findings[0]
	m := regexp.MustCompile(`raise worker\.heap\.memory\.mb .* to about ([0-9]+)`).FindStringSubmatch(f.Fix)
	if m == nil || len(f.Evidence) != 1 {
		t.Fatalf("the finding: fix %q, evidence %v; want worker.heap.memory.mb raised to a value, one worker", f.Fix, f.Evidence)
	}
	killAndWait(t, c, name)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}

	// The fix: the cluster's workers get the heap budget doctor named.
	c = Start(t, Options{Supervisors: 1, SlotsPer: 1, Config: conf + "worker.heap.memory.mb: " + m[1] + "\n"})
	if code, _, _ := c.Gale(t, append([]string{"submit", name, "--nimbus", c.Nimbus}, params...)...); code != 0 {
		t.Fatalf("gale submit: exit %d", code)
	}
	defer killAndWait(t, c, name)
	waitFlowing(t, c, name)
	tr, _, r = runDoctor(t, c, name, "GC pressure, worker.heap.memory.mb: "+m[1])
	if tr.code != 0 || r.Problems != 0 {
		t.Errorf("with worker.heap.memory.mb: %s: exit %d, %d problems; want none\n%s", m[1], tr.code, r.Problems, tr.stdout)
	}
}

// runDoctor runs gale doctor on the topology for 8 s, as text and as
// JSON at the same time, logs the text and returns both, with the JSON
// decoded.
func runDoctor(t *testing.T, c *Cluster, name, label string) (text, js galeResult, r doctorJSON) {
	t.Helper()
	dur := []string{name, "--nimbus", c.Nimbus, "--duration", "8s", "--interval", "2s"}
	tch := galeAsync(append([]string{"doctor"}, dur...)...)
	jch := galeAsync(append([]string{"doctor", "--json"}, dur...)...)
	text, js = <-tch, <-jch
	t.Logf("gale doctor %s (%s) → exit %d:\n%s%s", name, label, text.code, text.stdout, text.stderr)
	if text.err != nil || js.err != nil {
		t.Fatalf("gale doctor: %v, %v", text.err, js.err)
	}
	if err := json.Unmarshal([]byte(js.stdout), &r); err != nil {
		t.Fatalf("gale doctor --json: %v\n%s", err, js.stdout)
	}
	return text, js, r
}

// listed is a row of gale list --json, with the fields waitFlowing reads.
type listed struct {
	Name           string `json:"name"`
	Status         string `json:"status"`
	Workers        int    `json:"workers"`
	WorkersRunning int    `json:"workers_running"`
	Emitted        int64  `json:"emitted"`
	Acked          int64  `json:"acked"`
}

func listOne(t *testing.T, c *Cluster, name string) (listed, bool) {
	t.Helper()
	code, out, _ := runGaleLogged(t, false, "list", "--json", "--nimbus", c.Nimbus)
	if code != 0 {
		t.Fatalf("gale list: exit %d", code)
	}
	var l struct{ Topologies []listed }
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("gale list --json: %v\n%s", err, out)
	}
	for _, tp := range l.Topologies {
		if tp.Name == name {
			return tp, true
		}
	}
	return listed{}, false
}

// waitFlowing waits until the topology is active with all its workers
// and has emitted more since it was first seen so (a worker
// started again counts from zero: then from there).
func waitFlowing(t *testing.T, c *Cluster, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var last listed
	base := int64(-1)
	if err := Poll(ctx, func() bool {
		var ok bool
		last, ok = listOne(t, c, name)
		switch {
		case !ok || last.Status != "ACTIVE" || last.WorkersRunning != last.Workers:
			base = -1
		case base < 0 || last.Emitted < base:
			base = last.Emitted
		default:
			return last.Emitted > base+2
		}
		return false
	}); err != nil {
		t.Fatalf("%s not flowing within 2 minutes; last: %+v", name, last)
	}
}

// waitReassigned waits until every worker of the topology runs its
// current assignment (a rebalance starts them again), so that the
// restart is over before doctor samples.
func waitReassigned(t *testing.T, c *Cluster, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := grpc.NewClient(c.Nimbus, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := nimbuspb.NewNimbusClient(conn)
	var last string
	if err := Poll(ctx, func() bool {
		info, err := n.Get(ctx, &nimbuspb.GetRequest{Name: name})
		if err != nil {
			last = err.Error()
			return false
		}
		want := info.GetAssignment().GetFingerprint()
		last = fmt.Sprintf("assignment %q, workers %v", want, info.GetWorkers())
		if len(info.GetWorkers()) == 0 {
			return false
		}
		for _, w := range info.GetWorkers() {
			if w.GetState() != "valid" || w.GetAssignmentFingerprint() != want {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("%s's workers did not run its new assignment within 2 minutes; last: %s", name, last)
	}
}

var (
	rebalanceFix        = regexp.MustCompile(`gale rebalance (\S+) -e (\S+=[0-9]+)`)
	rebalanceWorkersFix = regexp.MustCompile(`gale rebalance (\S+) -n ([0-9]+)`)
	resubmitFix         = regexp.MustCompile(`gale kill (\S+); gale submit ([^)]*)\)`)
)

// applyFix runs the command a finding's fix names: its rebalance, or its
// kill and resubmission; then waits for the topology to flow again.
func applyFix(t *testing.T, c *Cluster, name, fix string) {
	t.Helper()
	if m := rebalanceWorkersFix.FindStringSubmatch(fix); m != nil {
		if code, _, _ := c.Gale(t, "rebalance", m[1], "-n", m[2], "-w", "0", "--nimbus", c.Nimbus); code != 0 {
			t.Fatalf("gale rebalance: exit %d", code)
		}
		waitReassigned(t, c, name)
		waitFlowing(t, c, name)
		return
	}
	if m := rebalanceFix.FindStringSubmatch(fix); m != nil {
		if code, _, _ := c.Gale(t, "rebalance", m[1], "-e", m[2], "-w", "0", "--nimbus", c.Nimbus); code != 0 {
			t.Fatalf("gale rebalance: exit %d", code)
		}
		waitReassigned(t, c, name)
		waitFlowing(t, c, name)
		return
	}
	m := resubmitFix.FindStringSubmatch(fix)
	if m == nil {
		t.Fatalf("the fix %q names no command to run", fix)
	}
	killAndWait(t, c, m[1])
	args := append([]string{"submit"}, strings.Fields(m[2])...)
	if code, _, _ := c.Gale(t, append(args, "--nimbus", c.Nimbus)...); code != 0 {
		t.Fatalf("gale %s: exit %d", strings.Join(args, " "), code)
	}
	waitFlowing(t, c, name)
}

// checkMonitor checks `gale monitor --count 3` on the slow bolt: three
// blocks appended (stdout is not a terminal), each with the components
// and the spout's trees in flight against its cap.
func checkMonitor(t *testing.T, r galeResult, name string) {
	t.Helper()
	t.Logf("gale monitor %s --count 3 → exit %d:\n%s%s", name, r.code, r.stdout, r.stderr)
	if r.err != nil || r.code != 0 {
		t.Fatalf("gale monitor: exit %d, %v; want 0", r.code, r.err)
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("gale monitor to a pipe: got ANSI escapes, want plain blocks")
	}
	blocks := strings.Split(strings.TrimSpace(r.stdout), "\n\n")
	if len(blocks) != 3 {
		t.Fatalf("gale monitor --count 3: got %d blocks, want 3", len(blocks))
	}
	work := regexp.MustCompile(`(?m)^work\s+bolt\s+1 \(4 tasks\)\s.*execute [0-9.]+ms(?:, process [0-9.]+ms)?\s+([0-9.]+)`)
	source := regexp.MustCompile(`(?m)^source\s+spout\s+1\s.*\s[0-9]+ of 50\s`)
	for i, b := range blocks {
		if !strings.HasPrefix(b, name+" (") || !strings.Contains(b, "COMPONENT") {
			t.Errorf("block %d: want a header naming %s and the table\n%s", i+1, name, b)
		}
		if !source.MatchString(b) {
			t.Errorf("block %d: want the source's trees in flight of its max 50\n%s", i+1, b)
		}
		if !work.MatchString(b) {
			t.Errorf("block %d: want work's executors, tasks, execute latency and capacity\n%s", i+1, b)
		}
	}
	if !strings.Contains(blocks[1], "rates over") {
		t.Errorf("the second block: want rates over the time between two reports\n%s", blocks[1])
	}
}

// killAndWait kills the topology and waits until nimbus lists it no more.
func killAndWait(t *testing.T, c *Cluster, name string) {
	t.Helper()
	if code, _, _ := c.Gale(t, "kill", name, "-w", "0", "--nimbus", c.Nimbus); code != 0 {
		t.Errorf("gale kill: exit %d", code)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var last []Topology
	if err := Poll(ctx, func() bool {
		last = c.List(t)
		return !slices.ContainsFunc(last, func(tp Topology) bool { return tp.Name == name })
	}); err != nil {
		t.Errorf("%s still listed 2 minutes after kill: %+v", name, last)
	}
}
