package nimbus

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/testutil"
)

// fakeWorker is a worker whose spout emits and acks one tree a second
// (each taking 1 ms) and whose bolt executes two tuples a second, since
// it started.
type fakeWorker struct {
	port    int32
	pid     int32
	started time.Time
}

func (w fakeWorker) report(topology string, now time.Time) *nimbuspb.WorkerReport {
	n := int64(now.Sub(w.started) / time.Second)
	var l metrics.Latency
	for range n {
		l.Record(time.Millisecond)
	}
	h := &nimbuspb.LatencyHistogram{}
	h.Buckets, h.Counts = l.Sparse()
	return &nimbuspb.WorkerReport{
		Topology: topology, Port: w.port, Pid: w.pid, State: "valid", StartedUnixMs: w.started.UnixMilli(),
		Components: []*nimbuspb.ComponentStats{
			{Component: "sentences", Kind: "spout", Tasks: 2, Emitted: n, Transferred: n, Acked: n, CompleteLatency: h, Pending: 7},
			{Component: "split", Kind: "bolt", Tasks: 4, Executed: 2 * n, Acked: 2 * n, Capacity: 0.5},
		},
	}
}

func TestGetRollingWindows(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clock := galetest.NewClock(t0)
	nd := cl.startNimbus("n1", "", func(c *Config) { c.Now = clock.Now })
	nd.leads()
	id := nd.mustSubmit(newSubmission("wordcount", 1, 1)).GetId()

	// The worker started 50 s before nimbus hears of it.
	w := fakeWorker{port: 6700, pid: 100, started: t0.Add(-50 * time.Second)}
	report := func() {
		t.Helper()
		if _, err := nd.api.Report(testutil.Context(t), &nimbuspb.ReportRequest{Supervisor: "s1",
			Workers: []*nimbuspb.WorkerReport{w.report(id, clock.Now())}}); err != nil {
			t.Fatal(err)
		}
	}
	// runFor reports every step until the clock has moved by d.
	runFor := func(d, step time.Duration) {
		t.Helper()
		for end := clock.Now().Add(d); clock.Now().Before(end); {
			clock.Advance(step)
			report()
		}
	}
	// check asks for each window and compares the spout's emitted and
	// acked trees, their latencies and the bolt's executed tuples with
	// want (by window), and the windows' totals.
	check := func(when string, want map[int64]int64) {
		t.Helper()
		wins := metrics.Windows()
		for _, win := range wins {
			secs := win.Secs
			info, err := nd.api.Get(testutil.Context(t), &nimbuspb.GetRequest{Name: "wordcount", WindowSecs: secs})
			if err != nil {
				t.Fatalf("%s: Get window %d: %v", when, secs, err)
			}
			if info.GetWindowSecs() != secs {
				t.Errorf("%s: Get window %d: window_secs %d", when, secs, info.GetWindowSecs())
			}
			cs := info.GetComponents()
			if len(cs) != 2 {
				t.Fatalf("%s: window %d: components %v, want sentences and split", when, secs, cs)
			}
			sp, bolt := cs[0], cs[1]
			n := want[secs]
			lat := int64(0)
			if h := sp.GetCompleteLatency(); h != nil {
				l, err := metrics.LatencyFromSparse(h.GetBuckets(), h.GetCounts())
				if err != nil {
					t.Fatal(err)
				}
				lat = l.Count()
			}
			if sp.GetEmitted() != n || sp.GetAcked() != n || lat != n || bolt.GetExecuted() != 2*n {
				t.Errorf("%s: window %d: spout emitted %d, acked %d, latencies of %d trees, bolt executed %d; want %d, %d, %d, %d",
					when, secs, sp.GetEmitted(), sp.GetAcked(), lat, bolt.GetExecuted(), n, n, n, 2*n)
			}
			// The gauges are how things are now, in every window.
			if sp.GetTasks() != 2 || sp.GetPending() != 7 || bolt.GetTasks() != 4 || bolt.GetCapacity() != 0.5 {
				t.Errorf("%s: window %d: tasks %d and %d, pending %d, capacity %v; want the latest report's 2, 4, 7, 0.5",
					when, secs, sp.GetTasks(), bolt.GetTasks(), sp.GetPending(), bolt.GetCapacity())
			}
			ws := info.GetWindows()
			if len(ws) != len(wins) {
				t.Fatalf("%s: windows %v, want one per window", when, ws)
			}
			for i, win := range wins {
				s := win.Secs
				if ws[i].GetWindowSecs() != s || ws[i].GetEmitted() != want[s] || ws[i].GetTransferred() != want[s] ||
					ws[i].GetAcked() != want[s] || ws[i].GetFailed() != 0 {
					t.Errorf("%s: windows[%d] %v, want window %d with %d emitted, transferred and acked", when, i, ws[i], s, want[s])
				}
			}
		}
	}

	report()
	// Younger than every window: each is all time, the counts from
	// the worker's start.
	check("first report", map[int64]int64{600: 50, 10800: 50, 86400: 50, 0: 50})
	runFor(30*time.Minute, time.Minute)
	check("30 min", map[int64]int64{600: 600, 10800: 1850, 86400: 1850, 0: 1850})

	// The worker dies after that report and starts again 30 s later,
	// from 0: the window counts what each did within it, all time
	// keeps what the first one did.
	clock.Advance(30 * time.Second)
	w = fakeWorker{port: 6700, pid: 101, started: clock.Now()}
	report()
	runFor(30*time.Second, 30*time.Second)
	runFor(9*time.Minute, time.Minute)
	check("40 min, restarted at 30 min 30 s", map[int64]int64{600: 570, 10800: 2420, 86400: 2420, 0: 2420})

	runFor(4*time.Hour-40*time.Minute, 10*time.Minute)
	check("4 h", map[int64]int64{600: 600, 10800: 10800, 86400: 1850 + (4*3600 - 1830), 0: 1850 + (4*3600 - 1830)})
	runFor(21*time.Hour, 10*time.Minute)
	all := int64(1850 + (25*3600 - 1830))
	check("25 h", map[int64]int64{600: 600, 10800: 10800, 86400: 86400, 0: all})
	// The history is bounded: each tier keeps its window's snapshots
	// and two more.
	nd.n.windows.mu.Lock()
	snaps := &nd.n.windows.mu.topologies[id].snaps
	for i, win := range metrics.Windows()[:3] {
		if n, keep := snaps.Len(i), snaps.Keep(i); n > keep {
			t.Errorf("window %v keeps %d snapshots after 25 h, want at most %d", win.Duration(), n, keep)
		}
	}
	nd.n.windows.mu.Unlock()

	_, err := nd.api.Get(testutil.Context(t), &nimbuspb.GetRequest{Name: "wordcount", WindowSecs: 60})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Get with window_secs 60: %v, want InvalidArgument", err)
	}
	for _, s := range []string{"60", "600", "10800", "86400", "0 (all time)"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("Get with window_secs 60: %q does not name %s", err, s)
		}
	}
}

