package ui

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// scrapeTimeout bounds the nimbus calls of one scrape.
const scrapeTimeout = 5 * time.Second

// latencyBounds are the upper bounds, in seconds, of the complete-latency
// histogram's buckets. A nimbus bucket counts under the first bound at or
// above its own upper bound, so a tree may count one bound high, never low.
var latencyBounds = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// collector reads the cluster's and the topologies' numbers from nimbus
// on each scrape.
type collector struct {
	nimbus Nimbus

	// high holds, per topology id, the largest value each of its
	// topology and component counters has had: the nimbuses agree to
	// within a report, and a scrape answered by another nimbus than the
	// last (the leader died) must not show a counter lower than before,
	// which Prometheus would read as a reset. The worker processes'
	// counters are not held: a new worker process starts its series
	// again from 0, as Prometheus's counter resets allow.
	mu struct {
		sync.Mutex
		high map[string]map[string]float64 // topology id → series → value
	}

	up, supervisors, slotsTotal, slotsUsed, topologies *prometheus.Desc
	emitted, acked, failed, workers, workersRunning    *prometheus.Desc
	executors, tasks, active, uptime, latency          *prometheus.Desc

	compEmitted, compTransferred, compAcked, compFailed  *prometheus.Desc
	spoutFailed, boltExecuted, boltCapacity, boltExec    *prometheus.Desc
	boltProcess, queueDepth, queueCapacity, backpressure *prometheus.Desc
	retries, deadLetters, errors                         *prometheus.Desc
	spoutPending, spoutMaxPending, spoutThrottled        *prometheus.Desc

	// The worker processes', from the supervisors' reports.
	workerCPU, workerHeap, workerRSS, workerGC, workerGCPause *prometheus.Desc
	workerGoroutines, workerIn, workerOut, workerRestarts     *prometheus.Desc
	workerStart                                               *prometheus.Desc
}

