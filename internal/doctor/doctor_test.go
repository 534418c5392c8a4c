package doctor

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bolt is a bolt of a scenario.
type bolt struct {
	name      string
	input     string // the component it reads from (default: the spout)
	execs     int32
	tasks     int32
	rate      float64 // executed per second
	capacity  float64
	execute   time.Duration
	process   time.Duration // 0: not reported
	failRate  float64       // inputs failed per second
	lastError string
	noAck     bool     // acks none of its input
	fields    []string // a fields grouping on these (default: shuffle)
	grouping  string   // the grouping by Storm's name, if not shuffle or fields
	// execShares, if set, is each executor's share of the input and
	// execCaps its capacity: the workers' reports then carry one
	// ComponentStats of the bolt with its executors, one task each.
	execShares, execCaps []float64
}

// scenario makes samples of a word-count-like topology: one spout
// ("sentences", one task) and its bolts, whose cumulative counters grow
// at the given rates.
type scenario struct {
	status        string // default ACTIVE
	pendingReason string
	workers       int32 // asked (default 2)
	running       int32 // default workers
	timeoutSecs   int   // in the topology's config; 0: unset
	maxPending    int64 // 0: none
	pending       func(i int) int64
	ackRate       float64
	timeoutRate   float64
	failByBolt    float64
	throttled     float64 // share of time held at the cap (0: not reported)
	complete      time.Duration
	bolts         []bolt
	// worker changes the i-th sample's worker reports.
	worker func(i int, w []*nimbuspb.WorkerReport)
	// frozen: every sample carries the same heartbeat.
	frozen bool
	slots  int // per supervisor, two supervisors (default 2)
	// otherUsed: slots another topology holds.
	otherUsed int32
}

func (s scenario) samples(n int, every time.Duration) []Sample {
	if s.status == "" {
		s.status = "ACTIVE"
	}
	if s.workers == 0 {
		s.workers = 2
	}
	if s.running == 0 && s.pendingReason == "" {
		s.running = s.workers
	}
	if s.slots == 0 {
		s.slots = 2
	}
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var out []Sample
	for i := range n {
		at := start.Add(time.Duration(i) * every)
		t := (60*time.Second + time.Duration(i)*every).Seconds() // since the workers started
		if s.frozen {
			t = 60
		}
		out = append(out, Sample{At: at, Info: s.info(i, t, at), Cluster: s.cluster()})
	}
	return out
}

