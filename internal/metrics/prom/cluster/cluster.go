// Package cluster is the Prometheus collector of the UI process's
// /metrics: the cluster in one scrape, read from a nimbus (the leader, or
// another when it cannot answer) on each scrape, List then a Get per
// topology. It exports what nimbus sums from the supervisors' reports
// (gale_cluster_*, gale_topology_*, and internal/metrics/prom's
// per-component series under gale_: gale_component_*, gale_spout_*,
// gale_bolt_*) and each running worker process's numbers as its
// supervisor last reported them (gale_worker_*, labelled by supervisor,
// host and port), so no worker needs to be reachable from Prometheus.
//
// The topology and component counters are held at their highest: the
// nimbuses agree to within a report, and a scrape answered by another
// nimbus than the last (the leader died) must not show a counter lower
// than before, which Prometheus would read as a reset. The worker
// processes' counters are not held: a new worker process starts its
// series again from 0, as Prometheus's counter resets allow.
package cluster

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/metrics/components"
	"github.com/gale-stream/gale/internal/metrics/prom"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// Nimbus is the part of the nimbus API the collector reads. It must be
// safe for concurrent use.
type Nimbus interface {
	List(ctx context.Context, in *nimbuspb.ListRequest, opts ...grpc.CallOption) (*nimbuspb.ListResponse, error)
	Get(ctx context.Context, in *nimbuspb.GetRequest, opts ...grpc.CallOption) (*nimbuspb.TopologyInfo, error)
	ClusterInfo(ctx context.Context, in *nimbuspb.ClusterInfoRequest, opts ...grpc.CallOption) (*nimbuspb.ClusterInfoResponse, error)
}

// scrapeTimeout bounds the nimbus calls of one scrape.
const scrapeTimeout = 5 * time.Second

// collector reads the cluster's and the topologies' numbers from nimbus
// on each scrape.
type collector struct {
	prom.Descs
	nimbus Nimbus
	high   *high

	up, supervisors, slotsTotal, slotsUsed, topologies *prometheus.Desc
	emitted, acked, failed, workers, workersRunning    *prometheus.Desc
	executors, tasks, active, uptime, latency          *prometheus.Desc

	comps                                                *prom.Components
	boltProcess, queueDepth, queueCapacity, backpressure *prometheus.Desc
	retries, deadLetters, errors                         *prometheus.Desc
	spoutPending, spoutMaxPending, spoutThrottled        *prometheus.Desc

	// The worker processes', from the supervisors' reports.
	workerCPU, workerHeap, workerRSS, workerGC, workerGCPause *prometheus.Desc
	workerGoroutines, workerIn, workerOut, workerRestarts     *prometheus.Desc
	workerStart                                               *prometheus.Desc
}

