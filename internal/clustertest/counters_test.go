//go:build unix

package clustertest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// counterWatch samples a topology's acked trees, as every source a user
// reads shows them, until stopped: each running nimbus's Get (the
// summary, the all-time window and the spouts' all-time counters) and,
// when a UI runs, its /metrics. It records every sample lower than the
// one before from the same source: a counter that went back.
type counterWatch struct {
	f    *Fleet
	name string
	ui   string // the UI's host:port, "" for none

	stop chan struct{}
	wg   sync.WaitGroup

	mu struct {
		sync.Mutex
		last    map[string]int64 // by source
		back    []string         // what went back, and when
		samples int
	}
}

// watchCounters starts sampling topology name's counters; the test's
// cleanup stops it.
func watchCounters(t *testing.T, f *Fleet, name, ui string) *counterWatch {
	w := &counterWatch{f: f, name: name, ui: ui, stop: make(chan struct{})}
	w.mu.last = map[string]int64{}
	w.wg.Go(w.run)
	t.Cleanup(w.halt)
	return w
}

func (w *counterWatch) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

func (w *counterWatch) run() {
	tk := time.NewTicker(100 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tk.C:
		}
		for _, p := range w.f.Nimbuses {
			if !p.Running() {
				continue
			}
			info, err := nimbusCall(context.Background(), p.Addr, func(ctx context.Context, c nimbuspb.NimbusClient) (*nimbuspb.TopologyInfo, error) {
				return c.Get(ctx, &nimbuspb.GetRequest{Name: w.name})
			})
			if err != nil {
				continue // stopping, killed, or not caught up yet
			}
			w.sample(p.Role+" Get summary", info.GetSummary().GetAcked())
			for _, win := range info.GetWindows() {
				if win.GetWindowSecs() == 0 {
					w.sample(p.Role+" Get all-time window", win.GetAcked())
				}
			}
			var spouts int64
			for _, c := range info.GetComponents() {
				if c.GetKind() == "spout" {
					spouts += c.GetAcked()
				}
			}
			w.sample(p.Role+" Get spouts", spouts)
		}
		if w.ui != "" {
			if v, ok := metricsAcked(w.ui, w.name); ok {
				w.sample("ui /metrics", v)
			}
		}
	}
}

func (w *counterWatch) sample(source string, v int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.samples++
	if last, ok := w.mu.last[source]; ok && v < last {
		w.mu.back = append(w.mu.back, fmt.Sprintf("%s: %d after %d at %s", source, v, last, time.Now().Format("15:04:05.000")))
	}
	w.mu.last[source] = max(v, w.mu.last[source])
}

// check fails the test if a counter went back so far; when says at
// which step.
func (w *counterWatch) check(t *testing.T, when string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("%s: %d samples of acked so far", when, w.mu.samples)
	if n := len(w.mu.back); n > 0 {
		t.Errorf("%s: acked went back %d times (%d samples), first: %s", when, n, w.mu.samples, strings.Join(w.mu.back[:min(n, 6)], "; "))
		w.mu.back = nil
	}
}

// metricsAcked reads gale_topology_acked_total of topology name from
// the UI's /metrics.
func metricsAcked(ui, name string) (int64, bool) {
	resp, err := http.Get("http://" + ui + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "gale_topology_acked_total{") && strings.Contains(l, `topology="`+name+`"`) {
			f := strings.Fields(l)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			return int64(v), err == nil
		}
	}
	return 0, false
}

// startUI runs `gale ui` on the fleet, stopped by the test's cleanup,
// and returns its host:port.
func startUI(t *testing.T, f *Fleet) string {
	t.Helper()
	// Outside the fleet's Dir: the processes under it are the fleet's
	// own and its workers.
	dir := t.TempDir()
	src, err := f.clientFile()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "client.yaml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p := f.startRetrying(t, "ui", dir, Host{}.withDefaults(), 1, func(ports []int) []string {
		return []string{"ui", "--addr", "127.0.0.1:" + strconv.Itoa(ports[0]), "--file", file}
	}, func(l string) (string, bool) {
		_, after, ok := strings.Cut(l, "ui: serving the web UI on http://")
		addr, _, _ := strings.Cut(after, "/")
		return addr, ok && addr != ""
	})
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	})
	return p.ready
}