func newCollector(n Nimbus) *collector {
	topo := []string{"topology", "topology_id"}
	comp := []string{"topology", "topology_id", "component", "kind"}
	wl := []string{"topology", "topology_id", "supervisor", "host", "port"}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &collector{
		nimbus:         n,
		up:             d("gale_nimbus_up", "1 if the UI's last scrape reached a nimbus (the leader, or another when it cannot answer), else 0 (and no other gale_ series)."),
		supervisors:    d("gale_cluster_supervisors", "Supervisors alive in the cluster."),
		slotsTotal:     d("gale_cluster_slots_total", "Worker slots (supervisor ports) in the cluster."),
		slotsUsed:      d("gale_cluster_slots_used", "Worker slots running a worker."),
		topologies:     d("gale_cluster_topologies", "Topologies submitted and not killed."),
		emitted:        d("gale_topology_emitted_total", "Tuples the topology's spouts emitted, since the topology was submitted, every worker it ran counted.", topo...),
		acked:          d("gale_topology_acked_total", "Tuple trees acked, since the topology was submitted, every worker it ran counted.", topo...),
		failed:         d("gale_topology_failed_total", "Tuple trees failed, since the topology was submitted, every worker it ran counted.", topo...),
		workers:        d("gale_topology_workers", "Workers the topology asks for (topology.workers).", topo...),
		workersRunning: d("gale_topology_workers_running", "The topology's workers the supervisors report running and heartbeating.", topo...),
		executors:      d("gale_topology_executors", "The topology's executors.", topo...),
		tasks:          d("gale_topology_tasks", "The topology's tasks.", topo...),
		active:         d("gale_topology_active", "1 if the topology's status is ACTIVE, else 0.", append(topo, "status")...),
		uptime:         d("gale_topology_uptime_seconds", "Seconds since the topology was submitted.", topo...),
		latency:        d("gale_topology_complete_latency_seconds", "Tuple trees acked, by complete latency (emit to ack), since the topology was submitted, every worker it ran counted.", topo...),

		compEmitted:     d("gale_component_emitted_total", "Tuples the component emitted, since the topology was submitted, every worker it ran counted.", comp...),
		compTransferred: d("gale_component_transferred_total", "Copies of the component's tuples sent to a task in another worker.", comp...),
		compAcked:       d("gale_component_acked_total", "A spout's trees acked; a bolt's input tuples acked.", comp...),
		compFailed:      d("gale_component_failed_total", "A spout's trees failed; a bolt's input tuples failed.", comp...),
		spoutFailed:     d("gale_spout_failed_by_reason_total", "A spout's trees failed, by reason: bolt (a bolt failed a tuple), timeout (topology.message.timeout.secs), shutdown.", append(comp[:4:4], "reason")...),
		boltExecuted:    d("gale_bolt_executed_total", "A bolt's input tuples executed.", comp[:3]...),
		boltCapacity:    d("gale_bolt_capacity_ratio", "The share of the last 10 to 20 s the bolt's busiest executor spent executing; near 1 it is saturated.", comp[:3]...),
		boltExec:        d("gale_bolt_execute_latency_seconds", "A bolt's mean execute latency, from one Execute in 64 timed.", comp[:3]...),
		boltProcess:     d("gale_bolt_process_latency_seconds", "A bolt's mean process latency (a tuple's arrival at the executor to its ack), from the tuples timed.", comp[:3]...),
		queueDepth:      d("gale_component_queue_depth", "Tuples waiting in the component's executors' input queues, at the workers' last reports.", comp...),
		queueCapacity:   d("gale_component_queue_capacity", "The tuples the component's executors' input queues hold when full.", comp...),
		backpressure:    d("gale_component_backpressure_seconds_total", "Time the component's executors waited to emit on a full queue (backpressure from downstream).", comp...),
		retries:         d("gale_component_retries_total", "Retries a spout (a connector's, package retry) scheduled.", comp...),
		deadLetters:     d("gale_component_dead_letters_total", "Messages a spout gave up to its dead-letter sink.", comp...),
		errors:          d("gale_component_errors", "Errors the component's tasks reported (ReportError, a panic), of the latest ones the workers keep.", comp...),
		spoutPending:    d("gale_spout_pending_trees", "A spout's trees in flight, at the workers' last reports.", comp[:3]...),
		spoutMaxPending: d("gale_spout_max_pending_trees", "A spout's limit on trees in flight (topology.max.spout.pending, set, automatic or tuned; 0: none).", comp[:3]...),
		spoutThrottled:  d("gale_spout_throttled_seconds_total", "Time a spout held back because its trees in flight were at its max pending.", comp[:3]...),

		workerCPU:        d("gale_worker_cpu_seconds_total", "CPU time (user and system) the worker process used, since it started.", wl...),
		workerHeap:       d("gale_worker_heap_bytes", "The worker process's heap in use.", wl...),
		workerRSS:        d("gale_worker_resident_memory_bytes", "The worker process's resident set size.", wl...),
		workerGC:         d("gale_worker_gc_cycles_total", "Garbage collections the worker process ran, since it started.", wl...),
		workerGCPause:    d("gale_worker_gc_pause_seconds_total", "Time the worker process's collections stopped the world, since it started.", wl...),
		workerGoroutines: d("gale_worker_goroutines", "Goroutines in the worker process.", wl...),
		workerIn:         d("gale_worker_received_bytes_total", "Bytes the worker read from its peers, since it started.", wl...),
		workerOut:        d("gale_worker_sent_bytes_total", "Bytes the worker wrote to its peers, since it started.", wl...),
		workerRestarts:   d("gale_worker_restarts_total", "How often the supervisor started the slot's worker of the topology again after it failed (exited, missed heartbeats, never started).", wl...),
		workerStart:      d("gale_worker_start_time_seconds", "When the running worker process started, in seconds since the Unix epoch.", wl...),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.supervisors, c.slotsTotal, c.slotsUsed, c.topologies,
		c.emitted, c.acked, c.failed, c.workers, c.workersRunning, c.executors, c.tasks, c.active, c.uptime, c.latency,
		c.compEmitted, c.compTransferred, c.compAcked, c.compFailed, c.spoutFailed, c.boltExecuted, c.boltCapacity, c.boltExec,
		c.boltProcess, c.queueDepth, c.queueCapacity, c.backpressure, c.retries, c.deadLetters, c.errors,
		c.spoutPending, c.spoutMaxPending, c.spoutThrottled,
		c.workerCPU, c.workerHeap, c.workerRSS, c.workerGC, c.workerGCPause, c.workerGoroutines, c.workerIn, c.workerOut,
		c.workerRestarts, c.workerStart} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	ci, err := c.nimbus.ClusterInfo(ctx, &nimbuspb.ClusterInfoRequest{})
	var list *nimbuspb.ListResponse
	if err == nil {
		list, err = c.nimbus.List(ctx, &nimbuspb.ListRequest{})
	}
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	s := cluster(ci, list)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	live := make(map[string]bool, len(list.GetTopologies()))
	for _, t := range list.GetTopologies() {
		live[t.GetId()] = true
	}
	c.mu.Lock()
	if c.mu.high == nil {
		c.mu.high = make(map[string]map[string]float64)
	}
	for id := range c.mu.high {
		if !live[id] {
			delete(c.mu.high, id) // killed
		}
	}
	c.mu.Unlock()
	// counter sends a topology's or a component's counter, never lower
	// than it was (labels[1] is the topology id).
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		id := labels[1]
		c.mu.Lock()
		hs := c.mu.high[id]
		if hs == nil {
			hs = make(map[string]float64)
			c.mu.high[id] = hs
		}
		key := d.String() + "\x00" + strings.Join(labels, "\x00")
		v = max(v, hs[key])
		hs[key] = v
		c.mu.Unlock()
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(c.supervisors, float64(len(ci.GetSupervisors())))
	gauge(c.slotsTotal, float64(s.slotsTotal))
	gauge(c.slotsUsed, float64(s.slotsUsed))
	gauge(c.topologies, float64(len(list.GetTopologies())))
	for _, t := range list.GetTopologies() {
		l := []string{t.GetName(), t.GetId()}
		counter(c.emitted, float64(t.GetEmitted()), l...)
		counter(c.acked, float64(t.GetAcked()), l...)
		counter(c.failed, float64(t.GetFailed()), l...)
		gauge(c.workers, float64(t.GetWorkers()), l...)
		gauge(c.workersRunning, float64(t.GetWorkersRunning()), l...)
		gauge(c.executors, float64(t.GetExecutors()), l...)
		gauge(c.tasks, float64(t.GetTasks()), l...)
		var active float64
		if t.GetStatus() == "ACTIVE" {
			active = 1
		}
		gauge(c.active, active, append(l, t.GetStatus())...)
		gauge(c.uptime, float64(t.GetUptimeSecs()), l...)
		sum, n, buckets := histogram(t.GetCompleteLatency())
		ch <- prometheus.MustNewConstHistogram(c.latency, n, sum, buckets, l...)
		// Per component, from the topology's worker reports: one Get each.
		info, err := c.nimbus.Get(ctx, &nimbuspb.GetRequest{Name: t.GetId()})
		if err != nil {
			continue // killed since the list, or nimbus went away: next scrape
		}
		for _, cs := range info.GetComponents() {
			cl := []string{t.GetName(), t.GetId(), cs.GetComponent(), cs.GetKind()}
			counter(c.compEmitted, float64(cs.GetEmitted()), cl...)
			counter(c.compTransferred, float64(cs.GetTransferred()), cl...)
			counter(c.compAcked, float64(cs.GetAcked()), cl...)
			counter(c.compFailed, float64(cs.GetFailed()), cl...)
			gauge(c.queueDepth, float64(cs.GetQueueDepth()), cl...)
			gauge(c.queueCapacity, float64(cs.GetQueueCapacity()), cl...)
			counter(c.backpressure, float64(cs.GetBackpressureNanos())/1e9, cl...)
			counter(c.retries, float64(cs.GetRetries()), cl...)
			counter(c.deadLetters, float64(cs.GetDeadLetters()), cl...)
			gauge(c.errors, float64(len(cs.GetErrors())), cl...)
			if cs.GetKind() == "spout" {
				sl := cl[:3]
				gauge(c.spoutPending, float64(cs.GetPending()), sl...)
				gauge(c.spoutMaxPending, float64(cs.GetMaxPending()), sl...)
				counter(c.spoutThrottled, float64(cs.GetThrottledNanos())/1e9, sl...)
				counter(c.spoutFailed, float64(cs.GetFailedByBolt()), append(cl, "bolt")...)
				counter(c.spoutFailed, float64(cs.GetTimedOut()), append(cl, "timeout")...)
				counter(c.spoutFailed, float64(cs.GetFailedShutdown()), append(cl, "shutdown")...)
				continue
			}
			bl := cl[:3]
			counter(c.boltExecuted, float64(cs.GetExecuted()), bl...)
			gauge(c.boltCapacity, cs.GetCapacity(), bl...)
			gauge(c.boltExec, meanMillisFloat(cs.GetExecuteSamples(), cs.GetExecuteSampledNanos())/1e3, bl...)
			gauge(c.boltProcess, meanMillisFloat(cs.GetProcessSamples(), cs.GetProcessSampledNanos())/1e3, bl...)
		}
		c.collectWorkers(ch, t, info.GetWorkers())
	}
}