func (s scenario) info(i int, t float64, at time.Time) *nimbuspb.TopologyInfo {
	def := &nimbuspb.TopologyDefinition{Factory: "run:wc", Params: map[string]string{"delay": "20ms"}, Workers: s.workers,
		Components: []*nimbuspb.Component{{Id: "sentences", Spout: true, Tasks: 1, Parallelism: 1}}}
	var conf []byte
	if s.timeoutSecs > 0 {
		conf, _ = json.Marshal(map[string]any{"topology.message.timeout.secs": s.timeoutSecs})
	}
	acked := int64(s.ackRate * t)
	timedOut := int64(s.timeoutRate * t)
	byBolt := int64(s.failByBolt * t)
	var lat metrics.Latency
	for range min(acked, 10000) {
		lat.Record(s.complete)
	}
	spout := &nimbuspb.ComponentStats{Component: "sentences", Kind: "spout", Tasks: 1,
		Emitted: acked + timedOut + byBolt, Acked: acked, Failed: timedOut + byBolt, TimedOut: timedOut, FailedByBolt: byBolt,
		MaxPending: s.maxPending, ThrottledNanos: int64(s.throttled * t * 1e9)}
	if s.pending != nil {
		spout.Pending = s.pending(i)
	}
	if lat.Count() > 0 {
		spout.CompleteLatency = &nimbuspb.LatencyHistogram{}
		spout.CompleteLatency.Buckets, spout.CompleteLatency.Counts = lat.Sparse()
	}
	comps := []*nimbuspb.ComponentStats{spout}
	for _, b := range s.bolts {
		execs, tasks := max(b.execs, 1), max(b.tasks, b.execs, 1)
		in := b.input
		if in == "" {
			in = "sentences"
		}
		input := &nimbuspb.Input{Component: in, Stream: "default", Grouping: "shuffle"}
		if len(b.fields) > 0 {
			input.Grouping, input.Fields = "fields", b.fields
		}
		if b.grouping != "" {
			input.Grouping = b.grouping
		}
		def.Components = append(def.Components, &nimbuspb.Component{Id: b.name, Tasks: tasks, Parallelism: execs,
			Inputs: []*nimbuspb.Input{input}})
		executed := int64(b.rate * t)
		samples := executed/metrics.ExecuteSampleEvery + 1
		c := &nimbuspb.ComponentStats{Component: b.name, Kind: "bolt", Tasks: tasks, Executed: executed,
			Acked: executed - int64(b.failRate*t), Failed: int64(b.failRate * t), Emitted: executed,
			ExecuteSamples: samples, ExecuteSampledNanos: samples * int64(b.execute), Capacity: b.capacity}
		if b.noAck {
			c.Acked = 0
		}
		if b.process > 0 {
			c.ProcessSamples, c.ProcessSampledNanos = samples, samples*int64(b.process)
		}
		if b.lastError != "" {
			c.Errors = []*nimbuspb.ComponentError{{Task: 2, TimeUnixMs: at.UnixMilli() - 500, Error: "old"}, {Task: 3, TimeUnixMs: at.UnixMilli(), Error: b.lastError}}
		}
		comps = append(comps, c)
	}
	slices.SortFunc(comps, func(a, b *nimbuspb.ComponentStats) int { return strings.Compare(a.Component, b.Component) })
	var workers []*nimbuspb.WorkerReport
	hb := at.Add(-300 * time.Millisecond).UnixMilli()
	if s.frozen {
		hb = time.Date(2026, 12, 1, 11, 59, 0, 0, time.UTC).UnixMilli()
	}
	for w := range s.running {
		workers = append(workers, &nimbuspb.WorkerReport{Topology: "wc-1", Supervisor: "s" + string(rune('a'+w)), Host: "127.0.0.1",
			Port: 6700 + w, Pid: 1000 + w, State: "valid", HeartbeatUnixMs: hb, Emitted: int64(t) * 100})
	}
	for _, b := range s.bolts {
		if len(b.execShares) == 0 || len(workers) == 0 {
			continue
		}
		c := &nimbuspb.ComponentStats{Component: b.name, Kind: "bolt", Tasks: int32(len(b.execShares))}
		for x, share := range b.execShares {
			c.Executors = append(c.Executors, &nimbuspb.ExecutorStats{FirstTask: int32(10 + x), LastTask: int32(10 + x),
				Host: workers[0].Host, Port: workers[0].Port, Executed: int64(share * b.rate * t), Capacity: b.execCaps[x]})
		}
		workers[0].Components = append(workers[0].Components, c)
	}
	if s.worker != nil {
		s.worker(i, workers)
	}
	return &nimbuspb.TopologyInfo{
		Summary: &nimbuspb.TopologySummary{Id: "wc-1", Name: "wc", Status: s.status, PendingReason: s.pendingReason,
			Workers: s.workers, WorkersRunning: s.running, UptimeSecs: int64(t)},
		Definition: def, ConfigJson: conf, Workers: workers, Components: comps,
	}
}

func (s scenario) cluster() *nimbuspb.ClusterInfoResponse {
	c := &nimbuspb.ClusterInfoResponse{}
	used := s.running + s.otherUsed
	for i := range 2 {
		var ports []int32
		for p := range s.slots {
			ports = append(ports, int32(6700+p))
		}
		u := min(used, int32(s.slots))
		used -= u
		c.Supervisors = append(c.Supervisors, &nimbuspb.SupervisorSummary{Id: "s" + string(rune('a'+i)), Ports: ports, SlotsUsed: u})
	}
	return c
}

// healthy is a paced word count well within its means.
func healthy() scenario {
	return scenario{maxPending: 1000, pending: func(i int) int64 { return []int64{120, 340, 80, 210}[i%4] },
		ackRate: 2000, complete: 4 * time.Millisecond,
		bolts: []bolt{
			{name: "count", input: "split", execs: 2, tasks: 2, rate: 14000, capacity: 0.31, execute: 20 * time.Microsecond},
			{name: "split", execs: 2, tasks: 2, rate: 2000, capacity: 0.12, execute: 55 * time.Microsecond},
		}}
}

func kinds(r Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Kind)
	}
	return out
}

func find(t *testing.T, r Report, kind string) Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.Kind == kind {
			return f
		}
	}
	t.Fatalf("no %s finding; got %v", kind, describe(r))
	return Finding{}
}

func describe(r Report) string {
	b, _ := json.MarshalIndent(r.Findings, "", "  ")
	return string(b)
}

func wantKinds(t *testing.T, r Report, want ...string) {
	t.Helper()
	if got := kinds(r); !slices.Equal(got, want) {
		t.Fatalf("findings: got %v, want %v\n%s", got, want, describe(r))
	}
}

