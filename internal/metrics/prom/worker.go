package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/worker"
)

// A worker's /metrics holds what only the worker knows, live, with no
// nimbus in between: its transport to its peers and its own tasks'
// counters per component (gale_worker_component_*, gale_worker_spout_*,
// gale_worker_bolt_*), beside its process's go_* and process_* series
// (Handler). The cluster-wide numbers, summed over the workers, are the
// UI process's (internal/metrics/prom/cluster). A new worker process
// starts its series again from 0, as Prometheus's counter resets allow.

// workerCollector reads a worker's counters on each scrape.
type workerCollector struct {
	Descs
	w                    worker.Handle
	topology, topologyID string

	received, sent, peers, pending, inflight, errors *prometheus.Desc
	comps                                            *Components
	spoutPending, spoutMaxPending                    *prometheus.Desc
}

// NewWorker is the collector of worker w's own series, labelled with its
// topology's name and id (empty outside a cluster).
func NewWorker(topology, topologyID string, w worker.Handle) prometheus.Collector {
	topo := []string{"topology", "topology_id"}
	comp := []string{"topology", "topology_id", "component", "kind"}
	c := &workerCollector{w: w, topology: topology, topologyID: topologyID}
	d := &c.Descs
	c.received = d.New("gale_transport_received_bytes_total", "Bytes of frames this worker read from its peers, headers included.", topo...)
	c.sent = d.New("gale_transport_sent_bytes_total", "Bytes of frames this worker wrote to its peers, headers included.", topo...)
	c.peers = d.New("gale_transport_peers_connected", "Peers this worker has a connection to.", topo...)
	c.pending = d.New("gale_worker_pending_trees", "Tuple trees this worker's spouts have in flight.", topo...)
	c.inflight = d.New("gale_worker_inflight_tuples", "Tuples and tree messages (acks, fails) queued in this worker and not yet processed.", topo...)
	c.errors = d.New("gale_worker_errors_total", "Errors this worker's components reported or caused.", topo...)
	c.comps = NewComponents(d, "gale_worker_", ComponentHelp{
		Emitted:            "Tuples the component's tasks in this worker emitted.",
		Transferred:        "Copies of those tuples sent to a task in another worker.",
		Acked:              "A spout's trees acked; a bolt's input tuples acked (this worker's tasks).",
		Failed:             "A spout's trees failed; a bolt's input tuples failed (this worker's tasks).",
		SpoutFailed:        "A spout's trees failed in this worker, by reason: bolt, timeout, shutdown.",
		BoltExecuted:       "A bolt's input tuples executed in this worker.",
		BoltCapacity:       "The share of the last 10 to 20 s the bolt's busiest executor in this worker spent executing.",
		BoltExecuteLatency: "A bolt's mean execute latency in this worker, from one Execute in 64 timed.",
	})
	c.spoutPending = d.New("gale_worker_spout_pending_trees", "A spout's trees in flight in this worker.", comp...)
	c.spoutMaxPending = d.New("gale_worker_spout_max_pending_trees", "The most trees the spout's tasks in this worker may have in flight (0: no limit set).", comp...)
	return c
}

func (c *workerCollector) Collect(ch chan<- prometheus.Metric) {
	o := Out{Ch: ch}
	st := c.w.Status()
	o.Counter(c.received, float64(st.WireBytesReceived), c.topology, c.topologyID)
	o.Counter(c.sent, float64(st.WireBytesSent), c.topology, c.topologyID)
	o.Gauge(c.peers, float64(st.PeersConnected), c.topology, c.topologyID)
	o.Gauge(c.pending, float64(st.Pending), c.topology, c.topologyID)
	o.Gauge(c.inflight, float64(st.Inflight), c.topology, c.topologyID)
	o.Counter(c.errors, float64(st.Errors), c.topology, c.topologyID)
	for _, s := range bridge.SpoutStats(c.w) {
		c.comps.Collect(o, c.topology, c.topologyID, Component{ID: s.Component, Kind: "spout",
			Emitted: s.Emitted, Transferred: s.Transferred, Acked: s.Acked, Failed: s.Failed,
			FailedByBolt: s.FailedByBolt, TimedOut: s.TimedOut, FailedShutdown: s.FailedShutdown})
		o.Gauge(c.spoutPending, float64(s.Pending), c.topology, c.topologyID, s.Component, "spout")
		o.Gauge(c.spoutMaxPending, float64(s.MaxPending), c.topology, c.topologyID, s.Component, "spout")
	}
	for _, b := range bridge.BoltStats(c.w) {
		c.comps.Collect(o, c.topology, c.topologyID, Component{ID: b.Component, Kind: "bolt",
			Emitted: b.Emitted, Transferred: b.Transferred, Acked: b.Acked, Failed: b.Failed,
			Executed: b.Executed, Capacity: b.Capacity, ExecuteLatencySeconds: b.ExecuteLatency().Seconds()})
	}
}