// listed is topology name's row of gale list, or false.
func listedOf(t *testing.T, f *Fleet, name string) (Topology, bool) {
	t.Helper()
	ts, err := f.TryList(t)
	if err != nil {
		return Topology{}, false
	}
	for _, tp := range ts {
		if tp.Name == name {
			return tp, true
		}
	}
	return Topology{}, false
}

// TestCountersNeverGoBack: a topology's acked trees, in gale list, in
// every nimbus's Get (summary, all-time window, spouts) and in the UI's
// /metrics, never go back when a worker is killed and restarted, nor
// when a rebalance stops a worker; and they grow on from where they
// were.
func TestCountersNeverGoBack(t *testing.T) {
	needCluster(t)
	f := Launch(t, Options{Nimbuses: 2, Supervisors: 2, SlotsPer: 2, Config: failureConfig(shortLease)})
	submitPaced(t, f, 2)
	ui := startUI(t, f)
	w := watchCounters(t, f, paced, ui)
	// Let each worker ack a good number of trees: a worker's count
	// lost is then plain to see.
	before := waitAcked(t, f, paced, 400, "before the worker's kill")

	var sup *Proc
	var pids []int
	for _, s := range f.Supervisors {
		if ws, err := s.Workers(); err == nil && len(ws) > 0 {
			sup, pids = s, ws
			break
		}
	}
	if sup == nil {
		t.Fatal("no supervisor runs a worker of the topology")
	}
	if err := killPID(pids[0]); err != nil {
		t.Fatal(err)
	}
	pollFor(t, fmt.Sprintf("%s restarting its killed worker %d", sup.Role, pids[0]), func() bool {
		ws, err := sup.Workers()
		return err == nil && len(ws) == len(pids) && !containsInt(ws, pids[0])
	})
	// Until the new worker has acked more than the old one did, a list
	// of the running workers alone shows less than before the kill.
	if tp, ok := listedOf(t, f, paced); !ok || tp.Acked < before {
		t.Errorf("gale list after the worker's restart: %+v (listed %v), want acked ≥ %d, the count before the kill", tp, ok, before)
	}
	after := waitAcked(t, f, paced, before, "after the worker's restart")
	w.check(t, "worker killed and restarted")

	// A rebalance to one worker stops the other: its trees stay counted.
	if code, out, errOut := f.Gale(t, "rebalance", paced, "-n", "1", "-w", "1"); code != 0 {
		t.Fatalf("gale rebalance: exit %d\n%s%s", code, out, errOut)
	}
	pollFor(t, "the rebalance leaving one worker", func() bool {
		ws, err := f.Workers()
		tp, ok := listedOf(t, f, paced)
		return err == nil && len(ws) == 1 && ok && tp.Workers == 1 && tp.WorkersRunning == 1
	})
	if tp, ok := listedOf(t, f, paced); !ok || tp.Acked < after {
		t.Errorf("gale list after the rebalance: %+v (listed %v), want acked ≥ %d, the count before it", tp, ok, after)
	}
	waitAcked(t, f, paced, after, "after the rebalance")
	w.check(t, "rebalanced to one worker")
}

func containsInt(xs []int, x int) bool { return slices.Contains(xs, x) }