func TestHealthyWordCount(t *testing.T) {
	r := Diagnose(healthy().samples(4, 5*time.Second))
	wantKinds(t, r)
	if r.Problems() != 0 {
		t.Errorf("Problems: got %d, want 0", r.Problems())
	}
	n := r.Numbers
	if n.Seconds != 15 || n.AckedPerSec < 1990 || n.AckedPerSec > 2010 || n.BusiestBolt != "count" || n.BusiestCapacity != 0.31 ||
		n.MessageTimeoutSecs != 30 || n.Workers != 2 || n.WorkersRunning != 2 {
		t.Errorf("numbers: got %+v, want 15 s, ~2000 acked/s, count busiest at 0.31, timeout 30 s, 2/2 workers", n)
	}
	if n.CompleteP50Ms < 3.7 || n.CompleteP50Ms > 4.3 {
		t.Errorf("complete latency p50: got %v ms, want ~4", n.CompleteP50Ms)
	}
}

// An unpaced word count without a cap has a busiest bolt, but nothing
// pinned and no timeouts: no false throttling.
func TestHealthyUnpinnedSpoutNotThrottled(t *testing.T) {
	s := healthy()
	s.bolts[0].capacity, s.bolts[1].capacity = 0.05, 0.02
	s.pending = func(i int) int64 { return []int64{3, 900, 12, 0}[i%4] } // at the cap once only
	wantKinds(t, Diagnose(s.samples(4, 5*time.Second)))
	s.maxPending = 0 // no cap: the runtime limits itself
	s.pending = func(int) int64 { return 5000 }
	wantKinds(t, Diagnose(s.samples(4, 5*time.Second)))
}

func TestSpoutThrottled(t *testing.T) {
	s := healthy()
	s.maxPending = 1
	s.pending = func(i int) int64 { return []int64{1, 1, 0, 1}[i] } // one sample caught between ack and emit
	s.ackRate = 400
	s.bolts[0].rate, s.bolts[1].rate = 2800, 400
	s.bolts[0].capacity, s.bolts[1].capacity = 0.03, 0.01
	r := Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindSpoutThrottled)
	f := r.Findings[0]
	if f.Component != "sentences" || f.Severity != Warning {
		t.Errorf("got component %q severity %s, want sentences, warning", f.Component, f.Severity)
	}
	if !strings.Contains(f.Fix, "-c topology.max.spout.pending=25") || !strings.Contains(f.Fix, "topology.max.spout.pending.autotune=true") ||
		!strings.Contains(f.Fix, "gale kill wc; gale submit wc -p delay=20ms") {
		t.Errorf("fix: got %q, want a resubmit with topology.max.spout.pending=25 (count 2800/s × 20µs over 2 executors: 0.028 busy; 0.7/0.028 × 1) or the auto-tuner", f.Fix)
	}
	if !strings.Contains(metric(f, "samples at the cap"), "3 of 4") {
		t.Errorf("evidence: got %v, want 3 of 4 samples at the cap", f.Evidence)
	}
}

// The runtime's throttled time tells a throttled spout whose snapshots
// of trees in flight miss the cap.
func TestSpoutThrottledByThrottledTime(t *testing.T) {
	s := healthy()
	s.maxPending = 10
	s.pending = func(int) int64 { return 4 }
	s.throttled = 0.9
	s.bolts[0].capacity = 0.1
	r := Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindSpoutThrottled)
	if got := metric(r.Findings[0], "time held at the cap"); got != "90%" {
		t.Errorf("time held at the cap: got %q, want 90%%", got)
	}
}

func metric(f Finding, prefix string) string {
	for _, m := range f.Evidence {
		if strings.HasPrefix(m.Name, prefix) {
			return m.Value
		}
	}
	return ""
}

