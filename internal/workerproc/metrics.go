package workerproc

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/worker"
)

// KeyMetricsPort is the cluster key of the port a worker serves its own
// Prometheus /metrics on, on the host it listens for its peers on (int,
// default 0: a free port, which the worker reports in its heartbeats
// and the UI offers to Prometheus by its service discovery; -1: none;
// a fixed port suits one worker per host, since the others cannot bind
// it and serve none). internal/config registers and validates it.
const KeyMetricsPort = config.WorkerMetricsPort

// A worker's /metrics holds what only the worker knows, live, with no
// nimbus in between: its process (Go's go_* and process_* series: CPU,
// RSS, heap, collections, goroutines), its transport to its peers and
// its own tasks' counters per component. The cluster-wide numbers,
// summed over the workers, are the UI process's /metrics (internal/ui).

// metricsShutdown bounds the wait for scrapes in progress when the
// worker stops.
const metricsShutdown = 2 * time.Second

// serveMetrics serves w's /metrics on the host of listen at the port
// eff's KeyMetricsPort gives, and returns the port (0 for none) and a
// stop that ends the server and waits for it. A port it cannot bind is
// logged, and the worker runs on without /metrics.
func serveMetrics(eff *config.Effective, listen, topology, topologyID string, w worker.Handle, log *slog.Logger) (port int, stop func()) {
	want, _ := eff.Int(KeyMetricsPort)
	if want < 0 {
		return 0, func() {}
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(want)))
	if err != nil {
		log.Warn("cannot serve the worker's /metrics; running without (set worker.metrics.port to 0 for a free port, -1 for none)",
			"port", want, "err", err)
		return 0, func() {}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		newWorkerCollector(topology, topologyID, w),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the worker's /metrics stopped", "err", err)
		}
	})
	port = ln.Addr().(*net.TCPAddr).Port
	log.Info("serving the worker's /metrics", "addr", ln.Addr().String())
	var once sync.Once
	return port, func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), metricsShutdown)
			defer cancel()
			if srv.Shutdown(ctx) != nil {
				srv.Close()
			}
			wg.Wait()
		})
	}
}

// workerCollector reads a worker's counters on each scrape.
type workerCollector struct {
	w      worker.Handle
	labels []string // topology, topology_id

	received, sent, peers, pending, inflight, errors *prometheus.Desc

	emitted, transferred, acked, failed         *prometheus.Desc
	spoutFailed, spoutPending, spoutMaxPending  *prometheus.Desc
	boltExecuted, boltCapacity, boltExecLatency *prometheus.Desc
}

func newWorkerCollector(topology, topologyID string, w worker.Handle) *workerCollector {
	topo := []string{"topology", "topology_id"}
	comp := []string{"topology", "topology_id", "component", "kind"}
	bolt := comp[:3]
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &workerCollector{
		w:      w,
		labels: []string{topology, topologyID},

		received: d("gale_transport_received_bytes_total", "Bytes of frames this worker read from its peers, headers included.", topo...),
		sent:     d("gale_transport_sent_bytes_total", "Bytes of frames this worker wrote to its peers, headers included.", topo...),
		peers:    d("gale_transport_peers_connected", "Peers this worker has a connection to.", topo...),
		pending:  d("gale_worker_pending_trees", "Tuple trees this worker's spouts have in flight.", topo...),
		inflight: d("gale_worker_inflight_tuples", "Tuples and acker messages queued in this worker and not yet processed.", topo...),
		errors:   d("gale_worker_errors_total", "Errors this worker's components reported or caused.", topo...),

		emitted:         d("gale_worker_component_emitted_total", "Tuples the component's tasks in this worker emitted.", comp...),
		transferred:     d("gale_worker_component_transferred_total", "Copies of those tuples sent to a task in another worker.", comp...),
		acked:           d("gale_worker_component_acked_total", "A spout's trees acked; a bolt's input tuples acked (this worker's tasks).", comp...),
		failed:          d("gale_worker_component_failed_total", "A spout's trees failed; a bolt's input tuples failed (this worker's tasks).", comp...),
		spoutFailed:     d("gale_worker_spout_failed_by_reason_total", "A spout's trees failed in this worker, by reason: bolt, timeout, shutdown.", append(comp[:4:4], "reason")...),
		spoutPending:    d("gale_worker_spout_pending_trees", "A spout's trees in flight in this worker.", comp...),
		spoutMaxPending: d("gale_worker_spout_max_pending_trees", "The most trees the spout's tasks in this worker may have in flight (0: no limit set).", comp...),
		boltExecuted:    d("gale_worker_bolt_executed_total", "A bolt's input tuples executed in this worker.", bolt...),
		boltCapacity:    d("gale_worker_bolt_capacity_ratio", "The share of the last 10 to 20 s the bolt's busiest executor in this worker spent executing.", bolt...),
		boltExecLatency: d("gale_worker_bolt_execute_latency_seconds", "A bolt's mean execute latency in this worker, from one Execute in 64 timed.", bolt...),
	}
}

func (c *workerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.received, c.sent, c.peers, c.pending, c.inflight, c.errors,
		c.emitted, c.transferred, c.acked, c.failed, c.spoutFailed, c.spoutPending, c.spoutMaxPending,
		c.boltExecuted, c.boltCapacity, c.boltExecLatency} {
		ch <- d
	}
}

func (c *workerCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	st := c.w.Status()
	counter(c.received, float64(st.WireBytesReceived), c.labels...)
	counter(c.sent, float64(st.WireBytesSent), c.labels...)
	gauge(c.peers, float64(st.PeersConnected), c.labels...)
	gauge(c.pending, float64(st.Pending), c.labels...)
	gauge(c.inflight, float64(st.Inflight), c.labels...)
	counter(c.errors, float64(st.Errors), c.labels...)
	for _, s := range bridge.SpoutStats(c.w) {
		l := append(c.labels[:2:2], s.Component, "spout")
		counter(c.emitted, float64(s.Emitted), l...)
		counter(c.transferred, float64(s.Transferred), l...)
		counter(c.acked, float64(s.Acked), l...)
		counter(c.failed, float64(s.Failed), l...)
		counter(c.spoutFailed, float64(s.FailedByBolt), append(l, "bolt")...)
		counter(c.spoutFailed, float64(s.TimedOut), append(l, "timeout")...)
		counter(c.spoutFailed, float64(s.FailedShutdown), append(l, "shutdown")...)
		gauge(c.spoutPending, float64(s.Pending), l...)
		gauge(c.spoutMaxPending, float64(s.MaxPending), l...)
	}
	for _, b := range bridge.BoltStats(c.w) {
		l := append(c.labels[:2:2], b.Component, "bolt")
		counter(c.emitted, float64(b.Emitted), l...)
		counter(c.transferred, float64(b.Transferred), l...)
		counter(c.acked, float64(b.Acked), l...)
		counter(c.failed, float64(b.Failed), l...)
		counter(c.boltExecuted, float64(b.Executed), l[:3]...)
		gauge(c.boltCapacity, b.Capacity, l[:3]...)
		gauge(c.boltExecLatency, b.ExecuteLatency().Seconds(), l[:3]...)
	}
}