// collectWorkers sends the series of topology t's worker processes: one
// set per slot that runs one (a slot listed twice, a worker stopping as
// the next starts, counts once: the running one).
func (c *collector) collectWorkers(ch chan<- prometheus.Metric, t *nimbuspb.TopologySummary, ws []*nimbuspb.WorkerReport) {
	seen := map[string]bool{}
	for _, w := range ws {
		l := []string{t.GetName(), t.GetId(), w.GetSupervisor(), w.GetHost(), strconv.Itoa(int(w.GetPort()))}
		key := w.GetSupervisor() + "\x00" + l[4]
		if w.GetPid() == 0 || seen[key] {
			continue
		}
		seen[key] = true
		counter := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
		}
		counter(c.workerCPU, w.GetCpuSeconds())
		gauge(c.workerHeap, float64(w.GetHeapBytes()))
		gauge(c.workerRSS, float64(w.GetRssBytes()))
		counter(c.workerGC, float64(w.GetGcCount()))
		counter(c.workerGCPause, float64(w.GetGcPauseNanos())/1e9)
		gauge(c.workerGoroutines, float64(w.GetGoroutines()))
		counter(c.workerIn, float64(w.GetBytesIn()))
		counter(c.workerOut, float64(w.GetBytesOut()))
		counter(c.workerRestarts, float64(w.GetRestarts()))
		gauge(c.workerStart, float64(w.GetStartedUnixMs())/1e3)
	}
}

// histogram is h in Prometheus's form: the sum in seconds, the count, and
// the cumulative counts at latencyBounds.
func histogram(h *nimbuspb.LatencyHistogram) (sum float64, n uint64, cumulative map[float64]uint64) {
	sumMicros, n := latencySum(h)
	per := make([]uint64, len(latencyBounds))
	counts := h.GetCounts()
	for i, b := range h.GetBuckets() {
		if i >= len(counts) || counts[i] <= 0 {
			continue
		}
		_, hi := bucketRange(b)
		for j, bound := range latencyBounds {
			if hi/1e6 <= bound {
				per[j] += uint64(counts[i])
				break
			}
		}
	}
	cumulative = make(map[float64]uint64, len(latencyBounds))
	var acc uint64
	for j, bound := range latencyBounds {
		acc += per[j]
		cumulative[bound] = acc
	}
	return sumMicros / 1e6, n, cumulative
}

// newMetricsHandler serves the nimbus collector's series and the UI
// process's Go runtime and process metrics.
func newMetricsHandler(n Nimbus) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		newCollector(n),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