// A spout at its cap behind a saturated bolt is the bolt's backpressure:
// the bolt is named, not the cap.
func TestBoltSaturated(t *testing.T) {
	s := healthy()
	s.maxPending = 50
	s.pending = func(int) int64 { return 50 }
	s.ackRate = 50
	s.complete = 900 * time.Millisecond
	s.bolts = []bolt{
		{name: "parse", execs: 1, tasks: 1, rate: 50, capacity: 0.01, execute: 30 * time.Microsecond},
		{name: "work", input: "parse", execs: 1, tasks: 4, rate: 50, capacity: 0.98, execute: 20 * time.Millisecond},
	}
	r := Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindBoltSaturated)
	f := r.Findings[0]
	if f.Component != "work" {
		t.Errorf("component: got %q, want work", f.Component)
	}
	if !strings.Contains(f.Fix, "gale rebalance wc -e work=2") {
		t.Errorf("fix: got %q, want gale rebalance wc -e work=2 (0.98/0.6 executors, rounded up)", f.Fix)
	}
	if got := metric(f, "execute latency"); got != "20.0ms" {
		t.Errorf("execute latency: got %q, want 20.0ms", got)
	}

	// The runtime's capacity still covers the idle start (its window
	// starts at the executor's start); the span's busy share says it.
	s.bolts[1].capacity = 0.7
	f = find(t, Diagnose(s.samples(4, 5*time.Second)), KindBoltSaturated)
	if got := metric(f, "busy over the span"); got != "1.00" {
		t.Errorf("busy over the span: got %q, want 1.00 (50/s × 20ms)", got)
	}

	// With every task already run by an executor, a rebalance cannot
	// help: resubmit with more parallelism.
	s.bolts[1].tasks = 1
	f = find(t, Diagnose(s.samples(4, 5*time.Second)), KindBoltSaturated)
	if strings.Contains(f.Fix, "rebalance") || !strings.Contains(f.Fix, "parallelism hint") {
		t.Errorf("fix with executors = tasks: got %q, want a higher parallelism hint, not a rebalance", f.Fix)
	}
}

// A bolt slower than the message timeout: the trees time out, the
// timeout is named, and the bolt's saturation (a consequence) is not a
// finding of its own.
func TestTimeoutShorterThanProcessing(t *testing.T) {
	s := healthy()
	s.timeoutSecs = 1
	s.maxPending = 0
	s.ackRate = 0
	s.timeoutRate = 3
	s.bolts = []bolt{
		{name: "parse", execs: 1, tasks: 1, rate: 3, capacity: 0.001, execute: 30 * time.Microsecond},
		{name: "work", input: "parse", execs: 1, tasks: 1, rate: 0.66, capacity: 1.0, execute: 1500 * time.Millisecond},
	}
	r := Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindTimeoutTooShort)
	f := r.Findings[0]
	if f.Severity != Critical || f.Component != "work" {
		t.Errorf("got severity %s component %q, want critical, work", f.Severity, f.Component)
	}
	if !strings.Contains(f.Cause, "1.50s") || !strings.Contains(f.Cause, "(1 s)") {
		t.Errorf("cause: got %q, want the execute latency 1.50s against the 1 s timeout", f.Cause)
	}
	if !strings.Contains(f.Fix, "-c topology.message.timeout.secs=5") {
		t.Errorf("fix: got %q, want topology.message.timeout.secs=5 (3 × 1.5 s)", f.Fix)
	}
	if r.Numbers.MessageTimeoutSecs != 1 {
		t.Errorf("numbers: timeout %d, want the config's 1", r.Numbers.MessageTimeoutSecs)
	}

	// A pipeline stuck behind the bolt (the spout blocked on a full
	// queue) moves no counter in the span; the bolt's execute latency
	// since the start still says it.
	s.timeoutRate = 0
	s.bolts[0].rate, s.bolts[1].rate = 0, 0
	wantKinds(t, Diagnose(s.samples(4, 5*time.Second)), KindTimeoutTooShort)
}

// A bolt that holds its input before acking it (a batching bolt) has a
// short execute latency and a long process latency: the process latency
// is its time per tuple.
func TestTimeoutShorterThanProcessLatency(t *testing.T) {
	s := healthy()
	s.timeoutSecs = 2
	s.ackRate, s.timeoutRate = 0, 100
	s.bolts = []bolt{
		{name: "batch", execs: 1, tasks: 1, rate: 100, capacity: 0.01, execute: 40 * time.Microsecond, process: 3 * time.Second},
	}
	r := Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindTimeoutTooShort)
	if f := r.Findings[0]; f.Component != "batch" || !strings.Contains(f.Cause, "3.00s per tuple") || metric(f, "process latency of batch") != "3.00s" {
		t.Errorf("got %+v, want batch named with its 3.00s process latency", f)
	}
}