// NewCollector is the collector of the cluster n answers for.
func NewCollector(n Nimbus) prometheus.Collector {
	topo := []string{"topology", "topology_id"}
	comp := []string{"topology", "topology_id", "component", "kind"}
	wl := []string{"topology", "topology_id", "supervisor", "host", "port"}
	c := &collector{nimbus: n, high: &high{}}
	d := c.Descs.New
	c.up = d("gale_nimbus_up", "1 if the UI's last scrape reached a nimbus (the leader, or another when it cannot answer), else 0 (and no other gale_ series).")
	c.supervisors = d("gale_cluster_supervisors", "Supervisors alive in the cluster.")
	c.slotsTotal = d("gale_cluster_slots_total", "Worker slots (supervisor ports) in the cluster.")
	c.slotsUsed = d("gale_cluster_slots_used", "Worker slots running a worker.")
	c.topologies = d("gale_cluster_topologies", "Topologies submitted and not killed.")
	c.emitted = d("gale_topology_emitted_total", "Tuples the topology's spouts emitted, since the topology was submitted, every worker it ran counted.", topo...)
	c.acked = d("gale_topology_acked_total", "Tuple trees acked, since the topology was submitted, every worker it ran counted.", topo...)
	c.failed = d("gale_topology_failed_total", "Tuple trees failed, since the topology was submitted, every worker it ran counted.", topo...)
	c.workers = d("gale_topology_workers", "Workers the topology asks for (topology.workers).", topo...)
	c.workersRunning = d("gale_topology_workers_running", "The topology's workers the supervisors report running and heartbeating.", topo...)
	c.executors = d("gale_topology_executors", "The topology's executors.", topo...)
	c.tasks = d("gale_topology_tasks", "The topology's tasks.", topo...)
	c.active = d("gale_topology_active", "1 if the topology's status is ACTIVE, else 0.", append(topo, "status")...)
	c.uptime = d("gale_topology_uptime_seconds", "Seconds since the topology was submitted.", topo...)
	c.latency = d("gale_topology_complete_latency_seconds", "Tuple trees acked, by complete latency (emit to ack), since the topology was submitted, every worker it ran counted.", topo...)

	c.comps = prom.NewComponents(&c.Descs, "gale_", prom.ComponentHelp{
		Emitted:            "Tuples the component emitted, since the topology was submitted, every worker it ran counted.",
		Transferred:        "Copies of the component's tuples sent to a task in another worker.",
		Acked:              "A spout's trees acked; a bolt's input tuples acked.",
		Failed:             "A spout's trees failed; a bolt's input tuples failed.",
		SpoutFailed:        "A spout's trees failed, by reason: bolt (a bolt failed a tuple), timeout (topology.message.timeout.secs), shutdown.",
		BoltExecuted:       "A bolt's input tuples executed.",
		BoltCapacity:       "The share of the last 10 to 20 s the bolt's busiest executor spent executing; near 1 it is saturated.",
		BoltExecuteLatency: "A bolt's mean execute latency, from one Execute in 64 timed.",
	})
	c.boltProcess = d("gale_bolt_process_latency_seconds", "A bolt's mean process latency (a tuple's arrival at the executor to its ack), from the tuples timed.", comp[:3]...)
	c.queueDepth = d("gale_component_queue_depth", "Tuples waiting in the component's executors' input queues, at the workers' last reports.", comp...)
	c.queueCapacity = d("gale_component_queue_capacity", "The tuples the component's executors' input queues hold when full.", comp...)
	c.backpressure = d("gale_component_backpressure_seconds_total", "Time the component's executors waited to emit on a full queue (backpressure from downstream).", comp...)
	c.retries = d("gale_component_retries_total", "Retries a spout (a connector's, package retry) scheduled.", comp...)
	c.deadLetters = d("gale_component_dead_letters_total", "Messages a spout gave up to its dead-letter sink.", comp...)
	c.errors = d("gale_component_errors", "Errors the component's tasks reported (ReportError, a panic), of the latest ones the workers keep.", comp...)
	c.spoutPending = d("gale_spout_pending_trees", "A spout's trees in flight, at the workers' last reports.", comp[:3]...)
	c.spoutMaxPending = d("gale_spout_max_pending_trees", "A spout's limit on trees in flight (topology.max.spout.pending, set, automatic or tuned; 0: none).", comp[:3]...)
	c.spoutThrottled = d("gale_spout_throttled_seconds_total", "Time a spout held back because its trees in flight were at its max pending.", comp[:3]...)

	c.workerCPU = d("gale_worker_cpu_seconds_total", "CPU time (user and system) the worker process used, since it started.", wl...)
	c.workerHeap = d("gale_worker_heap_bytes", "The worker process's heap in use.", wl...)
	c.workerRSS = d("gale_worker_resident_memory_bytes", "The worker process's resident set size.", wl...)
	c.workerGC = d("gale_worker_gc_cycles_total", "Garbage collections the worker process ran, since it started.", wl...)
	c.workerGCPause = d("gale_worker_gc_pause_seconds_total", "Time the worker process's collections stopped the world, since it started.", wl...)
	c.workerGoroutines = d("gale_worker_goroutines", "Goroutines in the worker process.", wl...)
	c.workerIn = d("gale_worker_received_bytes_total", "Bytes the worker read from its peers, since it started.", wl...)
	c.workerOut = d("gale_worker_sent_bytes_total", "Bytes the worker wrote to its peers, since it started.", wl...)
	c.workerRestarts = d("gale_worker_restarts_total", "How often the supervisor started the slot's worker of the topology again after it failed (exited, missed heartbeats, never started).", wl...)
	c.workerStart = d("gale_worker_start_time_seconds", "When the running worker process started, in seconds since the Unix epoch.", wl...)
	return c
}