// A worker whose counters go down under the same key is another process:
// its counts before stay counted, its new ones count from 0.
func TestWindowsCountersThatGoDownStartAnIncarnation(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	w := newWindows(t0)
	spout := func(n int64) []*nimbuspb.WorkerReport {
		return []*nimbuspb.WorkerReport{{Topology: "t", Port: 1, Components: []*nimbuspb.ComponentStats{
			{Component: "s", Kind: "spout", Emitted: n}}}}
	}
	w.record(t0, "s1", spout(100), nil)
	w.record(t0.Add(10*time.Minute), "s1", spout(160), nil)
	w.record(t0.Add(15*time.Minute), "s1", spout(20), nil) // restarted, no pid known
	comps, wins, err := w.view(t0.Add(20*time.Minute), "t", "", 600, spout(20)[0].Components)
	if err != nil {
		t.Fatal(err)
	}
	if got := comps[0].GetEmitted(); got != 20 {
		t.Errorf("10-min window: emitted %d, want 20 (0 from 10 to 15 min, 20 since)", got)
	}
	if got := wins[3].GetEmitted(); got != 180 {
		t.Errorf("all time: emitted %d, want 180 (160 before the restart, 20 since)", got)
	}
}

// totals is a supervisor's totals of topology id: a spout's acked trees.
func totals(id string, acked int64) []*nimbuspb.TopologyTotals {
	return []*nimbuspb.TopologyTotals{{Topology: id, Components: []*nimbuspb.ComponentStats{
		{Component: "sentences", Kind: "spout", Emitted: acked, Acked: acked}}}}
}