// A bolt that executes batches of input longer than the samples' span
// reports nothing executed: with trees timing out, it is the one too
// slow for the timeout; without, it is saturated.
func TestStalledBolt(t *testing.T) {
	s := healthy()
	s.timeoutSecs = 1
	s.maxPending = 0
	s.ackRate = 0
	s.timeoutRate = 80
	s.bolts = []bolt{
		{name: "parse", execs: 1, tasks: 1, rate: 20, capacity: 0.001, execute: 22 * time.Microsecond},
		{name: "work", input: "parse", execs: 1, tasks: 4}, // nothing executed, nothing timed
	}
	r := Diagnose(s.samples(5, 2*time.Second))
	wantKinds(t, r, KindTimeoutTooShort)
	f := r.Findings[0]
	if f.Component != "work" || !strings.Contains(f.Cause, "bolt work finished no input in 8 s") ||
		!strings.Contains(f.Fix, "-c topology.message.timeout.secs=24") {
		t.Errorf("got component %q cause %q fix %q; want work, finished no input in 8 s, timeout 24 (3 × 8 s)", f.Component, f.Cause, f.Fix)
	}
	if got := metric(f, "executed by work"); got != "0 in 8 s, while its input came at 20.0/s" {
		t.Errorf("evidence: got %q", got)
	}

	// Without timeouts: saturated.
	s.timeoutSecs, s.timeoutRate, s.ackRate = 0, 0, 20
	r = Diagnose(s.samples(5, 2*time.Second))
	wantKinds(t, r, KindBoltSaturated)
	if r.Findings[0].Component != "work" {
		t.Errorf("component: got %q, want work", r.Findings[0].Component)
	}
}

// Trees that queue close to the timeout: the timeout is named, with the
// feedback to cut first.
func TestTimeoutNearCompleteLatency(t *testing.T) {
	s := healthy()
	s.ackRate, s.timeoutRate = 100, 20
	s.complete = 20 * time.Second
	r := Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindTimeoutTooShort)
	if f := r.Findings[0]; !strings.Contains(f.Cause, "replay storm") || !strings.Contains(f.Fix, "topology.message.timeout.secs=60") {
		t.Errorf("got cause %q fix %q, want a replay storm, timeout 60 (2 × 30)", f.Cause, f.Fix)
	}
}

// Trees that time out while the rest complete fast are lost.
func TestReplayStormLostTuples(t *testing.T) {
	s := healthy()
	s.timeoutRate = 100
	r := Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindReplayStorm)
	// A trickle below 1% is not a storm.
	s.timeoutRate = 5
	wantKinds(t, Diagnose(s.samples(4, 5*time.Second)))
}

func TestFailedByBolt(t *testing.T) {
	s := healthy()
	s.failByBolt = 50
	s.bolts[1].failRate = 50
	s.bolts[1].lastError = "split: empty sentence"
	r := Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindFailedByBolt)
	f := r.Findings[0]
	if f.Component != "split" || metric(f, "last error of split") != "split: empty sentence" {
		t.Errorf("got component %q evidence %v, want split with its last error", f.Component, f.Evidence)
	}
}

func TestWorkersRestarting(t *testing.T) {
	s := healthy()
	s.worker = func(i int, ws []*nimbuspb.WorkerReport) {
		if i >= 2 { // a new process in the slot, its counters from zero
			ws[1].Pid, ws[1].Emitted = 2001, 10
		}
	}
	r := Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindWorkersRestarting)
	if got := metric(r.Findings[0], "worker 127.0.0.1:6701"); !strings.HasPrefix(got, "started again once") {
		t.Errorf("evidence: got %v, want worker 127.0.0.1:6701 started again once", r.Findings[0].Evidence)
	}
	// The rates are read after the restart, not across it.
	if n := r.Numbers; n.Seconds != 5 || n.AckedPerSec != 2000 {
		t.Errorf("numbers: got %v s, %v acked/s; want 5 s (the samples after the restart), 2000/s", n.Seconds, n.AckedPerSec)
	}
	// The restarts counter alone (filled by newer supervisors).
	s.worker = func(i int, ws []*nimbuspb.WorkerReport) { ws[0].Restarts = int32(i) }
	wantKinds(t, Diagnose(s.samples(4, 5*time.Second)), KindWorkersRestarting)
	// A worker still starting in the first sample is not restarting.
	s.worker = func(i int, ws []*nimbuspb.WorkerReport) {
		if i == 0 {
			ws[0].State, ws[0].Pid = "starting", 0
		}
	}
	wantKinds(t, Diagnose(s.samples(4, 5*time.Second)))

	// A restart between the last two samples leaves no rate to read:
	// only the restart is reported.
	s.worker = func(i int, ws []*nimbuspb.WorkerReport) {
		if i == 3 {
			ws[1].Pid, ws[1].Emitted = 2001, 10
		}
	}
	s.bolts[0].capacity = 0.99
	wantKinds(t, Diagnose(s.samples(4, 5*time.Second)), KindWorkersRestarting)
}