// Slots are the worker slots the supervisors have (their ports), and
// those running a worker.
func Slots(ci *nimbuspb.ClusterInfoResponse) (total, used int) {
	for _, sv := range ci.GetSupervisors() {
		total += len(sv.GetPorts())
		used += int(sv.GetSlotsUsed())
	}
	return total, used
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	ci, err := c.nimbus.ClusterInfo(ctx, &nimbuspb.ClusterInfoRequest{})
	var list *nimbuspb.ListResponse
	if err == nil {
		list, err = c.nimbus.List(ctx, &nimbuspb.ListRequest{})
	}
	o := prom.Out{Ch: ch}
	if err != nil {
		o.Gauge(c.up, 0)
		return
	}
	o.Gauge(c.up, 1)
	live := make(map[string]bool, len(list.GetTopologies()))
	for _, t := range list.GetTopologies() {
		live[t.GetId()] = true
	}
	c.high.forget(live)
	// The topologies' and components' counters are held at their
	// highest (labels[1] is the topology id).
	o.Hold = func(d *prometheus.Desc, v float64, labels []string) float64 { return c.high.hold(d, v, labels) }

	total, used := Slots(ci)
	o.Gauge(c.supervisors, float64(len(ci.GetSupervisors())))
	o.Gauge(c.slotsTotal, float64(total))
	o.Gauge(c.slotsUsed, float64(used))
	o.Gauge(c.topologies, float64(len(list.GetTopologies())))
	for _, t := range list.GetTopologies() {
		l := []string{t.GetName(), t.GetId()}
		o.Counter(c.emitted, float64(t.GetEmitted()), l...)
		o.Counter(c.acked, float64(t.GetAcked()), l...)
		o.Counter(c.failed, float64(t.GetFailed()), l...)
		o.Gauge(c.workers, float64(t.GetWorkers()), l...)
		o.Gauge(c.workersRunning, float64(t.GetWorkersRunning()), l...)
		o.Gauge(c.executors, float64(t.GetExecutors()), l...)
		o.Gauge(c.tasks, float64(t.GetTasks()), l...)
		var active float64
		if t.GetStatus() == "ACTIVE" {
			active = 1
		}
		o.Gauge(c.active, active, append(l, t.GetStatus())...)
		o.Gauge(c.uptime, float64(t.GetUptimeSecs()), l...)
		lat, _ := components.LatencyOf(t.GetCompleteLatency()) // nimbus sums checked histograms
		o.Histogram(c.latency, &lat, l...)
		// Per component, from the topology's worker reports: one Get each.
		info, err := c.nimbus.Get(ctx, &nimbuspb.GetRequest{Name: t.GetId()})
		if err != nil {
			continue // killed since the list, or nimbus went away: next scrape
		}
		for _, cs := range info.GetComponents() {
			c.collectComponent(o, t, cs)
		}
		c.collectWorkers(o, t, info.GetWorkers())
	}
}