// The supervisors' totals make a topology's counters, on the leader and
// the standby alike: a supervisor that is gone (its machine lost, its
// workers moved) keeps its count, a report lower than one before takes
// nothing back, the standby that takes over answers with the same
// counts and workers at once, and a nimbus started after the loss
// takes the lost supervisor's count from the others.
func TestTotalsNeverGoBackAcrossSupervisorsAndNimbuses(t *testing.T) {
	cl := newCluster(t)
	s1 := cl.supervisor("s1", 6700, 6701)
	s2 := cl.supervisor("s2", 6700, 6701)
	a := cl.startNimbus("a", "", nil)
	a.leads()
	sub := newSubmission("wordcount", 2, 1)
	id := a.mustSubmit(sub).GetId()
	b := cl.startNimbus("b", "", nil)
	worker := func(sup string, port int32) *nimbuspb.WorkerReport {
		return &nimbuspb.WorkerReport{Topology: id, Supervisor: sup, Port: port, Pid: 100 + port, State: "valid",
			Components: []*nimbuspb.ComponentStats{{Component: "sentences", Kind: "spout", Tasks: 1, Acked: 1}}}
	}
	// report sends one supervisor's report to both nimbuses, as a
	// supervisor does (to b only once a is stopped).
	stopped := false
	report := func(sup string, acked int64, ws ...*nimbuspb.WorkerReport) {
		t.Helper()
		for _, nd := range []*node{a, b} {
			if nd == a && stopped {
				continue
			}
			if _, err := nd.api.Report(testutil.Context(t), &nimbuspb.ReportRequest{Supervisor: sup, Workers: ws, Totals: totals(id, acked)}); err != nil {
				t.Fatalf("Report of %s to %s: %v", sup, nd.n.ID(), err)
			}
		}
	}
	// want checks List and Get, and the all-time window, on nd.
	want := func(nd *node, when string, acked int64, running int32) {
		t.Helper()
		list, err := nd.api.List(testutil.Context(t), &nimbuspb.ListRequest{})
		if err != nil {
			t.Fatalf("%s: List on %s: %v", when, nd.n.ID(), err)
		}
		s := list.GetTopologies()[0]
		info, err := nd.api.Get(testutil.Context(t), &nimbuspb.GetRequest{Name: id})
		if err != nil {
			t.Fatalf("%s: Get on %s: %v", when, nd.n.ID(), err)
		}
		all := info.GetWindows()[len(info.GetWindows())-1]
		if s.GetAcked() != acked || info.GetSummary().GetAcked() != acked || all.GetAcked() != acked || s.GetWorkersRunning() != running {
			t.Errorf("%s: %s lists %d acked and %d running, Get %d, all time %d; want %d acked, %d running",
				when, nd.n.ID(), s.GetAcked(), s.GetWorkersRunning(), info.GetSummary().GetAcked(), all.GetAcked(), acked, running)
		}
	}
	report("s1", 100, worker("s1", 6700))
	report("s2", 50, worker("s2", 6700))
	want(a, "both supervisors reported", 150, 2)
	want(b, "both supervisors reported", 150, 2)

	// s2's machine is lost: its worker moves to s1, which counts it from
	// 0; s2's 50 stay. (Its last report shows its worker for
	// nimbus.supervisor.timeout.secs more: 3 running.)
	s2.Close()
	report("s1", 110, worker("s1", 6700), worker("s1", 6701))
	want(a, "s2 lost, its worker moved to s1", 160, 3)
	// A report that arrives late, lower than the one before, takes
	// nothing back.
	report("s1", 90, worker("s1", 6700), worker("s1", 6701))
	want(a, "a late report", 160, 3)
	want(b, "a late report", 160, 3)

	// The leader goes: the standby, leading, has it all at once.
	testutil.Eventually(t, 30*time.Second, "nimbus b holding the artifact", func() bool { return b.holds(sub.header.Artifact.Sha256) })
	a.stop()
	stopped = true
	b.leads()
	want(b, "the standby leads", 160, 3)
	report("s1", 130, worker("s1", 6700), worker("s1", 6701))
	want(b, "after the next report", 180, 3)

	// A nimbus that starts after s2 was lost takes s2's count from b,
	// and once it leads shows it too.
	c := cl.startNimbus("c", "", nil)
	testutil.Eventually(t, 30*time.Second, "nimbus c taking the other nimbuses' totals", c.n.windows.isSynced)
	if _, err := c.api.Report(testutil.Context(t), &nimbuspb.ReportRequest{Supervisor: "s1",
		Workers: []*nimbuspb.WorkerReport{worker("s1", 6700), worker("s1", 6701)}, Totals: totals(id, 130)}); err != nil {
		t.Fatal(err)
	}
	// c campaigns once it holds the artifact, which only b can give it.
	testutil.Eventually(t, 30*time.Second, "nimbus c holding the artifact", func() bool { return c.holds(sub.header.Artifact.Sha256) })
	b.stop()
	c.leads()
	want(c, "a nimbus started after s2's loss, leading", 180, 2)
	s1.Close()
}