func TestShape(t *testing.T) {
	s := healthy()
	s.pendingReason = "needs 6 slots, 4 are free"
	s.workers = 6
	r := Diagnose(s.samples(3, 5*time.Second))
	wantKinds(t, r, KindShape)
	if f := r.Findings[0]; f.Severity != Critical || !strings.Contains(f.Fix, "gale rebalance wc -n 4") || metric(f, "slots free / total") != "4 / 4" {
		t.Errorf("got %+v, want critical, rebalance to the 4 free slots", f)
	}

	// Short of a worker: the other steps are not judged, even with a
	// saturated bolt.
	s = healthy()
	s.running = 1
	s.bolts[0].capacity = 0.99
	wantKinds(t, Diagnose(s.samples(3, 5*time.Second)), KindShape)

	s = healthy()
	s.status = "INACTIVE"
	if f := find(t, Diagnose(s.samples(3, 5*time.Second)), KindShape); f.Fix != "gale activate wc" {
		t.Errorf("inactive: fix %q, want gale activate wc", f.Fix)
	}
}

// Samples between which no report came say so, rather than rates of 0.
func TestStaleReports(t *testing.T) {
	s := healthy()
	s.frozen = true
	r := Diagnose(s.samples(3, 5*time.Second))
	wantKinds(t, r, KindShape)
	if !strings.Contains(r.Findings[0].Cause, "no worker report") {
		t.Errorf("cause: got %q, want no report reached nimbus", r.Findings[0].Cause)
	}
}

// Findings come in the troubleshooting order.
func TestOrder(t *testing.T) {
	s := healthy()
	s.failByBolt = 50
	s.bolts[1].failRate = 50
	s.bolts[0].capacity = 0.9
	s.worker = func(i int, ws []*nimbuspb.WorkerReport) { ws[0].Restarts = int32(min(i, 1)) }
	wantKinds(t, Diagnose(s.samples(4, 5*time.Second)), KindBoltSaturated, KindWorkersRestarting, KindFailedByBolt)
}

func TestRates(t *testing.T) {
	ss := healthy().samples(3, 5*time.Second)
	// The sample's time is the heartbeat's, not the client's.
	if got, want := ss[0].AsOf(), ss[0].At.Add(-300*time.Millisecond); !got.Equal(want) {
		t.Errorf("AsOf: got %v, want %v", got, want)
	}
	sp := Rates(&ss[0], ss[2])
	if sp.Seconds != 10 {
		t.Fatalf("seconds: got %v, want 10", sp.Seconds)
	}
	byName := make(map[string]Component)
	for _, c := range sp.Components {
		byName[c.Component] = c
	}
	if c := byName["count"]; c.Executed != 14000 || c.Executors != 2 || c.ExecuteLatency != 20*time.Microsecond {
		t.Errorf("count: got executed %v/s, %d executors, execute %v; want 14000/s, 2, 20µs", c.Executed, c.Executors, c.ExecuteLatency)
	}
	if c := byName["sentences"]; c.Acked != 2000 || c.CompleteCount != 10000 {
		t.Errorf("sentences: got acked %v/s over %d trees; want 2000/s, 10000", c.Acked, c.CompleteCount)
	}
	// Counters that went down (a worker started again) count 0.
	back := Rates(&ss[2], ss[0])
	for _, c := range back.Components {
		if c.Executed != 0 || c.Acked != 0 {
			t.Errorf("%s going back: got executed %v acked %v, want 0", c.Component, c.Executed, c.Acked)
		}
	}
	// Without a previous sample: over the uptime.
	if up := Rates(nil, ss[0]); up.Seconds != 60 {
		t.Errorf("over the uptime: got %v s, want 60", up.Seconds)
	}
}

// An active topology whose spouts emit nothing gets a note, not a
// problem.
func TestNoTraffic(t *testing.T) {
	s := healthy()
	s.ackRate = 0
	s.bolts[0].rate, s.bolts[1].rate = 0, 0
	s.pending = func(int) int64 { return 0 }
	r := Diagnose(s.samples(3, 5*time.Second))
	wantKinds(t, r, KindNoTraffic)
	if r.Problems() != 0 || r.Findings[0].Severity != Info {
		t.Errorf("got %d problems, severity %s; want a note only", r.Problems(), r.Findings[0].Severity)
	}
}

// hotKey is a bolt with 8 executors behind a fields grouping, 90% of
// whose tuples carry one key: one executor at capacity 0.999, its
// siblings at 0.011-0.026.
func hotKey() scenario {
	s := healthy()
	s.maxPending = 1000
	s.pending = func(int) int64 { return 1000 }
	s.ackRate = 400
	s.complete = 2 * time.Second
	shares := []float64{0.9, 0.015, 0.015, 0.014, 0.014, 0.014, 0.014, 0.014}
	caps := []float64{0.999, 0.026, 0.02, 0.018, 0.015, 0.013, 0.012, 0.011}
	s.bolts = []bolt{
		{name: "parse", execs: 1, tasks: 1, rate: 400, capacity: 0.02, execute: 40 * time.Microsecond},
		{name: "work", input: "parse", execs: 8, tasks: 8, rate: 400, capacity: 0.999, execute: 2500 * time.Microsecond,
			fields: []string{"key"}, execShares: shares, execCaps: caps},
	}
	return s
}