// collectComponent sends the series of topology t's component cs.
func (c *collector) collectComponent(o prom.Out, t *nimbuspb.TopologySummary, cs *nimbuspb.ComponentStats) {
	c.comps.Collect(o, t.GetName(), t.GetId(), prom.Component{ID: cs.GetComponent(), Kind: cs.GetKind(),
		Emitted: cs.GetEmitted(), Transferred: cs.GetTransferred(), Acked: cs.GetAcked(), Failed: cs.GetFailed(),
		FailedByBolt: cs.GetFailedByBolt(), TimedOut: cs.GetTimedOut(), FailedShutdown: cs.GetFailedShutdown(),
		Executed: cs.GetExecuted(), Capacity: cs.GetCapacity(),
		ExecuteLatencySeconds: metrics.MeanNanos(cs.GetExecuteSamples(), cs.GetExecuteSampledNanos()) / 1e6 / 1e3})
	cl := []string{t.GetName(), t.GetId(), cs.GetComponent(), cs.GetKind()}
	o.Gauge(c.queueDepth, float64(cs.GetQueueDepth()), cl...)
	o.Gauge(c.queueCapacity, float64(cs.GetQueueCapacity()), cl...)
	o.Counter(c.backpressure, float64(cs.GetBackpressureNanos())/1e9, cl...)
	o.Counter(c.retries, float64(cs.GetRetries()), cl...)
	o.Counter(c.deadLetters, float64(cs.GetDeadLetters()), cl...)
	o.Gauge(c.errors, float64(len(cs.GetErrors())), cl...)
	if cs.GetKind() == "spout" {
		o.Gauge(c.spoutPending, float64(cs.GetPending()), cl[:3]...)
		o.Gauge(c.spoutMaxPending, float64(cs.GetMaxPending()), cl[:3]...)
		o.Counter(c.spoutThrottled, float64(cs.GetThrottledNanos())/1e9, cl[:3]...)
		return
	}
	o.Gauge(c.boltProcess, metrics.MeanNanos(cs.GetProcessSamples(), cs.GetProcessSampledNanos())/1e6/1e3, cl[:3]...)
}

// collectWorkers sends the series of topology t's worker processes: one
// set per slot that runs one (a slot listed twice, a worker stopping as
// the next starts, counts once: the running one). They are not held.
func (c *collector) collectWorkers(o prom.Out, t *nimbuspb.TopologySummary, ws []*nimbuspb.WorkerReport) {
	o.Hold = nil
	seen := map[string]bool{}
	for _, w := range ws {
		l := []string{t.GetName(), t.GetId(), w.GetSupervisor(), w.GetHost(), strconv.Itoa(int(w.GetPort()))}
		key := w.GetSupervisor() + "\x00" + l[4]
		if w.GetPid() == 0 || seen[key] {
			continue
		}
		seen[key] = true
		o.Counter(c.workerCPU, w.GetCpuSeconds(), l...)
		o.Gauge(c.workerHeap, float64(w.GetHeapBytes()), l...)
		o.Gauge(c.workerRSS, float64(w.GetRssBytes()), l...)
		o.Counter(c.workerGC, float64(w.GetGcCount()), l...)
		o.Counter(c.workerGCPause, float64(w.GetGcPauseNanos())/1e9, l...)
		o.Gauge(c.workerGoroutines, float64(w.GetGoroutines()), l...)
		o.Counter(c.workerIn, float64(w.GetBytesIn()), l...)
		o.Counter(c.workerOut, float64(w.GetBytesOut()), l...)
		o.Counter(c.workerRestarts, float64(w.GetRestarts()), l...)
		o.Gauge(c.workerStart, float64(w.GetStartedUnixMs())/1e3, l...)
	}
}

// high holds, per topology id, the largest value each of its topology
// and component counters has had. Safe for concurrent use.
type high struct {
	mu struct {
		sync.Mutex
		values map[string]map[string]float64 // topology id → series → value
	}
}

// forget drops the topologies not live (killed).
func (h *high) forget(live map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.mu.values {
		if !live[id] {
			delete(h.mu.values, id)
		}
	}
}

// hold is v, or the series' highest value if that is larger, which it
// keeps (labels[1] is the topology id).
func (h *high) hold(d *prometheus.Desc, v float64, labels []string) float64 {
	id := labels[1]
	key := d.String() + "\x00" + strings.Join(labels, "\x00")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.values == nil {
		h.mu.values = make(map[string]map[string]float64)
	}
	hs := h.mu.values[id]
	if hs == nil {
		hs = make(map[string]float64)
		h.mu.values[id] = hs
	}
	v = max(v, hs[key])
	hs[key] = v
	return v
}