// TestLeaderKilledReadsGoOn: with the nimbus leader killed (-9), gale
// list answers throughout, from the standby, with every worker running
// and the trees acked before the kill; the standby, once it leads, shows
// the workers running and the counts at once (its first answer as
// leader); and the counters never go back across the failover, in list,
// Get and /metrics.
func TestLeaderKilledReadsGoOn(t *testing.T) {
	needCluster(t)
	f := Launch(t, Options{Nimbuses: 2, Supervisors: 2, SlotsPer: 2, Config: failureConfig(shortLease)})
	submitPaced(t, f, 2)
	ui := startUI(t, f)
	w := watchCounters(t, f, paced, ui)
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
	before := waitAcked(t, f, paced, 200, "before the leader's kill")
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()

	// Until the standby leads, every gale list answers.
	lists, last := 0, before
	var failed []string
	for {
		info, err := nimbusCall(ctx, standby.Addr, func(ctx context.Context, c nimbuspb.NimbusClient) (*nimbuspb.ClusterInfoResponse, error) {
			return c.ClusterInfo(ctx, &nimbuspb.ClusterInfoRequest{})
		})
		if err != nil {
			t.Fatalf("the standby's ClusterInfo: %v", err)
		}
		if info.GetLeaderAddr() == standby.Addr {
			break
		}
		code, out, errOut := f.GaleQuiet(t, "list", "--json")
		lists++
		if code != 0 {
			failed = append(failed, fmt.Sprintf("%s after the kill: exit %d: %s", time.Since(killed).Round(time.Millisecond), code, strings.TrimSpace(errOut)))
			continue
		}
		ts, err := decodeList(out)
		if err != nil {
			t.Fatal(err)
		}
		var tp Topology
		for _, x := range ts {
			if x.Name == paced {
				tp = x
			}
		}
		if tp.WorkersRunning != 2 || tp.Workers != 2 || tp.Acked < last {
			t.Errorf("gale list %s after the leader's kill: %+v; want 2/2 workers running and acked ≥ %d", time.Since(killed).Round(time.Millisecond), tp, last)
		}
		last = max(last, tp.Acked)
		if ctx.Err() != nil {
			t.Fatalf("the standby did not lead within %s", generous)
		}
	}
	led := time.Since(killed)
	if len(failed) > 0 {
		t.Errorf("gale list failed %d times of %d while the standby did not lead yet; first: %s", len(failed), lists, failed[0])
	}
	// The new leader's first answer is right: both workers valid, the
	// counts at least those seen before.
	info, err := nimbusCall(ctx, standby.Addr, func(ctx context.Context, c nimbuspb.NimbusClient) (*nimbuspb.TopologyInfo, error) {
		return c.Get(ctx, &nimbuspb.GetRequest{Name: paced})
	})
	if err != nil {
		t.Fatalf("Get from the new leader: %v", err)
	}
	s := info.GetSummary()
	if s.GetWorkersRunning() != 2 || s.GetAcked() < last {
		t.Errorf("the new leader's first Get: %d/%d workers running, acked %d; want 2/2 and ≥ %d", s.GetWorkersRunning(), s.GetWorkers(), s.GetAcked(), last)
	}
	t.Logf("the standby led %s after the kill; %d lists run meanwhile; its first Get: %d/%d running, acked %d (%d before the kill)",
		led.Round(time.Millisecond), lists, s.GetWorkersRunning(), s.GetWorkers(), s.GetAcked(), before)
	last = waitAcked(t, f, paced, last, "after the failover")
	w.check(t, "leader killed")

	// The old leader, started again, stands by; once it answers reads
	// it has every count, and when the leader is killed again it
	// takes over with them.
	leader.Restart(t)
	pollFor(t, "the restarted "+leader.Role+" answering Get", func() bool {
		_, err := nimbusCall(ctx, leader.Addr, func(ctx context.Context, c nimbuspb.NimbusClient) (*nimbuspb.TopologyInfo, error) {
			return c.Get(ctx, &nimbuspb.GetRequest{Name: paced})
		})
		return err == nil
	})
	// Its artifact is needed to lead.
	sha := info.GetArtifact().GetSha256()
	store := f.Store(t)
	pollFor(t, "the restarted "+leader.Role+" holding the artifact", func() bool {
		hs, err := store.Holders(ctx, sha)
		return err == nil && slices.Contains(hs, leader.ID)
	})
	if err := standby.Kill(); err != nil {
		t.Fatal(err)
	}
	failed = nil
	pollFor(t, "the restarted "+leader.Role+" leading", func() bool {
		l, err := f.Leader(ctx)
		if err == nil && l == leader {
			return true
		}
		tp, ok := listedOf(t, f, paced)
		switch {
		case !ok:
			failed = append(failed, "no answer")
		case tp.WorkersRunning != 2 || tp.Acked < last:
			t.Errorf("gale list after the second leader's kill: %+v; want 2/2 workers running and acked ≥ %d", tp, last)
		}
		last = max(last, tp.Acked)
		return false
	})
	if len(failed) > 0 {
		t.Errorf("gale list failed %d times after the second leader's kill", len(failed))
	}
	waitAcked(t, f, paced, last, "after the second failover")
	w.check(t, "second leader killed")
}