// A hot key: one executor saturated behind a fields grouping. More
// executors do not help (the key's tuples all go to one task); doctor
// names the skew and suggests partial key grouping or a better key.
func TestHotKey(t *testing.T) {
	r := Diagnose(hotKey().samples(4, 5*time.Second))
	wantKinds(t, r, KindBoltSkewed)
	f := r.Findings[0]
	if f.Component != "work" || f.Severity != Warning {
		t.Errorf("finding: component %q, severity %s; want work, warning", f.Component, f.Severity)
	}
	if strings.Contains(f.Fix, "rebalance") || strings.Contains(f.Fix, "more executors:") ||
		!strings.Contains(f.Fix, `subscribe work with PartialKeyGrouping("parse", "key")`) || !strings.Contains(f.Fix, "a key with many evenly used values") {
		t.Errorf("fix: got %q, want Gale's PartialKeyGrouping call or a better key, not more executors", f.Fix)
	}
	if got := metric(f, "busiest executor"); got != "task 10 on 127.0.0.1:6700 at capacity 1.00" {
		t.Errorf("busiest executor: got %q", got)
	}
	if got := metric(f, "the other executors' capacity"); got != "0.011 to 0.026 (7 of them)" {
		t.Errorf("the others' capacity: got %q", got)
	}
	if got := metric(f, "busiest executor's share of the input executed"); got != "90% (an even share: 12%)" {
		t.Errorf("share: got %q", got)
	}
	if got := metric(f, "input grouping"); got != "fields on key" {
		t.Errorf("grouping: got %q, want fields on key", got)
	}

	// The same bolt with its load spread evenly is saturated: more
	// executors help.
	s := hotKey()
	s.bolts[1].execShares = []float64{0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125}
	s.bolts[1].execCaps = []float64{0.999, 0.97, 0.96, 0.98, 0.95, 0.99, 0.97, 0.96}
	s.bolts[1].tasks = 16
	r = Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindBoltSaturated)
	if f := r.Findings[0]; !strings.Contains(f.Fix, "gale rebalance wc -e work=") {
		t.Errorf("even load: fix %q, want more executors", f.Fix)
	}
}

// A hot key under partial key grouping already: its two tasks cannot take
// it, so doctor says to salt it, not to use the grouping it uses; and a
// skew under local-or-shuffle is put down to where the sources run.
func TestHotKeyOtherGroupings(t *testing.T) {
	s := hotKey()
	s.bolts[1].grouping = "partial-key"
	f := Diagnose(s.samples(4, 5*time.Second)).Findings[0]
	if f.Kind != KindBoltSkewed || !strings.Contains(f.Cause, "partial key grouping (key) splits each key over two tasks") ||
		!strings.Contains(f.Fix, "add a salt") || strings.Contains(f.Fix, "PartialKeyGrouping(") {
		t.Errorf("partial key: got %s, cause %q, fix %q; want the key salted", f.Kind, f.Cause, f.Fix)
	}
	if got := metric(f, "input grouping"); got != "partial-key on key" {
		t.Errorf("partial key: input grouping %q, want partial-key on key", got)
	}

	s = hotKey()
	s.bolts[1].fields, s.bolts[1].grouping = nil, "local-or-shuffle"
	f = Diagnose(s.samples(4, 5*time.Second)).Findings[0]
	if f.Kind != KindBoltSkewed || !strings.Contains(f.Cause, "local-or-shuffle grouping sends a worker's tuples") ||
		!strings.Contains(f.Fix, "use shuffle grouping for work") {
		t.Errorf("local-or-shuffle: got %s, cause %q, fix %q; want the sources' placement named", f.Kind, f.Cause, f.Fix)
	}
}

