package ui

import (
	"context"
	"net/http"
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

	up, supervisors, slotsTotal, slotsUsed, topologies *prometheus.Desc
	emitted, acked, failed, workers, workersRunning    *prometheus.Desc
	executors, tasks, active, uptime, latency          *prometheus.Desc
}

func newCollector(n Nimbus) *collector {
	topo := []string{"topology", "topology_id"}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &collector{
		nimbus:         n,
		up:             d("gale_nimbus_up", "1 if the UI's last scrape reached the nimbus leader, else 0 (and no other gale_ series)."),
		supervisors:    d("gale_cluster_supervisors", "Supervisors alive in the cluster."),
		slotsTotal:     d("gale_cluster_slots_total", "Worker slots (supervisor ports) in the cluster."),
		slotsUsed:      d("gale_cluster_slots_used", "Worker slots running a worker."),
		topologies:     d("gale_cluster_topologies", "Topologies submitted and not killed."),
		emitted:        d("gale_topology_emitted_total", "Tuples the topology's spouts emitted, since its workers started.", topo...),
		acked:          d("gale_topology_acked_total", "Tuple trees acked, since the topology's workers started.", topo...),
		failed:         d("gale_topology_failed_total", "Tuple trees failed, since the topology's workers started.", topo...),
		workers:        d("gale_topology_workers", "Workers the topology asks for (topology.workers).", topo...),
		workersRunning: d("gale_topology_workers_running", "The topology's workers the supervisors report running and heartbeating.", topo...),
		executors:      d("gale_topology_executors", "The topology's executors.", topo...),
		tasks:          d("gale_topology_tasks", "The topology's tasks.", topo...),
		active:         d("gale_topology_active", "1 if the topology's status is ACTIVE, else 0.", append(topo, "status")...),
		uptime:         d("gale_topology_uptime_seconds", "Seconds since the topology was submitted.", topo...),
		latency:        d("gale_topology_complete_latency_seconds", "Tuple trees acked, by complete latency (emit to ack), since the topology's workers started.", topo...),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.supervisors, c.slotsTotal, c.slotsUsed, c.topologies,
		c.emitted, c.acked, c.failed, c.workers, c.workersRunning, c.executors, c.tasks, c.active, c.uptime, c.latency} {
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
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
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