// Too many workers asked with another topology on the cluster: the
// rebalance doctor suggests counts the free slots, not all of them.
func TestShapeOtherTopology(t *testing.T) {
	s := healthy()
	s.workers, s.slots, s.otherUsed = 10, 4, 2
	s.pendingReason = "needs 10 slots, 6 are free"
	r := Diagnose(s.samples(3, 5*time.Second))
	wantKinds(t, r, KindShape)
	f := r.Findings[0]
	if !strings.Contains(f.Fix, "gale rebalance wc -n 6") || metric(f, "slots free / total") != "6 / 8" {
		t.Errorf("fix %q (slots %q), want gale rebalance wc -n 6: 6 of the 8 slots are free", f.Fix, metric(f, "slots free / total"))
	}
	// Asking for fewer than the cluster has, but more than is free.
	s.workers = 7
	f = Diagnose(s.samples(3, 5*time.Second)).Findings[0]
	if !strings.Contains(f.Fix, "gale rebalance wc -n 6") {
		t.Errorf("7 asked, 6 free: fix %q, want gale rebalance wc -n 6", f.Fix)
	}
	// Nothing free: no rebalance would start it.
	s.workers, s.otherUsed = 3, 8
	f = Diagnose(s.samples(3, 5*time.Second)).Findings[0]
	if strings.Contains(f.Fix, "rebalance") || !strings.Contains(f.Fix, "no slot is free") {
		t.Errorf("no slot free: fix %q, want no rebalance, say no slot is free", f.Fix)
	}
}

// GC pressure: a worker whose heap sits at its limit collects 138 times
// a second and is paused 8% of the time; its bolts look healthy.
func TestGCPressure(t *testing.T) {
	s := healthy()
	s.worker = func(i int, ws []*nimbuspb.WorkerReport) {
		t := 60 + 5*float64(i)
		for j, w := range ws {
			w.StartedUnixMs = time.Date(2026, 12, 1, 11, 59, 0, 0, time.UTC).UnixMilli()
			w.CpuSeconds = 0.2 * t
			w.HeapBytes = 120 << 20
			if j == 0 {
				w.GcCount, w.GcPauseNanos, w.CpuSeconds = int64(138*t), int64(0.08*t*1e9), 1.4*t
			}
		}
	}
	r := Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindGCPressure)
	f := r.Findings[0]
	if got := metric(f, "worker 127.0.0.1:6700"); got != "2070 GCs in 15 s (138/s), paused 8.0% of the time, 1.40 cores of CPU, heap in use 120 MiB" {
		t.Errorf("evidence: got %q", got)
	}
	if len(f.Evidence) != 1 {
		t.Errorf("evidence: %v, want the one worker under pressure", f.Evidence)
	}
	if !strings.Contains(f.Fix, "worker.heap.memory.mb") || !strings.Contains(f.Fix, "about 256") || !strings.Contains(f.Fix, "live state") {
		t.Errorf("fix: got %q, want worker.heap.memory.mb raised to about 256, or less live state", f.Fix)
	}
	// One sample: since the workers started.
	r = Diagnose(s.samples(1, 5*time.Second))
	if f := find(t, r, KindGCPressure); !strings.Contains(metric(f, "worker 127.0.0.1:6700"), "8280 GCs in 60 s") {
		t.Errorf("one sample: %v", f.Evidence)
	}
	// A busy worker collecting 15 times a second with short pauses is
	// not under pressure.
	s.worker = func(i int, ws []*nimbuspb.WorkerReport) {
		t := 60 + 5*float64(i)
		for _, w := range ws {
			w.GcCount, w.GcPauseNanos = int64(15*t), int64(0.002*t*1e9)
		}
	}
	wantKinds(t, Diagnose(s.samples(4, 5*time.Second)))
	// The healthy scenario's workers collect now and then.
	s.worker = func(i int, ws []*nimbuspb.WorkerReport) {
		for _, w := range ws {
			w.GcCount, w.GcPauseNanos = int64(i)*3, int64(i)*300_000
		}
	}
	wantKinds(t, Diagnose(s.samples(4, 5*time.Second)))
}

// A bolt that executes its input but never acks it: its trees fill the
// spout's cap and time out. Doctor names the bolt rather than a replay
// storm, and does not call the spout throttled.
func TestNotAcking(t *testing.T) {
	s := healthy()
	s.maxPending = 1000
	s.pending = func(int) int64 { return 1000 }
	s.ackRate, s.timeoutRate = 0, 33
	s.complete = 0
	s.bolts = []bolt{
		{name: "parse", execs: 1, tasks: 1, rate: 33, capacity: 0.01, execute: 40 * time.Microsecond},
		{name: "work", input: "parse", execs: 1, tasks: 4, rate: 33, capacity: 0.05, execute: time.Millisecond, noAck: true},
	}
	r := Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindNotAcking)
	f := r.Findings[0]
	if f.Component != "work" || f.Severity != Critical || !strings.Contains(f.Fix, "make work ack each input") {
		t.Errorf("finding: %+v; want work, critical, a fix to ack", f)
	}
	// Before the first trees time out, the same.
	s.timeoutRate = 0
	r = Diagnose(s.samples(4, 5*time.Second))
	wantKinds(t, r, KindNotAcking)
}
